// Statistics for the variant-pack cache: what a hit saves, measured the way the in-process A/B
// measures it, inside the program, on its own ops.
//
// Once in every kPeriod variant packs a thread creates, four ops in a row are sampled:
//   kRealWarmUp   the pack is passed through (a real one, as with the cache off), untimed: it
//                 brings cuDNN's pack code back to where a program without the cache keeps it,
//   kRealTimed    passed through again, and timed from its create to its destroy,
//   kProxyWarmUp  a proxy, untimed: the shim's own code back to where a steady op finds it,
//   kProxyTimed   a proxy, timed from its create to its destroy (kept only if it was a hit).
// A window holds everything the program does between the two calls (its own code, the execute)
// and the cache effects of the calls on that code: the difference of a pair is what the A/B sees
// for one op, and a pair, made of two neighbouring ops, shares the program's state. The shim's
// own share alone (a proxy's calls, create to destroy) is timed at kProxyOwnCalls, for the
// footprint figure; each of these is a fraction of a percent of the ops.
//
// The pairs go to one shared array (a relaxed fetch_add per pair, one pair in kPeriod ops); the
// report takes a trimmed mean of their differences, since a window now and then holds an
// interrupt or a page fault, and both halves of a pair are equally exposed to those.
#pragma once

#include <cstdint>

#include "shim/clock.h"
#include "shim/stats.h"

namespace cudnn_fastpath::shim::pack_op_samples {

enum class Slot : std::uint8_t { kNone, kRealWarmUp, kRealTimed, kProxyWarmUp, kProxyTimed, kProxyOwnCalls };

inline constexpr std::uint64_t kPeriod = 256;
inline constexpr std::uint64_t kFirst = 128;  // the slots are kFirst .. kFirst + 4 of each period
inline constexpr std::uint64_t kOwnCallsPeriod = 512;  // kProxyOwnCalls: every other period

// The slot of a thread's `n`th variant pack. Inline, one compare for the usual answer: every
// create runs it.
inline Slot slot_of(std::uint64_t n) noexcept {
  const std::uint64_t offset = (n - kFirst) % kPeriod;
  if (__builtin_expect(offset > 4, 1)) return Slot::kNone;
  if (offset == 4) return (n % kOwnCallsPeriod) == (kFirst + 4) % kOwnCallsPeriod ? Slot::kProxyOwnCalls : Slot::kNone;
  return static_cast<Slot>(offset + 1);
}

// A timed real op began: `pack` is its descriptor, `start` its create's first tick.
void open_real(ThreadBlock& block, void* pack, std::uint64_t start) noexcept;

// Called when a descriptor that is not a proxy has been destroyed: closes the thread's real
// window if `pack` was its descriptor. Cheap when it was not (a thread-local load, a compare).
inline void close_real_if_timed(const void* pack) noexcept {
  ThreadBlock* block = t_block;
  if (__builtin_expect(block != nullptr && block->window_pack == pack && pack != nullptr, 0)) {
    block->window_pack = nullptr;
    block->pending_real_ticks = ticks() - block->window_start;
  }
}

// A timed proxy op ended, `ticks` from create to destroy: with the thread's real window just
// before it, a pair.
void close_proxy(std::uint64_t ticks) noexcept;

struct Summary {
  std::uint64_t pairs;       // pairs the figures come from (the newest 16384 at most), before trimming
  double real_op_ns;         // trimmed means of the windows
  double proxy_op_ns;
  double saved_per_hit_ns;   // trimmed mean of the pairs' differences (real less proxy)
};
Summary summarize() noexcept;

// In a forked child: the parent's pairs are not the child's.
void forget_in_child() noexcept;

}  // namespace cudnn_fastpath::shim::pack_op_samples
