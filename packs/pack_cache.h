// PackCache: finalized variant packs by contents, lock-free, fixed size.
//
// Sets x Ways entries; the contents' hash picks a set, and a lookup compares at most Ways tags
// (32 bits of the hash, one small array) and then the contents of the entries whose tag matches. Each entry's state is
// one 64-bit word, {generation: 32, references: 32}:
//   references 0       free
//   references kBusy   being (re)written by an insert: nobody may use it
//   references n >= 1  holds a finalized pack: 1 for the cache itself plus one per lease
// A lookup takes a lease by a CAS from the word it read to the same word plus one. An insert
// recycles a free entry, or one that only the cache holds (references 1), by a CAS to
// {generation + 1, kBusy}: so a lease can never be taken on an entry being rewritten (its CAS
// fails on the new generation), and an entry that anyone leases is never evicted (its references
// are above 1). The contents are compared before the CAS; a rewrite racing the comparison changes
// the generation first, so the CAS fails and the lookup misses. Content fields are atomics (read
// while a rewrite may be going on), all relaxed: the word's acquire/release pairs order them.
//
// Packs are opaque here (void*), and so is the library that made them: the caller destroys what an
// insert evicts, with the library the entry names.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "packs/pack_contents.h"

namespace cudnn_fastpath::packs {

template <std::size_t Sets, std::size_t Ways>
class PackCache {
  static_assert(Sets >= 1 && (Sets & (Sets - 1)) == 0, "Sets must be a power of two");
  static_assert(Ways >= 1 && Ways <= 64, "Ways must be 1 to 64");

 public:
  static constexpr std::size_t kEntries = Sets * Ways;

  // A reference to a cached pack, held by a finalized proxy. Empty: no entry.
  // All zero when empty, so that an array of holders needs no initialiser of its own.
  struct Lease {
    std::uint32_t entry_plus_one = 0;
    std::uint32_t generation = 0;
    void* pack = nullptr;
    explicit operator bool() const noexcept { return entry_plus_one != 0; }
  };

  // A pack the cache let go of, for the caller to destroy (nobody else holds it any more); `used`:
  // a lookup found it at least once after it was cached (one that was not is a waste to
  // replay/admission.h).
  struct Evicted {
    void* pack = nullptr;
    std::uintptr_t library = 0;
    bool used = false;
  };

  // A lease on the cached pack with these contents, if there is one. Hot, like release(): a
  // program's steady ops run them, and their code belongs next to the other code those ops run.
  __attribute__((hot)) Lease acquire(const PackContents& contents, std::uintptr_t library) noexcept {
    const std::uint64_t hash = contents.hash(library);
    const std::size_t first = set_of(hash) * Ways;
    for (std::size_t i = first; i < first + Ways; ++i) {
      // Relaxed: a filter only; the word decides.
      if (tags_[i].load(std::memory_order_relaxed) != tag_of(hash)) continue;
      Entry& e = entries_[i];
      // Acquire: pairs with the release that published the entry, so its contents are read after.
      std::uint64_t word = e.word.load(std::memory_order_acquire);
      // Retried for as long as only the count moves (other threads' leases): the contents compared
      // are still this generation's. Lock-free: a failed CAS means another thread's succeeded. A
      // bounded number of tries made a lease taken beside busy threads a miss, and a second pack.
      bool compared = false;
      for (std::uint32_t generation = 0;;) {
        const std::uint32_t references = references_of(word);
        if (references == 0 || references == kBusy) break;
        if (!compared || generation_of(word) != generation) {
          if (!matches(e, contents, library)) break;
          compared = true;
          generation = generation_of(word);
        }
        // acq_rel: the lease is taken on exactly the generation whose contents were compared.
        if (e.word.compare_exchange_weak(word, word + 1, std::memory_order_acq_rel, std::memory_order_acquire)) {
          if (!e.recently_used.load(std::memory_order_relaxed)) e.recently_used.store(1, std::memory_order_relaxed);
          if (!e.used.load(std::memory_order_relaxed)) e.used.store(1, std::memory_order_relaxed);
          return {static_cast<std::uint32_t>(i + 1), generation_of(word), e.pack.load(std::memory_order_relaxed)};
        }
      }
    }
    return {};
  }

