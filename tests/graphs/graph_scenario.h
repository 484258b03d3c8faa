// A graph-replay scenario program (graph_scenario.cpp, its cases in graph_scenario_*.cpp): variant
// packs made the way PyTorch makes them (create, set, finalize, execute, destroy) on the stub
// libcudnn, with the stub libcuda loaded (linked), so that the shim can capture steady executes and
// launch them as graphs. It prints key=value lines for graphs_test.cpp to judge, and runs with or
// without the shim.
//
//   graph_scenario_linked  CASE        the program links libcudnn (the stub) directly
//   graph_scenario_dlopen  MODE CASE   global: dlopen(libcudnn, RTLD_GLOBAL);
//                                      local: dlopen(framework, RTLD_LOCAL), PyTorch's case;
//                                      dlsym: dlopen(libcudnn, RTLD_LOCAL) and every function
//                                      taken with dlsym on that handle, JAX's case;
//                                      dlsym_library: a library that does that, RTLD_LOCAL;
//                                      dlsym_around: as dlsym, but one pack-taking function
//                                      (GRAPH_SCENARIO_AROUND, default cudnnBackendExecute)
//                                      taken with glibc's own dlsym, around any interposer
// With GRAPH_SCENARIO_DLSYM_STREAM_DESTROY=1 the program (any mode) also takes the driver's
// cuStreamDestroy_v2 with dlsym on libcuda's handle, as cuBLAS does.
//
// Every op is checked against what the stub ran for it (on the calling thread): the plan, the
// uids, pointers and workspace, and the by-value bytes as they were when the op was made. Common
// keys: "failures" (calls that should have succeeded and did not), "mismatches" (ops the stub did
// not run as made: a stale replay), "stale" (replays whose handle, plan or pack is gone, as the
// stub sees them), "global_captures" (captures begun in global mode).
#pragma once

#include <dlfcn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "tests/packs/pack_api.h"
#include "tests/stub/stub_cuda.h"
#include "tests/support/glibc_dlsym.h"
#include "tests/support/must_load.h"
#include "tests/support/scenario_main.h"
#include "tests/support/variant_pack.h"

#pragma GCC diagnostic ignored "-Wdeprecated-declarations"  // cudnnBackendInitialize

// The shim's feature bits (shim_control.h), repeated: the shim is a library under test.
#define GRAPHS_FEATURE_SET_STREAM 1u
#define GRAPHS_FEATURE_VARIANT_PACKS 2u
#define GRAPHS_FEATURE_GRAPHS 4u
#if __has_include("shim/include/cudnn_fastpath/shim_control.h")
#include "shim/include/cudnn_fastpath/shim_control.h"
static_assert(CUDNN_FASTPATH_FEATURE_GRAPHS == GRAPHS_FEATURE_GRAPHS, "shim_control.h changed a value");
#endif

