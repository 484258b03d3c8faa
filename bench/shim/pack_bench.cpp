// Variant packs through the shim, against the test stub: what a proxied op costs next to the
// same op on the stub itself.
//
// Like set_stream_bench, the program links the shim ahead of the stub libcudnn, so its backend
// calls reach the shim exactly as a preloaded one's would (where the shim does not interpose a
// call, it goes straight to the stub: the shim rows then measure the stub). The stub's own
// functions, found with dlsym on its handle, are the baselines. bench/shim/run-bench runs it with
// the repetitions interleaved at random, so that each pair is measured in the same conditions.
//
//   PackOp        create + set UNIQUE_IDS, DATA_POINTERS, WORKSPACE + finalize + destroy, the
//                 contents the same every time (PyTorch's steady state); target: 100 ns through
//                 the shim
//   PackOpExecute the same op with the execute, as a training step makes it
//   Execute       cudnnBackendExecute of one finalized pack (a proxy through the shim)
//   OtherCreate   create + destroy of a tensor descriptor: the pass-through cost
#include <benchmark/benchmark.h>
#include <cudnn.h>
#include <dlfcn.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "bench/shim/other_code.h"
#include "tests/packs/pack_api.h"
#include "tests/support/glibc_dlsym.h"

#pragma GCC diagnostic ignored "-Wdeprecated-declarations"  // cudnnBackendInitialize

