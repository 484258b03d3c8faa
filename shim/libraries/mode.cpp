#include "shim/libraries/mode.h"

#include "shim/process/config.h"
#include "shim/process/log.h"

namespace cudnn_fastpath::shim {

EveryCallWords g_every_call;

namespace {

// Written before the mode word is published (release) and read after it is seen (acquire).
std::atomic<const Dispatch*> g_leader{nullptr};
std::atomic<bool> g_said_loaded{false};  // relaxed: only deduplicates a message

// kPlainSkip follows from the other bits: skipping, and neither counting nor verifying.
std::uint32_t with_plain_skip(std::uint32_t m) {
  m &= ~mode::kPlainSkip;
  if ((m & mode::kSkipping) && !(m & (mode::kCounting | mode::kVerify))) m |= mode::kPlainSkip;
  return m;
}

// The features the configuration allows: none when disabled, packs unless switched off, graphs
// unless switched off and only with the packs (only a cached pack is stable enough to replay),
// legacy replay unless it or graphs are switched off (replay needs graphs), cuBLAS unless switched
// off (its replay needs graphs too: cublas_replay.cpp asks; its heuristic cache does not).
std::uint32_t allowed_features(const Config& cfg) {
  if (cfg.disable) return 0;
  return mode::kSkipping | (cfg.variant_packs ? mode::kCaching : 0) |
         (cfg.variant_packs && cfg.graphs ? mode::kGraphs : 0) | (cfg.legacy && cfg.graphs ? mode::kLegacy : 0) |
         (cfg.cublas ? mode::kCublas : 0);
}

}  // namespace

std::uint32_t initialise() noexcept {
  const Config& cfg = config();
  std::uint32_t m = mode::kReady;
  if (const Dispatch* leading = elect_leader()) {  // loader calls: no lock is held here
    g_leader.store(leading, std::memory_order_relaxed);  // published by the CAS below
    m |= mode::kFollower;
  } else if (cfg.disable) {
    m |= mode::kDisabled;
  } else {
    if (cfg.wants_report()) m |= mode::kCounting;
    if (cfg.verify) m |= mode::kVerify;
    m |= allowed_features(cfg);
    if (cfg.graphs) m |= mode::kGraphReplay;  // read by every table call and matmul: a bit, not config()
  }
  m = with_plain_skip(m);
  if (cfg.verbose && !g_said_loaded.exchange(true, std::memory_order_relaxed))
    log_line("loaded (disable=%d verify=%d stats=%d variant_packs=%d graphs=%d legacy=%d cublas=%d relocate=%d dlsym=%d%s%s)",
             cfg.disable, cfg.verify, cfg.stats, cfg.variant_packs, cfg.graphs, cfg.legacy, cfg.cublas, cfg.relocate, cfg.dlsym,
             cfg.stats_file[0] ? " stats_file=" : "", cfg.stats_file);
  // acq_rel: release publishes the leader; on failure, acquire sees the winner's.
  std::uint32_t expected = 0;
  if (!g_every_call.mode.compare_exchange_strong(expected, m, std::memory_order_acq_rel, std::memory_order_acquire))
    return expected;
  return m;
}

const Dispatch& leader() noexcept { return *g_leader.load(std::memory_order_relaxed); }

std::uint32_t switch_features(std::uint32_t features) noexcept {
  std::uint32_t m = current_mode();
  const std::uint32_t bits = features & allowed_features(config());
  // acq_rel, as in initialise(); relaxed readers on the fast path catch up on their next call.
  while (!g_every_call.mode.compare_exchange_weak(m, with_plain_skip((m & ~mode::kFeatures) | bits),
                                                  std::memory_order_acq_rel, std::memory_order_acquire)) {
  }
  return m;
}

}  // namespace cudnn_fastpath::shim
