// What the variant-pack scenario program's cases share (pack_scenario.cpp and the
// pack_scenario_*.cpp files, one per topic): the calls as the load mode reaches them, the plan,
// and the helpers that make and run variant packs the way PyTorch does.
#pragma once

#include <cstdint>
#include <cstdio>

#include "tests/packs/pack_api.h"
#include "tests/support/scaled.h"
#include "tests/support/scenario_main.h"
#include "tests/support/variant_pack.h"

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

namespace pack_scenario {

inline constexpr cudnnBackendDescriptorType_t kPack = CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR;
inline constexpr int kMaxTensors = 40;
// The most tensors a proxy records (packs/pack_contents.h's kMaxTensors); the shim is a separate
// library under test, so the number is repeated here.
inline constexpr int kProxiedTensors = 28;
inline constexpr std::int64_t kUids[3] = {1, 2, 3};       // the tensors of the first plan
inline constexpr std::int64_t kOtherUids[3] = {4, 5, 6};  // and of the second

// Set by main before a case runs: the calls, the handle the plan was built on, and the plan.
extern PackApi g_api;
extern cudnnHandle_t g_handle;
extern MatmulPlan g_matmul;

using scenario_main::print;

inline void* fake_pointer(std::int64_t n) { return reinterpret_cast<void*>(0x7f0000000000 + n * 0x1000); }
inline void* fake_workspace(std::int64_t n) { return reinterpret_cast<void*>(0x7e0000000000 + n * 0x100000); }

// What a variant pack holds.
struct Contents {
  std::int64_t count = 3;
  std::int64_t uids[kMaxTensors] = {};
  void* pointers[kMaxTensors] = {};
  void* workspace = nullptr;
};

// The tensors `uids` (three) at pointers made from `base`, with workspace `base`.
inline Contents contents(std::int64_t base, const std::int64_t* uids = kUids) {
  Contents c;
  for (int i = 0; i < 3; ++i) {
    c.uids[i] = uids[i];
    c.pointers[i] = fake_pointer(base * 8 + i);
  }
  c.workspace = fake_workspace(base);
  return c;
}

// `count` tensors (uids 1..count, the plan's three among them) for the tensor-limit cases.
inline Contents many_tensors(std::int64_t count, std::int64_t base) {
  Contents c;
  c.count = count;
  for (std::int64_t i = 0; i < count; ++i) {
    c.uids[i] = i + 1;
    c.pointers[i] = fake_pointer(base * 64 + i);
  }
  c.workspace = fake_workspace(base);
  return c;
}

inline std::uint64_t packs_created() { return g_api.created(kPack); }

// Did a recorded call run `plan` with exactly `c`?
inline bool ran_with(const StubBackendExecution& e, cudnnBackendDescriptor_t plan, const Contents& c) {
  const std::int64_t recorded = c.count < 16 ? c.count : 16;
  if (e.plan != plan || e.tensor_count != recorded || e.workspace != c.workspace) return false;
  for (std::int64_t i = 0; i < recorded; ++i)
    if (e.uids[i] != c.uids[i] || e.pointers[i] != c.pointers[i]) return false;
  return true;
}

// One op as PyTorch makes it: make the pack, execute, destroy. Counts failed calls in
// `failures` and, when `checked`, executes the stub did not record with `c` in `mismatches`.
struct OpCounts {
  long long failures = 0;
  long long mismatches = 0;
};
inline void run_op(cudnnHandle_t handle, cudnnBackendDescriptor_t plan, const Contents& c, OpCounts& counts,
                   bool checked = true) {
  cudnnBackendDescriptor_t pack = nullptr;
  cudnnStatus_t s = make_pack(g_api, c, &pack);
  if (s == 0) s = g_api.execute(handle, plan, pack);
  if (s == 0 && checked && !ran_with(g_api.last_execution(), plan, c)) ++counts.mismatches;
  if (s != 0) ++counts.failures;
  if (pack != nullptr && g_api.destroy(pack) != 0) ++counts.failures;
}

inline void print_counts(const OpCounts& counts) {
  print("failures", counts.failures);
  print("mismatches", counts.mismatches);
}

// The cases, by topic. Each prints key=value lines and returns the program's exit status.
// pack_scenario_steady.cpp: ops with the same or changing contents.
int steady();
int pointer_change();
int arrays_copied();
int two_plans();
int tensor_limit();
int calls_reaching_cudnn();
// pack_scenario_errors.cpp: every call's status, and what cuDNN answers about a pack.
int errors();
int intermediates();
int get_attribute();
int cuda_graph();
int other_types();
int internal();
// pack_scenario_lifecycle.cpp: eviction, live packs, fork, a second copy of the shim.
int eviction();
int many_live();
int fork_child();
#ifndef PACK_SCENARIO_LINKED
int two_shims();
#endif
// pack_scenario_threads.cpp
int threads();
int short_threads();
int threads_in_turn();
int deferred();
// pack_scenario_config.cpp: the run-time switch and the statistics C API.
int runtime_switch();
int switch_every();
int stats_api();
// pack_scenario_tracers.cpp
int traced();
#ifndef PACK_SCENARIO_LINKED
int shim_opened_later();
#endif

}  // namespace pack_scenario
