// Variant-pack scenario cases: every call's status, for comparison with a run without the shim,
// and what cuDNN answers about a pack (pack_scenario.h).
#include <cstdint>
#include <cstdio>

#include "tests/packs/pack_scenario.h"

#pragma GCC diagnostic ignored "-Wdeprecated-declarations"  // cudnnBackendInitialize

namespace pack_scenario {

namespace {

// The status of each call of one short sequence on one pack, printed as
// "status.NAME.NN_STEP", for comparison with a run without the shim.
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

}  // namespace

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
  const cudnnStatus_t made[2] = {make_pack(g_api, first, &packs[0]), make_pack(g_api, second, &packs[1])};
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

}  // namespace pack_scenario
