// A variant-pack scenario program: builds a matmul execution plan on the stub libcudnn with raw
// backend calls, then makes variant packs the way PyTorch does for each op (create, set
// UNIQUE_IDS, set DATA_POINTERS, set WORKSPACE, finalize, execute, destroy) and prints what
// happened as key=value lines, for packs_test.cpp to judge. It runs with or without the shim.
//
//   pack_scenario_linked  CASE        the program links libcudnn (the stub) directly
//   pack_scenario_dlopen  MODE CASE   libcudnn is reached after a dlopen; MODE is one of
//       global    dlopen(libcudnn, RTLD_GLOBAL), calls through the global scope
//       local     dlopen(framework, RTLD_LOCAL), the framework links libcudnn (PyTorch's case)
//       local_lazy  the same with RTLD_LAZY instead of RTLD_NOW
//
// Common keys: "real_packs" is how many variant packs the stub created during the case's loop,
// "failures" how many calls that should have succeeded did not. Keys "status.CASE.NN_STEP" are
// the statuses of individual calls, which the tests compare between runs with and without the
// shim.
#include <dlfcn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "tests/support/must_load.h"
#include "tests/packs/pack_api.h"

// The shim's public run-time switch. The scenario does not link the shim: it finds the functions
// with dlsym. When the header exists, its values must be the ones the tests use.
#define PACKS_FEATURE_SET_STREAM 1u
#define PACKS_FEATURE_VARIANT_PACKS 2u
#if __has_include("shim/include/cudnn_fastpath/shim_control.h")
#include "shim/include/cudnn_fastpath/shim_control.h"
static_assert(CUDNN_FASTPATH_FEATURE_SET_STREAM == PACKS_FEATURE_SET_STREAM, "shim_control.h changed a value");
static_assert(CUDNN_FASTPATH_FEATURE_VARIANT_PACKS == PACKS_FEATURE_VARIANT_PACKS, "shim_control.h changed a value");
static_assert(sizeof(decltype(cudnn_fastpath_features())) == sizeof(unsigned), "features are an unsigned");
static_assert(sizeof(decltype(cudnn_fastpath_set_features(0u))) == sizeof(unsigned), "features are an unsigned");
#endif

#pragma GCC diagnostic ignored "-Wdeprecated-declarations"  // cudnnBackendInitialize

[[noreturn]] void die(const char* what) {
  std::fprintf(stderr, "pack scenario: %s\n", what);
  std::exit(3);
}

