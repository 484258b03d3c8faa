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
// Slots slots (a power of two) in buckets of kWays ways. An address's hash picks its home, a way
// of one bucket, and a tag (32 bits of the hash, never 0). A bucket's line, apart from the slots'
// contents, holds its ways' tags (0: free), each next to a copy of `away`, how many of the ways
// hold an address whose home is another way. A claim takes the address's home when it is free,
// else another free way of its bucket (a CAS of the way's index word); a bucket with no free way
// has no room. `forget` frees the way outright: no tombstone, nothing left for a later lookup to
// walk past. A lookup looks at its home, and at the rest of the bucket only where `away` says an address
// may be there: then it compares the ways' tags all at once (SSE2) and reads the slots whose tag
// matches. The calls that expect to find their address (write, read, unknown) look at the home
// slot's key, whose line they read anyway; those that may well not (forget, a create's look for
// its own way, holds) look at the home's tag first, so that an address the registry does not hold
// costs one line, its bucket's, however long the program has been creating and destroying.
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
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "a way's tag is the low half of its index word, read first");
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

// Which version of a record a reader of a DescriptorRegistry read, and what was remembered of it
// (the registry's Version; plain data, so that a thread may keep one: replay/record_run.h).
struct RecordVersion {
  const void* slot;          // where the record lives: only the registry looks
  std::uint64_t number;      // the slot's sequence: it only grows, and 64 bits never wrap
  std::uint64_t remembered;  // what remember() kept for this version; 0: nothing
};

template <std::size_t Slots, std::size_t Words>
class DescriptorRegistry {
 public:
  static constexpr std::size_t kWords = Words;
  static constexpr std::size_t kWays = 8;  // a bucket: one line of the index (below)
  static constexpr std::size_t kBuckets = Slots / kWays;
  static_assert(Slots >= kWays && (Slots & (Slots - 1)) == 0, "Slots must be a power of two, a bucket at least");

  // `address` was created as a descriptor of `kind`: `fill(SlotWords)` writes what the creation
  // made of it and returns the record's length (0: not usable until set). False when there is no
  // room.
  template <typename Fill>
  bool created(const void* address, std::uint32_t kind, Fill&& fill) noexcept {
    bool own = false;
    Slot* const slot = claim(key_of(address), own);
    if (slot == nullptr) return false;
    const std::uint64_t sequence = begin_write(*slot);
    if (own) carry(*slot, sequence);  // the address made again around a destroy the shim did not see
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
    Slot* const slot = find(key_of(address));
    if (slot == nullptr || slot->kind.load(std::memory_order_relaxed) != kind) return false;
    edit_slot(*slot, edit);
    return true;
  }

  // As write(), where `address` is at its home (the common case), without a call of the registry's
  // own, so that a caller's fast path needs no frame of its own: false, and nothing done, when it
  // is not there as `kind` (the caller then takes write()'s path).
  template <typename Edit>
  [[gnu::always_inline]] bool write_at_home(const void* address, std::uint32_t kind, Edit&& edit) noexcept {
    const std::uintptr_t key = key_of(address);
    Slot& slot = slots_[place_of(key).home];
    if (slot.key.load(std::memory_order_relaxed) != key || slot.kind.load(std::memory_order_relaxed) != kind)
      return false;
    edit_slot(slot, edit);
    return true;
  }

  // The contents of `address` are not known any more (a set the library refused).
  void unknown(const void* address) noexcept {
    if (Slot* const slot = find(key_of(address))) make_unknown(*slot);
  }

  // `address` was destroyed (or is the library's own now): its way is free. Inline wherever it is
  // called, so that an address the registry does not hold costs what a miss does: its home's tag
  // and its bucket's `away`, one line.
  // The common miss (a home way free, and nothing of its bucket away from home) is told before the
  // tag is worked out: one load, of the home's index word.
  [[gnu::always_inline]] void forget(const void* address) noexcept {
    if (__builtin_expect(!forget_at_home(address), 0)) forget_away(key_of(address), place_of(key_of(address)));
  }

