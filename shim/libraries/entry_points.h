// The one table of the functions the shim interposes: X-macros only, no includes, so that the
// version script that exports them (exports.map.in) is made from this file by the preprocessor.
//
// Every entry is X(exported, library, result, function, parameters, arguments, ...): its exported
// name, the library that defines it (real_symbols.h, whose table of real symbols has entries of
// the same first two fields), its result type, the shim's function (which takes the caller's
// return address first: exports.cpp), its parameters and arguments as the library's header
// declares them, and what the part that handles it needs to know (the rest of the entry, read by
// that part alone; 0 when it needs nothing). A user of the table that needs only some fields takes
// the rest as `...`.
// cudnnSetStream is not here: its fast path is written out in exports.cpp.
//
// The order is that of DispatchV1's members (dispatch.h): the entries of
// CUDNN_FASTPATH_ENTRY_POINTS_V1 come before the run-time switch's members and every later list
// after them, so that the interface between copies of the shim only ever grows at its end. New
// entries go at the end of the last list, or into a new list after it.
#ifndef CUDNN_FASTPATH_SHIM_ENTRY_POINTS_H_
#define CUDNN_FASTPATH_SHIM_ENTRY_POINTS_H_

// A parenthesised list without its parentheses: EXPAND parameters.
#define CUDNN_FASTPATH_EXPAND(...) __VA_ARGS__

// Handles, stream destroys and the backend descriptor API (set_stream.cpp, stream_destroy.cpp,
// variant_packs.cpp).
#define CUDNN_FASTPATH_ENTRY_POINTS_V1(X)                                                               \
  X(cudnnCreate, kCudnn, cudnnStatus_t, create, (cudnnHandle_t * handle), (handle), 0) \
  X(cudnnDestroy, kCudnn, cudnnStatus_t, destroy, (cudnnHandle_t handle), (handle), 0) \
  X(cudaStreamDestroy, kCudart, cudaError_t, cuda_stream_destroy, (cudaStream_t stream), (stream), 0) \
  X(cuStreamDestroy_v2, kCuda, CUresult, cu_stream_destroy_v2, (CUstream stream), (stream), 0) \
  X(cuStreamDestroy, kCuda, CUresult, cu_stream_destroy, (CUstream stream), (stream), 0) \
  X(cudnnBackendCreateDescriptor, kCudnn, cudnnStatus_t, backend_create_descriptor,                     \
    (cudnnBackendDescriptorType_t type, cudnnBackendDescriptor_t * descriptor), (type, descriptor), 0) \
  X(cudnnBackendDestroyDescriptor, kCudnn, cudnnStatus_t, backend_destroy_descriptor,                   \
    (cudnnBackendDescriptor_t descriptor), (descriptor), 0) \
  X(cudnnBackendInitialize, kCudnn, cudnnStatus_t, backend_initialize, (cudnnBackendDescriptor_t descriptor), \
    (descriptor), 0) \
  X(cudnnBackendFinalize, kCudnn, cudnnStatus_t, backend_finalize, (cudnnBackendDescriptor_t descriptor), \
    (descriptor), 0) \
  X(cudnnBackendSetAttribute, kCudnn, cudnnStatus_t, backend_set_attribute,                             \
    (cudnnBackendDescriptor_t descriptor, cudnnBackendAttributeName_t name,                             \
     cudnnBackendAttributeType_t type, int64_t count, const void* elements),                            \
    (descriptor, name, type, count, elements), 0) \
  X(cudnnBackendGetAttribute, kCudnn, cudnnStatus_t, backend_get_attribute,                             \
    (cudnnBackendDescriptor_t descriptor, cudnnBackendAttributeName_t name,                             \
     cudnnBackendAttributeType_t type, int64_t requested, int64_t * count, void* elements),             \
    (descriptor, name, type, requested, count, elements), 0) \
  X(cudnnBackendExecute, kCudnn, cudnnStatus_t, backend_execute,                                        \
    (cudnnHandle_t handle, cudnnBackendDescriptor_t plan, cudnnBackendDescriptor_t pack),               \
    (handle, plan, pack), 0) \
  X(cudnnBackendPopulateCudaGraph, kCudnn, cudnnStatus_t, backend_populate_cuda_graph,                  \
    (cudnnHandle_t handle, cudnnBackendDescriptor_t plan, cudnnBackendDescriptor_t pack,                \
     cudaGraph_t graph),                                                                                \
    (handle, plan, pack, graph), 0) \
  X(cudnnBackendUpdateCudaGraph, kCudnn, cudnnStatus_t, backend_update_cuda_graph,                      \
    (cudnnHandle_t handle, cudnnBackendDescriptor_t plan, cudnnBackendDescriptor_t pack,                \
     cudaGraph_t graph),                                                                                \
    (handle, plan, pack, graph), 0)

