// Variant-pack scenario cases: eviction, many live packs, fork, and a second copy of the shim
// (pack_scenario.h).
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "tests/support/must_load.h"
#include "tests/packs/pack_scenario.h"

namespace pack_scenario {

// One finalized pack kept alive while 1000 pointer sets go by, two ops each (more than the cache
// holds); then it is executed again.
int eviction() {
  const Contents kept_contents = contents(100000);
  cudnnBackendDescriptor_t kept = nullptr;
  print("kept_status", make_pack(g_api, kept_contents, &kept));
  print("kept_first_execute", g_api.execute(g_handle, g_matmul.plan(), kept));
  OpCounts counts;
  const std::uint64_t before = packs_created();
  // Each content twice in a row: used again, no entry is a waste that would make the cache back
  // off (replay/admission.h), and the cache keeps evicting.
  for (int i = 0; i < 2000; ++i) run_op(g_handle, g_matmul.plan(), contents(10 + i / 2), counts);
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
    if (make_pack(g_api, contents(10 + i), &packs[i]) != 0) ++counts.failures;
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

}  // namespace pack_scenario
