// What the frontend tests share: a stub cuDNN handle, fake device pointers, small descriptions.
#pragma once

#include <cudnn_graph.h>

#include <cstdint>

#include "cudnn_fastpath/frontend.h"
#include "tests/stub/stub_backend_control.h"

namespace cudnn_fastpath::test {

// A handle of the stub, destroyed at scope exit. Each test starts from the stub's defaults.
class StubHandle {
 public:
  StubHandle() {
    stubbackend_reset();
    create_handle(&handle_);
  }
  ~StubHandle() { destroy_handle(handle_); }
  StubHandle(const StubHandle&) = delete;
  StubHandle& operator=(const StubHandle&) = delete;
  operator cudnnHandle_t() const { return handle_; }

 private:
  cudnnHandle_t handle_ = nullptr;
};

// Addresses that stand for device memory: the stub only checks that they are not null.
inline void* fake_device_pointer(std::uintptr_t n) { return reinterpret_cast<void*>(0x7f0000000000 + n * 0x1000); }
inline cudaStream_t fake_stream(std::uintptr_t n) { return reinterpret_cast<cudaStream_t>(0x5100 + n * 0x40); }

inline MatmulDescription small_matmul() {
  MatmulDescription d;
  d.batch = 2;
  d.m = 64;
  d.n = 32;
  d.k = 16;
  return d;
}

inline ConvolutionDescription small_convolution() {
  ConvolutionDescription d;
  d.n = 2;
  d.c = 8;
  d.h = d.w = 10;
  d.k = 16;
  d.r = d.s = 3;
  d.pad_h = d.pad_w = 1;
  return d;
}

}  // namespace cudnn_fastpath::test
