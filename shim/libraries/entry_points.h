// The one table of the functions the shim interposes: X-macros only, no includes, so that the
// version script that exports them (exports.map.in) is made from this file by the preprocessor.
//
// Every entry is X(exported, library, function, how, arguments):
//   exported   the name the shim exports: the library's own
//   library    the library that defines it (real_symbols.h: its table of real symbols starts its
//              entries with the same two fields); the library's status type is the result
//   function   the shim's function, which takes the caller's return address first (exports.cpp)
//   how        what the part that handles it needs to know, read by that part alone: a replayed
//              call's family, a recorded call's (action, kind, recorder); 0 when it needs nothing
//   arguments  its parameters as the library's header declares them, one (type, name) each, and
//              (type, name, role) where a replayed call's key (roles.h) cannot take the role from
//              the type: a pointer to const (a scaling factor S or device data D), an output or
//              nullable descriptor (Tout, Tnull, Actnull), a GEMM's type of C (Ctype)
// A user of the table that needs only some fields takes the rest as `...`. cudnnSetStream is not
// here: its fast path is written out in exports.cpp. An entry may go anywhere: another copy of the
// shim reaches each function by its name (dispatch.h), so a name stands for its arguments (an entry
// whose arguments change takes a new name). Only the handles' and backend calls' names
// stay among the first 64 (callers.h keeps them in one word, and checks it).
#ifndef CUDNN_FASTPATH_SHIM_ENTRY_POINTS_H_
#define CUDNN_FASTPATH_SHIM_ENTRY_POINTS_H_

// An entry's result: its library's status type.
#define CUDNN_FASTPATH_RESULT(library) CUDNN_FASTPATH_RESULT_##library
#define CUDNN_FASTPATH_RESULT_kCudnn cudnnStatus_t
#define CUDNN_FASTPATH_RESULT_kCudart cudaError_t
#define CUDNN_FASTPATH_RESULT_kCuda CUresult
#define CUDNN_FASTPATH_RESULT_kCublasLt cublasStatus_t
#define CUDNN_FASTPATH_RESULT_kCublas cublasStatus_t

// An entry's arguments, a sequence (a)(b)(c), as parameters ("type name, ..."), as arguments
// ("name, ..."), and as roles (roles.h's role_of: the one given, else the type's). Each walks the
// sequence with two macros that name each other, and ends where its last one is pasted to _END.
// An item puts a comma before itself, one rescan late (CUDNN_FASTPATH_COMMA_LATER) so that
// CUDNN_FASTPATH_CAT_ still gets two arguments, and CUDNN_FASTPATH_TAIL drops the first.
#define CUDNN_FASTPATH_PARAMETERS(arguments) CUDNN_FASTPATH_EACH(CUDNN_FASTPATH_PARAMETER, arguments)
#define CUDNN_FASTPATH_ARGUMENTS(arguments) CUDNN_FASTPATH_EACH(CUDNN_FASTPATH_ARGUMENT, arguments)
#define CUDNN_FASTPATH_ROLES(arguments) CUDNN_FASTPATH_EACH(CUDNN_FASTPATH_ROLE, arguments)

#define CUDNN_FASTPATH_PARAMETER(type, ...) CUDNN_FASTPATH_COMMA_LATER type CUDNN_FASTPATH_FIRST(__VA_ARGS__, ~)
#define CUDNN_FASTPATH_PARAMETER_A(...) CUDNN_FASTPATH_PARAMETER(__VA_ARGS__) CUDNN_FASTPATH_PARAMETER_B
#define CUDNN_FASTPATH_PARAMETER_B(...) CUDNN_FASTPATH_PARAMETER(__VA_ARGS__) CUDNN_FASTPATH_PARAMETER_A
#define CUDNN_FASTPATH_PARAMETER_A_END
#define CUDNN_FASTPATH_PARAMETER_B_END
#define CUDNN_FASTPATH_ARGUMENT(type, ...) CUDNN_FASTPATH_COMMA_LATER CUDNN_FASTPATH_FIRST(__VA_ARGS__, ~)
#define CUDNN_FASTPATH_ARGUMENT_A(...) CUDNN_FASTPATH_ARGUMENT(__VA_ARGS__) CUDNN_FASTPATH_ARGUMENT_B
#define CUDNN_FASTPATH_ARGUMENT_B(...) CUDNN_FASTPATH_ARGUMENT(__VA_ARGS__) CUDNN_FASTPATH_ARGUMENT_A
#define CUDNN_FASTPATH_ARGUMENT_A_END
#define CUDNN_FASTPATH_ARGUMENT_B_END
#define CUDNN_FASTPATH_ROLE(type, ...) \
  CUDNN_FASTPATH_COMMA_LATER role_of<type>(CUDNN_FASTPATH_SECOND(__VA_ARGS__, from_type, ~))
#define CUDNN_FASTPATH_ROLE_A(...) CUDNN_FASTPATH_ROLE(__VA_ARGS__) CUDNN_FASTPATH_ROLE_B
#define CUDNN_FASTPATH_ROLE_B(...) CUDNN_FASTPATH_ROLE(__VA_ARGS__) CUDNN_FASTPATH_ROLE_A
#define CUDNN_FASTPATH_ROLE_A_END
#define CUDNN_FASTPATH_ROLE_B_END

