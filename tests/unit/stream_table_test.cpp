#include "table/stream_table.h"

#include <atomic>
#include <catch2/catch.hpp>
#include <cstdint>
#include <set>
#include <thread>
#include <vector>

#include "table/handle_table.h"

using cudnn_fastpath::HandleTable;
using cudnn_fastpath::SlotState;
using cudnn_fastpath::StreamTable;

namespace {
const void* handle_at(std::uintptr_t address) { return reinterpret_cast<const void*>(address); }

template <typename Table>
void publish(Table& table, typename Table::Slot* slot, const void* handle, std::uintptr_t stream) {
  Table::leave(table.enter(*slot, handle), stream, true);
}
}  // namespace

TEST_CASE("find never claims and find_or_claim claims once per handle", "[table]") {
  static StreamTable<8> table;  // static: the shim's table is, and it must need no constructor
  const void* h = handle_at(0x5000);
  CHECK(table.find(h) == nullptr);
  auto* slot = table.find_or_claim(h);
  REQUIRE(slot != nullptr);
  CHECK(table.find(h) == slot);
  CHECK(table.find_or_claim(h) == slot);
  CHECK(table.claims() == 1);
  CHECK(table.live() == 1);
  CHECK(table.find_or_claim(handle_at(0x6000)) != slot);
}

TEST_CASE("the reserved key values are never handles", "[table]") {
  StreamTable<8> table;
  for (std::uintptr_t reserved : {0, 1, 2}) {
    CHECK(table.find_or_claim(handle_at(reserved)) == nullptr);
    CHECK(table.find_at_home(handle_at(reserved)) == nullptr);
  }
  CHECK(table.claims() == 0);
}

TEST_CASE("a full table refuses new handles and serves the ones it holds until a release frees a slot",
          "[table]") {
  StreamTable<8> table;
  std::vector<StreamTable<8>::Slot*> slots;
  for (std::uintptr_t i = 1; i <= 8; ++i) {
    slots.push_back(table.find_or_claim(handle_at(i * 0x40)));
    REQUIRE(slots.back() != nullptr);
  }
  CHECK(std::set<StreamTable<8>::Slot*>(slots.begin(), slots.end()).size() == 8);
  const void* ninth = handle_at(0x9999 * 0x40);
  CHECK(table.find_or_claim(ninth) == nullptr);
  CHECK(table.find(ninth) == nullptr);
  for (std::uintptr_t i = 1; i <= 8; ++i) CHECK(table.find(handle_at(i * 0x40)) == slots[i - 1]);

  // Full means eight live handles, not eight addresses ever: a destroyed one frees its slot.
  REQUIRE(table.release(*slots[3], handle_at(4 * 0x40)));
  CHECK(table.live() == 7);
  CHECK(table.find(handle_at(4 * 0x40)) == nullptr);
  CHECK(table.find_or_claim(ninth) == slots[3]);
  CHECK(table.live() == 8);
  for (std::uintptr_t i = 1; i <= 8; ++i)
    if (i != 4) CHECK(table.find(handle_at(i * 0x40)) == slots[i - 1]);
}

TEST_CASE("a reclaimed slot never says what its previous handle held", "[table]") {
  StreamTable<8> table;
  const void* first = handle_at(0x1000);
  auto* slot = table.find_or_claim(first);
  publish(table, slot, first, 0xA0);
  REQUIRE(slot->state.holds(0xA0));
  REQUIRE(table.release(*slot, first));
  CHECK_FALSE(slot->state.holds(0xA0));
  CHECK_FALSE(table.release(*slot, first));  // released once only

  // Whichever handle takes the slot next starts unknown, even for the same stream. Eight claims
  // fill the table, so one of them takes the freed slot.
  bool taken = false;
  for (std::uintptr_t address = 0x2000; address < 0x2000 + 8 * 0x40; address += 0x40) {
    auto* next = table.find_or_claim(handle_at(address));
    REQUIRE(next != nullptr);
    taken = taken || next == slot;
  }
  REQUIRE(taken);
  CHECK_FALSE(slot->state.holds(0xA0));
}

