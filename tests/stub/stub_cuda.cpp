// A fake libcuda.so.1 (the CUDA driver) for tests: cuStreamCreate and both cuStreamDestroy entry
// points. Like the real driver its symbols are unversioned. Streams are addresses in a pool, and
// a destroyed stream's address is the next one handed out, as in stub_cudart.cpp.
#include "tests/stub/stub_cuda.h"

#include <atomic>
#include <cstdint>
#include <mutex>

#include "tests/stub/reusing_pool.h"

namespace {

struct StubStream {
  bool live = false;  // under g_lock
};

ReusingPool<StubStream, 4096> g_streams;
std::mutex g_lock;  // orders a stream's destroy against another destroy of the same stream
std::atomic<std::uint64_t> g_created{0}, g_destroyed_v2{0}, g_destroyed_legacy{0};

CUresult destroy(CUstream stream, std::atomic<std::uint64_t>& counter) {
  StubStream* s = g_streams.at(stream);
  {
    std::lock_guard<std::mutex> guard(g_lock);
    if (s == nullptr || !s->live) return CUDA_ERROR_INVALID_HANDLE;
    s->live = false;
  }
  g_streams.release(s);
  counter.fetch_add(1, std::memory_order_relaxed);
  return CUDA_SUCCESS;
}

}  // namespace

extern "C" {

CUresult CUDAAPI cuStreamCreate(CUstream* stream, unsigned int) {
  if (stream == nullptr) return CUDA_ERROR_INVALID_VALUE;
  StubStream* s = g_streams.acquire();
  if (s == nullptr) return CUDA_ERROR_OUT_OF_MEMORY;
  {
    std::lock_guard<std::mutex> guard(g_lock);
    s->live = true;
  }
  *stream = reinterpret_cast<CUstream>(s);
  g_created.fetch_add(1, std::memory_order_relaxed);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuStreamDestroy_v2(CUstream stream) { return destroy(stream, g_destroyed_v2); }

CUresult CUDAAPI cuStreamDestroy(CUstream stream) { return destroy(stream, g_destroyed_legacy); }

StubCudaCounters stubcuda_counters(void) {
  return {g_created.load(), g_destroyed_v2.load(), g_destroyed_legacy.load()};
}

}  // extern "C"
