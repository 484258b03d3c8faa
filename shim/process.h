// The shim's process-wide state: one word, set up once at the first call that needs it (without a
// lock: racing first calls compute the same word and one of them publishes it), then read by
// every slow path; and the run-time switch of cudnn_fastpath_set_features.
#pragma once

#include <atomic>
#include <cstdint>

#include "shim/dispatch.h"
#include "shim/report.h"

namespace cudnn_fastpath::shim {

namespace mode {
inline constexpr std::uint32_t kReady = 1u << 0;      // set up
inline constexpr std::uint32_t kDisabled = 1u << 1;   // CUDNN_FASTPATH_DISABLE: forward everything
inline constexpr std::uint32_t kFollower = 1u << 2;   // another copy of the shim leads: pass to it
inline constexpr std::uint32_t kCounting = 1u << 3;   // statistics wanted
inline constexpr std::uint32_t kVerify = 1u << 4;     // ask cudnnGetStream before each skip
inline constexpr std::uint32_t kSkipping = 1u << 5;   // feature: skip redundant cudnnSetStream
inline constexpr std::uint32_t kCaching = 1u << 6;    // feature: proxy and cache variant packs
inline constexpr std::uint32_t kPlainSkip = 1u << 7;  // skipping, and a skip has nothing else to do
inline constexpr std::uint32_t kGraphs = 1u << 8;     // feature: replay cached packs' executes as graphs
}  // namespace mode

// The features of cudnn_fastpath_set_features (shim/include/cudnn_fastpath/shim_control.h).
inline constexpr unsigned kFeatureSetStream = 1u;
inline constexpr unsigned kFeatureVariantPacks = 2u;
inline constexpr unsigned kFeatureGraphs = 4u;

extern std::atomic<std::uint32_t> g_mode __attribute__((visibility("hidden")));

std::uint32_t initialise() noexcept;

// The mode, set up if it is not yet. Acquire: pairs with the publishing CAS in initialise(), so
// that the leader pointer and the configuration are visible with the word.
inline std::uint32_t current_mode() noexcept {
  const std::uint32_t m = g_mode.load(std::memory_order_acquire);
  return (m & mode::kReady) ? m : initialise();
}

// The leading copy's table; valid only when the mode says kFollower.
const DispatchV1& leader() noexcept;

// cudnn_fastpath_features / cudnn_fastpath_set_features, for this copy when it leads.
unsigned features() noexcept;
unsigned set_features(unsigned wanted) noexcept;

// How many times set_features() has run: statistics drop an interval that spans a switch.
// Relaxed: only compared for equality by the thread that reads it twice.
extern std::atomic<std::uint32_t> g_feature_switches __attribute__((visibility("hidden")));
inline std::uint32_t feature_switches() noexcept { return g_feature_switches.load(std::memory_order_relaxed); }

// A cuDNN call was made by this process: its statistics are reported at exit (a forked child
// reports only once it made calls of its own).
inline void note_cudnn_call() noexcept { arm_report(); }

}  // namespace cudnn_fastpath::shim
