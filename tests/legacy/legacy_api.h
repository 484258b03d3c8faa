// The functions a legacy-replay scenario (legacy_scenario.h) calls, as one table of pointers: cuDNN's
// handles, descriptors and the 13 replayable ops, and the stub's controls. Each load mode fills it
// its own way (legacy_scenario.cpp): the program's own references (linked, ops), a framework
// library's wrappers that call through its PLT (local, legacy_framework.cpp), dlsym on a handle of
// the stub (dlsym); and every scenario fills a second one around any interposer, with glibc's own
// dlsym on the stub library's handle, for the reference calls and for the descriptors a case makes
// around the shim.
#pragma once

#include <cudnn.h>

#include "tests/stub/stub_control.h"
#include "tests/stub/stub_legacy_control.h"

#pragma GCC diagnostic ignored "-Wdeprecated-declarations"  // some of cuDNN 9's legacy API

#define LEGACY_HANDLE_FUNCTIONS(X) X(cudnnCreate) X(cudnnDestroy) X(cudnnSetStream) X(cudnnGetStream)

#define LEGACY_DESCRIPTOR_FUNCTIONS(X)                                                                        \
  X(cudnnCreateTensorDescriptor) X(cudnnSetTensor4dDescriptor) X(cudnnSetTensorNdDescriptor)                 \
  X(cudnnDeriveBNTensorDescriptor) X(cudnnDestroyTensorDescriptor) X(cudnnCreateFilterDescriptor) X(cudnnSetFilter4dDescriptor)               \
  X(cudnnDestroyFilterDescriptor) X(cudnnCreateConvolutionDescriptor) X(cudnnSetConvolution2dDescriptor)     \
  X(cudnnSetConvolutionMathType) X(cudnnSetConvolutionGroupCount) X(cudnnDestroyConvolutionDescriptor)       \
  X(cudnnCreateActivationDescriptor) X(cudnnSetActivationDescriptor) X(cudnnSetActivationDescriptorSwishBeta) \
  X(cudnnDestroyActivationDescriptor) X(cudnnCreatePoolingDescriptor) X(cudnnSetPooling2dDescriptor)         \
  X(cudnnDestroyPoolingDescriptor) X(cudnnCreateOpTensorDescriptor) X(cudnnSetOpTensorDescriptor)            \
  X(cudnnDestroyOpTensorDescriptor) X(cudnnCreateLRNDescriptor) X(cudnnSetLRNDescriptor)                     \
  X(cudnnDestroyLRNDescriptor)

#define LEGACY_OP_FUNCTIONS(X)                                                                            \
  X(cudnnBatchNormalizationForwardInference) X(cudnnBatchNormalizationForwardTrainingEx)                 \
  X(cudnnBatchNormalizationBackwardEx) X(cudnnConvolutionForward) X(cudnnConvolutionBiasActivationForward) \
  X(cudnnActivationForward) X(cudnnPoolingForward) X(cudnnSoftmaxForward) X(cudnnAddTensor) X(cudnnOpTensor) \
  X(cudnnScaleTensor) X(cudnnTransformTensor) X(cudnnLRNCrossChannelForward)

// The stub's controls: nothing interposes them. In libcudnn_ops.so.9 they act on its own copy of
// the legacy API; stubcudnn_counters (handles and streams) is libcudnn.so.9's alone.
#define LEGACY_STUB_FUNCTIONS(X)                                                                        \
  X(stubcudnn_op_counters) X(stubcudnn_op_totals) X(stubcudnn_descriptor_counters)                     \
  X(stubcudnn_reference_calls) X(stubcudnn_inner_calls) X(stubcudnn_inner_call_count) X(stubcudnn_counters)   \
  X(stubcudnn_set_kernel_style)

#define LEGACY_FUNCTIONS(X) \
  LEGACY_HANDLE_FUNCTIONS(X) LEGACY_DESCRIPTOR_FUNCTIONS(X) LEGACY_OP_FUNCTIONS(X) LEGACY_STUB_FUNCTIONS(X)

struct LegacyApi {
#define LEGACY_API_MEMBER(name) decltype(&::name) name;
  LEGACY_FUNCTIONS(LEGACY_API_MEMBER)
#undef LEGACY_API_MEMBER
};
