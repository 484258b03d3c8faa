// The statistics report at exit: lines on stderr, and/or a JSON file.
#pragma once

#include <atomic>

namespace cudnn_fastpath::shim {

// Whether this process made cuDNN calls that the report at exit covers. Relaxed: a flag set by a
// thread that the exit path follows, and read there.
extern std::atomic<bool> g_report_armed __attribute__((visibility("hidden")));

// Makes the report run when the shim's destructors run (normal process exit). Idempotent, and a
// load on every slow path once armed. A process that ends by _exit(), exec or a fatal signal
// reports nothing.
inline void arm_report() noexcept {
  if (!g_report_armed.load(std::memory_order_relaxed)) g_report_armed.store(true, std::memory_order_relaxed);
}

// In a forked child: nothing to report until the child makes cuDNN calls of its own.
void disarm_report_in_child() noexcept;

}  // namespace cudnn_fastpath::shim
