// The words nearly every interposed call reads, side by side: one cache line and one page where they
// were two of each (the mode word and the statistics flag were defined in different files, and the
// linker put them 700 KiB apart). Inside a framework both are cold at each op; count-lines, cold:
// one data line fewer an op. Both are written about once a process (set-up, the run-time switch,
// the first cuDNN call, a fork), so the line stays shared, never bounced between cores.
#pragma once

#include <atomic>
#include <cstdint>

namespace cudnn_fastpath::shim {

struct alignas(64) EveryCallWords {
  std::atomic<std::uint32_t> mode{0};         // the process-wide mode (mode.h)
  std::atomic<bool> cudnn_calls_seen{false};  // whether the exit report has calls to cover (counters.h)
};
extern EveryCallWords g_every_call __attribute__((visibility("hidden")));  // defined in mode.cpp

}  // namespace cudnn_fastpath::shim