// The legacy descriptors the shim records (legacy_descriptors.cpp): action, kind, recorder.
#define CUDNN_FASTPATH_LEGACY_DESCRIPTOR_ENTRY_POINTS(X)                                                            \
  X(cudnnCreateTensorDescriptor, kCudnn, cudnnStatus_t, create_tensor_descriptor, (cudnnTensorDescriptor_t* tensorDesc), (tensorDesc), kCreate, kTensor, no_record) \
  X(cudnnSetTensor4dDescriptor, kCudnn, cudnnStatus_t, set_tensor_4d_descriptor, (cudnnTensorDescriptor_t tensorDesc, cudnnTensorFormat_t format, cudnnDataType_t dataType, int n, int c, int h, int w), (tensorDesc, format, dataType, n, c, h, w), kSet, kTensor, record_tensor_4d) \
  X(cudnnSetTensor4dDescriptorEx, kCudnn, cudnnStatus_t, set_tensor_4d_descriptor_ex, (cudnnTensorDescriptor_t tensorDesc, cudnnDataType_t dataType, int n, int c, int h, int w, int nStride, int cStride, int hStride, int wStride), (tensorDesc, dataType, n, c, h, w, nStride, cStride, hStride, wStride), kSet, kTensor, record_tensor_4d_ex) \
  X(cudnnSetTensorNdDescriptor, kCudnn, cudnnStatus_t, set_tensor_nd_descriptor, (cudnnTensorDescriptor_t tensorDesc, cudnnDataType_t dataType, int nbDims, const int* dimA, const int* strideA), (tensorDesc, dataType, nbDims, dimA, strideA), kSet, kTensor, record_tensor_nd) \
  X(cudnnSetTensorNdDescriptorEx, kCudnn, cudnnStatus_t, set_tensor_nd_descriptor_ex, (cudnnTensorDescriptor_t tensorDesc, cudnnTensorFormat_t format, cudnnDataType_t dataType, int nbDims, const int* dimA), (tensorDesc, format, dataType, nbDims, dimA), kSet, kTensor, record_tensor_nd_ex) \
  X(cudnnDeriveBNTensorDescriptor, kCudnn, cudnnStatus_t, derive_bn_tensor_descriptor, (cudnnTensorDescriptor_t derivedBnDesc, const cudnnTensorDescriptor_t xDesc, cudnnBatchNormMode_t mode), (derivedBnDesc, xDesc, mode), kSet, kTensor, record_derived_bn) \
  X(cudnnDestroyTensorDescriptor, kCudnn, cudnnStatus_t, destroy_tensor_descriptor, (cudnnTensorDescriptor_t tensorDesc), (tensorDesc), kDestroy, kTensor, no_record) \
  X(cudnnCreateFilterDescriptor, kCudnn, cudnnStatus_t, create_filter_descriptor, (cudnnFilterDescriptor_t* filterDesc), (filterDesc), kCreate, kFilter, no_record) \
  X(cudnnSetFilter4dDescriptor, kCudnn, cudnnStatus_t, set_filter_4d_descriptor, (cudnnFilterDescriptor_t filterDesc, cudnnDataType_t dataType, cudnnTensorFormat_t format, int k, int c, int h, int w), (filterDesc, dataType, format, k, c, h, w), kSet, kFilter, record_filter_4d) \
  X(cudnnSetFilterNdDescriptor, kCudnn, cudnnStatus_t, set_filter_nd_descriptor, (cudnnFilterDescriptor_t filterDesc, cudnnDataType_t dataType, cudnnTensorFormat_t format, int nbDims, const int* filterDimA), (filterDesc, dataType, format, nbDims, filterDimA), kSet, kFilter, record_filter_nd) \
  X(cudnnDestroyFilterDescriptor, kCudnn, cudnnStatus_t, destroy_filter_descriptor, (cudnnFilterDescriptor_t filterDesc), (filterDesc), kDestroy, kFilter, no_record) \
  X(cudnnCreateConvolutionDescriptor, kCudnn, cudnnStatus_t, create_convolution_descriptor, (cudnnConvolutionDescriptor_t* convDesc), (convDesc), kCreate, kConvolution, convolution_defaults) \
  X(cudnnSetConvolution2dDescriptor, kCudnn, cudnnStatus_t, set_convolution_2d_descriptor, (cudnnConvolutionDescriptor_t convDesc, int pad_h, int pad_w, int u, int v, int dilation_h, int dilation_w, cudnnConvolutionMode_t mode, cudnnDataType_t computeType), (convDesc, pad_h, pad_w, u, v, dilation_h, dilation_w, mode, computeType), kSet, kConvolution, record_convolution_2d) \
  X(cudnnSetConvolutionNdDescriptor, kCudnn, cudnnStatus_t, set_convolution_nd_descriptor, (cudnnConvolutionDescriptor_t convDesc, int arrayLength, const int* padA, const int* filterStrideA, const int* dilationA, cudnnConvolutionMode_t mode, cudnnDataType_t computeType), (convDesc, arrayLength, padA, filterStrideA, dilationA, mode, computeType), kSet, kConvolution, record_convolution_nd) \
  X(cudnnSetConvolutionMathType, kCudnn, cudnnStatus_t, set_convolution_math_type, (cudnnConvolutionDescriptor_t convDesc, cudnnMathType_t mathType), (convDesc, mathType), kSet, kConvolution, record_math_type) \
  X(cudnnSetConvolutionGroupCount, kCudnn, cudnnStatus_t, set_convolution_group_count, (cudnnConvolutionDescriptor_t convDesc, int groupCount), (convDesc, groupCount), kSet, kConvolution, record_group_count) \
  X(cudnnSetConvolutionReorderType, kCudnn, cudnnStatus_t, set_convolution_reorder_type, (cudnnConvolutionDescriptor_t convDesc, cudnnReorderType_t reorderType), (convDesc, reorderType), kSet, kConvolution, record_reorder_type) \
  X(cudnnDestroyConvolutionDescriptor, kCudnn, cudnnStatus_t, destroy_convolution_descriptor, (cudnnConvolutionDescriptor_t convDesc), (convDesc), kDestroy, kConvolution, no_record) \
  X(cudnnCreateActivationDescriptor, kCudnn, cudnnStatus_t, create_activation_descriptor, (cudnnActivationDescriptor_t* activationDesc), (activationDesc), kCreate, kActivation, activation_defaults) \
  X(cudnnSetActivationDescriptor, kCudnn, cudnnStatus_t, set_activation_descriptor, (cudnnActivationDescriptor_t activationDesc, cudnnActivationMode_t mode, cudnnNanPropagation_t reluNanOpt, double coef), (activationDesc, mode, reluNanOpt, coef), kSet, kActivation, record_activation) \
  X(cudnnSetActivationDescriptorSwishBeta, kCudnn, cudnnStatus_t, set_activation_descriptor_swish_beta, (cudnnActivationDescriptor_t activationDesc, double swish_beta), (activationDesc, swish_beta), kSet, kActivation, record_swish_beta) \
  X(cudnnDestroyActivationDescriptor, kCudnn, cudnnStatus_t, destroy_activation_descriptor, (cudnnActivationDescriptor_t activationDesc), (activationDesc), kDestroy, kActivation, no_record) \
  X(cudnnCreatePoolingDescriptor, kCudnn, cudnnStatus_t, create_pooling_descriptor, (cudnnPoolingDescriptor_t* poolingDesc), (poolingDesc), kCreate, kPooling, no_record) \
  X(cudnnSetPooling2dDescriptor, kCudnn, cudnnStatus_t, set_pooling_2d_descriptor, (cudnnPoolingDescriptor_t poolingDesc, cudnnPoolingMode_t mode, cudnnNanPropagation_t maxpoolingNanOpt, int windowHeight, int windowWidth, int verticalPadding, int horizontalPadding, int verticalStride, int horizontalStride), (poolingDesc, mode, maxpoolingNanOpt, windowHeight, windowWidth, verticalPadding, horizontalPadding, verticalStride, horizontalStride), kSet, kPooling, record_pooling_2d) \
  X(cudnnSetPoolingNdDescriptor, kCudnn, cudnnStatus_t, set_pooling_nd_descriptor, (cudnnPoolingDescriptor_t poolingDesc, const cudnnPoolingMode_t mode, const cudnnNanPropagation_t maxpoolingNanOpt, int nbDims, const int* windowDimA, const int* paddingA, const int* strideA), (poolingDesc, mode, maxpoolingNanOpt, nbDims, windowDimA, paddingA, strideA), kSet, kPooling, record_pooling_nd) \
  X(cudnnDestroyPoolingDescriptor, kCudnn, cudnnStatus_t, destroy_pooling_descriptor, (cudnnPoolingDescriptor_t poolingDesc), (poolingDesc), kDestroy, kPooling, no_record) \
  X(cudnnCreateOpTensorDescriptor, kCudnn, cudnnStatus_t, create_op_tensor_descriptor, (cudnnOpTensorDescriptor_t* opTensorDesc), (opTensorDesc), kCreate, kOpTensor, no_record) \
  X(cudnnSetOpTensorDescriptor, kCudnn, cudnnStatus_t, set_op_tensor_descriptor, (cudnnOpTensorDescriptor_t opTensorDesc, cudnnOpTensorOp_t opTensorOp, cudnnDataType_t opTensorCompType, cudnnNanPropagation_t opTensorNanOpt), (opTensorDesc, opTensorOp, opTensorCompType, opTensorNanOpt), kSet, kOpTensor, record_op_tensor) \
  X(cudnnDestroyOpTensorDescriptor, kCudnn, cudnnStatus_t, destroy_op_tensor_descriptor, (cudnnOpTensorDescriptor_t opTensorDesc), (opTensorDesc), kDestroy, kOpTensor, no_record) \
  X(cudnnCreateLRNDescriptor, kCudnn, cudnnStatus_t, create_lrn_descriptor, (cudnnLRNDescriptor_t* normDesc), (normDesc), kCreate, kLrn, lrn_defaults) \
  X(cudnnSetLRNDescriptor, kCudnn, cudnnStatus_t, set_lrn_descriptor, (cudnnLRNDescriptor_t normDesc, unsigned lrnN, double lrnAlpha, double lrnBeta, double lrnK), (normDesc, lrnN, lrnAlpha, lrnBeta, lrnK), kSet, kLrn, record_lrn) \
  X(cudnnDestroyLRNDescriptor, kCudnn, cudnnStatus_t, destroy_lrn_descriptor, (cudnnLRNDescriptor_t lrnDesc), (lrnDesc), kDestroy, kLrn, no_record) \
  X(cudnnCreateTensorTransformDescriptor, kCudnn, cudnnStatus_t, create_tensor_transform_descriptor, (cudnnTensorTransformDescriptor_t* transformDesc), (transformDesc), kCreate, kTensorTransform, no_record) \
  X(cudnnSetTensorTransformDescriptor, kCudnn, cudnnStatus_t, set_tensor_transform_descriptor, (cudnnTensorTransformDescriptor_t transformDesc, const uint32_t nbDims, const cudnnTensorFormat_t destFormat, const int32_t* padBeforeA, const int32_t* padAfterA, const uint32_t* foldA, const cudnnFoldingDirection_t direction), (transformDesc, nbDims, destFormat, padBeforeA, padAfterA, foldA, direction), kSet, kTensorTransform, record_tensor_transform) \
  X(cudnnDestroyTensorTransformDescriptor, kCudnn, cudnnStatus_t, destroy_tensor_transform_descriptor, (cudnnTensorTransformDescriptor_t transformDesc), (transformDesc), kDestroy, kTensorTransform, no_record)

