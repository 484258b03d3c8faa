// ReplayKey: every byte that decides the GPU's work of one library call, as 64-bit words.
//
// A replayable call writes into its key the function it is, the handle, the contents of each
// descriptor it takes (never a descriptor's address), every pointer and every number it passes,
// and the bytes at each host pointer it reads (a scaling factor): two calls with equal keys do the
// same work, and a graph captured from one replays the other. Whatever cannot be written (a
// descriptor the shim did not see set, a key longer than MaxWords) leaves the key incomplete, and
// the call runs directly. A key lives on the caller's stack and is written once, front to back;
// the words past `length` are never read.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace cudnn_fastpath::replay {

template <std::size_t MaxWords>
struct ReplayKey {
  static constexpr std::size_t kMaxWords = MaxWords;
  static_assert(MaxWords >= 1 && MaxWords <= 65535, "the length is kept in 16 bits");

  std::uint32_t length = 0;
  bool complete = true;
  std::uint64_t words[MaxWords];  // uninitialised on purpose: see above

  void add(std::uint64_t word) noexcept {
    if (__builtin_expect(length < MaxWords, 1)) words[length++] = word;
    else complete = false;
  }
  void add_pointer(const void* pointer) noexcept { add(reinterpret_cast<std::uintptr_t>(pointer)); }
  // `size` bytes, zero-padded to whole words (host scalars, records of descriptors).
  void add_bytes(const void* bytes, std::size_t size) noexcept {
    const auto* from = static_cast<const unsigned char*>(bytes);
    for (; size >= 8; size -= 8, from += 8) {
      std::uint64_t word;
      std::memcpy(&word, from, 8);
      add(word);
    }
    if (size != 0) {
      std::uint64_t word = 0;
      std::memcpy(&word, from, size);
      add(word);
    }
  }
  // A part of the key that could not be written: the call is not replayed.
  void refuse() noexcept { complete = false; }

  // A digest that picks a cache set and filters candidates (the words are compared in full). Each
  // word is rotated by its position and multiplied independently of the others, so the additions
  // pipeline; one final mix spreads the sum (packs/pack_contents.h does the same).
  std::uint64_t hash() const noexcept {
    std::uint64_t sum = static_cast<std::uint64_t>(length) * 0x9e3779b97f4a7c15ull;
    for (std::uint32_t i = 0; i < length; ++i) {
      const unsigned by = (i * 7) & 63;
      const std::uint64_t w = words[i];
      sum += (by ? (w << by) | (w >> (64 - by)) : w) * (0x165667b19e3779f9ull + 2 * i);
    }
    sum ^= sum >> 33;
    sum *= 0xff51afd7ed558ccdull;
    sum ^= sum >> 33;
    sum *= 0xc4ceb9fe1a85ec53ull;
    return sum ^ (sum >> 33);
  }
};

}  // namespace cudnn_fastpath::replay
