// RecentKeys: whether a key came among a thread's last few hundred new keys, for a key its
// shape's graph can relocate (shim/engine/replay_engine.cpp): such a key takes an entry of the
// graph cache only when it comes back, so that keys that never repeat (fresh activations, a
// generation's growing tensors) cost the cache no insert and evict nothing.
//
// The last two new keys of each of kSets sets (the hash's top 9 bits), as 32-bit tags (its low 32
// bits): a key seen for the first time passes for one seen again about once in two billion, two
// keys that alternate are both remembered whatever set they fall in, and a key that comes back
// after n other new keys is still there about (1 + n/512) e^(-n/512) of the time (0.98 after 100,
// 0.74 after 512, about what the graph cache holds). Thread-local state: no atomics; 4 KiB.
#pragma once

#include <cstdint>

namespace cudnn_fastpath::replay {

class RecentKeys {
 public:
  static constexpr unsigned kSets = 512;

  // Whether `hash` is one of the last two new keys of its set; made the last if not.
  bool seen_again(std::uint64_t hash) noexcept {
    Set& s = sets_[hash >> 55];
    const std::uint32_t tag = static_cast<std::uint32_t>(hash) | 1;  // never 0, an empty way's
    if (s.tags[0] == tag || s.tags[1] == tag) return true;
    s.tags[1] = s.tags[0];
    s.tags[0] = tag;
    return false;
  }

 private:
  struct Set {
    std::uint32_t tags[2];
  };
  Set sets_[kSets];
};

}  // namespace cudnn_fastpath::replay
