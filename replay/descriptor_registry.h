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
// descriptor without a slot (made around the shim, or while its bucket was full) or whose contents
// the shim never saw is unknown, and the calls that use it run directly.
//
// Slots slots (a power of two) in buckets of kWays: an address's hash picks its bucket and a tag
// (32 bits of the hash, never 0). A bucket's tags sit together, 32 bytes apart from the slots'
// contents, 0 for a free way: a lookup compares them all at once and reads a slot only where its
// tag matches (then the slot's key, the address, decides), so that a lookup of an address the
// registry does not hold reads one line and compares eight words, however long the program has
// been creating and destroying. A claim takes a free way of its bucket with one CAS on its tag;
// a bucket whose ways are all taken has no room. `forget` frees the way outright (no tombstone:
// nothing is left for a later lookup to walk past).
//
// A descriptor's own calls are one thread's at a time (the libraries' rule: a descriptor is not
// set while it is used), but other threads may read it, so each slot's contents are a seqlock: the
// writer makes `sequence` odd, writes, makes it even (release); a reader copies between two reads
// of it and keeps the copy only if both were the same even value and the slot's key is still its
// address. A forget is a write (its contents become unusable) and a slot's sequence only grows
// across owners, so a reader that overlaps the forget fails; the key's second look catches the
// reader that found the way when it was its address's and copied what the next owner wrote.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>

// A bucket's tags are compared with SSE2 on x86-64, one at a time elsewhere and under TSan (which
// would take the vector load of atomics that other threads store for a race).
#if defined(__SSE2__) && !defined(__SANITIZE_THREAD__)
#define CUDNN_FASTPATH_REGISTRY_SSE2 1
#include <emmintrin.h>
#endif

namespace cudnn_fastpath::replay {

// A slot's words, as its writer edits them (relaxed atomics: the seqlock orders them).
using SlotWords = std::atomic<std::uint64_t>*;

// A record (plain data of whole words: its padding named as fields, so that a key never holds an
// indeterminate byte) into a slot's first words and back, word by word; a record's words past
// `words` are not stored (the reader's length says where a record ends).
template <typename Record>
constexpr std::uint32_t words_of() noexcept {
  static_assert(sizeof(Record) % 8 == 0, "a record is whole words");
  return sizeof(Record) / 8;
}
template <typename Record>
Record load_record(const std::atomic<std::uint64_t>* from) noexcept {
  Record r;
  for (std::uint32_t i = 0; i < words_of<Record>(); ++i) {
    const std::uint64_t word = from[i].load(std::memory_order_relaxed);
    std::memcpy(reinterpret_cast<unsigned char*>(&r) + 8 * i, &word, 8);
  }
  return r;
}
template <typename Record>
std::uint32_t store_record(SlotWords into, const Record& r, std::uint32_t words = words_of<Record>()) noexcept {
  for (std::uint32_t i = 0; i < words; ++i) {
    std::uint64_t word;
    std::memcpy(&word, reinterpret_cast<const unsigned char*>(&r) + 8 * i, 8);
    into[i].store(word, std::memory_order_relaxed);
  }
  return words;
}

template <std::size_t Slots, std::size_t Words>
class DescriptorRegistry {
 public:
  static constexpr std::size_t kWords = Words;
  static constexpr std::size_t kWays = 8;  // a bucket's tags: 32 bytes, one load pair
  static constexpr std::size_t kBuckets = Slots / kWays;
  static_assert(Slots >= kWays && (Slots & (Slots - 1)) == 0, "Slots must be a power of two, a bucket at least");

  // `address` was created as a descriptor of `kind`: `fill(SlotWords)` writes what the creation
  // made of it and returns the record's length (0: not usable until set). False when there is no
  // room.
  template <typename Fill>
  bool created(const void* address, std::uint32_t kind, Fill&& fill) noexcept {
    const std::size_t at = claim(key_of(address));
    if (at == kNowhere) return false;
    Slot& slot = slots_[at];
    const std::uint32_t sequence = begin_write(slot);
    slot.kind.store(kind, std::memory_order_relaxed);
    slot.length.store(fill(slot.words), std::memory_order_relaxed);
    end_write(slot, sequence);
    return true;
  }

  // Edits the contents of `address` (a descriptor of `kind` the registry holds) in place:
  // `edit(SlotWords, length)` gets the words (the writer's own) and their length (0: not usable),
  // and returns the length after it. False (and nothing done) when the registry does not hold it as
  // `kind`.
  template <typename Edit>
  bool write(const void* address, std::uint32_t kind, Edit&& edit) noexcept {
    const std::size_t at = find(key_of(address));
    if (at == kNowhere) return false;
    Slot& slot = slots_[at];
    if (slot.kind.load(std::memory_order_relaxed) != kind) return false;
    const std::uint32_t sequence = begin_write(slot);
    slot.length.store(edit(slot.words, slot.length.load(std::memory_order_relaxed)), std::memory_order_relaxed);
    end_write(slot, sequence);
    return true;
  }

