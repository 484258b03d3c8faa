#include "table/slot_state.h"

#include <catch2/catch.hpp>
#include <cstdint>

using cudnn_fastpath::SlotState;

namespace {
constexpr std::uintptr_t kStreamA = 0x7f0000001000;
constexpr std::uintptr_t kStreamB = 0x7f0000002000;

void forward(SlotState& state, std::uintptr_t stream, bool succeeded = true) {
  const auto ticket = state.enter();
  state.leave(ticket, stream, succeeded);
}
}  // namespace

TEST_CASE("a fresh slot holds no stream, not even the null one", "[slot]") {
  SlotState state;
  CHECK_FALSE(state.holds(0));
  CHECK_FALSE(state.holds(kStreamA));
}

TEST_CASE("a successful forward publishes exactly its stream", "[slot]") {
  SlotState state;
  forward(state, kStreamA);
  CHECK(state.holds(kStreamA));
  CHECK_FALSE(state.holds(kStreamB));
  CHECK_FALSE(state.holds(0));
  forward(state, 0);  // the null (default) stream is a stream like any other
  CHECK(state.holds(0));
  CHECK_FALSE(state.holds(kStreamA));
}

TEST_CASE("a failed forward leaves the slot unknown", "[slot]") {
  SlotState state;
  forward(state, kStreamA);
  forward(state, kStreamB, /*succeeded=*/false);
  CHECK_FALSE(state.holds(kStreamA));
  CHECK_FALSE(state.holds(kStreamB));
}

TEST_CASE("nothing is valid while a forward is in flight", "[slot]") {
  SlotState state;
  forward(state, kStreamA);
  const auto ticket = state.enter();
  CHECK_FALSE(state.holds(kStreamA));
  state.leave(ticket, kStreamA, true);
  CHECK(state.holds(kStreamA));
}

TEST_CASE("overlapping forwards leave the slot unknown, whatever order they leave in", "[slot]") {
  SlotState state;
  const bool first_leaves_first = GENERATE(true, false);
  const auto first = state.enter();
  const auto second = state.enter();
  if (first_leaves_first) {
    state.leave(first, kStreamA, true);
    CHECK_FALSE(state.holds(kStreamA));
    state.leave(second, kStreamB, true);
  } else {
    state.leave(second, kStreamB, true);
    state.leave(first, kStreamA, true);
  }
  CHECK_FALSE(state.holds(kStreamA));
  CHECK_FALSE(state.holds(kStreamB));
  forward(state, kStreamB);  // the overlap mark does not outlive the overlap
  CHECK(state.holds(kStreamB));
}

TEST_CASE("forget voids the slot and bars callers in flight from publishing", "[slot]") {
  SlotState state;
  forward(state, kStreamA);
  state.forget();
  CHECK_FALSE(state.holds(kStreamA));

  const auto ticket = state.enter();
  state.forget();  // e.g. cudnnDestroy racing a set on the same handle
  state.leave(ticket, kStreamA, true);
  CHECK_FALSE(state.holds(kStreamA));
}

TEST_CASE("forget_if_holds touches only the slot that holds that stream", "[slot]") {
  SlotState state;
  forward(state, kStreamA);
  CHECK_FALSE(state.forget_if_holds(kStreamB));
  CHECK(state.holds(kStreamA));
  CHECK(state.forget_if_holds(kStreamA));
  CHECK_FALSE(state.holds(kStreamA));
}

TEST_CASE("a stream wider than 48 bits is never cached and never aliases a cached one", "[slot]") {
  SlotState state;
  const std::uintptr_t wide = (std::uintptr_t{1} << 63) | kStreamA;
  forward(state, wide);
  CHECK_FALSE(state.holds(wide));
  forward(state, kStreamA);
  CHECK(state.holds(kStreamA));
  CHECK_FALSE(state.holds(wide));  // same low bits, must not match
}

TEST_CASE("a slot poisoned by an uncounted caller stays so until a forked child resets it", "[slot]") {
  SlotState state;
  const auto max_counted = static_cast<int>(SlotState::kCountMask >> SlotState::kCountShift);
  for (int i = 0; i < max_counted; ++i) REQUIRE(state.enter() == SlotState::Ticket::kCounted);
  const auto extra = state.enter();
  CHECK(extra == SlotState::Ticket::kUncounted);
  for (int i = 0; i < max_counted; ++i) state.leave(SlotState::Ticket::kCounted, kStreamA, true);
  CHECK_FALSE(state.holds(kStreamA));
  // The uncounted caller may still be inside cuDNN: a newcomer's successful call must not publish.
  forward(state, kStreamB);
  CHECK_FALSE(state.holds(kStreamB));
  state.leave(extra, kStreamA, true);
  forward(state, kStreamA);
  CHECK_FALSE(state.holds(kStreamA));
  CHECK((state.raw() & SlotState::kPoisoned) != 0);
  state.forget();  // a handle's create or destroy does not clear it either
  forward(state, kStreamA);
  CHECK_FALSE(state.holds(kStreamA));
  state.reset();  // only a forked child, where no caller can be in flight, starts over
  forward(state, kStreamA);
  CHECK(state.holds(kStreamA));
}

// Hostile review, item 8: the counter saturates at its own maximum; the caller past it is in
// flight uncounted, so the slot must stay unknown until that caller has left, whoever comes after.
TEST_CASE("in-flight count saturation: a newcomer after the counted callers left does not publish", "[slot][hostile]") {
  constexpr std::uint64_t kMaxCounted = SlotState::kCountMask >> SlotState::kCountShift;
  constexpr std::uintptr_t kStreamS = 0x7f0000003000;
  SlotState state;
  for (std::uint64_t i = 0; i < kMaxCounted; ++i) REQUIRE(state.enter() == SlotState::Ticket::kCounted);
  const auto uncounted = state.enter();
  REQUIRE(uncounted == SlotState::Ticket::kUncounted);
  for (std::uint64_t i = 0; i < kMaxCounted; ++i) state.leave(SlotState::Ticket::kCounted, kStreamA, true);
  CHECK_FALSE(state.holds(kStreamA));

  // The uncounted caller is still in flight: its real call may land after the newcomer's.
  forward(state, kStreamS);
  CHECK_FALSE(state.holds(kStreamS));
  CHECK_FALSE(state.holds(kStreamA));
  state.leave(uncounted, kStreamB, true);
}

TEST_CASE("in-flight count saturation: once everyone has left, no stale stream is ever published", "[slot][hostile]") {
  constexpr std::uint64_t kMaxCounted = SlotState::kCountMask >> SlotState::kCountShift;
  SlotState state;
  for (std::uint64_t i = 0; i < kMaxCounted; ++i) REQUIRE(state.enter() == SlotState::Ticket::kCounted);
  const auto uncounted = state.enter();
  REQUIRE(uncounted == SlotState::Ticket::kUncounted);
  for (std::uint64_t i = 0; i < kMaxCounted; ++i) state.leave(SlotState::Ticket::kCounted, kStreamA, true);
  state.leave(uncounted, kStreamB, true);
  // Who reached the backend last is unknown: neither stream may be claimed.
  CHECK_FALSE(state.holds(kStreamA));
  CHECK_FALSE(state.holds(kStreamB));
  CHECK_FALSE(state.holds(0));
}
