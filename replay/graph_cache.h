// GraphCache: executable CUDA graphs of replayed library calls, keyed by a ReplayKey (the call's
// every byte: replay/replay_key.h), lock-free, fixed size.
//
// Sets x Ways entries; the key's hash picks a set. Each entry's state is one 64-bit word,
// {generation: 32, doomed: 1, references: 31}:
//   references 0       free
//   references kBusy   being (re)written by an insert: nobody may use it
//   references n >= 1  holds a key: 1 for the cache itself plus one per lease
// A lookup takes a lease by a CAS from the word it read to the same word plus one, as in
// packs/pack_cache.h: a lease is never taken on an entry being rewritten (the generation changes
// first), and an entry someone leases is never recycled. Forgetting an entry (its handle, plan or
// pack went away) sets `doomed` and drops the cache's own reference: no new lease is taken, and
// whoever drops the last reference gets the entry's graph to destroy and frees the entry. So a
// graph is never destroyed while a thread that leased it may still launch it, and no lock is
// taken anywhere (destroying an executable graph that is still running on the GPU is legal).
//
// What an entry holds besides its key: how many direct executes it has seen, its phase (counting,
// being captured, ready, never), the executable graph and the context it was captured in, how
// often it was launched since (an entry evicted before its launches repaid its capture is a waste
// to replay/admission.h), how often it was re-captured, and the host bytes the graph baked in that
// the key does not hold (a variant pack's by-value tensors: at most kByValueBytes, in at most
// kMaxByValue tensors of the pack). Those are written only by the thread that moved the
// phase to kCapturing (one at a time, by a CAS) and published by the release store of the next
// phase; readers acquire the phase first. Content fields are relaxed atomics, so that a reader of
// a stale entry reads defined values.
//
// Graphs, contexts and libraries are opaque here: the caller destroys what the cache hands back.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "replay/cache_sets.h"

namespace cudnn_fastpath::replay {

enum class Phase : std::uint8_t {
  kCounting,   // executed directly; counts its executes until it may be captured
  kCapturing,  // one thread is capturing it: every other execute goes direct
  kReady,      // `graph` replays it
  kNever,      // refused for good (failed capture, host pointers, by-value churn): direct
};

// A graph the cache let go of, for the caller to destroy with `library` (nobody leases it now);
// `launches`: how often it was launched again after its capture (up to 255); `entry`: an insert
// recycled an entry that held a key (its graph may be null: it was not captured yet).
struct Released {
  void* graph = nullptr;
  std::uintptr_t library = 0;
  std::uint8_t launches = 0;
  bool entry = false;
  void* extra = nullptr;  // what the caller kept with the graph (Entry::extra), for it to free
  bool relocated = false;  // its calls went to their shape's graph (Entry::relocated)
};

template <typename Key, std::size_t Sets, std::size_t Ways>
class GraphCache {
  static_assert(Ways >= 1 && Ways <= 64, "Ways must be 1 to 64");

 public:
  static constexpr std::size_t kEntries = Sets * Ways;
  static constexpr int kMaxByValue = 8;
  static constexpr int kByValueBytes = 64;

  // Where one by-value tensor's bytes are: its index in the pack, its offset in `bytes`, its size.
  struct ByValue {
    std::uint8_t tensor = 0;
    std::uint8_t offset = 0;
    std::uint8_t size = 0;
  };

  struct alignas(64) Entry {
    std::atomic<std::uint64_t> word{0};
    std::atomic<std::uint32_t> executes{0};  // direct executes seen while counting
    std::atomic<std::uint32_t> key_length{0};
    std::atomic<Phase> phase{Phase::kCounting};
    std::atomic<std::uint8_t> recaptures{0};
    std::atomic<std::uint8_t> recently_used{0};
    std::atomic<std::uint8_t> by_value_count{0};
    std::atomic<std::uint8_t> launches{0};  // launched again since its capture, up to 255
    // Its calls were launched as their shape's graph, pointed at their tensors (the shim's shape
    // cache): counted, never wasted. Relaxed, as `executes`.
    std::atomic<bool> relocated{false};
    std::atomic<void*> graph{nullptr};
    std::atomic<void*> context{nullptr};
    std::atomic<std::uintptr_t> library{0};  // what made `graph` (the caller destroys with it)
    std::atomic<void*> extra{nullptr};       // the caller's, kept and handed back with the graph
    std::atomic<std::uint32_t> by_value[kMaxByValue]{};  // ByValue packed: tensor | offset << 8 | size << 16
    std::atomic<std::uint64_t> bytes[kByValueBytes / 8]{};
    std::atomic<std::uint64_t> key[Key::kMaxWords]{};

