// Statistics for the variant-pack cache: what a hit saves, measured the way the in-process A/B
// measures it, inside the program, on its own ops.
//
// Once in every kPeriod variant packs a thread creates, it samples a block: kWarmUp + kTimed packs
// passed through (real ones, as with the cache off), then kWarmUp + kTimed proxies; each half's
// last kTimed ops are timed. An op's cycle runs from its pack's create to the thread's next create:
// its window (create to destroy: the pack calls, the execute) and its gap (the program's own work
// until its next op, whose speed the pack calls change too: in the conv network on the H200, the
// median difference of the cycles was 0.81 us, of the windows alone 0.21 us; the batch norm and
// ReLU after a convolution ran slower after a real pack). Cycles add up to the program's time,
// which is what the A/B measures. The op in each place of the real half is paired with the op in
// the same place of the proxy half, and the estimate of a hit's saving is the median of those
// pairs' differences. The median, not the mean: one cycle in twenty is tens of microseconds
// longer (an interrupt, a page fault, the VM's neighbours), which makes the mean of 140 blocks'
// differences wander by more than the saving (conv network: mean 2.2 us, 95% interval 1.0 to
// 3.5, against the A/B's 0.9); the median of the same ops moved by a fifth of that.
//
// Why the untimed ops: switching costs, both ways, for about one pass over the program's distinct
// packs. On the H200 the first real pack after a few hundred proxies took 5 to 11 us to create
// (0.4 us in a program without the cache), and a proxy's execute after a run of real packs was 3 us
// slower, op after op for more than eight ops. A program that never switches pays neither cost,
// and the A/B does not time them either (one untimed pass after each switch). So each half warms
// up first, and again after a switch of the features (the A/B's arms, a program stepping aside): a
// half times ops that follow kWarmUp of their kind without a switch in between, until it has
// kTimed. A program whose pass has more distinct packs than kWarmUp is likely credited less than
// it saves; one whose pass length does not divide kWarmUp + kTimed pairs different ops, which adds
// noise.
//
// A block is dropped if its real half is not done within kMaxRealHalf packs (the features switched
// more often than every kWarmUp packs; the A/B's arms, 48 packs each, need 127 at most), or if it
// is not done when the next period begins. A gap that spans a switch is dropped, and its op has no
// cycle. The windows and the gaps are also reported on their own, as trimmed means of the blocks'
// means (diagnostics). The shim's own share alone (a proxy's calls, create to destroy) is timed at
// kProxyOwnCalls, for the footprint figure. All of this makes 3.1% of a program's packs real (9.4%
// at most, in a program that switches the features all the time), with statistics on only.
#pragma once

#include <cstdint>

#include "shim/clock.h"
#include "shim/stats.h"

namespace cudnn_fastpath::shim::pack_op_samples {

enum class Slot : std::uint8_t {
  kNone,
  kRealUntimed,    // passed through: a real half's warm-up
  kReal,           // passed through, its op timed
  kProxyUntimed,   // a proxy of a proxy half's warm-up
  kProxy,          // a proxy, its op timed
  kProxyOwnCalls,  // a proxy, its own calls timed
};

inline constexpr std::uint64_t kPeriod = 2048;
inline constexpr std::uint64_t kFirst = 128;  // a block's first pack, counted from a period's start
inline constexpr std::uint32_t kWarmUp = 32;  // untimed packs before a half's timed ones
inline constexpr std::uint32_t kTimed = kPackOpsTimedPerHalf;  // timed packs per half (32)
// A real half not done within this many packs of its block's start (the features switched again
// and again) is dropped with its block.
inline constexpr std::uint64_t kMaxRealHalf = 3 * (kWarmUp + kTimed);
// kProxyOwnCalls: two packs in every 1024, when no block is being sampled.
inline constexpr std::uint64_t kOwnCallsPeriod = 1024, kOwnCallsA = 300, kOwnCallsB = 800;
static_assert(kFirst + 2 * (kWarmUp + kTimed) < kOwnCallsA,
              "a block sampled without a switch ends before the first proxy whose own calls are timed");

// Whether the thread's `n`th variant pack, outside a sampled block, has its own calls timed.
inline bool times_own_calls(std::uint64_t n) noexcept {
  const std::uint64_t in_period = n % kOwnCallsPeriod;
  return in_period == kOwnCallsA || in_period == kOwnCallsB;
}

// Whether the thread's `n`th variant pack is one of the sampled ones (next_slot says which).
// Inline, a load and three compares for the usual answer: every create runs it.
inline bool sampled(const ThreadBlock& block, std::uint64_t n) noexcept {
  if (block.sample_phase != PackSamplePhase::kIdle) return true;
  return (n - kFirst) % kPeriod == 0 || times_own_calls(n);
}

// The slot of the thread's `n`th variant pack, created at `start`: moves the block on (begins
// it, closes the previous timed op's gap, warms up again after a switch, gives the pair at its
// end).
Slot next_slot(ThreadBlock& block, std::uint64_t n, std::uint64_t start) noexcept;

// A timed op's window closed at its destroy (`end`), `window` ticks after its create: its gap
// opens, to close at the thread's next create.
void open_gap(ThreadBlock& block, bool after_real, std::uint64_t window, std::uint64_t end) noexcept;
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
    open_gap(*block, true, end - block->window_start, end);
  }
}

// A sampled proxy op ended at `end`, `ticks` after its create.
void close_proxy(std::uint64_t ticks, std::uint64_t end) noexcept;

struct Summary {
  std::uint64_t pairs;        // pairs of halves (the newest 16384 at most)
  std::uint64_t differences;  // pairs of ops, one of each half (the newest 65536 at most)
  double saved_per_hit_ns;    // the median of those ops' differences, real less proxy: the estimate
  double saved_per_hit_interquartile_ns;  // their mean without the lowest and highest quarter
  double saved_per_hit_mean_ns;           // their mean
  double real_op_ns;          // trimmed means of the halves' windows (create to destroy)
  double proxy_op_ns;
  double saved_in_window_ns;  // trimmed mean of the pairs' window differences
  double real_gap_ns;         // trimmed means of the halves' gaps (destroy to the next create)
  double proxy_gap_ns;
};
Summary summarize() noexcept;

// In a forked child: the parent's pairs are not the child's.
void forget_in_child() noexcept;

}  // namespace cudnn_fastpath::shim::pack_op_samples
