// The replay engine: a steady library call becomes one CUDA graph launch.
//
// A replayable call (the backend execute of a cached variant pack, a legacy cuDNN op, a cuBLASLt
// matmul, a cuBLAS GEMM) writes its key (replay/replay_key.h: every byte that decides its work)
// and hands the engine a ReplayCall: which family it is of, the stream its work goes on, and how
// to run it on a given stream. Per key, in its family's graph cache (replay/graph_cache.h):
//   - the first kDirectRunsBeforeCapture runs reach the library directly (replay/graph_capture.h:
//     it may initialise lazily on a first call, and a call seen once or twice is not worth a graph);
//   - the next one is captured (replay/graph_capture.h, CUDA's rules) on a stream of the shim's, one
//     per thread and context (the program's stream's context), and its graph launched at once;
//   - every later run launches the graph on the program's stream.
// Direct instead: while the program's stream is capturing (its own CUDA graph); a stream of
// another context than the graph's, or a green context's; a thread without a replay block
// (replay_thread.h); a thread inside one of the shim's own captures (re-entry: that call is the
// library's, cuDNN calling cuBLASLt, say); while the family's cache backs off (replay/admission.h:
// its entries are evicted before they are used again). Direct for good: a failed capture or
// instantiation (one line with CUDNN_FASTPATH_VERBOSE). A failed launch returns the family's error.
// Graphs are forgotten (destroyed once no run is using them) as their family says (a handle
// destroyed, a descriptor gone), all of them when a feature is switched off, and in a forked child
// (dropped, never destroyed: they are the parent's).
#pragma once

#include <cuda.h>

#include <cstdint>

#include "replay/graph_cache.h"
#include "replay/replay_key.h"
#include "shim/engine/replay_thread.h"
#include "shim/libraries/callers.h"
#include "shim/libraries/mode.h"
#include "shim/libraries/real_symbols.h"
#include "shim/process/counters.h"