    Phase current_phase() const noexcept {
      // Acquire: pairs with the release in publish(), so a ready entry's graph and bytes are seen.
      return phase.load(std::memory_order_acquire);
    }
    // From `from` to kCapturing, by one thread at a time. acq_rel: the winner sees the previous
    // capturer's writes; its own are published by publish().
    bool begin_capture(Phase from) noexcept {
      return phase.compare_exchange_strong(from, Phase::kCapturing, std::memory_order_acq_rel,
                                           std::memory_order_relaxed);
    }
    // Ends a capture (or any phase change by the capturing thread). Release: see current_phase().
    void publish(Phase next) noexcept { phase.store(next, std::memory_order_release); }
    // A launch of the graph again (for the admission rule). Relaxed: a count read when it is
    // evicted; two threads launching one key at once (which the libraries forbid on one handle)
    // may lose one.
    void note_launch() noexcept {
      const std::uint8_t n = launches.load(std::memory_order_relaxed);
      if (n != 255) launches.store(static_cast<std::uint8_t>(n + 1), std::memory_order_relaxed);
    }

    ByValue by_value_at(int i) const noexcept {
      const std::uint32_t v = by_value[i].load(std::memory_order_relaxed);
      return {static_cast<std::uint8_t>(v), static_cast<std::uint8_t>(v >> 8), static_cast<std::uint8_t>(v >> 16)};
    }
    void set_by_value(int i, ByValue b) noexcept {
      by_value[i].store(b.tensor | (std::uint32_t{b.offset} << 8) | (std::uint32_t{b.size} << 16),
                        std::memory_order_relaxed);
    }
    void store_bytes(const unsigned char (&from)[kByValueBytes]) noexcept {
      for (int i = 0; i < kByValueBytes / 8; ++i) {
        std::uint64_t v;
        std::memcpy(&v, from + 8 * i, 8);
        bytes[i].store(v, std::memory_order_relaxed);
      }
    }
    void load_bytes(unsigned char (&to)[kByValueBytes]) const noexcept {
      for (int i = 0; i < kByValueBytes / 8; ++i) {
        const std::uint64_t v = bytes[i].load(std::memory_order_relaxed);
        std::memcpy(to + 8 * i, &v, 8);
      }
    }
  };

  // An entry's key, as forget_if() shows it to its predicate.
  struct StoredKey {
    const Entry& e;
    std::uint32_t length() const noexcept { return e.key_length.load(std::memory_order_relaxed); }
    std::uint64_t operator[](std::uint32_t i) const noexcept { return e.key[i].load(std::memory_order_relaxed); }
  };

  // A reference to an entry. Empty: none.
  struct Lease {
    std::uint32_t entry_plus_one = 0;
    std::uint32_t generation = 0;
    explicit operator bool() const noexcept { return entry_plus_one != 0; }
  };

  Entry& entry(const Lease& lease) noexcept { return entries_[lease.entry_plus_one - 1]; }

  // A lease on the entry of `key` (whose hash is `hash`), if it has one. Inline, with try_lease():
  // the replay engine's every launch looks here, and out of line (GCC's choice, which moves with
  // the code around) the lookup pays its calls' register saves.
  [[gnu::always_inline]] Lease acquire(const Key& key, std::uint64_t hash) noexcept {
    const std::size_t first = set_of(hash) * Ways;
    // A filter only; the word decides.
    for (unsigned ways = Index::template ways_with<Ways>(&tags_[first], tag_of(hash)); ways != 0; ways &= ways - 1)
      if (Lease lease = try_lease(first + Index::first_way(ways), key)) return lease;
    return {};
  }

  // A lease on the entry of `key`, made if there is none (then `inserted`). Empty when every
  // entry of the key's set is leased or doomed. `evicted` receives the graph of an entry recycled
  // to make room, if it had one.
  Lease acquire_or_insert(const Key& key, bool& inserted, Released& evicted) noexcept {
    const std::uint64_t hash = key.hash();
    evicted = {};
    inserted = false;
    if (Lease lease = acquire(key, hash)) return lease;
    inserted = true;
    return insert(key, hash, evicted);
  }