TEST_CASE("a call that entered before its slot changed hands publishes nothing", "[table]") {
  StreamTable<8> table;
  const void* old_handle = handle_at(0x1000);
  auto* slot = table.find_or_claim(old_handle);
  const auto late = table.enter(*slot, old_handle);  // in flight on the old handle
  REQUIRE(table.release(*slot, old_handle));
  std::uintptr_t address = 0x2000;
  for (int claims = 0; claims < 8 && table.find_or_claim(handle_at(address)) != slot; ++claims) address += 0x40;
  REQUIRE(table.find(handle_at(address)) == slot);
  StreamTable<8>::leave(late, 0xA0, true);
  CHECK_FALSE(slot->state.holds(0xA0));

  // One that enters after the slot changed hands sees the new key and does not publish either.
  const auto stale = table.enter(*slot, old_handle);
  CHECK_FALSE(stale.owned);
  StreamTable<8>::leave(stale, 0xB0, true);
  CHECK_FALSE(slot->state.holds(0xB0));
  // The new owner's own call publishes as usual.
  publish(table, slot, handle_at(address), 0xC0);
  CHECK(slot->state.holds(0xC0));
}

TEST_CASE("one live handle at a time over 100,000 addresses: always at home and lookups stay short",
          "[table]") {
  static HandleTable table;
  for (std::uintptr_t i = 0; i < 100000; ++i) {
    const void* h = handle_at(0x7f0000000000 + i * 0x2a0);
    auto* slot = table.find_or_claim(h);
    REQUIRE(slot != nullptr);
    CHECK(table.find_at_home(h) == slot);
    REQUIRE(table.release(*slot, h));
  }
  CHECK(table.live() == 0);
  CHECK(table.claims() == 100000);
  CHECK(table.reach_of(handle_at(0x7f0000000000)) == 0);
}

TEST_CASE("forget_stream voids every slot that holds the stream, and writes to no other", "[table]") {
  StreamTable<64> table;
  std::vector<StreamTable<64>::Slot*> slots;
  for (std::uintptr_t i = 1; i <= 40; ++i) {
    const void* h = handle_at(i * 0x100);
    slots.push_back(table.find_or_claim(h));
    publish(table, slots.back(), h, i % 4 == 0 ? 0xA0 : 0xB0 + i);
  }
  std::vector<std::uint64_t> before;
  for (auto* slot : slots) before.push_back(slot->state.raw());
  CHECK(table.forget_stream(0xA0) == 10);
  for (std::size_t i = 0; i < slots.size(); ++i) {
    if ((i + 1) % 4 == 0) CHECK(slots[i]->state.raw() == 0);
    else CHECK(slots[i]->state.raw() == before[i]);
  }
  CHECK(table.forget_stream(0xA0) == 0);
}

TEST_CASE("cudaStreamPerThread is never cached while NULL and cudaStreamLegacy are", "[table]") {
  StreamTable<8> table;
  const void* h = handle_at(0x1000);
  auto* slot = table.find_or_claim(h);
  publish(table, slot, h, SlotState::kPerThreadStream);
  CHECK_FALSE(slot->state.holds(SlotState::kPerThreadStream));
  publish(table, slot, h, 0x1);
  CHECK(slot->state.holds(0x1));
  publish(table, slot, h, 0x0);
  CHECK(slot->state.holds(0x0));
}

