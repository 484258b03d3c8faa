// Admission: whether a cache is worth what it costs, for one family of calls on one thread.
//
// A cache of finalized variant packs, of captured graphs or of library answers pays for itself
// only when its entries are used again. A program whose calls never repeat (shapes that vary,
// fresh tensors every step), or repeat less often than the cache can hold them, makes every entry
// an insertion that evicts another one nobody used again: the cache then costs its bookkeeping
// (and a graph capture now and then) on every call and saves nothing. Admission watches the two
// outcomes the cache reports, a hit (an entry used again) and a waste (an entry evicted, or a graph
// forgotten, without a single use), and backs off when wastes outnumber hits HitWeight to one over
// a window of Window outcomes: the calls then skip the cache (the caller runs them as if the
// feature were off), all but one probe in Interval << (level - 1), which goes through the cache as
// before, and (where the caller has the call's key) the calls of the sampled keys from their
// second in a sample on, which do too (sampled_again() below). ProbesToResume probes in a row
// that hit resume admission; as many in a row that miss, or a window after a resume that fails
// again, double the interval (up to MaxLevel).
// Filling free entries is neither: a program's first iteration never backs off, and a call
// repeated every iteration is cached, and captured, exactly as without the rule.
//
// Why two to one: on the H200 a variant pack through the cache costs 0.28 us of the shim's own
// against 0.82 us for the real pack it saves on a hit (docs/gpu-results.md), so the cache pays for
// itself from about one hit in three lookups; a graph pays back its capture only when launched
// again. Below that, the shim does what it would do with the feature off, plus a probe.
//
// The state is a thread's own (no shared write: a thread's calls judge its own cache use), eight
// bytes, zero-initialised: admitting.
#pragma once

#include <cstdint>

namespace cudnn_fastpath::replay {

struct AdmissionState {
  // Admitting: the outcomes of the current window. Backing off (when no window is counted), `hits`
  // is which keys are sampled (sampled() below) and `wastes` the probes by count since it moved.
  std::uint8_t hits = 0;
  std::uint8_t wastes = 0;
  std::uint16_t countdown = 0;    // backing off: calls until the next probe
  std::uint8_t level = 0;         // 0 admitting; n backing off, one probe in Interval << (n - 1)
  std::uint8_t failed = 0;        // the level of the last back-off, kept across a resume
  std::int8_t probe_streak = 0;   // backing off: probes in a row that hit (n > 0) or did not (-n)
  std::uint8_t in_use = 0;        // the thread has asked admit() for this cache (in_use())
};
static_assert(sizeof(AdmissionState) == 8, "eight bytes a cache and thread");

// The sampled keys one cache has seen once in the current sample, a bit per hash (sampled_again()
// below): a thread's own, like its AdmissionState, and written only while the cache backs off.
struct SampledSeen {
  static constexpr unsigned kSeenBits = 256;
  std::uint64_t words[kSeenBits / 64];
  std::uint8_t sample;  // the sample the marks are of (AdmissionState::hits, as sampled() reads it)
};

template <unsigned Window = 64, unsigned HitWeight = 2, unsigned Interval = 64, unsigned MaxLevel = 6,
          unsigned ProbesToResume = 2>
struct AdmissionRule {
  static constexpr unsigned kCallsPerSample = 2048;
  static_assert(Window >= 8 && Window <= 192 && Interval >= 2 && MaxLevel >= 1 && MaxLevel <= 8 &&
                ProbesToResume >= 1 && ProbesToResume <= 127 && (Interval << (MaxLevel - 1)) <= 65535 &&
                (Interval & (Interval - 1)) == 0 && (Interval << (MaxLevel - 1)) <= kCallsPerSample);

  // Whether this call may use the cache: always while admitting; while backing off, the probes
  // by count.
  static bool admit(AdmissionState& s) noexcept {
    s.in_use = 1;
    if (__builtin_expect(s.level == 0, 1)) return true;
    if (--s.countdown != 0) return false;
    s.countdown = interval(s.level);
    // The sample moves on to other keys every kCallsPerSample calls, whatever the level: the
    // probes by count are counted by how many calls each stands for.
    s.wastes = static_cast<std::uint8_t>(s.wastes + (1u << (s.level - 1)));
    if (s.wastes >= kCallsPerSample / Interval) {
      s.wastes = static_cast<std::uint8_t>(s.wastes - kCallsPerSample / Interval);
      ++s.hits;
    }
    return true;
  }

  // admit() for the common calls, where its answer moves nothing that in_use or wants_records()
  // read (so a summary of them needs no update): 1 admitted (admitting, in use), 0 declined
  // (backing off, the next probe two calls away or more: only the countdown moves), -1 for the
  // rest, which admit() answers.
  static int admit_unchanged(AdmissionState& s) noexcept {
    if (s.level == 0 && s.in_use) return 1;
    if (s.level != 0 && s.countdown > 2) {
      --s.countdown;
      return 0;
    }
    return -1;
  }