namespace {

[[noreturn]] void die(const char* what) {
  std::fprintf(stderr, "pack_bench: %s\n", what);
  std::exit(1);
}

template <typename T>
void stub_function(T& out, const char* name) {
  void* library = dlopen("libcudnn.so.9", RTLD_NOLOAD | RTLD_LAZY);
  void* symbol = library ? glibc_dlsym(library, name) : nullptr;
  if (symbol == nullptr) die("the stub libcudnn.so.9 is not loaded");
  out = reinterpret_cast<T>(symbol);
}

// The calls as the program makes them: through the shim wherever it interposes.
PackApi through_shim() { return linked_pack_api(); }

// The stub's own functions, around the shim.
PackApi stub_direct() {
  PackApi api = through_shim();
  stub_function(api.create_handle, "cudnnCreate");
  stub_function(api.destroy_handle, "cudnnDestroy");
  stub_function(api.set_stream, "cudnnSetStream");
  stub_function(api.create, "cudnnBackendCreateDescriptor");
  stub_function(api.destroy, "cudnnBackendDestroyDescriptor");
  stub_function(api.set, "cudnnBackendSetAttribute");
  stub_function(api.get, "cudnnBackendGetAttribute");
  stub_function(api.finalize, "cudnnBackendFinalize");
  stub_function(api.initialize, "cudnnBackendInitialize");
  stub_function(api.execute, "cudnnBackendExecute");
  stub_function(api.populate_cuda_graph, "cudnnBackendPopulateCudaGraph");
  stub_function(api.update_cuda_graph, "cudnnBackendUpdateCudaGraph");
  return api;
}

const PackApi& api(bool shim) {
  static const PackApi shimmed = through_shim();
  static const PackApi direct = stub_direct();
  return shim ? shimmed : direct;
}

// One handle and one matmul plan for the whole run, made through the shim (as a program makes
// them; they pass through it either way).
struct World {
  cudnnHandle_t handle = nullptr;
  MatmulPlan matmul;
  World() {
    const PackApi& a = api(true);
    a.set_engine_workspace(0, 1 << 20);
    const std::int64_t uids[3] = {1, 2, 3};
    if (a.create_handle(&handle) != CUDNN_STATUS_SUCCESS) die("cudnnCreate failed");
    if (matmul.build(a, handle, uids) != CUDNN_STATUS_SUCCESS) die("the plan failed to build");
  }
};
World& world() {
  static World w;
  return w;
}

const std::int64_t kUids[3] = {1, 2, 3};
void* const kPointers[3] = {reinterpret_cast<void*>(0x7f0000001000), reinterpret_cast<void*>(0x7f0000002000),
                            reinterpret_cast<void*>(0x7f0000003000)};
void* const kWorkspace = reinterpret_cast<void*>(0x7e0000100000);

// create + 3 sets + finalize: the first failure, if any.
inline cudnnStatus_t make_pack(const PackApi& a, cudnnBackendDescriptor_t* pack) {
  cudnnStatus_t s = a.create(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, pack);
  if (s == 0) s = a.set(*pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, 3, kUids);
  if (s == 0) s = a.set(*pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, 3, kPointers);
  if (s == 0) s = a.set(*pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &kWorkspace);
  if (s == 0) s = a.finalize(*pack);
  return s;
}

void pack_op(benchmark::State& state, bool shim) {
  const PackApi& a = api(shim);
  for (auto _ : state) {
    cudnnBackendDescriptor_t pack = nullptr;
    const cudnnStatus_t s = make_pack(a, &pack);
    a.destroy(pack);
    if (s != CUDNN_STATUS_SUCCESS) {
      state.SkipWithError("a variant pack failed to finalize");
      break;
    }
  }
}
// The same op after the program's own work has pushed everything out of the caches (8 MiB read
// between ops, outside the timed part): closer to what the shim costs inside a framework, where
// each op runs thousands of other instructions between two variant packs. A fixed count of
// iterations: the manual time counts only the op, and the reading between ops takes milliseconds.
// The other code, made once.
cudnn_fastpath::bench::OtherCode other_code() {
  static const cudnn_fastpath::bench::OtherCode code = cudnn_fastpath::bench::make_other_code();
  return code;
}

void pack_op_cold(benchmark::State& state, bool shim, bool cold_code) {
  const PackApi& a = api(shim);
  static std::vector<std::uint64_t> other_work(1 << 20);
  const cudnn_fastpath::bench::OtherCode code = cold_code ? other_code() : nullptr;
  if (cold_code && code == nullptr) {
    state.SkipWithError("no executable memory for the other code");
    return;
  }
  std::uint64_t sink = 0;
  for (auto _ : state) {
    for (std::size_t i = 0; i < other_work.size(); i += 8) sink += other_work[i]++;
    if (code) code();
    const auto start = std::chrono::steady_clock::now();
    cudnnBackendDescriptor_t pack = nullptr;
    const cudnnStatus_t s = make_pack(a, &pack);
    a.destroy(pack);
    state.SetIterationTime(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    if (s != CUDNN_STATUS_SUCCESS) {
      state.SkipWithError("a variant pack failed to finalize");
      break;
    }
  }
  benchmark::DoNotOptimize(sink);
}
void BM_PackOpCold_Shim(benchmark::State& state) { pack_op_cold(state, true, false); }
void BM_PackOpCold_Stub(benchmark::State& state) { pack_op_cold(state, false, false); }
BENCHMARK(BM_PackOpCold_Shim)->UseManualTime()->Iterations(2000);
BENCHMARK(BM_PackOpCold_Stub)->UseManualTime()->Iterations(2000);
void BM_PackOpColdCode_Shim(benchmark::State& state) { pack_op_cold(state, true, true); }
void BM_PackOpColdCode_Stub(benchmark::State& state) { pack_op_cold(state, false, true); }
BENCHMARK(BM_PackOpColdCode_Shim)->UseManualTime()->Iterations(2000);
BENCHMARK(BM_PackOpColdCode_Stub)->UseManualTime()->Iterations(2000);

void BM_PackOp_Shim(benchmark::State& state) { pack_op(state, true); }
void BM_PackOp_Stub(benchmark::State& state) { pack_op(state, false); }
BENCHMARK(BM_PackOp_Shim)->ThreadRange(1, 2)->UseRealTime();
BENCHMARK(BM_PackOp_Stub)->ThreadRange(1, 2)->UseRealTime();

void pack_op_execute(benchmark::State& state, bool shim) {
  const PackApi& a = api(shim);
  World& w = world();
  for (auto _ : state) {
    cudnnBackendDescriptor_t pack = nullptr;
    cudnnStatus_t s = make_pack(a, &pack);
    if (s == 0) s = a.execute(w.handle, w.matmul.plan(), pack);
    a.destroy(pack);
    if (s != CUDNN_STATUS_SUCCESS) {
      state.SkipWithError("an op failed");
      break;
    }
  }
}
void BM_PackOpExecute_Shim(benchmark::State& state) { pack_op_execute(state, true); }
void BM_PackOpExecute_Stub(benchmark::State& state) { pack_op_execute(state, false); }
BENCHMARK(BM_PackOpExecute_Shim);
BENCHMARK(BM_PackOpExecute_Stub);

// Execute alone: a proxy through the shim (c), a real pack on the stub (d).
void execute(benchmark::State& state, bool shim) {
  const PackApi& a = api(shim);
  World& w = world();
  cudnnBackendDescriptor_t pack = nullptr;
  if (make_pack(a, &pack) != CUDNN_STATUS_SUCCESS) {
    state.SkipWithError("a variant pack failed to finalize");
    return;
  }
  for (auto _ : state) benchmark::DoNotOptimize(a.execute(w.handle, w.matmul.plan(), pack));
  a.destroy(pack);
}
void BM_Execute_Shim(benchmark::State& state) { execute(state, true); }
void BM_Execute_Stub(benchmark::State& state) { execute(state, false); }
BENCHMARK(BM_Execute_Shim);
BENCHMARK(BM_Execute_Stub);

// A descriptor of another type: created and destroyed, never finalized (e).
void other_create(benchmark::State& state, bool shim) {
  const PackApi& a = api(shim);
  for (auto _ : state) {
    cudnnBackendDescriptor_t tensor = nullptr;
    benchmark::DoNotOptimize(a.create(CUDNN_BACKEND_TENSOR_DESCRIPTOR, &tensor));
    a.destroy(tensor);
  }
}
void BM_OtherCreate_Shim(benchmark::State& state) { other_create(state, true); }
void BM_OtherCreate_Stub(benchmark::State& state) { other_create(state, false); }
BENCHMARK(BM_OtherCreate_Shim);
BENCHMARK(BM_OtherCreate_Stub);

}  // namespace

BENCHMARK_MAIN();
