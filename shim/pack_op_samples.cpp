#include "shim/pack_op_samples.h"

#include <atomic>
#include <cstdlib>

#include "shim/clock.h"
#include "shim/process.h"

namespace cudnn_fastpath::shim::pack_op_samples {
namespace {

// {real ticks: 32, proxy ticks: 32} per pair, each a half's mean: its windows in g_pairs, its gaps
// in g_gap_pairs at the same index. 16384 pairs (256 KiB of zero pages until used) cover 32
// million variant packs; then the newest overwrite the oldest.
constexpr std::uint64_t kPairs = 16384;
std::atomic<std::uint64_t> g_pairs[kPairs];
std::atomic<std::uint64_t> g_gap_pairs[kPairs];
// The ops' cycle differences (real less proxy, ticks), up to 32 per pair: the newest 65536.
constexpr std::uint64_t kDifferences = 65536;
std::atomic<std::int32_t> g_differences[kDifferences];
// Relaxed, all: the report reads the pairs after the program's threads are done with them
// (at exit), and a pair read half-written would only be one sample off.
std::atomic<std::uint64_t> g_pairs_written{0};
std::atomic<std::uint64_t> g_differences_written{0};

std::uint64_t clamp32(std::uint64_t ticks) { return ticks < 0xffffffffu ? ticks : 0xffffffffu; }

// The share of the pairs' figures left out at each end.
constexpr std::uint64_t kTrimPercent = 10;

std::int64_t scratch[kDifferences];  // the report's, at exit: no allocation there

int by_value(const void* a, const void* b) {
  const std::int64_t x = *static_cast<const std::int64_t*>(a), y = *static_cast<const std::int64_t*>(b);
  return (x > y) - (x < y);
}

// The mean of sorted `values` without the `percent` smallest and largest.
double trimmed_mean_of_sorted(const std::int64_t* values, std::uint64_t n, std::uint64_t percent) {
  if (n == 0) return 0.0;
  const std::uint64_t cut = n * percent / 100;
  double sum = 0.0;
  for (std::uint64_t i = cut; i < n - cut; ++i) sum += static_cast<double>(values[i]);
  return sum / static_cast<double>(n - 2 * cut);
}

// The median of sorted `values`.
double median_of_sorted(const std::int64_t* values, std::uint64_t n) {
  if (n == 0) return 0.0;
  return n % 2 ? static_cast<double>(values[n / 2])
               : (static_cast<double>(values[n / 2 - 1]) + static_cast<double>(values[n / 2])) / 2.0;
}

// The mean of `values` without its kTrimPercent smallest and largest (sorts them).
double trimmed_mean(std::int64_t* values, std::uint64_t n) {
  std::qsort(values, n, sizeof *values, by_value);
  return trimmed_mean_of_sorted(values, n, kTrimPercent);
}

std::int32_t clamp_difference(std::int64_t ticks) {
  constexpr std::int64_t kMost = 0x7fffffff;
  return static_cast<std::int32_t>(ticks > kMost ? kMost : ticks < -kMost ? -kMost : ticks);
}

// The create after a timed op: closes its gap, if one is open, and so its cycle.
void close_gap(ThreadBlock& block, std::uint64_t start) noexcept {
  if (block.gap_start == 0) return;
  // A gap that spans a switch of the features (an A/B's other arm, say) is not one op's.
  if (block.gap_switches == feature_switches() && start > block.gap_start) {
    const std::uint64_t gap = start - block.gap_start;
    if (block.gap_after_real) {
      block.real_gap_ticks += gap;
      ++block.real_gaps;
    } else {
      block.proxy_gap_ticks += gap;
      ++block.proxy_gaps;
    }
    if (block.gap_position < kTimed) {
      const std::uint64_t cycle = clamp32(block.gap_window + gap);
      block.cycles[block.gap_after_real ? 0 : 1][block.gap_position] = cycle != 0 ? static_cast<std::uint32_t>(cycle) : 1;
    }
  }
  block.gap_start = 0;
}

// The create after the block: the pair, if both halves are whole.
void finish_block(ThreadBlock& block) noexcept {
  // Both halves whole (a miss, a real pack destroyed by another thread, or a switch in between
  // leaves one short), and most gaps measured (a switch drops one): a pair.
  const bool complete = block.real_ops == kTimed && block.proxy_ops == kTimed &&
                        block.real_gaps >= kTimed / 2 && block.proxy_gaps >= kTimed / 2;
  if (complete) {
    const std::uint64_t windows = clamp32(block.real_ticks / kTimed) << 32 | clamp32(block.proxy_ticks / kTimed);
    const std::uint64_t gaps = clamp32(block.real_gap_ticks / block.real_gaps) << 32 |
                               clamp32(block.proxy_gap_ticks / block.proxy_gaps);
    const std::uint64_t index = g_pairs_written.fetch_add(1, std::memory_order_relaxed) % kPairs;
    g_pairs[index].store(windows, std::memory_order_relaxed);
    g_gap_pairs[index].store(gaps, std::memory_order_relaxed);
    // The ops in the same place of the two halves: the same op of the program's loop when its
    // length divides 64 (kWarmUp + kTimed), as with 16 convolutions or 16 SDPA calls a pass.
    std::int32_t differences[kTimed];
    std::uint64_t n = 0;
    for (std::uint32_t i = 0; i < kTimed; ++i)
      if (block.cycles[0][i] != 0 && block.cycles[1][i] != 0)
        differences[n++] = clamp_difference(static_cast<std::int64_t>(block.cycles[0][i]) - block.cycles[1][i]);
    const std::uint64_t first = g_differences_written.fetch_add(n, std::memory_order_relaxed);
    for (std::uint64_t i = 0; i < n; ++i)
      g_differences[(first + i) % kDifferences].store(differences[i], std::memory_order_relaxed);
  }
  block.forget_sampled_block();
}

}  // namespace

void open_gap(ThreadBlock& block, bool after_real, std::uint64_t window, std::uint64_t end) noexcept {
  block.gap_start = end;
  block.gap_after_real = after_real;
  block.gap_switches = feature_switches();
  block.gap_window = static_cast<std::uint32_t>(clamp32(window));
  block.gap_position = (after_real ? block.real_ops : block.proxy_ops) - 1;  // the op's place, by window close
}

void open_real(ThreadBlock& block, void* pack, std::uint64_t start) noexcept {
  block.window_pack = pack;
  block.window_start = start;
}

void close_proxy(std::uint64_t ticks, std::uint64_t end) noexcept {
  ThreadBlock* block = t_block;
  if (block == nullptr) return;
  block->proxy_ticks += ticks;
  ++block->proxy_ops;
  open_gap(*block, false, ticks, end);
}

// The slot of a pack outside the blocks.
Slot unsampled_slot(std::uint64_t n) noexcept {
  return times_own_calls(n) ? Slot::kProxyOwnCalls : Slot::kNone;
}

Slot next_slot(ThreadBlock& block, std::uint64_t n, std::uint64_t start) noexcept {
  const std::uint64_t offset = (n - kFirst) % kPeriod;  // in the block, while one is sampled
  if (offset == 0) {  // a block begins; one still in progress is dropped
    block.forget_sampled_block();
    block.sample_phase = PackSamplePhase::kRealWarmUp;
    block.sample_switches = feature_switches();
  } else {
    close_gap(block, start);  // the previous op's, if it was timed
    if (block.sample_phase == PackSamplePhase::kIdle) return unsampled_slot(n);
    if (block.sample_phase == PackSamplePhase::kProxy && block.timed_ops == kTimed) {
      finish_block(block);  // the create after the block
      return Slot::kNone;
    }
    // The features switched since the last op (an A/B's other arm ran, say): the half warms up
    // again, keeping the ops it timed before.
    const std::uint32_t switches = feature_switches();
    if (switches != block.sample_switches) {
      block.sample_switches = switches;
      block.warm_ops = 0;
      block.sample_phase = block.sample_phase <= PackSamplePhase::kReal ? PackSamplePhase::kRealWarmUp
                                                                         : PackSamplePhase::kProxyWarmUp;
    }
    // Every pack of the real half so far was passed through: a program that switches too often
    // for the half to fill gives up no more than kMaxRealHalf of a period's packs.
    if (block.sample_phase <= PackSamplePhase::kReal && offset >= kMaxRealHalf) {
      block.forget_sampled_block();
      return unsampled_slot(n);
    }
  }
  switch (block.sample_phase) {
    case PackSamplePhase::kRealWarmUp:
      if (++block.warm_ops == kWarmUp) block.sample_phase = PackSamplePhase::kReal;
      return Slot::kRealUntimed;
    case PackSamplePhase::kReal:
      if (++block.timed_ops == kTimed) {
        block.sample_phase = PackSamplePhase::kProxyWarmUp;
        block.warm_ops = block.timed_ops = 0;
      }
      return Slot::kReal;
    case PackSamplePhase::kProxyWarmUp:
      if (++block.warm_ops == kWarmUp) block.sample_phase = PackSamplePhase::kProxy;
      return Slot::kProxyUntimed;
    case PackSamplePhase::kProxy:
      ++block.timed_ops;
      return Slot::kProxy;
    case PackSamplePhase::kIdle:
      break;
  }
  return Slot::kNone;
}

Summary summarize() noexcept {
  Summary s{};
  const double per_ns = ticks_per_ns();
  const std::uint64_t differences_written = g_differences_written.load(std::memory_order_relaxed);
  s.differences = differences_written < kDifferences ? differences_written : kDifferences;
  for (std::uint64_t i = 0; i < s.differences; ++i) scratch[i] = g_differences[i].load(std::memory_order_relaxed);
  std::qsort(scratch, s.differences, sizeof *scratch, by_value);
  s.saved_per_hit_ns = median_of_sorted(scratch, s.differences) / per_ns;
  s.saved_per_hit_interquartile_ns = trimmed_mean_of_sorted(scratch, s.differences, 25) / per_ns;
  s.saved_per_hit_mean_ns = trimmed_mean_of_sorted(scratch, s.differences, 0) / per_ns;

  const std::uint64_t written = g_pairs_written.load(std::memory_order_relaxed);
  const std::uint64_t n = written < kPairs ? written : kPairs;
  if (n == 0) return s;
  const auto real = [](std::uint64_t pair) { return static_cast<std::int64_t>(pair >> 32); };
  const auto proxy = [](std::uint64_t pair) { return static_cast<std::int64_t>(pair & 0xffffffffu); };
  // One figure: `value` of each pair's windows and gaps, trimmed.
  const auto figure = [&](auto value) {
    for (std::uint64_t i = 0; i < n; ++i)
      scratch[i] = value(g_pairs[i].load(std::memory_order_relaxed), g_gap_pairs[i].load(std::memory_order_relaxed));
    return trimmed_mean(scratch, n) / per_ns;
  };
  s.real_op_ns = figure([&](std::uint64_t w, std::uint64_t) { return real(w); });
  s.proxy_op_ns = figure([&](std::uint64_t w, std::uint64_t) { return proxy(w); });
  s.saved_in_window_ns = figure([&](std::uint64_t w, std::uint64_t) { return real(w) - proxy(w); });
  s.real_gap_ns = figure([&](std::uint64_t, std::uint64_t g) { return real(g); });
  s.proxy_gap_ns = figure([&](std::uint64_t, std::uint64_t g) { return proxy(g); });
  s.pairs = n;
  return s;
}

void forget_in_child() noexcept {
  // Only pairs that were written are touched: the rest are zero pages nobody faulted in.
  const std::uint64_t written = g_pairs_written.load(std::memory_order_relaxed);
  for (std::uint64_t i = 0; i < written && i < kPairs; ++i) {
    g_pairs[i].store(0, std::memory_order_relaxed);
    g_gap_pairs[i].store(0, std::memory_order_relaxed);
  }
  g_pairs_written.store(0, std::memory_order_relaxed);
  const std::uint64_t differences = g_differences_written.load(std::memory_order_relaxed);
  for (std::uint64_t i = 0; i < differences && i < kDifferences; ++i) g_differences[i].store(0, std::memory_order_relaxed);
  g_differences_written.store(0, std::memory_order_relaxed);
}

}  // namespace cudnn_fastpath::shim::pack_op_samples
