// What the replay engine knows of each family of replayed calls (CUDNN_FASTPATH_REPLAY_FAMILIES,
// shim_control.h, names them and their counters), and the types every part of the engine shares: the family, the call's key, the
// graph caches' entries, the outcomes counted. The engine's files stand in one direction over this
// one: family_facts, graph_launch (how a call runs), shape_cache (relocation), replay_engine (the
// path of a replayed call); none calls back up (tests/layers/check-layers).
#pragma once

#include <cstdint>

#include "replay/graph_cache.h"
#include "replay/replay_key.h"
#include "shim/engine/replay_thread.h"
#include "shim/libraries/mode.h"
#include "shim/process/counters.h"

namespace cudnn_fastpath::shim {

// The families, each with a graph cache of its own (one family's churn never evicts another's
// graphs), its admission state per thread, its counters and its feature.
enum class Family : int {
#define CUDNN_FASTPATH_FAMILY_ENUMERATOR(C, name, group) name,
  CUDNN_FASTPATH_REPLAY_FAMILIES(CUDNN_FASTPATH_FAMILY_ENUMERATOR, )
#undef CUDNN_FASTPATH_FAMILY_ENUMERATOR
  kCount
};
inline constexpr int kFamilies = static_cast<int>(Family::kCount);

// Whose handle heads a family's keys (its row's `handle`): that handle's destroy forgets its graphs.
enum class HandleOwner : int { cudnn, cublas };

using Key = replay::ReplayKey<128>;
using GraphCache = replay::GraphCache<Key, 64, 8>;  // 512 keys a family; a lookup compares at most 8 tags
using HostBytes = GraphCache::Entry;                // a graph's baked-in host bytes live in its entry

// Which of a thread's admission states judges `family`'s graphs.
constexpr Admitted admitted_of(Family family) noexcept {
  return static_cast<Admitted>(kFirstAdmittedFamily + static_cast<int>(family));
}
static_assert(static_cast<int>(Admitted::backend) == kFirstAdmittedFamily && static_cast<int>(Family::backend) == 0,
              "a family's admission state is at its place after the pack cache's");

// What the engine counts of a family's calls: CUDNN_FASTPATH_FAMILY_COUNTERS' order.
enum class Outcome : int {
  kDirect, kCaptured, kLaunch, kCapturing, kContext, kFailed, kFull, kUnknown, kDeclined, kChurn, kEvicted, kCount
};

// What the shim knows of each family beyond its counters.
struct FamilyFacts {
  const char* noun;           // one of its calls, in messages
  unsigned feature;           // the CUDNN_FASTPATH_FEATURE_* bit that switches it
  HandleOwner handle;         // whose handle is the first word of its keys: its destroy forgets them
  std::uint8_t capture_cost;  // launches that repay a capture (docs/graph-costs.md: the H200's, rounded up)
};
constexpr FamilyFacts facts_of(Family family) noexcept {
  switch (family) {
    case Family::backend: return {"an execute", CUDNN_FASTPATH_FEATURE_GRAPHS, HandleOwner::cudnn, 3};
    case Family::legacy_bn: return {"a batch norm", CUDNN_FASTPATH_FEATURE_LEGACY, HandleOwner::cudnn, 5};
    case Family::legacy_conv: return {"a convolution", CUDNN_FASTPATH_FEATURE_LEGACY, HandleOwner::cudnn, 3};
    case Family::legacy_tensor: return {"a tensor op", CUDNN_FASTPATH_FEATURE_LEGACY, HandleOwner::cudnn, 3};
    case Family::lt_matmul: return {"a cublasLt matmul", CUDNN_FASTPATH_FEATURE_CUBLAS, HandleOwner::cublas, 2};
    case Family::gemm: return {"a cublas GEMM", CUDNN_FASTPATH_FEATURE_CUBLAS, HandleOwner::cublas, 2};
    case Family::typed_gemm: return {"a cublas S/D/C/Z GEMM", CUDNN_FASTPATH_FEATURE_CUBLAS, HandleOwner::cublas, 2};
    case Family::kCount: break;
  }
  return {nullptr, 0, HandleOwner::cudnn, 0};
}
constexpr bool every_family_has_facts() noexcept {
  for (int f = 0; f < kFamilies; ++f)
    if (facts_of(static_cast<Family>(f)).noun == nullptr) return false;
  return true;
}
static_assert(every_family_has_facts(), "a family of CUDNN_FASTPATH_REPLAY_FAMILIES without its facts here");

// Each family's counter of each outcome (CUDNN_FASTPATH_FAMILY_COUNTERS, in Outcome's order): a table,
// so that a count on a replayed call's path is two loads.
#define CUDNN_FASTPATH_FAMILY_OUTCOMES(C, name, group)                                                     \
  {Counter::name##_direct, Counter::name##_captured, Counter::name##_launches,                            \
   Counter::name##_refused_capturing, Counter::name##_refused_context, Counter::name##_refused_failed,    \
   Counter::name##_refused_full, Counter::name##_unknown, Counter::name##_declined,                       \
   Counter::name##_refused_churn, Counter::name##_evicted},
inline constexpr Counter kOutcomeCounters[kFamilies][static_cast<int>(Outcome::kCount)] = {
    CUDNN_FASTPATH_REPLAY_FAMILIES(CUDNN_FASTPATH_FAMILY_OUTCOMES, )};
#undef CUDNN_FASTPATH_FAMILY_OUTCOMES

inline Counter counter_of(Family family, Outcome outcome) noexcept {
  return kOutcomeCounters[static_cast<int>(family)][static_cast<int>(outcome)];
}

// Counts `outcome` for `family` when statistics are on (mode `m`).
inline void count_outcome(std::uint32_t m, Family family, Outcome outcome) noexcept {
  if (m & mode::kCounting) count(counter_of(family, outcome));
}

// One call of `family`, in messages ("a batch norm").
const char* noun_of(Family family) noexcept;

// The CUDNN_FASTPATH_FEATURE_* bit that switches `family`, and whose handle heads its keys.
unsigned feature_of(Family family) noexcept;
HandleOwner handle_owner_of(Family family) noexcept;

// What an entry the cache let go of costs the admission rule, in wastes (a launch again, its hit,
// weighs two: replay/admission.h): none when its graph was launched again at least as often as a
// capture of its family costs, or when its calls were relocated (its shape's graph repaid them);
// one for an entry never captured (a key seen once or twice); twice the capture's cost for a graph
// launched fewer times (a capture counts as capture_cost launches).
unsigned waste_of(Family family, const replay::Released& released) noexcept;

}  // namespace cudnn_fastpath::shim
