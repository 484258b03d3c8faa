// One handle's cached stream, as a single 64-bit word, and the protocol that keeps it honest.
//
//   bit 63      valid: the backend holds `stream` (and no forwarding call is in flight)
//   bit 62      overlap: two forwarding calls were in flight at once since the count was last zero
//   bits 48-61  in-flight count: forwarding calls that entered and have not left
//   bits 0-47   stream, meaningful only while valid
//
// Invariant: whenever the count is zero, a valid word holding S means the last call that reached
// the backend for this handle set S and succeeded. A forwarding call enters (clears valid, bumps the
// count, notes an overlap), makes the real call, and leaves (drops the count). Only the last caller
// out publishes, and only if its call succeeded, nobody overlapped it and its stream fits 48 bits;
// otherwise the word becomes unknown, never stale. Sequential use is therefore exact, and a race
// (which cuDNN forbids, but programs commit) costs one extra forward, never a wrong skip.
#pragma once

#include <atomic>
#include <cstdint>

namespace cudnn_fastpath {

class SlotState {
 public:
  static constexpr std::uint64_t kValid = std::uint64_t{1} << 63;
  static constexpr std::uint64_t kOverlap = std::uint64_t{1} << 62;
  static constexpr int kCountShift = 48;
  static constexpr std::uint64_t kCountOne = std::uint64_t{1} << kCountShift;
  static constexpr std::uint64_t kCountMask = (std::uint64_t{1} << 62) - kCountOne;
  static constexpr std::uint64_t kStreamMask = kCountOne - 1;

  // What enter() handed out; leave() needs it back.
  enum class Ticket : std::uint8_t { kCounted, kUncounted };

  // A stream the word can represent. Others are forwarded every time, never cached.
  static constexpr bool fits(std::uintptr_t stream) noexcept { return stream <= kStreamMask; }

  // The fast path: one acquire load and a compare. Acquire pairs with the release half of the
  // publishing CAS in leave(), so whoever skips also sees everything the publisher did before
  // (the resolved real functions and the configuration, in the shim).
  bool holds(std::uintptr_t stream) const noexcept {
    return fits(stream) && word_.load(std::memory_order_acquire) == (kValid | stream);
  }

  // Before a forwarding call. acq_rel: the acquire half orders the real call after every earlier
  // publication or invalidation; the release half makes the cleared valid bit visible before it.
  Ticket enter() noexcept {
    std::uint64_t old = word_.load(std::memory_order_relaxed);
    for (;;) {
      const std::uint64_t count = old & kCountMask;
      if (count == kCountMask) {
        // 16383 callers in flight on one handle: do not count this one, but make sure none of
        // them publishes.
        if (word_.compare_exchange_weak(old, old | kOverlap, std::memory_order_acq_rel,
                                        std::memory_order_relaxed))
          return Ticket::kUncounted;
        continue;
      }
      std::uint64_t next = (old & (kOverlap | kCountMask)) + kCountOne;
      if (count != 0) next |= kOverlap;
      if (word_.compare_exchange_weak(old, next, std::memory_order_acq_rel,
                                      std::memory_order_relaxed))
        return Ticket::kCounted;
    }
  }

  // After the real call. acq_rel: release publishes the new stream after the real call that set
  // it (and after everything this thread did before); acquire sees the other callers' overlap marks.
  void leave(Ticket ticket, std::uintptr_t stream, bool succeeded) noexcept {
    if (ticket == Ticket::kUncounted) return;
    std::uint64_t old = word_.load(std::memory_order_relaxed);
    for (;;) {
      std::uint64_t next = old - kCountOne;
      if ((next & kCountMask) == 0) {
        const bool clean = succeeded && !(old & kOverlap) && fits(stream);
        next = clean ? (kValid | stream) : 0;
      }
      if (word_.compare_exchange_weak(old, next, std::memory_order_acq_rel,
                                      std::memory_order_relaxed))
        return;
    }
  }

  // The handle or its stream changed behind our back (create, destroy, stream destroyed): the word
  // becomes unknown, and callers still in flight are barred from publishing. acq_rel as in enter().
  void forget() noexcept {
    std::uint64_t old = word_.load(std::memory_order_relaxed);
    for (;;) {
      const std::uint64_t next = (old & kCountMask) ? ((old & kCountMask) | kOverlap) : 0;
      if (word_.compare_exchange_weak(old, next, std::memory_order_acq_rel,
                                      std::memory_order_relaxed))
        return;
    }
  }

  // forget(), but only if the word holds `stream`. Used when a stream is destroyed.
  bool forget_if_holds(std::uintptr_t stream) noexcept {
    if (!fits(stream)) return false;
    std::uint64_t expected = kValid | stream;
    // Acquire on failure is not needed: a word that moved on no longer holds the dead stream, or
    // was re-published by a call that made cuDNN hold it again after the destroy.
    return word_.compare_exchange_strong(expected, 0, std::memory_order_acq_rel,
                                         std::memory_order_relaxed);
  }

  // Only in a freshly forked child, where the one thread that exists holds no ticket: relaxed.
  void reset() noexcept { word_.store(0, std::memory_order_relaxed); }

  // For statistics and tests.
  std::uint64_t raw() const noexcept { return word_.load(std::memory_order_acquire); }

 private:
  std::atomic<std::uint64_t> word_{0};
};

}  // namespace cudnn_fastpath
