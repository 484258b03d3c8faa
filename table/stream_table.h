// StreamTable: which stream each cuDNN handle holds, lock-free, fixed size.
//
// Open addressing with linear probing over a power-of-two array, keyed by the handle's address
// (0 is the reserved empty key). A key is claimed once by CAS and never removed: a destroyed handle
// only has its state forgotten, so an address that cuDNN hands out again lands on its own slot.
// When no slot is free the table is full: calls for handles it cannot hold are forwarded.
//
// Constant-initialised (all zero), so a static instance needs no constructor to run before use.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "table/slot_state.h"

namespace cudnn_fastpath {

template <std::size_t Capacity>
class StreamTable {
  static_assert(Capacity >= 2 && (Capacity & (Capacity - 1)) == 0,
                "Capacity must be a power of two");

 public:
  static constexpr std::size_t kCapacity = Capacity;

  struct Slot {
    std::atomic<std::uintptr_t> key{0};
    SlotState state;
  };

  // The slot of `handle` if it is the handle's home slot, where it lives unless another handle
  // hashed there first: no loop and no call, for the fast path. nullptr means "look further".
  Slot* find_at_home(const void* handle) noexcept {
    const std::uintptr_t key = to_key(handle);
    Slot& home = slots_[home_of(key)];
    // Relaxed: see probe().
    return key != 0 && home.key.load(std::memory_order_relaxed) == key ? &home : nullptr;
  }

  // The slot of `handle` if it has one. Never claims.
  Slot* find(const void* handle) noexcept {
    if (Slot* home = find_at_home(handle)) return home;
    return probe(to_key(handle), /*claim=*/false);
  }

  // The slot of `handle`, claimed for it if needed; nullptr if the handle is null or the table is
  // full (the caller then forwards and counts a table-full event).
  Slot* find_or_claim(const void* handle) noexcept { return probe(to_key(handle), /*claim=*/true); }

  // A stream was destroyed: no slot may keep claiming it.
  std::size_t forget_stream(std::uintptr_t stream) noexcept {
    if (claimed_.load(std::memory_order_relaxed) == 0) return 0;  // nothing cached ever
    std::size_t forgotten = 0;
    for (Slot& slot : slots_) forgotten += slot.state.forget_if_holds(stream) ? 1 : 0;
    return forgotten;
  }

  // In a forked child: nothing the parent cached may be trusted.
  void reset_all_states() noexcept {
    for (Slot& slot : slots_) slot.state.reset();
  }

  // Handles that ever got a slot.
  std::size_t claimed() const noexcept { return claimed_.load(std::memory_order_relaxed); }

 private:
  static std::uintptr_t to_key(const void* handle) noexcept {
    return reinterpret_cast<std::uintptr_t>(handle);
  }

  // Fibonacci hashing: handles are aligned heap addresses whose low bits carry no information;
  // the multiply spreads the high bits over the index.
  static std::size_t home_of(std::uintptr_t key) noexcept {
    constexpr int kIndexBits = __builtin_ctzll(Capacity);
    return static_cast<std::size_t>((static_cast<std::uint64_t>(key) * 0x9E3779B97F4A7C15ull) >>
                                    (64 - kIndexBits));
  }

  __attribute__((noinline)) Slot* probe(std::uintptr_t key, bool claim) noexcept {
    if (key == 0) return nullptr;
    std::size_t index = home_of(key);
    for (std::size_t probes = 0; probes < Capacity; ++probes, index = (index + 1) & (Capacity - 1)) {
      Slot& slot = slots_[index];
      // Relaxed: a key guards no data of its own; the state word carries its own ordering, and a
      // slot's state is zero until its key is claimed, since keys are never reused.
      std::uintptr_t seen = slot.key.load(std::memory_order_relaxed);
      if (seen == key) return &slot;
      if (seen != 0) continue;
      if (!claim) return nullptr;  // keys are never removed: an empty slot ends the chain
      if (slot.key.compare_exchange_strong(seen, key, std::memory_order_relaxed,
                                           std::memory_order_relaxed)) {
        claimed_.fetch_add(1, std::memory_order_relaxed);  // statistics and a scan shortcut only
        return &slot;
      }
      if (seen == key) return &slot;  // another thread claimed it for the same handle
    }
    return nullptr;
  }

  Slot slots_[Capacity]{};
  std::atomic<std::size_t> claimed_{0};
};

}  // namespace cudnn_fastpath