  // forget()'s common cases without a call (as write_at_home()): the address at its home, or
  // surely not held. False, and nothing done, when it may be away from home (the caller then
  // takes forget()'s path).
  [[gnu::always_inline]] bool forget_at_home(const void* address) noexcept {
    const std::uintptr_t key = key_of(address);
    const Place place = place_of(key);
    const std::uint64_t way = way_at(place.home);
    if (__builtin_expect(way == 0, 1)) return true;
    if (at_home(way, place, key)) {
      vacate(place.home, place.home);
      return true;
    }
    return away_in(way) == 0;
  }
  // Whether `address` is surely not held: forget()'s common miss, one load.
  [[gnu::always_inline]] bool surely_not_held(const void* address) const noexcept {
    return way_at(place_of(key_of(address)).home) == 0;
  }

  // Whether the registry holds `address` (whatever its contents): a miss costs what forget's does.
  [[gnu::always_inline]] bool holds(const void* address) const noexcept {
    const std::uintptr_t key = key_of(address);
    const Place place = place_of(key);
    const std::uint64_t way = way_at(place.home);
    if (__builtin_expect(way == 0, 1)) return false;
    return at_home(way, place, key) || (away_in(way) != 0 && find_away(key, place) != kNowhere);
  }

  // Hands the contents of `address` to `copy(const std::atomic<std::uint64_t>* words, length)`
  // (which copies them where they go, a key) if the registry holds it as `kind` with usable
  // contents; true if what the copy saw was one consistent record of `address`. False otherwise,
  // and whatever the copy wrote must be thrown away (the caller's call then runs directly).
  template <typename Copy>
  bool read(const void* address, std::uint32_t kind, Copy&& copy) const noexcept {
    return read_slot(address, kind, [&](const Slot&, std::uint64_t, const std::atomic<std::uint64_t>* words,
                                        std::uint32_t length) { copy(words, length); });
  }

  // Which version of a record a reader read (read_versioned), and what was remembered of it.
  using Version = RecordVersion;

  // As read(), but `use(const Version&, words, length)` is also told which version of the record
  // this is, and what a reader remembered of it. `use` may copy the words or not; what it read is
  // good only when true is returned. (The shim's keys name records through valued(); this, and
  // remembered() below, let the tests hold a version and what was kept for it.)
  template <typename Use>
  bool read_versioned(const void* address, std::uint32_t kind, Use&& use) const noexcept {
    return read_slot(address, kind, [&](const Slot& slot, std::uint64_t before, const std::atomic<std::uint64_t>* words,
                                        std::uint32_t length) {
      use(Version{&slot, before, remembered(slot, before)}, words, length);
    });
  }

  // What remember() kept for the version of the record of `address` (of `kind`) now held: 0 when
  // nothing (or the record is unknown, or being written). `peek(words, length)` sees the record's
  // words as read_versioned's `use` does, and what it reads is good only when not 0 is returned:
  // valued() without a value of its own worked out from the words.
  //
  // A record made over words that a value was kept for (its slot's last record's, as that record
  // ended: carry()) is given that value, and keeps it, when `kept(words, length)` says that its
  // words are all still those it was made over: the record's own code can tell (a writer stores
  // only its own record's words, over the last record's), the registry cannot. A descriptor that
  // PyTorch makes and sets for each call as it did for the last, at the address the last one left,
  // is named so without a look at its words. When a value is returned and `seen` is given, it is
  // told which version of the record the value is for (still() says whether it still is).
  template <typename Peek, typename Kept>
  std::uint64_t remembered(const void* address, std::uint32_t kind, Peek&& peek, Kept&& kept,
                           Version* seen = nullptr) noexcept {
    auto nothing = [](const std::atomic<std::uint64_t>*, std::uint32_t, std::uint64_t*) { return 0u; };
    auto no_value = [](const std::uint64_t*, std::uint32_t) -> std::uint64_t { return 0; };
    return valued(address, kind, peek, kept, nothing, no_value, seen);
  }

