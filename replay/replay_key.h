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

#include "replay/avalanche.h"

namespace cudnn_fastpath::replay {

template <std::size_t MaxWords>
struct ReplayKey {
  static constexpr std::size_t kMaxWords = MaxWords;
  static constexpr int kMaxTensors = 16;
  static_assert(MaxWords >= 1 && MaxWords <= 65535, "the length is kept in 16 bits");

  std::uint32_t length = 0;
  bool complete = true;
  // Which words are the addresses of the call's tensors (its data, not its descriptors or scaling
  // factors), in the order it names them: what relocation may follow (graph_relocation.h). Past
  // kMaxTensors, a tensor is a plain word.
  std::uint8_t tensor_count = 0;
  std::uint16_t tensor_at[kMaxTensors];
  std::uint64_t words[MaxWords];  // uninitialised on purpose: see above

  void add(std::uint64_t word) noexcept {
    if (__builtin_expect(length < MaxWords, 1)) words[length++] = word;
    else complete = false;
  }
  void add_pointer(const void* pointer) noexcept { add(reinterpret_cast<std::uintptr_t>(pointer)); }
  void add_tensor(const void* pointer) noexcept {
    if (tensor_count < kMaxTensors && length < MaxWords) tensor_at[tensor_count++] = static_cast<std::uint16_t>(length);
    add_pointer(pointer);
  }
  // Word `at`, already written, is a tensor's address (past kMaxTensors, a plain word).
  void mark_tensor(std::uint32_t at) noexcept {
    if (tensor_count < kMaxTensors) tensor_at[tensor_count++] = static_cast<std::uint16_t>(at);
  }
  // N tensors at once, in order, with one look at the room left (a matmul's A, B, C, D and
  // workspace); past kMaxTensors, one by one.
  template <std::size_t N>
  void add_tensors(const void* const (&pointers)[N]) noexcept {
    if (__builtin_expect(tensor_count + N > kMaxTensors, 0)) {
      for (const void* pointer : pointers) add_tensor(pointer);
      return;
    }
    const std::uint32_t first = length;
    std::uint64_t* const at = extend(static_cast<std::uint32_t>(N));
    if (at == nullptr) return;
    for (std::size_t i = 0; i < N; ++i) {
      tensor_at[tensor_count + i] = static_cast<std::uint16_t>(first + i);
      at[i] = reinterpret_cast<std::uintptr_t>(pointers[i]);
    }
    tensor_count = static_cast<std::uint8_t>(tensor_count + N);
  }
  // `size` bytes, zero-padded to whole words (host scalars, records of descriptors).
  // One look at the room left, then one copy (an algorithm's 64 bytes: four vector moves).
  void add_bytes(const void* bytes, std::size_t size) noexcept {
    if (__builtin_expect(size > 8 * MaxWords, 0)) return refuse();
    const std::size_t whole = size / 8, tail = size % 8;
    std::uint64_t* const at = extend(static_cast<std::uint32_t>(whole + (tail != 0)));
    if (at == nullptr) return;
    if (whole != 0) std::memcpy(at, bytes, 8 * whole);  // (no bytes may come with a null pointer)
    if (tail != 0) {
      std::uint64_t word = 0;
      std::memcpy(&word, static_cast<const unsigned char*>(bytes) + 8 * whole, tail);
      at[whole] = word;
    }
  }
  // `count` more words, for the caller to fill (a record copied straight in); null, and the key
  // incomplete, when they do not fit.
  std::uint64_t* extend(std::uint32_t count) noexcept {
    if (__builtin_expect(count > MaxWords - length, 0)) {
      complete = false;
      return nullptr;
    }
    std::uint64_t* at = words + length;
    length += count;
    return at;
  }
  // A part of the key that could not be written: the call is not replayed.
  void refuse() noexcept { complete = false; }

  // The 128-bit product of a and b, its halves xor-ed. On x86-64 one MUL: GCC 12 keeps an
  // unsigned __int128 product in a stack slot once hash() is inlined into a large function (the
  // replay engine's), five instructions more a pair.
  static std::uint64_t folded_product(std::uint64_t a, std::uint64_t b) noexcept {
#if defined(__x86_64__)
    std::uint64_t high;
    __asm__("mulq %2" : "+a"(a), "=d"(high) : "r"(b) : "cc");
    return a ^ high;
#else
    __extension__ using Wide = unsigned __int128;
    const Wide product = static_cast<Wide>(a) * b;
    return static_cast<std::uint64_t>(product) ^ static_cast<std::uint64_t>(product >> 64);
#endif
  }

  // A digest that picks a cache set and filters candidates (the words are compared in full). Two
  // words at a time, each offset by a constant of its position, multiplied into 128 bits whose
  // halves are folded into the sum (NH's construction): one multiplication per two words, the pairs
  // independent of each other, so they pipeline; one final mix spreads the sum.
  std::uint64_t hash() const noexcept {
    std::uint64_t sum = static_cast<std::uint64_t>(length) * 0x9e3779b97f4a7c15ull;
    std::uint64_t k0 = 0x165667b19e3779f9ull, k1 = 0x27d4eb2f165667c5ull;
    std::uint32_t i = 0;
    for (; i + 1 < length; i += 2) {
      sum += folded_product(words[i] + k0, words[i + 1] + k1);
      k0 += 0x9e3779b97f4a7c16ull, k1 += 0xc2b2ae3d27d4eb50ull;
    }
    if (i < length) sum += folded_product(words[i] + k0, k1);
    return avalanche(sum);
  }
};

// A hash of part of what a call's key will hold (its pointers, say), for the admission rule's
// sampled keys (admission.h), made before the key is written: a declined call writes none. The same
// part of the same key always hashes the same, so a sampled key is sampled whenever it comes.
class SampleHash {
 public:
  // Each word rotated by its place (7 bits more a word: 64 places before one comes back) and folded
  // in by xor: two instructions a word, none waiting on the last. value() mixes them less than a
  // key's hash does, enough for its use: the rule reads six of the top bits and eight from bit 32
  // (admission.h), and a xor-shift then a multiplication make each of those depend on every bit of
  // the sum.
  [[gnu::always_inline]] void add(std::uint64_t word) noexcept {
    sum_ ^= word << (place_ & 63) | word >> ((64 - place_) & 63);
    place_ += 7;
  }
  std::uint64_t value() const noexcept {
    const std::uint64_t folded = sum_ ^ place_;
    return (folded ^ folded >> 32) * 0x9e3779b97f4a7c15ull;
  }

 private:
  std::uint64_t sum_ = 0;
  std::uint32_t place_ = 0;
};

}  // namespace cudnn_fastpath::replay
