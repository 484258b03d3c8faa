// SeenFilter: whether an address may ever have been put in a cache, for the forget rules. One bit
// per hash of each address that got an entry (4096 bits): a destroyed descriptor that never did,
// the common case, costs one load instead of a pass over the cache. Bits are never cleared, so it
// only ever answers "maybe" more often; false answers are exact.
#pragma once

#include <atomic>
#include <cstdint>

namespace cudnn_fastpath::replay {

class SeenFilter {
 public:
  // Relaxed, both: a bit set by an insert racing the destroy of that same address is a use after
  // free by the program; any other order is settled by the cache's own atomics.
  void note(const void* address) noexcept {
    const Bit b = bit_of(address);
    if (!(words_[b.word].load(std::memory_order_relaxed) & b.mask)) words_[b.word].fetch_or(b.mask, std::memory_order_relaxed);
  }
  bool maybe(const void* address) const noexcept {
    const Bit b = bit_of(address);
    return (words_[b.word].load(std::memory_order_relaxed) & b.mask) != 0;
  }

 private:
  static constexpr int kWords = 64;
  struct Bit {
    unsigned word;
    std::uint64_t mask;
  };
  static Bit bit_of(const void* address) noexcept {
    const std::uint64_t h = static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(address)) * 0x9e3779b97f4a7c15ull;
    return {static_cast<unsigned>(h >> 58), std::uint64_t{1} << ((h >> 52) & 63)};
  }
  std::atomic<std::uint64_t> words_[kWords]{};
};

}  // namespace cudnn_fastpath::replay