// The replayable legacy ops (legacy_replay.cpp): family, and the role of each argument (roles.h).
#define CUDNN_FASTPATH_LEGACY_OP_ENTRY_POINTS(X)                                                            \
  X(cudnnBatchNormalizationForwardInference, kCudnn, cudnnStatus_t, batch_norm_forward_inference, (cudnnHandle_t handle, cudnnBatchNormMode_t mode, const void* alpha, const void* beta, const cudnnTensorDescriptor_t xDesc, const void* x, const cudnnTensorDescriptor_t yDesc, void* y, const cudnnTensorDescriptor_t bnScaleBiasMeanVarDesc, const void* bnScale, const void* bnBias, const void* estimatedMean, const void* estimatedVariance, double epsilon), (handle, mode, alpha, beta, xDesc, x, yDesc, y, bnScaleBiasMeanVarDesc, bnScale, bnBias, estimatedMean, estimatedVariance, epsilon), legacy_bn, (H, V, S, S, T, D, Tout, D, T, D, D, D, D, V)) \
  X(cudnnBatchNormalizationForwardTrainingEx, kCudnn, cudnnStatus_t, batch_norm_forward_training_ex, (cudnnHandle_t handle, cudnnBatchNormMode_t mode, cudnnBatchNormOps_t bnOps, const void* alpha, const void* beta, const cudnnTensorDescriptor_t xDesc, const void* xData, const cudnnTensorDescriptor_t zDesc, const void* zData, const cudnnTensorDescriptor_t yDesc, void* yData, const cudnnTensorDescriptor_t bnScaleBiasMeanVarDesc, const void* bnScale, const void* bnBias, double exponentialAverageFactor, void* resultRunningMean, void* resultRunningVariance, double epsilon, void* resultSaveMean, void* resultSaveInvVariance, cudnnActivationDescriptor_t activationDesc, void* workspace, size_t workSpaceSizeInBytes, void* reserveSpace, size_t reserveSpaceSizeInBytes), (handle, mode, bnOps, alpha, beta, xDesc, xData, zDesc, zData, yDesc, yData, bnScaleBiasMeanVarDesc, bnScale, bnBias, exponentialAverageFactor, resultRunningMean, resultRunningVariance, epsilon, resultSaveMean, resultSaveInvVariance, activationDesc, workspace, workSpaceSizeInBytes, reserveSpace, reserveSpaceSizeInBytes), legacy_bn, (H, V, V, S, S, T, D, Tnull, D, Tout, D, T, D, D, V, D, D, V, D, D, Actnull, D, V, D, V)) \
  X(cudnnBatchNormalizationBackwardEx, kCudnn, cudnnStatus_t, batch_norm_backward_ex, (cudnnHandle_t handle, cudnnBatchNormMode_t mode, cudnnBatchNormOps_t bnOps, const void* alphaDataDiff, const void* betaDataDiff, const void* alphaParamDiff, const void* betaParamDiff, const cudnnTensorDescriptor_t xDesc, const void* xData, const cudnnTensorDescriptor_t yDesc, const void* yData, const cudnnTensorDescriptor_t dyDesc, const void* dyData, const cudnnTensorDescriptor_t dzDesc, void* dzData, const cudnnTensorDescriptor_t dxDesc, void* dxData, const cudnnTensorDescriptor_t dBnScaleBiasDesc, const void* bnScaleData, const void* bnBiasData, void* dBnScaleData, void* dBnBiasData, double epsilon, const void* savedMean, const void* savedInvVariance, cudnnActivationDescriptor_t activationDesc, void* workSpace, size_t workSpaceSizeInBytes, void* reserveSpace, size_t reserveSpaceSizeInBytes), (handle, mode, bnOps, alphaDataDiff, betaDataDiff, alphaParamDiff, betaParamDiff, xDesc, xData, yDesc, yData, dyDesc, dyData, dzDesc, dzData, dxDesc, dxData, dBnScaleBiasDesc, bnScaleData, bnBiasData, dBnScaleData, dBnBiasData, epsilon, savedMean, savedInvVariance, activationDesc, workSpace, workSpaceSizeInBytes, reserveSpace, reserveSpaceSizeInBytes), legacy_bn, (H, V, V, S, S, S, S, T, D, Tnull, D, T, D, Tnull, D, Tout, D, T, D, D, D, D, V, D, D, Actnull, D, V, D, V)) \
  X(cudnnConvolutionForward, kCudnn, cudnnStatus_t, convolution_forward, (cudnnHandle_t handle, const void* alpha, const cudnnTensorDescriptor_t xDesc, const void* x, const cudnnFilterDescriptor_t wDesc, const void* w, const cudnnConvolutionDescriptor_t convDesc, cudnnConvolutionFwdAlgo_t algo, void* workSpace, size_t workSpaceSizeInBytes, const void* beta, const cudnnTensorDescriptor_t yDesc, void* y), (handle, alpha, xDesc, x, wDesc, w, convDesc, algo, workSpace, workSpaceSizeInBytes, beta, yDesc, y), legacy_conv, (H, S, T, D, F, D, Conv, V, D, V, S, Tout, D)) \
  X(cudnnConvolutionBiasActivationForward, kCudnn, cudnnStatus_t, convolution_bias_activation_forward, (cudnnHandle_t handle, const void* alpha1, const cudnnTensorDescriptor_t xDesc, const void* x, const cudnnFilterDescriptor_t wDesc, const void* w, const cudnnConvolutionDescriptor_t convDesc, cudnnConvolutionFwdAlgo_t algo, void* workSpace, size_t workSpaceSizeInBytes, const void* alpha2, const cudnnTensorDescriptor_t zDesc, const void* z, const cudnnTensorDescriptor_t biasDesc, const void* bias, const cudnnActivationDescriptor_t activationDesc, const cudnnTensorDescriptor_t yDesc, void* y), (handle, alpha1, xDesc, x, wDesc, w, convDesc, algo, workSpace, workSpaceSizeInBytes, alpha2, zDesc, z, biasDesc, bias, activationDesc, yDesc, y), legacy_conv, (H, S, T, D, F, D, Conv, V, D, V, S, T, D, T, D, Act, Tout, D)) \
  X(cudnnActivationForward, kCudnn, cudnnStatus_t, activation_forward, (cudnnHandle_t handle, cudnnActivationDescriptor_t activationDesc, const void* alpha, const cudnnTensorDescriptor_t xDesc, const void* x, const void* beta, const cudnnTensorDescriptor_t yDesc, void* y), (handle, activationDesc, alpha, xDesc, x, beta, yDesc, y), legacy_tensor, (H, Act, S, T, D, S, Tout, D)) \
  X(cudnnPoolingForward, kCudnn, cudnnStatus_t, pooling_forward, (cudnnHandle_t handle, const cudnnPoolingDescriptor_t poolingDesc, const void* alpha, const cudnnTensorDescriptor_t xDesc, const void* x, const void* beta, const cudnnTensorDescriptor_t yDesc, void* y), (handle, poolingDesc, alpha, xDesc, x, beta, yDesc, y), legacy_tensor, (H, Pool, S, T, D, S, Tout, D)) \
  X(cudnnSoftmaxForward, kCudnn, cudnnStatus_t, softmax_forward, (cudnnHandle_t handle, cudnnSoftmaxAlgorithm_t algo, cudnnSoftmaxMode_t mode, const void* alpha, const cudnnTensorDescriptor_t xDesc, const void* x, const void* beta, const cudnnTensorDescriptor_t yDesc, void* y), (handle, algo, mode, alpha, xDesc, x, beta, yDesc, y), legacy_tensor, (H, V, V, S, T, D, S, Tout, D)) \
  X(cudnnAddTensor, kCudnn, cudnnStatus_t, add_tensor, (cudnnHandle_t handle, const void* alpha, const cudnnTensorDescriptor_t aDesc, const void* A, const void* beta, const cudnnTensorDescriptor_t cDesc, void* C), (handle, alpha, aDesc, A, beta, cDesc, C), legacy_tensor, (H, S, T, D, S, Tout, D)) \
  X(cudnnOpTensor, kCudnn, cudnnStatus_t, op_tensor, (cudnnHandle_t handle, const cudnnOpTensorDescriptor_t opTensorDesc, const void* alpha1, const cudnnTensorDescriptor_t aDesc, const void* A, const void* alpha2, const cudnnTensorDescriptor_t bDesc, const void* B, const void* beta, const cudnnTensorDescriptor_t cDesc, void* C), (handle, opTensorDesc, alpha1, aDesc, A, alpha2, bDesc, B, beta, cDesc, C), legacy_tensor, (H, Op, S, T, D, S, Tnull, D, S, Tout, D)) \
  X(cudnnScaleTensor, kCudnn, cudnnStatus_t, scale_tensor, (cudnnHandle_t handle, const cudnnTensorDescriptor_t yDesc, void* y, const void* alpha), (handle, yDesc, y, alpha), legacy_tensor, (H, Tout, D, S)) \
  X(cudnnTransformTensor, kCudnn, cudnnStatus_t, transform_tensor, (cudnnHandle_t handle, const void* alpha, const cudnnTensorDescriptor_t xDesc, const void* x, const void* beta, const cudnnTensorDescriptor_t yDesc, void* y), (handle, alpha, xDesc, x, beta, yDesc, y), legacy_tensor, (H, S, T, D, S, Tout, D)) \
  X(cudnnLRNCrossChannelForward, kCudnn, cudnnStatus_t, lrn_cross_channel_forward, (cudnnHandle_t handle, cudnnLRNDescriptor_t normDesc, cudnnLRNMode_t lrnMode, const void* alpha, const cudnnTensorDescriptor_t xDesc, const void* x, const void* beta, const cudnnTensorDescriptor_t yDesc, void* y), (handle, normDesc, lrnMode, alpha, xDesc, x, beta, yDesc, y), legacy_tensor, (H, Lrn, V, S, T, D, S, Tout, D))

