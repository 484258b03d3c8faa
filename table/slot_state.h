// One handle's cached stream, as a single 64-bit word, and the protocol that keeps it honest.
//
//   bit 63      valid: the backend holds `stream` (and no forwarding call is in flight)
//   bit 62      overlap: two forwarding calls were in flight at once since the count was last zero
//   bit 61      poisoned: a caller entered uncounted (the count was full); never valid again
//   bits 48-60  in-flight count: forwarding calls that entered and have not left
//   bits 0-47   stream, meaningful only while valid
//
// Invariant: whenever the count is zero, a valid word holding S means the last call that reached
// the backend for this handle set S and succeeded. A forwarding call enters (clears valid, bumps the
// count, notes an overlap), makes the real call, and leaves (drops the count). Only the last caller
// out publishes, and only if its call succeeded, nobody overlapped it and its stream is cacheable;
// otherwise the word becomes unknown, never stale. Sequential use is therefore exact, and a race
// (which cuDNN forbids, but programs commit) costs one extra forward, never a wrong skip.
//
// The count has room for 8191 callers in flight on one handle. The next one cannot be counted, so
// nobody could tell when it leaves: it poisons the word instead, which then never publishes again
// (until a forked child resets it). Publishing after the counted callers left would otherwise let a
// skip trust a stream that the uncounted caller's real call may still overwrite.
#pragma once

#include <atomic>
#include <cstdint>

namespace cudnn_fastpath {

class SlotState {
 public:
  static constexpr std::uint64_t kValid = std::uint64_t{1} << 63;
  static constexpr std::uint64_t kOverlap = std::uint64_t{1} << 62;
  static constexpr std::uint64_t kPoisoned = std::uint64_t{1} << 61;
  static constexpr int kCountShift = 48;
  static constexpr std::uint64_t kCountOne = std::uint64_t{1} << kCountShift;
  static constexpr std::uint64_t kCountMask = kPoisoned - kCountOne;
  static constexpr std::uint64_t kStreamMask = kCountOne - 1;

  // cudaStreamPerThread: a name that means the calling thread's own stream, so a handle that was
  // given it by one thread does not hold "it" for another. NULL and cudaStreamLegacy (0x1) name the
  // one legacy default stream of every thread (cuDNN's kernels are built for the legacy default
  // stream), so they are cached like any other stream.
  static constexpr std::uintptr_t kPerThreadStream = 0x2;

  // What enter() handed out; leave() needs it back.
  enum class Ticket : std::uint8_t { kCounted, kUncounted };

  // A stream the word may publish. Others are forwarded every time, never cached.
  static constexpr bool cacheable(std::uintptr_t stream) noexcept {
    return stream <= kStreamMask && stream != kPerThreadStream;
  }

  // The fast path: one acquire load, an exclusive or and a compare. A word is only ever published
  // as kValid | (a cacheable stream); the exclusive or is kValid exactly when the word is that and
  // the stream has no bit of its own above the stream bits, so an uncacheable stream never matches
  // (a wide one is not mistaken for its low bits) and needs no separate check. Acquire pairs with
  // the release half of the publishing CAS in leave(), so whoever skips also sees everything the
  // publisher did before (in the shim: the resolved real functions and the configuration).
  bool holds(std::uintptr_t stream) const noexcept {
    return (word_.load(std::memory_order_acquire) ^ stream) == kValid;
  }

  // The stream the word holds, if it is valid (graph replay launches on it). Acquire, as in holds().
  bool held(std::uintptr_t& stream) const noexcept {
    const std::uint64_t word = word_.load(std::memory_order_acquire);
    if ((word & ~kStreamMask) != kValid) return false;
    stream = word & kStreamMask;
    return true;
  }

  // Before a forwarding call. acq_rel: the acquire half orders the real call after every earlier
  // publication or invalidation; the release half makes the cleared valid bit visible before it.
  Ticket enter() noexcept {
    std::uint64_t old = word_.load(std::memory_order_relaxed);
    for (;;) {
      const std::uint64_t count = old & kCountMask;
      if (count == kCountMask) {
        if (word_.compare_exchange_weak(old, (old & ~kValid) | kPoisoned, std::memory_order_acq_rel,
                                        std::memory_order_relaxed))
          return Ticket::kUncounted;
        continue;
      }
      std::uint64_t next = (old & (kOverlap | kPoisoned | kCountMask)) + kCountOne;
      if (count != 0) next |= kOverlap;
      if (word_.compare_exchange_weak(old, next, std::memory_order_acq_rel,
                                      std::memory_order_relaxed))
        return Ticket::kCounted;
    }
  }

  // After the real call. acq_rel: release publishes the new stream after the real call that set
  // it (and after everything this thread did before); acquire sees the other callers' marks.
  void leave(Ticket ticket, std::uintptr_t stream, bool succeeded) noexcept {
    if (ticket == Ticket::kUncounted) return;  // the poison already bars every publication
    std::uint64_t old = word_.load(std::memory_order_relaxed);
    for (;;) {
      std::uint64_t next = old - kCountOne;
      if ((next & kCountMask) == 0) {
        const bool clean = succeeded && !(old & (kOverlap | kPoisoned)) && cacheable(stream);
        next = clean ? (kValid | stream) : (old & kPoisoned);
      }
      if (word_.compare_exchange_weak(old, next, std::memory_order_acq_rel,
                                      std::memory_order_relaxed))
        return;
    }
  }

  // The handle or its stream changed behind our back (create, destroy, a slot changing hands): the
  // word becomes unknown, and callers still in flight are barred from publishing. acq_rel as in
  // enter(): whoever enters after this sees what preceded it (in the table: the slot's new key).
  void forget() noexcept {
    std::uint64_t old = word_.load(std::memory_order_relaxed);
    for (;;) {
      const std::uint64_t in_flight = old & kCountMask;
      const std::uint64_t next = (old & kPoisoned) | (in_flight ? (in_flight | kOverlap) : 0);
      if (word_.compare_exchange_weak(old, next, std::memory_order_acq_rel,
                                      std::memory_order_relaxed))
        return;
    }
  }

  // forget(), but only if the word holds `stream`; used when a stream is destroyed. The load comes
  // first so that a word that does not hold the stream is never written (a CAS would take its cache
  // line away from the threads that skip on it). Relaxed load: a word that moved on since no longer
  // holds the dead stream, or was re-published by a call that made cuDNN hold it after the destroy.
  bool forget_if_holds(std::uintptr_t stream) noexcept {
    std::uint64_t expected = kValid | stream;
    if (!cacheable(stream) || word_.load(std::memory_order_relaxed) != expected) return false;
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
