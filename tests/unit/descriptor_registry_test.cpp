// replay/descriptor_registry.h on its own: a record's life (create, edit, read, forget), what is
// unknown, a full bucket, what a lookup of an absent address reads after many forgets, and readers
// racing a writer and a way's reuse by another address (run under TSan by scripts/test).
#include "replay/descriptor_registry.h"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <random>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

using cudnn_fastpath::replay::DescriptorRegistry;
using cudnn_fastpath::replay::SlotWords;

namespace {

using Registry = DescriptorRegistry<64, 8>;
constexpr std::uint32_t kKind = 3, kOtherKind = 4;

// The record of `address` as a reader copies it: its words, or empty when the read failed.
template <typename AnyRegistry>
std::vector<std::uint64_t> read(const AnyRegistry& r, const void* address, std::uint32_t kind = kKind) {
  std::vector<std::uint64_t> words;
  const bool ok = r.read(address, kind, [&](const std::atomic<std::uint64_t>* from, std::uint32_t length) {
    for (std::uint32_t i = 0; i < length; ++i) words.push_back(from[i].load(std::memory_order_relaxed));
  });
  if (!ok) words.clear();
  return words;
}

std::uint32_t fill(SlotWords w, std::initializer_list<std::uint64_t> values) {
  std::uint32_t n = 0;
  for (std::uint64_t v : values) w[n++].store(v, std::memory_order_relaxed);
  return n;
}

}  // namespace

TEST_CASE("a record is read back at its length, edited in place, and gone once forgotten", "[unit][registry]") {
  static Registry r;
  int descriptor;
  REQUIRE(r.created(&descriptor, kKind, [](SlotWords w) { return fill(w, {1, 2, 3}); }));
  CHECK(read(r, &descriptor) == std::vector<std::uint64_t>{1, 2, 3});
  CHECK(read(r, &descriptor, kOtherKind).empty());  // held as another kind: not this one's record

  // An edit sees the words and the length, and sets both.
  REQUIRE(r.write(&descriptor, kKind, [](SlotWords w, std::uint32_t length) {
    CHECK(length == 3);
    CHECK(w[1].load() == 2);
    w[1].store(20, std::memory_order_relaxed);
    return length - 1;
  }));
  CHECK(read(r, &descriptor) == std::vector<std::uint64_t>{1, 20});
  CHECK_FALSE(r.write(&descriptor, kOtherKind, [](SlotWords, std::uint32_t) { return 1u; }));

  r.unknown(&descriptor);  // a set the library refused
  CHECK(read(r, &descriptor).empty());
  CHECK(r.write(&descriptor, kKind, [](SlotWords w, std::uint32_t length) {
    CHECK(length == 0);
    return fill(w, {7});
  }));
  CHECK(read(r, &descriptor) == std::vector<std::uint64_t>{7});

  r.forget(&descriptor);
  CHECK(read(r, &descriptor).empty());
  CHECK_FALSE(r.write(&descriptor, kKind, [](SlotWords, std::uint32_t) { return 1u; }));
  CHECK(r.held() == 0);
}

TEST_CASE("a creation that makes nothing usable is unknown until set, and a create again replaces the record",
          "[unit][registry]") {
  static Registry r;
  int descriptor;
  REQUIRE(r.created(&descriptor, kKind, [](SlotWords) { return 0u; }));
  CHECK(read(r, &descriptor).empty());
  CHECK(r.held() == 1);
  // Destroyed around the registry, made again at the same address: the same slot, the new record.
  REQUIRE(r.created(&descriptor, kOtherKind, [](SlotWords w) { return fill(w, {5, 6}); }));
  CHECK(r.held() == 1);
  CHECK(read(r, &descriptor, kOtherKind) == std::vector<std::uint64_t>{5, 6});
  CHECK(read(r, &descriptor).empty());
  CHECK(read(r, nullptr).empty());
  CHECK_FALSE(r.created(nullptr, kKind, [](SlotWords) { return 1u; }));
}

