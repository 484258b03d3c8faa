// DescriptorRegistry: what the program set each of its descriptors to, by address, lock-free,
// fixed size.
//
// A legacy cuDNN descriptor or a cuBLASLt descriptor is an opaque object the program creates,
// sets, uses and destroys; a replay key needs its contents (replay/replay_key.h), and reading them
// back with the library's getters costs 70 to 120 ns a call on the H200. So the shim records the
// contents as the program sets them: `created` claims a slot for the address (contents known from
// the creation alone for some kinds, else none yet), `write` replaces or edits them, `forget`
// frees the slot at destroy (or when the library itself reuses the address), and `read` copies
// them into a key. A descriptor without a slot (made around the shim, or while the registry was
// full) or whose contents the shim never saw is unknown, and the calls that use it run directly.
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

namespace cudnn_fastpath::replay {

template <std::size_t Slots, std::size_t Words>
class DescriptorRegistry {
  static_assert(Slots >= 2 && (Slots & (Slots - 1)) == 0, "Slots must be a power of two");

 public:
  static constexpr std::size_t kWords = Words;
  static constexpr std::size_t kMaxProbe = 32;

  // The contents a reader gets: the kind the descriptor was created as, whether its contents are
  // known, and the words.
  struct Record {
    std::uint32_t kind = 0;
    std::uint32_t known = 0;
    std::uint64_t words[Words];  // uninitialised on purpose: filled by read()
  };

  // `address` was created as a descriptor of `kind`; `words` are its contents from the creation
  // (defaults that later sets edit, or null: zeros), `known` whether the descriptor is usable as
  // created. False when there is no room.
  bool created(const void* address, std::uint32_t kind, const std::uint64_t* words, bool known) noexcept {
    Slot* slot = claim(key_of(address));
    if (slot == nullptr) return false;
    write_slot(*slot, kind, known, [&](std::atomic<std::uint64_t>* into) {
      for (std::size_t i = 0; i < Words; ++i) into[i].store(words ? words[i] : 0, std::memory_order_relaxed);
    });
    return true;
  }

  // Edits the contents of `address` (a descriptor of `kind` the registry holds): `edit(words,
  // known)` gets the current words (relaxed atomics, the writer's own) and whether they were known,
  // and returns whether they are known after it. False (and nothing done) when the registry does
  // not hold it as `kind`.
  template <typename Edit>
  bool write(const void* address, std::uint32_t kind, Edit&& edit) noexcept {
    Slot* slot = find(key_of(address));
    if (slot == nullptr || slot->kind.load(std::memory_order_relaxed) != kind) return false;
    const std::uint32_t sequence = slot->sequence.load(std::memory_order_relaxed);
    slot->sequence.store(sequence + 1, std::memory_order_relaxed);
    // Release: a reader that sees any of the words below sees the odd sequence first.
    std::atomic_thread_fence(std::memory_order_release);
    const bool known = slot->known.load(std::memory_order_relaxed) != 0;
    slot->known.store(edit(slot->words, known) ? 1 : 0, std::memory_order_relaxed);
    // Release: a reader that sees the even sequence sees the words.
    slot->sequence.store(sequence + 2, std::memory_order_release);
    return true;
  }

  // The contents of `address` are not known any more (a set the library refused).
  void unknown(const void* address) noexcept {
    if (Slot* slot = find(key_of(address))) {
      const std::uint32_t sequence = slot->sequence.load(std::memory_order_relaxed);
      slot->sequence.store(sequence + 1, std::memory_order_relaxed);
      std::atomic_thread_fence(std::memory_order_release);  // as in write()
      slot->known.store(0, std::memory_order_relaxed);
      slot->sequence.store(sequence + 2, std::memory_order_release);
    }
  }

  // `address` was destroyed (or is the library's own now): its slot is free.
  void forget(const void* address) noexcept {
    if (Slot* slot = find(key_of(address))) {
      unknown(address);
      // Release: the next owner's claim (acquire) comes after everything done here.
      slot->key.store(kTombstone, std::memory_order_release);
    }
  }

  // Copies the contents of `address` if the registry holds it with known contents; false
  // otherwise (the caller's call then runs directly).
  bool read(const void* address, Record& out) const noexcept {
    const std::uintptr_t key = key_of(address);
    const Slot* slot = find(key);
    if (slot == nullptr) return false;
    // Acquire: pairs with the writer's last release, so the words read below are at least as new.
    const std::uint32_t before = slot->sequence.load(std::memory_order_acquire);
    if (before & 1) return false;
    out.kind = slot->kind.load(std::memory_order_relaxed);
    out.known = slot->known.load(std::memory_order_relaxed);
    for (std::size_t i = 0; i < Words; ++i) out.words[i] = slot->words[i].load(std::memory_order_relaxed);
    // Acquire: the copies above come before the second look at the sequence and the key.
    std::atomic_thread_fence(std::memory_order_acquire);
    return out.known != 0 && slot->sequence.load(std::memory_order_relaxed) == before &&
           slot->key.load(std::memory_order_relaxed) == key;
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
    std::atomic<std::uint32_t> known{0};
    std::atomic<std::uint64_t> words[Words]{};
  };

  static std::uintptr_t key_of(const void* address) noexcept { return reinterpret_cast<std::uintptr_t>(address); }
  static std::size_t home_of(std::uintptr_t key) noexcept {
    return static_cast<std::size_t>(((key >> 4) * 0x9e3779b97f4a7c15ull) >> 40) & (Slots - 1);
  }

  template <typename Fill>
  static void write_slot(Slot& slot, std::uint32_t kind, bool known, Fill&& fill) noexcept {
    const std::uint32_t sequence = slot.sequence.load(std::memory_order_relaxed);
    slot.sequence.store(sequence + 1, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_release);  // as in write()
    slot.kind.store(kind, std::memory_order_relaxed);
    fill(slot.words);
    slot.known.store(known ? 1 : 0, std::memory_order_relaxed);
    slot.sequence.store(sequence + 2, std::memory_order_release);
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
