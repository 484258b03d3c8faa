// DescriptorRegistry: what the program set each of its descriptors to, by address, lock-free,
// fixed size.
//
// A legacy cuDNN descriptor or a cuBLASLt descriptor is an opaque object the program creates,
// sets, uses and destroys; a replay key needs its contents (replay/replay_key.h), and reading them
// back with the library's getters costs 70 to 120 ns a call on the H200. So the shim records the
// contents as the program sets them: `created` claims a slot for the address and fills it (contents
// usable from the creation alone for some kinds, else not yet), `write` edits them in place,
// `forget` frees the slot at destroy (or when the library itself reuses the address), and `read`
// hands them to a copy that writes them straight into a key. A slot's `length` is how many of its
// words a reader needs, 0 while the contents are not usable; a writer stores only the words its
// record has, so making and setting a descriptor costs what its record is, not the slot's size. A
// descriptor without a slot (made around the shim, or while the registry was full) or whose
// contents the shim never saw is unknown, and the calls that use it run directly.
//
// Open addressing with linear probing over Slots slots (a power of two), at most kMaxProbe steps
// from an address's home: past that the registry is full for that address. Keys: 0 empty (ends a
// probe), 1 a tombstone (a destroyed descriptor's, free for the next claim that passes it), else
// the address. A descriptor's own calls are one thread's at a time (the libraries' rule: a
// descriptor is not set while it is used), but other threads may read it, so each slot's contents
// are a seqlock: the writer makes `sequence` odd, writes, makes it even (release); a reader copies
// between two reads of it and keeps the copy only if both were the same even value.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace cudnn_fastpath::replay {

// A slot's words, as its writer edits them (relaxed atomics: the seqlock orders them).
using SlotWords = std::atomic<std::uint64_t>*;

// A record (plain data) into a slot's first words and back; a record's words past `words` are not
// stored (the reader's length says where a record ends).
template <typename Record>
constexpr std::uint32_t words_of() noexcept {
  return (sizeof(Record) + 7) / 8;
}
template <typename Record>
Record load_record(const std::atomic<std::uint64_t>* from) noexcept {
  std::uint64_t words[words_of<Record>()];
  for (std::uint32_t i = 0; i < words_of<Record>(); ++i) words[i] = from[i].load(std::memory_order_relaxed);
  Record r;
  std::memcpy(&r, words, sizeof r);
  return r;
}
template <typename Record>
std::uint32_t store_record(SlotWords into, const Record& r, std::uint32_t words = words_of<Record>()) noexcept {
  std::uint64_t from[words_of<Record>()] = {};
  std::memcpy(from, &r, sizeof r);
  for (std::uint32_t i = 0; i < words; ++i) into[i].store(from[i], std::memory_order_relaxed);
  return words;
}

template <std::size_t Slots, std::size_t Words>
class DescriptorRegistry {
  static_assert(Slots >= 2 && (Slots & (Slots - 1)) == 0, "Slots must be a power of two");

 public:
  static constexpr std::size_t kWords = Words;
  static constexpr std::size_t kMaxProbe = 32;

  // `address` was created as a descriptor of `kind`: `fill(SlotWords)` writes what the creation
  // made of it and returns the record's length (0: not usable until set). False when there is no
  // room.
  template <typename Fill>
  bool created(const void* address, std::uint32_t kind, Fill&& fill) noexcept {
    Slot* slot = claim(key_of(address));
    if (slot == nullptr) return false;
    const std::uint32_t sequence = begin_write(*slot);
    slot->kind.store(kind, std::memory_order_relaxed);
    slot->length.store(fill(slot->words), std::memory_order_relaxed);
    end_write(*slot, sequence);
    return true;
  }

  // Edits the contents of `address` (a descriptor of `kind` the registry holds) in place:
  // `edit(SlotWords, length)` gets the words (the writer's own) and their length (0: not usable),
  // and returns the length after it. False (and nothing done) when the registry does not hold it as
  // `kind`.
  template <typename Edit>
  bool write(const void* address, std::uint32_t kind, Edit&& edit) noexcept {
    Slot* slot = find(key_of(address));
    if (slot == nullptr || slot->kind.load(std::memory_order_relaxed) != kind) return false;
    const std::uint32_t sequence = begin_write(*slot);
    slot->length.store(edit(slot->words, slot->length.load(std::memory_order_relaxed)), std::memory_order_relaxed);
    end_write(*slot, sequence);
    return true;
  }

  // The contents of `address` are not known any more (a set the library refused).
  void unknown(const void* address) noexcept {
    if (Slot* slot = find(key_of(address))) make_unknown(*slot);
  }

  // `address` was destroyed (or is the library's own now): its slot is free.
  void forget(const void* address) noexcept {
    if (Slot* slot = find(key_of(address))) {
      make_unknown(*slot);
      // Release: the next owner's claim (acquire) comes after everything done here.
      slot->key.store(kTombstone, std::memory_order_release);
    }
  }