// `count` addresses of `bucket` (of a registry of Registry's geometry) out of `space`, 16 bytes apart.
std::vector<const char*> addresses_of_bucket(std::size_t bucket, std::size_t count, const char* space,
                                             std::size_t size) {
  std::vector<const char*> found;
  for (std::size_t at = 0; at + 16 <= size && found.size() < count; at += 16)
    if (Registry::home_of(space + at) / Registry::kWays == bucket) found.push_back(space + at);
  return found;
}

TEST_CASE("a full bucket refuses an address, takes it once a way is free, and never refuses its own",
          "[unit][registry]") {
  static Registry r;
  static char space[64 * 1024];
  const std::vector<const char*> bucket = addresses_of_bucket(3, Registry::kWays + 1, space, sizeof space);
  REQUIRE(bucket.size() == Registry::kWays + 1);
  for (std::size_t i = 0; i < Registry::kWays; ++i)
    REQUIRE(r.created(bucket[i], kKind, [i](SlotWords w) { return fill(w, {i}); }));
  const char* late = bucket.back();
  CHECK_FALSE(r.created(late, kKind, [](SlotWords w) { return fill(w, {99}); }));
  CHECK(read(r, late).empty());  // unknown: its calls run directly
  CHECK_FALSE(r.holds(late));
  CHECK(r.held() == Registry::kWays);
  // Another bucket has room all the same.
  const std::vector<const char*> other = addresses_of_bucket(4, 1, space, sizeof space);
  REQUIRE(r.created(other[0], kKind, [](SlotWords w) { return fill(w, {4}); }));
  CHECK(read(r, other[0]) == std::vector<std::uint64_t>{4});
  // Destroyed around the shim and made again at its address: its own way, though the bucket is full.
  REQUIRE(r.created(bucket[2], kOtherKind, [](SlotWords w) { return fill(w, {22}); }));
  CHECK(read(r, bucket[2], kOtherKind) == std::vector<std::uint64_t>{22});
  CHECK(r.held() == Registry::kWays + 1);
  for (std::size_t i = 0; i < Registry::kWays; ++i)
    if (i != 2) REQUIRE(read(r, bucket[i]) == std::vector<std::uint64_t>{i});

  r.forget(bucket[5]);
  CHECK_FALSE(r.holds(bucket[5]));
  REQUIRE(r.created(late, kKind, [](SlotWords w) { return fill(w, {99}); }));
  CHECK(read(r, late) == std::vector<std::uint64_t>{99});
  CHECK(read(r, bucket[5]).empty());
  for (const char* a : bucket) r.forget(a);
  r.forget(other[0]);
  CHECK(r.held() == 0);
}

TEST_CASE("an address away from its home is found, and a lookup searches its bucket only while one is away",
          "[unit][registry]") {
  static Registry r;
  static char space[64 * 1024];
  // a and b share a home; c is another address of their bucket, which the registry never holds.
  const char *a = nullptr, *b = nullptr, *c = nullptr;
  for (std::size_t i = 0; i < sizeof space / 16 && (b == nullptr || c == nullptr); ++i) {
    const char* x = &space[i * 16];
    if (a == nullptr) a = x;
    else if (b == nullptr && Registry::home_of(x) == Registry::home_of(a)) b = x;
    else if (c == nullptr && Registry::home_of(x) / Registry::kWays == Registry::home_of(a) / Registry::kWays &&
             Registry::home_of(x) != Registry::home_of(a))
      c = x;
  }
  REQUIRE((b != nullptr && c != nullptr));
  REQUIRE(r.created(a, kKind, [](SlotWords w) { return fill(w, {1}); }));
  CHECK_FALSE(r.searches_bucket(c));
  REQUIRE(r.created(b, kKind, [](SlotWords w) { return fill(w, {2}); }));  // away: a has its home
  CHECK(r.searches_bucket(c));
  CHECK(r.keys_compared(c) == 0);
  CHECK(read(r, a) == std::vector<std::uint64_t>{1});
  CHECK(read(r, b) == std::vector<std::uint64_t>{2});
  // Destroyed around the shim and made again: its own way, away as it was.
  REQUIRE(r.created(b, kKind, [](SlotWords w) { return fill(w, {3}); }));
  CHECK(r.held() == 2);
  CHECK(read(r, b) == std::vector<std::uint64_t>{3});
  r.forget(a);  // b stays where it is, found as before
  CHECK(read(r, b) == std::vector<std::uint64_t>{3});
  CHECK(read(r, a).empty());
  r.forget(b);
  CHECK_FALSE(r.searches_bucket(c));
  CHECK(r.held() == 0);
  REQUIRE(r.created(b, kKind, [](SlotWords w) { return fill(w, {4}); }));  // its home, free now
  CHECK_FALSE(r.searches_bucket(c));
  r.forget(b);
}

