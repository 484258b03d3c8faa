// What the shim did, counted per thread (no shared write on the fast path) and reported at exit.
#pragma once

#include <cstdint>

namespace cudnn_fastpath::shim {

enum class Counter : int {
  kSkipped,           // cudnnSetStream answered from the table
  kForwarded,         // cudnnSetStream that reached cuDNN (sampled ones included)
  kSampled,           // would-be skips forwarded on purpose to time them (see entry_points.cpp)
  kSamplesTimed,      // those of them that were timed
  kSampleNanoseconds, // their total time, the clock's own cost taken off
  kVerifyMismatches,  // verify mode: cuDNN held another stream than the table said
  kTableFull,         // calls forwarded because their handle found no free slot
  kStreamsForgotten,  // slots forgotten because their stream was destroyed
  kCount
};

// Adds to the calling thread's own counter. Call only when statistics are wanted.
void count(Counter counter, std::uint64_t amount = 1) noexcept;

// Sums every thread's counters, the exited threads' included.
void sum_counters(std::uint64_t (&totals)[static_cast<int>(Counter::kCount)]) noexcept;

// In a forked child: the parent's counts are not the child's.
void reset_counters_in_child() noexcept;

}  // namespace cudnn_fastpath::shim
