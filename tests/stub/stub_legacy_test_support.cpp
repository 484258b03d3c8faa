// The shared part of the legacy ops' tests (stub_legacy_test.h): the World, the op table and the
// changes of one slot.
#include "tests/stub/stub_legacy_test.h"

#include <utility>

namespace stub_legacy_test {

World::World(const Op& op) : outputs(op.outputs) {
  REQUIRE(cudnnCreate(&handle) == CUDNN_STATUS_SUCCESS);
  REQUIRE(cudnnCreate(&other_handle) == CUDNN_STATUS_SUCCESS);
  for (int i = 0; i < 6; ++i) {
    REQUIRE(cudnnCreateTensorDescriptor(&t[i]) == CUDNN_STATUS_SUCCESS);
    set_tensor(i, 5 + i);
  }
  REQUIRE(cudnnCreateFilterDescriptor(&filter) == CUDNN_STATUS_SUCCESS);
  REQUIRE(cudnnSetFilter4dDescriptor(filter, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, 8, 3, 3, 3) == CUDNN_STATUS_SUCCESS);
  REQUIRE(cudnnCreateConvolutionDescriptor(&conv) == CUDNN_STATUS_SUCCESS);
  REQUIRE(cudnnSetConvolution2dDescriptor(conv, 1, 1, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT) ==
          CUDNN_STATUS_SUCCESS);
  REQUIRE(cudnnCreateActivationDescriptor(&act) == CUDNN_STATUS_SUCCESS);
  REQUIRE(cudnnSetActivationDescriptor(act, CUDNN_ACTIVATION_RELU, CUDNN_NOT_PROPAGATE_NAN, 0.0) ==
          CUDNN_STATUS_SUCCESS);
  REQUIRE(cudnnCreatePoolingDescriptor(&pool) == CUDNN_STATUS_SUCCESS);
  REQUIRE(cudnnSetPooling2dDescriptor(pool, CUDNN_POOLING_MAX, CUDNN_NOT_PROPAGATE_NAN, 2, 2, 0, 0, 2, 2) ==
          CUDNN_STATUS_SUCCESS);
  REQUIRE(cudnnCreateOpTensorDescriptor(&op_tensor) == CUDNN_STATUS_SUCCESS);
  REQUIRE(cudnnSetOpTensorDescriptor(op_tensor, CUDNN_OP_TENSOR_ADD, CUDNN_DATA_FLOAT, CUDNN_NOT_PROPAGATE_NAN) ==
          CUDNN_STATUS_SUCCESS);
  REQUIRE(cudnnCreateLRNDescriptor(&lrn) == CUDNN_STATUS_SUCCESS);
  for (int i = 0; i < 4; ++i) {
    scalar[i] = s[i];
    set_scalar(i, 1.0 + i);
  }
  for (std::size_t i = 0; i < op.choices.size(); ++i) choices[i] = op.choices[i].first;
  for (int i = 0; i < 8; ++i) {
    in_data[i][0] = spare_in_data[i][0] = 0x1000 + i;  // a spare holds what its input holds
    in[i] = in_data[i];
  }
  for (int i = 0; i < 6; ++i) out[i] = out_data[i];
  for (int i = 0; i < 2; ++i) space[i] = space_data[i];
}

World::~World() {
  for (cudnnTensorDescriptor_t d : t) cudnnDestroyTensorDescriptor(d);
  cudnnDestroyFilterDescriptor(filter);
  cudnnDestroyConvolutionDescriptor(conv);
  cudnnDestroyActivationDescriptor(act);
  cudnnDestroyPoolingDescriptor(pool);
  cudnnDestroyOpTensorDescriptor(op_tensor);
  cudnnDestroyLRNDescriptor(lrn);
  cudnnDestroy(handle);
  cudnnDestroy(other_handle);
}

void World::set_scalar(int i, double value) {
  std::memset(s[i], 0, sizeof s[i]);
  const float narrow = static_cast<float>(value);
  if (wide)
    std::memcpy(s[i], &value, sizeof value);
  else
    std::memcpy(s[i], &narrow, sizeof narrow);
}

void World::set_tensor(int i, int w, cudnnDataType_t type) {
  REQUIRE(cudnnSetTensor4dDescriptor(t[i], CUDNN_TENSOR_NCHW, type, 2, 3, 4, w) == CUDNN_STATUS_SUCCESS);
}

std::uint64_t output(const World& w, int i) {
  std::uint64_t value;
  std::memcpy(&value, w.out[i], sizeof value);
  return value;
}

std::uint64_t digest(const Op& op, World& w, bool reference) {
  for (int i = 0; i < w.outputs; ++i) std::memset(w.out[i], 0, 8);
  stubcudnn_reference_calls(reference);
  const cudnnStatus_t status = op.call(w);
  stubcudnn_reference_calls(0);
  REQUIRE(status == CUDNN_STATUS_SUCCESS);
  const std::uint64_t first = output(w, 0);
  CHECK(first != 0);
  for (int i = 1; i < w.outputs; ++i) CHECK(output(w, i) == first);
  return first;
}

std::vector<Mutation> mutations(const Op& op) {
  std::vector<Mutation> m;
  const auto add = [&m](std::string name, Change kind, std::function<void(World&)> apply) {
    m.push_back({std::move(name), kind, std::move(apply)});
  };
  for (int i = 0; i < op.tensors; ++i) {
    add("tensor " + std::to_string(i) + " set again", Change::kInPlace, [i](World& w) { w.set_tensor(i, 20 + i); });
  }
  if (op.singles & kFilter)
    add("filter set again", Change::kInPlace, [](World& w) {
      REQUIRE(cudnnSetFilter4dDescriptor(w.filter, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, 9, 3, 3, 3) ==
              CUDNN_STATUS_SUCCESS);
    });
  if (op.singles & kConvolution) {
    add("convolution set again", Change::kInPlace, [](World& w) {
      REQUIRE(cudnnSetConvolution2dDescriptor(w.conv, 2, 1, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT) ==
              CUDNN_STATUS_SUCCESS);
    });
    add("convolution math type", Change::kInPlace,
        [](World& w) { REQUIRE(cudnnSetConvolutionMathType(w.conv, CUDNN_TENSOR_OP_MATH) == CUDNN_STATUS_SUCCESS); });
    add("convolution group count", Change::kInPlace,
        [](World& w) { REQUIRE(cudnnSetConvolutionGroupCount(w.conv, 3) == CUDNN_STATUS_SUCCESS); });
  }
  if (op.singles & kActivation) {
    add("activation set again", Change::kInPlace, [](World& w) {
      REQUIRE(cudnnSetActivationDescriptor(w.act, CUDNN_ACTIVATION_CLIPPED_RELU, CUDNN_NOT_PROPAGATE_NAN, 6.0) ==
              CUDNN_STATUS_SUCCESS);
    });
    add("activation swish beta", Change::kInPlace,
        [](World& w) { REQUIRE(cudnnSetActivationDescriptorSwishBeta(w.act, 1.5) == CUDNN_STATUS_SUCCESS); });
  }
  if (op.singles & kPooling)
    add("pooling set again", Change::kInPlace, [](World& w) {
      REQUIRE(cudnnSetPooling2dDescriptor(w.pool, CUDNN_POOLING_MAX, CUDNN_NOT_PROPAGATE_NAN, 3, 3, 0, 0, 2, 2) ==
              CUDNN_STATUS_SUCCESS);
    });
  if (op.singles & kOpTensor)
    add("op tensor set again", Change::kInPlace, [](World& w) {
      REQUIRE(cudnnSetOpTensorDescriptor(w.op_tensor, CUDNN_OP_TENSOR_MUL, CUDNN_DATA_FLOAT,
                                         CUDNN_NOT_PROPAGATE_NAN) == CUDNN_STATUS_SUCCESS);
    });
  if (op.singles & kLrn)
    add("LRN set again", Change::kInPlace,
        [](World& w) { REQUIRE(cudnnSetLRNDescriptor(w.lrn, 7, 1e-4, 0.75, 2.0) == CUDNN_STATUS_SUCCESS); });
  for (int i = 0; i < op.scalars; ++i)
    add("scalar " + std::to_string(i), Change::kInPlace, [i](World& w) { w.set_scalar(i, 10.0 + i); });
  for (int i = 0; i < op.inputs; ++i) {
    add("input " + std::to_string(i) + "'s data", Change::kContent, [i](World& w) { w.in_data[i][0] += 0x100; });
    add("input " + std::to_string(i) + " pointer", Change::kArgument, [i](World& w) { w.in[i] = w.spare_in_data[i]; });
  }
  for (int i = 0; i < op.outputs; ++i)
    add("output " + std::to_string(i) + " pointer", Change::kArgument,
        [i](World& w) { w.out[i] = w.spare_out_data[i]; });
  for (int i = 0; i < op.spaces; ++i) {
    add("space " + std::to_string(i) + " pointer", Change::kArgument,
        [i](World& w) { w.space[i] = w.spare_out_data[i]; });
    add("space " + std::to_string(i) + " size", Change::kArgument, [i](World& w) { w.sizes[i] += 8; });
  }
  for (int i = 0; i < op.numbers; ++i)
    add("number " + std::to_string(i), Change::kArgument, [i](World& w) { w.numbers[i] *= 2; });
  for (std::size_t i = 0; i < op.choices.size(); ++i)
    if (op.choices[i].first != op.choices[i].second)
      add("choice " + std::to_string(i), Change::kArgument,
          [i, other = op.choices[i].second](World& w) { w.choices[i] = other; });
  add("handle", Change::kArgument, [](World& w) { std::swap(w.handle, w.other_handle); });
  return m;
}

namespace {

template <typename T>
T as(int value) {
  return static_cast<T>(value);
}

const cudnnBatchNormOps_t kAddActivation = CUDNN_BATCHNORM_OPS_BN_ADD_ACTIVATION;

}  // namespace

// Each op with every optional argument given (so every slot is in its blob), in the slot order of
// its builder in stub_legacy_ops.cpp.
const std::vector<Op>& ops() {
  static const std::vector<Op> table = {
      {"cudnnBatchNormalizationForwardInference", STUBCUDNN_BATCHNORM_FORWARD_INFERENCE, 3, 2, 1, 5, 1, 0, 0,
       {{CUDNN_BATCHNORM_SPATIAL, CUDNN_BATCHNORM_PER_ACTIVATION}},
       [](World& w) {
         return cudnnBatchNormalizationForwardInference(w.handle, as<cudnnBatchNormMode_t>(w.choices[0]), w.scalar[0],
                                                        w.scalar[1], w.t[0], w.in[0], w.t[1], w.out[0], w.t[2], w.in[1],
                                                        w.in[2], w.in[3], w.in[4], w.numbers[0]);
       }},
      {"cudnnBatchNormalizationForwardTrainingEx", STUBCUDNN_BATCHNORM_FORWARD_TRAINING_EX, 4, 2, 2, 4, 5, 2,
       kActivation,
       {{CUDNN_BATCHNORM_SPATIAL, CUDNN_BATCHNORM_PER_ACTIVATION}, {kAddActivation, CUDNN_BATCHNORM_OPS_BN_ACTIVATION}},
       [](World& w) {
         return cudnnBatchNormalizationForwardTrainingEx(
             w.handle, as<cudnnBatchNormMode_t>(w.choices[0]), as<cudnnBatchNormOps_t>(w.choices[1]), w.scalar[0],
             w.scalar[1], w.t[0], w.in[0], w.t[1], w.in[1], w.t[2], w.out[0], w.t[3], w.in[2], w.in[3], w.numbers[0],
             w.out[1], w.out[2], w.numbers[1], w.out[3], w.out[4], w.act, w.space[0], w.sizes[0], w.space[1],
             w.sizes[1]);
       }},
      {"cudnnBatchNormalizationBackwardEx", STUBCUDNN_BATCHNORM_BACKWARD_EX, 6, 4, 1, 7, 4, 2, kActivation,
       {{CUDNN_BATCHNORM_SPATIAL, CUDNN_BATCHNORM_PER_ACTIVATION}, {kAddActivation, CUDNN_BATCHNORM_OPS_BN_ACTIVATION}},
       [](World& w) {
         return cudnnBatchNormalizationBackwardEx(
             w.handle, as<cudnnBatchNormMode_t>(w.choices[0]), as<cudnnBatchNormOps_t>(w.choices[1]), w.scalar[0],
             w.scalar[1], w.scalar[2], w.scalar[3], w.t[0], w.in[0], w.t[1], w.in[1], w.t[2], w.in[2], w.t[3],
             w.out[0], w.t[4], w.out[1], w.t[5], w.in[3], w.in[4], w.out[2], w.out[3], w.numbers[0], w.in[5],
             w.in[6], w.act, w.space[0], w.sizes[0], w.space[1], w.sizes[1]);
       }},
      {"cudnnConvolutionForward", STUBCUDNN_CONVOLUTION_FORWARD, 2, 2, 0, 2, 1, 1, kFilter | kConvolution,
       {{CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM, CUDNN_CONVOLUTION_FWD_ALGO_GEMM}},
       [](World& w) {
         return cudnnConvolutionForward(w.handle, w.scalar[0], w.t[0], w.in[0], w.filter, w.in[1], w.conv,
                                        as<cudnnConvolutionFwdAlgo_t>(w.choices[0]), w.space[0], w.sizes[0],
                                        w.scalar[1], w.t[1], w.out[0]);
       }},
      {"cudnnConvolutionBiasActivationForward", STUBCUDNN_CONVOLUTION_BIAS_ACTIVATION_FORWARD, 4, 2, 0, 4, 1, 1,
       kFilter | kConvolution | kActivation,
       {{CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM, CUDNN_CONVOLUTION_FWD_ALGO_GEMM}},
       [](World& w) {
         return cudnnConvolutionBiasActivationForward(w.handle, w.scalar[0], w.t[0], w.in[0], w.filter, w.in[1], w.conv,
                                                      as<cudnnConvolutionFwdAlgo_t>(w.choices[0]), w.space[0],
                                                      w.sizes[0], w.scalar[1], w.t[1], w.in[2], w.t[2], w.in[3], w.act,
                                                      w.t[3], w.out[0]);
       }},
      {"cudnnActivationForward", STUBCUDNN_ACTIVATION_FORWARD, 2, 2, 0, 1, 1, 0, kActivation, {},
       [](World& w) {
         return cudnnActivationForward(w.handle, w.act, w.scalar[0], w.t[0], w.in[0], w.scalar[1], w.t[1], w.out[0]);
       }},
      {"cudnnPoolingForward", STUBCUDNN_POOLING_FORWARD, 2, 2, 0, 1, 1, 0, kPooling, {},
       [](World& w) {
         return cudnnPoolingForward(w.handle, w.pool, w.scalar[0], w.t[0], w.in[0], w.scalar[1], w.t[1], w.out[0]);
       }},
      {"cudnnSoftmaxForward", STUBCUDNN_SOFTMAX_FORWARD, 2, 2, 0, 1, 1, 0, 0,
       {{CUDNN_SOFTMAX_ACCURATE, CUDNN_SOFTMAX_LOG}, {CUDNN_SOFTMAX_MODE_CHANNEL, CUDNN_SOFTMAX_MODE_INSTANCE}},
       [](World& w) {
         return cudnnSoftmaxForward(w.handle, as<cudnnSoftmaxAlgorithm_t>(w.choices[0]),
                                    as<cudnnSoftmaxMode_t>(w.choices[1]), w.scalar[0], w.t[0], w.in[0], w.scalar[1],
                                    w.t[1], w.out[0]);
       }},
      {"cudnnAddTensor", STUBCUDNN_ADD_TENSOR, 2, 2, 0, 1, 1, 0, 0, {},
       [](World& w) { return cudnnAddTensor(w.handle, w.scalar[0], w.t[0], w.in[0], w.scalar[1], w.t[1], w.out[0]); }},
      {"cudnnOpTensor", STUBCUDNN_OP_TENSOR, 3, 3, 0, 2, 1, 0, kOpTensor, {},
       [](World& w) {
         return cudnnOpTensor(w.handle, w.op_tensor, w.scalar[0], w.t[0], w.in[0], w.scalar[1], w.t[1], w.in[1],
                              w.scalar[2], w.t[2], w.out[0]);
       }},
      {"cudnnScaleTensor", STUBCUDNN_SCALE_TENSOR, 1, 1, 0, 0, 1, 0, 0, {},
       [](World& w) { return cudnnScaleTensor(w.handle, w.t[0], w.out[0], w.scalar[0]); }},
      {"cudnnTransformTensor", STUBCUDNN_TRANSFORM_TENSOR, 2, 2, 0, 1, 1, 0, 0, {},
       [](World& w) {
         return cudnnTransformTensor(w.handle, w.scalar[0], w.t[0], w.in[0], w.scalar[1], w.t[1], w.out[0]);
       }},
      {"cudnnLRNCrossChannelForward", STUBCUDNN_LRN_CROSS_CHANNEL_FORWARD, 2, 2, 0, 1, 1, 0, kLrn,
       {{CUDNN_LRN_CROSS_CHANNEL_DIM1, CUDNN_LRN_CROSS_CHANNEL_DIM1}},
       [](World& w) {
         return cudnnLRNCrossChannelForward(w.handle, w.lrn, as<cudnnLRNMode_t>(w.choices[0]), w.scalar[0], w.t[0],
                                            w.in[0], w.scalar[1], w.t[1], w.out[0]);
       }},
  };
  return table;
}

}  // namespace stub_legacy_test