namespace {

constexpr cudnnBackendDescriptorType_t kPack = CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR;
constexpr int kMaxTensors = 40;
// The most tensors a proxy records (packs/pack_contents.h's kMaxTensors); the shim is a separate
// library under test, so the number is repeated here.
constexpr int kProxiedTensors = 28;
const std::int64_t kUids[3] = {1, 2, 3};       // the tensors of the first plan
const std::int64_t kOtherUids[3] = {4, 5, 6};  // and of the second

PackApi g_api;
cudnnHandle_t g_handle = nullptr;
MatmulPlan g_matmul;


#ifdef PACK_SCENARIO_LINKED
void load_api(const char*) { g_api = linked_pack_api(); }
#else
void load_api(const char* mode) {
  if (std::strcmp(mode, "global") == 0) {
    void* cudnn = must_dlopen(STUB_CUDNN_PATH, RTLD_NOW | RTLD_GLOBAL);
    must_dlsym(g_api.create_handle, RTLD_DEFAULT, "cudnnCreate");
    must_dlsym(g_api.destroy_handle, RTLD_DEFAULT, "cudnnDestroy");
    must_dlsym(g_api.set_stream, RTLD_DEFAULT, "cudnnSetStream");
    must_dlsym(g_api.create, RTLD_DEFAULT, "cudnnBackendCreateDescriptor");
    must_dlsym(g_api.destroy, RTLD_DEFAULT, "cudnnBackendDestroyDescriptor");
    must_dlsym(g_api.set, RTLD_DEFAULT, "cudnnBackendSetAttribute");
    must_dlsym(g_api.get, RTLD_DEFAULT, "cudnnBackendGetAttribute");
    must_dlsym(g_api.finalize, RTLD_DEFAULT, "cudnnBackendFinalize");
    must_dlsym(g_api.initialize, RTLD_DEFAULT, "cudnnBackendInitialize");
    must_dlsym(g_api.execute, RTLD_DEFAULT, "cudnnBackendExecute");
    must_dlsym(g_api.populate_cuda_graph, RTLD_DEFAULT, "cudnnBackendPopulateCudaGraph");
    must_dlsym(g_api.update_cuda_graph, RTLD_DEFAULT, "cudnnBackendUpdateCudaGraph");
    must_dlsym(g_api.created, cudnn, "stubbackend_created");
    must_dlsym(g_api.live, cudnn, "stubbackend_live");
    must_dlsym(g_api.counters, cudnn, "stubbackend_counters");
    must_dlsym(g_api.cudnn_counters, cudnn, "stubcudnn_counters");
    must_dlsym(g_api.last_execution, cudnn, "stubbackend_last_execution");
    must_dlsym(g_api.last_call, cudnn, "stubbackend_last_call");
    must_dlsym(g_api.create_pack_internally, cudnn, "stubbackend_create_pack_internally");
    must_dlsym(g_api.set_engine_workspace, cudnn, "stubbackend_set_engine_workspace");
  } else if (std::strcmp(mode, "local") == 0 || std::strcmp(mode, "local_lazy") == 0) {
    // local_lazy: calls bound at their first call, as without RTLD_NOW (shim_opened_later).
    const int binding = std::strcmp(mode, "local") == 0 ? RTLD_NOW : RTLD_LAZY;
    void* framework = must_dlopen(FRAMEWORK_PATH, binding | RTLD_LOCAL);
    const PackApi* (*api)() = nullptr;
    must_dlsym(api, framework, "pack_framework_api");
    g_api = *api();
  } else {
    die("unknown mode");
  }
}
#endif

void print(const char* key, long long value) { std::printf("%s=%lld\n", key, value); }

void* fake_pointer(std::int64_t n) { return reinterpret_cast<void*>(0x7f0000000000 + n * 0x1000); }
void* fake_workspace(std::int64_t n) { return reinterpret_cast<void*>(0x7e0000000000 + n * 0x100000); }

// What a variant pack holds.
struct Contents {
  std::int64_t count = 3;
  std::int64_t uids[kMaxTensors] = {};
  void* pointers[kMaxTensors] = {};
  void* workspace = nullptr;
};

// The tensors `uids` (three) at pointers made from `base`, with workspace `base`.
Contents contents(std::int64_t base, const std::int64_t* uids = kUids) {
  Contents c;
  for (int i = 0; i < 3; ++i) {
    c.uids[i] = uids[i];
    c.pointers[i] = fake_pointer(base * 8 + i);
  }
  c.workspace = fake_workspace(base);
  return c;
}

// `count` tensors (uids 1..count, the plan's three among them) for the tensor-limit cases.
Contents many_tensors(std::int64_t count, std::int64_t base) {
  Contents c;
  c.count = count;
  for (std::int64_t i = 0; i < count; ++i) {
    c.uids[i] = i + 1;
    c.pointers[i] = fake_pointer(base * 64 + i);
  }
  c.workspace = fake_workspace(base);
  return c;
}

std::uint64_t packs_created() { return g_api.created(kPack); }

// Did a recorded call run `plan` with exactly `c`?
bool ran_with(const StubBackendExecution& e, cudnnBackendDescriptor_t plan, const Contents& c) {
  const std::int64_t recorded = c.count < 16 ? c.count : 16;
  if (e.plan != plan || e.tensor_count != recorded || e.workspace != c.workspace) return false;
  for (std::int64_t i = 0; i < recorded; ++i)
    if (e.uids[i] != c.uids[i] || e.pointers[i] != c.pointers[i]) return false;
  return true;
}

// create, set UNIQUE_IDS, set DATA_POINTERS, set WORKSPACE, finalize: the first failure, if any.
cudnnStatus_t make_pack(const Contents& c, cudnnBackendDescriptor_t* pack) {
  *pack = nullptr;
  cudnnStatus_t s = g_api.create(kPack, pack);
  if (s == 0) s = g_api.set(*pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, c.count, c.uids);
  if (s == 0) s = g_api.set(*pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, c.count, c.pointers);
  if (s == 0) s = g_api.set(*pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &c.workspace);
  if (s == 0) s = g_api.finalize(*pack);
  return s;
}

// One op as PyTorch makes it: make the pack, execute, destroy. Counts failed calls in
// `failures` and, when `checked`, executes the stub did not record with `c` in `mismatches`.
struct OpCounts {
  long long failures = 0;
  long long mismatches = 0;
};
void run_op(cudnnHandle_t handle, cudnnBackendDescriptor_t plan, const Contents& c, OpCounts& counts,
            bool checked = true) {
  cudnnBackendDescriptor_t pack = nullptr;
  cudnnStatus_t s = make_pack(c, &pack);
  if (s == 0) s = g_api.execute(handle, plan, pack);
  if (s == 0 && checked && !ran_with(g_api.last_execution(), plan, c)) ++counts.mismatches;
  if (s != 0) ++counts.failures;
  if (pack != nullptr && g_api.destroy(pack) != 0) ++counts.failures;
}

void print_counts(const OpCounts& counts) {
  print("failures", counts.failures);
  print("mismatches", counts.mismatches);
}

// ---- the cases --------------------------------------------------------------------------------

// 1000 ops with the same contents. Also: the same stream set 100 times (the other feature).
int steady() {
  const std::uint64_t sets_before = g_api.cudnn_counters().set_stream;
  const auto stream = reinterpret_cast<cudaStream_t>(std::uintptr_t{0x5100});
  for (int i = 0; i < 100; ++i) g_api.set_stream(g_handle, stream);
  print("real_set_stream", static_cast<long long>(g_api.cudnn_counters().set_stream - sets_before));

  const Contents c = contents(1);
  const std::uint64_t before = packs_created();
  const std::uint64_t executes_before = g_api.counters().execute;
  OpCounts counts;
  long long executed_callers_pack = 0, last_matches = 0, created_at_create = 0;
  for (int i = 0; i < 1000; ++i) {
    cudnnBackendDescriptor_t pack = nullptr;
    const std::uint64_t at_create = packs_created();
    cudnnStatus_t s = g_api.create(kPack, &pack);
    if (i == 0) created_at_create = static_cast<long long>(packs_created() - at_create);
    if (s == 0) s = g_api.set(pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, 3, c.uids);
    if (s == 0) s = g_api.set(pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, 3, c.pointers);
    if (s == 0) s = g_api.set(pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &c.workspace);
    if (s == 0) s = g_api.finalize(pack);
    if (s == 0) s = g_api.execute(g_handle, g_matmul.plan(), pack);
    if (s == 0) {
      const StubBackendExecution e = g_api.last_execution();
      if (!ran_with(e, g_matmul.plan(), c) || e.handle != g_handle) ++counts.mismatches;
      if (i == 999) {
        last_matches = ran_with(e, g_matmul.plan(), c) && e.handle == g_handle;
        executed_callers_pack = e.variant_pack == pack;
      }
    }
    if (s != 0) ++counts.failures;
    if (g_api.destroy(pack) != 0) ++counts.failures;
  }
  print("ops", 1000);
  print_counts(counts);
  print("real_packs", static_cast<long long>(packs_created() - before));
  print("created_at_create", created_at_create);
  print("stub_executes", static_cast<long long>(g_api.counters().execute - executes_before));
  print("last_matches", last_matches);
  print("executed_callers_pack", executed_callers_pack);
  print("live_packs", static_cast<long long>(g_api.live(kPack)));
  return 0;
}

// A changed pointer, or workspace, is another pack; contents seen before are not.
int pointer_change() {
  const Contents a = contents(1), b = contents(2), c = contents(3);
  Contents c_other_workspace = c;
  c_other_workspace.workspace = fake_workspace(99);
  const std::uint64_t before = packs_created();
  OpCounts counts;
  for (int i = 0; i < 100; ++i) run_op(g_handle, g_matmul.plan(), i % 2 ? b : a, counts);
  print("real_after_alternating", static_cast<long long>(packs_created() - before));
  for (int i = 0; i < 100; ++i) run_op(g_handle, g_matmul.plan(), c, counts);
  print("real_after_third", static_cast<long long>(packs_created() - before));
  for (int i = 0; i < 100; ++i) run_op(g_handle, g_matmul.plan(), c_other_workspace, counts);
  print("real_after_workspace", static_cast<long long>(packs_created() - before));
  for (int i = 0; i < 100; ++i) run_op(g_handle, g_matmul.plan(), a, counts);
  print("real_after_back_to_first", static_cast<long long>(packs_created() - before));
  print_counts(counts);
  return 0;
}

// The arrays handed to SetAttribute are the caller's: changed after the call, they must not change
// the pack (cuDNN copies them).
int arrays_copied() {
  const Contents original = contents(5);
  const std::uint64_t before = packs_created();
  OpCounts counts;
  long long as_set = 0;
  for (int i = 0; i < 2; ++i) {
    Contents scratch = original;
    cudnnBackendDescriptor_t pack = nullptr;
    cudnnStatus_t s = g_api.create(kPack, &pack);
    if (s == 0) s = g_api.set(pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, 3, scratch.uids);
    if (s == 0) s = g_api.set(pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, 3, scratch.pointers);
    if (s == 0) s = g_api.set(pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &scratch.workspace);
    // Scribbled over before the finalize, as a caller reusing a buffer would.
    for (int t = 0; t < 3; ++t) {
      scratch.uids[t] = 77 + t;
      scratch.pointers[t] = nullptr;
    }
    scratch.workspace = nullptr;
    if (s == 0) s = g_api.finalize(pack);
    if (s == 0) s = g_api.execute(g_handle, g_matmul.plan(), pack);
    if (s == 0) as_set += ran_with(g_api.last_execution(), g_matmul.plan(), original);
    if (s != 0) ++counts.failures;
    if (g_api.destroy(pack) != 0) ++counts.failures;
  }
  print("executed_as_set", as_set);
  print("real_packs", static_cast<long long>(packs_created() - before));
  print_counts(counts);
  return 0;
}

// The packs of two plans (different tensors, different pointers), op after op.
int two_plans() {
  MatmulPlan second;
  if (second.build(g_api, g_handle, kOtherUids) != 0) die("cannot build the second plan");
  const Contents first_contents = contents(1), second_contents = contents(2, kOtherUids);
  const std::uint64_t before = packs_created();
  OpCounts counts;
  for (int i = 0; i < 1000; ++i) {
    if (i % 2 == 0) run_op(g_handle, g_matmul.plan(), first_contents, counts);
    else run_op(g_handle, second.plan(), second_contents, counts);
  }
  print("real_packs", static_cast<long long>(packs_created() - before));
  print_counts(counts);
  second.release();
  return 0;
}

// ---- errors: every call's status, for comparison with a run without the shim --------------

class Steps {
 public:
  explicit Steps(const char* name) : name_(name) {}
  ~Steps() {
    if (pack_ != nullptr) record("destroy", g_api.destroy(pack_));
  }

