// Variant-pack scenario cases with threads (pack_scenario.h).
#include <atomic>
#include <cstdint>
#include <cstring>
#include <dlfcn.h>
#include <thread>
#include <vector>

#include "tests/packs/pack_scenario.h"

namespace pack_scenario {

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
        cudnnStatus_t s = make_pack(g_api, c, &pack);
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

// 2000 threads one after another (1200 under the sanitizers), each making one op and exiting: more
// threads than the pool has proxies (1024). Each exiting thread leaves the proxy it kept for its
// next pack with its block, for the next thread to use; a proxy lost at a thread's exit would empty
// the pool, and every op after that would build a real pack.
int short_threads() {
  constexpr int kThreads = scaled(2000, 1200);
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

// Three threads one after another, 1000 ops each: each one takes over the per-thread block the
// one before it gave back at its exit; its counts must add to the exited threads', none lost or
// counted twice.
int threads_in_turn() {
  constexpr int kThreads = 3, kOps = 1000;
  const Contents c = contents(1);
  OpCounts counts;  // written by one thread at a time: each is joined before the next starts
  const std::uint64_t before = packs_created();
  for (int t = 0; t < kThreads; ++t)
    std::thread([&] {
      for (int i = 0; i < kOps; ++i) run_op(g_handle, g_matmul.plan(), c, counts);
    }).join();
  print("ops", kThreads * kOps);
  print_counts(counts);
  print("real_packs", static_cast<long long>(packs_created() - before));
  return 0;
}

// Packs of one form with other pointers each (activations that move): while graphs replay, a
// finalize of a form cuDNN finalized before builds no real pack; a call that needs one builds it.
// Each pack reads back its own pointers and executes with its own contents; four threads on their
// own handles execute one such pack at once (one real pack is kept of it); and cuDNN refusing the
// pack when it is built at last (the stub's control, looked up by name) is the execute's answer.
int deferred() {
  OpCounts counts;
  const std::uint64_t start = packs_created();
  auto built = [&] { return static_cast<long long>(packs_created() - start); };
  cudnnBackendDescriptor_t packs[5] = {};  // the form's first, unused, read, shared, refused
  for (int i = 0; i < 5; ++i)
    if (make_pack(g_api, contents(500 + i), &packs[i]) != 0) ++counts.failures;
  print("built_at_finalize", built());

  std::int64_t count = 0;
  void* pointers[3] = {};
  print("read_get", g_api.get(packs[2], CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, 3, &count, pointers));
  print("read_as_set", count == 3 && std::memcmp(pointers, contents(502).pointers, sizeof pointers) == 0);
  const long long before_shared = built();
  const long long live_before = static_cast<long long>(g_api.live(kPack));
  std::atomic<long long> failures{0};
  std::atomic<int> ready{0};
  std::vector<std::thread> workers;
  for (int t = 0; t < 4; ++t)
    workers.emplace_back([&] {
      cudnnHandle_t handle = nullptr;
      if (g_api.create_handle(&handle) != 0) {
        ++failures;
        return;
      }
      ready.fetch_add(1);
      while (ready.load() < 4) {
      }
      for (int i = 0; i < 50; ++i)
        if (g_api.execute(handle, g_matmul.plan(), packs[3]) != 0) ++failures;
      g_api.destroy_handle(handle);
    });
  for (auto& w : workers) w.join();
  print("shared_failures", failures.load());
  print("shared_built", built() - before_shared);  // one a thread at most: those that lost gave theirs back
  print("shared_live", static_cast<long long>(g_api.live(kPack)) - live_before);
  if (g_api.execute(g_handle, g_matmul.plan(), packs[3]) != 0) ++counts.failures;
  else if (!ran_with(g_api.last_execution(), g_matmul.plan(), contents(503))) ++counts.mismatches;

  using Refuse = void (*)(cudnnStatus_t);
  const auto refuse = reinterpret_cast<Refuse>(dlsym(RTLD_DEFAULT, "stubbackend_refuse_variant_packs"));
  print("refuse_found", refuse != nullptr);
  if (refuse != nullptr) {
    refuse(CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH);
    print("refused_execute", g_api.execute(g_handle, g_matmul.plan(), packs[4]));
    refuse(CUDNN_STATUS_SUCCESS);
    print("accepted_execute", g_api.execute(g_handle, g_matmul.plan(), packs[4]));
    if (!ran_with(g_api.last_execution(), g_matmul.plan(), contents(504))) ++counts.mismatches;
  }
  const long long before_destroy = built();
  for (cudnnBackendDescriptor_t pack : packs)
    if (g_api.destroy(pack) != 0) ++counts.failures;
  print("built_at_destroy", built() - before_destroy);
  print("live_packs_end", static_cast<long long>(g_api.live(kPack)));
  print_counts(counts);
  return 0;
}

}  // namespace pack_scenario
