// replay/admission.h on its own: when a cache backs off, how often it probes, when it comes back.
#include "replay/admission.h"

#include <catch2/catch.hpp>

using cudnn_fastpath::replay::AdmissionRule;
using cudnn_fastpath::replay::AdmissionState;

namespace {

using Rule = AdmissionRule<64, 2, 64, 3, 2>;  // probes every 64, 128, 256 calls

// Calls until admit() says yes, the yes included.
int calls_to_next_probe(AdmissionState& s) {
  for (int n = 1; n <= 100000; ++n)
    if (Rule::admit(s)) return n;
  return -1;
}

}  // namespace

TEST_CASE("hits keep a cache admitting, and filling free entries is no outcome at all", "[unit][admission]") {
  AdmissionState s = Rule::fresh(0);
  for (int i = 0; i < 10000; ++i) {
    REQUIRE(Rule::admit(s));
    Rule::hit(s);
  }
  // One waste in three outcomes stays on the good side of two to one.
  for (int i = 0; i < 10000; ++i) {
    REQUIRE(Rule::admit(s));
    if (i % 3 == 0) Rule::waste(s);
    else Rule::hit(s);
  }
  CHECK_FALSE(Rule::backing_off(s));
}

TEST_CASE("a window of wastes backs off: one call in 64 probes, and probes that miss double the interval",
          "[unit][admission]") {
  AdmissionState s = Rule::fresh(0);
  for (int i = 0; i < 63; ++i) Rule::waste(s);
  CHECK_FALSE(Rule::backing_off(s));  // the window is not full yet
  Rule::waste(s);
  REQUIRE(Rule::backing_off(s));
  CHECK(calls_to_next_probe(s) == 64);
  Rule::waste(s);  // the probe missed
  CHECK(calls_to_next_probe(s) == 64);
  Rule::waste(s);  // two in a row: twice as far
  CHECK(calls_to_next_probe(s) == 128);
  Rule::waste(s);
  CHECK(calls_to_next_probe(s) == 128);
  Rule::waste(s);
  CHECK(calls_to_next_probe(s) == 256);
  Rule::waste(s);
  CHECK(calls_to_next_probe(s) == 256);
  Rule::waste(s);
  CHECK(calls_to_next_probe(s) == 256);  // at most MaxLevel
}

TEST_CASE("two probes in a row that hit resume, and a resume that fails again waits longer", "[unit][admission]") {
  AdmissionState s = Rule::fresh(0);
  for (int i = 0; i < 64; ++i) Rule::waste(s);
  REQUIRE(Rule::backing_off(s));
  calls_to_next_probe(s);
  Rule::hit(s);
  CHECK(Rule::backing_off(s));  // one is not enough
  calls_to_next_probe(s);
  Rule::waste(s);
  calls_to_next_probe(s);
  Rule::hit(s);
  CHECK(Rule::backing_off(s));  // not in a row
  calls_to_next_probe(s);
  Rule::hit(s);
  REQUIRE_FALSE(Rule::backing_off(s));
  CHECK(Rule::admit(s));
  for (int i = 0; i < 64; ++i) Rule::waste(s);
  REQUIRE(Rule::backing_off(s));
  CHECK(calls_to_next_probe(s) == 128);  // the second back-off, one level further
}

TEST_CASE("a good window forgives: the next back-off starts at the first level again", "[unit][admission]") {
  AdmissionState s = Rule::fresh(0);
  for (int i = 0; i < 64; ++i) Rule::waste(s);
  calls_to_next_probe(s);
  Rule::hit(s);
  calls_to_next_probe(s);
  Rule::hit(s);
  REQUIRE_FALSE(Rule::backing_off(s));
  for (int i = 0; i < 64; ++i) Rule::hit(s);
  for (int i = 0; i < 64; ++i) Rule::waste(s);
  REQUIRE(Rule::backing_off(s));
  CHECK(calls_to_next_probe(s) == 64);
}

