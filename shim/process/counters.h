// What the shim did, counted per thread (no shared write on the fast path) and summed on request.
//
// The counters are the list CUDNN_FASTPATH_COUNTERS of the public header; every count is exact,
// and counting changes no call that reaches cuDNN. Each thread that counts owns a block of a static
// array, reached through one thread-local pointer. The blocks are never freed: a thread that exits
// gives its block back (its counts stay in it, and the next owner adds to them), and whatever it
// counts after that (from another thread-exit destructor, say) goes to shared atomic totals.
// No lock anywhere.
#pragma once

#include <atomic>
#include <cstdint>

#include "cudnn_fastpath/shim_control.h"
#include "shim/process/every_call.h"

namespace cudnn_fastpath::shim {

enum class Counter : int {
#define CUDNN_FASTPATH_COUNTER_ENUMERATOR(name, group, label, what) name,
  CUDNN_FASTPATH_COUNTERS(CUDNN_FASTPATH_COUNTER_ENUMERATOR)
#undef CUDNN_FASTPATH_COUNTER_ENUMERATOR
  kCount
};
inline constexpr int kCounters = static_cast<int>(Counter::kCount);

// A thread's counters. Written only by the owning thread (a load and a store, no read-modify-write),
// read by the sum from any thread: atomics, relaxed, since totals order nothing. `owned` is
// claimed with acquire and given back with release, so a new owner adds to the final values.
// The counters a steady op touches (skipped, packs_proxied, pack_hits) share the first line.
struct alignas(64) CounterBlock {
  std::atomic<bool> owned;
  std::atomic<std::uint64_t> values[kCounters];
};

// The calling thread's block; null until it first counts, and again once it has exited.
// __thread, not thread_local: it has no dynamic initialiser, and C++ would otherwise call a TLS
// wrapper function on every access from another file. Initial-exec: one %fs-relative load, no
// call. The shim's thread-local data is about 200 bytes in all (this, callers.h's t_last_caller,
// proxy.h's spare proxy, the replay engine's per-thread block), inside the static
// TLS glibc keeps for libraries that are dlopened (rtld.optional_static_tls, 512 bytes by default);
// a preloaded shim is in static TLS anyway.
extern __thread CounterBlock* t_counters __attribute__((visibility("hidden"), tls_model("initial-exec")));

void count_slow(Counter counter, std::uint64_t amount) noexcept;

// Adds to the calling thread's own counter. Call only when statistics are wanted.
inline void count(Counter counter, std::uint64_t amount = 1) noexcept {
  CounterBlock* block = t_counters;
  if (__builtin_expect(block == nullptr, 0)) return count_slow(counter, amount);
  std::atomic<std::uint64_t>& value = block->values[static_cast<int>(counter)];
  value.store(value.load(std::memory_order_relaxed) + amount, std::memory_order_relaxed);
}

// Sums every block and the shared totals.
void sum_counters(std::uint64_t (&totals)[kCounters]) noexcept;

// Whether this process made cuDNN calls that the report at exit covers. Relaxed: a flag set by a
// thread that the exit path follows, and read there. A forked child forgets it (and its parent's
// counts) until it makes calls of its own. The flag is g_every_call's (every_call.h).
void first_cudnn_call() noexcept;

// A cuDNN call was made by this process: its statistics are reported at exit. A load on every
// slow path once set.
inline void note_cudnn_call() noexcept {
  if (__builtin_expect(!g_every_call.cudnn_calls_seen.load(std::memory_order_relaxed), 0)) first_cudnn_call();
}

inline bool cudnn_calls_seen() noexcept { return g_every_call.cudnn_calls_seen.load(std::memory_order_relaxed); }

}  // namespace cudnn_fastpath::shim