  // remembered(), and for a version it has nothing for (nor a carried value kept), a value worked
  // out from the record's words, in the same look at its slot: `copy(words, length, into)` writes
  // what the value is worked out from into `into` (at most Words) and returns its length; if what
  // it copied was one consistent record, `value_of(into, length)` gives the value (0: none), which
  // is remembered for this version. Inline as far as the slot's first look; the rest, once per
  // version, out of line.
  template <typename Peek, typename Kept, typename Copy, typename ValueOf>
  [[gnu::always_inline]] std::uint64_t valued(const void* address, std::uint32_t kind, Peek& peek, Kept& kept,
                                              Copy& copy, ValueOf& value_of, Version* seen) noexcept {
    const std::uintptr_t key = key_of(address);
    Slot* const slot = find(key);
    if (slot == nullptr) return 0;
    // Acquire, and the rest: as in read_slot().
    const std::uint64_t before = slot->sequence.load(std::memory_order_acquire);
    if ((before & 1) || slot->kind.load(std::memory_order_relaxed) != kind) return 0;
    const std::uint64_t value = remembered(*slot, before);
    if (value == 0) return not_remembered(*slot, key, before, kind, peek, kept, copy, value_of, seen);
    peek(static_cast<const std::atomic<std::uint64_t>*>(slot->words), slot->length.load(std::memory_order_relaxed));
    std::atomic_thread_fence(std::memory_order_acquire);
    if (slot->key.load(std::memory_order_acquire) != key) return 0;
    if (slot->sequence.load(std::memory_order_relaxed) != before) return 0;
    if (seen != nullptr) *seen = Version{slot, before, value};
    return value;
  }

  // Whether the record of `address` (of `kind`) is still what a reader was told of (`version`, from
  // valued(): its value is the record's name): the same version, or a later
  // record at the same slot made over that version's words and kept (as remembered() takes a
  // carried value: its slot's last record's name was the reader's, and `kept` says its words are
  // still those), and then `version` is moved on to it. A slot's sequence moves at every set,
  // unknown and forget of its record (a new owner comes only after a forget) and never comes back,
  // so an equal sequence is the same record unchanged; a name is given to one content only, so a
  // kept record whose last one bore the reader's name has the contents that name was given for
  // (and is given it: remember()).
  // The first look is relaxed: the program's calls that last set or destroyed the object happen
  // before its calls that use it (the libraries' rule), so the load sees their moves; a set racing
  // the use is the program's race, as it is for the library. The rest is a reader's, as in
  // not_remembered(). Inline: a run's every look at a record (record_run.h) comes here, and GCC
  // moves it out of line once it holds made_over() (count-lines heuristic 420 -> 518).
  template <typename Kept>
  [[gnu::always_inline]] static bool still(Version& version, const void* address, std::uint32_t kind,
                                           Kept&& kept) noexcept {
    const Slot& slot = *static_cast<const Slot*>(version.slot);
    const std::uint64_t before = slot.sequence.load(std::memory_order_acquire);
    if (__builtin_expect(before == version.number, 1)) return true;
    const std::uintptr_t key = key_of(address);
    if ((before & 1) || slot.key.load(std::memory_order_relaxed) != key ||
        slot.kind.load(std::memory_order_relaxed) != kind || carried(slot, kind) != version.remembered)
      return false;
    auto nothing = [](const std::atomic<std::uint64_t>*, std::uint32_t) {};
    if (!made_over(slot, key, before, version.remembered, nothing, kept)) return false;
    version.number = before;
    return true;
  }

