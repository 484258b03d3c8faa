// The stub's encoding of a TMA tensor map (CUtensorMap: 128 opaque bytes), shared by the stub
// libraries, which encode one for a kernel argument and decode it when the kernel runs (the
// "hardware"), and the stub driver's cuTensorMapReplaceAddress.
//
// Adversarial on purpose: the global address is stored as address >> 4 in two 32-bit fields that
// belong to different 8-byte words (the upper half of word 1 and the lower half of word 3), with
// the tensor's dimensions around them, so that no 8-byte word of the map moves by a tensor's move:
// relocating a map's words by a delta gives another address (and other dimensions), and only
// cuTensorMapReplaceAddress rewrites the address. As the driver requires, the address is 16-byte
// aligned.
#pragma once

#include <cstdint>
#include <cstring>

namespace stubtma {

constexpr std::uint32_t kMagic = 0x50414d54;  // "TMAP"
constexpr int kBytes = 128;

// The 32-bit fields of the map (32 of them).
enum Field : int {
  kMagicField = 0,
  kRankAndType = 1,  // rank in bits 0-7, data type in bits 8-15
  kDim0 = 2,         // word 1, lower half
  kAddressLow = 3,   // word 1, upper half: bits 4-35 of the address
  kDim1 = 4,         // word 2
  kStride1 = 5,
  kAddressHigh = 6,  // word 3, lower half: bits 36-63 of the address
  kBox = 7,          // word 3, upper half: the box's two sizes, 16 bits each
};

inline std::uint32_t field(const void* map, int index) {
  std::uint32_t value;
  std::memcpy(&value, static_cast<const unsigned char*>(map) + 4 * index, sizeof value);
  return value;
}

inline void set_field(void* map, int index, std::uint32_t value) {
  std::memcpy(static_cast<unsigned char*>(map) + 4 * index, &value, sizeof value);
}

inline bool is_map(const void* map) { return field(map, kMagicField) == kMagic; }

inline void set_address(void* map, std::uintptr_t address) {
  const std::uint64_t shifted = static_cast<std::uint64_t>(address) >> 4;
  set_field(map, kAddressLow, static_cast<std::uint32_t>(shifted));
  set_field(map, kAddressHigh, static_cast<std::uint32_t>(shifted >> 32));
}

inline std::uintptr_t address(const void* map) {
  const std::uint64_t shifted =
      static_cast<std::uint64_t>(field(map, kAddressLow)) | static_cast<std::uint64_t>(field(map, kAddressHigh)) << 32;
  return static_cast<std::uintptr_t>(shifted << 4);
}

// A 2-D map of `address` (16-byte aligned), dim0 x dim1 elements, rows `stride1` bytes apart.
inline void encode(void* map, std::uintptr_t address, std::uint32_t dim0, std::uint32_t dim1, std::uint32_t stride1) {
  std::memset(map, 0, kBytes);
  set_field(map, kMagicField, kMagic);
  set_field(map, kRankAndType, 2u | 7u << 8);  // rank 2, CU_TENSOR_MAP_DATA_TYPE_FLOAT32
  set_field(map, kDim0, dim0);
  set_field(map, kDim1, dim1);
  set_field(map, kStride1, stride1);
  set_field(map, kBox, 16u | 16u << 16);
  set_address(map, address);
}

}  // namespace stubtma
