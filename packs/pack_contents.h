// What a cuDNN variant pack says: which tensor (unique id) lives at which device pointer, and the
// workspace. Two packs with equal contents finalize to the same thing, which is what lets one
// finalized pack stand for many.
#pragma once

#include <cstdint>

#include "replay/avalanche.h"

namespace cudnn_fastpath::packs {

struct PackContents {
  // PyTorch's convolutions use 3 to 5 tensors and its cuDNN attention up to about 20; a pack with
  // more is left to cuDNN unchanged. 28: the header below and 28 tensors are 464 bytes, so that a
  // proxy (48 bytes of its own before these, shim/variant_packs.cpp) is 512, and so is a cache entry.
  static constexpr int kMaxTensors = 28;

  // A tensor's unique id next to its pointer: a pack of a few tensors is one cache line, which
  // counts when the program's own work has pushed the shim's data out of the caches between ops.
  struct Tensor {
    std::int64_t uid;
    void* pointer;
  };

  std::int16_t uid_count = 0;      // tensors whose uid is set; 0 until set
  std::int16_t pointer_count = 0;  // tensors whose pointer is set (cuDNN wants the counts equal)
  bool has_workspace = false;
  void* workspace = nullptr;
  // Initialised, so that a static array of holders is constant-initialised (zero) and needs no
  // constructor to run; hot paths never make one on the stack.
  Tensor tensors[kMaxTensors]{};

  std::int64_t uid(std::int32_t i) const noexcept { return tensors[i].uid; }
  void* pointer(std::int32_t i) const noexcept { return tensors[i].pointer; }

  void set_uids(const std::int64_t* values, std::int32_t count) noexcept {
    for (std::int32_t i = 0; i < count; ++i) tensors[i].uid = values[i];
    uid_count = static_cast<std::int16_t>(count);
  }
  void set_pointers(void* const* values, std::int32_t count) noexcept {
    for (std::int32_t i = 0; i < count; ++i) tensors[i].pointer = values[i];
    pointer_count = static_cast<std::int16_t>(count);
  }
  // The two arrays as cuDNN takes them (for building a real pack).
  void copy_uids(std::int64_t* out) const noexcept {
    for (std::int32_t i = 0; i < uid_count; ++i) out[i] = tensors[i].uid;
  }
  void copy_pointers(void** out) const noexcept {
    for (std::int32_t i = 0; i < pointer_count; ++i) out[i] = tensors[i].pointer;
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

  // A 64-bit digest of the tensors and `library` (packs of two cuDNN copies never mix), not of the
  // workspace: the digest is complete as soon as both arrays are set, so that the cache can fetch
  // the set it names before the finalize (PyTorch sets the workspace last), and a program's
  // workspace rarely changes while its tensors do. It only chooses a cache set and filters
  // candidates (the contents, workspace included, are compared in full), so it is built for speed:
  // each element is rotated by its position and multiplied independently of the others (the
  // additions pipeline), and one final mix spreads the sum.
  std::uint64_t hash(std::uintptr_t library) const noexcept {
    std::uint64_t sum = library * 0x9e3779b97f4a7c15ull;
    sum += ((static_cast<std::uint64_t>(static_cast<std::uint32_t>(uid_count)) << 32) |
            static_cast<std::uint32_t>(pointer_count)) * 0xc2b2ae3d27d4eb4full;
    for (std::int32_t i = 0; i < uid_count; ++i)
      sum += rotate(static_cast<std::uint64_t>(tensors[i].uid), i) * 0x165667b19e3779f9ull;
    for (std::int32_t i = 0; i < pointer_count; ++i)
      sum += rotate(reinterpret_cast<std::uintptr_t>(tensors[i].pointer), i + 32) * 0x27d4eb2f165667c5ull;
    return replay::avalanche(sum);
  }

  // A digest of what a finalize can check, never a pointer's value: `library`, the counts, the
  // uids, which pointers are null, and whether a workspace is set and null. Contents of a form cuDNN
  // finalized once finalize again with other pointers (shim/pack_proxy/variant_packs.cpp). Never 0.
  std::uint64_t form(std::uintptr_t library) const noexcept {
    std::uint64_t nulls = workspace == nullptr ? 1 : 0;
    for (std::int32_t i = 0; i < pointer_count; ++i)
      nulls |= static_cast<std::uint64_t>(tensors[i].pointer == nullptr) << (i + 1);
    std::uint64_t sum = library * 0x9e3779b97f4a7c15ull;
    sum += ((static_cast<std::uint64_t>(static_cast<std::uint32_t>(uid_count)) << 32) |
            static_cast<std::uint32_t>(pointer_count) << 1 | has_workspace) * 0xc2b2ae3d27d4eb4full;
    sum += nulls * 0x27d4eb2f165667c5ull;
    for (std::int32_t i = 0; i < uid_count; ++i)
      sum += rotate(static_cast<std::uint64_t>(tensors[i].uid), i) * 0x165667b19e3779f9ull;
    return replay::avalanche(sum) | 1;
  }

 private:
  static std::uint64_t rotate(std::uint64_t value, int by) noexcept {
    by &= 63;
    return by ? (value << by) | (value >> (64 - by)) : value;
  }
};

}  // namespace cudnn_fastpath::packs
