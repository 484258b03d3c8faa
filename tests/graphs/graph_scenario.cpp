// A graph-replay scenario program: variant packs made the way PyTorch makes them (create, set,
// finalize, execute, destroy) on the stub libcudnn, with the stub libcuda loaded (linked), so that
// the shim can capture steady executes and launch them as graphs. It prints key=value lines for
// graphs_test.cpp to judge, and runs with or without the shim.
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

#pragma GCC diagnostic ignored "-Wdeprecated-declarations"  // cudnnBackendInitialize

// The shim's feature bits (shim_control.h), repeated: the shim is a library under test.
#define GRAPHS_FEATURE_SET_STREAM 1u
#define GRAPHS_FEATURE_VARIANT_PACKS 2u
#define GRAPHS_FEATURE_GRAPHS 4u
#if __has_include("shim/include/cudnn_fastpath/shim_control.h")
#include "shim/include/cudnn_fastpath/shim_control.h"
static_assert(CUDNN_FASTPATH_FEATURE_GRAPHS == GRAPHS_FEATURE_GRAPHS, "shim_control.h changed a value");
#endif

[[noreturn]] void die(const char* what) {
  std::fprintf(stderr, "graph scenario: %s\n", what);
  std::exit(3);
}

namespace {

constexpr cudnnBackendDescriptorType_t kPack = CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR;
constexpr std::uintptr_t kDevice = 0x7f0000000000, kWorkspaces = 0x7e0000000000;
constexpr std::size_t kDeviceBytes = std::size_t{1} << 36;
const std::int64_t kUids[3] = {1, 2, 3};
const std::int64_t kOtherUids[3] = {4, 5, 6};

PackApi g_api;

#ifdef GRAPH_SCENARIO_LINKED
void load_api(const char*) { g_api = linked_pack_api(); }
#else
// The calls from `functions` (RTLD_DEFAULT, or a handle of libcudnn), the stub's controls from
// `controls`; the one named `around` (if any) with glibc's own dlsym, a lookup no interposer of
// dlsym sees.
void take_api(void* functions, void* controls, const char* around = "") {
  const auto look_up = [around](void* where, const char* name) {
    return std::strcmp(name, around) == 0 ? glibc_dlsym(where, name) : dlsym(where, name);
  };
  const char* missing = nullptr;
  if (!pack_api_from(g_api, look_up, functions, controls, missing)) die(missing);
}

void load_api(const char* mode) {
  if (std::strcmp(mode, "global") == 0) {
    void* cudnn = must_dlopen(STUB_CUDNN_PATH, RTLD_NOW | RTLD_GLOBAL);
    take_api(RTLD_DEFAULT, cudnn);
  } else if (std::strcmp(mode, "dlsym") == 0 || std::strcmp(mode, "dlsym_around") == 0) {
    void* cudnn = must_dlopen(STUB_CUDNN_PATH, RTLD_NOW | RTLD_LOCAL);
    const char* around = std::getenv("GRAPH_SCENARIO_AROUND");
    take_api(cudnn, cudnn, std::strcmp(mode, "dlsym") == 0 ? "" : around ? around : "cudnnBackendExecute");
  } else if (std::strcmp(mode, "dlsym_library") == 0) {
    void* framework = must_dlopen(DLSYM_FRAMEWORK_PATH, RTLD_NOW | RTLD_LOCAL);
    const PackApi* (*api)() = nullptr;
    must_dlsym(api, framework, "pack_framework_api");
    g_api = *api();
  } else if (std::strcmp(mode, "local") == 0) {
    void* framework = must_dlopen(FRAMEWORK_PATH, RTLD_NOW | RTLD_LOCAL);
    const PackApi* (*api)() = nullptr;
    must_dlsym(api, framework, "pack_framework_api");
    g_api = *api();
  } else {
    die("unknown mode");
  }
}
#endif

// The stub's per-thread last execution, and its cudnnGetStream (not the shim's: the stub's own
// view of the handle), found in whichever libcudnn the api reaches.
StubBackendExecution (*g_thread_last)() = nullptr;
cudnnStatus_t (*g_get_stream)(cudnnHandle_t, cudaStream_t*) = nullptr;

void find_stub_functions() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(g_api.counters), &info) == 0) die("dladdr");
  void* cudnn = must_dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD);
  must_dlsym(g_thread_last, cudnn, "stubbackend_thread_last_execution");
  must_dlsym(g_get_stream, cudnn, "cudnnGetStream");
}