  // Caches `pack` (finalized, with these contents, made by `library`) and returns a lease on it
  // for the caller; empty if every entry of its set is leased (the caller keeps the pack to
  // itself then). `evicted` receives the pack whose entry was recycled, if any.
  Lease insert(const PackContents& contents, std::uintptr_t library, void* pack, Evicted& evicted) noexcept {
    evicted = {};
    const std::uint64_t hash = contents.hash(library);
    const std::size_t set = set_of(hash);
    const std::size_t first = set * Ways;
    // A free entry first; else a clock over the entries only the cache holds: one that was used
    // since the hand last passed gets a second chance.
    for (std::size_t i = first; i < first + Ways; ++i) {
      std::uint64_t word = entries_[i].word.load(std::memory_order_relaxed);
      if (references_of(word) == 0 && claim(entries_[i], word)) return fill(i, hash, contents, library, pack);
    }
    for (std::size_t step = 0; step < 2 * Ways; ++step) {
      // Relaxed: the hand only spreads the choice.
      const std::size_t i = first + hands_[set].fetch_add(1, std::memory_order_relaxed) % Ways;
      Entry& e = entries_[i];
      std::uint64_t word = e.word.load(std::memory_order_relaxed);
      const std::uint32_t references = references_of(word);
      if (references != 0 && references != 1) continue;  // leased, or being written
      if (references == 1 && e.recently_used.exchange(0, std::memory_order_relaxed)) continue;
      const void* old_pack = e.pack.load(std::memory_order_relaxed);
      const std::uintptr_t old_library = e.library.load(std::memory_order_relaxed);
      const bool old_used = e.used.load(std::memory_order_relaxed) != 0;
      if (!claim(e, word)) continue;
      if (references == 1) evicted = {const_cast<void*>(old_pack), old_library, old_used};
      return fill(i, hash, contents, library, pack);
    }
    return {};
  }

  // Asks for the set these contents would be looked up in, ahead of the acquire(): a program sets
  // the last of its pack's attributes and finalizes it moments later, and by then the set's tags
  // are on their way. No effect on what the cache holds.
  void prefetch(const PackContents& contents, std::uintptr_t library) const noexcept {
    __builtin_prefetch(&tags_[set_of(contents.hash(library)) * Ways]);
  }

  // Gives a lease back. A lease from before a fork's forget_in_child() is ignored.
  __attribute__((hot)) void release(const Lease& lease) noexcept {
    if (!lease) return;
    Entry& e = entries_[lease.entry_plus_one - 1];
    std::uint64_t word = e.word.load(std::memory_order_relaxed);
    // Release: this holder's uses of the pack come before whatever an evictor does after.
    while (generation_of(word) == lease.generation && references_of(word) > 1 &&
           !e.word.compare_exchange_weak(word, word - 1, std::memory_order_release, std::memory_order_relaxed)) {
    }
  }

  // In a forked child, where only the forking thread exists: every entry becomes free. The packs
  // are not destroyed (they are the parent's cuDNN state) and old leases are ignored.
  void forget_in_child() noexcept {
    for (std::size_t i = 0; i < kEntries; ++i) {
      const std::uint64_t word = entries_[i].word.load(std::memory_order_relaxed);
      if (word == 0) continue;  // never used: leave its page untouched
      entries_[i].word.store(static_cast<std::uint64_t>(generation_of(word) + 1) << 32, std::memory_order_relaxed);
      tags_[i].store(0, std::memory_order_relaxed);
    }
  }

  // Entries holding a pack (for tests and statistics).
  std::size_t cached() const noexcept {
    std::size_t n = 0;
    for (const Entry& e : entries_) {
      const std::uint32_t references = references_of(e.word.load(std::memory_order_relaxed));
      n += references != 0 && references != kBusy;
    }
    return n;
  }

 private:
  static constexpr std::uint32_t kBusy = ~std::uint32_t{0};
  static constexpr int kMax = PackContents::kMaxTensors;
  static_assert(kMax <= 255, "counts are kept in a byte");

  // Aligned, with the word and everything matches() compares but the tensors in 40 bytes: a
  // pack of up to four tensors is two cache lines, read in parallel after the tags.
  struct alignas(64) Entry {
    std::atomic<std::uint64_t> word{0};
    std::atomic<std::uintptr_t> library{0};
    std::atomic<void*> pack{nullptr};
    std::atomic<std::uintptr_t> workspace{0};
    std::atomic<std::uint8_t> uid_count{0};  // at most kMaxTensors
    std::atomic<std::uint8_t> pointer_count{0};
    std::atomic<bool> has_workspace{false};
    std::atomic<std::uint8_t> recently_used{0};
    std::atomic<std::uint8_t> used{0};  // found by a lookup since it was cached (relaxed: a flag)
    // As in PackContents: each uid next to its pointer.
    struct Tensor {
      std::atomic<std::int64_t> uid{0};
      std::atomic<std::uintptr_t> pointer{0};
    } tensors[kMax]{};
  };

