// The last step of every hash of the caches' keys (replay_key.h, packs/pack_contents.h): the
// finalizer of MurmurHash3's 64-bit variant, after which every input bit reaches every output bit.
#pragma once

#include <cstdint>

namespace cudnn_fastpath::replay {

inline std::uint64_t avalanche(std::uint64_t h) noexcept {
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ull;
  return h ^ (h >> 33);
}

}  // namespace cudnn_fastpath::replay