  cudnnStatus_t record(const char* what, cudnnStatus_t status) {
    std::printf("status.%s.%02d_%s=%d\n", name_, ++step_, what, static_cast<int>(status));
    return status;
  }
  void create() { record("create", g_api.create(kPack, &pack_)); }
  void uids(const Contents& c) {
    record("set_uids", g_api.set(pack_, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, c.count, c.uids));
  }
  void pointers(const Contents& c) {
    record("set_pointers",
           g_api.set(pack_, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, c.count, c.pointers));
  }
  void workspace(const Contents& c) {
    record("set_workspace", g_api.set(pack_, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &c.workspace));
  }
  void all(const Contents& c) {
    uids(c);
    pointers(c);
    workspace(c);
  }
  void finalize() { record("finalize", g_api.finalize(pack_)); }
  // Executes and, when it succeeded, says whether the stub ran with `c`.
  void execute(const Contents& c) {
    if (record("execute", g_api.execute(g_handle, g_matmul.plan(), pack_)) == 0)
      record("executed_as_set", static_cast<cudnnStatus_t>(ran_with(g_api.last_execution(), g_matmul.plan(), c)));
  }
  void get_uids(std::int64_t requested) {
    std::int64_t got[kMaxTensors] = {}, count = -1;
    record("get_uids", g_api.get(pack_, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, requested, &count, got));
    record("get_uids_count", static_cast<cudnnStatus_t>(count));
  }
  void destroy() {
    record("destroy", g_api.destroy(pack_));
    pack_ = nullptr;
  }
  cudnnBackendDescriptor_t pack() const { return pack_; }