#define CUDNN_FASTPATH_EACH(view, arguments) CUDNN_FASTPATH_TAIL(CUDNN_FASTPATH_CAT(view##_A arguments, _END))
#define CUDNN_FASTPATH_CAT(a, b) CUDNN_FASTPATH_CAT_(a, b)
#define CUDNN_FASTPATH_CAT_(a, b) a##b
#define CUDNN_FASTPATH_TAIL(...) CUDNN_FASTPATH_TAIL_(__VA_ARGS__)
#define CUDNN_FASTPATH_TAIL_(first, ...) __VA_ARGS__
#define CUDNN_FASTPATH_FIRST(first, ...) first
#define CUDNN_FASTPATH_SECOND(first, second, ...) second
#define CUDNN_FASTPATH_COMMA() ,
#define CUDNN_FASTPATH_NOTHING()
#define CUDNN_FASTPATH_COMMA_LATER CUDNN_FASTPATH_COMMA CUDNN_FASTPATH_NOTHING() ()
// A parenthesised list without its parentheses, and a list left out.
#define CUDNN_FASTPATH_EXPAND(...) __VA_ARGS__
#define CUDNN_FASTPATH_DROP(...)

// Handles (handles.cpp).
#define CUDNN_FASTPATH_HANDLE_ENTRY_POINTS(X) \
  X(cudnnCreate, kCudnn, create, 0, (cudnnHandle_t*, handle)) \
  X(cudnnDestroy, kCudnn, destroy, 0, (cudnnHandle_t, handle))

// Stream destroys (stream_destroy.cpp).
#define CUDNN_FASTPATH_STREAM_ENTRY_POINTS(X) \
  X(cudaStreamDestroy, kCudart, cuda_stream_destroy, 0, (cudaStream_t, stream)) \
  X(cuStreamDestroy_v2, kCuda, cu_stream_destroy_v2, 0, (CUstream, stream)) \
  X(cuStreamDestroy, kCuda, cu_stream_destroy, 0, (CUstream, stream))

// The backend descriptor API (variant_packs.cpp).
#define CUDNN_FASTPATH_BACKEND_ENTRY_POINTS(X) \
  X(cudnnBackendCreateDescriptor, kCudnn, backend_create_descriptor, 0, \
    (cudnnBackendDescriptorType_t, type) \
    (cudnnBackendDescriptor_t*, descriptor)) \
  X(cudnnBackendDestroyDescriptor, kCudnn, backend_destroy_descriptor, 0, (cudnnBackendDescriptor_t, descriptor)) \
  X(cudnnBackendInitialize, kCudnn, backend_initialize, 0, (cudnnBackendDescriptor_t, descriptor)) \
  X(cudnnBackendFinalize, kCudnn, backend_finalize, 0, (cudnnBackendDescriptor_t, descriptor)) \
  X(cudnnBackendSetAttribute, kCudnn, backend_set_attribute, 0, \
    (cudnnBackendDescriptor_t, descriptor) \
    (cudnnBackendAttributeName_t, name) \
    (cudnnBackendAttributeType_t, type) \
    (int64_t, count) \
    (const void*, elements)) \
  X(cudnnBackendGetAttribute, kCudnn, backend_get_attribute, 0, \
    (cudnnBackendDescriptor_t, descriptor) \
    (cudnnBackendAttributeName_t, name) \
    (cudnnBackendAttributeType_t, type) \
    (int64_t, requested) \
    (int64_t*, count) \
    (void*, elements)) \
  X(cudnnBackendExecute, kCudnn, backend_execute, 0, \
    (cudnnHandle_t, handle) \
    (cudnnBackendDescriptor_t, plan) \
    (cudnnBackendDescriptor_t, pack)) \
  X(cudnnBackendPopulateCudaGraph, kCudnn, backend_populate_cuda_graph, 0, \
    (cudnnHandle_t, handle) \
    (cudnnBackendDescriptor_t, plan) \
    (cudnnBackendDescriptor_t, pack) \
    (cudaGraph_t, graph)) \
  X(cudnnBackendUpdateCudaGraph, kCudnn, backend_update_cuda_graph, 0, \
    (cudnnHandle_t, handle) \
    (cudnnBackendDescriptor_t, plan) \
    (cudnnBackendDescriptor_t, pack) \
    (cudaGraph_t, graph))

