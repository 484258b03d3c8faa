// What the replay engine knows of each family of replayed calls (CUDNN_FASTPATH_REPLAY_FAMILIES,
// shim_control.h), and the types every part of the engine shares: the family, the call's key, the
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
#define CUDNN_FASTPATH_FAMILY_ENUMERATOR(C, name, ...) name,
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

// What the engine counts of a family's calls.
enum class Outcome : int { kDirect, kCaptured, kLaunch, kCapturing, kContext, kFailed, kFull, kUnknown, kDeclined, kCount };

// What each family's row says (a table, so that a count on a replayed call's path is two loads).
struct FamilyFacts {
  const char* noun;     // one of its calls, in messages
  unsigned feature;     // the CUDNN_FASTPATH_FEATURE_* bit that switches it
  HandleOwner handle;   // whose handle is the first word of its keys
  std::uint8_t capture_cost;  // launches that repay a capture
  Counter outcomes[static_cast<int>(Outcome::kCount)];  // its counter of each outcome
};
// The counters of a prefixed family are CUDNN_FASTPATH_REPLAY_COUNTERS, in Outcome's order; an own
// family's are listed here (the backend execute's, which came before the families had a list).
#define CUDNN_FASTPATH_OUTCOMES_prefixed(name)                                                          \
  {Counter::name##_direct, Counter::name##_captured, Counter::name##_launches,                         \
   Counter::name##_refused_capturing, Counter::name##_refused_context, Counter::name##_refused_failed, \
   Counter::name##_refused_full, Counter::name##_unknown, Counter::name##_declined}
#define CUDNN_FASTPATH_OUTCOMES_own(name) kOwnOutcomes_##name
#define kOwnOutcomes_backend                                                                    \
  {Counter::direct_executes, Counter::graphs_captured, Counter::graph_launches,               \
   Counter::graph_refusals_capturing, Counter::graph_refusals_context, Counter::graph_refusals_failed, \
   Counter::graph_refusals_full, Counter::graph_refusals_host_pointer, Counter::graphs_declined}
inline constexpr FamilyFacts kFacts[kFamilies] = {
#define CUDNN_FASTPATH_FAMILY_FACTS(C, name, group, feature, noun, handle, capture_cost, counters) \
  {noun, CUDNN_FASTPATH_FEATURE_##feature, HandleOwner::handle, capture_cost, CUDNN_FASTPATH_OUTCOMES_##counters(name)},
    CUDNN_FASTPATH_REPLAY_FAMILIES(CUDNN_FASTPATH_FAMILY_FACTS, )
#undef CUDNN_FASTPATH_FAMILY_FACTS
};
#undef kOwnOutcomes_backend
#undef CUDNN_FASTPATH_OUTCOMES_own
#undef CUDNN_FASTPATH_OUTCOMES_prefixed

inline Counter counter_of(Family family, Outcome outcome) noexcept {
  return kFacts[static_cast<int>(family)].outcomes[static_cast<int>(outcome)];
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