  // Keeps `value` (not 0) beside a version of a record that read_versioned returned true for, for
  // that version's later readers: a name for its contents (shim/families/record_names.h), worked
  // out once per version instead of once per read. Kept by slot and version, not by address (an
  // address forgotten and created again lives in another slot, whose versions are its own), so a
  // value kept for one version of one slot's contents is never given for another; a reader that
  // races the keeping gets nothing.
  [[gnu::always_inline]] static void remember(const Version& version, std::uint64_t value) noexcept {
    Slot& slot = *const_cast<Slot*>(static_cast<const Slot*>(version.slot));  // one of slots_
    std::uint64_t seen = slot.remembered_version.load(std::memory_order_relaxed);
    if (seen == version.number || seen == kRemembering) return;
    // Relaxed on success: the release fence below orders the claim before the value's store.
    if (!slot.remembered_version.compare_exchange_strong(seen, kRemembering, std::memory_order_relaxed,
                                                         std::memory_order_relaxed))
      return;
    // Release: a reader that sees the value below sees the claim first (and gives nothing).
    std::atomic_thread_fence(std::memory_order_release);
    slot.remembered_value.store(value, std::memory_order_relaxed);
    // Release: a reader that sees this version sees the value stored above.
    slot.remembered_version.store(version.number, std::memory_order_release);
  }

  // For tests: the slots holding a descriptor; an address's home slot (its bucket's ways are the
  // kWays slots from home / kWays * kWays); whether a lookup of it that does not find it at home
  // looks at the rest of its bucket (some way of it holds an address away from home); and how many
  // slots' keys a lookup that does not find it compares (those whose tag is the address's).
  std::size_t held() const noexcept {
    std::size_t n = 0;
    for (std::size_t at = 0; at < Slots; ++at) n += tag_in(way_at(at)) != 0;
    return n;
  }
  static std::size_t home_of(const void* address) noexcept { return place_of(key_of(address)).home; }
  bool searches_bucket(const void* address) const noexcept {
    return away_in(way_at(home_of(address))) != 0;
  }
  unsigned keys_compared(const void* address) const noexcept {
    const Place place = place_of(key_of(address));
    unsigned n = tag_in(way_at(place.home)) == place.tag;
    if (searches_bucket(address)) n += static_cast<unsigned>(__builtin_popcount(ways_with(place.home, place.tag)));
    return n;
  }

 private:
  static constexpr std::size_t kNowhere = Slots;
  static constexpr unsigned kSlotBits = __builtin_ctzll(Slots);

  struct alignas(64) Slot {
    std::atomic<std::uintptr_t> key{0};  // key_of(its address); 0 while free, or claimed and not yet keyed
    std::atomic<std::uint64_t> sequence{0};  // odd while the contents are being written; never wraps
    std::atomic<std::uint32_t> kind{0};
    std::atomic<std::uint32_t> length{0};  // the words a reader copies; 0: not usable
    std::atomic<std::uint64_t> words[Words]{};
    // What remember() kept, for which version of the contents (odd, never a record's version:
    // kNothing, or kRemembering while a value is being kept).
    std::atomic<std::uint64_t> remembered_version{kNothing};
    std::atomic<std::uint64_t> remembered_value{0};
    // What remember() had kept for the words as the slot's last record left them, and that
    // record's kind (carry()): 0, nothing.
    std::atomic<std::uint64_t> carried{0};
    std::atomic<std::uint32_t> carried_kind{0};
  };

  // read() and read_versioned(): `use(slot, sequence, words, length)` sees the usable record of
  // `address` (of `kind`), and what it read is good only when true is returned.
  template <typename Use>
  bool read_slot(const void* address, std::uint32_t kind, Use&& use) const noexcept {
    const std::uintptr_t key = key_of(address);
    const Slot* const slot = find(key);
    if (slot == nullptr) return false;
    // Acquire: pairs with the writer's last release, so the words read below are at least as new.
    const std::uint64_t before = slot->sequence.load(std::memory_order_acquire);
    const std::uint32_t length = slot->length.load(std::memory_order_relaxed);
    if ((before & 1) || length == 0 || length > Words || slot->kind.load(std::memory_order_relaxed) != kind)
      return false;
    use(*slot, before, static_cast<const std::atomic<std::uint64_t>*>(slot->words), length);
    // Acquire: the copies above come before the second look at the key and the sequence.
    std::atomic_thread_fence(std::memory_order_acquire);
    // The way may have been freed and taken by another address since find() saw this one's key:
    // the words copied may then be that address's, written at the `before` this reader saw, and
    // only the key tells. Acquire: a key that a later claim stored (release, after the forget
    // that moved the sequence on) makes the sequence read next show that move.
    if (slot->key.load(std::memory_order_acquire) != key) return false;
    return slot->sequence.load(std::memory_order_relaxed) == before;
  }