// The legacy descriptors the shim records (legacy_descriptors.cpp): action, kind, recorder.
#define CUDNN_FASTPATH_LEGACY_DESCRIPTOR_ENTRY_POINTS(X) \
  X(cudnnCreateTensorDescriptor, kCudnn, create_tensor_descriptor, (kCreate, kTensor, no_record), \
    (cudnnTensorDescriptor_t*, tensorDesc)) \
  X(cudnnSetTensor4dDescriptor, kCudnn, set_tensor_4d_descriptor, (kSet, kTensor, record_tensor_4d), \
    (cudnnTensorDescriptor_t, tensorDesc) \
    (cudnnTensorFormat_t, format) \
    (cudnnDataType_t, dataType) \
    (int, n) \
    (int, c) \
    (int, h) \
    (int, w)) \
  X(cudnnSetTensor4dDescriptorEx, kCudnn, set_tensor_4d_descriptor_ex, (kSet, kTensor, record_tensor_4d_ex), \
    (cudnnTensorDescriptor_t, tensorDesc) \
    (cudnnDataType_t, dataType) \
    (int, n) \
    (int, c) \
    (int, h) \
    (int, w) \
    (int, nStride) \
    (int, cStride) \
    (int, hStride) \
    (int, wStride)) \
  X(cudnnSetTensorNdDescriptor, kCudnn, set_tensor_nd_descriptor, (kSet, kTensor, record_tensor_nd), \
    (cudnnTensorDescriptor_t, tensorDesc) \
    (cudnnDataType_t, dataType) \
    (int, nbDims) \
    (const int*, dimA) \
    (const int*, strideA)) \
  X(cudnnSetTensorNdDescriptorEx, kCudnn, set_tensor_nd_descriptor_ex, (kSet, kTensor, record_tensor_nd_ex), \
    (cudnnTensorDescriptor_t, tensorDesc) \
    (cudnnTensorFormat_t, format) \
    (cudnnDataType_t, dataType) \
    (int, nbDims) \
    (const int*, dimA)) \
  X(cudnnDeriveBNTensorDescriptor, kCudnn, derive_bn_tensor_descriptor, (kSet, kTensor, record_derived_bn), \
    (cudnnTensorDescriptor_t, derivedBnDesc) \
    (const cudnnTensorDescriptor_t, xDesc) \
    (cudnnBatchNormMode_t, mode)) \
  X(cudnnDestroyTensorDescriptor, kCudnn, destroy_tensor_descriptor, (kDestroy, kTensor, no_record), \
    (cudnnTensorDescriptor_t, tensorDesc)) \
  X(cudnnCreateFilterDescriptor, kCudnn, create_filter_descriptor, (kCreate, kFilter, no_record), \
    (cudnnFilterDescriptor_t*, filterDesc)) \
  X(cudnnSetFilter4dDescriptor, kCudnn, set_filter_4d_descriptor, (kSet, kFilter, record_filter_4d), \
    (cudnnFilterDescriptor_t, filterDesc) \
    (cudnnDataType_t, dataType) \
    (cudnnTensorFormat_t, format) \
    (int, k) \
    (int, c) \
    (int, h) \
    (int, w)) \
  X(cudnnSetFilterNdDescriptor, kCudnn, set_filter_nd_descriptor, (kSet, kFilter, record_filter_nd), \
    (cudnnFilterDescriptor_t, filterDesc) \
    (cudnnDataType_t, dataType) \
    (cudnnTensorFormat_t, format) \
    (int, nbDims) \
    (const int*, filterDimA)) \
  X(cudnnDestroyFilterDescriptor, kCudnn, destroy_filter_descriptor, (kDestroy, kFilter, no_record), \
    (cudnnFilterDescriptor_t, filterDesc)) \
  X(cudnnCreateConvolutionDescriptor, kCudnn, \
    create_convolution_descriptor, (kCreate, kConvolution, convolution_defaults), \
    (cudnnConvolutionDescriptor_t*, convDesc)) \
  X(cudnnSetConvolution2dDescriptor, kCudnn, \
    set_convolution_2d_descriptor, (kSet, kConvolution, record_convolution_2d), \
    (cudnnConvolutionDescriptor_t, convDesc) \
    (int, pad_h) \
    (int, pad_w) \
    (int, u) \
    (int, v) \
    (int, dilation_h) \
    (int, dilation_w) \
    (cudnnConvolutionMode_t, mode) \
    (cudnnDataType_t, computeType)) \
  X(cudnnSetConvolutionNdDescriptor, kCudnn, \
    set_convolution_nd_descriptor, (kSet, kConvolution, record_convolution_nd), \
    (cudnnConvolutionDescriptor_t, convDesc) \
    (int, arrayLength) \
    (const int*, padA) \
    (const int*, filterStrideA) \
    (const int*, dilationA) \
    (cudnnConvolutionMode_t, mode) \
    (cudnnDataType_t, computeType)) \
  X(cudnnSetConvolutionMathType, kCudnn, set_convolution_math_type, (kSet, kConvolution, record_math_type), \
    (cudnnConvolutionDescriptor_t, convDesc) \
    (cudnnMathType_t, mathType)) \
  X(cudnnSetConvolutionGroupCount, kCudnn, set_convolution_group_count, (kSet, kConvolution, record_group_count), \
    (cudnnConvolutionDescriptor_t, convDesc) \
    (int, groupCount)) \
  X(cudnnSetConvolutionReorderType, kCudnn, set_convolution_reorder_type, (kSet, kConvolution, record_reorder_type), \
    (cudnnConvolutionDescriptor_t, convDesc) \
    (cudnnReorderType_t, reorderType)) \
  X(cudnnDestroyConvolutionDescriptor, kCudnn, destroy_convolution_descriptor, (kDestroy, kConvolution, no_record), \
    (cudnnConvolutionDescriptor_t, convDesc)) \
  X(cudnnCreateActivationDescriptor, kCudnn, \
    create_activation_descriptor, (kCreate, kActivation, activation_defaults), \
    (cudnnActivationDescriptor_t*, activationDesc)) \
  X(cudnnSetActivationDescriptor, kCudnn, set_activation_descriptor, (kSet, kActivation, record_activation), \
    (cudnnActivationDescriptor_t, activationDesc) \
    (cudnnActivationMode_t, mode) \
    (cudnnNanPropagation_t, reluNanOpt) \
    (double, coef)) \
  X(cudnnSetActivationDescriptorSwishBeta, kCudnn, \
    set_activation_descriptor_swish_beta, (kSet, kActivation, record_swish_beta), \
    (cudnnActivationDescriptor_t, activationDesc) \
    (double, swish_beta)) \
  X(cudnnDestroyActivationDescriptor, kCudnn, destroy_activation_descriptor, (kDestroy, kActivation, no_record), \
    (cudnnActivationDescriptor_t, activationDesc)) \
  X(cudnnCreatePoolingDescriptor, kCudnn, create_pooling_descriptor, (kCreate, kPooling, no_record), \
    (cudnnPoolingDescriptor_t*, poolingDesc)) \
  X(cudnnSetPooling2dDescriptor, kCudnn, set_pooling_2d_descriptor, (kSet, kPooling, record_pooling_2d), \
    (cudnnPoolingDescriptor_t, poolingDesc) \
    (cudnnPoolingMode_t, mode) \
    (cudnnNanPropagation_t, maxpoolingNanOpt) \
    (int, windowHeight) \
    (int, windowWidth) \
    (int, verticalPadding) \
    (int, horizontalPadding) \
    (int, verticalStride) \
    (int, horizontalStride)) \
  X(cudnnSetPoolingNdDescriptor, kCudnn, set_pooling_nd_descriptor, (kSet, kPooling, record_pooling_nd), \
    (cudnnPoolingDescriptor_t, poolingDesc) \
    (const cudnnPoolingMode_t, mode) \
    (const cudnnNanPropagation_t, maxpoolingNanOpt) \
    (int, nbDims) \
    (const int*, windowDimA) \
    (const int*, paddingA) \
    (const int*, strideA)) \
  X(cudnnDestroyPoolingDescriptor, kCudnn, destroy_pooling_descriptor, (kDestroy, kPooling, no_record), \
    (cudnnPoolingDescriptor_t, poolingDesc)) \
  X(cudnnCreateOpTensorDescriptor, kCudnn, create_op_tensor_descriptor, (kCreate, kOpTensor, no_record), \
    (cudnnOpTensorDescriptor_t*, opTensorDesc)) \
  X(cudnnSetOpTensorDescriptor, kCudnn, set_op_tensor_descriptor, (kSet, kOpTensor, record_op_tensor), \
    (cudnnOpTensorDescriptor_t, opTensorDesc) \
    (cudnnOpTensorOp_t, opTensorOp) \
    (cudnnDataType_t, opTensorCompType) \
    (cudnnNanPropagation_t, opTensorNanOpt)) \
  X(cudnnDestroyOpTensorDescriptor, kCudnn, destroy_op_tensor_descriptor, (kDestroy, kOpTensor, no_record), \
    (cudnnOpTensorDescriptor_t, opTensorDesc)) \
  X(cudnnCreateLRNDescriptor, kCudnn, create_lrn_descriptor, (kCreate, kLrn, lrn_defaults), \
    (cudnnLRNDescriptor_t*, normDesc)) \
  X(cudnnSetLRNDescriptor, kCudnn, set_lrn_descriptor, (kSet, kLrn, record_lrn), \
    (cudnnLRNDescriptor_t, normDesc) \
    (unsigned, lrnN) \
    (double, lrnAlpha) \
    (double, lrnBeta) \
    (double, lrnK)) \
  X(cudnnDestroyLRNDescriptor, kCudnn, destroy_lrn_descriptor, (kDestroy, kLrn, no_record), \
    (cudnnLRNDescriptor_t, lrnDesc)) \
  X(cudnnCreateTensorTransformDescriptor, kCudnn, \
    create_tensor_transform_descriptor, (kCreate, kTensorTransform, no_record), \
    (cudnnTensorTransformDescriptor_t*, transformDesc)) \
  X(cudnnSetTensorTransformDescriptor, kCudnn, \
    set_tensor_transform_descriptor, (kSet, kTensorTransform, record_tensor_transform), \
    (cudnnTensorTransformDescriptor_t, transformDesc) \
    (const uint32_t, nbDims) \
    (const cudnnTensorFormat_t, destFormat) \
    (const int32_t*, padBeforeA) \
    (const int32_t*, padAfterA) \
    (const uint32_t*, foldA) \
    (const cudnnFoldingDirection_t, direction)) \
  X(cudnnDestroyTensorTransformDescriptor, kCudnn, \
    destroy_tensor_transform_descriptor, (kDestroy, kTensorTransform, no_record), \
    (cudnnTensorTransformDescriptor_t, transformDesc))

