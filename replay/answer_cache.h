// AnswerCache: what a library answered a pure query with (cuBLASLt's matmul heuristic), by the
// query's every byte (a ReplayKey), lock-free, fixed size.
//
// Sets x Ways entries; the key's hash picks a set and a 32-bit tag (a set's tags in one line, apart
// from the entries) filters its entries. Each entry is a seqlock: a writer claims it by moving
// `sequence` from even to odd (a CAS: one writer at a time), writes the key and the answer, and
// makes it even again (release); a reader copies the answer between two reads of `sequence` and
// keeps it only if both were the same even value and the key it compared was the one it wanted.
// Nothing is leased: an answer is copied out, so an entry can be rewritten at any time. Insertion
// takes a free entry, else the clock's next one not used since the hand last passed it; `used`
// says whether an evicted answer was ever given (an answer evicted unused is a waste to
// replay/admission.h).
//
// A thread that asks the same query again and again (PyTorch asks the heuristic before each matmul)
// keeps where its last answer was (RecentQuery): a ticket, the entry and its sequence then. A
// sequence moves at every write of its entry (a rewrite, a forget) and, 64 bits wide, never comes
// back, so an entry whose sequence is the ticket's still holds that query's key and answer, and
// find_again() reads it without a hash, a search of the set or a comparison of the key.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "replay/cache_sets.h"

namespace cudnn_fastpath::replay {

// Where an answer was found or stored: its entry, and the entry's sequence then (even).
struct AnswerTicket {
  std::uint32_t entry = ~std::uint32_t{0};  // nowhere
  std::uint64_t sequence = 0;
};

// A thread's last query (its key's words, when it has at most Words) and where its answer was.
template <std::size_t Words>
struct RecentQuery {
  std::uint32_t length;  // of `words`; 0: none (no key is empty)
  AnswerTicket ticket;
  std::uint64_t words[Words];

  template <typename Key>
  bool is(const Key& key) const noexcept {
    if (key.length != length) return false;
    std::uint64_t differ = 0;  // two words a step, as CacheSets::same_key
    std::uint32_t i = 0;
    for (; i + 1 < length; i += 2) differ |= (key.words[i] ^ words[i]) | (key.words[i + 1] ^ words[i + 1]);
    if (i < length) differ |= key.words[i] ^ words[i];
    return differ == 0;
  }
  template <typename Key>
  void keep(const Key& key, const AnswerTicket& where) noexcept {
    static_assert(Key::kMaxWords >= Words, "a key's buffer holds Words words");
    length = 0;
    if (key.length > Words) return;
    // All Words words, whatever the key's length: a copy of a size known here is a few moves, not
    // a loop of a word a step (the words past the key's are never compared).
    std::memcpy(words, key.words, sizeof words);
    ticket = where;
    length = key.length;
  }
};

template <typename Key, std::size_t ValueWords, std::size_t Sets, std::size_t Ways>
class AnswerCache {
 public:
  struct Answer {
    std::uint32_t length = 0;
    std::uint64_t words[ValueWords];  // uninitialised on purpose: `length` of them are written
  };

  // Whether an answer is cached for `key` (complete): `take(words, length)` copies it out (from
  // atomics, relaxed), and may be called for an answer that turns out to be rewritten meanwhile
  // (then false is returned: what it copied is not the answer). `found`, when given, is told where.
  template <typename Take>
  bool find(const Key& key, Take&& take, AnswerTicket* found = nullptr) noexcept {
    const std::uint64_t hash = key.hash();
    const std::uint32_t tag = tag_of(hash);
    const std::size_t first = set_of(hash) * Ways;
    for (unsigned ways = Index::template ways_with<Ways>(&tags_[first], tag); ways != 0; ways &= ways - 1) {
      const std::size_t i = first + Index::first_way(ways);
      Entry& e = entries_[i];
      // Acquire: pairs with the writer's release, so the words read below are at least as new.
      const std::uint64_t before = e.sequence.load(std::memory_order_acquire);
      if (before & 1) continue;
      if (!matches(e, key)) continue;
      if (!take_answer(e, before, take)) return false;
      if (found != nullptr) *found = AnswerTicket{static_cast<std::uint32_t>(i), before};
      return true;
    }
    return false;
  }

  // The answer where `ticket` says, if its entry is unchanged since (then it is the answer to the
  // key the ticket was given for): take() as find()'s.
  template <typename Take>
  bool find_again(const AnswerTicket& ticket, Take&& take) noexcept {
    if (ticket.entry >= Sets * Ways) return false;
    Entry& e = entries_[ticket.entry];
    // Acquire: as in find().
    const std::uint64_t before = e.sequence.load(std::memory_order_acquire);
    return before == ticket.sequence && take_answer(e, before, take);
  }

  // What an insert did: `stored` unless every candidate was being written; `evicted` when it
  // replaced another answer, `evicted_used` when that one had been given at least once.
  struct Stored {
    bool stored = false, evicted = false, evicted_used = false;
    AnswerTicket where;  // when stored
  };