TEST_CASE("forget_all voids every slot and so does reset_in_child, keeping the keys", "[table]") {
  StreamTable<8> table;
  auto* a = table.find_or_claim(handle_at(0x100));
  auto* b = table.find_or_claim(handle_at(0x200));
  publish(table, a, handle_at(0x100), 0xA0);
  publish(table, b, handle_at(0x200), 0xB0);
  table.forget_all();
  CHECK_FALSE(a->state.holds(0xA0));
  CHECK_FALSE(b->state.holds(0xB0));
  publish(table, a, handle_at(0x100), 0xA0);
  table.reset_in_child();
  CHECK_FALSE(a->state.holds(0xA0));
  CHECK(table.find(handle_at(0x100)) == a);
}

TEST_CASE("threads claiming the same handles leave exactly one slot per handle", "[table]") {
  static StreamTable<1024> table;
  constexpr int kThreads = 4, kHandles = 500;
  std::vector<std::thread> threads;
  std::atomic<int> ready{0}, refused{0};
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&] {
      ready.fetch_add(1);
      while (ready.load() < kThreads) {
      }
      for (int i = 0; i < kHandles; ++i)  // no CHECK here: Catch2's assertions are not thread-safe
        refused += table.find_or_claim(handle_at(0x1000 + 0x40 * static_cast<std::uintptr_t>(i))) == nullptr;
    });
  for (auto& thread : threads) thread.join();
  CHECK(refused.load() == 0);
  CHECK(table.live() == kHandles);
  std::set<StreamTable<1024>::Slot*> distinct;
  for (int i = 0; i < kHandles; ++i) {
    auto* slot = table.find(handle_at(0x1000 + 0x40 * static_cast<std::uintptr_t>(i)));
    CHECK(slot != nullptr);
    distinct.insert(slot);
  }
  CHECK(distinct.size() == static_cast<std::size_t>(kHandles));
}

TEST_CASE("threads creating and destroying handles never see another handle's stream",
          "[table]") {
  // Each thread claims fresh addresses, publishes its own stream, checks it, releases: a slot
  // that a thread claims must never already hold a stream (another handle's).
  static StreamTable<64> table;
  constexpr int kThreads = 4, kRounds = 20000;
  std::atomic<int> inherited{0}, lost{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      const std::uintptr_t stream = 0x10000 * static_cast<std::uintptr_t>(t + 1);
      for (int i = 0; i < kRounds; ++i) {
        const void* h = handle_at(0x100000 * static_cast<std::uintptr_t>(t + 1) + 0x40 * static_cast<std::uintptr_t>(i % 97));
        auto* slot = table.find_or_claim(h);
        if (slot == nullptr) continue;
        for (int other = 1; other <= kThreads; ++other)
          inherited += slot->state.holds(0x10000 * static_cast<std::uintptr_t>(other)) ? 1 : 0;
        publish(table, slot, h, stream);
        lost += slot->state.holds(stream) ? 0 : 1;  // no one else touches this handle
        table.release(*slot, h);
      }
    });
  for (auto& thread : threads) thread.join();
  CHECK(inherited.load() == 0);
  CHECK(lost.load() == 0);
  CHECK(table.live() == 0);
}

TEST_CASE("find_at_home finds a handle only in its home slot while find follows the chain", "[table]") {
  StreamTable<8> table;
  // Scattered addresses (a fixed pseudo-random sequence): eight of them in eight slots are all at
  // home only if they hash to eight different slots, which these do not.
  std::vector<const void*> handles;
  std::uint64_t state = 42;
  for (int i = 0; i < 8; ++i) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    handles.push_back(handle_at((state >> 20) & ~std::uintptr_t{0x3f}));
  }
  int at_home = 0, further = 0;
  for (const void* h : handles) {
    auto* slot = table.find_or_claim(h);
    REQUIRE(slot != nullptr);
    auto* home = table.find_at_home(h);
    CHECK((home == nullptr || home == slot));
    (home ? at_home : further) += 1;
  }
  CHECK(at_home >= 1);
  CHECK(further >= 1);
  for (const void* h : handles) CHECK(table.find(h) != nullptr);
  CHECK(table.find_at_home(nullptr) == nullptr);
}