  // An address's key: its complement, so that 0, the key of a way that holds no address, is the
  // key of no address either (the last byte of the address space is no descriptor), null's
  // included. A way's key is its address's from its claim to its forget: where it is, a lookup has
  // found the address, whatever the way's tag.
  static std::uintptr_t key_of(const void* address) noexcept { return ~reinterpret_cast<std::uintptr_t>(address); }
  static constexpr std::uintptr_t kNull = ~std::uintptr_t{0};

  struct Place {
    std::size_t home;  // a slot
    std::uint32_t tag;
  };
  // The home from the hash's top bits (its bucket's, then its way's), which every bit of the
  // address stirs; the tag from its low half, a function of the address's low 32 bits alone that
  // is one-to-one but for the `| 1` (a used way's tag is never 0): a tag two addresses of one
  // bucket share costs a look at one more slot's key, nothing else. The hash is the address's, not
  // the key's, so that forget()'s common miss needs no complement.
  static Place place_of(std::uintptr_t key) noexcept {
    const std::uint64_t hash = ~key * 0x9e3779b97f4a7c15ull;
    return {static_cast<std::size_t>(hash >> (64 - kSlotBits)), static_cast<std::uint32_t>(hash) | 1};
  }

  // The index: a line a bucket (bucket b's ways are slots b * kWays to b * kWays + kWays - 1), a
  // word a way: its tag in the low half, a copy of the bucket's `away` in the high half. Each way
  // keeps a copy so that a lookup reads the count with its home's tag, in one load, and an address
  // the registry does not hold is told from one word that is 0; every update of the count (rare: a
  // claim away from home, and its forget) goes to all the copies, each a count of its own, added to
  // the high half (a claim's CAS and a forget's clear of a tag keep it). The loads and the count's
  // updates are relaxed: a lookup by an address's owner comes after the claim that counted the
  // address away (in the same thread, or after the create it was told of), so any copy shows it;
  // another thread's read racing a create may miss it, and its call then runs directly. A lookup
  // that sees 0 looks no further than its home.
  static_assert(sizeof(std::atomic<std::uint64_t>) == 8 && std::atomic<std::uint64_t>::is_always_lock_free,
                "a bucket's line is eight plain 64-bit words");
  static constexpr std::uint64_t kTagBits = 0xffffffffu;
  static std::size_t first_of(std::size_t at) noexcept { return at & ~(kWays - 1); }
  // Relaxed: as the index says.
  std::uint64_t way_at(std::size_t at) const noexcept { return index_[at].load(std::memory_order_relaxed); }
  static std::uint32_t tag_in(std::uint64_t way) noexcept { return static_cast<std::uint32_t>(way); }
  static std::uint32_t away_in(std::uint64_t way) noexcept { return static_cast<std::uint32_t>(way >> 32); }
  void count_away(std::size_t at, std::uint32_t change) noexcept {
    // Relaxed: as the index says. A change of -1 (~0u) wraps the high half alone.
    for (std::size_t way = first_of(at); way < first_of(at) + kWays; ++way)
      index_[way].fetch_add(std::uint64_t{change} << 32, std::memory_order_relaxed);
  }

