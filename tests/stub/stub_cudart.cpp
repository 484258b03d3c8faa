// A fake libcudart.so.13 for tests: streams are addresses in a pool, and a destroyed stream's
// address is the next one handed out (the real runtime was seen doing the same).
#include <cuda_runtime_api.h>

#include <atomic>
#include <cstddef>
#include <mutex>
#include <vector>

#include "tests/stub/stub_control.h"

namespace {

struct StubStream {
  bool live = false;
};

constexpr std::size_t kMaxStreams = 4096;
StubStream g_streams[kMaxStreams];
std::size_t g_next_unused = 0;               // under g_lock
std::vector<std::size_t>* g_free = nullptr;  // under g_lock
std::mutex g_lock;
std::atomic<std::uint64_t> g_created{0}, g_destroyed{0};

}  // namespace

extern "C" {

cudaError_t CUDARTAPI cudaStreamCreate(cudaStream_t* stream) {
  if (stream == nullptr) return cudaErrorInvalidValue;
  std::lock_guard<std::mutex> guard(g_lock);
  if (g_free == nullptr) g_free = new std::vector<std::size_t>;
  std::size_t index;
  if (!g_free->empty()) {
    index = g_free->back();
    g_free->pop_back();
  } else if (g_next_unused < kMaxStreams) {
    index = g_next_unused++;
  } else {
    return cudaErrorMemoryAllocation;
  }
  g_streams[index].live = true;
  *stream = reinterpret_cast<cudaStream_t>(&g_streams[index]);
  g_created.fetch_add(1, std::memory_order_relaxed);
  return cudaSuccess;
}

cudaError_t CUDARTAPI cudaStreamDestroy(cudaStream_t stream) {
  auto* s = reinterpret_cast<StubStream*>(stream);
  std::lock_guard<std::mutex> guard(g_lock);
  if (s < g_streams || s >= g_streams + kMaxStreams || !s->live) return cudaErrorInvalidResourceHandle;
  s->live = false;
  g_free->push_back(static_cast<std::size_t>(s - g_streams));
  g_destroyed.fetch_add(1, std::memory_order_relaxed);
  return cudaSuccess;
}

const char* CUDARTAPI cudaGetErrorString(cudaError_t error) {
  return error == cudaSuccess ? "no error" : "stub cudart error";
}

StubCudartCounters stubcudart_counters(void) { return {g_created.load(), g_destroyed.load()}; }

}  // extern "C"
