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
#include "tests/stub/stub_control.h"
#include "tests/support/glibc_dlsym.h"

namespace {

using SetStream = cudnnStatus_t (*)(cudnnHandle_t, cudaStream_t);

SetStream stub_function(const char* name) {
  void* library = dlopen("libcudnn.so.9", RTLD_NOLOAD | RTLD_LAZY);
  void* symbol = library ? glibc_dlsym(library, name) : nullptr;
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

// ---- A table that never fills and never stalls ------------------------------------------------

// A skip on a new handle after `count` distinct handle addresses came and went, one live at a time
// (the stub hands out fresh addresses meanwhile). Arguments 1000 and 6000: the second must cost
// what the first does (the old table filled up at 4096 addresses and forwarded everything after).
void BM_SkipAfterChurn(benchmark::State& state) {
  static std::int64_t churned = 0;  // process-wide: the table is
  const auto fresh = reinterpret_cast<void (*)(bool)>(dlsym(RTLD_DEFAULT, "stubcudnn_fresh_handles"));
  if (fresh) fresh(true);
  for (; churned < state.range(0); ++churned) {
    cudnnHandle_t h = new_handle();
    cudnnSetStream(h, stream(1));
    cudnnDestroy(h);
  }
  if (fresh) fresh(false);
  cudnnHandle_t h = new_handle();
  cudnnSetStream(h, stream(1));
  for (auto _ : state) benchmark::DoNotOptimize(cudnnSetStream(h, stream(1)));
  cudnnDestroy(h);
}
BENCHMARK(BM_SkipAfterChurn)->Arg(1000)->Arg(6000);

// cudaStreamCreate + cudaStreamDestroy with 64 live handles cached on other streams: the destroy
// through the shim visits the 64 slots (and writes none), against the stub's own pair.
using StreamCreate = cudaError_t (*)(cudaStream_t*);
using StreamDestroy = cudaError_t (*)(cudaStream_t);

template <typename Function>
Function cudart_function(const char* name) {
  void* library = dlopen("libcudart.so.13", RTLD_NOLOAD | RTLD_LAZY);
  void* symbol = library ? glibc_dlsym(library, name) : nullptr;
  if (symbol == nullptr) {
    std::fprintf(stderr, "the stub libcudart.so.13 is not loaded\n");
    std::exit(1);
  }
  return reinterpret_cast<Function>(symbol);
}

struct LiveHandles {
  cudnnHandle_t handles[64];
  LiveHandles() {
    for (std::uintptr_t i = 0; i < 64; ++i) {
      handles[i] = new_handle();
      cudnnSetStream(handles[i], stream(100 + i));
    }
  }
  ~LiveHandles() {
    for (cudnnHandle_t h : handles) cudnnDestroy(h);
  }
};

void BM_StreamDestroyPair(benchmark::State& state) {
  const LiveHandles live;
  const auto create = cudart_function<StreamCreate>("cudaStreamCreate");
  for (auto _ : state) {
    cudaStream_t s = nullptr;
    create(&s);
    benchmark::DoNotOptimize(cudaStreamDestroy(s));  // the shim's
  }
}
BENCHMARK(BM_StreamDestroyPair);

void BM_StreamDestroyPairDirect(benchmark::State& state) {
  const LiveHandles live;
  const auto create = cudart_function<StreamCreate>("cudaStreamCreate");
  const auto destroy = cudart_function<StreamDestroy>("cudaStreamDestroy");
  for (auto _ : state) {
    cudaStream_t s = nullptr;
    create(&s);
    benchmark::DoNotOptimize(destroy(s));
  }
}
BENCHMARK(BM_StreamDestroyPairDirect);

}  // namespace

BENCHMARK_MAIN();
