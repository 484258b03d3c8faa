// The stub's legacy descriptors of operations: convolutions, activations, pooling, op tensors and
// LRN (see stub_legacy_control.h), and every kind's counters. As in stub_legacy_tensors.cpp, a set
// that fails leaves the descriptor as it was.
#include <atomic>
#include <cstdint>
#include <initializer_list>

#include "tests/stub/stub_legacy.h"

namespace {

using stublegacy::count;
using stublegacy::known_nan;
using stublegacy::known_type;

constexpr StubCudnnDescriptorKind kConvolution = STUBCUDNN_CONVOLUTION_DESCRIPTOR;
constexpr StubCudnnDescriptorKind kActivation = STUBCUDNN_ACTIVATION_DESCRIPTOR;
constexpr StubCudnnDescriptorKind kPooling = STUBCUDNN_POOLING_DESCRIPTOR;
constexpr StubCudnnDescriptorKind kOpTensor = STUBCUDNN_OP_TENSOR_DESCRIPTOR;
constexpr StubCudnnDescriptorKind kLrn = STUBCUDNN_LRN_DESCRIPTOR;

struct KindCounters {
  std::atomic<std::uint64_t> created{0}, set{0}, destroyed{0};
  std::atomic<std::int64_t> live{0};
};
KindCounters g_kinds[STUBCUDNN_DESCRIPTOR_KINDS];

bool all_at_least(int count, const int* values, int least) {
  if (values == nullptr) return false;
  for (int i = 0; i < count; ++i)
    if (values[i] < least) return false;
  return true;
}

bool all_given(std::initializer_list<const void*> pointers) {
  for (const void* p : pointers)
    if (p == nullptr) return false;
  return true;
}

cudnnStatus_t set_convolution(cudnnConvolutionDescriptor_t desc, int spatial, const int* pad, const int* stride,
                              const int* dilation, cudnnConvolutionMode_t mode, cudnnDataType_t compute_type) {
  if (desc == nullptr || spatial < 1 || spatial > kMaxSpatial || !known_type(compute_type))
    return CUDNN_STATUS_BAD_PARAM;
  if (mode != CUDNN_CONVOLUTION && mode != CUDNN_CROSS_CORRELATION) return CUDNN_STATUS_BAD_PARAM;
  if (!all_at_least(spatial, pad, 0) || !all_at_least(spatial, stride, 1) || !all_at_least(spatial, dilation, 1))
    return CUDNN_STATUS_BAD_PARAM;
  cudnnConvolutionStruct c = *desc;  // keeps the math type, group count and reorder type
  c.set = 1;
  c.spatial = spatial;
  for (int i = 0; i < kMaxSpatial; ++i) {
    c.pad[i] = i < spatial ? pad[i] : 0;
    c.stride[i] = i < spatial ? stride[i] : 0;
    c.dilation[i] = i < spatial ? dilation[i] : 0;
  }
  c.mode = mode;
  c.compute_type = compute_type;
  *desc = c;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t set_pooling(cudnnPoolingDescriptor_t desc, cudnnPoolingMode_t mode, cudnnNanPropagation_t nan,
                          int nb_dims, const int* window, const int* padding, const int* stride) {
  if (desc == nullptr || nb_dims < 1 || nb_dims > kMaxSpatial || !known_nan(nan)) return CUDNN_STATUS_BAD_PARAM;
  if (mode < CUDNN_POOLING_MAX || mode > CUDNN_POOLING_MAX_DETERMINISTIC) return CUDNN_STATUS_BAD_PARAM;
  if (!all_at_least(nb_dims, window, 1) || !all_at_least(nb_dims, padding, 0) || !all_at_least(nb_dims, stride, 1))
    return CUDNN_STATUS_BAD_PARAM;
  cudnnPoolingStruct p{};
  p.set = 1;
  p.mode = mode;
  p.nan = nan;
  p.nb_dims = nb_dims;
  for (int i = 0; i < nb_dims; ++i) {
    p.window[i] = window[i];
    p.padding[i] = padding[i];
    p.stride[i] = stride[i];
  }
  *desc = p;
  return CUDNN_STATUS_SUCCESS;
}

}  // namespace

namespace stublegacy {

void count(StubCudnnDescriptorKind kind, Event event) {
  KindCounters& k = g_kinds[kind];
  (event == kCreated ? k.created : event == kSet ? k.set : k.destroyed).fetch_add(1, std::memory_order_relaxed);
}

void count_live(StubCudnnDescriptorKind kind, int change) {
  g_kinds[kind].live.fetch_add(change, std::memory_order_relaxed);
}

}  // namespace stublegacy

extern "C" {

StubCudnnDescriptorCounters stubcudnn_descriptor_counters(StubCudnnDescriptorKind kind) {
  if (kind < 0 || kind >= STUBCUDNN_DESCRIPTOR_KINDS) return {};
  const KindCounters& k = g_kinds[kind];
  return {k.created.load(), k.set.load(), k.destroyed.load(), static_cast<std::uint64_t>(k.live.load())};
}

// ---- convolutions ------------------------------------------------------------------------------

// cuDNN's defaults: CUDNN_DEFAULT_MATH, one group, CUDNN_DEFAULT_REORDER; not set until 2d or Nd.
cudnnStatus_t CUDNNWINAPI cudnnCreateConvolutionDescriptor(cudnnConvolutionDescriptor_t* convDesc) {
  const cudnnStatus_t status = stublegacy::create(kConvolution, convDesc);
  if (status == CUDNN_STATUS_SUCCESS) (*convDesc)->group_count = 1;
  return status;
}

cudnnStatus_t CUDNNWINAPI cudnnDestroyConvolutionDescriptor(cudnnConvolutionDescriptor_t convDesc) {
  return stublegacy::destroy(kConvolution, convDesc);
}

cudnnStatus_t CUDNNWINAPI cudnnSetConvolution2dDescriptor(cudnnConvolutionDescriptor_t convDesc, int pad_h, int pad_w,
                                                          int u, int v, int dilation_h, int dilation_w,
                                                          cudnnConvolutionMode_t mode, cudnnDataType_t computeType) {
  count(kConvolution, stublegacy::kSet);
  const int pad[2] = {pad_h, pad_w}, stride[2] = {u, v}, dilation[2] = {dilation_h, dilation_w};
  return set_convolution(convDesc, 2, pad, stride, dilation, mode, computeType);
}

cudnnStatus_t CUDNNWINAPI cudnnSetConvolutionNdDescriptor(cudnnConvolutionDescriptor_t convDesc, int arrayLength,
                                                          const int padA[], const int filterStrideA[],
                                                          const int dilationA[], cudnnConvolutionMode_t mode,
                                                          cudnnDataType_t computeType) {
  count(kConvolution, stublegacy::kSet);
  return set_convolution(convDesc, arrayLength, padA, filterStrideA, dilationA, mode, computeType);
}

cudnnStatus_t CUDNNWINAPI cudnnGetConvolution2dDescriptor(const cudnnConvolutionDescriptor_t convDesc, int* pad_h,
                                                          int* pad_w, int* u, int* v, int* dilation_h, int* dilation_w,
                                                          cudnnConvolutionMode_t* mode, cudnnDataType_t* computeType) {
  if (convDesc == nullptr || !convDesc->set || convDesc->spatial != 2) return CUDNN_STATUS_BAD_PARAM;
  if (!all_given({pad_h, pad_w, u, v, dilation_h, dilation_w, mode, computeType})) return CUDNN_STATUS_BAD_PARAM;
  *pad_h = convDesc->pad[0];
  *pad_w = convDesc->pad[1];
  *u = convDesc->stride[0];
  *v = convDesc->stride[1];
  *dilation_h = convDesc->dilation[0];
  *dilation_w = convDesc->dilation[1];
  *mode = convDesc->mode;
  *computeType = convDesc->compute_type;
  return CUDNN_STATUS_SUCCESS;
}

// Fills the first min(arrayLengthRequested, arrayLength) entries; *arrayLength is the descriptor's.
cudnnStatus_t CUDNNWINAPI cudnnGetConvolutionNdDescriptor(const cudnnConvolutionDescriptor_t convDesc,
                                                          int arrayLengthRequested, int* arrayLength, int padA[],
                                                          int strideA[], int dilationA[], cudnnConvolutionMode_t* mode,
                                                          cudnnDataType_t* computeType) {
  if (convDesc == nullptr || !convDesc->set || arrayLengthRequested < 0) return CUDNN_STATUS_BAD_PARAM;
  if (!all_given({arrayLength, mode, computeType})) return CUDNN_STATUS_BAD_PARAM;
  if (arrayLengthRequested > 0 && !all_given({padA, strideA, dilationA})) return CUDNN_STATUS_BAD_PARAM;
  *arrayLength = convDesc->spatial;
  for (int i = 0; i < arrayLengthRequested && i < convDesc->spatial; ++i) {
    padA[i] = convDesc->pad[i];
    strideA[i] = convDesc->stride[i];
    dilationA[i] = convDesc->dilation[i];
  }
  *mode = convDesc->mode;
  *computeType = convDesc->compute_type;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t CUDNNWINAPI cudnnSetConvolutionMathType(cudnnConvolutionDescriptor_t convDesc, cudnnMathType_t mathType) {
  count(kConvolution, stublegacy::kSet);
  if (convDesc == nullptr || mathType < CUDNN_DEFAULT_MATH || mathType > CUDNN_FMA_MATH) return CUDNN_STATUS_BAD_PARAM;
  convDesc->math_type = mathType;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t CUDNNWINAPI cudnnGetConvolutionMathType(cudnnConvolutionDescriptor_t convDesc,
                                                      cudnnMathType_t* mathType) {
  if (convDesc == nullptr || mathType == nullptr) return CUDNN_STATUS_BAD_PARAM;
  *mathType = convDesc->math_type;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t CUDNNWINAPI cudnnSetConvolutionGroupCount(cudnnConvolutionDescriptor_t convDesc, int groupCount) {
  count(kConvolution, stublegacy::kSet);
  if (convDesc == nullptr || groupCount < 1) return CUDNN_STATUS_BAD_PARAM;
  convDesc->group_count = groupCount;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t CUDNNWINAPI cudnnGetConvolutionGroupCount(cudnnConvolutionDescriptor_t convDesc, int* groupCount) {
  if (convDesc == nullptr || groupCount == nullptr) return CUDNN_STATUS_BAD_PARAM;
  *groupCount = convDesc->group_count;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t CUDNNWINAPI cudnnSetConvolutionReorderType(cudnnConvolutionDescriptor_t convDesc,
                                                         cudnnReorderType_t reorderType) {
  count(kConvolution, stublegacy::kSet);
  if (convDesc == nullptr || (reorderType != CUDNN_DEFAULT_REORDER && reorderType != CUDNN_NO_REORDER))
    return CUDNN_STATUS_BAD_PARAM;
  convDesc->reorder_type = reorderType;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t CUDNNWINAPI cudnnGetConvolutionReorderType(cudnnConvolutionDescriptor_t convDesc,
                                                         cudnnReorderType_t* reorderType) {
  if (convDesc == nullptr || reorderType == nullptr) return CUDNN_STATUS_BAD_PARAM;
  *reorderType = convDesc->reorder_type;
  return CUDNN_STATUS_SUCCESS;
}

// ---- activations -------------------------------------------------------------------------------

// The swish beta is 1.0 (the stub's choice: cuDNN documents none) until it is set.
cudnnStatus_t CUDNNWINAPI cudnnCreateActivationDescriptor(cudnnActivationDescriptor_t* activationDesc) {
  const cudnnStatus_t status = stublegacy::create(kActivation, activationDesc);
  if (status == CUDNN_STATUS_SUCCESS) (*activationDesc)->swish_beta = 1.0;
  return status;
}

cudnnStatus_t CUDNNWINAPI cudnnDestroyActivationDescriptor(cudnnActivationDescriptor_t activationDesc) {
  return stublegacy::destroy(kActivation, activationDesc);
}

cudnnStatus_t CUDNNWINAPI cudnnSetActivationDescriptor(cudnnActivationDescriptor_t activationDesc,
                                                       cudnnActivationMode_t mode, cudnnNanPropagation_t reluNanOpt,
                                                       double coef) {
  count(kActivation, stublegacy::kSet);
  if (activationDesc == nullptr || mode < CUDNN_ACTIVATION_SIGMOID || mode > CUDNN_ACTIVATION_SWISH ||
      !known_nan(reluNanOpt))
    return CUDNN_STATUS_BAD_PARAM;
  activationDesc->set = 1;
  activationDesc->mode = mode;
  activationDesc->nan = reluNanOpt;
  activationDesc->coef = coef;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t CUDNNWINAPI cudnnGetActivationDescriptor(const cudnnActivationDescriptor_t activationDesc,
                                                       cudnnActivationMode_t* mode, cudnnNanPropagation_t* reluNanOpt,
                                                       double* coef) {
  if (activationDesc == nullptr || !activationDesc->set || !all_given({mode, reluNanOpt, coef}))
    return CUDNN_STATUS_BAD_PARAM;
  *mode = activationDesc->mode;
  *reluNanOpt = activationDesc->nan;
  *coef = activationDesc->coef;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t CUDNNWINAPI cudnnSetActivationDescriptorSwishBeta(cudnnActivationDescriptor_t activationDesc,
                                                                double swish_beta) {
  count(kActivation, stublegacy::kSet);
  if (activationDesc == nullptr) return CUDNN_STATUS_BAD_PARAM;
  activationDesc->swish_beta = swish_beta;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t CUDNNWINAPI cudnnGetActivationDescriptorSwishBeta(cudnnActivationDescriptor_t activationDesc,
                                                                double* swish_beta) {
  if (activationDesc == nullptr || swish_beta == nullptr) return CUDNN_STATUS_BAD_PARAM;
  *swish_beta = activationDesc->swish_beta;
  return CUDNN_STATUS_SUCCESS;
}

// ---- pooling -----------------------------------------------------------------------------------

cudnnStatus_t CUDNNWINAPI cudnnCreatePoolingDescriptor(cudnnPoolingDescriptor_t* poolingDesc) {
  return stublegacy::create(kPooling, poolingDesc);
}

cudnnStatus_t CUDNNWINAPI cudnnDestroyPoolingDescriptor(cudnnPoolingDescriptor_t poolingDesc) {
  return stublegacy::destroy(kPooling, poolingDesc);
}

cudnnStatus_t CUDNNWINAPI cudnnSetPooling2dDescriptor(cudnnPoolingDescriptor_t poolingDesc, cudnnPoolingMode_t mode,
                                                      cudnnNanPropagation_t maxpoolingNanOpt, int windowHeight,
                                                      int windowWidth, int verticalPadding, int horizontalPadding,
                                                      int verticalStride, int horizontalStride) {
  count(kPooling, stublegacy::kSet);
  const int window[2] = {windowHeight, windowWidth}, padding[2] = {verticalPadding, horizontalPadding},
            stride[2] = {verticalStride, horizontalStride};
  return set_pooling(poolingDesc, mode, maxpoolingNanOpt, 2, window, padding, stride);
}

cudnnStatus_t CUDNNWINAPI cudnnSetPoolingNdDescriptor(cudnnPoolingDescriptor_t poolingDesc,
                                                      const cudnnPoolingMode_t mode,
                                                      const cudnnNanPropagation_t maxpoolingNanOpt, int nbDims,
                                                      const int windowDimA[], const int paddingA[],
                                                      const int strideA[]) {
  count(kPooling, stublegacy::kSet);
  return set_pooling(poolingDesc, mode, maxpoolingNanOpt, nbDims, windowDimA, paddingA, strideA);
}

cudnnStatus_t CUDNNWINAPI cudnnGetPooling2dDescriptor(const cudnnPoolingDescriptor_t poolingDesc,
                                                      cudnnPoolingMode_t* mode, cudnnNanPropagation_t* maxpoolingNanOpt,
                                                      int* windowHeight, int* windowWidth, int* verticalPadding,
                                                      int* horizontalPadding, int* verticalStride,
                                                      int* horizontalStride) {
  if (poolingDesc == nullptr || !poolingDesc->set || poolingDesc->nb_dims != 2) return CUDNN_STATUS_BAD_PARAM;
  if (!all_given({mode, maxpoolingNanOpt, windowHeight, windowWidth, verticalPadding, horizontalPadding, verticalStride,
                  horizontalStride}))
    return CUDNN_STATUS_BAD_PARAM;
  *mode = poolingDesc->mode;
  *maxpoolingNanOpt = poolingDesc->nan;
  *windowHeight = poolingDesc->window[0];
  *windowWidth = poolingDesc->window[1];
  *verticalPadding = poolingDesc->padding[0];
  *horizontalPadding = poolingDesc->padding[1];
  *verticalStride = poolingDesc->stride[0];
  *horizontalStride = poolingDesc->stride[1];
  return CUDNN_STATUS_SUCCESS;
}

// Fills the first min(nbDimsRequested, nbDims) entries; *nbDims is the descriptor's.
cudnnStatus_t CUDNNWINAPI cudnnGetPoolingNdDescriptor(const cudnnPoolingDescriptor_t poolingDesc, int nbDimsRequested,
                                                      cudnnPoolingMode_t* mode, cudnnNanPropagation_t* maxpoolingNanOpt,
                                                      int* nbDims, int windowDimA[], int paddingA[], int strideA[]) {
  if (poolingDesc == nullptr || !poolingDesc->set || nbDimsRequested < 0) return CUDNN_STATUS_BAD_PARAM;
  if (!all_given({mode, maxpoolingNanOpt, nbDims})) return CUDNN_STATUS_BAD_PARAM;
  if (nbDimsRequested > 0 && !all_given({windowDimA, paddingA, strideA})) return CUDNN_STATUS_BAD_PARAM;
  *mode = poolingDesc->mode;
  *maxpoolingNanOpt = poolingDesc->nan;
  *nbDims = poolingDesc->nb_dims;
  for (int i = 0; i < nbDimsRequested && i < poolingDesc->nb_dims; ++i) {
    windowDimA[i] = poolingDesc->window[i];
    paddingA[i] = poolingDesc->padding[i];
    strideA[i] = poolingDesc->stride[i];
  }
  return CUDNN_STATUS_SUCCESS;
}

// ---- op tensors --------------------------------------------------------------------------------

cudnnStatus_t CUDNNWINAPI cudnnCreateOpTensorDescriptor(cudnnOpTensorDescriptor_t* opTensorDesc) {
  return stublegacy::create(kOpTensor, opTensorDesc);
}

cudnnStatus_t CUDNNWINAPI cudnnDestroyOpTensorDescriptor(cudnnOpTensorDescriptor_t opTensorDesc) {
  return stublegacy::destroy(kOpTensor, opTensorDesc);
}

cudnnStatus_t CUDNNWINAPI cudnnSetOpTensorDescriptor(cudnnOpTensorDescriptor_t opTensorDesc,
                                                     cudnnOpTensorOp_t opTensorOp, cudnnDataType_t opTensorCompType,
                                                     cudnnNanPropagation_t opTensorNanOpt) {
  count(kOpTensor, stublegacy::kSet);
  if (opTensorDesc == nullptr || opTensorOp < CUDNN_OP_TENSOR_ADD || opTensorOp > CUDNN_OP_TENSOR_NOT ||
      !known_type(opTensorCompType) || !known_nan(opTensorNanOpt))
    return CUDNN_STATUS_BAD_PARAM;
  *opTensorDesc = {1, opTensorOp, opTensorCompType, opTensorNanOpt};
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t CUDNNWINAPI cudnnGetOpTensorDescriptor(const cudnnOpTensorDescriptor_t opTensorDesc,
                                                     cudnnOpTensorOp_t* opTensorOp, cudnnDataType_t* opTensorCompType,
                                                     cudnnNanPropagation_t* opTensorNanOpt) {
  if (opTensorDesc == nullptr || !opTensorDesc->set || !all_given({opTensorOp, opTensorCompType, opTensorNanOpt}))
    return CUDNN_STATUS_BAD_PARAM;
  *opTensorOp = opTensorDesc->op;
  *opTensorCompType = opTensorDesc->compute_type;
  *opTensorNanOpt = opTensorDesc->nan;
  return CUDNN_STATUS_SUCCESS;
}

// ---- LRN ---------------------------------------------------------------------------------------

// Set from the start, with the defaults cudnn_ops.h gives: n 5, alpha 1e-4, beta 0.75, k 2.0.
cudnnStatus_t CUDNNWINAPI cudnnCreateLRNDescriptor(cudnnLRNDescriptor_t* normDesc) {
  const cudnnStatus_t status = stublegacy::create(kLrn, normDesc);
  if (status == CUDNN_STATUS_SUCCESS) **normDesc = {1, 5, 1e-4, 0.75, 2.0};
  return status;
}

cudnnStatus_t CUDNNWINAPI cudnnDestroyLRNDescriptor(cudnnLRNDescriptor_t lrnDesc) {
  return stublegacy::destroy(kLrn, lrnDesc);
}

cudnnStatus_t CUDNNWINAPI cudnnSetLRNDescriptor(cudnnLRNDescriptor_t normDesc, unsigned lrnN, double lrnAlpha,
                                                double lrnBeta, double lrnK) {
  count(kLrn, stublegacy::kSet);
  if (normDesc == nullptr || lrnN < CUDNN_LRN_MIN_N || lrnN > CUDNN_LRN_MAX_N || !(lrnK >= CUDNN_LRN_MIN_K) ||
      !(lrnBeta >= CUDNN_LRN_MIN_BETA))
    return CUDNN_STATUS_BAD_PARAM;
  *normDesc = {1, lrnN, lrnAlpha, lrnBeta, lrnK};
  return CUDNN_STATUS_SUCCESS;
}

// Any pointer may be NULL (cudnn_ops.h): that value is not returned.
cudnnStatus_t CUDNNWINAPI cudnnGetLRNDescriptor(cudnnLRNDescriptor_t normDesc, unsigned* lrnN, double* lrnAlpha,
                                                double* lrnBeta, double* lrnK) {
  if (normDesc == nullptr) return CUDNN_STATUS_BAD_PARAM;
  if (lrnN) *lrnN = normDesc->n;
  if (lrnAlpha) *lrnAlpha = normDesc->alpha;
  if (lrnBeta) *lrnBeta = normDesc->beta;
  if (lrnK) *lrnK = normDesc->k;
  return CUDNN_STATUS_SUCCESS;
}

}  // extern "C"
