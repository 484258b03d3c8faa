#include "shim/process.h"

#include <pthread.h>

#include "shim/clock.h"
#include "shim/config.h"
#include "shim/graph_replay.h"
#include "shim/handle_table.h"
#include "shim/log.h"
#include "shim/report.h"
#include "shim/stats.h"
#include "shim/variant_packs.h"

namespace cudnn_fastpath::shim {

std::atomic<std::uint32_t> g_mode{0};
std::atomic<std::uint32_t> g_feature_switches{0};

namespace {

// Written before the mode word is published (release) and read after it is seen (acquire).
std::atomic<const DispatchV1*> g_leader{nullptr};
std::atomic<std::uint64_t> g_clock_cost{0};
std::atomic<std::uint64_t> g_tick_cost{0};
std::atomic<std::uint64_t> g_ticks_at_start{0};  // with the clock's reading at the same moment
std::atomic<std::uint64_t> g_ns_at_start{0};
std::atomic<bool> g_fork_handler{false};  // relaxed: only makes the registration happen once
std::atomic<bool> g_said_loaded{false};   // relaxed: only deduplicates a message

constexpr std::uint32_t kFeatureBits = mode::kSkipping | mode::kCaching | mode::kGraphs;

// In a forked child only the forking thread exists, and nothing the parent cached may be trusted:
// the parent's handles are unusable there, cuDNN's first answer must reach the program.
void in_forked_child() {
  handle_table().reset_in_child();
  reset_counters_in_child();
  forget_packs_in_child();
  forget_graphs_in_child();
  disarm_report_in_child();
}

// kPlainSkip follows from the other bits: skipping, and neither counting nor verifying.
std::uint32_t with_plain_skip(std::uint32_t m) {
  m &= ~mode::kPlainSkip;
  if ((m & mode::kSkipping) && !(m & (mode::kCounting | mode::kVerify))) m |= mode::kPlainSkip;
  return m;
}

// The features the configuration allows: none when disabled, packs unless switched off, graphs
// unless switched off and only with the packs (only a cached pack is stable enough to replay).
std::uint32_t allowed_features(const Config& cfg) {
  if (cfg.disable) return 0;
  return mode::kSkipping | (cfg.variant_packs ? mode::kCaching : 0) |
         (cfg.variant_packs && cfg.graphs ? mode::kGraphs : 0);
}

}  // namespace

std::uint64_t clock_cost_ns() noexcept { return g_clock_cost.load(std::memory_order_relaxed); }
std::uint64_t tick_cost() noexcept { return g_tick_cost.load(std::memory_order_relaxed); }

double ticks_per_ns() noexcept {
  const std::uint64_t ns = now_ns() - g_ns_at_start.load(std::memory_order_relaxed);
  const std::uint64_t ticks_elapsed = ticks() - g_ticks_at_start.load(std::memory_order_relaxed);
  return ns ? static_cast<double>(ticks_elapsed) / static_cast<double>(ns) : 1.0;
}

std::uint32_t initialise() noexcept {
  const Config& cfg = config();
  std::uint32_t m = mode::kReady;
  if (const DispatchV1* leading = elect_leader()) {  // loader calls: no lock is held here
    g_leader.store(leading, std::memory_order_relaxed);  // published by the CAS below
    m |= mode::kFollower;
  } else if (cfg.disable) {
    m |= mode::kDisabled;
  } else {
    if (cfg.wants_report()) m |= mode::kCounting;
    if (cfg.verify) m |= mode::kVerify;
    m |= allowed_features(cfg);
  }
  m = with_plain_skip(m);
  if (m & mode::kCounting) {
    g_clock_cost.store(measure_clock_cost_ns(), std::memory_order_relaxed);
    g_tick_cost.store(measure_tick_cost(), std::memory_order_relaxed);
    g_ticks_at_start.store(ticks(), std::memory_order_relaxed);
    g_ns_at_start.store(now_ns(), std::memory_order_relaxed);
  }
  if (!g_fork_handler.exchange(true, std::memory_order_relaxed))
    pthread_atfork(nullptr, nullptr, in_forked_child);
  if (cfg.verbose && !g_said_loaded.exchange(true, std::memory_order_relaxed))
    log_line("loaded (disable=%d verify=%d stats=%d variant_packs=%d graphs=%d%s%s)", cfg.disable, cfg.verify,
             cfg.stats, cfg.variant_packs, cfg.graphs, cfg.stats_file[0] ? " stats_file=" : "", cfg.stats_file);
  // acq_rel: release publishes the leader and clock cost; on failure, acquire sees the winner's.
  std::uint32_t expected = 0;
  if (!g_mode.compare_exchange_strong(expected, m, std::memory_order_acq_rel, std::memory_order_acquire))
    return expected;
  return m;
}

const DispatchV1& leader() noexcept { return *g_leader.load(std::memory_order_relaxed); }

unsigned features() noexcept {
  const std::uint32_t m = current_mode();
  if (m & mode::kFollower) return leader().features();
  return ((m & mode::kSkipping) ? kFeatureSetStream : 0u) | ((m & mode::kCaching) ? kFeatureVariantPacks : 0u) |
         ((m & mode::kGraphs) ? kFeatureGraphs : 0u);
}

unsigned set_features(unsigned wanted) noexcept {
  std::uint32_t m = current_mode();
  if (m & mode::kFollower) return leader().set_features(wanted);
  g_feature_switches.fetch_add(1, std::memory_order_relaxed);
  const std::uint32_t requested = ((wanted & kFeatureSetStream) ? mode::kSkipping : 0u) |
                                  ((wanted & kFeatureVariantPacks) ? mode::kCaching : 0u) |
                                  ((wanted & kFeatureGraphs) && (wanted & kFeatureVariantPacks) ? mode::kGraphs : 0u);
  const std::uint32_t bits = requested & allowed_features(config());
  std::uint32_t next;
  do {
    next = with_plain_skip((m & ~kFeatureBits) | bits);
    // acq_rel, as in initialise(); relaxed readers on the fast path catch up on their next call.
  } while (!g_mode.compare_exchange_weak(m, next, std::memory_order_acq_rel, std::memory_order_acquire));
  // Whatever the table knew stops being trusted both ways: when skipping stops, so that nothing
  // cached outlives it; when it starts, so that nothing learnt before counts.
  if ((m ^ next) & mode::kSkipping) handle_table().forget_all();
  // Graphs switched off: every graph is forgotten now, so that none outlives the switch.
  if ((m & mode::kGraphs) && !(next & mode::kGraphs)) forget_all_graphs();
  return features();
}

}  // namespace cudnn_fastpath::shim