// The replayable legacy ops (legacy_replay.cpp): the family.
#define CUDNN_FASTPATH_LEGACY_OP_ENTRY_POINTS(X) \
  X(cudnnBatchNormalizationForwardInference, kCudnn, batch_norm_forward_inference, legacy_bn, \
    (cudnnHandle_t, handle) \
    (cudnnBatchNormMode_t, mode) \
    (const void*, alpha, S) \
    (const void*, beta, S) \
    (const cudnnTensorDescriptor_t, xDesc) \
    (const void*, x, D) \
    (const cudnnTensorDescriptor_t, yDesc, Tout) \
    (void*, y) \
    (const cudnnTensorDescriptor_t, bnScaleBiasMeanVarDesc) \
    (const void*, bnScale, D) \
    (const void*, bnBias, D) \
    (const void*, estimatedMean, D) \
    (const void*, estimatedVariance, D) \
    (double, epsilon)) \
  X(cudnnBatchNormalizationForwardTrainingEx, kCudnn, batch_norm_forward_training_ex, legacy_bn, \
    (cudnnHandle_t, handle) \
    (cudnnBatchNormMode_t, mode) \
    (cudnnBatchNormOps_t, bnOps) \
    (const void*, alpha, S) \
    (const void*, beta, S) \
    (const cudnnTensorDescriptor_t, xDesc) \
    (const void*, xData, D) \
    (const cudnnTensorDescriptor_t, zDesc, Tnull) \
    (const void*, zData, D) \
    (const cudnnTensorDescriptor_t, yDesc, Tout) \
    (void*, yData) \
    (const cudnnTensorDescriptor_t, bnScaleBiasMeanVarDesc) \
    (const void*, bnScale, D) \
    (const void*, bnBias, D) \
    (double, exponentialAverageFactor) \
    (void*, resultRunningMean) \
    (void*, resultRunningVariance) \
    (double, epsilon) \
    (void*, resultSaveMean) \
    (void*, resultSaveInvVariance) \
    (cudnnActivationDescriptor_t, activationDesc, Actnull) \
    (void*, workspace) \
    (size_t, workSpaceSizeInBytes) \
    (void*, reserveSpace) \
    (size_t, reserveSpaceSizeInBytes)) \
  X(cudnnBatchNormalizationBackwardEx, kCudnn, batch_norm_backward_ex, legacy_bn, \
    (cudnnHandle_t, handle) \
    (cudnnBatchNormMode_t, mode) \
    (cudnnBatchNormOps_t, bnOps) \
    (const void*, alphaDataDiff, S) \
    (const void*, betaDataDiff, S) \
    (const void*, alphaParamDiff, S) \
    (const void*, betaParamDiff, S) \
    (const cudnnTensorDescriptor_t, xDesc) \
    (const void*, xData, D) \
    (const cudnnTensorDescriptor_t, yDesc, Tnull) \
    (const void*, yData, D) \
    (const cudnnTensorDescriptor_t, dyDesc) \
    (const void*, dyData, D) \
    (const cudnnTensorDescriptor_t, dzDesc, Tnull) \
    (void*, dzData) \
    (const cudnnTensorDescriptor_t, dxDesc, Tout) \
    (void*, dxData) \
    (const cudnnTensorDescriptor_t, dBnScaleBiasDesc) \
    (const void*, bnScaleData, D) \
    (const void*, bnBiasData, D) \
    (void*, dBnScaleData) \
    (void*, dBnBiasData) \
    (double, epsilon) \
    (const void*, savedMean, D) \
    (const void*, savedInvVariance, D) \
    (cudnnActivationDescriptor_t, activationDesc, Actnull) \
    (void*, workSpace) \
    (size_t, workSpaceSizeInBytes) \
    (void*, reserveSpace) \
    (size_t, reserveSpaceSizeInBytes)) \
  X(cudnnConvolutionForward, kCudnn, convolution_forward, legacy_conv, \
    (cudnnHandle_t, handle) \
    (const void*, alpha, S) \
    (const cudnnTensorDescriptor_t, xDesc) \
    (const void*, x, D) \
    (const cudnnFilterDescriptor_t, wDesc) \
    (const void*, w, D) \
    (const cudnnConvolutionDescriptor_t, convDesc) \
    (cudnnConvolutionFwdAlgo_t, algo) \
    (void*, workSpace) \
    (size_t, workSpaceSizeInBytes) \
    (const void*, beta, S) \
    (const cudnnTensorDescriptor_t, yDesc, Tout) \
    (void*, y)) \
  X(cudnnConvolutionBiasActivationForward, kCudnn, convolution_bias_activation_forward, legacy_conv, \
    (cudnnHandle_t, handle) \
    (const void*, alpha1, S) \
    (const cudnnTensorDescriptor_t, xDesc) \
    (const void*, x, D) \
    (const cudnnFilterDescriptor_t, wDesc) \
    (const void*, w, D) \
    (const cudnnConvolutionDescriptor_t, convDesc) \
    (cudnnConvolutionFwdAlgo_t, algo) \
    (void*, workSpace) \
    (size_t, workSpaceSizeInBytes) \
    (const void*, alpha2, S) \
    (const cudnnTensorDescriptor_t, zDesc) \
    (const void*, z, D) \
    (const cudnnTensorDescriptor_t, biasDesc) \
    (const void*, bias, D) \
    (const cudnnActivationDescriptor_t, activationDesc) \
    (const cudnnTensorDescriptor_t, yDesc, Tout) \
    (void*, y)) \
  X(cudnnActivationForward, kCudnn, activation_forward, legacy_tensor, \
    (cudnnHandle_t, handle) \
    (cudnnActivationDescriptor_t, activationDesc) \
    (const void*, alpha, S) \
    (const cudnnTensorDescriptor_t, xDesc) \
    (const void*, x, D) \
    (const void*, beta, S) \
    (const cudnnTensorDescriptor_t, yDesc, Tout) \
    (void*, y)) \
  X(cudnnPoolingForward, kCudnn, pooling_forward, legacy_tensor, \
    (cudnnHandle_t, handle) \
    (const cudnnPoolingDescriptor_t, poolingDesc) \
    (const void*, alpha, S) \
    (const cudnnTensorDescriptor_t, xDesc) \
    (const void*, x, D) \
    (const void*, beta, S) \
    (const cudnnTensorDescriptor_t, yDesc, Tout) \
    (void*, y)) \
  X(cudnnSoftmaxForward, kCudnn, softmax_forward, legacy_tensor, \
    (cudnnHandle_t, handle) \
    (cudnnSoftmaxAlgorithm_t, algo) \
    (cudnnSoftmaxMode_t, mode) \
    (const void*, alpha, S) \
    (const cudnnTensorDescriptor_t, xDesc) \
    (const void*, x, D) \
    (const void*, beta, S) \
    (const cudnnTensorDescriptor_t, yDesc, Tout) \
    (void*, y)) \
  X(cudnnAddTensor, kCudnn, add_tensor, legacy_tensor, \
    (cudnnHandle_t, handle) \
    (const void*, alpha, S) \
    (const cudnnTensorDescriptor_t, aDesc) \
    (const void*, A, D) \
    (const void*, beta, S) \
    (const cudnnTensorDescriptor_t, cDesc, Tout) \
    (void*, C)) \
  X(cudnnOpTensor, kCudnn, op_tensor, legacy_tensor, \
    (cudnnHandle_t, handle) \
    (const cudnnOpTensorDescriptor_t, opTensorDesc) \
    (const void*, alpha1, S) \
    (const cudnnTensorDescriptor_t, aDesc) \
    (const void*, A, D) \
    (const void*, alpha2, S) \
    (const cudnnTensorDescriptor_t, bDesc, Tnull) \
    (const void*, B, D) \
    (const void*, beta, S) \
    (const cudnnTensorDescriptor_t, cDesc, Tout) \
    (void*, C)) \
  X(cudnnScaleTensor, kCudnn, scale_tensor, legacy_tensor, \
    (cudnnHandle_t, handle) \
    (const cudnnTensorDescriptor_t, yDesc, Tout) \
    (void*, y) \
    (const void*, alpha, S)) \
  X(cudnnTransformTensor, kCudnn, transform_tensor, legacy_tensor, \
    (cudnnHandle_t, handle) \
    (const void*, alpha, S) \
    (const cudnnTensorDescriptor_t, xDesc) \
    (const void*, x, D) \
    (const void*, beta, S) \
    (const cudnnTensorDescriptor_t, yDesc, Tout) \
    (void*, y)) \
  X(cudnnLRNCrossChannelForward, kCudnn, lrn_cross_channel_forward, legacy_tensor, \
    (cudnnHandle_t, handle) \
    (cudnnLRNDescriptor_t, normDesc) \
    (cudnnLRNMode_t, lrnMode) \
    (const void*, alpha, S) \
    (const cudnnTensorDescriptor_t, xDesc) \
    (const void*, x, D) \
    (const void*, beta, S) \
    (const cudnnTensorDescriptor_t, yDesc, Tout) \
    (void*, y))