namespace cudnn_fastpath::shim {

// The families of replayed calls (CUDNN_FASTPATH_REPLAY_FAMILIES, shim_control.h), each with a
// graph cache of its own (one family's churn never evicts another's graphs), its admission state
// per thread, its counters and its feature.
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

// One call, as the engine runs it.
struct ReplayCall {
  Family family;
  const void* caller;  // its return address: which driver the engine uses
  CUstream stream;     // where the program's work goes
  int launch_failed;   // what a failed graph launch returns (the library's own "execution failed")
  void* context;       // the family's, for the functions below
  // Runs the call as the program made it: exactly as it came (`capture` null), or with its work
  // going to `capture`, the shim's capture stream. Returns the library's status, 0 for success
  // (cuDNN's and cuBLAS's).
  int (*run)(void* context, CUstream capture);
  // For a call whose stream is handle state (cuDNN, cuBLAS), or null: points the handle at
  // `capture` before the capture begins (non-zero: no capture, direct for good), and puts the
  // program's state back after it ends, so that no library call but the run itself is captured.
  int (*enter)(void* context, CUstream capture);
  void (*leave)(void* context);
  // Host memory the call reads that its key does not hold (a variant pack's by-value tensors), or
  // null: learnt into the entry at capture (false refuses the capture for good), compared at
  // every launch (a change re-captures, at most kMaxRecaptures times, then runs direct for good).
  bool (*learn_host_bytes)(void* context, const RealSymbols& cuda, HostBytes& entry);
  bool (*same_host_bytes)(void* context, const HostBytes& entry);
};

// Whether a call of `family` goes through its graph cache (replay/admission.h), asked before its key
// is written, so that a cache that backs off costs its declined calls no key: kJudged (admitting,
// or a probe by count), kSampled (backing off, but the call is of a sampled key: `sample()` is a
// hash of part of what its key holds, the same whenever the key comes, computed only while the
// cache backs off), kDeclined, or kDirect (no replay block, or inside one of the shim's captures or
// library calls).
enum class Admitting : std::uint8_t { kJudged, kSampled, kDeclined, kDirect };
// Which of a thread's admission states judges `family`'s graphs.
constexpr Admitted admitted_of(Family family) noexcept {
  return static_cast<Admitted>(kFirstAdmittedFamily + static_cast<int>(family));
}

// The answer above for a call of `family` on the calling thread: inline, as every replayable call
// asks, a declined one too. `kPastGate`: the call passed its family's gate (gate.h: programs_call
// found the thread in no capture or library call of the shim's), which need not be asked again.
template <bool kPastGate = false, typename Sample>
[[gnu::always_inline]] inline Admitting admit(Family family, Sample&& sample) noexcept {
  ReplayThread* t = replay_thread();
  if (t == nullptr || (!kPastGate && (t->capturing || t->nested != 0))) return Admitting::kDirect;
  // Backing off, a probe by count judges the cache (its evictions are the rule's misses); a sampled
  // key only waits for its launch again, the rule's hit (its evictions are what sampling costs).
  if (__builtin_expect(t->admissions.admit(admitted_of(family)), 1)) return Admitting::kJudged;
  return t->admissions.sampled(admitted_of(family), sample()) ? Admitting::kSampled : Admitting::kDeclined;
}

// Runs `call`, whose key is `key` (complete), as the rules above say and admit() answered; the
// family's feature is on (mode `m`). Returns what the program gets.
int replay(const Key& key, const ReplayCall& call, std::uint32_t m, Admitting admitting) noexcept;

// Runs `call` as it came, counted as a direct run of its family (`refusal`, when given, counted
// as why).
int run_direct(const ReplayCall& call, std::uint32_t m, Counter refusal = Counter::kCount) noexcept;

// Counts `what` for `family` (the refusals a family decides before the engine: unknown
// descriptors) when statistics are on.
enum class Outcome : int { kDirect, kCaptured, kLaunch, kCapturing, kContext, kFailed, kFull, kUnknown, kDeclined, kCount };
Counter counter_of(Family family, Outcome outcome) noexcept;


// A call admit() declined: run as it came, counted as a direct run of its family and a declined one.
template <typename Run>
auto run_declined(Family family, std::uint32_t m, Run&& run) noexcept {
  if (m & mode::kCounting) {
    count(counter_of(family, Outcome::kDirect));
    count(counter_of(family, Outcome::kDeclined));
  }
  const LibraryCall inside{*t_replay};  // admit() found or made the block
  return run();
}

// Destroys a graph the cache let go of.
void destroy_graph(const replay::Released& released) noexcept;

// A graph of `family` forgotten before it was launched again since its capture: a waste to the
// calling thread's admission of that family (replay/admission.h). Only an eviction, the cache's own
// choice, weighs a capture that did not repay its cost; a forgetting is the program's doing (its
// handle or plan destroyed).
void note_forgotten(Family family, const replay::Released& released) noexcept;

// Forgets the graphs of `family` whose key `matches` (a predicate on GraphCache::StoredKey): each
// destroyed now, or by the run that still holds it. A graph forgotten unused is a waste (the cache
// forgets it because what it replays went away: its plan or handle destroyed).
GraphCache& graphs_of(Family family) noexcept;
template <typename Match>
void forget_graphs_where(Family family, Match&& matches) noexcept {
  graphs_of(family).forget_if(matches, [family](const replay::Released& r) {
    note_forgotten(family, r);
    destroy_graph(r);
  });
}

// Every graph of every family whose key starts with `handle`, of `owner`'s (destroyed, or a new
// one made at its address): destroyed now, or by the run that still holds it.
void forget_graphs_of_handle(HandleOwner owner, const void* handle) noexcept;

// Every graph of the families of the features in `features` (CUDNN_FASTPATH_FEATURE_* bits): they
// were switched off (no waste: the program asked).
void forget_families(unsigned features) noexcept;

// The driver the calls of `caller` reach, when it is loaded and has everything graph replay
// uses; nullptr otherwise (every call is then direct).
const Binding* driver_for(const void* caller) noexcept;
// The same for a caller whose entry `known` reach_for() found: its driver binding, once made, is
// taken from the entry without a second lookup of the caller.
inline const Binding* driver_for(const void* caller, const Caller* known) noexcept {
  // Acquire: pairs with the CAS that published the binding, as in reach_for().
  const Binding* b =
      known != nullptr ? known->bindings[static_cast<int>(Library::kCuda)].load(std::memory_order_acquire) : nullptr;
  if (b == nullptr) return driver_for(caller);
  return b->replays ? b : nullptr;
}

}  // namespace cudnn_fastpath::shim
