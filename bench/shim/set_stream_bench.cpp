// cudnnSetStream through the shim, against the test stub: what a skip costs next to a plain call.
//
// The program links the shim ahead of the stub libcudnn, so its cudnnSetStream calls reach the
// shim exactly as a preloaded one would; the stub's own function (through dlsym on its handle)
// and an empty function in the stub are the baselines. Verify mode is read once per process:
// run the program again with CUDNN_FASTPATH_VERIFY=1 (bench/shim/run-bench does both).
#include <benchmark/benchmark.h>
#include <cudnn.h>
#include <dlfcn.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "table/stream_table.h"

namespace {

using SetStream = cudnnStatus_t (*)(cudnnHandle_t, cudaStream_t);

SetStream stub_function(const char* name) {
  void* library = dlopen("libcudnn.so.9", RTLD_NOLOAD | RTLD_LAZY);
  void* symbol = library ? dlsym(library, name) : nullptr;
  if (symbol == nullptr) {
    std::fprintf(stderr, "the stub libcudnn.so.9 is not loaded\n");
    std::exit(1);
  }
  return reinterpret_cast<SetStream>(symbol);
}

cudaStream_t stream(std::uintptr_t n) { return reinterpret_cast<cudaStream_t>(0x10000 * n); }

cudnnHandle_t new_handle() {
  cudnnHandle_t h = nullptr;
  if (cudnnCreate(&h) != CUDNN_STATUS_SUCCESS) std::abort();
  return h;
}

// The shim's fast path: the handle already holds the stream.
void BM_SkippedSet(benchmark::State& state) {
  cudnnHandle_t h = new_handle();
  cudnnSetStream(h, stream(1));
  for (auto _ : state) benchmark::DoNotOptimize(cudnnSetStream(h, stream(1)));
  cudnnDestroy(h);
}
BENCHMARK(BM_SkippedSet)->ThreadRange(1, 4)->UseRealTime();

// A stream change every call: the shim forwards each one (enter, real call, leave).
void BM_ForwardedSet(benchmark::State& state) {
  cudnnHandle_t h = new_handle();
  std::uintptr_t n = 0;
  for (auto _ : state) benchmark::DoNotOptimize(cudnnSetStream(h, stream(1 + (++n & 1))));
  cudnnDestroy(h);
}
BENCHMARK(BM_ForwardedSet);

// The stub's cudnnSetStream without the shim.
void BM_StubDirect(benchmark::State& state) {
  const SetStream real = stub_function("cudnnSetStream");
  cudnnHandle_t h = new_handle();
  for (auto _ : state) benchmark::DoNotOptimize(real(h, stream(1)));
  cudnnDestroy(h);
}
BENCHMARK(BM_StubDirect);

// An empty function in another shared library: the floor for any call.
void BM_EmptyCall(benchmark::State& state) {
  const SetStream empty = stub_function("stubcudnn_empty_call");
  cudnnHandle_t h = new_handle();
  for (auto _ : state) benchmark::DoNotOptimize(empty(h, stream(1)));
  cudnnDestroy(h);
}
BENCHMARK(BM_EmptyCall);

// The table lookup alone: find + holds, no call.
void BM_TableLookup(benchmark::State& state) {
  static cudnn_fastpath::StreamTable<4096> table;
  const void* handle = reinterpret_cast<const void*>(0x55550000);
  auto* slot = table.find_or_claim(handle);
  slot->state.leave(slot->state.enter(), 0x10000, true);
  for (auto _ : state) {
    auto* found = table.find(handle);
    benchmark::DoNotOptimize(found != nullptr && found->state.holds(0x10000));
  }
}
BENCHMARK(BM_TableLookup);

}  // namespace

BENCHMARK_MAIN();