// cuBLASLt's descriptors and cuBLAS's handle state, as the shim records them (blas_records.cpp):
// action, kind, recorder (a destroy's: a hook run before it).
#define CUDNN_FASTPATH_BLAS_RECORD_ENTRY_POINTS(X) \
  X(cublasLtMatmulDescCreate, kCublasLt, create_matmul_desc, (kCreate, kMatmulDesc, matmul_desc_defaults), \
    (cublasLtMatmulDesc_t*, matmulDesc) \
    (cublasComputeType_t, computeType) \
    (cudaDataType_t, scaleType)) \
  X(cublasLtMatmulDescInit_internal, kCublasLt, init_matmul_desc, (kInit, kMatmulDesc, record_matmul_desc_init), \
    (cublasLtMatmulDesc_t, matmulDesc) \
    (size_t, size) \
    (cublasComputeType_t, computeType) \
    (cudaDataType_t, scaleType)) \
  X(cublasLtMatmulDescSetAttribute, kCublasLt, \
    set_matmul_desc_attribute, (kSet, kMatmulDesc, record_matmul_desc_attribute), \
    (cublasLtMatmulDesc_t, matmulDesc) \
    (cublasLtMatmulDescAttributes_t, attr) \
    (const void*, buf) \
    (size_t, sizeInBytes)) \
  X(cublasLtMatmulDescDestroy, kCublasLt, destroy_matmul_desc, (kDestroy, kMatmulDesc, no_hook), \
    (cublasLtMatmulDesc_t, matmulDesc)) \
  X(cublasLtMatrixLayoutCreate, kCublasLt, create_matrix_layout, (kCreate, kLayout, layout_defaults), \
    (cublasLtMatrixLayout_t*, matLayout) \
    (cudaDataType, type) \
    (uint64_t, rows) \
    (uint64_t, cols) \
    (int64_t, ld)) \
  X(cublasLtMatrixLayoutInit_internal, kCublasLt, init_matrix_layout, (kInit, kLayout, record_layout_init), \
    (cublasLtMatrixLayout_t, matLayout) \
    (size_t, size) \
    (cudaDataType, type) \
    (uint64_t, rows) \
    (uint64_t, cols) \
    (int64_t, ld)) \
  X(cublasLtMatrixLayoutSetAttribute, kCublasLt, \
    set_matrix_layout_attribute, (kSet, kLayout, record_layout_attribute), \
    (cublasLtMatrixLayout_t, matLayout) \
    (cublasLtMatrixLayoutAttribute_t, attr) \
    (const void*, buf) \
    (size_t, sizeInBytes)) \
  X(cublasLtMatrixLayoutDestroy, kCublasLt, destroy_matrix_layout, (kDestroy, kLayout, no_hook), \
    (cublasLtMatrixLayout_t, matLayout)) \
  X(cublasLtMatmulPreferenceCreate, kCublasLt, create_matmul_preference, (kCreate, kPreference, preference_defaults), \
    (cublasLtMatmulPreference_t*, pref)) \
  X(cublasLtMatmulPreferenceInit_internal, kCublasLt, \
    init_matmul_preference, (kInit, kPreference, record_preference_init), \
    (cublasLtMatmulPreference_t, pref) \
    (size_t, size)) \
  X(cublasLtMatmulPreferenceSetAttribute, kCublasLt, \
    set_matmul_preference_attribute, (kSet, kPreference, record_preference_attribute), \
    (cublasLtMatmulPreference_t, pref) \
    (cublasLtMatmulPreferenceAttributes_t, attr) \
    (const void*, buf) \
    (size_t, sizeInBytes)) \
  X(cublasLtMatmulPreferenceDestroy, kCublasLt, destroy_matmul_preference, (kDestroy, kPreference, no_hook), \
    (cublasLtMatmulPreference_t, pref)) \
  X(cublasLtEmulationDescCreate, kCublasLt, create_emulation_desc, (kCreate, kEmulation, emulation_defaults), \
    (cublasLtEmulationDesc_t*, emulationDesc)) \
  X(cublasLtEmulationDescInit_internal, kCublasLt, init_emulation_desc, (kInit, kEmulation, record_emulation_init), \
    (cublasLtEmulationDesc_t, emulationDesc) \
    (size_t, size)) \
  X(cublasLtEmulationDescSetAttribute, kCublasLt, \
    set_emulation_desc_attribute, (kSet, kEmulation, record_emulation_attribute), \
    (cublasLtEmulationDesc_t, emulationDesc) \
    (cublasLtEmulationDescAttributes_t, attr) \
    (const void*, buf) \
    (size_t, sizeInBytes)) \
  X(cublasLtEmulationDescDestroy, kCublasLt, destroy_emulation_desc, (kDestroy, kEmulation, no_hook), \
    (cublasLtEmulationDesc_t, emulationDesc)) \
  X(cublasLtDestroy, kCublasLt, destroy_lt_handle, (kDestroy, kLtHandle, forget_blas_handle), \
    (cublasLtHandle_t, lightHandle)) \
  X(cublasCreate_v2, kCublas, create_blas_handle, (kCreate, kBlasHandle, blas_handle_defaults), \
    (cublasHandle_t*, handle)) \
  X(cublasDestroy_v2, kCublas, destroy_blas_handle, (kDestroy, kBlasHandle, forget_blas_handle), \
    (cublasHandle_t, handle)) \
  X(cublasSetStream_v2, kCublas, set_blas_stream, (kSet, kBlasHandle, record_stream), \
    (cublasHandle_t, handle) \
    (cudaStream_t, streamId)) \
  X(cublasSetWorkspace_v2, kCublas, set_blas_workspace, (kSet, kBlasHandle, record_workspace), \
    (cublasHandle_t, handle) \
    (void*, workspace) \
    (size_t, workspaceSizeInBytes)) \
  X(cublasSetPointerMode_v2, kCublas, set_blas_pointer_mode, (kSet, kBlasHandle, record_pointer_mode), \
    (cublasHandle_t, handle) \
    (cublasPointerMode_t, mode)) \
  X(cublasSetMathMode, kCublas, set_blas_math_mode, (kSet, kBlasHandle, record_math_mode), \
    (cublasHandle_t, handle) \
    (cublasMath_t, mode)) \
  X(cublasSetAtomicsMode, kCublas, set_blas_atomics_mode, (kSet, kBlasHandle, record_atomics_mode), \
    (cublasHandle_t, handle) \
    (cublasAtomicsMode_t, mode)) \
  X(cublasSetSmCountTarget, kCublas, set_blas_sm_count_target, (kSet, kBlasHandle, record_sm_count_target), \
    (cublasHandle_t, handle) \
    (int, smCountTarget)) \
  X(cublasSetEmulationStrategy, kCublas, set_blas_emulation_strategy, (kSet, kBlasHandle, record_emulation_strategy), \
    (cublasHandle_t, handle) \
    (cublasEmulationStrategy_t, emulationStrategy)) \
  X(cublasSetEmulationSpecialValuesSupport, kCublas, \
    set_blas_special_values_support, (kSet, kBlasHandle, record_special_values_support), \
    (cublasHandle_t, handle) \
    (cudaEmulationSpecialValuesSupport, mask)) \
  X(cublasSetFixedPointEmulationMantissaControl, kCublas, \
    set_blas_mantissa_control, (kSet, kBlasHandle, record_mantissa_control), \
    (cublasHandle_t, handle) \
    (cudaEmulationMantissaControl, mantissaControl)) \
  X(cublasSetFixedPointEmulationMaxMantissaBitCount, kCublas, \
    set_blas_max_mantissa_bit_count, (kSet, kBlasHandle, record_max_mantissa_bit_count), \
    (cublasHandle_t, handle) \
    (int, maxMantissaBitCount)) \
  X(cublasSetFixedPointEmulationMantissaBitOffset, kCublas, \
    set_blas_mantissa_bit_offset, (kSet, kBlasHandle, record_mantissa_bit_offset), \
    (cublasHandle_t, handle) \
    (int, mantissaBitOffset)) \
  X(cublasSetFixedPointEmulationMantissaBitCountPointer, kCublas, \
    set_blas_mantissa_bit_count_pointer, (kSet, kBlasHandle, record_mantissa_bit_count_pointer), \
    (cublasHandle_t, handle) \
    (int*, mantissaBitCount))

