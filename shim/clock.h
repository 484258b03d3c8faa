// The monotonic clock, as the statistics' samples read it.
#pragma once

#include <time.h>

#include <algorithm>
#include <cstdint>

namespace cudnn_fastpath::shim {

inline std::uint64_t now_ns() noexcept {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<std::uint64_t>(t.tv_sec) * 1000000000u + static_cast<std::uint64_t>(t.tv_nsec);
}

// The cheapest of a few back-to-back clock reads: what a timed sample's own timing adds.
inline std::uint64_t measure_clock_cost_ns() noexcept {
  std::uint64_t cheapest = ~std::uint64_t{0};
  for (int i = 0; i < 16; ++i) {
    const std::uint64_t start = now_ns();
    cheapest = std::min(cheapest, now_ns() - start);
  }
  return cheapest;
}

// Measured once, when statistics are switched on (process.cpp).
std::uint64_t clock_cost_ns() noexcept;

// `elapsed` with the clock's own cost taken off.
inline std::uint64_t net_ns(std::uint64_t elapsed) noexcept {
  const std::uint64_t cost = clock_cost_ns();
  return elapsed > cost ? elapsed - cost : 0;
}

}  // namespace cudnn_fastpath::shim
