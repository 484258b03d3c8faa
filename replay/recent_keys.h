// RecentKeys: the keys a thread met once lately, so that a key takes an entry of its family's graph
// cache only when it comes back (shim/engine/replay_engine.cpp): keys that never repeat (shapes
// that vary, fresh activations, a generation's growing tensors) then cost the cache no insert and
// evict nothing, and a key that does repeat is captured at its third run as before (its first was
// noted here, its second takes the entry).
//
// The last two keys noted in each of kSets sets (the hash's top 9 bits), as tags of its low 32 bits:
// a key noted for the first time passes for one met before about once in a billion, two keys that
// alternate are both remembered whatever set they fall in, and a key that comes back after n other
// new keys is still there about (1 + n/512) e^(-n/512) of the time (0.98 after 100, 0.74 after 512,
// about what the graph cache holds). A key pushed out unused is to admission what an entry evicted
// unused is (replay/admission.h): its waste, unless its shape's graph took its one call
// (relocated), as the cache does not count an evicted entry whose calls were relocated.
// Thread-local state: no atomics; 4 KiB, zeroed: nothing noted.
#pragma once

#include <cstdint>

namespace cudnn_fastpath::replay {

class RecentKeys {
 public:
  static constexpr unsigned kSets = 512;

  // Whether `hash` was noted and not taken since; if so it is taken (its way freed: the key goes to
  // the graph cache now).
  bool take(std::uint64_t hash) noexcept {
    Set& s = sets_[hash >> 55];
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
    Set& s = sets_[hash >> 55];
    // The older way goes, unless the newer is free (a key taken from it).
    const std::uint32_t pushed_out = s.tags[0] == 0 ? 0 : s.tags[1];
    if (s.tags[0] != 0) s.tags[1] = s.tags[0];
    s.tags[0] = tag_of(hash) | (relocated ? kRelocated : 0u);
    return pushed_out != 0 && !(pushed_out & kRelocated);
  }

 private:
  // A tag's low bit is always set (an empty way's is 0); the next says its call was relocated.
  static constexpr std::uint32_t kRelocated = 2;
  static std::uint32_t tag_of(std::uint64_t hash) noexcept { return (static_cast<std::uint32_t>(hash) & ~3u) | 1u; }

  struct Set {
    std::uint32_t tags[2];
  };
  Set sets_[kSets];
};

}  // namespace cudnn_fastpath::replay