  // The ways of the bucket of slot `at` whose tag is `tag` (0: the free ones), bit 2w for way w.
  // Each tag is read as a relaxed load would be (an aligned SSE2 load reads each aligned 32-bit
  // half whole): a tag is only a hint, which the slot's key confirms, and a free way is taken by a
  // CAS.
  unsigned ways_with(std::size_t at, std::uint32_t tag) const noexcept {
    const std::atomic<std::uint64_t>* line = &index_[first_of(at)];
#ifdef CUDNN_FASTPATH_REGISTRY_SSE2
    const __m128i want = _mm_set1_epi32(static_cast<int>(tag));
    const auto compare = [&](int quarter) {
      return _mm_cmpeq_epi32(_mm_load_si128(reinterpret_cast<const __m128i*>(line) + quarter), want);
    };
    // Each half's answer (32 bits, all ones or none) narrowed to 8, its top bit taken; the odd
    // halves are `away`'s (x86-64 is little-endian: a word's low half comes first).
    const __m128i words =
        _mm_packs_epi16(_mm_packs_epi32(compare(0), compare(1)), _mm_packs_epi32(compare(2), compare(3)));
    return static_cast<unsigned>(_mm_movemask_epi8(words)) & 0x5555;
#else
    unsigned ways = 0;
    for (unsigned w = 0; w < kWays; ++w)
      // Relaxed: as above.
      ways |= unsigned{tag_in(line[w].load(std::memory_order_relaxed)) == tag} << 2 * w;
    return ways;
#endif
  }
  // The slot of the first way of `ways` (as ways_with() gives them, not 0) of the bucket of `at`.
  static std::size_t slot_of(std::size_t at, unsigned ways) noexcept {
    return first_of(at) + static_cast<unsigned>(__builtin_ctz(ways)) / 2;
  }

  // The slot of `key`, or null: its home, by its key, else a way of its bucket where one is away.
  // Relaxed loads of the tags and keys here and below: an owner finds what its own claim stored
  // (its calls come after its create); another thread's read looks at the key again after its
  // copy (read()).
  const Slot* find(std::uintptr_t key) const noexcept {
    const Place place = place_of(key);
    if (slots_[place.home].key.load(std::memory_order_relaxed) == key) return &slots_[place.home];
    if (away_in(way_at(place.home)) == 0) return nullptr;
    const std::size_t at = find_away(key, place);
    return at == kNowhere ? nullptr : &slots_[at];
  }
  Slot* find(std::uintptr_t key) noexcept {
    return const_cast<Slot*>(static_cast<const DescriptorRegistry*>(this)->find(key));
  }
  // Whether `key` is at its home, `way` the home's index word: its tag looked at first (the index's
  // line, not the slot's).
  bool at_home(std::uint64_t way, const Place& place, std::uintptr_t key) const noexcept {
    return tag_in(way) == place.tag && slots_[place.home].key.load(std::memory_order_relaxed) == key;
  }

  // The rare paths, out of line: an address away from its home, a home taken.
  [[gnu::noinline]] std::size_t find_away(std::uintptr_t key, Place place) const noexcept {
    for (unsigned ways = ways_with(place.home, place.tag); ways != 0; ways &= ways - 1) {
      const std::size_t at = slot_of(place.home, ways);
      if (slots_[at].key.load(std::memory_order_relaxed) == key) return at;
    }
    return kNowhere;
  }
  [[gnu::noinline]] void forget_away(std::uintptr_t key, Place place) noexcept {
    const std::size_t at = find_away(key, place);
    if (at != kNowhere) vacate(at, place.home);
  }
  [[gnu::noinline]] std::size_t claim_away(std::uintptr_t key, Place place) noexcept {
    for (unsigned free = ways_with(place.home, 0); free != 0; free &= free - 1) {
      const std::size_t at = slot_of(place.home, free);
      if (take(at, place.tag, key)) {
        if (at != place.home) count_away(at, 1);  // (the home may have been freed since)
        return at;
      }
    }
    return kNowhere;
  }