  // Hands the contents of `address` to `copy(const std::atomic<std::uint64_t>* words, length)`
  // (which copies them where they go, a key) if the registry holds it as `kind` with usable
  // contents; true if what the copy saw was one consistent record. False otherwise, and whatever
  // the copy wrote must be thrown away (the caller's call then runs directly).
  template <typename Copy>
  bool read(const void* address, std::uint32_t kind, Copy&& copy) const noexcept {
    const std::uintptr_t key = key_of(address);
    const Slot* slot = find(key);
    if (slot == nullptr) return false;
    // Acquire: pairs with the writer's last release, so the words read below are at least as new.
    const std::uint32_t before = slot->sequence.load(std::memory_order_acquire);
    const std::uint32_t length = slot->length.load(std::memory_order_relaxed);
    if ((before & 1) || length == 0 || length > Words || slot->kind.load(std::memory_order_relaxed) != kind)
      return false;
    copy(static_cast<const std::atomic<std::uint64_t>*>(slot->words), length);
    // Acquire: the copies above come before the second look at the sequence and the key.
    std::atomic_thread_fence(std::memory_order_acquire);
    return slot->sequence.load(std::memory_order_relaxed) == before && slot->key.load(std::memory_order_relaxed) == key;
  }

  // Slots holding a descriptor (for tests).
  std::size_t held() const noexcept {
    std::size_t n = 0;
    for (const Slot& s : slots_) n += s.key.load(std::memory_order_relaxed) > kTombstone;
    return n;
  }

 private:
  static constexpr std::uintptr_t kEmpty = 0, kTombstone = 1;

  struct alignas(64) Slot {
    std::atomic<std::uintptr_t> key{kEmpty};
    std::atomic<std::uint32_t> sequence{0};  // odd while the contents are being written
    std::atomic<std::uint32_t> kind{0};
    std::atomic<std::uint32_t> length{0};  // the words a reader copies; 0: not usable
    std::atomic<std::uint64_t> words[Words]{};
  };

  static std::uintptr_t key_of(const void* address) noexcept { return reinterpret_cast<std::uintptr_t>(address); }
  static std::size_t home_of(std::uintptr_t key) noexcept {
    return static_cast<std::size_t>(((key >> 4) * 0x9e3779b97f4a7c15ull) >> 40) & (Slots - 1);
  }

  static std::uint32_t begin_write(Slot& slot) noexcept {
    const std::uint32_t sequence = slot.sequence.load(std::memory_order_relaxed);
    slot.sequence.store(sequence + 1, std::memory_order_relaxed);
    // Release: a reader that sees any of the writes that follow sees the odd sequence first.
    std::atomic_thread_fence(std::memory_order_release);
    return sequence;
  }
  static void end_write(Slot& slot, std::uint32_t sequence) noexcept {
    // Release: a reader that sees the even sequence sees every write before it.
    slot.sequence.store(sequence + 2, std::memory_order_release);
  }
  static void make_unknown(Slot& slot) noexcept {
    const std::uint32_t sequence = begin_write(slot);
    slot.length.store(0, std::memory_order_relaxed);
    end_write(slot, sequence);
  }

  Slot* find(std::uintptr_t key) noexcept {
    return const_cast<Slot*>(static_cast<const DescriptorRegistry*>(this)->find(key));
  }
  const Slot* find(std::uintptr_t key) const noexcept {
    if (key <= kTombstone) return nullptr;
    for (std::size_t step = 0, i = home_of(key); step < kMaxProbe; ++step, i = (i + 1) & (Slots - 1)) {
      // Acquire: pairs with the release that published the key (claim) or freed it (forget).
      const std::uintptr_t k = slots_[i].key.load(std::memory_order_acquire);
      if (k == key) return &slots_[i];
      if (k == kEmpty) return nullptr;
    }
    return nullptr;
  }

  // The slot for `key`: its own if it has one (a create at the address of a descriptor destroyed
  // around the shim), else the first free one on its probe.
  Slot* claim(std::uintptr_t key) noexcept {
    if (key <= kTombstone) return nullptr;
    if (Slot* own = find(key)) return own;
    for (std::size_t step = 0, i = home_of(key); step < kMaxProbe; ++step, i = (i + 1) & (Slots - 1)) {
      std::uintptr_t k = slots_[i].key.load(std::memory_order_relaxed);
      // acq_rel: acquire orders the new owner after the last one's forget; release publishes it.
      while (k <= kTombstone) {
        if (slots_[i].key.compare_exchange_weak(k, key, std::memory_order_acq_rel, std::memory_order_relaxed))
          return &slots_[i];
      }
    }
    return nullptr;
  }

  Slot slots_[Slots]{};
};

}  // namespace cudnn_fastpath::replay