 private:
  const char* name_;
  int step_ = 0;
  cudnnBackendDescriptor_t pack_ = nullptr;
};

int errors() {
  const Contents c = contents(1), d = contents(2);
  const std::int32_t narrow_uids[3] = {1, 2, 3};
  const std::int64_t pointer_bits[3] = {0x7f0000001000, 0x7f0000002000, 0x7f0000003000};
  const std::int64_t workspace_bits = 0x7e0000100000;
  void* two_workspaces[2] = {c.workspace, c.workspace};
  const std::int64_t not_a_pack_attribute = 7;
  const auto graph = reinterpret_cast<cudaGraph_t>(std::uintptr_t{0x6000});

  {  // a known attribute with the wrong type, then the op done right
    Steps s("wrong_type_uids");
    s.create();
    s.record("set_uids_int32", g_api.set(s.pack(), CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT32, 3, narrow_uids));
    s.all(c);
    s.finalize();
    s.execute(c);
  }
  {
    Steps s("wrong_type_pointers");
    s.create();
    s.uids(c);
    s.record("set_pointers_int64",
             g_api.set(s.pack(), CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_INT64, 3, pointer_bits));
    s.pointers(c);
    s.workspace(c);
    s.finalize();
    s.execute(c);
  }
  {
    Steps s("wrong_type_workspace");
    s.create();
    s.uids(c);
    s.pointers(c);
    s.record("set_workspace_int64",
             g_api.set(s.pack(), CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_INT64, 1, &workspace_bits));
    s.workspace(c);
    s.finalize();
    s.execute(c);
  }
  {
    Steps s("workspace_count_2");
    s.create();
    s.uids(c);
    s.pointers(c);
    s.record("set_workspace_2",
             g_api.set(s.pack(), CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 2, two_workspaces));
    s.workspace(c);
    s.finalize();
    s.execute(c);
  }
  {  // an attribute of another descriptor type
    Steps s("unknown_attribute");
    s.create();
    s.uids(c);
    s.record("set_tensor_uid",
             g_api.set(s.pack(), CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &not_a_pack_attribute));
    s.pointers(c);
    s.workspace(c);
    s.finalize();
    s.execute(c);
  }
  {
    Steps s("count_mismatch");
    Contents two = c;
    two.count = 2;
    s.create();
    s.uids(c);
    s.pointers(two);
    s.workspace(c);
    s.finalize();
    s.execute(c);
  }
  {
    Steps s("missing_pointers");
    s.create();
    s.uids(c);
    s.workspace(c);
    s.finalize();
    s.execute(c);
  }
  {
    Steps s("missing_uids");
    s.create();
    s.pointers(c);
    s.workspace(c);
    s.finalize();
    s.execute(c);
  }
  {  // the pack keeps what it was finalized with
    Steps s("set_after_finalize");
    s.create();
    s.all(c);
    s.finalize();
    s.pointers(d);
    s.workspace(d);
    s.execute(c);
  }
  {
    Steps s("finalize_twice");
    s.create();
    s.all(c);
    s.finalize();
    s.finalize();
    s.execute(c);
  }
  {
    Steps s("execute_unfinalized");
    s.create();
    s.all(c);
    s.execute(c);
    s.finalize();
    s.execute(c);
  }
  {  // the last value set before the finalize counts
    Steps s("set_twice");
    s.create();
    s.all(d);
    s.all(c);
    s.finalize();
    s.execute(c);
  }
  {
    Steps s("null_array");
    s.create();
    s.record("set_uids_null", g_api.set(s.pack(), CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, 3, nullptr));
    s.record("set_pointers_null",
             g_api.set(s.pack(), CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, 3, nullptr));
    s.all(c);
    s.finalize();
    s.execute(c);
  }
  {
    Steps s("negative_count");
    s.create();
    s.record("set_uids_negative", g_api.set(s.pack(), CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, -1, c.uids));
    s.all(c);
    s.finalize();
    s.execute(c);
  }
  {
    Steps s("empty");
    Contents none = c;
    none.count = 0;
    s.create();
    s.uids(none);
    s.pointers(none);
    s.workspace(c);
    s.finalize();
    s.execute(c);
  }
  {
    Steps s("initialize");
    s.create();
    s.record("initialize", g_api.initialize(s.pack()));
    s.all(c);
    s.finalize();
    s.execute(c);
  }
  {
    Steps s("initialize_after_finalize");
    s.create();
    s.all(c);
    s.finalize();
    s.record("initialize", g_api.initialize(s.pack()));
    s.execute(c);
  }
  {
    Steps s("get_before_finalize");
    s.create();
    s.all(c);
    s.get_uids(3);
    s.finalize();
    s.get_uids(3);
    s.execute(c);
  }
  {
    Steps s("cuda_graph_unfinalized");
    s.create();
    s.all(c);
    s.record("populate", g_api.populate_cuda_graph(g_handle, g_matmul.plan(), s.pack(), graph));
    s.record("update", g_api.update_cuda_graph(g_handle, g_matmul.plan(), s.pack(), graph));
    s.finalize();
    s.record("populate", g_api.populate_cuda_graph(g_handle, g_matmul.plan(), s.pack(), graph));
    s.record("update_without_graph", g_api.update_cuda_graph(g_handle, g_matmul.plan(), s.pack(), nullptr));
  }
  {  // a finalized pack and calls that are wrong for other reasons
    Steps s("wrong_elsewhere");
    s.create();
    s.all(c);
    s.finalize();
    s.record("execute_no_handle", g_api.execute(nullptr, g_matmul.plan(), s.pack()));
    s.record("execute_no_plan", g_api.execute(g_handle, nullptr, s.pack()));
    s.record("execute_pack_as_plan", g_api.execute(g_handle, s.pack(), s.pack()));
    s.execute(c);
  }
  {  // a pack that lacks a pointer the plan needs: finalized, refused at execute
    Steps s("missing_tensor");
    Contents two = c;
    two.count = 2;
    s.create();
    s.all(two);
    s.finalize();
    s.execute(two);
  }
  {
    Steps s("no_pack");
    s.record("execute_null_pack", g_api.execute(g_handle, g_matmul.plan(), nullptr));
    s.record("set_on_null", g_api.set(nullptr, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, 3, c.uids));
    s.record("finalize_null", g_api.finalize(nullptr));
    s.record("create_into_null", g_api.create(kPack, nullptr));
  }
  {  // used after its destroy: the proxy a thread keeps for its next pack is not a live one
    Steps s("used_after_destroy");
    s.create();
    s.all(c);
    s.finalize();
    const cudnnBackendDescriptor_t stale = s.pack();
    s.destroy();
    s.record("stale_execute", g_api.execute(g_handle, g_matmul.plan(), stale));
    s.record("stale_set", g_api.set(stale, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, c.count, c.uids));
    s.record("stale_finalize", g_api.finalize(stale));
    s.record("stale_destroy", g_api.destroy(stale));
  }
  {  // destroyed before any finalize
    Steps s("abandoned");
    s.create();
    s.uids(c);
    s.destroy();
    s.create();
    s.destroy();
  }
  {  // more tensors than a proxy records, then exactly as many
    Steps s("tensors_over_limit");
    const Contents big = many_tensors(kProxiedTensors + 1, 3);
    s.create();
    s.all(big);
    s.finalize();
    s.get_uids(40);
    s.execute(big);
  }
  {
    Steps s("tensors_at_limit");
    const Contents big = many_tensors(kProxiedTensors, 4);
    s.create();
    s.all(big);
    s.finalize();
    s.get_uids(40);
    s.execute(big);
  }
  return 0;
}

// INTERMEDIATES, which the proxy does not record: set first or last, the op still runs and the
// pack holds it. Then plain ops.
int intermediates() {
  const Contents c = contents(1);
  void* scratch = fake_pointer(12345);
  const std::uint64_t before = packs_created();
  OpCounts counts;
  long long read_back = 0;
  for (int i = 0; i < 10; ++i) {
    cudnnBackendDescriptor_t pack = nullptr;
    cudnnStatus_t s = g_api.create(kPack, &pack);
    if (s == 0 && i % 2 == 0)
      s = g_api.set(pack, CUDNN_ATTR_VARIANT_PACK_INTERMEDIATES, CUDNN_TYPE_VOID_PTR, 1, &scratch);
    if (s == 0) s = g_api.set(pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, 3, c.uids);
    if (s == 0) s = g_api.set(pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, 3, c.pointers);
    if (s == 0) s = g_api.set(pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &c.workspace);
    if (s == 0 && i % 2 == 1)
      s = g_api.set(pack, CUDNN_ATTR_VARIANT_PACK_INTERMEDIATES, CUDNN_TYPE_VOID_PTR, 1, &scratch);
    if (s == 0) s = g_api.finalize(pack);
    if (s == 0) s = g_api.execute(g_handle, g_matmul.plan(), pack);
    if (s == 0 && !ran_with(g_api.last_execution(), g_matmul.plan(), c)) ++counts.mismatches;
    void* held = nullptr;
    std::int64_t count = 0;
    if (s == 0) s = g_api.get(pack, CUDNN_ATTR_VARIANT_PACK_INTERMEDIATES, CUDNN_TYPE_VOID_PTR, 1, &count, &held);
    read_back += s == 0 && count == 1 && held == scratch;
    if (s != 0) ++counts.failures;
    if (g_api.destroy(pack) != 0) ++counts.failures;
  }
  print("real_with_intermediates", static_cast<long long>(packs_created() - before));
  print("intermediates_read_back", read_back);
  const std::uint64_t plain_before = packs_created();
  for (int i = 0; i < 10; ++i) run_op(g_handle, g_matmul.plan(), c, counts);
  print("real_plain", static_cast<long long>(packs_created() - plain_before));
  print_counts(counts);
  print("live_packs", static_cast<long long>(g_api.live(kPack)));
  return 0;
}

// GetAttribute of finalized packs (the first a miss, the second a hit) returns what was set.
int get_attribute() {
  const Contents c = contents(1);
  const std::uint64_t before = packs_created();
  OpCounts counts;
  for (int op = 0; op < 2; ++op) {
    Steps s(op == 0 ? "get_first" : "get_second");
    s.create();
    s.all(c);
    s.finalize();
    std::int64_t uids[8] = {}, count = -1;
    void* pointers[8] = {};
    void* workspace = nullptr;
    s.record("get_uids", g_api.get(s.pack(), CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, 8, &count, uids));
    bool right = count == 3;
    s.record("get_pointers",
             g_api.get(s.pack(), CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, 8, &count, pointers));
    right = right && count == 3;
    s.record("get_workspace",
             g_api.get(s.pack(), CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &count, &workspace));
    right = right && count == 1 && workspace == c.workspace;
    for (int i = 0; i < 3; ++i) right = right && uids[i] == c.uids[i] && pointers[i] == c.pointers[i];
    for (int i = 3; i < 8; ++i) right = right && uids[i] == 0 && pointers[i] == nullptr;  // nothing past the count
    std::printf("%s_reads_as_set=%d\n", op == 0 ? "first" : "second", right ? 1 : 0);
    count = -1;
    s.record("get_uids_count_only",
             g_api.get(s.pack(), CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, 0, &count, nullptr));
    s.record("count", static_cast<cudnnStatus_t>(count));
    std::int64_t one = 0;
    s.record("get_uids_one", g_api.get(s.pack(), CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, 1, &count, &one));
    s.record("first_uid", static_cast<cudnnStatus_t>(one));
    std::int32_t narrow[3] = {};
    s.record("get_uids_int32", g_api.get(s.pack(), CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT32, 3, &count, narrow));
    void* none = nullptr;
    s.record("get_unset_intermediates",
             g_api.get(s.pack(), CUDNN_ATTR_VARIANT_PACK_INTERMEDIATES, CUDNN_TYPE_VOID_PTR, 1, &count, &none));
    s.record("get_into_null_count",
             g_api.get(s.pack(), CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, 3, nullptr, uids));
    s.execute(c);
  }
  print("real_packs", static_cast<long long>(packs_created() - before));
  return 0;
}

// cudnnBackendPopulateCudaGraph and cudnnBackendUpdateCudaGraph get a real pack.
int cuda_graph() {
  const auto graph = reinterpret_cast<cudaGraph_t>(std::uintptr_t{0x6000});
  const Contents first = contents(1), second = contents(2);
  const std::uint64_t before = packs_created();
  cudnnBackendDescriptor_t packs[2] = {};
  const cudnnStatus_t made[2] = {make_pack(first, &packs[0]), make_pack(second, &packs[1])};
  print("made_first", made[0]);
  print("made_second", made[1]);

  print("populate_status", g_api.populate_cuda_graph(g_handle, g_matmul.plan(), packs[0], graph));
  StubBackendExecution e = g_api.last_call();
  print("populate_kind", e.kind == STUBBACKEND_POPULATE_CUDA_GRAPH);
  print("populate_as_set", ran_with(e, g_matmul.plan(), first) && e.graph == graph && e.handle == g_handle);
  print("populate_got_callers_pack", e.variant_pack == packs[0]);

  print("update_status", g_api.update_cuda_graph(g_handle, g_matmul.plan(), packs[1], graph));
  e = g_api.last_call();
  print("update_kind", e.kind == STUBBACKEND_UPDATE_CUDA_GRAPH);
  print("update_as_set", ran_with(e, g_matmul.plan(), second) && e.graph == graph && e.handle == g_handle);
  print("update_got_callers_pack", e.variant_pack == packs[1]);

  // The same pack executed, then used for an update again.
  print("execute_status", g_api.execute(g_handle, g_matmul.plan(), packs[0]));
  print("update_again_status", g_api.update_cuda_graph(g_handle, g_matmul.plan(), packs[0], graph));
  print("update_again_as_set", ran_with(g_api.last_call(), g_matmul.plan(), first));
  print("real_packs", static_cast<long long>(packs_created() - before));
  print("destroy_first", g_api.destroy(packs[0]));
  print("destroy_second", g_api.destroy(packs[1]));
  const StubBackendCounters counters = g_api.counters();
  print("stub_populate_calls", static_cast<long long>(counters.populate_cuda_graph));
  print("stub_update_calls", static_cast<long long>(counters.update_cuda_graph));
  return 0;
}

// Descriptors of other types: how many of each the stub created, and the plan it executed.
int other_types() {
  MatmulPlan second;
  const cudnnStatus_t built = second.build(g_api, g_handle, kOtherUids);
  print("second_plan_status", built);
  OpCounts counts;
  for (int i = 0; i < 10; ++i) run_op(g_handle, i % 2 ? second.plan() : g_matmul.plan(),
                                      i % 2 ? contents(2, kOtherUids) : contents(1), counts);
  print_counts(counts);
  print("executed_callers_plan", g_api.last_execution().plan == second.plan());
  // Attributes of a finalized plan and of the stub's own answers read through the same calls.
  std::int64_t workspace = -1, count = -1;
  print("status.other.get_workspace_size",
        g_api.get(second.plan(), CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, &count, &workspace));
  print("status.other.workspace_size", workspace);
  cudnnBackendDescriptor_t tensor = nullptr;
  print("status.other.create_tensor", g_api.create(CUDNN_BACKEND_TENSOR_DESCRIPTOR, &tensor));
  const std::int64_t uid = 42;
  print("status.other.set_tensor_uid", g_api.set(tensor, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid));
  print("status.other.finalize_incomplete_tensor", g_api.finalize(tensor));
  print("status.other.get_unfinalized_tensor",
        g_api.get(tensor, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &count, &workspace));
  print("status.other.destroy_tensor", g_api.destroy(tensor));
  second.release();
  for (int type = 0; type < 64; ++type) {
    if (type == kPack) continue;
    const auto t = static_cast<cudnnBackendDescriptorType_t>(type);
    if (g_api.created(t) == 0) continue;
    std::printf("created.%d=%llu\n", type, static_cast<unsigned long long>(g_api.created(t)));
    std::printf("live.%d=%llu\n", type, static_cast<unsigned long long>(g_api.live(t)));
  }
  return 0;
}

// A variant pack made by libcudnn's own code is cuDNN's business: never a proxy.
int internal() {
  const Contents c = contents(1);
  const std::uint64_t before = packs_created();
  long long created_at_once = 0, executed_callers_pack = 0, failures = 0;
  for (int i = 0; i < 10; ++i) {
    cudnnBackendDescriptor_t pack = nullptr;
    const std::uint64_t at_create = packs_created();
    Steps s(i == 0 ? "internal" : "internal_again");
    s.record("create_internally", g_api.create_pack_internally(&pack));
    created_at_once += static_cast<long long>(packs_created() - at_create);
    std::int64_t count = 0, got[3] = {};
    s.record("get_before_finalize",
             g_api.get(pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, 3, &count, got));
    cudnnStatus_t st = g_api.set(pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, 3, c.uids);
    if (st == 0) st = g_api.set(pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, 3, c.pointers);
    if (st == 0) st = g_api.set(pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &c.workspace);
    if (st == 0) st = g_api.finalize(pack);
    if (st == 0) st = g_api.execute(g_handle, g_matmul.plan(), pack);
    s.record("op", st);
    if (st == 0) executed_callers_pack += g_api.last_execution().variant_pack == pack;
    failures += st != 0;
    failures += g_api.destroy(pack) != 0;
  }
  print("created_at_once", created_at_once);
  print("executed_callers_pack", executed_callers_pack);
  print("real_packs", static_cast<long long>(packs_created() - before));
  print("failures", failures);
  return 0;
}

// One finalized pack kept alive while 1000 ops with distinct pointers go by (more than the cache
// holds); then it is executed again.
int eviction() {
  const Contents kept_contents = contents(100000);
  cudnnBackendDescriptor_t kept = nullptr;
  print("kept_status", make_pack(kept_contents, &kept));
  print("kept_first_execute", g_api.execute(g_handle, g_matmul.plan(), kept));
  OpCounts counts;
  const std::uint64_t before = packs_created();
  for (int i = 0; i < 1000; ++i) run_op(g_handle, g_matmul.plan(), contents(10 + i), counts);
  print("real_packs", static_cast<long long>(packs_created() - before));
  print("kept_execute", g_api.execute(g_handle, g_matmul.plan(), kept));
  print("kept_as_set", ran_with(g_api.last_execution(), g_matmul.plan(), kept_contents));
  std::int64_t count = 0;
  void* pointers[3] = {};
  print("kept_get", g_api.get(kept, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, 3, &count, pointers));
  print("kept_reads_as_set", count == 3 && std::memcmp(pointers, kept_contents.pointers, sizeof pointers) == 0);
  print("live_packs_with_kept", static_cast<long long>(g_api.live(kPack)));
  print("kept_destroy", g_api.destroy(kept));
  print("live_packs_end", static_cast<long long>(g_api.live(kPack)));
  print_counts(counts);
  return 0;
}

// 300 finalized packs alive at once, all distinct: each must still execute with its own contents.
int many_live() {
  constexpr int kLive = 300;
  std::vector<cudnnBackendDescriptor_t> packs(kLive);
  OpCounts counts;
  for (int i = 0; i < kLive; ++i)
    if (make_pack(contents(10 + i), &packs[i]) != 0) ++counts.failures;
  print("live_packs_peak", static_cast<long long>(g_api.live(kPack)));
  for (int round = 0; round < 2; ++round)
    for (int j = 0; j < kLive; ++j) {
      const int i = round == 0 ? j : kLive - 1 - j;
      if (g_api.execute(g_handle, g_matmul.plan(), packs[i]) != 0) ++counts.failures;
      else if (!ran_with(g_api.last_execution(), g_matmul.plan(), contents(10 + i))) ++counts.mismatches;
    }
  for (auto pack : packs)
    if (g_api.destroy(pack) != 0) ++counts.failures;
  print("live_packs_end", static_cast<long long>(g_api.live(kPack)));
  print_counts(counts);
  return 0;
}

// Four threads on their own handles, 1000 ops each, one plan; threads 0 and 1 use the same
// contents. Each thread reads its pack back after the finalize (the stub's last execution is
// shared, so it cannot tell which thread's op it was).
int threads() {
  constexpr int kThreads = 4, kOps = 1000;
  std::atomic<long long> failures{0}, read_back_wrong{0};
  std::atomic<int> ready{0};
  const std::uint64_t before = packs_created();
  std::vector<std::thread> workers;
  for (int t = 0; t < kThreads; ++t)
    workers.emplace_back([&, t] {
      cudnnHandle_t handle = nullptr;
      if (g_api.create_handle(&handle) != 0) {
        ++failures;
        return;
      }
      const Contents c = contents(t == 1 ? 0 : t);
      ready.fetch_add(1);
      while (ready.load() < kThreads) {
      }
      for (int i = 0; i < kOps; ++i) {
        cudnnBackendDescriptor_t pack = nullptr;
        cudnnStatus_t s = make_pack(c, &pack);
        void* pointers[3] = {};
        std::int64_t count = 0;
        if (s == 0) s = g_api.get(pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, 3, &count, pointers);
        if (s == 0 && (count != 3 || std::memcmp(pointers, c.pointers, sizeof pointers) != 0)) ++read_back_wrong;
        if (s == 0) s = g_api.execute(handle, g_matmul.plan(), pack);
        if (s != 0) ++failures;
        if (g_api.destroy(pack) != 0) ++failures;
      }
      g_api.destroy_handle(handle);
    });
  for (auto& w : workers) w.join();
  print("ops", kThreads * kOps);
  print("failures", failures.load());
  print("read_back_wrong", read_back_wrong.load());
  print("real_packs", static_cast<long long>(packs_created() - before));
  return 0;
}

// 2000 threads one after another, each making one op and exiting: more threads than the pool has
// proxies. Each exiting thread leaves the proxy it kept for its next pack with its block, for the
// next thread to use; a proxy lost at a thread's exit would empty the pool, and every op after
// that would build a real pack.
int short_threads() {
  constexpr int kThreads = 2000;
  const Contents c = contents(1);
  OpCounts counts;  // written by one thread at a time: each is joined before the next starts
  const std::uint64_t before = packs_created();
  for (int t = 0; t < kThreads; ++t) std::thread([&] { run_op(g_handle, g_matmul.plan(), c, counts); }).join();
  print("ops", kThreads);
  print_counts(counts);
  print("real_packs", static_cast<long long>(packs_created() - before));
  print("live_packs", static_cast<long long>(g_api.live(kPack)));
  return 0;
}

// Three threads one after another, 1000 ops each: each one that claims the statistics block the
// one before it gave back at its exit must sample its own ops from its own start (pack_op_samples.h),
// not carry on from the previous owner's count.
int threads_in_turn() {
  constexpr int kThreads = 3, kOps = 1000;
  const Contents c = contents(1);
  OpCounts counts;  // written by one thread at a time: each is joined before the next starts
  for (int t = 0; t < kThreads; ++t)
    std::thread([&] {
      for (int i = 0; i < kOps; ++i) run_op(g_handle, g_matmul.plan(), c, counts);
    }).join();
  print("ops", kThreads * kOps);
  print_counts(counts);
  return 0;
}

#ifndef PACK_SCENARIO_LINKED
// Mode global. A second copy of the shim (SCENARIO_SHIM_COPY, opened RTLD_LOCAL) next to the
// preloaded one: each op's calls alternate between the two copies, so a pack created through one
// is set, finalized, executed and destroyed through the other. The copy that does not lead must
// pass every call to the one that does: a proxy reaching the stub would be refused.
int two_shims() {
  const char* copy = std::getenv("SCENARIO_SHIM_COPY");
  if (copy == nullptr || *copy == '\0') die("two_shims needs SCENARIO_SHIM_COPY");
  void* other = must_dlopen(copy, RTLD_NOW | RTLD_LOCAL);
  PackApi b = g_api;
  must_dlsym(b.create, other, "cudnnBackendCreateDescriptor");
  must_dlsym(b.destroy, other, "cudnnBackendDestroyDescriptor");
  must_dlsym(b.set, other, "cudnnBackendSetAttribute");
  must_dlsym(b.finalize, other, "cudnnBackendFinalize");
  must_dlsym(b.execute, other, "cudnnBackendExecute");
  const Contents c = contents(1);
  OpCounts counts;
  const std::uint64_t before = packs_created();
  for (int i = 0; i < 200; ++i) {
    const PackApi& one = i % 2 ? b : g_api;
    const PackApi& two = i % 2 ? g_api : b;
    cudnnBackendDescriptor_t pack = nullptr;
    cudnnStatus_t s = one.create(kPack, &pack);
    if (s == 0) s = two.set(pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, c.count, c.uids);
    if (s == 0) s = one.set(pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, c.count, c.pointers);
    if (s == 0) s = two.set(pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &c.workspace);
    if (s == 0) s = two.finalize(pack);
    if (s == 0) s = one.execute(g_handle, g_matmul.plan(), pack);
    if (s == 0 && !ran_with(g_api.last_execution(), g_matmul.plan(), c)) ++counts.mismatches;
    if (s != 0) ++counts.failures;
    if (pack != nullptr && two.destroy(pack) != 0) ++counts.failures;
  }
  print_counts(counts);
  print("real_packs", static_cast<long long>(packs_created() - before));
  return 0;
}
#endif

// Warm the cache, fork: the child's loop must build its own pack; the parent's cache stays.
int fork_child() {
  const Contents c = contents(1);
  OpCounts counts;
  std::uint64_t before = packs_created();
  for (int i = 0; i < 100; ++i) run_op(g_handle, g_matmul.plan(), c, counts);
  print("parent_real_warm", static_cast<long long>(packs_created() - before));
  std::fflush(stdout);
  const pid_t pid = fork();
  if (pid == 0) {
    cudnnHandle_t handle = nullptr;
    OpCounts child;
    if (g_api.create_handle(&handle) != 0) ++child.failures;
    const std::uint64_t child_before = packs_created();
    for (int i = 0; i < 100; ++i) run_op(handle, g_matmul.plan(), c, child);
    print("child_real_packs", static_cast<long long>(packs_created() - child_before));
    print("child_failures", child.failures);
    print("child_mismatches", child.mismatches);
    std::fflush(stdout);
    _exit(0);
  }
  int wstatus = 0;
  waitpid(pid, &wstatus, 0);
  before = packs_created();
  for (int i = 0; i < 100; ++i) run_op(g_handle, g_matmul.plan(), c, counts);
  print("parent_real_after", static_cast<long long>(packs_created() - before));
  print("child_exit", WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : 128 + WTERMSIG(wstatus));
  print_counts(counts);
  return 0;
}

// The run-time switch, cudnn_fastpath_set_features, exported by the shim.
// The shim's run-time switch, found with dlsym; "have_switch" says whether it was (both members
// are null without the shim).
struct FeatureSwitch {
  unsigned (*features)() = nullptr;
  unsigned (*set_features)(unsigned) = nullptr;
};
FeatureSwitch find_feature_switch() {
  FeatureSwitch f;
  f.features = reinterpret_cast<unsigned (*)()>(dlsym(RTLD_DEFAULT, "cudnn_fastpath_features"));
  f.set_features = reinterpret_cast<unsigned (*)(unsigned)>(dlsym(RTLD_DEFAULT, "cudnn_fastpath_set_features"));
  const bool found = f.features != nullptr && f.set_features != nullptr;
  print("have_switch", found);
  return found ? f : FeatureSwitch{};
}

int runtime_switch() {
  const auto [features, set_features] = find_feature_switch();
  if (set_features == nullptr) return 0;
  const unsigned both = PACKS_FEATURE_SET_STREAM | PACKS_FEATURE_VARIANT_PACKS;

  const Contents c = contents(1), early_contents = contents(2), late_contents = contents(3);
  OpCounts counts;
  print("features_initial", features());
  std::uint64_t before = packs_created();
  for (int i = 0; i < 10; ++i) run_op(g_handle, g_matmul.plan(), c, counts);
  print("real_warm", static_cast<long long>(packs_created() - before));
  cudnnBackendDescriptor_t kept = nullptr, early = nullptr, late = nullptr;
  print("kept_status", make_pack(c, &kept));          // finalized before the switch
  print("early_create", g_api.create(kPack, &early));  // created before, finalized after

  print("set_off", set_features(PACKS_FEATURE_SET_STREAM));
  print("features_off", features());
  before = packs_created();
  for (int i = 0; i < 100; ++i) run_op(g_handle, g_matmul.plan(), c, counts);
  print("real_off", static_cast<long long>(packs_created() - before));
  print("kept_execute_off", g_api.execute(g_handle, g_matmul.plan(), kept));
  print("kept_as_set_off", ran_with(g_api.last_execution(), g_matmul.plan(), c));
  cudnnStatus_t s = g_api.set(early, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, 3, early_contents.uids);
  if (s == 0) s = g_api.set(early, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, 3, early_contents.pointers);
  if (s == 0) s = g_api.set(early, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &early_contents.workspace);
  if (s == 0) s = g_api.finalize(early);
  if (s == 0) s = g_api.execute(g_handle, g_matmul.plan(), early);
  print("early_status", s);
  print("early_as_set", s == 0 && ran_with(g_api.last_execution(), g_matmul.plan(), early_contents));
  print("late_create", make_pack(late_contents, &late));  // created (and finalized) while off

  print("set_on", set_features(both));
  print("features_on", features());
  before = packs_created();
  for (int i = 0; i < 100; ++i) run_op(g_handle, g_matmul.plan(), c, counts);
  print("real_on", static_cast<long long>(packs_created() - before));
  print("kept_execute_on", g_api.execute(g_handle, g_matmul.plan(), kept));
  print("late_execute_on", g_api.execute(g_handle, g_matmul.plan(), late));
  print("late_as_set", ran_with(g_api.last_execution(), g_matmul.plan(), late_contents));
  for (cudnnBackendDescriptor_t pack : {kept, early, late})
    if (g_api.destroy(pack) != 0) ++counts.failures;

  // Bits that name no feature are ignored; set-stream skipping follows its own bit.
  print("set_unknown_bits", set_features(~0u));
  print("set_variant_packs_only", set_features(PACKS_FEATURE_VARIANT_PACKS));
  const auto stream = reinterpret_cast<cudaStream_t>(std::uintptr_t{0x5200});
  const std::uint64_t sets_before = g_api.cudnn_counters().set_stream;
  for (int i = 0; i < 10; ++i) g_api.set_stream(g_handle, stream);
  print("real_set_stream_without_feature", static_cast<long long>(g_api.cudnn_counters().set_stream - sets_before));
  print("set_both_again", set_features(both));
  print_counts(counts);
  return 0;
}

// An in-process A/B's shape: SCENARIO_SWITCH_EVERY ops (default 48) with the pack cache on, as
// many with it off, and again, until 4096 ops have run with it on ("ops_on").
int switch_every() {
  const FeatureSwitch feature_switch = find_feature_switch();
  if (feature_switch.set_features == nullptr) return 0;
  const char* every_text = std::getenv("SCENARIO_SWITCH_EVERY");
  const int every = every_text != nullptr ? std::atoi(every_text) : 48;
  if (every <= 0) die("SCENARIO_SWITCH_EVERY must be a positive number");
  const unsigned both = PACKS_FEATURE_SET_STREAM | PACKS_FEATURE_VARIANT_PACKS;
  const Contents c = contents(1);
  OpCounts counts;
  const std::uint64_t before = packs_created();
  int ops_on = 0;
  while (ops_on < 4096) {
    for (int i = 0; i < every && ops_on < 4096; ++i, ++ops_on) run_op(g_handle, g_matmul.plan(), c, counts);
    feature_switch.set_features(PACKS_FEATURE_SET_STREAM);
    for (int i = 0; i < every; ++i) run_op(g_handle, g_matmul.plan(), c, counts);
    feature_switch.set_features(both);
  }
  print("ops_on", ops_on);
  print("real_packs", static_cast<long long>(packs_created() - before));
  print_counts(counts);
  return 0;
}

// More than kProxiedTensors tensors is never proxied; exactly that many is.
int tensor_limit() {
  OpCounts counts;
  std::uint64_t before = packs_created();
  for (int i = 0; i < 100; ++i) run_op(g_handle, g_matmul.plan(), many_tensors(kProxiedTensors, 1), counts);
  print("real_at_limit", static_cast<long long>(packs_created() - before));
  before = packs_created();
  for (int i = 0; i < 100; ++i) run_op(g_handle, g_matmul.plan(), many_tensors(kProxiedTensors + 1, 2), counts);
  print("real_over_limit", static_cast<long long>(packs_created() - before));
  print_counts(counts);
  print("live_packs", static_cast<long long>(g_api.live(kPack)));
  return 0;
}

struct Case {
  const char* name;
  int (*run)();
};

// Under a tracer (tests/tracer): 200 ops with the stream changed every second op, three pack
// contents in turn, and a second handle at the end. Prints each kind of call's failures
// ("status.traced.*", compared with the run without the shim), what reached the stub, and what the
// tracer saw ("tracer.*"), if one is preloaded.
int traced() {
  using TracerCount = std::uint64_t (*)(const char*);
  const auto tracer_count = reinterpret_cast<TracerCount>(dlsym(RTLD_DEFAULT, "tracer_count"));
  const cudaStream_t streams[2] = {reinterpret_cast<cudaStream_t>(std::uintptr_t{0x5100}),
                                   reinterpret_cast<cudaStream_t>(std::uintptr_t{0x5200})};
  const Contents c[3] = {contents(1), contents(2), contents(3)};
  long long set_failures = 0, first_set_failure = 0, mismatches = 0;
  long long step_failures[7] = {};  // create, 3 sets, finalize, execute, destroy
  long long first_step_failure[7] = {};
  const auto note = [&](int step, cudnnStatus_t s) {
    if (s == CUDNN_STATUS_SUCCESS) return;
    if (step_failures[step]++ == 0) first_step_failure[step] = s;
  };
  for (int i = 0; i < 200; ++i) {
    const cudnnStatus_t set = g_api.set_stream(g_handle, streams[(i / 2) % 2]);
    if (set != CUDNN_STATUS_SUCCESS && set_failures++ == 0) first_set_failure = set;
    const Contents& op = c[i % 3];
    cudnnBackendDescriptor_t pack = nullptr;
    cudnnStatus_t s = g_api.create(kPack, &pack);
    note(0, s);
    if (s == 0) note(1, s = g_api.set(pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, 3, op.uids));
    if (s == 0) note(2, s = g_api.set(pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, 3, op.pointers));
    if (s == 0) note(3, s = g_api.set(pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &op.workspace));
    if (s == 0) note(4, s = g_api.finalize(pack));
    if (s == 0) note(5, s = g_api.execute(g_handle, g_matmul.plan(), pack));
    if (s == 0 && !ran_with(g_api.last_execution(), g_matmul.plan(), op)) ++mismatches;
    if (pack != nullptr) note(6, g_api.destroy(pack));
  }
  cudnnHandle_t second = nullptr;
  const cudnnStatus_t created = g_api.create_handle(&second);
  const cudnnStatus_t second_set = created == 0 ? g_api.set_stream(second, streams[0]) : created;
  const cudnnStatus_t destroyed = created == 0 ? g_api.destroy_handle(second) : created;

  print("status.traced.set_stream_failures", set_failures);
  print("status.traced.set_stream_first_failure", first_set_failure);
  const char* steps[7] = {"create", "set_ids", "set_pointers", "set_workspace", "finalize", "execute", "destroy"};
  for (int step = 0; step < 7; ++step) {
    print((std::string("status.traced.") + steps[step] + "_failures").c_str(), step_failures[step]);
    print((std::string("status.traced.") + steps[step] + "_first_failure").c_str(), first_step_failure[step]);
  }
  print("status.traced.mismatches", mismatches);
  print("status.traced.second_handle", created);
  print("status.traced.second_set", second_set);
  print("status.traced.second_destroy", destroyed);

  const StubCudnnCounters handle_calls = g_api.cudnn_counters();
  const StubBackendCounters backend_calls = g_api.counters();
  const std::pair<const char*, std::uint64_t> reached[] = {
      {"cudnnCreate", handle_calls.create},
      {"cudnnDestroy", handle_calls.destroy},
      {"cudnnSetStream", handle_calls.set_stream},
      {"cudnnGetStream", handle_calls.get_stream},
      {"cudnnBackendCreateDescriptor", backend_calls.create_descriptor},
      {"cudnnBackendDestroyDescriptor", backend_calls.destroy_descriptor},
      {"cudnnBackendSetAttribute", backend_calls.set_attribute},
      {"cudnnBackendGetAttribute", backend_calls.get_attribute},
      {"cudnnBackendFinalize", backend_calls.finalize},
      {"cudnnBackendExecute", backend_calls.execute},
  };
  print("tracer_present", tracer_count != nullptr);
  for (const auto& [name, count] : reached) {
    print((std::string("stub.") + name).c_str(), static_cast<long long>(count));
    if (tracer_count != nullptr)
      print((std::string("tracer.") + name).c_str(), static_cast<long long>(tracer_count(name)));
  }
  return 0;
}

#ifndef PACK_SCENARIO_LINKED
// Mode local_lazy, run without a preload: the program opens the shim RTLD_GLOBAL after cuDNN was
// loaded (behind the framework), and cuDNN then calls one of its own functions for the first time:
// the lazily bound call reaches the shim, which must send it back to cuDNN's own definition.
int shim_opened_later() {
  print("shim_loaded", dlopen(SHIM_PATH, RTLD_NOW | RTLD_GLOBAL) != nullptr);
  cudnnBackendDescriptor_t pack = nullptr;
  const std::uint64_t before = packs_created();
  print("status.internal_create", g_api.create_pack_internally(&pack));
  print("real_packs", static_cast<long long>(packs_created() - before));
  print("status.destroy", pack != nullptr ? g_api.destroy(pack) : -1);
  return 0;
}
#endif

const Case kCases[] = {
    {"steady", steady},           {"pointer_change", pointer_change}, {"arrays_copied", arrays_copied},
    {"two_plans", two_plans},     {"errors", errors},                 {"intermediates", intermediates},
    {"get_attribute", get_attribute}, {"cuda_graph", cuda_graph},     {"other_types", other_types},
    {"internal", internal},       {"eviction", eviction},             {"many_live", many_live},
    {"threads", threads},         {"short_threads", short_threads}, {"threads_in_turn", threads_in_turn}, {"fork", fork_child},               {"runtime_switch", runtime_switch},
    {"switch_every", switch_every}, {"tensor_limit", tensor_limit}, {"traced", traced},
#ifndef PACK_SCENARIO_LINKED
    {"two_shims", two_shims},
    {"shim_opened_later", shim_opened_later},
#endif
};

}  // namespace

int main(int argc, char** argv) {
#ifdef PACK_SCENARIO_LINKED
  if (argc != 2) die("usage: pack_scenario_linked CASE");
  const char* mode = "linked";
  const char* name = argv[1];
#else
  if (argc != 3) die("usage: pack_scenario_dlopen MODE CASE");
  const char* mode = argv[1];
  const char* name = argv[2];
#endif
  const Case* chosen = nullptr;
  for (const Case& c : kCases)
    if (std::strcmp(c.name, name) == 0) chosen = &c;
  if (chosen == nullptr) die("unknown case");
  load_api(mode);
  // Engine 0 (the plan's) needs a workspace, so that every execute checks the pack's.
  g_api.set_engine_workspace(0, 1 << 20);
  if (g_api.create_handle(&g_handle) != 0) die("cudnnCreate failed");
  const cudnnStatus_t built = g_matmul.build(g_api, g_handle, kUids);
  if (built != CUDNN_STATUS_SUCCESS) {
    std::fprintf(stderr, "pack scenario: the plan failed to build: status %d\n", static_cast<int>(built));
    return 3;
  }
  const int status = chosen->run();
  std::fflush(stdout);
  return status;
}