TEST_CASE("a forget leaves nothing for a later lookup to walk", "[unit][registry]") {
  // The shim's own geometry: 100,000 creates and destroys at random addresses, up to 400 held at
  // once (addresses away from their homes among them). A lookup of an address the registry does
  // not hold reads its bucket's line and compares no slot's key, and once every descriptor is
  // destroyed, no bucket is searched past an address's home.
  static DescriptorRegistry<4096, 18> r;
  static char space[1 << 22];  // 262,144 addresses 16 bytes apart, within 4 GiB: no tag shared
  std::mt19937_64 random(20240611);
  const auto address = [&] { return &space[(random() % (sizeof space / 16)) * 16]; };
  std::vector<const char*> live;
  std::size_t refused = 0, away = 0, compared = 0;
  for (int cycle = 0; cycle < 100'000; ++cycle) {
    if (live.size() < 400 && (live.empty() || random() % 2 == 0)) {
      const char* a = address();
      if (r.holds(a)) continue;
      if (r.created(a, kKind, [](SlotWords w) { return fill(w, {1}); })) live.push_back(a);
      else ++refused;
    } else {
      const std::size_t i = random() % live.size();
      r.forget(live[i]);
      live[i] = live.back();
      live.pop_back();
    }
    const char* absent = address();
    if (!r.holds(absent)) {
      compared += r.keys_compared(absent);
      away += r.searches_bucket(absent);
    }
  }
  // (A create refused, its bucket full, is seen in about one run in 150: up to 400 held in 512
  // buckets of 8, at addresses that move with the program's.)
  INFO(refused << " creates refused");
  CHECK(compared == 0);  // a miss read no slot
  CHECK(away > 0);       // buckets with an address away from home were searched
  CHECK(r.held() == live.size());
  for (const char* a : live) REQUIRE(read(r, a) == std::vector<std::uint64_t>{1});
  for (const char* a : live) r.forget(a);
  CHECK(r.held() == 0);
  std::size_t searched = 0;
  for (std::size_t at = 0; at < sizeof space; at += 16)
    searched += r.searches_bucket(&space[at]) + r.keys_compared(&space[at]);
  CHECK(searched == 0);
}

