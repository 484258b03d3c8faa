// Statistics for the variant-pack cache: what a hit saves, measured the way the in-process A/B
// measures it, inside the program, on its own ops.
//
// Once in every kPeriod variant packs a thread creates, a block of kBlock packs is passed through
// (real ones, as with the cache off) and the next kBlock are proxies; every op of both halves is
// timed from its create to its destroy. A window holds everything the program does between the
// two calls (its own code, the execute) and what the calls do to its caches, so the difference of
// the two halves' means is what the A/B sees for one op: the A/B alternates blocks of two
// iterations, 32 ops in both of its workloads, and so do these halves.
//
// Whole halves, not their steady ends, because switching costs: on the H200, the first real pack
// after a few hundred proxies took 5 to 11 us to create (0.4 us in a program without the cache) and
// its execute ran 1 to 2 us slower, and a proxy's execute after a run of real packs was slow the
// same way, for more than eight ops. Timing only the ends of 16-op halves credited the conv network
// with nothing, timing a lone real op beside a lone proxy with six times the A/B's figure. A
// program that never switches pays neither; the A/B, which switches every 32 ops, pays both, and
// the estimate is checked against it.
//
// A thread sums its windows in its own block; the create after the block gives one pair of means
// to a shared array (a relaxed fetch_add). The report takes a trimmed mean of the pairs'
// differences: now and then a window holds an interrupt, and both halves are equally exposed to
// those. Beside the windows, the gap after each sampled op (its destroy to the thread's next
// create: the program's own work between ops, dropped if a feature switch falls in it) is summed
// the same way, a diagnostic the estimate leaves out (docs/gpu-results.md says why). The shim's own
// share alone (a proxy's calls, create to destroy) is timed at kProxyOwnCalls, for the footprint
// figure. All of this makes 1.6% of a program's packs real, with statistics on only.
#pragma once

#include <cstdint>

#include "shim/clock.h"
#include "shim/stats.h"

namespace cudnn_fastpath::shim::pack_op_samples {

enum class Slot : std::uint8_t {
  kNone,
  kReal,           // passed through, its op timed
  kProxy,          // a proxy, its op timed
  kBlockEnd,       // a proxy after the block: its create closes the last gap and gives the pair
  kProxyOwnCalls,  // a proxy, its own calls timed
};

inline constexpr std::uint64_t kPeriod = 2048;
inline constexpr std::uint64_t kFirst = 128;   // a block's first pack, counted from a period's start
inline constexpr std::uint64_t kBlock = 32;    // packs per half
// kProxyOwnCalls: two packs in every 1024, outside the block.
inline constexpr std::uint64_t kOwnCallsPeriod = 1024, kOwnCallsA = 300, kOwnCallsB = 800;

// The slot of a thread's `n`th variant pack. Inline, two compares for the usual answer: every
// create runs it.
inline Slot slot_of(std::uint64_t n) noexcept {
  const std::uint64_t offset = (n - kFirst) % kPeriod;
  if (__builtin_expect(offset > 2 * kBlock, 1)) {
    const std::uint64_t in_period = n % kOwnCallsPeriod;
    return in_period == kOwnCallsA || in_period == kOwnCallsB ? Slot::kProxyOwnCalls : Slot::kNone;
  }
  return offset < kBlock ? Slot::kReal : offset < 2 * kBlock ? Slot::kProxy : Slot::kBlockEnd;
}

// Whether the `n`th pack begins a block: the thread's sums start again (ThreadBlock::forget_windows).
inline bool starts_block(std::uint64_t n) noexcept { return (n - kFirst) % kPeriod == 0; }

// A sampled op's gap opens at its destroy (`end`) and closes at the thread's next create.
void open_gap(ThreadBlock& block, bool after_real, std::uint64_t end) noexcept;
// The create of a pack in the block, or just after it: closes the gap open, if any.
void close_gap(ThreadBlock& block, std::uint64_t start) noexcept;

// A sampled real op began: `pack` is its descriptor, `start` its create's first tick.
void open_real(ThreadBlock& block, void* pack, std::uint64_t start) noexcept;

// Called when a descriptor that is not a proxy has been destroyed: closes the thread's real
// window if `pack` was its descriptor. Cheap when it was not (a thread-local load, a compare).
inline void close_real_if_timed(const void* pack) noexcept {
  ThreadBlock* block = t_block;
  if (__builtin_expect(block != nullptr && block->window_pack == pack && pack != nullptr, 0)) {
    const std::uint64_t end = ticks();
    block->window_pack = nullptr;
    block->real_ticks += end - block->window_start;
    ++block->real_ops;
    open_gap(*block, true, end);
  }
}

// A sampled proxy op ended at `end`, `ticks` after its create.
void close_proxy(std::uint64_t ticks, std::uint64_t end) noexcept;

// The create after the block: the pair, if both halves are whole.
void finish_block(ThreadBlock& block) noexcept;

struct Summary {
  std::uint64_t pairs;       // pairs the figures come from (the newest 16384 at most), before trimming
  double real_op_ns;         // trimmed means of the halves' means
  double proxy_op_ns;
  double saved_per_hit_ns;   // trimmed mean of the pairs' differences (real less proxy)
  double saved_per_hit_untrimmed_ns;  // their plain mean, for comparison
  double real_gap_ns;        // trimmed means of the halves' gaps: the program's own work between ops
  double proxy_gap_ns;
  double saved_per_hit_with_gaps_ns;  // trimmed mean of the differences of window plus gap
};
Summary summarize() noexcept;

// In a forked child: the parent's pairs are not the child's.
void forget_in_child() noexcept;

}  // namespace cudnn_fastpath::shim::pack_op_samples
