#include "table/stream_table.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <set>
#include <thread>
#include <vector>

using cudnn_fastpath::StreamTable;

namespace {
const void* handle_at(std::uintptr_t address) { return reinterpret_cast<const void*>(address); }

void publish(StreamTable<8>::Slot* slot, std::uintptr_t stream) {
  slot->state.leave(slot->state.enter(), stream, true);
}
}  // namespace

TEST_CASE("find never claims; find_or_claim claims once per handle", "[table]") {
  static StreamTable<8> table;  // static: the shim's table is, and it must need no constructor
  const void* h = handle_at(0x5000);
  CHECK(table.find(h) == nullptr);
  auto* slot = table.find_or_claim(h);
  REQUIRE(slot != nullptr);
  CHECK(table.find(h) == slot);
  CHECK(table.find_or_claim(h) == slot);
  CHECK(table.claimed() == 1);
  CHECK(table.find_or_claim(handle_at(0x6000)) != slot);
}

TEST_CASE("a null handle gets no slot", "[table]") {
  StreamTable<8> table;
  CHECK(table.find_or_claim(nullptr) == nullptr);
  CHECK(table.claimed() == 0);
}

TEST_CASE("a full table refuses new handles and keeps serving the ones it holds", "[table]") {
  StreamTable<8> table;
  std::vector<StreamTable<8>::Slot*> slots;
  for (std::uintptr_t i = 1; i <= 8; ++i) {
    slots.push_back(table.find_or_claim(handle_at(i * 0x40)));
    REQUIRE(slots.back() != nullptr);
  }
  CHECK(std::set<StreamTable<8>::Slot*>(slots.begin(), slots.end()).size() == 8);
  CHECK(table.find_or_claim(handle_at(0x9999 * 0x40)) == nullptr);
  CHECK(table.find(handle_at(0x9999 * 0x40)) == nullptr);
  for (std::uintptr_t i = 1; i <= 8; ++i) CHECK(table.find(handle_at(i * 0x40)) == slots[i - 1]);
}

TEST_CASE("forget_stream voids every slot that holds the stream, and only those", "[table]") {
  StreamTable<8> table;
  auto* a = table.find_or_claim(handle_at(0x100));
  auto* b = table.find_or_claim(handle_at(0x200));
  auto* c = table.find_or_claim(handle_at(0x300));
  publish(a, 0xA0);
  publish(b, 0xA0);
  publish(c, 0xB0);
  CHECK(table.forget_stream(0xA0) == 2);
  CHECK_FALSE(a->state.holds(0xA0));
  CHECK_FALSE(b->state.holds(0xA0));
  CHECK(c->state.holds(0xB0));
}

TEST_CASE("reset_all_states voids every slot but keeps the keys", "[table]") {
  StreamTable<8> table;
  auto* a = table.find_or_claim(handle_at(0x100));
  publish(a, 0xA0);
  table.reset_all_states();
  CHECK_FALSE(a->state.holds(0xA0));
  CHECK(table.find(handle_at(0x100)) == a);
}

TEST_CASE("threads claiming the same handles agree on one slot per handle", "[table]") {
  static StreamTable<1024> table;
  constexpr int kThreads = 4, kHandles = 500;
  std::vector<std::vector<StreamTable<1024>::Slot*>> seen(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < kHandles; ++i)
        seen[t].push_back(table.find_or_claim(handle_at(0x1000 + 0x40 * static_cast<std::uintptr_t>(i))));
    });
  for (auto& thread : threads) thread.join();
  CHECK(table.claimed() == kHandles);
  for (int t = 1; t < kThreads; ++t) CHECK(seen[t] == seen[0]);
}

TEST_CASE("find_at_home finds a handle only in its home slot; find follows the chain", "[table]") {
  StreamTable<8> table;
  int at_home = 0, further = 0;
  for (std::uintptr_t i = 1; i <= 8; ++i) {
    const void* h = handle_at(i * 0x40);
    auto* slot = table.find_or_claim(h);
    REQUIRE(slot != nullptr);
    auto* home = table.find_at_home(h);
    CHECK((home == nullptr || home == slot));
    (home ? at_home : further) += 1;
  }
  // Eight handles in eight slots: unless the hash is perfect, some live past their home.
  CHECK(at_home >= 1);
  CHECK(further >= 1);
  for (std::uintptr_t i = 1; i <= 8; ++i) CHECK(table.find(handle_at(i * 0x40)) != nullptr);
  CHECK(table.find_at_home(nullptr) == nullptr);
}
