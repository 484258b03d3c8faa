// replay/recent_keys.h on its own: a key noted is taken when it comes back (once), two keys noted in
// one set are both kept, a third pushes the older out, and only a key pushed out that no shape
// relocated is a waste; a new key does not pass for one noted.
#include "replay/recent_keys.h"

#include <catch2/catch.hpp>

#include <cstdint>

using cudnn_fastpath::replay::RecentKeys;

namespace {

// A hash in set `set` with low bits `low`.
std::uint64_t hash_in(std::uint64_t set, std::uint64_t low) { return set << 55 | low; }

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

TEST_CASE("recent keys: two keys of one set are both kept, a third pushes out the older: a waste unless relocated",
          "[unit][relocation]") {
  static RecentKeys keys{};
  const std::uint64_t a = hash_in(7, 0xA0), b = hash_in(7, 0xB0), c = hash_in(7, 0xC0), d = hash_in(7, 0xD0);
  CHECK_FALSE(keys.note(a, false));
  CHECK_FALSE(keys.note(b, true));
  CHECK(keys.note(c, false));  // a pushed out, never relocated: a waste
  CHECK_FALSE(keys.take(a));
  CHECK_FALSE(keys.note(d, false));  // b pushed out, but its call was relocated
  CHECK_FALSE(keys.take(b));
  CHECK(keys.take(c));
  CHECK(keys.take(d));
}

TEST_CASE("recent keys: a way freed by a take is filled before an older key is pushed out", "[unit][relocation]") {
  static RecentKeys keys{};
  const std::uint64_t a = hash_in(9, 0xA0), b = hash_in(9, 0xB0), c = hash_in(9, 0xC0);
  keys.note(a, false);
  keys.note(b, false);
  CHECK(keys.take(b));
  CHECK_FALSE(keys.note(c, false));  // b's way: a stays
  CHECK(keys.take(a));
  CHECK(keys.take(c));
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
  CHECK(wastes == 100000 - 1024);  // every note once its set's two ways are full
}
