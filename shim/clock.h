// The clocks the statistics' samples read: the monotonic clock for the real calls they time
// (hundreds of nanoseconds and more), and the processor's time-stamp counter for the shim's own
// work (tens of nanoseconds, where a clock_gettime pair, about 60 ns on the H200 machine, would
// drown what it measures).
#pragma once

#include <time.h>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#include <algorithm>
#include <cstdint>

namespace cudnn_fastpath::shim {

inline std::uint64_t now_ns() noexcept {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<std::uint64_t>(t.tv_sec) * 1000000000u + static_cast<std::uint64_t>(t.tv_nsec);
}

// The cheapest of a few back-to-back reads of `read`: what a timed sample's own timing adds.
template <typename Read>
std::uint64_t cheapest_read_pair(Read&& read) noexcept {
  std::uint64_t cheapest = ~std::uint64_t{0};
  for (int i = 0; i < 16; ++i) {
    const std::uint64_t start = read();
    cheapest = std::min(cheapest, read() - start);
  }
  return cheapest;
}
inline std::uint64_t measure_clock_cost_ns() noexcept { return cheapest_read_pair(now_ns); }

// Measured once, when statistics are switched on (process.cpp).
std::uint64_t clock_cost_ns() noexcept;

// `elapsed` with the clock's own cost taken off.
inline std::uint64_t net_ns(std::uint64_t elapsed) noexcept {
  const std::uint64_t cost = clock_cost_ns();
  return elapsed > cost ? elapsed - cost : 0;
}

// Ticks of the time-stamp counter (the monotonic clock's nanoseconds where there is none). Not
// serialising: intervals of tens of nanoseconds are what it is for, and their sum over many
// samples is what counts.
inline std::uint64_t ticks() noexcept {
#if defined(__x86_64__)
  return __rdtsc();
#else
  return now_ns();
#endif
}

inline std::uint64_t measure_tick_cost() noexcept { return cheapest_read_pair(ticks); }

// Measured with clock_cost_ns(); ticks_per_ns() compares the counter with the clock since then.
std::uint64_t tick_cost() noexcept;
double ticks_per_ns() noexcept;

// `elapsed` ticks with the counter's own cost taken off.
inline std::uint64_t net_ticks(std::uint64_t elapsed) noexcept {
  const std::uint64_t cost = tick_cost();
  return elapsed > cost ? elapsed - cost : 0;
}

}  // namespace cudnn_fastpath::shim
