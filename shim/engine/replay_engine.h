// The replay engine: a steady library call becomes one CUDA graph launch.
//
// A replayable call (the backend execute of a cached variant pack, a legacy cuDNN op, a cuBLASLt
// matmul, a cuBLAS GEMM) writes its key (replay/replay_key.h: every byte that decides its work)
// and hands the engine a ReplayCall (graph_launch.h): which family it is of, the stream its work
// goes on, and how to run it on a given stream. The path of a call, in one direction:
//   1. admission (admit(), asked before the key is written): a family whose cache backs off runs
//      its declined calls as they came, without a key (replay/admission.h);
//   2. the pointer cache: per key, in the family's graph cache (replay/graph_cache.h), the first
//      kDirectRunsBeforeCapture runs reach the library directly (it may initialise lazily on a
//      first call, and a call seen once or twice is not worth a graph); a key's first call only
//      notes it among the thread's recent keys (replay/recent_keys.h), its second makes its entry;
//   3. the shape cache (shape_cache.h): a call the pointer cache has no graph for yet, whose shape
//      was proven to relocate, launches its shape's graph pointed at its tensors;
//   4. capture (graph_launch.h): the key's next run is captured on a stream of the shim's and its
//      graph launched at once;
//   5. launch: every later run launches the graph on the program's stream.
// Direct instead: while the program's stream is capturing (its own CUDA graph); a stream of
// another context than the graph's, or a green context's; a thread without a replay block
// (replay_thread.h); a thread inside one of the shim's own captures (re-entry: that call is the
// library's, cuDNN calling cuBLASLt, say); while the family's cache backs off. Direct for good: a
// failed capture or instantiation (one line with CUDNN_FASTPATH_VERBOSE). A failed launch returns
// the family's error. Graphs are forgotten (destroyed once no run is using them) as their family
// says (a handle destroyed, a descriptor gone), all of them when a feature is switched off, and in
// a forked child (dropped, never destroyed: they are the parent's).
#pragma once

#include <cstdint>

#include "shim/engine/family_facts.h"
#include "shim/engine/graph_launch.h"
#include "shim/engine/replay_thread.h"
#include "shim/libraries/mode.h"
#include "shim/process/counters.h"

namespace cudnn_fastpath::shim {

// admit()'s answers are graph_launch.h's Admitting: `sample()` is a hash of part of what the call's
// key holds, the same whenever the key comes, computed only while the cache backs off;
// `shape_sample()` a hash of its shape's.

// The bit of a thread's `relocating` word for a shape sample.
constexpr std::uint64_t shape_bit(std::uint64_t shape_sample) noexcept { return std::uint64_t{1} << (shape_sample >> 58); }

// The answer above for a call of `family` on the calling thread: inline, as every replayable call
// asks, a declined one too. `kPastGate`: the call passed its family's gate (gate.h: programs_call
// found the thread in no capture or library call of the shim's), which need not be asked again.
template <bool kPastGate = false, typename Sample, typename ShapeSample>
[[gnu::always_inline]] inline Admitting admit(Family family, Sample&& sample, ShapeSample&& shape_sample) noexcept {
  ReplayThread* t = replay_thread();
  if (t == nullptr || (!kPastGate && (t->capturing || t->nested != 0))) return Admitting::kDirect;
  // Backing off, a probe by count judges the cache (its evictions are the rule's misses); a sampled
  // key only waits for its launch again, the rule's hit (its evictions are what sampling costs).
  const Admitted cache = admitted_of(family);
  if (__builtin_expect(t->admissions.admit(cache), 1)) return Admitting::kJudged;
  if (t->admissions.sampled_again(cache, sample())) return Admitting::kSampled;
  // A family whose keys never repeat may have shapes that do (generation): those still relocate.
  const std::uint64_t relocating = t->relocating[static_cast<int>(cache)];
  if (__builtin_expect(relocating == 0, 1)) return Admitting::kDeclined;
  return (relocating & shape_bit(shape_sample())) ? Admitting::kShaped : Admitting::kDeclined;
}

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

// Runs `call`, whose key is `key` (complete), as the path above says and admit() answered; the
// family's feature is on (mode `m`). Returns what the program gets.
int replay(const Key& key, const ReplayCall& call, std::uint32_t m, Admitting admitting) noexcept;

// Forgets the graphs of `family` whose key `matches` (a predicate on GraphCache::StoredKey): each
// destroyed now, or by the run that still holds it. A graph forgotten unused is a waste (the cache
// forgets it because what it replays went away: its plan or handle destroyed).
GraphCache& graphs_of(Family family) noexcept;
void note_forgotten(Family family, const replay::Released& released) noexcept;
template <typename Match>
void forget_graphs_where(Family family, Match&& matches) noexcept {
  graphs_of(family).forget_if(matches, [family](const replay::Released& r) {
    note_forgotten(family, r);
    destroy_graph(r);
  });
}

// Every graph and shape of every family whose key starts with `handle`, of `owner`'s (destroyed, or
// a new one made at its address): destroyed now, or by the run that still holds it.
void forget_graphs_of_handle(HandleOwner owner, const void* handle) noexcept;

// Every graph of the families of the features in `features` (CUDNN_FASTPATH_FEATURE_* bits): they
// were switched off (no waste: the program asked).
void forget_families(unsigned features) noexcept;

}  // namespace cudnn_fastpath::shim