// The replayed cuBLASLt calls (cublaslt_replay.cpp): the matmul, and its heuristic answered from
// a cache.
#define CUDNN_FASTPATH_CUBLASLT_CALL_ENTRY_POINTS(X) \
  X(cublasLtMatmul, kCublasLt, lt_matmul, 0, \
    (cublasLtHandle_t, lightHandle) \
    (cublasLtMatmulDesc_t, computeDesc) \
    (const void*, alpha) \
    (const void*, A) \
    (cublasLtMatrixLayout_t, Adesc) \
    (const void*, B) \
    (cublasLtMatrixLayout_t, Bdesc) \
    (const void*, beta) \
    (const void*, C) \
    (cublasLtMatrixLayout_t, Cdesc) \
    (void*, D) \
    (cublasLtMatrixLayout_t, Ddesc) \
    (const cublasLtMatmulAlgo_t*, algo) \
    (void*, workspace) \
    (size_t, workspaceSizeInBytes) \
    (cudaStream_t, stream)) \
  X(cublasLtMatmulAlgoGetHeuristic, kCublasLt, lt_matmul_algo_get_heuristic, 0, \
    (cublasLtHandle_t, lightHandle) \
    (cublasLtMatmulDesc_t, operationDesc) \
    (cublasLtMatrixLayout_t, Adesc) \
    (cublasLtMatrixLayout_t, Bdesc) \
    (cublasLtMatrixLayout_t, Cdesc) \
    (cublasLtMatrixLayout_t, Ddesc) \
    (cublasLtMatmulPreference_t, preference) \
    (int, requestedAlgoCount) \
    (cublasLtMatmulHeuristicResult_t*, heuristicResultsArray) \
    (int*, returnAlgoCount))

