// What the shim did, counted per thread (no shared write on the fast path) and reported at exit.
//
// Each thread that counts owns a block of a static array, reached through one thread-local
// pointer. The blocks are never freed: a thread that exits gives its block back (its counts stay
// in it, and the next owner adds to them), and whatever it counts after that (from another
// thread-exit destructor, say) goes to shared atomic totals. No lock anywhere.
#pragma once

#include <atomic>
#include <cstdint>

namespace cudnn_fastpath::shim {

// The ones counted on every op come first: with the sampling phases below, they share the
// block's first cache line.
enum class Counter : int {
  kWouldSkip,          // cudnnSetStream the table could answer: skipped, or forwarded as a sample
  kForwarded,          // cudnnSetStream that reached cuDNN (sampled ones included)
  kPacksProxied,       // variant packs created as proxies
  kPackHits,           // proxies finalized from the cache
  kSampled,            // would-be skips forwarded on purpose to time them (see set_stream.cpp)
  kSamplesTimed,       // those of them that were timed
  kSampleNanoseconds,  // their total time, the clock's own cost taken off
  kVerifyMismatches,   // verify mode: cuDNN held another stream than the table said
  kTableFull,          // calls forwarded because their handle found no free slot
  kStreamsForgotten,   // slots forgotten because their stream was destroyed
  kPackMisses,         // proxies finalized by building a real pack
  kPackEvictions,      // cached packs destroyed to make room
  kPacksMaterialized,  // proxies turned into real packs (a call the proxy does not answer)
  kPackSamples,        // variant packs passed through on purpose, to time them (pack_op_samples.h)
  kPackProxySamples,   // proxies whose own calls were timed, create to destroy
  kPackProxyTicks,     // their total time, in time-stamp counter ticks
  kGraphsCaptured,             // executes captured as CUDA graphs (graph_replay.cpp)
  kGraphLaunches,              // executes answered by launching a graph
  kDirectExecutes,             // executes of cached packs that reached cuDNN, graphs on
  kGraphRefusalsCapturing,     // ... because the program's stream was capturing
  kGraphRefusalsHostPointer,   // ... for good: a host pointer not a known by-value tensor
  kGraphRefusalsContext,       // ... a stream of another context than the graph's, or green
  kGraphRefusalsChurn,         // ... for good: by-value bytes that kept changing
  kGraphRefusalsFailed,        // ... for good: a failed capture or instantiation, no driver
  kGraphRefusalsFull,          // ... every entry of the graph cache's set was in use
  kGraphEvictions,             // graphs destroyed to make room
  kCount
};
inline constexpr int kCounters = static_cast<int>(Counter::kCount);

// Where a thread is in sampling a block of variant packs (pack_op_samples.h), and how many ops
// each half of the block times.
enum class PackSamplePhase : std::uint8_t { kIdle, kRealWarmUp, kReal, kProxyWarmUp, kProxy };
inline constexpr int kPackOpsTimedPerHalf = 32;

// A thread's own block: its counters, its sampling phases, and the proxy variant pack it keeps
// for its next one (variant_packs.cpp). Everything a counted op touches is in the first line.
// Whoever owns the block (owned: claimed with acquire, given back with release) alone reads and
// writes the plain members; a block given back at thread exit keeps its counters for its next
// owner, which starts the sampling members again.
struct alignas(64) ThreadBlock {
  std::uint64_t proxies;    // variant packs created, the sampling phase (set_stream.cpp uses kWouldSkip)
  void* window_pack;        // the real pack whose op is being timed (pack_op_samples.h), or null
  void* spare_proxy;        // a destroyed proxy kept for this thread's next variant pack, or null
  std::atomic<bool> owned;
  PackSamplePhase sample_phase;  // kIdle unless a block is being sampled: every counted create reads it
  // Written only by the owning thread (a load and a store, no read-modify-write); read by the
  // report from another thread: atomics, relaxed, since totals order nothing.
  std::atomic<std::uint64_t> values[kCounters];
  // The sampled block (pack_op_samples.h): the half's warm-up ops since it began or the features
  // last switched, its timed ops, feature_switches() when last seen, the windows so far in ticks.
  std::uint32_t warm_ops;
  std::uint32_t timed_ops;
  std::uint32_t sample_switches;
  std::uint64_t window_start;  // window_pack's create
  std::uint64_t real_ticks;
  std::uint64_t proxy_ticks;
  std::uint32_t real_ops;
  std::uint32_t proxy_ops;
  // The gaps after the sampled ops: from a destroy to the thread's next create.
  std::uint64_t gap_start;  // the open gap's destroy, in ticks; 0 when none is open
  std::uint64_t real_gap_ticks;
  std::uint64_t proxy_gap_ticks;
  std::uint32_t real_gaps;
  std::uint32_t proxy_gaps;
  std::uint32_t gap_switches;  // feature_switches() when the gap opened
  std::uint32_t gap_window;    // the window of the op whose gap is open, in ticks
  std::uint32_t gap_position;  // and its place in its half
  bool gap_after_real;
  // Each timed op's cycle, window and gap (its create to the next create), in ticks, by half
  // (real, proxy) and place; 0 where its gap was dropped.
  std::uint32_t cycles[2][kPackOpsTimedPerHalf];

  // Forgets the sampled block in progress.
  void forget_sampled_block() noexcept {
    sample_phase = PackSamplePhase::kIdle;
    warm_ops = timed_ops = sample_switches = 0;
    window_pack = nullptr;
    window_start = real_ticks = proxy_ticks = 0;
    real_ops = proxy_ops = 0;
    gap_start = real_gap_ticks = proxy_gap_ticks = 0;
    real_gaps = proxy_gaps = gap_switches = gap_window = gap_position = 0;
    gap_after_real = false;
    for (auto& half : cycles)
      for (std::uint32_t& cycle : half) cycle = 0;
  }
};

// The calling thread's block; null until it first counts, and again once it has exited.
// __thread, not thread_local: it has no dynamic initialiser, and C++ would otherwise call a TLS
// wrapper function on every access from another file. Initial-exec: one %fs-relative load, no
// call. The shim's thread-local data is 16 bytes in all (this and callers.h's t_last_caller), well
// inside the static TLS glibc keeps for libraries that are dlopened (rtld.optional_static_tls,
// 512 bytes by default); a preloaded shim is in static TLS anyway.
extern __thread ThreadBlock* t_block __attribute__((visibility("hidden"), tls_model("initial-exec")));

void count_slow(Counter counter, std::uint64_t amount) noexcept;

// Adds to the calling thread's own counter. Call only when statistics are wanted.
inline void count(Counter counter, std::uint64_t amount = 1) noexcept {
  ThreadBlock* block = t_block;
  if (__builtin_expect(block == nullptr, 0)) return count_slow(counter, amount);
  std::atomic<std::uint64_t>& value = block->values[static_cast<int>(counter)];
  value.store(value.load(std::memory_order_relaxed) + amount, std::memory_order_relaxed);
}

ThreadBlock* claim_block() noexcept;

// The calling thread's block, claiming one if needed; nullptr once it has exited or when every
// block is owned (then count() still works, through the shared totals).
inline ThreadBlock* own_block() noexcept {
  ThreadBlock* block = t_block;
  return __builtin_expect(block != nullptr, 1) ? block : claim_block();
}

// Sums every block and the shared totals.
void sum_counters(std::uint64_t (&totals)[kCounters]) noexcept;

// In a forked child: the parent's counts are not the child's, and the other threads' blocks have
// no owner any more.
void reset_counters_in_child() noexcept;

}  // namespace cudnn_fastpath::shim
