// Variant-pack scenario cases: ops with the same contents, or changing ones (pack_scenario.h).
#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#include "tests/packs/pack_scenario.h"

namespace pack_scenario {

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

// The calls that reach cuDNN, for a comparison of runs with statistics on and off: runs of
// repeated cudnnSetStream calls and of ops with the same contents, long enough that a shim which
// sampled some of them for its statistics would forward a few. The main thread makes 5000 sets
// (its stream changes once, at the 2500th) and 3000 ops; then 4 threads at once, each on a handle
// of its own, 2000 sets and 1500 ops with the contents the main thread cached. Exact with the
// shim: 2 + 4 real sets, 1 real pack.
int calls_reaching_cudnn() {
  constexpr int kSets = 5000, kOps = 3000, kThreads = 4, kThreadSets = 2000, kThreadOps = 1500;
  const auto stream = [](std::uintptr_t n) { return reinterpret_cast<cudaStream_t>(0x5300 + 0x100 * n); };
  const Contents c = contents(1);
  const std::uint64_t sets_before = g_api.cudnn_counters().set_stream;
  const std::uint64_t packs_before = packs_created();
  OpCounts counts;
  for (int i = 0; i < kSets; ++i)
    if (g_api.set_stream(g_handle, stream(i < kSets / 2 ? 0 : 1)) != 0) ++counts.failures;
  for (int i = 0; i < kOps; ++i) run_op(g_handle, g_matmul.plan(), c, counts);

  std::atomic<long long> thread_failures{0};
  std::atomic<int> ready{0};
  std::vector<std::thread> workers;
  for (int t = 0; t < kThreads; ++t)
    workers.emplace_back([&, t] {
      cudnnHandle_t handle = nullptr;
      if (g_api.create_handle(&handle) != 0) {
        ++thread_failures;
        return;
      }
      // Released together, so that the threads' calls interleave.
      ready.fetch_add(1);
      while (ready.load() < kThreads) {
      }
      OpCounts mine;
      for (int i = 0; i < kThreadSets; ++i)
        if (g_api.set_stream(handle, stream(2 + static_cast<std::uintptr_t>(t))) != 0) ++mine.failures;
      for (int i = 0; i < kThreadOps; ++i) run_op(handle, g_matmul.plan(), c, mine, false);
      thread_failures += mine.failures;
      if (g_api.destroy_handle(handle) != 0) ++thread_failures;
    });
  for (auto& w : workers) w.join();
  counts.failures += thread_failures.load();
  print("set_stream_calls", kSets + kThreads * kThreadSets);
  print("ops", kOps + kThreads * kThreadOps);
  print("real_set_stream", static_cast<long long>(g_api.cudnn_counters().set_stream - sets_before));
  print("real_packs", static_cast<long long>(packs_created() - packs_before));
  print_counts(counts);
  return 0;
}

}  // namespace pack_scenario
