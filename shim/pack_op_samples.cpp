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
// Relaxed, all: the report reads the pairs after the program's threads are done with them
// (at exit), and a pair read half-written would only be one sample off.
std::atomic<std::uint64_t> g_pairs_written{0};

std::uint64_t clamp32(std::uint64_t ticks) { return ticks < 0xffffffffu ? ticks : 0xffffffffu; }

// The share of the pairs' figures left out at each end.
constexpr std::uint64_t kTrimPercent = 10;

std::int64_t scratch[kPairs];  // the report's, at exit: no allocation there

int by_value(const void* a, const void* b) {
  const std::int64_t x = *static_cast<const std::int64_t*>(a), y = *static_cast<const std::int64_t*>(b);
  return (x > y) - (x < y);
}

// The mean of `values` without its kTrimPercent smallest and largest (sorts them).
double trimmed_mean(std::int64_t* values, std::uint64_t n) {
  if (n == 0) return 0.0;
  std::qsort(values, n, sizeof *values, by_value);
  const std::uint64_t cut = n * kTrimPercent / 100;
  double sum = 0.0;
  for (std::uint64_t i = cut; i < n - cut; ++i) sum += static_cast<double>(values[i]);
  return sum / static_cast<double>(n - 2 * cut);
}

}  // namespace

void open_gap(ThreadBlock& block, bool after_real, std::uint64_t end) noexcept {
  block.gap_start = end;
  block.gap_after_real = after_real;
  block.gap_switches = feature_switches();
}

void close_gap(ThreadBlock& block, std::uint64_t start) noexcept {
  if (block.gap_start == 0) return;
  // A gap that spans a switch of the features (an A/B's other arm, say) is not one op's.
  if (block.gap_switches == feature_switches() && start > block.gap_start) {
    if (block.gap_after_real) {
      block.real_gap_ticks += start - block.gap_start;
      ++block.real_gaps;
    } else {
      block.proxy_gap_ticks += start - block.gap_start;
      ++block.proxy_gaps;
    }
  }
  block.gap_start = 0;
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
  open_gap(*block, false, end);
}

void finish_block(ThreadBlock& block) noexcept {
  // Both halves whole (a miss, a real pack destroyed by another thread, or a switch in between
  // leaves one short), and most gaps measured (a switch drops one): a pair.
  const bool complete = block.real_ops == kBlock && block.proxy_ops == kBlock &&
                        block.real_gaps >= kBlock / 2 && block.proxy_gaps >= kBlock / 2;
  if (complete) {
    const std::uint64_t windows = clamp32(block.real_ticks / kBlock) << 32 | clamp32(block.proxy_ticks / kBlock);
    const std::uint64_t gaps = clamp32(block.real_gap_ticks / block.real_gaps) << 32 |
                               clamp32(block.proxy_gap_ticks / block.proxy_gaps);
    const std::uint64_t index = g_pairs_written.fetch_add(1, std::memory_order_relaxed) % kPairs;
    g_pairs[index].store(windows, std::memory_order_relaxed);
    g_gap_pairs[index].store(gaps, std::memory_order_relaxed);
  }
  block.forget_windows();
}

Summary summarize() noexcept {
  Summary s{};
  const std::uint64_t written = g_pairs_written.load(std::memory_order_relaxed);
  const std::uint64_t n = written < kPairs ? written : kPairs;
  if (n == 0) return s;
  const double per_ns = ticks_per_ns();
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
  s.real_gap_ns = figure([&](std::uint64_t, std::uint64_t g) { return real(g); });
  s.proxy_gap_ns = figure([&](std::uint64_t, std::uint64_t g) { return proxy(g); });
  s.saved_per_hit_with_gaps_ns =
      figure([&](std::uint64_t w, std::uint64_t g) { return real(w) + real(g) - proxy(w) - proxy(g); });
  s.saved_per_hit_ns = figure([&](std::uint64_t w, std::uint64_t) { return real(w) - proxy(w); });
  double sum = 0.0;  // scratch holds the differences, sorted
  for (std::uint64_t i = 0; i < n; ++i) sum += static_cast<double>(scratch[i]);
  s.saved_per_hit_untrimmed_ns = sum / static_cast<double>(n) / per_ns;
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
}

}  // namespace cudnn_fastpath::shim::pack_op_samples