  Stored insert(const Key& key, const Answer& answer) noexcept {
    Stored result;
    if (answer.length > ValueWords || key.length > Key::kMaxWords) return result;
    const std::uint64_t hash = key.hash();
    const std::size_t set = set_of(hash);
    const std::size_t first = set * Ways;
    Entry* chosen = nullptr;
    std::uint64_t sequence = 0;
    for (unsigned free = Index::template ways_with<Ways>(&tags_[first], 0); free != 0 && chosen == nullptr;
         free &= free - 1)
      if (Entry& e = entries_[first + Index::first_way(free)]; claim(e, sequence)) chosen = &e;
    for (std::size_t step = 0; step < 2 * Ways && chosen == nullptr; ++step) {
      // Relaxed: the hand only spreads the choice.
      Entry& e = entries_[first + hands_[set].fetch_add(1, std::memory_order_relaxed) % Ways];
      if (e.recently_used.exchange(0, std::memory_order_relaxed)) continue;
      if (claim(e, sequence)) chosen = &e;
    }
    if (chosen == nullptr) return result;
    Entry& e = *chosen;
    result.stored = true;
    std::atomic<std::uint32_t>& tag = tags_[&e - entries_];
    result.evicted = tag.load(std::memory_order_relaxed) != 0;
    result.evicted_used = result.evicted && e.used.load(std::memory_order_relaxed);
    e.key_length.store(key.length, std::memory_order_relaxed);
    for (std::uint32_t k = 0; k < key.length; ++k) e.key[k].store(key.words[k], std::memory_order_relaxed);
    e.value_length.store(answer.length, std::memory_order_relaxed);
    for (std::uint32_t k = 0; k < answer.length; ++k) e.value[k].store(answer.words[k], std::memory_order_relaxed);
    e.used.store(0, std::memory_order_relaxed);
    e.recently_used.store(1, std::memory_order_relaxed);
    tag.store(tag_of(hash), std::memory_order_relaxed);
    // Release: a reader that sees the even sequence sees everything above.
    e.sequence.store(sequence + 2, std::memory_order_release);
    result.where = AnswerTicket{static_cast<std::uint32_t>(&e - entries_), sequence + 2};
    return result;
  }

  // Forgets every answer whose key `matches` (a predicate on the key's words: (words, length)).
  template <typename Match>
  void forget_if(Match&& matches) noexcept {
    for (std::size_t i = 0; i < Sets * Ways; ++i) {
      Entry& e = entries_[i];
      if (tags_[i].load(std::memory_order_relaxed) == 0) continue;
      std::uint64_t sequence = 0;
      if (!claim(e, sequence)) continue;  // being written: its writer owns it
      std::uint64_t words[Key::kMaxWords];
      const std::uint32_t length = e.key_length.load(std::memory_order_relaxed);
      for (std::uint32_t k = 0; k < length && k < Key::kMaxWords; ++k) words[k] = e.key[k].load(std::memory_order_relaxed);
      if (matches(static_cast<const std::uint64_t*>(words), length)) tags_[i].store(0, std::memory_order_relaxed);
      e.sequence.store(sequence + 2, std::memory_order_release);  // as in insert()
    }
  }

  // In a forked child: every answer stays valid (a heuristic's answer is the library's, not its
  // state's), so nothing is dropped; a claim a dead thread held would stay odd forever, and such an
  // entry is simply never used again.

 private:
  struct alignas(64) Entry {
    std::atomic<std::uint64_t> sequence{0};  // odd while written; never wraps (tickets rely on it)
    std::atomic<std::uint32_t> key_length{0};
    std::atomic<std::uint32_t> value_length{0};
    std::atomic<std::uint8_t> used{0}, recently_used{0};
    std::atomic<std::uint64_t> key[Key::kMaxWords]{};
    std::atomic<std::uint64_t> value[ValueWords]{};
  };

  using Index = CacheSets<Sets>;
  static std::size_t set_of(std::uint64_t hash) noexcept { return Index::set_of(hash); }
  static std::uint32_t tag_of(std::uint64_t hash) noexcept { return Index::tag_of(hash); }
  static bool matches(const Entry& e, const Key& k) noexcept { return Index::same_key(e.key_length, e.key, k); }

  // Copies the answer of `e`, whose sequence was `before` (even, and its key the caller's), out
  // through take(); false when the entry was rewritten meanwhile.
  template <typename Take>
  static bool take_answer(Entry& e, std::uint64_t before, Take& take) noexcept {
    const std::uint32_t length = e.value_length.load(std::memory_order_relaxed);
    if (length > ValueWords) return false;
    take(static_cast<const std::atomic<std::uint64_t>*>(e.value), length);
    // Acquire: the copies above come before the second look at the sequence.
    std::atomic_thread_fence(std::memory_order_acquire);
    if (e.sequence.load(std::memory_order_relaxed) != before) return false;
    // Relaxed: hints for the clock and the admission rule.
    if (!e.recently_used.load(std::memory_order_relaxed)) e.recently_used.store(1, std::memory_order_relaxed);
    if (!e.used.load(std::memory_order_relaxed)) e.used.store(1, std::memory_order_relaxed);
    return true;
  }

  // acq_rel: acquire orders this writer after the last one's release; release is the claim's.
  static bool claim(Entry& e, std::uint64_t& sequence) noexcept {
    sequence = e.sequence.load(std::memory_order_relaxed);
    return !(sequence & 1) && e.sequence.compare_exchange_strong(sequence, sequence + 1, std::memory_order_acq_rel,
                                                                 std::memory_order_relaxed);
  }

  Entry entries_[Sets * Ways]{};
  // Each entry's tag (0: free), apart from the entries (each of which is kilobytes), so that a
  // lookup reads the set's tags in one line and then only the entry whose tag matches.
  alignas(64) std::atomic<std::uint32_t> tags_[Sets * Ways]{};
  std::atomic<std::uint32_t> hands_[Sets]{};
};

}  // namespace cudnn_fastpath::replay