namespace graph_scenario {

using scenario_main::print;

constexpr cudnnBackendDescriptorType_t kPack = CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR;
constexpr std::uintptr_t kDevice = 0x7f0000000000, kWorkspaces = 0x7e0000000000;
constexpr std::size_t kDeviceBytes = std::size_t{1} << 36;
inline const std::int64_t kUids[3] = {1, 2, 3};
inline const std::int64_t kOtherUids[3] = {4, 5, 6};

extern PackApi g_api;

// The stub's per-thread last execution, and its cudnnGetStream (not the shim's: the stub's own
// view of the handle), found in whichever libcudnn the api reaches; the shim's switch, or null.
extern StubBackendExecution (*g_thread_last)();
extern int (*g_is_live)(cudnnBackendDescriptor_t);  // the stub's stubbackend_is_live
extern cudnnStatus_t (*g_get_stream)(cudnnHandle_t, cudaStream_t*);
extern unsigned (*g_set_features)(unsigned);
// The libcudnn the api reaches (the stub), for its own functions.
void* stub_library();

// What a pack holds; pointers in the stub's device memory unless a case says otherwise.
struct Contents {
  std::int64_t count = 3;
  std::int64_t uids[5] = {};
  void* pointers[5] = {};
  void* workspace = nullptr;
};

inline void* device_pointer(std::int64_t n) { return reinterpret_cast<void*>(kDevice + n * 0x1000); }

inline Contents contents(std::int64_t base, const std::int64_t* uids = kUids) {
  Contents c;
  for (int i = 0; i < 3; ++i) {
    c.uids[i] = uids[i];
    c.pointers[i] = device_pointer(base * 8 + i);
  }
  c.workspace = reinterpret_cast<void*>(kWorkspaces + base * 0x100000);
  return c;
}

struct Counts {
  long long failures = 0;
  long long mismatches = 0;
};

// Whether the stub ran `plan` with exactly `c` on this thread last; by-value tensors (the scaled
// plan's uid 7) with the bytes at their pointers now (their pointers too, but where the stub's
// kernels ran a replay: those carry the bytes alone).
inline bool ran_as_made(cudnnBackendDescriptor_t plan, const Contents& c) {
  const StubBackendExecution e = g_thread_last();
  if (e.plan != plan || e.tensor_count != c.count || e.workspace != c.workspace) return false;
  const auto by_value = [&e](std::int64_t uid) {
    for (std::int64_t k = 0; k < e.by_value_count; ++k)
      if (e.by_value_uids[k] == uid) return true;
    return false;
  };
  for (std::int64_t i = 0; i < c.count; ++i)
    if (e.uids[i] != c.uids[i] || (e.pointers[i] != c.pointers[i] && !(e.pointers[i] == nullptr && by_value(e.uids[i]))))
      return false;
  for (std::int64_t k = 0; k < e.by_value_count; ++k)
    for (std::int64_t i = 0; i < c.count; ++i)
      if (c.uids[i] == e.by_value_uids[k]) {
        std::uint64_t now = 0;
        std::memcpy(&now, c.pointers[i], 4);
        if (now != e.by_value_bits[k]) return false;
      }
  return true;
}

// One op: make the pack, execute, check, destroy. The execute's status.
inline cudnnStatus_t run_op(cudnnHandle_t handle, cudnnBackendDescriptor_t plan, const Contents& c, Counts& counts) {
  cudnnBackendDescriptor_t pack = nullptr;
  cudnnStatus_t s = make_pack(g_api, c, &pack);
  if (s == 0) s = g_api.execute(handle, plan, pack);
  if (s == 0 && !ran_as_made(plan, c)) ++counts.mismatches;
  if (s != 0) ++counts.failures;
  if (pack != nullptr && g_api.destroy(pack) != 0) ++counts.failures;
  return s;
}

inline void print_counts(const Counts& counts) {
  print("failures", counts.failures);
  print("mismatches", counts.mismatches);
}

// The stub counters a case prints as deltas from its start.
struct Snapshot {
  StubBackendCounters backend;
  StubCudaGraphCounters driver;
  static Snapshot now() { return {g_api.counters(), stubcuda_graph_counters()}; }
};

inline void print_since(const Snapshot& before, const char* prefix = "") {
  const Snapshot after = Snapshot::now();
  char key[128];
  auto put = [&](const char* name, std::uint64_t a, std::uint64_t b) {
    std::snprintf(key, sizeof key, "%s%s", prefix, name);
    print(key, static_cast<long long>(a - b));
  };
  put("execute_calls", after.backend.execute, before.backend.execute);
  put("runs", after.backend.runs, before.backend.runs);
  put("captured", after.backend.captured, before.backend.captured);
  put("replays", after.backend.replays, before.backend.replays);
  put("stale", after.backend.stale_replays, before.backend.stale_replays);
  put("captures", after.driver.captures_begun, before.driver.captures_begun);
  put("global_captures", after.driver.global_mode_captures, before.driver.global_mode_captures);
  put("launches", after.driver.launches, before.driver.launches);
  put("launches_into_capture", after.driver.launches_into_capture, before.driver.launches_into_capture);
  put("foreign_launches", after.driver.foreign_launches, before.driver.foreign_launches);
  put("bad_launches", after.driver.bad_launches, before.driver.bad_launches);
  put("foreign_destroys", after.driver.foreign_destroys, before.driver.foreign_destroys);
  put("foreign_captures", after.driver.foreign_captures, before.driver.foreign_captures);
  std::snprintf(key, sizeof key, "%slive_graphs", prefix);
  print(key, static_cast<long long>(after.driver.live_execs));
}

// A handle on a stream of its own.
struct Handle {
  cudnnHandle_t handle = nullptr;
  CUstream stream = nullptr;
  void open() {
    if (g_api.create_handle(&handle) != 0) die("cudnnCreate");
    if (cuStreamCreate(&stream, 0) != CUDA_SUCCESS) die("cuStreamCreate");
    if (g_api.set_stream(handle, reinterpret_cast<cudaStream_t>(stream)) != 0) die("cudnnSetStream");
  }
};

// A matmul whose output is scaled by a by-value scalar: C = A x B, D = C * S, S by value (uid 7).
class ScaledMatmulPlan {
 public:
  static constexpr std::int64_t kScaleUid = 7;
  static constexpr std::int64_t kUids[5] = {1, 2, 3, kScaleUid, 8};

