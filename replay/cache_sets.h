// How the caches keyed by a ReplayKey (graph_cache.h, answer_cache.h) find a key: the hash's bits
// 40 and up pick one of Sets sets, its low 32 bits (never 0, which marks a free entry) filter the
// set's entries, and a candidate's stored words are compared with the key's in full.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

// A set's tags are compared with SSE2 on x86-64, one at a time elsewhere and under TSan (which would
// take the vector load of atomics that other threads store for a race), as the registry's are.
#if defined(__SSE2__) && !defined(__SANITIZE_THREAD__)
#define CUDNN_FASTPATH_CACHE_SETS_SSE2 1
#include <emmintrin.h>
#endif

namespace cudnn_fastpath::replay {

template <std::size_t Sets>
struct CacheSets {
  static_assert(Sets >= 1 && (Sets & (Sets - 1)) == 0, "Sets must be a power of two");

  static std::size_t set_of(std::uint64_t hash) noexcept { return static_cast<std::size_t>(hash >> 40) & (Sets - 1); }
  static std::uint32_t tag_of(std::uint64_t hash) noexcept { return static_cast<std::uint32_t>(hash) | 1u; }

  // The ways of a set whose tag is `tag` (0: the free ones), bit w for way w, from `tags`, the set's
  // Ways tags (a cache keeps them apart from its entries, a set's in one line, 16-byte aligned), all
  // compared at once: a lookup then reads one line and no loop runs past the ways that do not
  // match. Each tag is read as a relaxed load would be (an aligned SSE2 load reads each aligned
  // 32-bit tag whole): a tag is only a filter, which the entry's own check confirms.
  template <std::size_t Ways>
  static unsigned ways_with(const std::atomic<std::uint32_t>* tags, std::uint32_t tag) noexcept {
    static_assert(sizeof(std::atomic<std::uint32_t>) == 4, "a set's tags are plain 32-bit words");
#ifdef CUDNN_FASTPATH_CACHE_SETS_SSE2
    if constexpr (Ways % 4 == 0 && Ways <= 32) {
      const __m128i want = _mm_set1_epi32(static_cast<int>(tag));
      unsigned ways = 0;
      for (std::size_t quarter = 0; quarter < Ways / 4; ++quarter) {
        const __m128i four = _mm_load_si128(reinterpret_cast<const __m128i*>(tags) + quarter);
        ways |= static_cast<unsigned>(_mm_movemask_ps(_mm_castsi128_ps(_mm_cmpeq_epi32(four, want)))) << 4 * quarter;
      }
      return ways;
    }
#endif
    unsigned ways = 0;
    for (std::size_t w = 0; w < Ways; ++w)
      // Relaxed: as above.
      ways |= unsigned{tags[w].load(std::memory_order_relaxed) == tag} << w;
    return ways;
  }
  // The way of the lowest bit of `ways` (not 0), as ways_with() gives them.
  static std::size_t first_way(unsigned ways) noexcept { return static_cast<std::size_t>(__builtin_ctz(ways)); }

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

#undef CUDNN_FASTPATH_CACHE_SETS_SSE2
