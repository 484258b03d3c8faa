// replay/recent_keys.h on its own: a key noted is taken when it comes back (once), four keys noted in
// one set are all kept, a fifth pushes the oldest out, and only a key pushed out that no shape
// relocated is a waste; a new key does not pass for one noted.
#include "replay/recent_keys.h"

#include <catch2/catch.hpp>

#include <cstdint>

using cudnn_fastpath::replay::RecentKeys;

namespace {

// A hash in set `set` with low bits `low`.
std::uint64_t hash_in(std::uint64_t set, std::uint64_t low) { return set << 56 | low; }

}  // namespace

TEST_CASE("recent keys: a key noted is taken when it comes back, once", "[unit][relocation]") {
  static RecentKeys keys{};  // zeroed, as a thread's block is
  for (std::uint64_t i = 0; i < 100; ++i) {
    CHECK_FALSE(keys.take(hash_in(i, 0x1000 + i)));
    CHECK_FALSE(keys.note(hash_in(i, 0x1000 + i), false));  // a free way: nothing pushed out
  }
  for (std::uint64_t i = 0; i < 100; ++i) CHECK(keys.take(hash_in(i, 0x1000 + i)));
  for (std::uint64_t i = 0; i < 100; ++i) CHECK_FALSE(keys.take(hash_in(i, 0x1000 + i)));  // taken: gone
}

TEST_CASE("recent keys: four keys of one set are all kept, a fifth pushes out the oldest: a waste unless relocated",
          "[unit][relocation]") {
  static RecentKeys keys{};
  const std::uint64_t k[6] = {hash_in(7, 0xA0), hash_in(7, 0xB0), hash_in(7, 0xC0),
                              hash_in(7, 0xD0), hash_in(7, 0xE0), hash_in(7, 0xF0)};
  CHECK_FALSE(keys.note(k[0], false));
  CHECK_FALSE(keys.note(k[1], true));
  CHECK_FALSE(keys.note(k[2], false));
  CHECK_FALSE(keys.note(k[3], false));
  CHECK(keys.note(k[4], false));  // k[0] pushed out, never relocated: a waste
  CHECK_FALSE(keys.take(k[0]));
  CHECK_FALSE(keys.note(k[5], false));  // k[1] pushed out, but its call was relocated
  CHECK_FALSE(keys.take(k[1]));
  for (int i = 2; i < 6; ++i) CHECK(keys.take(k[i]));
}

TEST_CASE("recent keys: a way freed by a take is filled before an older key is pushed out", "[unit][relocation]") {
  static RecentKeys keys{};
  const std::uint64_t k[5] = {hash_in(9, 0xA0), hash_in(9, 0xB0), hash_in(9, 0xC0), hash_in(9, 0xD0),
                              hash_in(9, 0xE0)};
  for (int i = 0; i < 4; ++i) keys.note(k[i], false);
  CHECK(keys.take(k[2]));
  CHECK_FALSE(keys.note(k[4], false));  // k[2]'s way: the oldest, k[0], stays
  for (int i : {0, 1, 3, 4}) CHECK(keys.take(k[i]));
}

TEST_CASE("recent keys: 100,000 keys that never repeat never pass for noted ones", "[unit][relocation]") {
  static RecentKeys keys{};
  int passed = 0, wastes = 0;
  for (std::uint64_t i = 1; i <= 100000; ++i) {
    const std::uint64_t hash = i * 0x9e3779b97f4a7c15ull;
    passed += keys.take(hash);
    wastes += keys.note(hash, false);
  }
  CHECK(passed == 0);
  CHECK(wastes == 100000 - 1024);  // every note once its set's four ways are full
}