// cuBLASLt's descriptors and cuBLAS's handle state, as the shim records them (blas_records.cpp):
// action, kind, recorder (a destroy's: a hook run before it).
#define CUDNN_FASTPATH_BLAS_RECORD_ENTRY_POINTS(X) \
  X(cublasLtMatmulDescCreate, kCublasLt, cublasStatus_t, create_matmul_desc, (cublasLtMatmulDesc_t* matmulDesc, cublasComputeType_t computeType, cudaDataType_t scaleType), (matmulDesc, computeType, scaleType), kCreate, kMatmulDesc, matmul_desc_defaults) \
  X(cublasLtMatmulDescInit_internal, kCublasLt, cublasStatus_t, init_matmul_desc, (cublasLtMatmulDesc_t matmulDesc, size_t size, cublasComputeType_t computeType, cudaDataType_t scaleType), (matmulDesc, size, computeType, scaleType), kInit, kMatmulDesc, record_matmul_desc_init) \
  X(cublasLtMatmulDescSetAttribute, kCublasLt, cublasStatus_t, set_matmul_desc_attribute, (cublasLtMatmulDesc_t matmulDesc, cublasLtMatmulDescAttributes_t attr, const void* buf, size_t sizeInBytes), (matmulDesc, attr, buf, sizeInBytes), kSet, kMatmulDesc, record_matmul_desc_attribute) \
  X(cublasLtMatmulDescDestroy, kCublasLt, cublasStatus_t, destroy_matmul_desc, (cublasLtMatmulDesc_t matmulDesc), (matmulDesc), kDestroy, kMatmulDesc, no_hook) \
  X(cublasLtMatrixLayoutCreate, kCublasLt, cublasStatus_t, create_matrix_layout, (cublasLtMatrixLayout_t* matLayout, cudaDataType type, uint64_t rows, uint64_t cols, int64_t ld), (matLayout, type, rows, cols, ld), kCreate, kLayout, layout_defaults) \
  X(cublasLtMatrixLayoutInit_internal, kCublasLt, cublasStatus_t, init_matrix_layout, (cublasLtMatrixLayout_t matLayout, size_t size, cudaDataType type, uint64_t rows, uint64_t cols, int64_t ld), (matLayout, size, type, rows, cols, ld), kInit, kLayout, record_layout_init) \
  X(cublasLtMatrixLayoutSetAttribute, kCublasLt, cublasStatus_t, set_matrix_layout_attribute, (cublasLtMatrixLayout_t matLayout, cublasLtMatrixLayoutAttribute_t attr, const void* buf, size_t sizeInBytes), (matLayout, attr, buf, sizeInBytes), kSet, kLayout, record_layout_attribute) \
  X(cublasLtMatrixLayoutDestroy, kCublasLt, cublasStatus_t, destroy_matrix_layout, (cublasLtMatrixLayout_t matLayout), (matLayout), kDestroy, kLayout, no_hook) \
  X(cublasLtMatmulPreferenceCreate, kCublasLt, cublasStatus_t, create_matmul_preference, (cublasLtMatmulPreference_t* pref), (pref), kCreate, kPreference, preference_defaults) \
  X(cublasLtMatmulPreferenceInit_internal, kCublasLt, cublasStatus_t, init_matmul_preference, (cublasLtMatmulPreference_t pref, size_t size), (pref, size), kInit, kPreference, record_preference_init) \
  X(cublasLtMatmulPreferenceSetAttribute, kCublasLt, cublasStatus_t, set_matmul_preference_attribute, (cublasLtMatmulPreference_t pref, cublasLtMatmulPreferenceAttributes_t attr, const void* buf, size_t sizeInBytes), (pref, attr, buf, sizeInBytes), kSet, kPreference, record_preference_attribute) \
  X(cublasLtMatmulPreferenceDestroy, kCublasLt, cublasStatus_t, destroy_matmul_preference, (cublasLtMatmulPreference_t pref), (pref), kDestroy, kPreference, no_hook) \
  X(cublasLtEmulationDescCreate, kCublasLt, cublasStatus_t, create_emulation_desc, (cublasLtEmulationDesc_t* emulationDesc), (emulationDesc), kCreate, kEmulation, emulation_defaults) \
  X(cublasLtEmulationDescInit_internal, kCublasLt, cublasStatus_t, init_emulation_desc, (cublasLtEmulationDesc_t emulationDesc, size_t size), (emulationDesc, size), kInit, kEmulation, record_emulation_init) \
  X(cublasLtEmulationDescSetAttribute, kCublasLt, cublasStatus_t, set_emulation_desc_attribute, (cublasLtEmulationDesc_t emulationDesc, cublasLtEmulationDescAttributes_t attr, const void* buf, size_t sizeInBytes), (emulationDesc, attr, buf, sizeInBytes), kSet, kEmulation, record_emulation_attribute) \
  X(cublasLtEmulationDescDestroy, kCublasLt, cublasStatus_t, destroy_emulation_desc, (cublasLtEmulationDesc_t emulationDesc), (emulationDesc), kDestroy, kEmulation, no_hook) \
  X(cublasLtDestroy, kCublasLt, cublasStatus_t, destroy_lt_handle, (cublasLtHandle_t lightHandle), (lightHandle), kDestroy, kLtHandle, forget_blas_handle) \
  X(cublasCreate_v2, kCublas, cublasStatus_t, create_blas_handle, (cublasHandle_t* handle), (handle), kCreate, kBlasHandle, blas_handle_defaults) \
  X(cublasDestroy_v2, kCublas, cublasStatus_t, destroy_blas_handle, (cublasHandle_t handle), (handle), kDestroy, kBlasHandle, forget_blas_handle) \
  X(cublasSetStream_v2, kCublas, cublasStatus_t, set_blas_stream, (cublasHandle_t handle, cudaStream_t streamId), (handle, streamId), kSet, kBlasHandle, record_stream) \
  X(cublasSetWorkspace_v2, kCublas, cublasStatus_t, set_blas_workspace, (cublasHandle_t handle, void* workspace, size_t workspaceSizeInBytes), (handle, workspace, workspaceSizeInBytes), kSet, kBlasHandle, record_workspace) \
  X(cublasSetPointerMode_v2, kCublas, cublasStatus_t, set_blas_pointer_mode, (cublasHandle_t handle, cublasPointerMode_t mode), (handle, mode), kSet, kBlasHandle, record_pointer_mode) \
  X(cublasSetMathMode, kCublas, cublasStatus_t, set_blas_math_mode, (cublasHandle_t handle, cublasMath_t mode), (handle, mode), kSet, kBlasHandle, record_math_mode) \
  X(cublasSetAtomicsMode, kCublas, cublasStatus_t, set_blas_atomics_mode, (cublasHandle_t handle, cublasAtomicsMode_t mode), (handle, mode), kSet, kBlasHandle, record_atomics_mode) \
  X(cublasSetSmCountTarget, kCublas, cublasStatus_t, set_blas_sm_count_target, (cublasHandle_t handle, int smCountTarget), (handle, smCountTarget), kSet, kBlasHandle, record_sm_count_target) \
  X(cublasSetEmulationStrategy, kCublas, cublasStatus_t, set_blas_emulation_strategy, (cublasHandle_t handle, cublasEmulationStrategy_t emulationStrategy), (handle, emulationStrategy), kSet, kBlasHandle, record_emulation_strategy) \
  X(cublasSetEmulationSpecialValuesSupport, kCublas, cublasStatus_t, set_blas_special_values_support, (cublasHandle_t handle, cudaEmulationSpecialValuesSupport mask), (handle, mask), kSet, kBlasHandle, record_special_values_support) \
  X(cublasSetFixedPointEmulationMantissaControl, kCublas, cublasStatus_t, set_blas_mantissa_control, (cublasHandle_t handle, cudaEmulationMantissaControl mantissaControl), (handle, mantissaControl), kSet, kBlasHandle, record_mantissa_control) \
  X(cublasSetFixedPointEmulationMaxMantissaBitCount, kCublas, cublasStatus_t, set_blas_max_mantissa_bit_count, (cublasHandle_t handle, int maxMantissaBitCount), (handle, maxMantissaBitCount), kSet, kBlasHandle, record_max_mantissa_bit_count) \
  X(cublasSetFixedPointEmulationMantissaBitOffset, kCublas, cublasStatus_t, set_blas_mantissa_bit_offset, (cublasHandle_t handle, int mantissaBitOffset), (handle, mantissaBitOffset), kSet, kBlasHandle, record_mantissa_bit_offset) \
  X(cublasSetFixedPointEmulationMantissaBitCountPointer, kCublas, cublasStatus_t, set_blas_mantissa_bit_count_pointer, (cublasHandle_t handle, int* mantissaBitCount), (handle, mantissaBitCount), kSet, kBlasHandle, record_mantissa_bit_count_pointer)

