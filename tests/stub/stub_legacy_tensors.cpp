// The stub's legacy descriptors of data layouts: tensors, filters and tensor transforms (see
// stub_legacy_control.h). A set that fails leaves the descriptor as it was; one that succeeds
// replaces everything it held, so a descriptor can be set again in place with other values.
#include <cstdint>

#include "tests/stub/stub_legacy.h"

namespace {

using stublegacy::count;
using stublegacy::known_type;

constexpr StubCudnnDescriptorKind kTensor = STUBCUDNN_TENSOR_DESCRIPTOR;
constexpr StubCudnnDescriptorKind kFilter = STUBCUDNN_FILTER_DESCRIPTOR;
constexpr StubCudnnDescriptorKind kTransform = STUBCUDNN_TENSOR_TRANSFORM_DESCRIPTOR;

// NCHW and NHWC; NCHW_VECT_C is a real layout that the stub does not model.
cudnnStatus_t check_format(cudnnTensorFormat_t format) {
  if (format == CUDNN_TENSOR_NCHW || format == CUDNN_TENSOR_NHWC) return CUDNN_STATUS_SUCCESS;
  return format == CUDNN_TENSOR_NCHW_VECT_C ? CUDNN_STATUS_NOT_SUPPORTED : CUDNN_STATUS_BAD_PARAM;
}

bool positive(int count, const int* values) {
  if (values == nullptr) return false;
  for (int i = 0; i < count; ++i)
    if (values[i] <= 0) return false;
  return true;
}

// The strides of a packed tensor, as cuDNN computes them: NCHW is row-major; NHWC puts C innermost,
// then the spatial dims from the last, then N. False when a stride does not fit in an int.
bool packed_strides(cudnnTensorFormat_t format, int nb_dims, const int* dims, int* strides) {
  const bool nhwc = format == CUDNN_TENSOR_NHWC && nb_dims >= 3;
  std::int64_t next = 1;
  auto place = [&](int i) {
    if (next > INT32_MAX) return false;
    strides[i] = static_cast<int>(next);
    next *= dims[i];
    return true;
  };
  bool fits = true;
  if (nhwc) {
    fits = place(1);
    for (int i = nb_dims - 1; i >= 2; --i) fits = fits && place(i);
    fits = fits && place(0);
  } else {
    for (int i = nb_dims - 1; i >= 0; --i) fits = fits && place(i);
  }
  return fits;
}

// The checks every tensor setter shares; on success the descriptor holds exactly these values.
cudnnStatus_t set_tensor(cudnnTensorDescriptor_t desc, cudnnDataType_t type, int nb_dims, const int* dims,
                         const int* strides) {
  if (desc == nullptr || !known_type(type) || nb_dims < 1 || nb_dims > CUDNN_DIM_MAX) return CUDNN_STATUS_BAD_PARAM;
  if (!positive(nb_dims, dims) || !positive(nb_dims, strides)) return CUDNN_STATUS_BAD_PARAM;
  cudnnTensorStruct t{};
  t.set = 1;
  t.type = type;
  t.nb_dims = nb_dims;
  for (int i = 0; i < nb_dims; ++i) {
    t.dims[i] = dims[i];
    t.strides[i] = strides[i];
  }
  *desc = t;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t set_packed_tensor(cudnnTensorDescriptor_t desc, cudnnTensorFormat_t format, cudnnDataType_t type,
                                int nb_dims, const int* dims) {
  const cudnnStatus_t format_status = check_format(format);
  if (format_status != CUDNN_STATUS_SUCCESS) return format_status;
  if (nb_dims < 1 || nb_dims > CUDNN_DIM_MAX || !positive(nb_dims, dims)) return CUDNN_STATUS_BAD_PARAM;
  int strides[CUDNN_DIM_MAX];
  if (!packed_strides(format, nb_dims, dims, strides)) return CUDNN_STATUS_BAD_PARAM;
  return set_tensor(desc, type, nb_dims, dims, strides);
}

cudnnStatus_t set_filter(cudnnFilterDescriptor_t desc, cudnnDataType_t type, cudnnTensorFormat_t format, int nb_dims,
                         const int* dims) {
  if (desc == nullptr || !known_type(type)) return CUDNN_STATUS_BAD_PARAM;
  const cudnnStatus_t format_status = check_format(format);
  if (format_status != CUDNN_STATUS_SUCCESS) return format_status;
  if (nb_dims < 1 || nb_dims > CUDNN_DIM_MAX || !positive(nb_dims, dims)) return CUDNN_STATUS_BAD_PARAM;
  cudnnFilterStruct f{};
  f.set = 1;
  f.type = type;
  f.format = format;
  f.nb_dims = nb_dims;
  for (int i = 0; i < nb_dims; ++i) f.dims[i] = dims[i];
  *desc = f;
  return CUDNN_STATUS_SUCCESS;
}

}  // namespace

extern "C" {

// ---- tensors -----------------------------------------------------------------------------------

cudnnStatus_t CUDNNWINAPI cudnnCreateTensorDescriptor(cudnnTensorDescriptor_t* tensorDesc) {
  return stublegacy::create(kTensor, tensorDesc);
}

cudnnStatus_t CUDNNWINAPI cudnnDestroyTensorDescriptor(cudnnTensorDescriptor_t tensorDesc) {
  return stublegacy::destroy(kTensor, tensorDesc);
}

cudnnStatus_t CUDNNWINAPI cudnnSetTensor4dDescriptor(cudnnTensorDescriptor_t tensorDesc, cudnnTensorFormat_t format,
                                                     cudnnDataType_t dataType, int n, int c, int h, int w) {
  count(kTensor, stublegacy::kSet);
  const int dims[4] = {n, c, h, w};
  return set_packed_tensor(tensorDesc, format, dataType, 4, dims);
}

cudnnStatus_t CUDNNWINAPI cudnnSetTensor4dDescriptorEx(cudnnTensorDescriptor_t tensorDesc, cudnnDataType_t dataType,
                                                       int n, int c, int h, int w, int nStride, int cStride,
                                                       int hStride, int wStride) {
  count(kTensor, stublegacy::kSet);
  const int dims[4] = {n, c, h, w};
  const int strides[4] = {nStride, cStride, hStride, wStride};
  return set_tensor(tensorDesc, dataType, 4, dims, strides);
}

cudnnStatus_t CUDNNWINAPI cudnnSetTensorNdDescriptor(cudnnTensorDescriptor_t tensorDesc, cudnnDataType_t dataType,
                                                     int nbDims, const int dimA[], const int strideA[]) {
  count(kTensor, stublegacy::kSet);
  return set_tensor(tensorDesc, dataType, nbDims, dimA, strideA);
}

cudnnStatus_t CUDNNWINAPI cudnnSetTensorNdDescriptorEx(cudnnTensorDescriptor_t tensorDesc, cudnnTensorFormat_t format,
                                                       cudnnDataType_t dataType, int nbDims, const int dimA[]) {
  count(kTensor, stublegacy::kSet);
  return set_packed_tensor(tensorDesc, format, dataType, nbDims, dimA);
}

cudnnStatus_t CUDNNWINAPI cudnnGetTensor4dDescriptor(const cudnnTensorDescriptor_t tensorDesc,
                                                     cudnnDataType_t* dataType, int* n, int* c, int* h, int* w,
                                                     int* nStride, int* cStride, int* hStride, int* wStride) {
  if (tensorDesc == nullptr || !tensorDesc->set || tensorDesc->nb_dims != 4) return CUDNN_STATUS_BAD_PARAM;
  int* const dims[4] = {n, c, h, w};
  int* const strides[4] = {nStride, cStride, hStride, wStride};
  if (dataType == nullptr) return CUDNN_STATUS_BAD_PARAM;
  for (int i = 0; i < 4; ++i)
    if (dims[i] == nullptr || strides[i] == nullptr) return CUDNN_STATUS_BAD_PARAM;
  *dataType = tensorDesc->type;
  for (int i = 0; i < 4; ++i) {
    *dims[i] = tensorDesc->dims[i];
    *strides[i] = tensorDesc->strides[i];
  }
  return CUDNN_STATUS_SUCCESS;
}

// Fills the first min(nbDimsRequested, nbDims) entries; *nbDims is always the descriptor's own.
cudnnStatus_t CUDNNWINAPI cudnnGetTensorNdDescriptor(const cudnnTensorDescriptor_t tensorDesc, int nbDimsRequested,
                                                     cudnnDataType_t* dataType, int* nbDims, int dimA[],
                                                     int strideA[]) {
  if (tensorDesc == nullptr || !tensorDesc->set || nbDimsRequested < 0) return CUDNN_STATUS_BAD_PARAM;
  if (dataType == nullptr || nbDims == nullptr) return CUDNN_STATUS_BAD_PARAM;
  if (nbDimsRequested > 0 && (dimA == nullptr || strideA == nullptr)) return CUDNN_STATUS_BAD_PARAM;
  *dataType = tensorDesc->type;
  *nbDims = tensorDesc->nb_dims;
  for (int i = 0; i < nbDimsRequested && i < tensorDesc->nb_dims; ++i) {
    dimA[i] = tensorDesc->dims[i];
    strideA[i] = tensorDesc->strides[i];
  }
  return CUDNN_STATUS_SUCCESS;
}

// 1xCx1x1(x1) for the spatial modes, 1xCxHxW(xD) per activation; half and bfloat16 become float.
cudnnStatus_t CUDNNWINAPI cudnnDeriveBNTensorDescriptor(cudnnTensorDescriptor_t derivedBnDesc,
                                                        const cudnnTensorDescriptor_t xDesc,
                                                        cudnnBatchNormMode_t mode) {
  count(kTensor, stublegacy::kSet);
  if (derivedBnDesc == nullptr || xDesc == nullptr || !xDesc->set) return CUDNN_STATUS_BAD_PARAM;
  if (xDesc->nb_dims != 4 && xDesc->nb_dims != 5) return CUDNN_STATUS_BAD_PARAM;
  if (mode != CUDNN_BATCHNORM_PER_ACTIVATION && mode != CUDNN_BATCHNORM_SPATIAL &&
      mode != CUDNN_BATCHNORM_SPATIAL_PERSISTENT)
    return CUDNN_STATUS_BAD_PARAM;
  int dims[CUDNN_DIM_MAX];
  for (int i = 0; i < xDesc->nb_dims; ++i)
    dims[i] = i == 1 || (i > 1 && mode == CUDNN_BATCHNORM_PER_ACTIVATION) ? xDesc->dims[i] : 1;
  const cudnnDataType_t type =
      xDesc->type == CUDNN_DATA_HALF || xDesc->type == CUDNN_DATA_BFLOAT16 ? CUDNN_DATA_FLOAT : xDesc->type;
  return set_packed_tensor(derivedBnDesc, CUDNN_TENSOR_NCHW, type, xDesc->nb_dims, dims);
}

// ---- filters -----------------------------------------------------------------------------------

cudnnStatus_t CUDNNWINAPI cudnnCreateFilterDescriptor(cudnnFilterDescriptor_t* filterDesc) {
  return stublegacy::create(kFilter, filterDesc);
}

cudnnStatus_t CUDNNWINAPI cudnnDestroyFilterDescriptor(cudnnFilterDescriptor_t filterDesc) {
  return stublegacy::destroy(kFilter, filterDesc);
}

cudnnStatus_t CUDNNWINAPI cudnnSetFilter4dDescriptor(cudnnFilterDescriptor_t filterDesc, cudnnDataType_t dataType,
                                                     cudnnTensorFormat_t format, int k, int c, int h, int w) {
  count(kFilter, stublegacy::kSet);
  const int dims[4] = {k, c, h, w};
  return set_filter(filterDesc, dataType, format, 4, dims);
}

cudnnStatus_t CUDNNWINAPI cudnnSetFilterNdDescriptor(cudnnFilterDescriptor_t filterDesc, cudnnDataType_t dataType,
                                                     cudnnTensorFormat_t format, int nbDims, const int filterDimA[]) {
  count(kFilter, stublegacy::kSet);
  return set_filter(filterDesc, dataType, format, nbDims, filterDimA);
}

cudnnStatus_t CUDNNWINAPI cudnnGetFilter4dDescriptor(const cudnnFilterDescriptor_t filterDesc,
                                                     cudnnDataType_t* dataType, cudnnTensorFormat_t* format, int* k,
                                                     int* c, int* h, int* w) {
  if (filterDesc == nullptr || !filterDesc->set || filterDesc->nb_dims != 4) return CUDNN_STATUS_BAD_PARAM;
  int* const dims[4] = {k, c, h, w};
  if (dataType == nullptr || format == nullptr) return CUDNN_STATUS_BAD_PARAM;
  for (int* dim : dims)
    if (dim == nullptr) return CUDNN_STATUS_BAD_PARAM;
  *dataType = filterDesc->type;
  *format = filterDesc->format;
  for (int i = 0; i < 4; ++i) *dims[i] = filterDesc->dims[i];
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t CUDNNWINAPI cudnnGetFilterNdDescriptor(const cudnnFilterDescriptor_t filterDesc, int nbDimsRequested,
                                                     cudnnDataType_t* dataType, cudnnTensorFormat_t* format,
                                                     int* nbDims, int filterDimA[]) {
  if (filterDesc == nullptr || !filterDesc->set || nbDimsRequested < 0) return CUDNN_STATUS_BAD_PARAM;
  if (dataType == nullptr || format == nullptr || nbDims == nullptr) return CUDNN_STATUS_BAD_PARAM;
  if (nbDimsRequested > 0 && filterDimA == nullptr) return CUDNN_STATUS_BAD_PARAM;
  *dataType = filterDesc->type;
  *format = filterDesc->format;
  *nbDims = filterDesc->nb_dims;
  for (int i = 0; i < nbDimsRequested && i < filterDesc->nb_dims; ++i) filterDimA[i] = filterDesc->dims[i];
  return CUDNN_STATUS_SUCCESS;
}

// ---- tensor transforms -------------------------------------------------------------------------

cudnnStatus_t CUDNNWINAPI cudnnCreateTensorTransformDescriptor(cudnnTensorTransformDescriptor_t* transformDesc) {
  return stublegacy::create(kTransform, transformDesc);
}

cudnnStatus_t CUDNNWINAPI cudnnDestroyTensorTransformDescriptor(cudnnTensorTransformDescriptor_t transformDesc) {
  return stublegacy::destroy(kTransform, transformDesc);
}

// NULL arrays, as cuDNN documents them: no padding (zeros), no folding (ones).
cudnnStatus_t CUDNNWINAPI cudnnSetTensorTransformDescriptor(cudnnTensorTransformDescriptor_t transformDesc,
                                                            const uint32_t nbDims, const cudnnTensorFormat_t destFormat,
                                                            const int32_t padBeforeA[], const int32_t padAfterA[],
                                                            const uint32_t foldA[],
                                                            const cudnnFoldingDirection_t direction) {
  count(kTransform, stublegacy::kSet);
  if (transformDesc == nullptr || nbDims < 1 || nbDims > CUDNN_DIM_MAX) return CUDNN_STATUS_BAD_PARAM;
  if (destFormat < CUDNN_TENSOR_NCHW || destFormat > CUDNN_TENSOR_NCHW_VECT_C) return CUDNN_STATUS_BAD_PARAM;
  if (direction != CUDNN_TRANSFORM_FOLD && direction != CUDNN_TRANSFORM_UNFOLD) return CUDNN_STATUS_BAD_PARAM;
  cudnnTensorTransformStruct t{};
  t.set = 1;
  t.nb_dims = nbDims;
  t.format = destFormat;
  t.direction = direction;
  for (std::uint32_t i = 0; i < nbDims; ++i) {
    t.pad_before[i] = padBeforeA ? padBeforeA[i] : 0;
    t.pad_after[i] = padAfterA ? padAfterA[i] : 0;
    t.fold[i] = foldA ? foldA[i] : 1;
    if (t.pad_before[i] < 0 || t.pad_after[i] < 0 || t.fold[i] == 0) return CUDNN_STATUS_BAD_PARAM;
  }
  *transformDesc = t;
  return CUDNN_STATUS_SUCCESS;
}

// Fills the first min(nbDimsRequested, nbDims) entries of each array that is not NULL.
cudnnStatus_t CUDNNWINAPI cudnnGetTensorTransformDescriptor(cudnnTensorTransformDescriptor_t transformDesc,
                                                            uint32_t nbDimsRequested, cudnnTensorFormat_t* destFormat,
                                                            int32_t padBeforeA[], int32_t padAfterA[], uint32_t foldA[],
                                                            cudnnFoldingDirection_t* direction) {
  if (transformDesc == nullptr || !transformDesc->set) return CUDNN_STATUS_BAD_PARAM;
  if (destFormat == nullptr || direction == nullptr) return CUDNN_STATUS_BAD_PARAM;
  *destFormat = transformDesc->format;
  *direction = transformDesc->direction;
  for (std::uint32_t i = 0; i < nbDimsRequested && i < transformDesc->nb_dims; ++i) {
    if (padBeforeA) padBeforeA[i] = transformDesc->pad_before[i];
    if (padAfterA) padAfterA[i] = transformDesc->pad_after[i];
    if (foldA) foldA[i] = transformDesc->fold[i];
  }
  return CUDNN_STATUS_SUCCESS;
}

}  // extern "C"