// The replayed cuBLAS GEMMs (cublas_replay.cpp): cublasGemmEx, cublasGemmStridedBatchedEx and their
// _64 forms, of the gemm family.
#define CUDNN_FASTPATH_CUBLAS_GEMM_ENTRY_POINTS(X) \
  X(cublasGemmEx, kCublas, gemm_ex, gemm, CUDNN_FASTPATH_GEMM_EX(int, CUDNN_FASTPATH_DROP)) \
  X(cublasGemmEx_64, kCublas, gemm_ex_64, gemm, CUDNN_FASTPATH_GEMM_EX(int64_t, CUDNN_FASTPATH_DROP)) \
  X(cublasGemmStridedBatchedEx, kCublas, gemm_strided_batched_ex, gemm, \
    CUDNN_FASTPATH_GEMM_EX(int, CUDNN_FASTPATH_EXPAND)) \
  X(cublasGemmStridedBatchedEx_64, kCublas, gemm_strided_batched_ex_64, gemm, \
    CUDNN_FASTPATH_GEMM_EX(int64_t, CUDNN_FASTPATH_EXPAND))

// cublasGemmEx's arguments, its sizes of type I (int; the _64 forms' int64_t); `strided` keeps
// (CUDNN_FASTPATH_EXPAND) or drops (CUDNN_FASTPATH_DROP) those of the strided-batched form.
#define CUDNN_FASTPATH_GEMM_EX(I, strided)  \
  (cublasHandle_t, handle)                  \
  (cublasOperation_t, transa)               \
  (cublasOperation_t, transb)               \
  (I, m)                                    \
  (I, n)                                    \
  (I, k)                                    \
  (const void*, alpha, S)                   \
  (const void*, A, D)                       \
  (cudaDataType, Atype)                     \
  (I, lda)                                  \
  strided((long long int, strideA))         \
  (const void*, B, D)                       \
  (cudaDataType, Btype)                     \
  (I, ldb)                                  \
  strided((long long int, strideB))         \
  (const void*, beta, S)                    \
  (void*, C)                                \
  (cudaDataType, Ctype, Ctype)              \
  (I, ldc)                                  \
  strided((long long int, strideC))         \
  strided((I, batchCount))                  \
  (cublasComputeType_t, computeType)        \
  (cublasGemmAlgo_t, algo)