// The replayed cuBLASLt calls (cublaslt_replay.cpp): the matmul, and its heuristic answered from
// a cache.
#define CUDNN_FASTPATH_CUBLASLT_CALL_ENTRY_POINTS(X) \
  X(cublasLtMatmul, kCublasLt, cublasStatus_t, lt_matmul, (cublasLtHandle_t lightHandle, cublasLtMatmulDesc_t computeDesc, const void* alpha, const void* A, cublasLtMatrixLayout_t Adesc, const void* B, cublasLtMatrixLayout_t Bdesc, const void* beta, const void* C, cublasLtMatrixLayout_t Cdesc, void* D, cublasLtMatrixLayout_t Ddesc, const cublasLtMatmulAlgo_t* algo, void* workspace, size_t workspaceSizeInBytes, cudaStream_t stream), (lightHandle, computeDesc, alpha, A, Adesc, B, Bdesc, beta, C, Cdesc, D, Ddesc, algo, workspace, workspaceSizeInBytes, stream), 0) \
  X(cublasLtMatmulAlgoGetHeuristic, kCublasLt, cublasStatus_t, lt_matmul_algo_get_heuristic, (cublasLtHandle_t lightHandle, cublasLtMatmulDesc_t operationDesc, cublasLtMatrixLayout_t Adesc, cublasLtMatrixLayout_t Bdesc, cublasLtMatrixLayout_t Cdesc, cublasLtMatrixLayout_t Ddesc, cublasLtMatmulPreference_t preference, int requestedAlgoCount, cublasLtMatmulHeuristicResult_t* heuristicResultsArray, int* returnAlgoCount), (lightHandle, operationDesc, Adesc, Bdesc, Cdesc, Ddesc, preference, requestedAlgoCount, heuristicResultsArray, returnAlgoCount), 0)