void print(const char* key, long long value) { std::printf("%s=%lld\n", key, value); }

unsigned (*g_set_features)(unsigned) = nullptr;

// What a pack holds; pointers in the stub's device memory unless a case says otherwise.
struct Contents {
  std::int64_t count = 3;
  std::int64_t uids[5] = {};
  void* pointers[5] = {};
  void* workspace = nullptr;
};

void* device_pointer(std::int64_t n) { return reinterpret_cast<void*>(kDevice + n * 0x1000); }

Contents contents(std::int64_t base, const std::int64_t* uids = kUids) {
  Contents c;
  for (int i = 0; i < 3; ++i) {
    c.uids[i] = uids[i];
    c.pointers[i] = device_pointer(base * 8 + i);
  }
  c.workspace = reinterpret_cast<void*>(kWorkspaces + base * 0x100000);
  return c;
}

cudnnStatus_t make_pack(const Contents& c, cudnnBackendDescriptor_t* pack) {
  *pack = nullptr;
  cudnnStatus_t s = g_api.create(kPack, pack);
  if (s == 0) s = g_api.set(*pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, c.count, c.uids);
  if (s == 0) s = g_api.set(*pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, c.count, c.pointers);
  if (s == 0) s = g_api.set(*pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &c.workspace);
  if (s == 0) s = g_api.finalize(*pack);
  return s;
}

struct Counts {
  long long failures = 0;
  long long mismatches = 0;
};