// cuBLAS's typed GEMMs (cublas_replay.cpp), which PyTorch calls for fp32, fp64 and complex matmuls
// without a bias: for each type letter, cublas<t>gemm_v2, cublas<t>gemmStridedBatched and their
// _64 forms, of the typed_gemm family (a scaling factor's size is its pointee's).
#define CUDNN_FASTPATH_CUBLAS_TYPED_GEMM_ENTRY_POINTS(X) \
  CUDNN_FASTPATH_TYPED_GEMMS(X, S, s, float) \
  CUDNN_FASTPATH_TYPED_GEMMS(X, D, d, double) \
  CUDNN_FASTPATH_TYPED_GEMMS(X, C, c, cuComplex) \
  CUDNN_FASTPATH_TYPED_GEMMS(X, Z, z, cuDoubleComplex)

// The four entries of type letter L (l in the shim's names) and matrix type T.
#define CUDNN_FASTPATH_TYPED_GEMMS(X, L, l, T) \
  X(cublas##L##gemm_v2, kCublas, l##gemm, typed_gemm, CUDNN_FASTPATH_TYPED_GEMM(int, T, CUDNN_FASTPATH_DROP)) \
  X(cublas##L##gemm_v2_64, kCublas, l##gemm_64, typed_gemm, \
    CUDNN_FASTPATH_TYPED_GEMM(int64_t, T, CUDNN_FASTPATH_DROP)) \
  X(cublas##L##gemmStridedBatched, kCublas, l##gemm_strided_batched, typed_gemm, \
    CUDNN_FASTPATH_TYPED_GEMM(int, T, CUDNN_FASTPATH_EXPAND)) \
  X(cublas##L##gemmStridedBatched_64, kCublas, l##gemm_strided_batched_64, typed_gemm, \
    CUDNN_FASTPATH_TYPED_GEMM(int64_t, T, CUDNN_FASTPATH_EXPAND))

// cublas<t>gemm_v2's arguments, its sizes of type I and its matrices of type T; `strided` keeps or
// drops those of the strided-batched form, as above.
#define CUDNN_FASTPATH_TYPED_GEMM(I, T, strided) \
  (cublasHandle_t, handle)                       \
  (cublasOperation_t, transa)                    \
  (cublasOperation_t, transb)                    \
  (I, m)                                         \
  (I, n)                                         \
  (I, k)                                         \
  (const T*, alpha, S)                           \
  (const T*, A, D)                               \
  (I, lda)                                       \
  strided((long long int, strideA))              \
  (const T*, B, D)                               \
  (I, ldb)                                       \
  strided((long long int, strideB))              \
  (const T*, beta, S)                            \
  (T*, C)                                        \
  (I, ldc)                                       \
  strided((long long int, strideC))              \
  strided((I, batchCount))

// Every entry.
#define CUDNN_FASTPATH_ENTRY_POINTS(X) \
  CUDNN_FASTPATH_HANDLE_ENTRY_POINTS(X) CUDNN_FASTPATH_STREAM_ENTRY_POINTS(X) \
  CUDNN_FASTPATH_BACKEND_ENTRY_POINTS(X) CUDNN_FASTPATH_LEGACY_DESCRIPTOR_ENTRY_POINTS(X) \
  CUDNN_FASTPATH_LEGACY_OP_ENTRY_POINTS(X) CUDNN_FASTPATH_BLAS_RECORD_ENTRY_POINTS(X) \
  CUDNN_FASTPATH_CUBLASLT_CALL_ENTRY_POINTS(X) CUDNN_FASTPATH_CUBLAS_GEMM_ENTRY_POINTS(X) \
  CUDNN_FASTPATH_CUBLAS_TYPED_GEMM_ENTRY_POINTS(X)

#endif  // CUDNN_FASTPATH_SHIM_ENTRY_POINTS_H_
