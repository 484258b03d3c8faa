// RecentKeys: the keys a thread met once lately, so that a key takes an entry of its family's graph
// cache only when it comes back (shim/engine/replay_engine.cpp): keys that never repeat (shapes
// that vary, fresh activations, a generation's growing tensors) then cost the cache no insert and
// evict nothing, and a key that does repeat is captured at its third run as before (its first was
// noted here, its second takes the entry).
//
// The last four keys noted in each of kSets sets (the hash's top 8 bits), as tags of its low 32
// bits: a key noted for the first time passes for one met before about once in a billion, four keys
// that come in turn are all remembered whatever set they fall in, and a key that comes back after n
// other new keys is still there unless four of them fell in its set: 0.9993 of the time after 100,
// 0.86 after 512, 0.43 after 1,024 (two ways in 512 sets kept 0.98, 0.74 and 0.41: with a load's
// first iteration of 300 new keys, about 13 of them were pushed out before they came back, and
// counted as wastes, against 2 now). A key pushed out unused is to admission what an entry
// evicted unused is (replay/admission.h): its waste, unless its shape's graph took its one call
// (relocated), as the cache does not count an evicted entry whose calls were relocated.
// Thread-local state: no atomics; 4 KiB, zeroed: nothing noted.
#pragma once

#include <cstdint>

namespace cudnn_fastpath::replay {

class RecentKeys {
 public:
  static constexpr unsigned kSets = 256, kWays = 4;

  // Whether `hash` was noted and not taken since; if so it is taken (its way freed: the key goes to
  // the graph cache now).
  bool take(std::uint64_t hash) noexcept {
    Set& s = sets_[hash >> 56];
    const std::uint32_t tag = tag_of(hash);
    for (std::uint32_t& way : s.tags) {
      if ((way & ~kRelocated) == tag) {
        way = 0;
        return true;
      }
    }
    return false;
  }

  // Notes `hash` (not noted now: take() said so) as its set's newest. Returns whether that pushed
  // out a key met once that no shape relocated: the admission rule's waste.
  bool note(std::uint64_t hash, bool relocated) noexcept {
    Set& s = sets_[hash >> 56];
    // The ways are kept newest first: the newer ones move down over the first free way, or over
    // the oldest, which goes.
    unsigned last = kWays - 1;
    for (unsigned i = 0; i < kWays; ++i) {
      if (s.tags[i] == 0) {
        last = i;
        break;
      }
    }
    const std::uint32_t pushed_out = s.tags[last];
    for (unsigned i = last; i > 0; --i) s.tags[i] = s.tags[i - 1];
    s.tags[0] = tag_of(hash) | (relocated ? kRelocated : 0u);
    return pushed_out != 0 && !(pushed_out & kRelocated);
  }

 private:
  // A tag's low bit is always set (an empty way's is 0); the next says its call was relocated.
  static constexpr std::uint32_t kRelocated = 2;
  static std::uint32_t tag_of(std::uint64_t hash) noexcept { return (static_cast<std::uint32_t>(hash) & ~3u) | 1u; }

  struct Set {
    std::uint32_t tags[kWays];
  };
  Set sets_[kSets];
};

}  // namespace cudnn_fastpath::replay
