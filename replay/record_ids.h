// RecordIds: a name for each distinct record (what the program set a descriptor to: its kind and
// words), so that a key holds one word for a descriptor instead of all of its record.
//
// A name is given to one content only, ever: the table maps each content it holds to its name, and
// a name is never given again (a content evicted and met again gets a new one, and the keys that
// held the old name are simply never met again). So two keys with the same names hold the same
// contents: exact, as a key must be (replay_key.h). Names come from a process-wide counter in
// blocks of 256 (NameBlock, the caller's per thread), so that giving one is a thread's own increment.
//
// Sets x Ways entries, each a seqlock as in answer_cache.h: a writer claims an entry by moving its
// sequence from even to odd (a CAS), writes, and makes it even again (release); a reader copies
// between two reads of the sequence. A lookup that races a rewrite of its entry misses, and the
// content is named anew: never a wrong name, at worst a new one.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "replay/avalanche.h"
#include "replay/cache_sets.h"

namespace cudnn_fastpath::replay {

// The names a thread gives next (its own, from the process-wide counter): zero-initialised, empty.
struct NameBlock {
  std::uint64_t next = 0, end = 0;
};

template <std::size_t Sets, std::size_t Ways, std::size_t MaxWords>
class RecordIds {
 public:
  // The name of the record of `kind` whose words are words[0, length); 0 when it cannot be named
  // (longer than MaxWords: the caller writes the words themselves).
  std::uint64_t name(std::uint32_t kind, const std::uint64_t* words, std::uint32_t length, NameBlock& names) noexcept {
    if (length > MaxWords) return 0;
    const std::uint64_t hash = hash_of(kind, words, length);
    const std::size_t first = Index::set_of(hash) * Ways;
    if (const std::uint64_t id = lookup(first, Index::tag_of(hash), kind, words, length, nullptr)) return id;
    return insert(first, hash, kind, words, length, names);
  }

  // Names given so far in the process (for tests).
  static std::uint64_t names_given() noexcept { return next_block_.load(std::memory_order_relaxed); }

 private:
  using Index = CacheSets<Sets>;
  static constexpr std::uint64_t kBlock = 256;

  struct alignas(64) Entry {
    std::atomic<std::uint32_t> sequence{0};  // odd while written
    std::atomic<std::uint32_t> kind{0};
    std::atomic<std::uint32_t> length{0};
    std::atomic<std::uint64_t> id{0};
    std::atomic<std::uint8_t> recently_used{0};
    std::atomic<std::uint64_t> words[MaxWords]{};
  };

  static std::uint64_t hash_of(std::uint32_t kind, const std::uint64_t* words, std::uint32_t length) noexcept {
    std::uint64_t h = (std::uint64_t{kind} << 32 | length) * 0x9e3779b97f4a7c15ull;
    for (std::uint32_t i = 0; i < length; ++i) h = (h ^ words[i]) * 0xc2b2ae3d27d4eb4full + i;
    return avalanche(h);
  }

  // A name the set starting at `first` holds for these contents (0: none), `except` an entry of
  // the caller's. One at most, but for the moment two threads that named the same contents at once
  // both hold theirs (insert() keeps the smaller): either names them exactly.
  std::uint64_t lookup(std::size_t first, std::uint32_t tag, std::uint32_t kind, const std::uint64_t* words,
                       std::uint32_t length, const Entry* except) noexcept {
    // A filter only; the sequence decides.
    for (unsigned ways = Index::template ways_with<Ways>(&tags_[first], tag); ways != 0; ways &= ways - 1) {
      Entry& e = entries_[first + Index::first_way(ways)];
      if (&e == except) continue;
      // Acquire: pairs with the writer's release, so the words compared are at least as new.
      const std::uint32_t before = e.sequence.load(std::memory_order_acquire);
      if (before & 1) continue;
      if (!holds(e, kind, words, length)) continue;
      const std::uint64_t id = e.id.load(std::memory_order_relaxed);
      // Acquire: the reads above come before the second look at the sequence.
      std::atomic_thread_fence(std::memory_order_acquire);
      if (e.sequence.load(std::memory_order_relaxed) != before) continue;
      // Relaxed: a hint for the clock.
      if (!e.recently_used.load(std::memory_order_relaxed)) e.recently_used.store(1, std::memory_order_relaxed);
      return id;
    }
    return 0;
  }

