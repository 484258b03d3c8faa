#include "paused_set_stream.h"

#include <cudnn_graph.h>
#include <dlfcn.h>

#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>

namespace {

std::mutex g_lock;
std::condition_variable g_changed;
bool g_armed = false;     // under g_lock
bool g_paused = false;    // under g_lock
bool g_released = false;  // under g_lock

using SetStreamFunction = cudnnStatus_t (*)(cudnnHandle_t, cudaStream_t);

SetStreamFunction stub_set_stream() {
  static const auto real = reinterpret_cast<SetStreamFunction>(dlsym(RTLD_NEXT, "cudnnSetStream"));
  if (real == nullptr) {
    std::fprintf(stderr, "paused_set_stream: no cudnnSetStream after the test program\n");
    std::abort();
  }
  return real;
}

}  // namespace

extern "C" cudnnStatus_t CUDNNWINAPI cudnnSetStream(cudnnHandle_t handle, cudaStream_t stream) {
  const cudnnStatus_t status = stub_set_stream()(handle, stream);
  std::unique_lock<std::mutex> lock(g_lock);
  if (g_armed) {
    g_armed = false;
    g_paused = true;
    g_changed.notify_all();
    g_changed.wait(lock, [] { return g_released; });
    g_paused = false;
  }
  return status;
}

namespace cudnn_fastpath::test {

PausedSetStream::PausedSetStream() {
  std::lock_guard<std::mutex> guard(g_lock);
  g_armed = true;
  g_paused = false;
  g_released = false;
}

PausedSetStream::~PausedSetStream() {
  release();
  std::unique_lock<std::mutex> lock(g_lock);
  g_changed.wait(lock, [] { return !g_paused; });
  g_armed = false;
}

void PausedSetStream::wait_until_paused() {
  std::unique_lock<std::mutex> lock(g_lock);
  g_changed.wait(lock, [] { return g_paused; });
}

void PausedSetStream::release() {
  std::lock_guard<std::mutex> guard(g_lock);
  g_released = true;
  g_changed.notify_all();
}

}  // namespace cudnn_fastpath::test
