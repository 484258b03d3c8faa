// How the caches keyed by a ReplayKey (graph_cache.h, answer_cache.h) find a key: the hash's bits
// 40 and up pick one of Sets sets, its low 32 bits (never 0, which marks a free entry) filter the
// set's entries, and a candidate's stored words are compared with the key's in full.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace cudnn_fastpath::replay {

template <std::size_t Sets>
struct CacheSets {
  static_assert(Sets >= 1 && (Sets & (Sets - 1)) == 0, "Sets must be a power of two");

  static std::size_t set_of(std::uint64_t hash) noexcept { return static_cast<std::size_t>(hash >> 40) & (Sets - 1); }
  static std::uint32_t tag_of(std::uint64_t hash) noexcept { return static_cast<std::uint32_t>(hash) | 1u; }

  // Whether an entry's stored key (its length and words, relaxed: the caller's protocol orders
  // them) is `key`. The differences are or-ed, two words a step, not tested word by word: a
  // candidate that passed the tag is the key nearly always, and the loop needs no early exit.
  template <typename Key>
  static bool same_key(const std::atomic<std::uint32_t>& length, const std::atomic<std::uint64_t>* words,
                       const Key& key) noexcept {
    const std::uint32_t n = key.length;
    if (length.load(std::memory_order_relaxed) != n) return false;
    std::uint64_t differ = 0;
    std::uint32_t i = 0;
    for (; i + 1 < n; i += 2)
      differ |= (words[i].load(std::memory_order_relaxed) ^ key.words[i]) |
                (words[i + 1].load(std::memory_order_relaxed) ^ key.words[i + 1]);
    if (i < n) differ |= words[i].load(std::memory_order_relaxed) ^ key.words[i];
    return differ == 0;
  }
};

}  // namespace cudnn_fastpath::replay
