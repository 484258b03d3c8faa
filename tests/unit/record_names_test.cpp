// Record names (replay/record_ids.h, and what replay/descriptor_registry.h remembers beside a
// version of a record): one name per content and never another's, a value remembered for one
// version only, and threads naming the same contents at once (run under TSan by scripts/test).
#include <atomic>
#include <cstdint>
#include <set>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "replay/descriptor_registry.h"
#include "replay/record_ids.h"
#include "replay/record_run.h"

using cudnn_fastpath::replay::DescriptorRegistry;
using cudnn_fastpath::replay::NameBlock;
using cudnn_fastpath::replay::RecordIds;
using cudnn_fastpath::replay::RecordRun;
using cudnn_fastpath::replay::SlotWords;

namespace {

using Registry = DescriptorRegistry<64, 8>;
constexpr std::uint32_t kKind = 3;

// The version read_versioned gives for `address`, with whether the read held.
struct Read {
  bool ok = false;
  Registry::Version version{};
  std::vector<std::uint64_t> words;
};
Read read(const Registry& r, const void* address) {
  Read out;
  out.ok = r.read_versioned(address, kKind,
                            [&](const Registry::Version& v, const std::atomic<std::uint64_t>* from, std::uint32_t n) {
                              out.version = v;
                              for (std::uint32_t i = 0; i < n; ++i) out.words.push_back(from[i].load());
                            });
  return out;
}
std::uint64_t remembered(Registry& r, const void* address, Registry::Version* seen = nullptr) {
  return r.remembered(address, kKind, [](const std::atomic<std::uint64_t>*, std::uint32_t) {},
                      [](const std::atomic<std::uint64_t>*, std::uint32_t) { return false; }, seen);
}
std::uint32_t one_word(SlotWords w, std::uint64_t value) {
  w[0].store(value, std::memory_order_relaxed);
  return 1;
}

}  // namespace

TEST_CASE("a value remembered for a version of a record is given for that version only", "[unit][names]") {
  static Registry r;
  int descriptor;
  REQUIRE(r.created(&descriptor, kKind, [](SlotWords w) { return one_word(w, 7); }));
  Read first = read(r, &descriptor);
  REQUIRE(first.ok);
  CHECK(first.version.remembered == 0);
  CHECK(remembered(r, &descriptor) == 0);

  r.remember(first.version, 41);
  CHECK(read(r, &descriptor).version.remembered == 41);
  CHECK(remembered(r, &descriptor) == 41);

  // A set moves the version on: what was remembered is not given for the new contents.
  REQUIRE(r.write(&descriptor, kKind, [](SlotWords w, std::uint32_t) { return one_word(w, 8); }));
  CHECK(remembered(r, &descriptor) == 0);
  const Read second = read(r, &descriptor);
  CHECK(second.version.remembered == 0);
  CHECK(second.version.number != first.version.number);

  // A late keeping for the old version is never given for the new one.
  r.remember(first.version, 41);
  CHECK(remembered(r, &descriptor) == 0);
  r.remember(second.version, 42);
  CHECK(remembered(r, &descriptor) == 42);

  // An address forgotten and made again, even with the same contents, starts with nothing.
  r.forget(&descriptor);
  CHECK(remembered(r, &descriptor) == 0);
  REQUIRE(r.created(&descriptor, kKind, [](SlotWords w) { return one_word(w, 8); }));
  CHECK(remembered(r, &descriptor) == 0);
  r.remember(second.version, 42);  // the slot's old version, kept late
  CHECK(remembered(r, &descriptor) == 0);
}

TEST_CASE("record names: the same contents the same name, other contents another", "[unit][names]") {
  static RecordIds<4, 4, 8> ids;
  NameBlock block;
  const std::uint64_t a[] = {1, 2, 3}, b[] = {1, 2, 4};
  const std::uint64_t name_a = ids.name(kKind, a, 3, block);
  CHECK(name_a != 0);
  CHECK(ids.name(kKind, a, 3, block) == name_a);
  CHECK(ids.name(kKind, b, 3, block) != name_a);
  CHECK(ids.name(kKind + 1, a, 3, block) != name_a);  // the kind is a part of the contents
  CHECK(ids.name(kKind, a, 2, block) != name_a);      // and so is the length
  std::uint64_t nine[9] = {};
  CHECK(ids.name(kKind, nine, 9, block) == 0);  // longer than a name holds: the caller writes the words

  // Contents evicted and met again get a name never given before: keys holding the old one are
  // simply never met again, and no name ever stands for two contents.
  std::set<std::uint64_t> given;
  std::uint64_t words[1];
  for (std::uint64_t v = 100; v < 400; ++v) {
    words[0] = v;
    CHECK(given.insert(ids.name(kKind, words, 1, block)).second);
  }
  for (std::uint64_t v = 100; v < 400; ++v) {
    words[0] = v;
    const std::uint64_t again = ids.name(kKind, words, 1, block);
    CHECK(again != 0);
    if (!given.count(again)) CHECK(given.insert(again).second);  // renamed: a new name
  }
}

