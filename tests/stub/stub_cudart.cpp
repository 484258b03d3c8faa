// A fake libcudart.so.13 for tests: streams are addresses in a pool, and a destroyed stream's
// address is the next one handed out (the real runtime was seen doing the same).
#include <cuda_runtime_api.h>

#include <atomic>
#include <cstddef>
#include <mutex>

#include "tests/stub/reusing_pool.h"
#include "tests/stub/stub_control.h"

namespace {

struct StubStream {
  bool live = false;  // under g_lock
};

ReusingPool<StubStream, 4096> g_streams;
std::mutex g_lock;  // orders a stream's destroy against another destroy of the same stream
std::atomic<std::uint64_t> g_created{0}, g_destroyed{0};

}  // namespace

extern "C" {

cudaError_t CUDARTAPI cudaStreamCreate(cudaStream_t* stream) {
  if (stream == nullptr) return cudaErrorInvalidValue;
  StubStream* s = g_streams.acquire();
  if (s == nullptr) return cudaErrorMemoryAllocation;
  {
    std::lock_guard<std::mutex> guard(g_lock);
    s->live = true;
  }
  *stream = reinterpret_cast<cudaStream_t>(s);
  g_created.fetch_add(1, std::memory_order_relaxed);
  return cudaSuccess;
}

cudaError_t CUDARTAPI cudaStreamDestroy(cudaStream_t stream) {
  StubStream* s = g_streams.at(stream);
  {
    std::lock_guard<std::mutex> guard(g_lock);
    if (s == nullptr || !s->live) return cudaErrorInvalidResourceHandle;
    s->live = false;
  }
  g_streams.release(s);
  g_destroyed.fetch_add(1, std::memory_order_relaxed);
  return cudaSuccess;
}

const char* CUDARTAPI cudaGetErrorString(cudaError_t error) {
  return error == cudaSuccess ? "no error" : "stub cudart error";
}

StubCudartCounters stubcudart_counters(void) { return {g_created.load(), g_destroyed.load()}; }

}  // extern "C"
