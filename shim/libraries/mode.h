// The shim's process-wide mode: one word, set up once at the first call that needs it (without a
// lock: racing first calls compute the same word and one of them publishes it), then read by
// every path. Which copy of the shim leads is part of it.
#pragma once

#include <atomic>
#include <cstdint>

#include "shim/libraries/dispatch.h"
#include "shim/process/code_layout.h"
#include "shim/process/every_call.h"

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
inline constexpr std::uint32_t kLegacy = 1u << 9;     // feature: replay steady calls of cuDNN's legacy API
inline constexpr std::uint32_t kCublas = 1u << 10;    // feature: cuBLASLt/cuBLAS replay and the heuristic cache
inline constexpr std::uint32_t kGraphReplay = 1u << 11;  // CUDNN_FASTPATH_GRAPHS: table calls and matmuls may replay (no switch)
inline constexpr std::uint32_t kFeatures = kSkipping | kCaching | kGraphs | kLegacy | kCublas;  // what the run-time switch moves
}  // namespace mode

// The mode word itself is g_every_call.mode (every_call.h).

// Cold: it runs once a process; out of line, so that every entry point's steady path stays short.
CUDNN_FASTPATH_COLD std::uint32_t initialise() noexcept;

// The mode, set up if it is not yet. Acquire: pairs with the publishing CAS in initialise(), so
// that the leader pointer and the configuration are visible with the word.
inline std::uint32_t current_mode() noexcept {
  const std::uint32_t m = g_every_call.mode.load(std::memory_order_acquire);
  return (m & mode::kReady) ? m : initialise();
}

// The leading copy's functions, as this copy reaches them; valid only when the mode says kFollower.
CUDNN_FASTPATH_COLD const Dispatch& leader() noexcept;  // a follower's pass-through

// Replaces the feature bits with `features` (mode bits, within what the configuration allows) and
// returns the mode before. Not for a follower.
std::uint32_t switch_features(std::uint32_t features) noexcept;

}  // namespace cudnn_fastpath::shim