  // A new entry for `key` (which has none: acquire() missed): a free entry, or one only the cache
  // holds (clock with a second chance), filled with `key`. Entries holding a graph are passed over,
  // their second chance kept, for two laps, while those without one (a key seen once or twice, a
  // capture's worth of nothing yet) go first: a graph used every few calls stays however many keys
  // that never come again pass through its set. Empty when every entry of its set is leased or doomed. `evicted` receives
  // the graph of an entry recycled to make room, if it had one.
  Lease insert(const Key& key, std::uint64_t hash, Released& evicted) noexcept {
    evicted = {};
    const std::size_t set = set_of(hash);
    const std::size_t first = set * Ways;
    for (std::size_t i = first; i < first + Ways; ++i) {
      std::uint64_t word = entries_[i].word.load(std::memory_order_relaxed);
      // Not a doomed one: its last holder is about to free it (free_entry() stores the word).
      if (references_of(word) == 0 && !(word & kDoomed) && claim(entries_[i], word)) return fill(i, hash, key);
    }
    for (std::size_t step = 0; step < 4 * Ways; ++step) {
      // Relaxed: the hand only spreads the choice.
      const std::size_t i = first + hands_[set].fetch_add(1, std::memory_order_relaxed) % Ways;
      Entry& e = entries_[i];
      std::uint64_t word = e.word.load(std::memory_order_relaxed);
      const std::uint32_t references = references_of(word);
      if ((references != 0 && references != 1) || (word & kDoomed)) continue;
      if (references == 1 && step < 2 * Ways && e.graph.load(std::memory_order_relaxed) != nullptr) continue;
      if (references == 1 && e.recently_used.exchange(0, std::memory_order_relaxed)) continue;
      if (!claim(e, word)) continue;
      // Claimed with acquire: nobody holds it, so its graph is ours to hand back.
      evicted = {e.graph.exchange(nullptr, std::memory_order_relaxed), e.library.load(std::memory_order_relaxed),
                 e.launches.load(std::memory_order_relaxed), references == 1,
                 e.extra.exchange(nullptr, std::memory_order_relaxed), e.relocated.load(std::memory_order_relaxed)};
      return fill(i, hash, key);
    }
    return {};
  }

  // Gives a lease back; `released` receives the graph if this was the last reference of a
  // forgotten entry.
  __attribute__((hot)) void release(const Lease& lease, Released& released) noexcept {
    released = {};
    if (!lease) return;
    Entry& e = entry(lease);
    std::uint64_t word = e.word.load(std::memory_order_relaxed);
    for (;;) {
      if (generation_of(word) != lease.generation || references_of(word) == 0 || references_of(word) == kBusy)
        return;  // a lease from before a fork's forget_in_child()
      // acq_rel: release orders this holder's uses before a freer's; acquire lets the thread that
      // frees the entry see every other holder's.
      if (e.word.compare_exchange_weak(word, word - 1, std::memory_order_acq_rel, std::memory_order_relaxed)) break;
    }
    if (references_of(word - 1) == 0) released = free_entry(e, word - 1);
  }

  // Forgets every entry whose key `matches` (a predicate on StoredKey); `destroy(Released)` is
  // called for each graph no lease holds any more (the others go to their last holder).
  template <typename Match, typename Destroy>
  std::size_t forget_if(Match&& matches, Destroy&& destroy) noexcept {
    std::size_t forgotten = 0;
    for (std::size_t i = 0; i < kEntries; ++i) {
      Entry& e = entries_[i];
      std::uint64_t word = e.word.load(std::memory_order_acquire);
      for (;;) {
        const std::uint32_t references = references_of(word);
        if (references == 0 || references == kBusy || (word & kDoomed) != 0) break;
        if (!matches(StoredKey{e})) break;
        // Doomed, and the cache's own reference dropped. acq_rel: as in release().
        const std::uint64_t next = (word | kDoomed) - 1;
        if (!e.word.compare_exchange_weak(word, next, std::memory_order_acq_rel, std::memory_order_acquire)) continue;
        ++forgotten;
        if (references_of(next) == 0) {
          const Released r = free_entry(e, next);
          if (r.graph) destroy(r);
        }
        break;
      }
    }
    return forgotten;
  }

  // In a forked child, where only the forking thread exists: every entry becomes free. The graphs
  // and what the caller kept with them are not destroyed (they are the parent's CUDA state) and old
  // leases are ignored.
  void forget_in_child() noexcept {
    for (std::size_t i = 0; i < kEntries; ++i) {
      const std::uint64_t word = entries_[i].word.load(std::memory_order_relaxed);
      if (word == 0) continue;  // never used: leave its page untouched
      entries_[i].graph.store(nullptr, std::memory_order_relaxed);
      entries_[i].extra.store(nullptr, std::memory_order_relaxed);
      entries_[i].word.store(static_cast<std::uint64_t>(generation_of(word) + 1) << 32, std::memory_order_relaxed);
      tags_[i].store(0, std::memory_order_relaxed);
    }
  }

  // Entries holding a graph (for tests and statistics).
  std::size_t graphs() const noexcept {
    std::size_t n = 0;
    for (const Entry& e : entries_) {
      const std::uint32_t references = references_of(e.word.load(std::memory_order_acquire));
      n += references != 0 && references != kBusy && e.graph.load(std::memory_order_relaxed) != nullptr;
    }
    return n;
  }