// Whether the stub ran `plan` with exactly `c` on this thread last; by-value tensors (the scaled
// plan's uid 4) with the bytes at their pointers now.
bool ran_as_made(cudnnBackendDescriptor_t plan, const Contents& c) {
  const StubBackendExecution e = g_thread_last();
  if (e.plan != plan || e.tensor_count != c.count || e.workspace != c.workspace) return false;
  for (std::int64_t i = 0; i < c.count; ++i)
    if (e.uids[i] != c.uids[i] || e.pointers[i] != c.pointers[i]) return false;
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
cudnnStatus_t run_op(cudnnHandle_t handle, cudnnBackendDescriptor_t plan, const Contents& c, Counts& counts) {
  cudnnBackendDescriptor_t pack = nullptr;
  cudnnStatus_t s = make_pack(c, &pack);
  if (s == 0) s = g_api.execute(handle, plan, pack);
  if (s == 0 && !ran_as_made(plan, c)) ++counts.mismatches;
  if (s != 0) ++counts.failures;
  if (pack != nullptr && g_api.destroy(pack) != 0) ++counts.failures;
  return s;
}

void print_counts(const Counts& counts) {
  print("failures", counts.failures);
  print("mismatches", counts.mismatches);
}

// The stub counters a case prints as deltas from its start.
struct Snapshot {
  StubBackendCounters backend;
  StubCudaGraphCounters driver;
  static Snapshot now() { return {g_api.counters(), stubcuda_graph_counters()}; }
};

void print_since(const Snapshot& before, const char* prefix = "") {
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

Handle g_main;
MatmulPlan g_matmul;

// ---- the cases ---------------------------------------------------------------------------------

// 100 ops with the same contents on the handle's own stream.
int steady() {
  const Contents c = contents(1);
  const std::uint64_t streams_before = stubcuda_graph_counters().streams_created;
  const Snapshot before = Snapshot::now();
  Counts counts;
  long long launched_on_program_stream = 1;
  for (int i = 0; i < 100; ++i) {
    run_op(g_main.handle, g_matmul.plan(), c, counts);
    if (i >= 2 && stubcuda_graph_counters().launches > before.driver.launches &&
        stubcuda_last_launch_stream() != g_main.stream)
      launched_on_program_stream = 0;
  }
  print("ops", 100);
  print_counts(counts);
  print_since(before);
  print("launched_on_program_stream", launched_on_program_stream);
  // The stub's own view of the handle's stream after the capture: the program's again.
  cudaStream_t held = nullptr;
  if (g_get_stream(g_main.handle, &held) != 0) die("cudnnGetStream");
  print("handle_holds_program_stream", held == reinterpret_cast<cudaStream_t>(g_main.stream));
  print("private_streams", static_cast<long long>(stubcuda_graph_counters().streams_created - streams_before));
  // What reached cuDNN in the whole run: the statistics must not change it.
  print("real_packs", static_cast<long long>(g_api.created(kPack)));
  print("real_set_stream", static_cast<long long>(g_api.cudnn_counters().set_stream));
  return 0;
}

// The in-process A/B's blocks: every feature off for five ops, then on for five, three times. After
// each switch back on, an op runs directly twice and is captured at its third execute, so the
// fourth and fifth (the A/B's timed iterations) are plain launches.
int ab_blocks() {
  if (g_set_features == nullptr) die("ab_blocks runs under the shim");
  const Contents c = contents(1);
  Counts counts;
  for (int round = 0; round < 3; ++round) {
    g_set_features(0);
    for (int i = 0; i < 5; ++i) run_op(g_main.handle, g_matmul.plan(), c, counts);
    g_set_features(7u);
    char prefix[32];
    for (int i = 0; i < 5; ++i) {
      const Snapshot before = Snapshot::now();
      run_op(g_main.handle, g_matmul.plan(), c, counts);
      std::snprintf(prefix, sizeof prefix, "round%d.op%d.", round, i);
      print_since(before, prefix);
    }
  }
  print_counts(counts);
  return 0;
}

// The program captures its own CUDA graph on the handle's stream, after the shim made a graph.
int program_capture() {
  const Contents c = contents(2);
  Counts counts;
  for (int i = 0; i < 10; ++i) run_op(g_main.handle, g_matmul.plan(), c, counts);
  const Snapshot before = Snapshot::now();
  // One pack for the whole capture, alive until the program's graph ran (as a program keeps the
  // memory its graph reads).
  cudnnBackendDescriptor_t pack = nullptr;
  if (make_pack(c, &pack) != 0) die("pack");
  if (cuStreamBeginCapture_v2(g_main.stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL) != CUDA_SUCCESS) die("begin");
  for (int i = 0; i < 5; ++i)
    if (g_api.execute(g_main.handle, g_matmul.plan(), pack) != 0) ++counts.failures;
  CUgraph graph = nullptr;
  if (cuStreamEndCapture(g_main.stream, &graph) != CUDA_SUCCESS) die("end");
  print_since(before, "during.");
  CUgraphExec exec = nullptr;
  if (cuGraphInstantiateWithFlags(&exec, graph, 0) != CUDA_SUCCESS) die("instantiate");
  const Snapshot launched = Snapshot::now();
  if (cuGraphLaunch(exec, g_main.stream) != CUDA_SUCCESS) die("launch");
  print_since(launched, "program_launch.");
  if (!ran_as_made(g_matmul.plan(), c)) ++counts.mismatches;
  cuGraphExecDestroy(exec);
  cuGraphDestroy(graph);
  g_api.destroy(pack);
  print_counts(counts);
  return 0;
}

// A by-value scale: 10 ops at 1.5, 10 at 2.5, then 40 alternating.
int by_value() {
  ScaledMatmulPlan plan;
  plan.build(g_main.handle);
  static float scale = 1.5f;
  const Contents c = ScaledMatmulPlan::contents(3, &scale);
  const Snapshot before = Snapshot::now();
  Counts counts;
  for (int i = 0; i < 10; ++i) run_op(g_main.handle, plan.plan(), c, counts);
  scale = 2.5f;
  for (int i = 0; i < 10; ++i) run_op(g_main.handle, plan.plan(), c, counts);
  print_since(before, "steady.");
  for (int i = 0; i < 40; ++i) {
    scale = i % 2 ? 1.5f : 2.5f;
    run_op(g_main.handle, plan.plan(), c, counts);
  }
  print_since(before);
  print_counts(counts);
  return 0;
}

// A host pointer that is no by-value tensor: never captured.
int host_pointer() {
  static float host_b[16 * 32];
  Contents c = contents(4);
  c.pointers[1] = host_b;
  const Snapshot before = Snapshot::now();
  Counts counts;
  for (int i = 0; i < 20; ++i) run_op(g_main.handle, g_matmul.plan(), c, counts);
  print_since(before);
  print_counts(counts);
  return 0;
}

// The graphs of a destroyed handle, a destroyed plan, an evicted pack, and with the feature off.
int forget() {
  Counts counts;
  const Contents c = contents(5);
  {  // the handle: destroyed, then a new one (the stub hands out the same address)
    Handle h;
    h.open();
    for (int i = 0; i < 5; ++i) run_op(h.handle, g_matmul.plan(), c, counts);
    print("handle.graphs_before", static_cast<long long>(stubcuda_graph_counters().live_execs));
    const cudnnHandle_t old = h.handle;
    g_api.destroy_handle(h.handle);
    print("handle.graphs_after", static_cast<long long>(stubcuda_graph_counters().live_execs));
    if (g_api.create_handle(&h.handle) != 0) die("cudnnCreate");
    print("handle.same_address", h.handle == old);
    g_api.set_stream(h.handle, reinterpret_cast<cudaStream_t>(h.stream));
    const Snapshot before = Snapshot::now();
    for (int i = 0; i < 5; ++i) run_op(h.handle, g_matmul.plan(), c, counts);
    print_since(before, "handle.");
    g_api.destroy_handle(h.handle);
  }
  {  // the plan
    MatmulPlan plan;
    if (plan.build(g_api, g_main.handle, kOtherUids) != 0) die("plan");
    const Contents o = contents(6, kOtherUids);
    for (int i = 0; i < 5; ++i) run_op(g_main.handle, plan.plan(), o, counts);
    print("plan.graphs_before", static_cast<long long>(stubcuda_graph_counters().live_execs));
    plan.release();
    print("plan.graphs_after", static_cast<long long>(stubcuda_graph_counters().live_execs));
    const Snapshot before = Snapshot::now();
    if (plan.build(g_api, g_main.handle, kOtherUids) != 0) die("plan again");
    for (int i = 0; i < 5; ++i) run_op(g_main.handle, plan.plan(), o, counts);
    print_since(before, "plan.");
    plan.release();
  }
  {  // the pack: 2000 other packs, finalized and never executed, evict it from the pack cache
    for (int i = 0; i < 5; ++i) run_op(g_main.handle, g_matmul.plan(), c, counts);
    print("pack.graphs_before", static_cast<long long>(stubcuda_graph_counters().live_execs));
    for (int i = 0; i < 2000; ++i) {
      cudnnBackendDescriptor_t pack = nullptr;
      if (make_pack(contents(100 + i), &pack) != 0) ++counts.failures;
      g_api.destroy(pack);
    }
    print("pack.graphs_after", static_cast<long long>(stubcuda_graph_counters().live_execs));
    const Snapshot before = Snapshot::now();
    for (int i = 0; i < 5; ++i) run_op(g_main.handle, g_matmul.plan(), c, counts);
    print_since(before, "pack.");
  }
  if (g_set_features != nullptr) {  // the switch
    print("switch.graphs_before", static_cast<long long>(stubcuda_graph_counters().live_execs));
    print("switch.features_off", g_set_features(GRAPHS_FEATURE_SET_STREAM | GRAPHS_FEATURE_VARIANT_PACKS));
    print("switch.graphs_after", static_cast<long long>(stubcuda_graph_counters().live_execs));
    Snapshot before = Snapshot::now();
    for (int i = 0; i < 5; ++i) run_op(g_main.handle, g_matmul.plan(), c, counts);
    print_since(before, "switch.off.");
    print("switch.features_on", g_set_features(7u));
    before = Snapshot::now();
    for (int i = 0; i < 5; ++i) run_op(g_main.handle, g_matmul.plan(), c, counts);
    print_since(before, "switch.on.");
    print("switch.graphs_only", g_set_features(GRAPHS_FEATURE_GRAPHS | GRAPHS_FEATURE_SET_STREAM));
    g_set_features(7u);
  }
  print_counts(counts);
  return 0;
}

// fork: the child has none of the parent's graphs.
int fork_child() {
  const Contents c = contents(7);
  Counts counts;
  for (int i = 0; i < 5; ++i) run_op(g_main.handle, g_matmul.plan(), c, counts);
  print("parent_graphs", static_cast<long long>(stubcuda_graph_counters().live_execs));
  std::fflush(stdout);
  const pid_t child = fork();
  if (child == 0) {
    // The stub libcudnn refuses the parent's handles in a child, as the real one does: a new one.
    Handle h;
    h.open();
    const Snapshot before = Snapshot::now();
    Counts child_counts;
    for (int i = 0; i < 5; ++i) run_op(h.handle, g_matmul.plan(), c, child_counts);
    print_since(before, "child.");
    // Graphs off: the shim destroys every graph it holds, none of which may be the parent's.
    if (g_set_features != nullptr) g_set_features(GRAPHS_FEATURE_SET_STREAM | GRAPHS_FEATURE_VARIANT_PACKS);
    print_since(before, "child_after_switch.");
    print("child.failures", child_counts.failures);
    print("child.mismatches", child_counts.mismatches);
    std::fflush(stdout);
    _exit(0);
  }
  int status = 0;
  waitpid(child, &status, 0);
  print("child_exit", WIFEXITED(status) ? WEXITSTATUS(status) : 99);
  print_counts(counts);
  return 0;
}

// A stream of another context, and one of a green context.
int other_context() {
  const Contents c = contents(8);
  Counts counts;
  for (int i = 0; i < 5; ++i) run_op(g_main.handle, g_matmul.plan(), c, counts);
  CUstream other = nullptr, green = nullptr;
  if (cuStreamCreate(&other, 0) != CUDA_SUCCESS || cuStreamCreate(&green, 0) != CUDA_SUCCESS) die("streams");
  stubcuda_set_stream_context(other, reinterpret_cast<CUcontext>(std::uintptr_t{0xC0D0000}), 0);
  g_api.set_stream(g_main.handle, reinterpret_cast<cudaStream_t>(other));
  Snapshot before = Snapshot::now();
  for (int i = 0; i < 5; ++i) run_op(g_main.handle, g_matmul.plan(), c, counts);
  print_since(before, "other.");
  g_api.set_stream(g_main.handle, reinterpret_cast<cudaStream_t>(g_main.stream));
  before = Snapshot::now();
  for (int i = 0; i < 5; ++i) run_op(g_main.handle, g_matmul.plan(), c, counts);
  print_since(before, "back.");
  Handle h;
  h.open();
  stubcuda_set_stream_context(h.stream, reinterpret_cast<CUcontext>(std::uintptr_t{0xC0E0000}), 1);
  before = Snapshot::now();
  for (int i = 0; i < 10; ++i) run_op(h.handle, g_matmul.plan(), c, counts);
  print_since(before, "green.");
  print_counts(counts);
  return 0;
}

// A failed capture, a failed instantiation, a failed launch.
int failures() {
  Counts counts;
  stubcuda_fail_captures(1);
  Snapshot before = Snapshot::now();
  for (int i = 0; i < 10; ++i) run_op(g_main.handle, g_matmul.plan(), contents(9), counts);
  print_since(before, "capture.");
  stubcuda_fail_instantiations(1);
  before = Snapshot::now();
  for (int i = 0; i < 10; ++i) run_op(g_main.handle, g_matmul.plan(), contents(10), counts);
  print_since(before, "instantiate.");
  const Contents c = contents(11);
  for (int i = 0; i < 5; ++i) run_op(g_main.handle, g_matmul.plan(), c, counts);
  stubcuda_fail_launches(CUDA_ERROR_LAUNCH_FAILED);
  Counts failing;
  before = Snapshot::now();
  print("launch.status", run_op(g_main.handle, g_matmul.plan(), c, failing));
  stubcuda_fail_launches(CUDA_SUCCESS);
  print_since(before, "launch.");
  print_counts(counts);
  return 0;
}

// Threads with their own handles and streams, one plan; some share contents.
int threads() {
  constexpr int kThreads = 4, kOps = 200;
  Counts per_thread[kThreads];
  Handle handles[kThreads];
  for (Handle& h : handles) h.open();
  const Snapshot before = Snapshot::now();
  std::vector<std::thread> workers;
  for (int t = 0; t < kThreads; ++t)
    workers.emplace_back([t, &per_thread, &handles] {
      const Contents c = contents(20 + t % 2);
      for (int i = 0; i < kOps; ++i) run_op(handles[t].handle, g_matmul.plan(), c, per_thread[t]);
    });
  for (std::thread& w : workers) w.join();
  Counts total;
  for (const Counts& c : per_thread) {
    total.failures += c.failures;
    total.mismatches += c.mismatches;
  }
  print("ops", kThreads * kOps);
  print_since(before);
  print_counts(total);
  return 0;
}

struct Case {
  const char* name;
  int (*run)();
};
constexpr Case kCases[] = {
    {"steady", steady},         {"program_capture", program_capture}, {"by_value", by_value},
    {"host_pointer", host_pointer}, {"forget", forget},               {"fork", fork_child},
    {"other_context", other_context}, {"failures", failures},         {"threads", threads},
    {"ab_blocks", ab_blocks},
};

}  // namespace

int main(int argc, char** argv) {
#ifdef GRAPH_SCENARIO_LINKED
  if (argc != 2) die("usage: graph_scenario_linked CASE");
  const char* mode = "linked";
  const char* name = argv[1];
#else
  if (argc != 3) die("usage: graph_scenario_dlopen MODE CASE");
  const char* mode = argv[1];
  const char* name = argv[2];
#endif
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  if (const char* take = std::getenv("GRAPH_SCENARIO_DLSYM_STREAM_DESTROY"); take && std::strcmp(take, "1") == 0) {
    void* driver = must_dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    CUresult (*destroy)(CUstream) = nullptr;
    must_dlsym(destroy, driver, "cuStreamDestroy_v2");
  }
  load_api(mode);
  find_stub_functions();
  g_set_features = reinterpret_cast<unsigned (*)(unsigned)>(dlsym(RTLD_DEFAULT, "cudnn_fastpath_set_features"));
  stubcuda_add_device_memory(kDevice, kDeviceBytes);
  stubcuda_add_device_memory(kWorkspaces, kDeviceBytes);
  g_main.open();
  if (g_matmul.build(g_api, g_main.handle, kUids) != 0) die("cannot build the plan");
  for (const Case& c : kCases)
    if (std::strcmp(c.name, name) == 0) return c.run();
  die("unknown case");
}
