// replay/recent_keys.h on its own: a key is seen again when it comes back, two keys of one set that
// alternate are both seen again, a new key does not pass for a seen one, and a key is forgotten
// once two newer keys of its set came.
#include "replay/recent_keys.h"

#include <catch2/catch.hpp>

#include <cstdint>

using cudnn_fastpath::replay::RecentKeys;

namespace {

// A hash in set `set` with low bits `low`.
std::uint64_t hash_in(std::uint64_t set, std::uint64_t low) { return set << 55 | low; }

}  // namespace

TEST_CASE("recent keys: a key that comes back is seen again, a new one is not", "[unit][relocation]") {
  static RecentKeys keys{};  // zeroed, as a thread's block is
  for (std::uint64_t i = 0; i < 100; ++i) CHECK_FALSE(keys.seen_again(hash_in(i, 0x1000 + i)));
  for (std::uint64_t i = 0; i < 100; ++i) CHECK(keys.seen_again(hash_in(i, 0x1000 + i)));
}

TEST_CASE("recent keys: two keys of one set in turn are both seen again, and a third forgets the older", "[unit][relocation]") {
  static RecentKeys keys{};
  const std::uint64_t a = hash_in(7, 0xA0), b = hash_in(7, 0xB0), c = hash_in(7, 0xC0);
  CHECK_FALSE(keys.seen_again(a));
  CHECK_FALSE(keys.seen_again(b));
  for (int i = 0; i < 10; ++i) {
    CHECK(keys.seen_again(a));
    CHECK(keys.seen_again(b));
  }
  CHECK_FALSE(keys.seen_again(c));  // b and c now: a was the older
  CHECK(keys.seen_again(b));
  CHECK_FALSE(keys.seen_again(a));
}

TEST_CASE("recent keys: 100,000 keys that never repeat never pass for seen ones", "[unit][relocation]") {
  static RecentKeys keys{};
  int passed = 0;
  for (std::uint64_t i = 1; i <= 100000; ++i) passed += keys.seen_again(i * 0x9e3779b97f4a7c15ull);
  CHECK(passed == 0);
}