  static std::uint32_t references_of(std::uint64_t word) noexcept { return static_cast<std::uint32_t>(word); }
  static std::uint32_t generation_of(std::uint64_t word) noexcept { return static_cast<std::uint32_t>(word >> 32); }
  static std::size_t set_of(std::uint64_t hash) noexcept { return static_cast<std::size_t>(hash >> 40) & (Sets - 1); }
  static std::uint32_t tag_of(std::uint64_t hash) noexcept { return static_cast<std::uint32_t>(hash); }

  // acq_rel: acquire orders the rewrite after the previous holders' releases; release is not
  // needed here (fill() publishes) but costs nothing on a CAS.
  static bool claim(Entry& e, std::uint64_t word) noexcept {
    const std::uint64_t busy = (static_cast<std::uint64_t>(generation_of(word) + 1) << 32) | kBusy;
    return e.word.compare_exchange_strong(word, busy, std::memory_order_acq_rel, std::memory_order_relaxed);
  }

  static bool matches(const Entry& e, const PackContents& c, std::uintptr_t library) noexcept {
    if (e.library.load(std::memory_order_relaxed) != library ||
        e.uid_count.load(std::memory_order_relaxed) != static_cast<std::uint8_t>(c.uid_count) ||
        e.pointer_count.load(std::memory_order_relaxed) != static_cast<std::uint8_t>(c.pointer_count) ||
        e.has_workspace.load(std::memory_order_relaxed) != c.has_workspace ||
        (c.has_workspace && e.workspace.load(std::memory_order_relaxed) != reinterpret_cast<std::uintptr_t>(c.workspace)))
      return false;
    for (std::int32_t i = 0; i < c.uid_count; ++i)
      if (e.tensors[i].uid.load(std::memory_order_relaxed) != c.uid(i)) return false;
    for (std::int32_t i = 0; i < c.pointer_count; ++i)
      if (e.tensors[i].pointer.load(std::memory_order_relaxed) != reinterpret_cast<std::uintptr_t>(c.pointer(i)))
        return false;
    return true;
  }

  Lease fill(std::size_t i, std::uint64_t hash, const PackContents& c, std::uintptr_t library, void* pack) noexcept {
    Entry& e = entries_[i];
    e.library.store(library, std::memory_order_relaxed);
    e.uid_count.store(static_cast<std::uint8_t>(c.uid_count), std::memory_order_relaxed);
    e.pointer_count.store(static_cast<std::uint8_t>(c.pointer_count), std::memory_order_relaxed);
    e.has_workspace.store(c.has_workspace, std::memory_order_relaxed);
    e.workspace.store(reinterpret_cast<std::uintptr_t>(c.workspace), std::memory_order_relaxed);
    for (std::int32_t k = 0; k < c.uid_count; ++k) e.tensors[k].uid.store(c.uid(k), std::memory_order_relaxed);
    for (std::int32_t k = 0; k < c.pointer_count; ++k)
      e.tensors[k].pointer.store(reinterpret_cast<std::uintptr_t>(c.pointer(k)), std::memory_order_relaxed);
    e.pack.store(pack, std::memory_order_relaxed);
    e.recently_used.store(1, std::memory_order_relaxed);
    e.used.store(0, std::memory_order_relaxed);
    tags_[i].store(tag_of(hash), std::memory_order_relaxed);
    const std::uint32_t generation = generation_of(e.word.load(std::memory_order_relaxed));
    // Release: the contents above are visible to whoever acquires the word. References: the cache
    // and the caller's lease.
    e.word.store((static_cast<std::uint64_t>(generation) << 32) | 2, std::memory_order_release);
    return {static_cast<std::uint32_t>(i + 1), generation, pack};
  }

  // The low half of each entry's hash, a set's in one cache line: the lookup's first filter.
  alignas(64) std::atomic<std::uint32_t> tags_[kEntries]{};
  std::atomic<std::uint32_t> hands_[Sets]{};
  Entry entries_[kEntries]{};
};

}  // namespace cudnn_fastpath::packs