  // The slot for `key`: its own if it has one (a create at the address of a descriptor destroyed
  // around the shim: `own` is then set), else its home if free, else another free way of its
  // bucket, or null.
  Slot* claim(std::uintptr_t key, bool& own) noexcept {
    if (key == kNull) return nullptr;
    const Place place = place_of(key);
    own = true;
    const std::uint64_t way = way_at(place.home);
    if (at_home(way, place, key)) return &slots_[place.home];
    const bool away = away_in(way) != 0;
    std::size_t at = away ? find_away(key, place) : kNowhere;
    if (at != kNowhere) return &slots_[at];
    own = false;
    at = take(place.home, place.tag, key) ? place.home : claim_away(key, place);
    return at == kNowhere ? nullptr : &slots_[at];
  }
  // Takes the way of slot `at` for `key` if it is free.
  bool take(std::size_t at, std::uint32_t tag, std::uintptr_t key) noexcept {
    std::uint64_t way = way_at(at);
    // Acquire: pairs with the forget that freed the way (release; the count's relaxed updates since
    // continue its release sequence), so the writes that follow continue the slot's sequence after
    // the last owner's. Taken (by another claim, or long ago): false. A failure because the count
    // moved tries again.
    do {
      if (tag_in(way) != 0) return false;
    } while (!index_[at].compare_exchange_weak(way, way | tag, std::memory_order_acquire, std::memory_order_relaxed));
    // Release: a reader whose last look at the key sees this one sees the sequence as the last
    // owner's forget left it (read()).
    slots_[at].key.store(key, std::memory_order_release);
    return true;
  }
  // Frees the way of slot `at`, `home` the home of its address. Inline: forget_at_home() makes no call.
  [[gnu::always_inline]] void vacate(std::size_t at, std::size_t home) noexcept {
    make_unknown(slots_[at], /*carry_name=*/true);
    // Relaxed: ordered before the next claim by the tag's release. From here the way's key is no
    // address's until the next claim stores its own.
    slots_[at].key.store(0, std::memory_order_relaxed);
    if (at != home) count_away(at, ~0u);  // -1
    // Release: the next claim of the way (acquire) comes after the writes above, so its writes
    // continue the slot's sequence. The tag alone is cleared: the count's copy stays.
    index_[at].fetch_and(~kTagBits, std::memory_order_release);
  }

  // The write section's ends, inline wherever they are (two stores and a fence): out of line, as GCC
  // may choose when a unit grows, they cost forget_at_home() a frame for its call.
  [[gnu::always_inline]] static std::uint64_t begin_write(Slot& slot) noexcept {
    const std::uint64_t sequence = slot.sequence.load(std::memory_order_relaxed);
    slot.sequence.store(sequence + 1, std::memory_order_relaxed);
    // Release: a reader that sees any of the writes that follow sees the odd sequence first.
    std::atomic_thread_fence(std::memory_order_release);
    return sequence;
  }
  [[gnu::always_inline]] static void end_write(Slot& slot, std::uint64_t sequence) noexcept {
    // Release: a reader that sees the even sequence sees every write before it.
    slot.sequence.store(sequence + 2, std::memory_order_release);
  }
  // `edit(words, length)` of a slot's record, in a write section (write(), write_at_home()).
  template <typename Edit>
  [[gnu::always_inline]] static void edit_slot(Slot& slot, Edit& edit) noexcept {
    const std::uint64_t sequence = begin_write(slot);
    slot.length.store(edit(slot.words, slot.length.load(std::memory_order_relaxed)), std::memory_order_relaxed);
    end_write(slot, sequence);
  }
  static constexpr std::uint64_t kNothing = 1, kRemembering = 3;

  // What remember() kept for version `version` of `slot`'s contents; 0: nothing.
  [[gnu::always_inline]] static std::uint64_t remembered(const Slot& slot, std::uint64_t version) noexcept {
    // Acquire: pairs with remember()'s last release, so the value read is at least as new.
    if (slot.remembered_version.load(std::memory_order_acquire) != version) return 0;
    const std::uint64_t value = slot.remembered_value.load(std::memory_order_relaxed);
    // Acquire: the value's read comes before the second look; a keeping that began since shows.
    std::atomic_thread_fence(std::memory_order_acquire);
    return slot.remembered_version.load(std::memory_order_relaxed) == version ? value : 0;
  }

  // Always inline, and carry() with remembered() too: forget_at_home() makes no call, whatever the
  // including unit's inline budget (a call there costs the fast path four saved registers).
  [[gnu::always_inline]] static void make_unknown(Slot& slot, bool carry_name = false) noexcept {
    const std::uint64_t sequence = begin_write(slot);
    if (carry_name) carry(slot, sequence);
    slot.length.store(0, std::memory_order_relaxed);
    end_write(slot, sequence);
  }