  // The contents of `address` are not known any more (a set the library refused).
  void unknown(const void* address) noexcept {
    const std::size_t at = find(key_of(address));
    if (at != kNowhere) make_unknown(slots_[at]);
  }

  // `address` was destroyed (or is the library's own now): its way is free. An address the
  // registry does not hold costs its bucket's compare and nothing else.
  void forget(const void* address) noexcept {
    const std::size_t at = find(key_of(address));
    if (at == kNowhere) return;
    make_unknown(slots_[at]);
    // Release: the next claim of the way (acquire) comes after the write above, so its writes
    // continue the slot's sequence. The slot's key stays: no lookup reads a free way's key.
    tags_[at].store(0, std::memory_order_release);
  }

  // Whether the registry holds `address` (whatever its contents).
  bool holds(const void* address) const noexcept { return find(key_of(address)) != kNowhere; }

  // Hands the contents of `address` to `copy(const std::atomic<std::uint64_t>* words, length)`
  // (which copies them where they go, a key) if the registry holds it as `kind` with usable
  // contents; true if what the copy saw was one consistent record of `address`. False otherwise,
  // and whatever the copy wrote must be thrown away (the caller's call then runs directly).
  template <typename Copy>
  bool read(const void* address, std::uint32_t kind, Copy&& copy) const noexcept {
    const std::uintptr_t key = key_of(address);
    const std::size_t at = find(key);
    if (at == kNowhere) return false;
    const Slot& slot = slots_[at];
    // Acquire: pairs with the writer's last release, so the words read below are at least as new.
    const std::uint32_t before = slot.sequence.load(std::memory_order_acquire);
    const std::uint32_t length = slot.length.load(std::memory_order_relaxed);
    if ((before & 1) || length == 0 || length > Words || slot.kind.load(std::memory_order_relaxed) != kind)
      return false;
    copy(static_cast<const std::atomic<std::uint64_t>*>(slot.words), length);
    // Acquire: the copies above come before the second look at the key and the sequence.
    std::atomic_thread_fence(std::memory_order_acquire);
    // Acquire: a key stored by a later owner of the way (release, after the forget that made the
    // sequence move on) makes the sequence read next show that move. The way may have been freed
    // and taken by another address since find() saw this one's key: then the words copied may be
    // that address's, written at the `before` the reader saw, and only the key tells.
    if (slot.key.load(std::memory_order_acquire) != key) return false;
    return slot.sequence.load(std::memory_order_relaxed) == before;
  }

  // Slots holding a descriptor (for tests).
  std::size_t held() const noexcept {
    std::size_t n = 0;
    for (const auto& tag : tags_) n += tag.load(std::memory_order_relaxed) != 0;
    return n;
  }
  // The bucket of `address`, and how many slots' keys a lookup of it compares after its bucket's
  // tags: 0 for an address whose tag no way of its bucket has (for tests).
  static std::size_t bucket_of(const void* address) noexcept { return place_of(key_of(address)).bucket; }
  unsigned keys_compared(const void* address) const noexcept {
    const Place place = place_of(key_of(address));
    return static_cast<unsigned>(__builtin_popcount(ways_of(place.bucket, place.tag).tagged));
  }

 private:
  static constexpr std::size_t kNowhere = Slots;
  static constexpr unsigned kBucketBits = __builtin_ctzll(kBuckets);

  struct alignas(64) Slot {
    std::atomic<std::uintptr_t> key{0};  // the address; meaningful while the way's tag is not 0
    std::atomic<std::uint32_t> sequence{0};  // odd while the contents are being written
    std::atomic<std::uint32_t> kind{0};
    std::atomic<std::uint32_t> length{0};  // the words a reader copies; 0: not usable
    std::atomic<std::uint64_t> words[Words]{};
  };
  static_assert(sizeof(std::atomic<std::uint32_t>) == 4 && std::atomic<std::uint32_t>::is_always_lock_free,
                "a bucket's tags are eight plain 32-bit words");