 private:
  static constexpr std::uint32_t kBusy = 0x7fffffffu;
  static constexpr std::uint64_t kDoomed = std::uint64_t{1} << 31;

  static std::uint32_t references_of(std::uint64_t word) noexcept { return static_cast<std::uint32_t>(word) & kBusy; }
  static std::uint32_t generation_of(std::uint64_t word) noexcept { return static_cast<std::uint32_t>(word >> 32); }
  using Index = CacheSets<Sets>;
  static std::size_t set_of(std::uint64_t hash) noexcept { return Index::set_of(hash); }
  static std::uint32_t tag_of(std::uint64_t hash) noexcept { return Index::tag_of(hash); }
  static bool matches(const Entry& e, const Key& k) noexcept { return Index::same_key(e.key_length, e.key, k); }

  [[gnu::always_inline]] Lease try_lease(std::size_t i, const Key& key) noexcept {
    Entry& e = entries_[i];
    // Acquire: pairs with the release that published the entry, so its key is read after.
    std::uint64_t word = e.word.load(std::memory_order_acquire);
    for (int attempt = 0; attempt < 4; ++attempt) {
      const std::uint32_t references = references_of(word);
      if (references == 0 || references == kBusy || (word & kDoomed) || !matches(e, key)) return {};
      // acq_rel: the lease is taken on exactly the generation whose key was compared.
      if (e.word.compare_exchange_weak(word, word + 1, std::memory_order_acq_rel, std::memory_order_acquire)) {
        if (!e.recently_used.load(std::memory_order_relaxed)) e.recently_used.store(1, std::memory_order_relaxed);
        return {static_cast<std::uint32_t>(i + 1), generation_of(word)};
      }
    }
    return {};
  }

  // acq_rel: acquire orders the rewrite after the previous holders' releases.
  static bool claim(Entry& e, std::uint64_t word) noexcept {
    const std::uint64_t busy = (static_cast<std::uint64_t>(generation_of(word) + 1) << 32) | kBusy;
    return e.word.compare_exchange_strong(word, busy, std::memory_order_acq_rel, std::memory_order_relaxed);
  }

  Lease fill(std::size_t i, std::uint64_t hash, const Key& key) noexcept {
    Entry& e = entries_[i];
    e.key_length.store(key.length, std::memory_order_relaxed);
    for (std::uint32_t k = 0; k < key.length; ++k) e.key[k].store(key.words[k], std::memory_order_relaxed);
    e.launches.store(0, std::memory_order_relaxed);
    e.executes.store(0, std::memory_order_relaxed);
    e.phase.store(Phase::kCounting, std::memory_order_relaxed);
    e.recaptures.store(0, std::memory_order_relaxed);
    e.relocated.store(false, std::memory_order_relaxed);
    e.by_value_count.store(0, std::memory_order_relaxed);
    e.graph.store(nullptr, std::memory_order_relaxed);
    e.extra.store(nullptr, std::memory_order_relaxed);
    e.context.store(nullptr, std::memory_order_relaxed);
    e.recently_used.store(1, std::memory_order_relaxed);
    tags_[i].store(tag_of(hash), std::memory_order_relaxed);
    const std::uint32_t generation = generation_of(e.word.load(std::memory_order_relaxed));
    // Release: the key above is visible to whoever acquires the word. References: the cache and
    // the caller's lease.
    e.word.store((static_cast<std::uint64_t>(generation) << 32) | 2, std::memory_order_release);
    return {static_cast<std::uint32_t>(i + 1), generation};
  }

  // The entry (whose last reference was just dropped, so nobody else can reach it) becomes free;
  // its graph goes to the caller.
  Released free_entry(Entry& e, std::uint64_t word) noexcept {
    const Released r{e.graph.exchange(nullptr, std::memory_order_relaxed), e.library.load(std::memory_order_relaxed),
                     e.launches.load(std::memory_order_relaxed), false, e.extra.exchange(nullptr, std::memory_order_relaxed),
                     e.relocated.load(std::memory_order_relaxed)};
    tags_[&e - entries_].store(0, std::memory_order_relaxed);
    // Release: the graph taken above happens before a later claim of this entry.
    e.word.store(static_cast<std::uint64_t>(generation_of(word) + 1) << 32, std::memory_order_release);
    return r;
  }

  alignas(64) std::atomic<std::uint32_t> tags_[kEntries]{};
  std::atomic<std::uint32_t> hands_[Sets]{};
  Entry entries_[kEntries]{};
};

}  // namespace cudnn_fastpath::replay
