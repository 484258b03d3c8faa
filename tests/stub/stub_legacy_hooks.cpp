// The inner calls of the legacy ops (stubcudnn_inner_calls): descriptor calls made the way cuDNN's
// sub-libraries make them, from inside the library.
//
// In a file of its own, for the reason stub_hooks.cpp gives: a call to an exported function of
// another translation unit goes through the PLT, which the dynamic linker binds to the first
// definition in the global scope (a preloaded interposer's, if any). None is a tail call: each
// return address stays inside the library, where an interposer that asks finds its caller.
#include "tests/stub/stub_legacy.h"

void stublegacy::make_inner_calls() {
  cudnnTensorDescriptor_t desc = nullptr;
  cudnnCreateTensorDescriptor(&desc);
  cudnnSetTensor4dDescriptor(desc, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, 1, 1, 1);
  cudnnDestroyTensorDescriptor(desc);
  asm volatile("" ::: "memory");  // work after the last call: it cannot become a jump
}