  // An entry was used again (a cache hit, a graph launched).
  static void hit(AdmissionState& s) noexcept {
    if (s.level != 0) {  // a probe hit: the calls may repeat again
      s.probe_streak = static_cast<std::int8_t>(s.probe_streak > 0 ? s.probe_streak + 1 : 1);
      if (s.probe_streak >= static_cast<int>(ProbesToResume)) s = fresh(s.level);
      return;
    }
    ++s.hits;
    judge(s);
  }

  // An entry was evicted, or its graph forgotten, without a single use (or, `weight` > 1, at a loss
  // of that many wastes: a graph launched fewer times than its capture cost).
  static void waste(AdmissionState& s, unsigned weight = 1) noexcept {
    if (s.level != 0) {  // a probe's miss: still backing off, and longer after a few
      s.probe_streak = static_cast<std::int8_t>(s.probe_streak < 0 ? s.probe_streak - 1 : -1);
      if (s.probe_streak <= -static_cast<int>(ProbesToResume) && s.level < MaxLevel) {
        s.probe_streak = 0;
        s.failed = ++s.level;
        s.countdown = interval(s.level);
      }
      return;
    }
    s.wastes = static_cast<std::uint8_t>(s.wastes + weight);
    judge(s);
  }

  // Backing off, whether the call whose key hashes to `hash` is one of the sampled keys: one key
  // in Interval, picked by bits of the hash that choose no cache set, at every level (the level
  // stretches only the probes by count). A sampled key goes through the cache every time it comes,
  // as while admitting, so it can be captured and launched again; a probe by count seldom can when
  // the program's steady keys are many more than Interval, and a load that warms up on more keys
  // than the cache holds (a training loop's first steps) backs off before its steady keys have
  // come back often enough to hit. The sample moves on every kCallsPerSample calls, long enough
  // for a key that comes every few hundred calls (what a graph cache can hold: 512 keys) to be
  // launched again, and in time every key is sampled: a sample without one of the steady keys
  // (one in 85 for 282 of them) is not for good.
  static bool sampled(const AdmissionState& s, std::uint64_t hash) noexcept {
    return ((hash >> 48) & (Interval - 1u)) == (s.hits & (Interval - 1u));
  }

  // sampled(), from the key's second call in the current sample on: its first only marks it in
  // `seen`. A load whose keys never repeat then pays a bit set for its sampled calls, one in
  // Interval, instead of their way through the cache (a key written, looked up and inserted, some
  // 2,000 instructions); a steady key is captured a call later. `seen` forgets every mark when the
  // sample moves on; two keys that share a bit (at most kCallsPerSample / Interval marks in
  // kSeenBits) let the second through at its first call, as sampled() would.
  static bool sampled_again(const AdmissionState& s, SampledSeen& seen, std::uint64_t hash) noexcept {
    return sampled(s, hash) && seen_before(s, seen, hash);
  }
  // Out of line: one call in Interval gets here, and the declined path that inlines the rest stays
  // as short as sampled() alone left it.
  [[gnu::noinline, gnu::cold]] static bool seen_before(const AdmissionState& s, SampledSeen& seen,
                                                        std::uint64_t hash) noexcept {
    const std::uint8_t sample = static_cast<std::uint8_t>(s.hits & (Interval - 1u));
    if (seen.sample != sample) seen = SampledSeen{{}, sample};
    const unsigned bit = static_cast<unsigned>(hash >> 32) & (SampledSeen::kSeenBits - 1u);  // not sampled()'s bits
    std::uint64_t& word = seen.words[bit / 64];
    const std::uint64_t mask = std::uint64_t{1} << (bit % 64);
    const bool again = (word & mask) != 0;
    word |= mask;
    return again;
  }

  static bool backing_off(const AdmissionState& s) noexcept { return s.level != 0; }

  // Whether what the cache's keys are written from (the records of the objects they read,
  // shim/families/recorded_calls.h) is worth keeping on this thread: the cache is in use and
  // admitting, or its next call is a probe by count. A thread that never asked for it (`in_use`) has
  // no say.
  static bool wants_records(const AdmissionState& s) noexcept {
    return s.in_use && (s.level == 0 || s.countdown == 1);
  }

  // Admitting, remembering that a back-off at level `failed` came before (and that the cache is in
  // use: only its own outcomes make a state fresh).
  static AdmissionState fresh(std::uint8_t failed) noexcept {
    AdmissionState s;
    s.failed = failed;
    s.in_use = 1;
    return s;
  }

 private:
  static std::uint16_t interval(std::uint8_t level) noexcept {
    return static_cast<std::uint16_t>(Interval << (level - 1));
  }

  static void judge(AdmissionState& s) noexcept {
    if (static_cast<unsigned>(s.hits) + s.wastes < Window) return;
    if (static_cast<unsigned>(s.hits) * HitWeight < s.wastes) {
      // Back off one level further than last time: a resume that failed again waits longer.
      const std::uint8_t level = static_cast<std::uint8_t>(s.failed < MaxLevel ? s.failed + 1 : MaxLevel);
      s = fresh(level);
      s.level = level;
      s.countdown = interval(level);
      return;
    }
    s = fresh(0);  // a good window: whatever failed before is forgiven
  }
};

using Admission = AdmissionRule<>;

}  // namespace cudnn_fastpath::replay