// The replayed cuBLAS GEMMs (cublas_replay.cpp): family, and the role of each argument (roles.h).
#define CUDNN_FASTPATH_CUBLAS_GEMM_ENTRY_POINTS(X) \
  X(cublasGemmEx, kCublas, cublasStatus_t, gemm_ex, (cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n, int k, const void* alpha, const void* A, cudaDataType Atype, int lda, const void* B, cudaDataType Btype, int ldb, const void* beta, void* C, cudaDataType Ctype, int ldc, cublasComputeType_t computeType, cublasGemmAlgo_t algo), (handle, transa, transb, m, n, k, alpha, A, Atype, lda, B, Btype, ldb, beta, C, Ctype, ldc, computeType, algo), gemm, (H, V, V, V, V, V, S, D, V, V, D, V, V, S, D, Ctype, V, Compute, V)) \
  X(cublasGemmEx_64, kCublas, cublasStatus_t, gemm_ex_64, (cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int64_t m, int64_t n, int64_t k, const void* alpha, const void* A, cudaDataType Atype, int64_t lda, const void* B, cudaDataType Btype, int64_t ldb, const void* beta, void* C, cudaDataType Ctype, int64_t ldc, cublasComputeType_t computeType, cublasGemmAlgo_t algo), (handle, transa, transb, m, n, k, alpha, A, Atype, lda, B, Btype, ldb, beta, C, Ctype, ldc, computeType, algo), gemm, (H, V, V, V, V, V, S, D, V, V, D, V, V, S, D, Ctype, V, Compute, V)) \
  X(cublasGemmStridedBatchedEx, kCublas, cublasStatus_t, gemm_strided_batched_ex, (cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n, int k, const void* alpha, const void* A, cudaDataType Atype, int lda, long long int strideA, const void* B, cudaDataType Btype, int ldb, long long int strideB, const void* beta, void* C, cudaDataType Ctype, int ldc, long long int strideC, int batchCount, cublasComputeType_t computeType, cublasGemmAlgo_t algo), (handle, transa, transb, m, n, k, alpha, A, Atype, lda, strideA, B, Btype, ldb, strideB, beta, C, Ctype, ldc, strideC, batchCount, computeType, algo), gemm, (H, V, V, V, V, V, S, D, V, V, V, D, V, V, V, S, D, Ctype, V, V, V, Compute, V)) \
  X(cublasGemmStridedBatchedEx_64, kCublas, cublasStatus_t, gemm_strided_batched_ex_64, (cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int64_t m, int64_t n, int64_t k, const void* alpha, const void* A, cudaDataType Atype, int64_t lda, long long int strideA, const void* B, cudaDataType Btype, int64_t ldb, long long int strideB, const void* beta, void* C, cudaDataType Ctype, int64_t ldc, long long int strideC, int64_t batchCount, cublasComputeType_t computeType, cublasGemmAlgo_t algo), (handle, transa, transb, m, n, k, alpha, A, Atype, lda, strideA, B, Btype, ldb, strideB, beta, C, Ctype, ldc, strideC, batchCount, computeType, algo), gemm, (H, V, V, V, V, V, S, D, V, V, V, D, V, V, V, S, D, Ctype, V, V, V, Compute, V))

// Every entry, in DispatchV1's order but for the switch's members between the first list and the
// others.
#define CUDNN_FASTPATH_ENTRY_POINTS_APPENDED(X)                                               \
  CUDNN_FASTPATH_LEGACY_DESCRIPTOR_ENTRY_POINTS(X) CUDNN_FASTPATH_LEGACY_OP_ENTRY_POINTS(X) \
  CUDNN_FASTPATH_BLAS_RECORD_ENTRY_POINTS(X) CUDNN_FASTPATH_CUBLASLT_CALL_ENTRY_POINTS(X)   \
  CUDNN_FASTPATH_CUBLAS_GEMM_ENTRY_POINTS(X)
#define CUDNN_FASTPATH_ENTRY_POINTS(X) CUDNN_FASTPATH_ENTRY_POINTS_V1(X) CUDNN_FASTPATH_ENTRY_POINTS_APPENDED(X)

#endif  // CUDNN_FASTPATH_SHIM_ENTRY_POINTS_H_
