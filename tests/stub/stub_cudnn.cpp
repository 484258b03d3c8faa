// A fake libcudnn.so.9 for tests: handle bookkeeping and call counts, no GPU.
//
// Like the real one, it hands a destroyed handle's address out again (reusing_pool.h), refuses calls on handles it does not know, and, in a forked child, refuses every
// handle inherited from the parent (the real one's CUDA context is unusable there).
#include <cudnn.h>
#include <pthread.h>

#include <sched.h>

#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <cstdint>

#include "tests/stub/reusing_pool.h"
#include "tests/stub/stub_control.h"

namespace {

struct StubHandle {
  std::atomic<cudaStream_t> stream{nullptr};  // atomic: racing callers are part of the tests
  std::atomic<bool> live{false};
  std::atomic<bool> inherited{false};  // created before a fork, seen from the child
  std::atomic<std::uint64_t> serial{0};  // which cudnnCreate made it: tells handles at one address apart
};

// Enough for the table-full test's 70,000 live handles, and for 100,000 distinct addresses.
ReusingPool<StubHandle, 100000> g_handles;

std::atomic<std::uint64_t> g_set_stream{0}, g_get_stream{0}, g_create{0}, g_destroy{0};
std::atomic<std::uint64_t> g_handle_serials{0};

StubHandle* lookup(cudnnHandle_t handle) {
  StubHandle* h = g_handles.at(handle);
  return h != nullptr && h->live.load(std::memory_order_acquire) ? h : nullptr;
}

void poison_inherited_handles() {
  for (StubHandle& h : g_handles)
    if (h.live.load(std::memory_order_relaxed)) h.inherited.store(true, std::memory_order_relaxed);
}

// STUBCUDNN_JITTER=1: cudnnSetStream lingers a random while after storing the stream, so that
// racing callers return in another order than they stored (what the race tests need to bite).
const bool g_jitter = [] {
  const char* value = std::getenv("STUBCUDNN_JITTER");
  return value != nullptr && *value == '1';
}();

void linger() {
  thread_local unsigned state = static_cast<unsigned>(reinterpret_cast<std::uintptr_t>(&state));
  state = state * 1103515245u + 12345u;
  const unsigned spins = (state >> 16) % 2000;
  for (volatile unsigned i = 0; i < spins; ++i) {
  }
  if ((state >> 8) % 16 == 0) sched_yield();
}

// STUBCUDNN_FRESH_HANDLES=1: every cudnnCreate returns an address never returned before (while the
// pool lasts), as a long-running program's allocator may, instead of the last destroyed one.
std::atomic<bool> g_fresh_handles{[] {
  const char* value = std::getenv("STUBCUDNN_FRESH_HANDLES");
  return value != nullptr && *value == '1';
}()};

struct RegisterForkHandler {
  RegisterForkHandler() { pthread_atfork(nullptr, nullptr, poison_inherited_handles); }
} g_register_fork_handler;

}  // namespace

extern "C" {

size_t CUDNNWINAPI cudnnGetVersion(void) { return CUDNN_VERSION; }

const char* CUDNNWINAPI cudnnGetErrorString(cudnnStatus_t status) {
  switch (status) {
    case CUDNN_STATUS_SUCCESS: return "CUDNN_STATUS_SUCCESS";
    case CUDNN_STATUS_NOT_INITIALIZED: return "CUDNN_STATUS_NOT_INITIALIZED";
    case CUDNN_STATUS_BAD_PARAM: return "CUDNN_STATUS_BAD_PARAM";
    case CUDNN_STATUS_EXECUTION_FAILED: return "CUDNN_STATUS_EXECUTION_FAILED";
    default: return "CUDNN_STATUS_(stub: other)";
  }
}

cudnnStatus_t CUDNNWINAPI cudnnCreate(cudnnHandle_t* handle) {
  if (handle == nullptr) return CUDNN_STATUS_BAD_PARAM;
  g_create.fetch_add(1, std::memory_order_relaxed);
  StubHandle* h = g_handles.acquire(g_fresh_handles.load(std::memory_order_relaxed));
  if (h == nullptr) return CUDNN_STATUS_ALLOC_FAILED;
  h->stream.store(nullptr, std::memory_order_relaxed);
  h->inherited.store(false, std::memory_order_relaxed);
  h->serial.store(g_handle_serials.fetch_add(1, std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  h->live.store(true, std::memory_order_release);
  *handle = reinterpret_cast<cudnnHandle_t>(h);
  return CUDNN_STATUS_SUCCESS;
}

// For the backend's execute (stub_backend.cpp), without counting a cudnnGetStream: the stream
// `handle` holds, and which cudnnCreate made it (0 for a handle that is not live).
cudaStream_t stubcudnn_handle_stream(cudnnHandle_t handle) {
  StubHandle* h = lookup(handle);
  return h ? h->stream.load(std::memory_order_relaxed) : nullptr;
}
std::uint64_t stubcudnn_handle_serial(cudnnHandle_t handle) {
  StubHandle* h = lookup(handle);
  return h ? h->serial.load(std::memory_order_relaxed) : 0;
}

cudnnStatus_t CUDNNWINAPI cudnnDestroy(cudnnHandle_t handle) {
  g_destroy.fetch_add(1, std::memory_order_relaxed);
  StubHandle* h = lookup(handle);
  if (h == nullptr) return CUDNN_STATUS_BAD_PARAM;
  h->live.store(false, std::memory_order_release);
  g_handles.release(h);
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t CUDNNWINAPI cudnnSetStream(cudnnHandle_t handle, cudaStream_t stream) {
  g_set_stream.fetch_add(1, std::memory_order_relaxed);
  StubHandle* h = lookup(handle);
  if (h == nullptr) return CUDNN_STATUS_BAD_PARAM;
  if (h->inherited.load(std::memory_order_relaxed)) return CUDNN_STATUS_EXECUTION_FAILED;
  if (stream == STUBCUDNN_REJECTED_STREAM) return CUDNN_STATUS_BAD_PARAM;
  h->stream.store(stream, std::memory_order_relaxed);
  if (g_jitter) linger();
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t CUDNNWINAPI cudnnGetStream(cudnnHandle_t handle, cudaStream_t* stream) {
  g_get_stream.fetch_add(1, std::memory_order_relaxed);
  StubHandle* h = lookup(handle);
  if (h == nullptr || stream == nullptr) return CUDNN_STATUS_BAD_PARAM;
  *stream = h->stream.load(std::memory_order_relaxed);
  return CUDNN_STATUS_SUCCESS;
}

void stubcudnn_fresh_handles(bool fresh) { g_fresh_handles.store(fresh, std::memory_order_relaxed); }

StubCudnnCounters stubcudnn_counters(void) {
  return {g_set_stream.load(), g_get_stream.load(), g_create.load(), g_destroy.load()};
}

}  // extern "C"

extern "C" {
// An empty function with cudnnSetStream's signature, for the benchmarks' baseline: the cost of a
// call into another shared library and nothing else.
cudnnStatus_t stubcudnn_empty_call(cudnnHandle_t, cudaStream_t) { return CUDNN_STATUS_SUCCESS; }
}