  struct Place {
    std::size_t bucket;
    std::uint32_t tag;
  };
  // The bucket from the hash's top bits, which every bit of the address stirs; the tag from its low
  // half, a function of the address's low 32 bits alone that is one-to-one but for the `| 1` (a
  // used way's tag is never 0): a tag two addresses of one bucket share costs a look at one more
  // slot's key, nothing else. Null is never found: no claim stores its key.
  static Place place_of(std::uintptr_t key) noexcept {
    const std::uint64_t hash = key * 0x9e3779b97f4a7c15ull;
    return {static_cast<std::size_t>(hash >> 1 >> (63 - kBucketBits)), static_cast<std::uint32_t>(hash) | 1};
  }
  static std::uintptr_t key_of(const void* address) noexcept { return reinterpret_cast<std::uintptr_t>(address); }

  // The ways of `bucket` whose tag is `tag`, and those that are free: bit w for way w. Each tag is
  // read as a relaxed load would (an aligned SSE2 load reads each aligned 32-bit word whole): a
  // tag is only a hint, which the slot's key confirms, and a free way is taken by a CAS.
  struct Ways {
    unsigned tagged, free;
  };
  Ways ways_of(std::size_t bucket, std::uint32_t tag) const noexcept {
    const std::atomic<std::uint32_t>* tags = &tags_[bucket * kWays];
#ifdef CUDNN_FASTPATH_REGISTRY_SSE2
    const __m128i low = _mm_load_si128(reinterpret_cast<const __m128i*>(tags));
    const __m128i high = _mm_load_si128(reinterpret_cast<const __m128i*>(tags + 4));
    const __m128i want = _mm_set1_epi32(static_cast<int>(tag)), zero = _mm_setzero_si128();
    // Each way's answer (32 bits, all ones or none) narrowed to a byte, and its top bit taken.
    const auto mask = [zero](__m128i a, __m128i b) {
      return static_cast<unsigned>(_mm_movemask_epi8(_mm_packs_epi16(_mm_packs_epi32(a, b), zero)));
    };
    return {mask(_mm_cmpeq_epi32(low, want), _mm_cmpeq_epi32(high, want)),
            mask(_mm_cmpeq_epi32(low, zero), _mm_cmpeq_epi32(high, zero))};
#else
    Ways ways{0, 0};
    for (unsigned w = 0; w < kWays; ++w) {
      // Relaxed: as above.
      const std::uint32_t t = tags[w].load(std::memory_order_relaxed);
      ways.tagged |= unsigned{t == tag} << w;
      ways.free |= unsigned{t == 0} << w;
    }
    return ways;
#endif
  }

  // The slot of `key`, or kNowhere.
  std::size_t find(std::uintptr_t key) const noexcept {
    const Place place = place_of(key);
    for (unsigned ways = ways_of(place.bucket, place.tag).tagged; ways != 0; ways &= ways - 1) {
      const std::size_t at = place.bucket * kWays + static_cast<unsigned>(__builtin_ctz(ways));
      // Relaxed: an owner finds the key its own claim stored (its calls come after its create);
      // another thread's read looks at the key again after its copy.
      if (slots_[at].key.load(std::memory_order_relaxed) == key) return at;
    }
    return kNowhere;
  }

  // The slot for `key`: its own if it has one (a create at the address of a descriptor destroyed
  // around the shim), else a free way of its bucket, or kNowhere.
  std::size_t claim(std::uintptr_t key) noexcept {
    if (key == 0) return kNowhere;
    const Place place = place_of(key);
    const Ways ways = ways_of(place.bucket, place.tag);
    for (unsigned own = ways.tagged; own != 0; own &= own - 1) {
      const std::size_t at = place.bucket * kWays + static_cast<unsigned>(__builtin_ctz(own));
      // Relaxed: only this address's calls store this key, and they are this thread's now.
      if (slots_[at].key.load(std::memory_order_relaxed) == key) return at;
    }
    for (unsigned free = ways.free; free != 0; free &= free - 1) {
      const std::size_t at = place.bucket * kWays + static_cast<unsigned>(__builtin_ctz(free));
      std::uint32_t expected = 0;
      // Acquire: pairs with the forget that freed the way (release), so the writes below continue
      // the slot's sequence after the last owner's. Lost to another claim: the next free way.
      if (tags_[at].compare_exchange_strong(expected, place.tag, std::memory_order_acquire,
                                            std::memory_order_relaxed)) {
        // Release: a reader whose last look at the key sees this one sees the sequence as the
        // last owner's forget left it (read()).
        slots_[at].key.store(key, std::memory_order_release);
        return at;
      }
    }
    return kNowhere;
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

  // Bucket b's tags are tags_[b * kWays ...], 32 bytes aligned: one line; slot i's tag is tags_[i].
  alignas(64) std::atomic<std::uint32_t> tags_[Slots]{};
  Slot slots_[Slots]{};
};

}  // namespace cudnn_fastpath::replay

#undef CUDNN_FASTPATH_REGISTRY_SSE2