TEST_CASE("readers racing a writer see whole records or nothing", "[unit][registry][threads]") {
  static DescriptorRegistry<64, 8> r;
  int descriptor;
  // The invariant of every record here: one value in each of its (value % 8) + 1 words.
  REQUIRE(r.created(&descriptor, kKind, [](SlotWords w) { return fill(w, {7, 7, 7, 7, 7, 7, 7, 7}); }));
  std::atomic<bool> done{false};
  std::atomic<long> torn{0}, whole{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < 2; ++t)  // with the writer, as many threads as CI has cores and one more
    readers.emplace_back([&] {
      while (!done.load(std::memory_order_relaxed)) {
        const std::vector<std::uint64_t> words = read(r, &descriptor);
        if (words.empty()) continue;
        bool same = words.size() == words[0] % 8 + 1;
        for (std::uint64_t w : words) same = same && w == words[0];
        (same ? whole : torn).fetch_add(1, std::memory_order_relaxed);
      }
    });
  // Writes until the readers have copied many records while it wrote (or a bound on the writes).
  const auto reads = [&] { return whole.load(std::memory_order_relaxed) + torn.load(std::memory_order_relaxed); };
  const long reads_before = reads();
  std::uint64_t last = 0;
  for (std::uint64_t value = 1; value < 20'000'000 && (value < 1000 || reads() - reads_before < 100'000); last = value++)
    r.write(&descriptor, kKind, [value](SlotWords w, std::uint32_t) {
      const std::uint32_t length = static_cast<std::uint32_t>(value % 8) + 1;
      for (std::uint32_t i = 0; i < length; ++i) w[i].store(value, std::memory_order_relaxed);
      return length;
    });
  done.store(true, std::memory_order_relaxed);
  for (std::thread& t : readers) t.join();
  CHECK(torn.load() == 0);
  CHECK(whole.load() > 0);
  CHECK(read(r, &descriptor) == std::vector<std::uint64_t>(last % 8 + 1, last));
}

TEST_CASE("a reader racing the reuse of its way by another address never keeps the other's record",
          "[unit][registry][threads]") {
  // a and b share a home, so they take turns in its way, each with a record of its own and the
  // same kind. A reader of a that found the way while it was a's, and looks at the sequence only
  // once b has it (the thread preempted there: more readers than cores), copies a whole record of
  // b's.
  static DescriptorRegistry<8, 8> r;
  static char space[16 * 64];
  const char* const a = &space[0];
  const char* b = nullptr;
  for (std::size_t at = 16; at < sizeof space && b == nullptr; at += 16)
    if (r.home_of(&space[at]) == r.home_of(a)) b = &space[at];
  REQUIRE(b != nullptr);
  std::atomic<bool> done{false};
  std::atomic<long> wrong{0}, right{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < 4; ++t)
    readers.emplace_back([&, t] {
      const char* mine = t % 2 == 0 ? a : b;
      const std::uint64_t value = t % 2 == 0 ? 1 : 2;  // a's record is {1}, b's {2, 2}
      long wrong_here = 0, right_here = 0;
      while (!done.load(std::memory_order_relaxed)) {
        std::uint64_t words[8];
        std::uint32_t n = 0;
        const bool ok = r.read(mine, kKind, [&](const std::atomic<std::uint64_t>* from, std::uint32_t length) {
          for (n = 0; n < length && n < 8; ++n) words[n] = from[n].load(std::memory_order_relaxed);
        });
        if (!ok) continue;
        bool same = n == value;
        for (std::uint32_t i = 0; i < n; ++i) same = same && words[i] == value;
        ++(same ? right_here : wrong_here);
        if (right_here % 1024 == 0) right.store(right_here, std::memory_order_relaxed);
      }
      wrong.fetch_add(wrong_here, std::memory_order_relaxed);
    });
  // Enough cycles that a registry without the key's second look fails here nearly every run (it
  // did 5 times in 5; a tenth of them under the sanitizers, whose runs are ten times as long).
#ifdef CUDNN_FASTPATH_SANITIZED
  constexpr long kCycles = 200'000;
#else
  constexpr long kCycles = 2'000'000;
#endif
  bool created = true;
  long cycles = 0;
  for (; cycles < 10 * kCycles && (cycles < kCycles || right.load(std::memory_order_relaxed) < 100'000); ++cycles) {
    created &= r.created(a, kKind, [](SlotWords w) { return fill(w, {1}); });
    r.forget(a);
    created &= r.created(b, kKind, [](SlotWords w) { return fill(w, {2, 2}); });
    r.forget(b);
  }
  done.store(true, std::memory_order_relaxed);
  for (std::thread& t : readers) t.join();
  INFO(cycles << " cycles, " << wrong.load() << " wrong");
  CHECK(created);
  CHECK(wrong.load() == 0);
  CHECK(right.load() > 0);
  CHECK(r.held() == 0);
}
