// set_stream_100: a program that uses cuDNN the way a framework does, linked to the stub libcudnn:
// one handle, the same stream set 100 times. It prints how many of those calls reached the library.
#include <cudnn.h>

#include <cstdint>
#include <cstdio>

#include "tests/stub/stub_control.h"

int main() {
  cudnnHandle_t handle = nullptr;
  if (cudnnCreate(&handle) != CUDNN_STATUS_SUCCESS) return 1;
  // Any non-null value: the stub does no GPU work with it.
  const auto stream = reinterpret_cast<cudaStream_t>(std::uintptr_t{0x1000});
  for (int i = 0; i < 100; ++i)
    if (cudnnSetStream(handle, stream) != CUDNN_STATUS_SUCCESS) return 1;
  const StubCudnnCounters counters = stubcudnn_counters();
  std::printf("calls_made=100\nreached_library=%llu\nget_stream=%llu\n",
              static_cast<unsigned long long>(counters.set_stream),
              static_cast<unsigned long long>(counters.get_stream));
  return cudnnDestroy(handle) == CUDNN_STATUS_SUCCESS ? 0 : 1;
}