// Watched failing: admit() without its move of the sample (seen == 1: one class of keys, for good).
TEST_CASE("backing off, one key in 64 is sampled, the sample moves on every 2048 calls at any level, and every key gets its turn",
          "[unit][admission]") {
  AdmissionState s = Rule::fresh(0);
  for (int i = 0; i < 64; ++i) Rule::waste(s);
  REQUIRE(Rule::backing_off(s));
  auto key = [](std::uint64_t cls) { return (cls << 48) | 0x1234; };  // the bits sampled() reads, and others
  auto sampled_classes = [&] {
    int n = 0;
    for (std::uint64_t cls = 0; cls < 64; ++cls) n += Rule::sampled(s, key(cls));
    return n;
  };
  std::uint64_t seen = 0;  // the classes sampled at some point
  for (int sample = 0; sample < 64; ++sample) {
    REQUIRE(sampled_classes() == 1);
    for (std::uint64_t cls = 0; cls < 64; ++cls)
      if (Rule::sampled(s, key(cls))) seen |= std::uint64_t{1} << cls;
    for (unsigned call = 0; call < Rule::kCallsPerSample; ++call) Rule::admit(s);
    if (sample == 10) {  // two probes that miss: the next level, the same pace of the sample
      Rule::waste(s);
      Rule::waste(s);
      REQUIRE(Rule::backing_off(s));
    }
  }
  CHECK(seen == ~std::uint64_t{0});
  // Admitting, nothing asks sampled(); a resume starts counting again.
  calls_to_next_probe(s);
  Rule::hit(s);
  calls_to_next_probe(s);
  Rule::hit(s);
  CHECK_FALSE(Rule::backing_off(s));
}

// Watched failing: sampled_again() answering sampled() (a never-repeating key through the cache at
// its first call).
TEST_CASE("backing off, a sampled key goes through the cache from its second call in the sample, and the marks go when the sample moves",
          "[unit][admission]") {
  using cudnn_fastpath::replay::SampledSeen;
  AdmissionState s = Rule::fresh(0);
  for (int i = 0; i < 64; ++i) Rule::waste(s);
  REQUIRE(Rule::backing_off(s));
  SampledSeen seen{};
  // The sampled class of keys now, and one key of it per filter bit (bits 32 and up of its hash).
  std::uint64_t cls = 0;
  while (!Rule::sampled(s, cls << 48)) ++cls;
  auto key = [&](std::uint64_t bit) { return (cls << 48) | (bit << 32) | 0x77; };
  for (std::uint64_t bit = 0; bit < SampledSeen::kSeenBits; ++bit) {
    REQUIRE_FALSE(Rule::sampled_again(s, seen, key(bit)));  // its first call: marked only
    REQUIRE(Rule::sampled_again(s, seen, key(bit)));        // its second: through the cache
    REQUIRE(Rule::sampled_again(s, seen, key(bit)));
  }
  // A key of another class is never let through, however often it comes.
  const std::uint64_t other = ((cls + 1) % 64) << 48;
  for (int i = 0; i < 4; ++i) CHECK_FALSE(Rule::sampled_again(s, seen, other));
  // The sample moves on: the marks of the last one are gone, for its keys when sampled again.
  for (unsigned call = 0; call < Rule::kCallsPerSample; ++call) Rule::admit(s);
  REQUIRE_FALSE(Rule::sampled(s, key(0)));
  std::uint64_t next = 0;
  while (!Rule::sampled(s, next << 48)) ++next;
  CHECK_FALSE(Rule::sampled_again(s, seen, (next << 48) | (std::uint64_t{5} << 32)));
  CHECK(Rule::sampled_again(s, seen, (next << 48) | (std::uint64_t{5} << 32)));
  for (int sample = 0; sample < 63; ++sample)
    for (unsigned call = 0; call < Rule::kCallsPerSample; ++call) Rule::admit(s);
  REQUIRE(Rule::sampled(s, key(0)));  // the first sample's class again, 64 samples on
  CHECK_FALSE(Rule::sampled_again(s, seen, key(0)));
}
