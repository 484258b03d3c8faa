// StreamTable: which stream each cuDNN handle holds, lock-free, fixed size, slots reclaimed.
//
// Open addressing with linear probing over a power-of-two array, keyed by the handle's address.
// Three key values are reserved (handles are heap addresses, never 0, 1 or 2):
//   kEmpty      never used: ends every probe chain (a slot never becomes empty again)
//   kTombstone  its handle was destroyed: free for any handle whose chain passes through it
//   kBusy       changing hands (being claimed or released): neither found nor claimed
// A handle lives in the first free slot its claim met on its way from its home slot, so no handle
// ever sits behind an empty slot of its chain. reach_[home] records how far from `home` any handle
// of that home was ever placed: a lookup probes at most that far. One live handle at a time, over
// any number of addresses, therefore always lands at (and is found at) its home slot.
//
// The table is full only when every slot holds a live handle; calls on a handle that found no slot
// are forwarded by the caller. occupied_ has one bit per slot that holds (or is getting) a handle,
// so that a destroyed stream costs a pass over the live handles and 1 bit per slot, not the table.
//
// Why a reader of a reclaimed slot never skips for the wrong handle:
//   - a slot changes hands only through kBusy, and its state is forgotten while it is busy, before
//     the new key is stored with release; a reader loads the key with acquire, so a reader that sees
//     the new key also sees a state at least as new as that forget (unknown, or the new handle's);
//   - a forwarding call checks, after entering the state, that the slot still has its key
//     (still_owned): a call that entered after the forget sees the new key and does not publish;
//     one that entered before it was marked as overlapped by the forget and does not publish.
// What a program that uses a destroyed handle gets: after the destroy its calls miss the table and
// reach cuDNN, which answers as it does for a dead handle. A call racing its own handle's destroy
// (a use after free in cuDNN's terms) may still be answered from the table, as if it came first.
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
  static_assert(Capacity >= 2 && (Capacity & (Capacity - 1)) == 0, "Capacity must be a power of two");
  static_assert(Capacity <= 65536, "reach_ holds distances in 16 bits");

 public:
  static constexpr std::size_t kCapacity = Capacity;
  static constexpr std::uintptr_t kEmpty = 0;
  static constexpr std::uintptr_t kTombstone = 1;
  static constexpr std::uintptr_t kBusy = 2;

  struct Slot {
    std::atomic<std::uintptr_t> key{kEmpty};
    SlotState state;
  };

  // What a forwarding call holds between enter() and leave().
  struct Visit {
    Slot* slot;
    SlotState::Ticket ticket;
    bool owned;  // the slot still belonged to the handle after entering
  };

  // The slot of `handle` if it is the handle's home slot, where it lives unless another handle
  // hashed there first: no loop and no call, for the fast path. nullptr means "look further".
  // Acquire: see the header comment (a reclaimed slot's new key comes with its forgotten state).
  Slot* find_at_home(const void* handle) noexcept {
    const std::uintptr_t key = to_key(handle);
    Slot& home = slots_[home_of(key)];
    return home.key.load(std::memory_order_acquire) == key && is_handle(key) ? &home : nullptr;
  }

  // Where `slot` is in the table, 0 to Capacity - 1 (for data kept beside the slots).
  std::size_t index_of(const Slot& slot) const noexcept { return static_cast<std::size_t>(&slot - slots_); }

  // The slot of `handle` if it has one. Never claims.
  Slot* find(const void* handle) noexcept {
    const std::uintptr_t key = to_key(handle);
    if (!is_handle(key)) return nullptr;
    const std::size_t home = home_of(key);
    // Acquire: pairs with the release in raise_reach(); a stale reach only makes a lookup miss a
    // handle whose claim is still going on, and a miss is always safe (the call is forwarded).
    const std::size_t reach = reach_[home].load(std::memory_order_acquire);
    for (std::size_t distance = 0; distance <= reach; ++distance) {
      Slot& slot = slots_[(home + distance) & kMask];
      const std::uintptr_t seen = slot.key.load(std::memory_order_acquire);
      if (seen == key) return &slot;
      if (seen == kEmpty) return nullptr;
    }
    return nullptr;
  }

  // The slot of `handle`, claimed for it if it has none; nullptr if the handle is not one (a
  // reserved value) or every slot holds a live handle.
  Slot* find_or_claim(const void* handle) noexcept {
    if (Slot* slot = find(handle)) return slot;
    const std::uintptr_t key = to_key(handle);
    if (!is_handle(key)) return nullptr;
    const std::size_t home = home_of(key);
    for (std::size_t distance = 0; distance < Capacity; ++distance) {
      Slot& slot = slots_[(home + distance) & kMask];
      std::uintptr_t seen = slot.key.load(std::memory_order_acquire);
      if (seen == key) return &slot;  // claimed meanwhile by a thread racing on the same handle
      if (seen != kEmpty && seen != kTombstone) continue;
      // acq_rel: the acquire half sees the release of the slot's previous owner (its forget).
      if (!slot.key.compare_exchange_strong(seen, kBusy, std::memory_order_acq_rel,
                                            std::memory_order_relaxed)) {
        if (seen == key) return &slot;
        continue;
      }
      mark_occupied(index_of(slot), true);
      slot.state.forget();  // whatever a previous owner's late callers left is void
      raise_reach(home, distance);
      // seq_cst, and seq_cst loads in settle(): of two threads that claim one handle at once, at
      // least one sees the other's key (the store-then-load pattern needs a total order).
      slot.key.store(key, std::memory_order_seq_cst);
      live_.fetch_add(1, std::memory_order_relaxed);    // statistics and the warning only
      claims_.fetch_add(1, std::memory_order_relaxed);  // statistics only
      return settle(key, home, distance);
    }
    return nullptr;
  }

  // `handle` was destroyed: its slot becomes a tombstone, free for the next claim. False if the
  // slot no longer belonged to it.
  bool release(Slot& slot, const void* handle) noexcept {
    std::uintptr_t expected = to_key(handle);
    // seq_cst: settle() of a racing duplicate claim must see the slot go (see find_or_claim).
    if (!slot.key.compare_exchange_strong(expected, kBusy, std::memory_order_seq_cst,
                                          std::memory_order_relaxed))
      return false;
    // Forgotten while busy: a caller that entered before is marked overlapped, one that enters
    // after sees kBusy or what follows in still_owned(). Then the slot is free again.
    slot.state.forget();
    mark_occupied(index_of(slot), false);
    live_.fetch_sub(1, std::memory_order_relaxed);
    // Release: whoever claims the slot next sees the forget above.
    slot.key.store(kTombstone, std::memory_order_release);
    return true;
  }

  // The forwarding protocol around a real call for `handle` on its `slot`.
  Visit enter(Slot& slot, const void* handle) noexcept {
    const SlotState::Ticket ticket = slot.state.enter();
    // Acquire, after the acq_rel enter: if the slot changed hands before we entered, its new key
    // (or kBusy) is visible here, and we must not publish for a handle that is no longer ours.
    const bool owned = slot.key.load(std::memory_order_acquire) == to_key(handle);
    return {&slot, ticket, owned};
  }
  static void leave(const Visit& visit, std::uintptr_t stream, bool succeeded) noexcept {
    visit.slot->state.leave(visit.ticket, stream, succeeded && visit.owned);
  }

  // A stream was destroyed: no slot may keep claiming it. Visits only the slots that hold a
  // handle, and writes only to those that hold the stream. Returns how many were forgotten.
  std::size_t forget_stream(std::uintptr_t stream) noexcept {
    if (!SlotState::cacheable(stream)) return 0;
    std::size_t forgotten = 0;
    for_each_occupied([&](Slot& slot) { forgotten += slot.state.forget_if_holds(stream) ? 1 : 0; });
    return forgotten;
  }

  // Nothing cached may be trusted any more (the shim's skipping was switched off or on).
  void forget_all() noexcept {
    for_each_occupied([](Slot& slot) { slot.state.forget(); });
  }

  // In a forked child, where only the forking thread exists: nothing the parent cached may be
  // trusted, and a slot that another thread was claiming or releasing at the fork is freed.
  void reset_in_child() noexcept {
    for_each_occupied([&](Slot& slot) {
      slot.state.reset();
      if (slot.key.load(std::memory_order_relaxed) == kBusy) {
        slot.key.store(kTombstone, std::memory_order_relaxed);
        mark_occupied(index_of(slot), false);
        live_.fetch_sub(1, std::memory_order_relaxed);
      }
    });
  }

  // Handles that hold a slot now, and claims ever made (statistics, the full-table warning).
  std::size_t live() const noexcept { return live_.load(std::memory_order_relaxed); }
  std::size_t claims() const noexcept { return claims_.load(std::memory_order_relaxed); }

  // For tests: how far lookups from the home slot of `handle` probe.
  std::size_t reach_of(const void* handle) const noexcept {
    return reach_[home_of(to_key(handle))].load(std::memory_order_relaxed);
  }

 private:
  static constexpr std::size_t kMask = Capacity - 1;
  static constexpr std::size_t kWords = (Capacity + 63) / 64;

  static std::uintptr_t to_key(const void* handle) noexcept {
    return reinterpret_cast<std::uintptr_t>(handle);
  }
  static bool is_handle(std::uintptr_t key) noexcept { return key > kBusy; }

  // Fibonacci hashing: handles are aligned heap addresses whose low bits carry no information;
  // the multiply spreads the high bits over the index.
  static std::size_t home_of(std::uintptr_t key) noexcept {
    constexpr int kIndexBits = __builtin_ctzll(Capacity);
    return static_cast<std::size_t>((static_cast<std::uint64_t>(key) * 0x9E3779B97F4A7C15ull) >>
                                    (64 - kIndexBits));
  }

  // Release: a lookup that reads the raised reach (acquire) probes far enough to meet the slot,
  // whose kBusy or key it then reads. Reach only grows: a handle placed far once keeps its home's
  // lookups that long, which bounds them by the worst crowding ever seen, not by the churn.
  void raise_reach(std::size_t home, std::size_t distance) noexcept {
    std::uint16_t seen = reach_[home].load(std::memory_order_relaxed);
    while (seen < distance &&
           !reach_[home].compare_exchange_weak(seen, static_cast<std::uint16_t>(distance),
                                               std::memory_order_release, std::memory_order_relaxed)) {
    }
  }

  // Relaxed: the bit guards nothing by itself. A slot's bit is set before its key is published
  // (so before any stream can be published there) and cleared while the slot is busy; a stream
  // destroy ordered after a set by the program (as it must be) therefore sees the bit.
  void mark_occupied(std::size_t index, bool occupied) noexcept {
    const std::uint64_t bit = std::uint64_t{1} << (index % 64);
    if (occupied) occupied_[index / 64].fetch_or(bit, std::memory_order_relaxed);
    else occupied_[index / 64].fetch_and(~bit, std::memory_order_relaxed);
  }

  template <typename Visitor>
  void for_each_occupied(Visitor&& visit) noexcept {
    for (std::size_t word = 0; word < kWords; ++word) {
      // Acquire: pairs with nothing in particular; it keeps the state loads after the bit load.
      for (std::uint64_t bits = occupied_[word].load(std::memory_order_acquire); bits; bits &= bits - 1)
        visit(slots_[word * 64 + static_cast<std::size_t>(__builtin_ctzll(bits))]);
    }
  }

  // After claiming distance `mine` from `home` for `key`: two threads that claimed the same handle
  // at once (a first set raced from two threads) leave two slots with one key. The one nearer home
  // stays and the other is released, by whichever claimant sees it (at least one does: seq_cst).
  Slot* settle(std::uintptr_t key, std::size_t home, std::size_t mine) noexcept {
    Slot* kept = &slots_[(home + mine) & kMask];
    const std::size_t reach = reach_[home].load(std::memory_order_seq_cst);
    for (std::size_t distance = 0; distance <= reach; ++distance) {
      if (distance == mine) continue;
      Slot& other = slots_[(home + distance) & kMask];
      if (other.key.load(std::memory_order_seq_cst) != key) continue;
      if (distance < mine) {
        release(*kept, reinterpret_cast<const void*>(key));
        kept = &other;
        mine = distance;
      } else {
        release(other, reinterpret_cast<const void*>(key));
      }
    }
    return kept;
  }

  Slot slots_[Capacity]{};
  std::atomic<std::uint16_t> reach_[Capacity]{};
  std::atomic<std::uint64_t> occupied_[kWords]{};
  std::atomic<std::size_t> live_{0};
  std::atomic<std::size_t> claims_{0};
};

}  // namespace cudnn_fastpath
