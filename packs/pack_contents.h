// What a cuDNN variant pack says: which tensor (unique id) lives at which device pointer, and the
// workspace. Two packs with equal contents finalize to the same thing, which is what lets one
// finalized pack stand for many.
#pragma once

#include <cstdint>
#include <cstring>

namespace cudnn_fastpath::packs {

struct PackContents {
  // PyTorch's convolutions use 3 to 5 tensors and its cuDNN attention up to about 20; a pack with
  // more is left to cuDNN unchanged.
  static constexpr int kMaxTensors = 32;

  std::int32_t uid_count = 0;      // elements of `uids`; 0 until set
  std::int32_t pointer_count = 0;  // elements of `pointers`; 0 until set (cuDNN wants them equal)
  bool has_workspace = false;
  // Initialised, so that a static array of holders is constant-initialised (zero) and needs no
  // constructor to run; hot paths never make one on the stack.
  std::int64_t uids[kMaxTensors]{};
  void* pointers[kMaxTensors]{};
  void* workspace = nullptr;

  void set_uids(const std::int64_t* values, std::int32_t count) noexcept {
    std::memcpy(uids, values, sizeof(std::int64_t) * static_cast<std::size_t>(count));
    uid_count = count;
  }
  void set_pointers(void* const* values, std::int32_t count) noexcept {
    std::memcpy(pointers, values, sizeof(void*) * static_cast<std::size_t>(count));
    pointer_count = count;
  }
  void set_workspace(void* value) noexcept {
    workspace = value;
    has_workspace = true;
  }
  // Both arrays set: what cuDNN needs before a finalize can succeed.
  bool complete() const noexcept { return uid_count > 0 && pointer_count > 0; }
  void clear() noexcept {
    uid_count = pointer_count = 0;
    has_workspace = false;
    workspace = nullptr;
  }

  // A 64-bit digest of everything above, and `library` (packs of two cuDNN copies never mix).
  std::uint64_t hash(std::uintptr_t library) const noexcept {
    std::uint64_t h = mix(0x6a09e667f3bcc908ull, library);
    h = mix(h, (static_cast<std::uint64_t>(static_cast<std::uint32_t>(uid_count)) << 32) |
                   static_cast<std::uint32_t>(pointer_count));
    for (std::int32_t i = 0; i < uid_count; ++i) h = mix(h, static_cast<std::uint64_t>(uids[i]));
    for (std::int32_t i = 0; i < pointer_count; ++i) h = mix(h, reinterpret_cast<std::uintptr_t>(pointers[i]));
    return mix(h, has_workspace ? reinterpret_cast<std::uintptr_t>(workspace) ^ 0x5bd1e995u : 0);
  }

 private:
  // One round of a multiply-xorshift mixer (the finalizer of MurmurHash3's 64-bit variant).
  static std::uint64_t mix(std::uint64_t h, std::uint64_t value) noexcept {
    h ^= value + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    return h;
  }
};

}  // namespace cudnn_fastpath::packs
