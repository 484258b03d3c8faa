// The stub's tensor maps (stub_tensor_map.h) and the driver's cuTensorMapReplaceAddress: the only
// way to move a map's address, since no 8-byte word of the map holds it.
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>

#include "tests/stub/stub_cuda.h"
#include "tests/stub/stub_tensor_map.h"

namespace {

std::uint64_t word(const CUtensorMap& map, int index) { return map.opaque[index]; }

}  // namespace

TEST_CASE("stub driver: a tensor map's address is in no word of it, and only cuTensorMapReplaceAddress moves it",
          "[driver]") {
  alignas(256) static unsigned char tensor[4096];
  const auto address = reinterpret_cast<std::uintptr_t>(tensor);
  CUtensorMap map;
  stubtma::encode(&map, address, 64, 32, 256);
  CHECK(stubtma::address(&map) == address);
  for (int i = 0; i < 16; ++i) {
    INFO("word " << i);
    CHECK(word(map, i) != address);
  }

  // Moved by 256 bytes: the words that change do not change by 256.
  CUtensorMap moved = map;
  REQUIRE(cuTensorMapReplaceAddress(&moved, tensor + 256) == CUDA_SUCCESS);
  CHECK(stubtma::address(&moved) == address + 256);
  int changed = 0;
  for (int i = 0; i < 16; ++i)
    if (word(moved, i) != word(map, i)) {
      ++changed;
      CHECK(word(moved, i) - word(map, i) != 256);
    }
  CHECK(changed >= 1);
  CHECK(std::memcmp(&moved.opaque[4], &map.opaque[4], 12 * 8) == 0);  // only the address's words

  // What a relocation by the tensor's move makes of the map: another address.
  CUtensorMap naive = map;
  for (int i = 0; i < 16; ++i)
    if (word(moved, i) != word(map, i)) naive.opaque[i] += 256;
  CHECK(stubtma::address(&naive) != address + 256);

  // What the driver refuses: an address off the 16-byte grid, a map off the 64-byte one, no map.
  CHECK(cuTensorMapReplaceAddress(&moved, tensor + 8) == CUDA_ERROR_INVALID_VALUE);
  CHECK(stubtma::address(&moved) == address + 256);
  alignas(64) unsigned char storage[192] = {};
  std::memcpy(storage + 32, &map, sizeof map);
  CHECK(cuTensorMapReplaceAddress(reinterpret_cast<CUtensorMap*>(storage + 32), tensor) == CUDA_ERROR_INVALID_VALUE);
  CUtensorMap blank;
  std::memset(&blank, 0, sizeof blank);
  CHECK(cuTensorMapReplaceAddress(&blank, tensor) == CUDA_ERROR_INVALID_VALUE);
  CHECK(cuTensorMapReplaceAddress(nullptr, tensor) == CUDA_ERROR_INVALID_VALUE);
}
