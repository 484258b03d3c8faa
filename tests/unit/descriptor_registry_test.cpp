// replay/descriptor_registry.h on its own: a record's life (create, edit, read, forget), what is
// unknown, the probe limit, and readers racing a writer (run under TSan by scripts/test).
#include "replay/descriptor_registry.h"

#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

using cudnn_fastpath::replay::DescriptorRegistry;
using cudnn_fastpath::replay::SlotWords;

namespace {

using Registry = DescriptorRegistry<64, 8>;
constexpr std::uint32_t kKind = 3, kOtherKind = 4;

// The record of `address` as a reader copies it: its words, or empty when the read failed.
std::vector<std::uint64_t> read(const Registry& r, const void* address, std::uint32_t kind = kKind) {
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

TEST_CASE("a registry with no free slot on an address's probe refuses it, and takes it once slots are free",
          "[unit][registry]") {
  static Registry r;
  static char addresses[128 * 16];
  std::vector<int> taken, refused;
  for (int i = 0; i < 128; ++i)
    (r.created(&addresses[i * 16], kKind, [i](SlotWords w) { return fill(w, {std::uint64_t(i)}); }) ? taken : refused)
        .push_back(i);
  CHECK(taken.size() <= 64);
  CHECK(taken.size() >= Registry::kMaxProbe);  // the first probe's worth always fits
  REQUIRE_FALSE(refused.empty());
  CHECK(r.held() == taken.size());
  for (int i : taken) REQUIRE(read(r, &addresses[i * 16]) == std::vector<std::uint64_t>{std::uint64_t(i)});
  for (int i : refused) REQUIRE(read(r, &addresses[i * 16]).empty());  // unknown: its calls run directly
  for (int i : taken) r.forget(&addresses[i * 16]);
  CHECK(r.held() == 0);
  const int late = refused.front();
  REQUIRE(r.created(&addresses[late * 16], kKind, [](SlotWords w) { return fill(w, {99}); }));
  CHECK(read(r, &addresses[late * 16]) == std::vector<std::uint64_t>{99});
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