  static bool holds(const Entry& e, std::uint32_t kind, const std::uint64_t* words, std::uint32_t length) noexcept {
    if (e.kind.load(std::memory_order_relaxed) != kind || e.length.load(std::memory_order_relaxed) != length)
      return false;
    for (std::uint32_t i = 0; i < length; ++i)
      if (e.words[i].load(std::memory_order_relaxed) != words[i]) return false;
    return true;
  }

  // A new name, from the thread's block.
  static std::uint64_t new_name(NameBlock& names) noexcept {
    if (names.next == names.end) {
      // Relaxed: the counter only hands out disjoint blocks.
      names.next = next_block_.fetch_add(kBlock, std::memory_order_relaxed) + 1;
      names.end = names.next + kBlock;
    }
    return names.next++;
  }

  std::uint64_t insert(std::size_t first, std::uint64_t hash, std::uint32_t kind, const std::uint64_t* words,
                       std::uint32_t length, NameBlock& names) noexcept {
    const std::size_t set = first / Ways;
    Entry* chosen = nullptr;
    std::uint32_t sequence = 0;
    // The contents' home way first: two threads naming the same contents at once meet there, and
    // the one that loses the claim waits for the other's name (a writer holds an entry for a few
    // dozen instructions; past a bound it names on its own).
    const std::size_t home_at = first + (hash >> 32) % Ways;
    Entry& home = entries_[home_at];
    if (tags_[home_at].load(std::memory_order_relaxed) == 0) {
      if (claim(home, sequence)) {
        chosen = &home;
      } else {
        // Acquire: pairs with the writer's release, as in lookup().
        for (int spin = 0; spin < 1024 && (home.sequence.load(std::memory_order_acquire) & 1); ++spin)
          __builtin_ia32_pause();
        if (const std::uint64_t id = lookup(first, Index::tag_of(hash), kind, words, length, nullptr)) return id;
      }
    }
    for (unsigned free = Index::template ways_with<Ways>(&tags_[first], 0); free != 0 && chosen == nullptr;
         free &= free - 1)
      if (Entry& e = entries_[first + Index::first_way(free)]; claim(e, sequence)) chosen = &e;
    for (std::size_t step = 0; step < 2 * Ways && chosen == nullptr; ++step) {
      // Relaxed: the hand only spreads the choice.
      Entry& e = entries_[first + hands_[set].fetch_add(1, std::memory_order_relaxed) % Ways];
      if (e.recently_used.exchange(0, std::memory_order_relaxed)) continue;
      if (claim(e, sequence)) chosen = &e;
    }
    const std::uint64_t id = new_name(names);
    if (chosen == nullptr) return id;  // every candidate being written: named, not kept
    Entry& e = *chosen;
    e.kind.store(kind, std::memory_order_relaxed);
    e.length.store(length, std::memory_order_relaxed);
    for (std::uint32_t i = 0; i < length; ++i) e.words[i].store(words[i], std::memory_order_relaxed);
    e.id.store(id, std::memory_order_relaxed);
    e.recently_used.store(1, std::memory_order_relaxed);
    tag_of(e).store(Index::tag_of(hash), std::memory_order_relaxed);
    // Release: a reader that sees the even sequence sees everything above.
    e.sequence.store(sequence + 2, std::memory_order_release);
    // Two threads that named the same contents at once each published a name: both then take the
    // smaller one, whose entry stays, so that the contents keep one name (a key written with the
    // other in between is only a key never met again).
    const std::uint64_t other = lookup(first, Index::tag_of(hash), kind, words, length, &e);
    if (other != 0 && other < id) {
      std::uint32_t again = 0;
      if (claim(e, again)) {
        tag_of(e).store(0, std::memory_order_relaxed);
        e.sequence.store(again + 2, std::memory_order_release);  // as above
      }
      return other;
    }
    return id;
  }

  // acq_rel: acquire orders this writer after the last one's release; release is the claim's.
  static bool claim(Entry& e, std::uint32_t& sequence) noexcept {
    sequence = e.sequence.load(std::memory_order_relaxed);
    return !(sequence & 1) &&
           e.sequence.compare_exchange_strong(sequence, sequence + 1, std::memory_order_acq_rel, std::memory_order_relaxed);
  }

  std::atomic<std::uint32_t>& tag_of(const Entry& e) noexcept { return tags_[&e - entries_]; }

  Entry entries_[Sets * Ways]{};
  // Each entry's tag (0: free), a set's in one line: a lookup reads one line until a tag matches.
  alignas(64) std::atomic<std::uint32_t> tags_[Sets * Ways]{};
  std::atomic<std::uint32_t> hands_[Sets]{};
  static inline std::atomic<std::uint64_t> next_block_{0};
};

}  // namespace cudnn_fastpath::replay