TEST_CASE("threads naming the same contents at once agree on one name", "[unit][names][threads]") {
  static RecordIds<4, 4, 8> ids;
  constexpr int kThreads = 8, kContents = 8;
  std::vector<std::vector<std::uint64_t>> names(kThreads, std::vector<std::uint64_t>(kContents));
  std::atomic<int> ready{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      NameBlock block;
      ready.fetch_add(1);
      while (ready.load() < kThreads) {
      }
      for (int c = 0; c < kContents; ++c) {
        const std::uint64_t words[2] = {static_cast<std::uint64_t>(c), 99};
        names[t][c] = ids.name(kKind, words, 2, block);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  // Once the race is over, each content has one name, which is one of those the threads were given.
  NameBlock block;
  for (int c = 0; c < kContents; ++c) {
    const std::uint64_t words[2] = {static_cast<std::uint64_t>(c), 99};
    const std::uint64_t settled = ids.name(kKind, words, 2, block);
    CHECK(ids.name(kKind, words, 2, block) == settled);
    bool given = false;
    for (int t = 0; t < kThreads; ++t) given |= names[t][c] == settled;
    CHECK(given);
    for (int other = 0; other < kContents; ++other)
      for (int t = 0; t < kThreads; ++t)
        if (other != c) CHECK(names[t][other] != settled);  // never another content's
  }
}

TEST_CASE("a run of records holds while none of its records is set, made again or destroyed", "[unit][names]") {
  static Registry r;
  int first, second, other;
  for (int* d : {&first, &second, &other})
    REQUIRE(r.created(d, kKind, [](SlotWords w) { return one_word(w, 7); }));
  // Each record named, and the version its name is for told to the run (as add_operation does).
  RecordRun<2, 2, 1> run{};
  const void* const objects[2] = {&first, &second};
  const std::uint32_t kinds[2] = {kKind, kKind};
  auto read_run = [&] {
    run.begin();
    std::uint64_t words[2];
    for (int i = 0; i < 2; ++i) {
      const Read now = read(r, objects[i]);
      REQUIRE(now.ok);
      r.remember(now.version, 50 + static_cast<std::uint64_t>(i));
      words[i] = remembered(r, objects[i], &run.versions[i]);
      REQUIRE(words[i] == 50 + static_cast<std::uint64_t>(i));
    }
    run.finish(objects, words, 2, {9});
  };
  // What a record's own code tells of a record made over another's words (record_names.h's
  // `kept`): never, or while its word is still the 7 the run read.
  auto holds = [&](const void* const (&now)[2], bool tells = false) {
    return run.holds<Registry>(now, kinds, [tells](const std::atomic<std::uint64_t>* words, std::uint32_t n) {
      return tells && n == 1 && words[0].load() == 7;
    });
  };
  CHECK_FALSE(holds(objects));  // nothing kept yet
  read_run();
  CHECK(holds(objects));
  CHECK(run.words[1] == 51);
  CHECK(run.facts[0] == 9);

  // Other objects, or the same in another order: not this run.
  const void* const swapped[2] = {&second, &first};
  const void* const another[2] = {&first, &other};
  CHECK_FALSE(holds(swapped));
  CHECK_FALSE(holds(another));

  // A set of either record, even to the words it had, ends the run.
  REQUIRE(r.write(&second, kKind, [](SlotWords w, std::uint32_t) { return one_word(w, 7); }));
  CHECK_FALSE(holds(objects));
  read_run();
  CHECK(holds(objects));
  r.unknown(&first);
  CHECK_FALSE(holds(objects, true));

  // Destroyed and made again at the same address with the same contents: a new record, which the
  // run follows only where the record's code tells that it was made over the words it read.
  REQUIRE(r.write(&first, kKind, [](SlotWords w, std::uint32_t) { return one_word(w, 7); }));
  read_run();
  r.forget(&first);
  CHECK_FALSE(holds(objects, true));  // no record
  REQUIRE(r.created(&first, kKind, [](SlotWords w) { return one_word(w, 7); }));
  CHECK_FALSE(holds(objects));
  CHECK(holds(objects, true));
  CHECK(holds(objects));  // followed: the new record's version is the run's now
  // Made again over other words, or over the words of a record whose name was not the run's.
  read_run();
  r.forget(&first);
  REQUIRE(r.created(&first, kKind, [](SlotWords w) { return one_word(w, 8); }));
  CHECK_FALSE(holds(objects, true));
  r.forget(&first);
  REQUIRE(r.created(&first, kKind, [](SlotWords w) { return one_word(w, 7); }));
  CHECK_FALSE(holds(objects, true));  // its last record (8) was never named 50
  // Another address made where `first` was (its home): never `first`'s.
  static char addresses[4096];
  const char* twin = addresses;
  while (Registry::home_of(twin) != Registry::home_of(&first)) ++twin;
  REQUIRE(twin < addresses + sizeof addresses);
  read_run();
  r.forget(&first);
  REQUIRE(r.created(twin, kKind, [](SlotWords w) { return one_word(w, 7); }));
  CHECK_FALSE(holds(objects, true));
  r.forget(twin);

  // A run begun and not finished holds nothing.
  REQUIRE(r.created(&first, kKind, [](SlotWords w) { return one_word(w, 7); }));
  read_run();
  run.begin();
  CHECK_FALSE(holds(objects, true));
}
