// The stub's legacy descriptors: what the getters return after each setter, sets again in place,
// the errors, and the counters.
#include <cudnn.h>

#include <catch2/catch.hpp>
#include <climits>
#include <cstdint>
#include <vector>

#include "tests/stub/stub_legacy_control.h"

namespace {

constexpr cudnnStatus_t kOk = CUDNN_STATUS_SUCCESS;
constexpr cudnnStatus_t kBad = CUDNN_STATUS_BAD_PARAM;

struct Nd {
  cudnnDataType_t type;
  std::vector<int> dims, strides;
};

Nd get_nd(cudnnTensorDescriptor_t desc) {
  Nd nd{};
  int nb = 0;
  int dims[CUDNN_DIM_MAX], strides[CUDNN_DIM_MAX];
  REQUIRE(cudnnGetTensorNdDescriptor(desc, CUDNN_DIM_MAX, &nd.type, &nb, dims, strides) == kOk);
  nd.dims.assign(dims, dims + nb);
  nd.strides.assign(strides, strides + nb);
  return nd;
}

}  // namespace

TEST_CASE("legacy descriptors: tensors return what each setter set, with cuDNN's strides, and can be set again") {
  cudnnTensorDescriptor_t t = nullptr;
  REQUIRE(cudnnCreateTensorDescriptor(&t) == kOk);
  int n, c, h, w, ns, cs, hs, ws;
  cudnnDataType_t type;
  CHECK(cudnnGetTensor4dDescriptor(t, &type, &n, &c, &h, &w, &ns, &cs, &hs, &ws) == kBad);  // not set yet

  REQUIRE(cudnnSetTensor4dDescriptor(t, CUDNN_TENSOR_NCHW, CUDNN_DATA_HALF, 2, 3, 4, 5) == kOk);
  REQUIRE(cudnnGetTensor4dDescriptor(t, &type, &n, &c, &h, &w, &ns, &cs, &hs, &ws) == kOk);
  CHECK(std::vector<int>{type, n, c, h, w, ns, cs, hs, ws} ==
        std::vector<int>{CUDNN_DATA_HALF, 2, 3, 4, 5, 60, 20, 5, 1});
  REQUIRE(cudnnSetTensor4dDescriptor(t, CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT, 2, 3, 4, 5) == kOk);
  REQUIRE(cudnnGetTensor4dDescriptor(t, &type, &n, &c, &h, &w, &ns, &cs, &hs, &ws) == kOk);
  CHECK(std::vector<int>{type, ns, cs, hs, ws} == std::vector<int>{CUDNN_DATA_FLOAT, 60, 1, 15, 3});

  REQUIRE(cudnnSetTensor4dDescriptorEx(t, CUDNN_DATA_DOUBLE, 1, 2, 3, 4, 100, 50, 10, 2) == kOk);
  REQUIRE(cudnnGetTensor4dDescriptor(t, &type, &n, &c, &h, &w, &ns, &cs, &hs, &ws) == kOk);
  CHECK(std::vector<int>{type, n, c, h, w, ns, cs, hs, ws} ==
        std::vector<int>{CUDNN_DATA_DOUBLE, 1, 2, 3, 4, 100, 50, 10, 2});

  const int dims5[5] = {2, 3, 4, 5, 6};
  REQUIRE(cudnnSetTensorNdDescriptorEx(t, CUDNN_TENSOR_NHWC, CUDNN_DATA_INT8, 5, dims5) == kOk);
  Nd nd = get_nd(t);
  CHECK(nd.type == CUDNN_DATA_INT8);
  CHECK(nd.dims == std::vector<int>{2, 3, 4, 5, 6});
  CHECK(nd.strides == std::vector<int>{360, 1, 90, 18, 3});
  CHECK(cudnnGetTensor4dDescriptor(t, &type, &n, &c, &h, &w, &ns, &cs, &hs, &ws) == kBad);  // five dims
  REQUIRE(cudnnSetTensorNdDescriptorEx(t, CUDNN_TENSOR_NCHW, CUDNN_DATA_INT8, 5, dims5) == kOk);
  CHECK(get_nd(t).strides == std::vector<int>{360, 120, 30, 6, 1});

  const int dims3[3] = {7, 8, 9}, strides3[3] = {100, 10, 1};
  REQUIRE(cudnnSetTensorNdDescriptor(t, CUDNN_DATA_BFLOAT16, 3, dims3, strides3) == kOk);
  nd = get_nd(t);
  CHECK(nd.dims == std::vector<int>{7, 8, 9});
  CHECK(nd.strides == std::vector<int>{100, 10, 1});
  int nb = 0, two[2] = {}, two_strides[2] = {};
  REQUIRE(cudnnGetTensorNdDescriptor(t, 2, &type, &nb, two, two_strides) == kOk);  // fewer than it has
  CHECK(nb == 3);
  CHECK(two[1] == 8);

  SECTION("bad values are BAD_PARAM and change nothing") {
    const int zero[3] = {7, 0, 9}, nine[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    CHECK(cudnnSetTensor4dDescriptor(nullptr, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, 1, 1, 1) == kBad);
    CHECK(cudnnSetTensor4dDescriptor(t, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, 0, 1, 1) == kBad);
    CHECK(cudnnSetTensor4dDescriptor(t, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, 1, -1, 1) == kBad);
    CHECK(cudnnSetTensor4dDescriptor(t, static_cast<cudnnTensorFormat_t>(7), CUDNN_DATA_FLOAT, 1, 1, 1, 1) == kBad);
    CHECK(cudnnSetTensor4dDescriptor(t, CUDNN_TENSOR_NCHW, static_cast<cudnnDataType_t>(99), 1, 1, 1, 1) == kBad);
    CHECK(cudnnSetTensor4dDescriptor(t, CUDNN_TENSOR_NCHW_VECT_C, CUDNN_DATA_FLOAT, 1, 4, 1, 1) ==
          CUDNN_STATUS_NOT_SUPPORTED);  // a real layout the stub does not model
    CHECK(cudnnSetTensor4dDescriptorEx(t, CUDNN_DATA_FLOAT, 1, 1, 1, 1, 1, 0, 1, 1) == kBad);
    CHECK(cudnnSetTensorNdDescriptor(t, CUDNN_DATA_FLOAT, 3, zero, strides3) == kBad);
    CHECK(cudnnSetTensorNdDescriptor(t, CUDNN_DATA_FLOAT, 0, dims3, strides3) == kBad);
    CHECK(cudnnSetTensorNdDescriptor(t, CUDNN_DATA_FLOAT, 9, nine, nine) == kBad);
    CHECK(cudnnSetTensorNdDescriptor(t, CUDNN_DATA_FLOAT, 3, dims3, nullptr) == kBad);
    CHECK(cudnnSetTensorNdDescriptorEx(t, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 9, nine) == kBad);
    CHECK(cudnnSetTensor4dDescriptor(t, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, INT_MAX, 2, 2, 2) == kOk);  // N: no stride
    CHECK(cudnnSetTensor4dDescriptor(t, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 2, INT_MAX, 2, 2) == kBad);
    CHECK(get_nd(t).dims == std::vector<int>{INT_MAX, 2, 2, 2});
    CHECK(cudnnGetTensorNdDescriptor(t, -1, &type, &nb, two, two_strides) == kBad);
    CHECK(cudnnGetTensor4dDescriptor(t, &type, &n, nullptr, &h, &w, &ns, &cs, &hs, &ws) == kBad);
  }
  CHECK(cudnnDestroyTensorDescriptor(t) == kOk);
  CHECK(cudnnDestroyTensorDescriptor(nullptr) == kOk);
}

TEST_CASE("legacy descriptors: cudnnDeriveBNTensorDescriptor") {
  cudnnTensorDescriptor_t x = nullptr, bn = nullptr;
  REQUIRE(cudnnCreateTensorDescriptor(&x) == kOk);
  REQUIRE(cudnnCreateTensorDescriptor(&bn) == kOk);
  CHECK(cudnnDeriveBNTensorDescriptor(bn, x, CUDNN_BATCHNORM_SPATIAL) == kBad);  // x not set
  REQUIRE(cudnnSetTensor4dDescriptor(x, CUDNN_TENSOR_NHWC, CUDNN_DATA_HALF, 2, 3, 4, 5) == kOk);
  REQUIRE(cudnnDeriveBNTensorDescriptor(bn, x, CUDNN_BATCHNORM_SPATIAL) == kOk);
  Nd nd = get_nd(bn);
  CHECK(nd.type == CUDNN_DATA_FLOAT);
  CHECK(nd.dims == std::vector<int>{1, 3, 1, 1});
  CHECK(nd.strides == std::vector<int>{3, 1, 1, 1});
  REQUIRE(cudnnDeriveBNTensorDescriptor(bn, x, CUDNN_BATCHNORM_PER_ACTIVATION) == kOk);
  CHECK(get_nd(bn).dims == std::vector<int>{1, 3, 4, 5});
  const int dims5[5] = {2, 3, 4, 5, 6};
  REQUIRE(cudnnSetTensorNdDescriptorEx(x, CUDNN_TENSOR_NCHW, CUDNN_DATA_DOUBLE, 5, dims5) == kOk);
  REQUIRE(cudnnDeriveBNTensorDescriptor(bn, x, CUDNN_BATCHNORM_SPATIAL_PERSISTENT) == kOk);
  nd = get_nd(bn);
  CHECK(nd.type == CUDNN_DATA_DOUBLE);
  CHECK(nd.dims == std::vector<int>{1, 3, 1, 1, 1});
  CHECK(cudnnDeriveBNTensorDescriptor(bn, x, static_cast<cudnnBatchNormMode_t>(3)) == kBad);
  const int dims3[3] = {2, 3, 4};
  REQUIRE(cudnnSetTensorNdDescriptorEx(x, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 3, dims3) == kOk);
  CHECK(cudnnDeriveBNTensorDescriptor(bn, x, CUDNN_BATCHNORM_SPATIAL) == kBad);  // 4 or 5 dims
  cudnnDestroyTensorDescriptor(x);
  cudnnDestroyTensorDescriptor(bn);
}

TEST_CASE("legacy descriptors: filters") {
  cudnnFilterDescriptor_t f = nullptr;
  REQUIRE(cudnnCreateFilterDescriptor(&f) == kOk);
  cudnnDataType_t type;
  cudnnTensorFormat_t format;
  int k, c, h, w, nb, dims[CUDNN_DIM_MAX];
  CHECK(cudnnGetFilter4dDescriptor(f, &type, &format, &k, &c, &h, &w) == kBad);
  REQUIRE(cudnnSetFilter4dDescriptor(f, CUDNN_DATA_HALF, CUDNN_TENSOR_NHWC, 8, 3, 5, 7) == kOk);
  REQUIRE(cudnnGetFilter4dDescriptor(f, &type, &format, &k, &c, &h, &w) == kOk);
  CHECK(std::vector<int>{type, format, k, c, h, w} == std::vector<int>{CUDNN_DATA_HALF, CUDNN_TENSOR_NHWC, 8, 3, 5, 7});
  const int dims5[5] = {4, 3, 2, 2, 2};
  REQUIRE(cudnnSetFilterNdDescriptor(f, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, 5, dims5) == kOk);
  REQUIRE(cudnnGetFilterNdDescriptor(f, CUDNN_DIM_MAX, &type, &format, &nb, dims) == kOk);
  CHECK(std::vector<int>(dims, dims + nb) == std::vector<int>{4, 3, 2, 2, 2});
  CHECK(format == CUDNN_TENSOR_NCHW);
  CHECK(cudnnGetFilter4dDescriptor(f, &type, &format, &k, &c, &h, &w) == kBad);  // five dims
  CHECK(cudnnSetFilter4dDescriptor(f, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, 0, 3, 5, 7) == kBad);
  CHECK(cudnnSetFilter4dDescriptor(f, static_cast<cudnnDataType_t>(-1), CUDNN_TENSOR_NCHW, 1, 3, 5, 7) == kBad);
  CHECK(cudnnSetFilter4dDescriptor(f, CUDNN_DATA_FLOAT, static_cast<cudnnTensorFormat_t>(3), 1, 3, 5, 7) == kBad);
  CHECK(cudnnSetFilterNdDescriptor(f, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, 0, dims5) == kBad);
  CHECK(cudnnSetFilterNdDescriptor(nullptr, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, 5, dims5) == kBad);
  REQUIRE(cudnnGetFilterNdDescriptor(f, 0, &type, &format, &nb, nullptr) == kOk);
  CHECK(nb == 5);  // unchanged by the failed sets
  cudnnDestroyFilterDescriptor(f);
}

TEST_CASE("legacy descriptors: convolutions") {
  cudnnConvolutionDescriptor_t conv = nullptr;
  REQUIRE(cudnnCreateConvolutionDescriptor(&conv) == kOk);
  cudnnMathType_t math;
  int groups;
  cudnnReorderType_t reorder;
  REQUIRE(cudnnGetConvolutionMathType(conv, &math) == kOk);
  REQUIRE(cudnnGetConvolutionGroupCount(conv, &groups) == kOk);
  REQUIRE(cudnnGetConvolutionReorderType(conv, &reorder) == kOk);
  CHECK(std::vector<int>{math, groups, reorder} == std::vector<int>{CUDNN_DEFAULT_MATH, 1, CUDNN_DEFAULT_REORDER});
  int ph, pw, u, v, dh, dw;
  cudnnConvolutionMode_t mode;
  cudnnDataType_t type;
  CHECK(cudnnGetConvolution2dDescriptor(conv, &ph, &pw, &u, &v, &dh, &dw, &mode, &type) == kBad);
  REQUIRE(cudnnSetConvolutionMathType(conv, CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION) == kOk);
  REQUIRE(cudnnSetConvolutionGroupCount(conv, 4) == kOk);
  REQUIRE(cudnnSetConvolutionReorderType(conv, CUDNN_NO_REORDER) == kOk);
  REQUIRE(cudnnSetConvolution2dDescriptor(conv, 1, 2, 3, 4, 5, 6, CUDNN_CONVOLUTION, CUDNN_DATA_HALF) == kOk);
  REQUIRE(cudnnGetConvolution2dDescriptor(conv, &ph, &pw, &u, &v, &dh, &dw, &mode, &type) == kOk);
  CHECK(std::vector<int>{ph, pw, u, v, dh, dw, mode, type} ==
        std::vector<int>{1, 2, 3, 4, 5, 6, CUDNN_CONVOLUTION, CUDNN_DATA_HALF});
  REQUIRE(cudnnGetConvolutionMathType(conv, &math) == kOk);
  REQUIRE(cudnnGetConvolutionGroupCount(conv, &groups) == kOk);
  REQUIRE(cudnnGetConvolutionReorderType(conv, &reorder) == kOk);
  CHECK(std::vector<int>{math, groups, reorder} ==
        std::vector<int>{CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION, 4, CUDNN_NO_REORDER});  // kept by the set

  const int pad[3] = {0, 1, 2}, stride[3] = {1, 2, 3}, dilation[3] = {1, 1, 2};
  REQUIRE(cudnnSetConvolutionNdDescriptor(conv, 3, pad, stride, dilation, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT) ==
          kOk);
  int length, p[6], s[6], d[6];
  REQUIRE(cudnnGetConvolutionNdDescriptor(conv, 6, &length, p, s, d, &mode, &type) == kOk);
  CHECK(length == 3);
  CHECK(std::vector<int>{p[2], s[2], d[2], mode, type} ==
        std::vector<int>{2, 3, 2, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT});
  CHECK(cudnnGetConvolution2dDescriptor(conv, &ph, &pw, &u, &v, &dh, &dw, &mode, &type) == kBad);  // three dims

  CHECK(cudnnSetConvolution2dDescriptor(conv, -1, 0, 1, 1, 1, 1, CUDNN_CONVOLUTION, CUDNN_DATA_FLOAT) == kBad);
  CHECK(cudnnSetConvolution2dDescriptor(conv, 0, 0, 0, 1, 1, 1, CUDNN_CONVOLUTION, CUDNN_DATA_FLOAT) == kBad);
  CHECK(cudnnSetConvolution2dDescriptor(conv, 0, 0, 1, 1, 1, 0, CUDNN_CONVOLUTION, CUDNN_DATA_FLOAT) == kBad);
  CHECK(cudnnSetConvolution2dDescriptor(conv, 0, 0, 1, 1, 1, 1, static_cast<cudnnConvolutionMode_t>(2),
                                        CUDNN_DATA_FLOAT) == kBad);
  CHECK(cudnnSetConvolutionNdDescriptor(conv, 7, pad, stride, dilation, CUDNN_CONVOLUTION, CUDNN_DATA_FLOAT) == kBad);
  CHECK(cudnnSetConvolutionMathType(conv, static_cast<cudnnMathType_t>(4)) == kBad);
  CHECK(cudnnSetConvolutionGroupCount(conv, 0) == kBad);
  CHECK(cudnnSetConvolutionReorderType(conv, static_cast<cudnnReorderType_t>(2)) == kBad);
  CHECK(cudnnSetConvolutionMathType(nullptr, CUDNN_DEFAULT_MATH) == kBad);
  REQUIRE(cudnnGetConvolutionNdDescriptor(conv, 0, &length, nullptr, nullptr, nullptr, &mode, &type) == kOk);
  CHECK(length == 3);
  cudnnDestroyConvolutionDescriptor(conv);
}

TEST_CASE("legacy descriptors: activations, pooling, op tensors, LRN, tensor transforms") {
  cudnnActivationDescriptor_t act = nullptr;
  REQUIRE(cudnnCreateActivationDescriptor(&act) == kOk);
  cudnnActivationMode_t mode;
  cudnnNanPropagation_t nan;
  double coef = 0, beta = 0;
  CHECK(cudnnGetActivationDescriptor(act, &mode, &nan, &coef) == kBad);
  REQUIRE(cudnnGetActivationDescriptorSwishBeta(act, &beta) == kOk);
  CHECK(beta == 1.0);
  REQUIRE(cudnnSetActivationDescriptor(act, CUDNN_ACTIVATION_CLIPPED_RELU, CUDNN_PROPAGATE_NAN, 6.0) == kOk);
  REQUIRE(cudnnSetActivationDescriptorSwishBeta(act, 0.5) == kOk);
  REQUIRE(cudnnGetActivationDescriptor(act, &mode, &nan, &coef) == kOk);
  REQUIRE(cudnnGetActivationDescriptorSwishBeta(act, &beta) == kOk);
  CHECK(std::vector<double>{double(mode), double(nan), coef, beta} ==
        std::vector<double>{CUDNN_ACTIVATION_CLIPPED_RELU, CUDNN_PROPAGATE_NAN, 6.0, 0.5});
  CHECK(cudnnSetActivationDescriptor(act, static_cast<cudnnActivationMode_t>(7), CUDNN_PROPAGATE_NAN, 0) == kBad);
  CHECK(cudnnSetActivationDescriptor(act, CUDNN_ACTIVATION_RELU, static_cast<cudnnNanPropagation_t>(2), 0) == kBad);
  cudnnDestroyActivationDescriptor(act);

  cudnnPoolingDescriptor_t pool = nullptr;
  REQUIRE(cudnnCreatePoolingDescriptor(&pool) == kOk);
  cudnnPoolingMode_t pmode;
  int wh, ww, vp, hp, vs, hs;
  REQUIRE(cudnnSetPooling2dDescriptor(pool, CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING, CUDNN_NOT_PROPAGATE_NAN, 3, 4,
                                      1, 2, 2, 3) == kOk);
  REQUIRE(cudnnGetPooling2dDescriptor(pool, &pmode, &nan, &wh, &ww, &vp, &hp, &vs, &hs) == kOk);
  CHECK(std::vector<int>{pmode, nan, wh, ww, vp, hp, vs, hs} ==
        std::vector<int>{CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING, CUDNN_NOT_PROPAGATE_NAN, 3, 4, 1, 2, 2, 3});
  const int window[3] = {2, 2, 2}, padding[3] = {0, 1, 0}, stride[3] = {1, 2, 1};
  REQUIRE(cudnnSetPoolingNdDescriptor(pool, CUDNN_POOLING_MAX, CUDNN_PROPAGATE_NAN, 3, window, padding, stride) == kOk);
  int nb, wa[6], pa[6], sa[6];
  REQUIRE(cudnnGetPoolingNdDescriptor(pool, 6, &pmode, &nan, &nb, wa, pa, sa) == kOk);
  CHECK(std::vector<int>{pmode, nb, wa[2], pa[1], sa[1]} == std::vector<int>{CUDNN_POOLING_MAX, 3, 2, 1, 2});
  CHECK(cudnnGetPooling2dDescriptor(pool, &pmode, &nan, &wh, &ww, &vp, &hp, &vs, &hs) == kBad);
  CHECK(cudnnSetPooling2dDescriptor(pool, CUDNN_POOLING_MAX, CUDNN_PROPAGATE_NAN, 0, 2, 0, 0, 1, 1) == kBad);
  CHECK(cudnnSetPooling2dDescriptor(pool, static_cast<cudnnPoolingMode_t>(4), CUDNN_PROPAGATE_NAN, 2, 2, 0, 0, 1, 1) ==
        kBad);
  CHECK(cudnnSetPoolingNdDescriptor(pool, CUDNN_POOLING_MAX, CUDNN_PROPAGATE_NAN, 0, window, padding, stride) == kBad);
  cudnnDestroyPoolingDescriptor(pool);

  cudnnOpTensorDescriptor_t op = nullptr;
  REQUIRE(cudnnCreateOpTensorDescriptor(&op) == kOk);
  cudnnOpTensorOp_t which;
  cudnnDataType_t type;
  CHECK(cudnnGetOpTensorDescriptor(op, &which, &type, &nan) == kBad);
  REQUIRE(cudnnSetOpTensorDescriptor(op, CUDNN_OP_TENSOR_MAX, CUDNN_DATA_DOUBLE, CUDNN_PROPAGATE_NAN) == kOk);
  REQUIRE(cudnnGetOpTensorDescriptor(op, &which, &type, &nan) == kOk);
  CHECK(std::vector<int>{which, type, nan} ==
        std::vector<int>{CUDNN_OP_TENSOR_MAX, CUDNN_DATA_DOUBLE, CUDNN_PROPAGATE_NAN});
  CHECK(cudnnSetOpTensorDescriptor(op, static_cast<cudnnOpTensorOp_t>(6), CUDNN_DATA_FLOAT, CUDNN_PROPAGATE_NAN) ==
        kBad);
  cudnnDestroyOpTensorDescriptor(op);

  cudnnLRNDescriptor_t lrn = nullptr;
  REQUIRE(cudnnCreateLRNDescriptor(&lrn) == kOk);
  unsigned n;
  double alpha, lbeta, k;
  REQUIRE(cudnnGetLRNDescriptor(lrn, &n, &alpha, &lbeta, &k) == kOk);
  CHECK(std::vector<double>{double(n), alpha, lbeta, k} == std::vector<double>{5, 1e-4, 0.75, 2.0});
  REQUIRE(cudnnSetLRNDescriptor(lrn, 16, 0.5, 0.01, 1e-5) == kOk);
  REQUIRE(cudnnGetLRNDescriptor(lrn, &n, nullptr, nullptr, &k) == kOk);  // NULLs are allowed
  CHECK(std::vector<double>{double(n), k} == std::vector<double>{16, 1e-5});
  CHECK(cudnnSetLRNDescriptor(lrn, 0, 1e-4, 0.75, 2.0) == kBad);
  CHECK(cudnnSetLRNDescriptor(lrn, 17, 1e-4, 0.75, 2.0) == kBad);
  CHECK(cudnnSetLRNDescriptor(lrn, 5, 1e-4, 0.001, 2.0) == kBad);
  CHECK(cudnnSetLRNDescriptor(lrn, 5, 1e-4, 0.75, 1e-6) == kBad);
  cudnnDestroyLRNDescriptor(lrn);

  cudnnTensorTransformDescriptor_t transform = nullptr;
  REQUIRE(cudnnCreateTensorTransformDescriptor(&transform) == kOk);
  const std::int32_t before[4] = {0, 1, 2, 3}, after[4] = {3, 2, 1, 0};
  const std::uint32_t fold[4] = {1, 1, 2, 2};
  REQUIRE(cudnnSetTensorTransformDescriptor(transform, 4, CUDNN_TENSOR_NHWC, before, after, fold,
                                            CUDNN_TRANSFORM_UNFOLD) == kOk);
  cudnnTensorFormat_t format;
  cudnnFoldingDirection_t direction;
  std::int32_t b[4], a[4];
  std::uint32_t f[4];
  REQUIRE(cudnnGetTensorTransformDescriptor(transform, 4, &format, b, a, f, &direction) == kOk);
  CHECK(std::vector<int>{format, direction, b[3], a[0], int(f[2])} ==
        std::vector<int>{CUDNN_TENSOR_NHWC, CUDNN_TRANSFORM_UNFOLD, 3, 3, 2});
  REQUIRE(cudnnSetTensorTransformDescriptor(transform, 4, CUDNN_TENSOR_NCHW, nullptr, nullptr, nullptr,
                                            CUDNN_TRANSFORM_FOLD) == kOk);
  REQUIRE(cudnnGetTensorTransformDescriptor(transform, 4, &format, b, a, f, &direction) == kOk);
  CHECK(std::vector<int>{b[3], a[0], int(f[2])} == std::vector<int>{0, 0, 1});  // no padding, no folding
  CHECK(cudnnSetTensorTransformDescriptor(transform, 9, CUDNN_TENSOR_NCHW, nullptr, nullptr, nullptr,
                                          CUDNN_TRANSFORM_FOLD) == kBad);
  CHECK(cudnnSetTensorTransformDescriptor(transform, 4, CUDNN_TENSOR_NCHW, nullptr, nullptr, nullptr,
                                          static_cast<cudnnFoldingDirection_t>(2)) == kBad);
  cudnnDestroyTensorTransformDescriptor(transform);
}

TEST_CASE("legacy descriptors: every create, set and destroy that reaches the stub is counted, and the live ones") {
  const StubCudnnDescriptorCounters start = stubcudnn_descriptor_counters(STUBCUDNN_POOLING_DESCRIPTOR);
  cudnnPoolingDescriptor_t a = nullptr, b = nullptr;
  REQUIRE(cudnnCreatePoolingDescriptor(&a) == kOk);
  REQUIRE(cudnnCreatePoolingDescriptor(&b) == kOk);
  CHECK(cudnnCreatePoolingDescriptor(nullptr) == kBad);
  REQUIRE(cudnnSetPooling2dDescriptor(a, CUDNN_POOLING_MAX, CUDNN_PROPAGATE_NAN, 2, 2, 0, 0, 1, 1) == kOk);
  CHECK(cudnnSetPooling2dDescriptor(a, CUDNN_POOLING_MAX, CUDNN_PROPAGATE_NAN, 0, 2, 0, 0, 1, 1) == kBad);
  StubCudnnDescriptorCounters now = stubcudnn_descriptor_counters(STUBCUDNN_POOLING_DESCRIPTOR);
  CHECK(now.created == start.created + 3);
  CHECK(now.set == start.set + 2);
  CHECK(now.live == start.live + 2);
  cudnnDestroyPoolingDescriptor(a);
  cudnnDestroyPoolingDescriptor(nullptr);
  now = stubcudnn_descriptor_counters(STUBCUDNN_POOLING_DESCRIPTOR);
  CHECK(now.destroyed == start.destroyed + 2);
  CHECK(now.live == start.live + 1);
  cudnnDestroyPoolingDescriptor(b);
  CHECK(stubcudnn_descriptor_counters(STUBCUDNN_POOLING_DESCRIPTOR).live == start.live);

  const StubCudnnDescriptorCounters tensors = stubcudnn_descriptor_counters(STUBCUDNN_TENSOR_DESCRIPTOR);
  const StubCudnnDescriptorCounters filters = stubcudnn_descriptor_counters(STUBCUDNN_FILTER_DESCRIPTOR);
  cudnnFilterDescriptor_t f = nullptr;
  REQUIRE(cudnnCreateFilterDescriptor(&f) == kOk);
  CHECK(stubcudnn_descriptor_counters(STUBCUDNN_FILTER_DESCRIPTOR).live == filters.live + 1);
  CHECK(stubcudnn_descriptor_counters(STUBCUDNN_TENSOR_DESCRIPTOR).created == tensors.created);  // kinds apart
  cudnnDestroyFilterDescriptor(f);
  CHECK(stubcudnn_descriptor_counters(STUBCUDNN_DESCRIPTOR_KINDS).created == 0);
}