  // The slot's record ends at `version` (its last, whose write section the caller holds): what
  // remember() kept for it, with its kind, is carried to the slot's next record (a writer stores
  // only its own record's words, so that record is made over these words: remembered()).
  // Relaxed stores: inside the write section, whose sequence orders them for readers.
  [[gnu::always_inline]] static void carry(Slot& slot, std::uint64_t version) noexcept {
    slot.carried.store(remembered(slot, version), std::memory_order_relaxed);
    slot.carried_kind.store(slot.kind.load(std::memory_order_relaxed), std::memory_order_relaxed);
  }
  // valued()'s version with nothing remembered, at `before` of `slot` (whose key was `key`): the
  // value carried to it if `kept` says its words are still those it was made over (made_over()),
  // else the value its words give, if any. Out of line: once per version, not once per read.
  template <typename Peek, typename Kept, typename Copy, typename ValueOf>
  [[gnu::noinline]] std::uint64_t not_remembered(Slot& slot, std::uintptr_t key, std::uint64_t before,
                                                 std::uint32_t kind, Peek& peek, Kept& kept, Copy& copy,
                                                 ValueOf& value_of, Version* seen) noexcept {
    std::uint64_t value = carried(slot, kind);
    if (!made_over(slot, key, before, value, peek, kept)) {
      const std::uint32_t length = slot.length.load(std::memory_order_relaxed);
      if (length == 0 || length > Words) return 0;
      const std::atomic<std::uint64_t>* const words = slot.words;
      std::uint64_t copied[Words];
      peek(words, length);
      const std::uint32_t n = copy(words, length, copied);
      // Acquire, and the rest: as in read_slot().
      std::atomic_thread_fence(std::memory_order_acquire);
      if (slot.key.load(std::memory_order_acquire) != key) return 0;
      if (slot.sequence.load(std::memory_order_relaxed) != before) return 0;
      value = value_of(static_cast<const std::uint64_t*>(copied), n);
      if (value == 0) return 0;
      remember(Version{&slot, before, 0}, value);
    }
    if (seen != nullptr) *seen = Version{&slot, before, value};
    return value;
  }
  // Whether the record of `slot` at version `before` (its address's key `key`), whose slot's last
  // record was named `value` (carried(), not 0), was made over that record's words and kept
  // (`kept`, as remembered() says); `peek` sees its words. If so it is given that name (remember(),
  // for its later readers and the slot's next record).
  template <typename Peek, typename Kept>
  static bool made_over(const Slot& slot, std::uintptr_t key, std::uint64_t before, std::uint64_t value, Peek& peek,
                        Kept& kept) noexcept {
    const std::atomic<std::uint64_t>* const words = slot.words;
    const std::uint32_t length = slot.length.load(std::memory_order_relaxed);
    if (value == 0 || length == 0 || length > Words || !kept(words, length)) return false;
    peek(words, length);
    // Acquire, and the rest: as in read_slot().
    std::atomic_thread_fence(std::memory_order_acquire);
    if (slot.key.load(std::memory_order_acquire) != key) return false;
    if (slot.sequence.load(std::memory_order_relaxed) != before) return false;
    remember(Version{&slot, before, 0}, value);
    return true;
  }
  // What was carried to the slot's record, if that is a record of `kind`. Relaxed: read between a
  // reader's two looks at the sequence, like the words.
  static std::uint64_t carried(const Slot& slot, std::uint32_t kind) noexcept {
    return slot.carried_kind.load(std::memory_order_relaxed) == kind ? slot.carried.load(std::memory_order_relaxed) : 0;
  }

  // The slots first: their fields are then at fixed offsets from the registry's own address.
  Slot slots_[Slots]{};
  alignas(64) std::atomic<std::uint64_t> index_[Slots]{};
};

}  // namespace cudnn_fastpath::replay

#undef CUDNN_FASTPATH_REGISTRY_SSE2