  void build(cudnnHandle_t handle) {
    const std::int64_t dims[5][3] = {{1, 64, 16}, {1, 16, 32}, {1, 64, 32}, {1, 1, 1}, {1, 64, 32}};
    cudnnBackendDescriptor_t t[5] = {};
    for (int i = 0; i < 5; ++i) {
      const std::int64_t strides[3] = {dims[i][1] * dims[i][2], dims[i][2], 1};
      const cudnnDataType_t type = CUDNN_DATA_FLOAT;
      const std::int64_t alignment = 16;
      t[i] = make(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
      must(g_api.set(t[i], CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &kUids[i]));
      must(g_api.set(t[i], CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &type));
      must(g_api.set(t[i], CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 3, dims[i]));
      must(g_api.set(t[i], CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 3, strides));
      must(g_api.set(t[i], CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &alignment));
      if (kUids[i] == kScaleUid) {
        const bool by_value = true;
        must(g_api.set(t[i], CUDNN_ATTR_TENSOR_IS_BY_VALUE, CUDNN_TYPE_BOOLEAN, 1, &by_value));
      }
      must(g_api.finalize(t[i]));
    }
    const cudnnDataType_t compute = CUDNN_DATA_FLOAT;
    cudnnBackendDescriptor_t matmul = make(CUDNN_BACKEND_MATMUL_DESCRIPTOR);
    must(g_api.set(matmul, CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &compute));
    must(g_api.finalize(matmul));
    cudnnBackendDescriptor_t mm = make(CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR);
    must(g_api.set(mm, CUDNN_ATTR_OPERATION_MATMUL_ADESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &t[0]));
    must(g_api.set(mm, CUDNN_ATTR_OPERATION_MATMUL_BDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &t[1]));
    must(g_api.set(mm, CUDNN_ATTR_OPERATION_MATMUL_CDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &t[2]));
    must(g_api.set(mm, CUDNN_ATTR_OPERATION_MATMUL_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &matmul));
    must(g_api.finalize(mm));
    const cudnnPointwiseMode_t mul = CUDNN_POINTWISE_MUL;
    cudnnBackendDescriptor_t pw = make(CUDNN_BACKEND_POINTWISE_DESCRIPTOR);
    must(g_api.set(pw, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mul));
    must(g_api.finalize(pw));
    cudnnBackendDescriptor_t scale = make(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR);
    must(g_api.set(scale, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &pw));
    must(g_api.set(scale, CUDNN_ATTR_OPERATION_POINTWISE_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &t[2]));
    must(g_api.set(scale, CUDNN_ATTR_OPERATION_POINTWISE_BDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &t[3]));
    must(g_api.set(scale, CUDNN_ATTR_OPERATION_POINTWISE_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &t[4]));
    must(g_api.finalize(scale));
    cudnnBackendDescriptor_t ops[2] = {mm, scale};
    cudnnBackendDescriptor_t graph = make(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
    must(g_api.set(graph, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle));
    must(g_api.set(graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 2, ops));
    must(g_api.finalize(graph));
    const cudnnBackendHeurMode_t mode = CUDNN_HEUR_MODE_A;
    cudnnBackendDescriptor_t heuristics = make(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
    must(g_api.set(heuristics, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &graph));
    must(g_api.set(heuristics, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode));
    must(g_api.finalize(heuristics));
    cudnnBackendDescriptor_t config = make(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
    std::int64_t returned = 0;
    must(g_api.get(heuristics, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &returned, &config));
    plan_ = make(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
    must(g_api.set(plan_, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle));
    must(g_api.set(plan_, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &config));
    must(g_api.finalize(plan_));
  }
  cudnnBackendDescriptor_t plan() const { return plan_; }

  // A pack of the five tensors, the scale at `scale` (host memory).
  static Contents contents(std::int64_t base, float* scale) {
    Contents c;
    c.count = 5;
    for (int i = 0; i < 5; ++i) {
      c.uids[i] = kUids[i];
      c.pointers[i] = kUids[i] == kScaleUid ? static_cast<void*>(scale) : device_pointer(base * 8 + i);
    }
    c.workspace = reinterpret_cast<void*>(kWorkspaces + base * 0x100000);
    return c;
  }

 private:
  static void must(cudnnStatus_t s) {
    if (s != CUDNN_STATUS_SUCCESS) die("building the scaled plan");
  }
  cudnnBackendDescriptor_t make(cudnnBackendDescriptorType_t type) {
    cudnnBackendDescriptor_t d = nullptr;
    must(g_api.create(type, &d));
    return d;
  }
  cudnnBackendDescriptor_t plan_ = nullptr;
};


extern Handle g_main;
extern MatmulPlan g_matmul;

// The cases, each in a file of its topic.
int steady();
int program_capture();
int by_value();
int host_pointer();
int forget();
int fork_child();
int other_context();
int failures();
int threads();
int ab_blocks();
int miss_heavy_fresh();
int miss_heavy_cycling();
int relocation();
int fresh_packs();
int relocation_by_value();

}  // namespace graph_scenario
