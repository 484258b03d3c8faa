// The legacy ops the demo (demo/cudnn_fastpath_demo.cpp) issues after each cudnnSetStream, for the
// stub: tensor descriptors that remember their shape, and a cudnnAddTensor that checks its
// arguments and does nothing else. Timings of the stub are not cuDNN's; its counts are the point.
#include <cudnn.h>

#include <new>

// Opaque in cudnn.h; the stub's own layout.
struct cudnnTensorStruct {
  bool set = false;
  cudnnDataType_t type = CUDNN_DATA_FLOAT;
  int n = 0, c = 0, h = 0, w = 0;
};

extern "C" {

cudnnStatus_t CUDNNWINAPI cudnnCreateTensorDescriptor(cudnnTensorDescriptor_t* desc) {
  if (desc == nullptr) return CUDNN_STATUS_BAD_PARAM;
  *desc = new (std::nothrow) cudnnTensorStruct;
  return *desc ? CUDNN_STATUS_SUCCESS : CUDNN_STATUS_ALLOC_FAILED;
}

cudnnStatus_t CUDNNWINAPI cudnnDestroyTensorDescriptor(cudnnTensorDescriptor_t desc) {
  delete desc;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t CUDNNWINAPI cudnnSetTensor4dDescriptor(cudnnTensorDescriptor_t desc, cudnnTensorFormat_t format,
                                                     cudnnDataType_t type, int n, int c, int h, int w) {
  if (desc == nullptr || format != CUDNN_TENSOR_NCHW || n <= 0 || c <= 0 || h <= 0 || w <= 0)
    return CUDNN_STATUS_BAD_PARAM;
  *desc = {true, type, n, c, h, w};
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t CUDNNWINAPI cudnnAddTensor(cudnnHandle_t handle, const void* alpha, const cudnnTensorDescriptor_t a_desc,
                                         const void* a, const void* beta, const cudnnTensorDescriptor_t c_desc,
                                         void* c) {
  if (handle == nullptr || alpha == nullptr || beta == nullptr || a == nullptr || c == nullptr) return CUDNN_STATUS_BAD_PARAM;
  if (a_desc == nullptr || c_desc == nullptr || !a_desc->set || !c_desc->set) return CUDNN_STATUS_BAD_PARAM;
  return CUDNN_STATUS_SUCCESS;
}

}  // extern "C"
