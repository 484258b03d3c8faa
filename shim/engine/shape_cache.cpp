// Replay by call shape (shape_cache.h).
#include "shim/engine/shape_cache.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <new>

#include "replay/graph_capture.h"
#include "replay/graph_relocation.h"
#include "shim/libraries/mode.h"
#include "shim/process/config.h"
#include "shim/process/lifecycle.h"
#include "shim/process/log.h"

namespace cudnn_fastpath::shim {
namespace {

using replay::GraphCopy;
using replay::GraphDriver;
using replay::Phase;
using replay::Relocation;
using replay::Released;

constexpr int kMaxTensors = replay::kMaxTensors;
static_assert(Key::kMaxTensors == kMaxTensors, "a key marks as many tensors as a relocation follows");
// Pairs of captures whose tensors moved alike, tried before a shape is given up.
constexpr std::uint8_t kMaxAmbiguous = 3;
// Proofs made again because a tensor the last one did not see move has moved, before such calls go
// by pointer for good. A decode step's key and value projections read one input, each with a weight
// of its own: the first proof may be of such a pair (the input unproven), the next pair moves it.
constexpr std::uint8_t kMaxProofsAgain = 2;
// A proven shape's next calls are a trial: relocated and direct in turn, this many of each, timed.
// A shape whose relocated calls took no less host time than its direct ones (the least of each)
// stops relocating: a launch after a node update may cost more than a library's call (the driver's
// update and launch 2.8 to 3.8 us on an H100 in run 89, a legacy batch norm 3.5 to 4.7 us direct
// in runs 92 and 93). A relocated call is timed from its hold of the shape on (the driver's
// questions, the checks, the update and the launch), a direct one around the library's call: the
// key and the look-up of the shape, which a shape given up still pays, are left out of both.
constexpr std::uint8_t kTrialPairs = 3;

GraphCache g_shapes[kFamilies];

// In a forked child only the forking thread exists: its shapes' graphs are the parent's (dropped,
// never destroyed). Registered before the first shape is captured.
void forget_shapes_in_child() {
  for (GraphCache& cache : g_shapes) cache.forget_in_child();
}
ForkChildReset g_fork_reset{forget_shapes_in_child};

// What a shape's entry keeps besides its executable graph (Entry::extra, malloc'd): the graph it
// came from (its nodes are what relocation updates), and either the first capture's nodes and
// tensors while the shape is learnt, or the proof.
struct Shape {
  CUgraph graph = nullptr;
  GraphCopy* first = nullptr;
  std::uint64_t first_tensors[kMaxTensors] = {};
  Relocation* relocation = nullptr;
  std::uint8_t ambiguous = 0;
  std::uint8_t proofs_again = 0;
  // The trial (kTrialPairs): calls timed so far, and the least host time of each kind, in ns.
  std::uint8_t trial_calls = 0;
  std::uint64_t least_relocated = UINT64_MAX, least_direct = UINT64_MAX;
};

// Host time for the trial: the clock of the driver's model where it has one (the test stubs', whose
// calls advance it by what they would cost: a trial's verdict is then the same in every run), else
// the monotonic clock.
std::uint64_t host_ns(const RealSymbols& driver) {
  if (driver.cudnn_fastpath_model_clock_ns != nullptr) return driver.cudnn_fastpath_model_clock_ns();
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count());
}

Shape* new_shape() {
  void* memory = std::calloc(1, sizeof(Shape));
  return memory != nullptr ? new (memory) Shape : nullptr;
}

void free_shape(Shape* s, const GraphDriver& driver) {
  if (s == nullptr) return;
  if (s->graph != nullptr) driver.cuGraphDestroy(s->graph);
  replay::free_copy(s->first);
  Relocation::destroy(s->relocation);
  std::free(s);
}

// An entry's graph and what it kept with it, let go of.
void destroy_shape(const Released& r) {
  if (r.library == 0) return;
  const GraphDriver& driver = driver_of(r.library);
  if (r.graph != nullptr) replay::destroy_graph(driver, static_cast<CUgraphExec>(r.graph));
  free_shape(static_cast<Shape*>(r.extra), driver);
}

bool relocation_possible(const GraphDriver& d) {
  return d.cuGraphGetNodes && d.cuGraphNodeGetType && d.cuGraphKernelNodeGetParams_v2 &&
         d.cuGraphExecKernelNodeSetParams_v2 && (d.cuFuncGetParamInfo || d.cuKernelGetParamInfo);
}

// The shape of `key` on `stream` into `shape`, and the call's tensors into `tensors`. A tensor's
// class: which earlier tensor of the call it is, if any; its alignment up to 256 bytes (a library
// may choose its kernel by it: larger ones are the relocation's to check); and its high 32 bits, so
// that a shape's tensors never leave the 4 GiB region its proof saw (graph_relocation.h).
void shape_of(const Key& key, CUstream stream, Key& shape, std::uint64_t (&tensors)[kMaxTensors]) {
  shape.length = key.length;
  std::memcpy(shape.words, key.words, key.length * sizeof key.words[0]);
  const int count = key.tensor_count;
  for (int i = 0; i < count; ++i) {
    const std::uint64_t address = key.words[key.tensor_at[i]];
    tensors[i] = address;
    int same = i;
    for (int j = 0; j < i; ++j)
      if (tensors[j] == address) same = j, j = i;
    const std::uint64_t alignment = address == 0 ? 64 : static_cast<std::uint64_t>(__builtin_ctzll(address));
    // Address 0 stays itself; any other address becomes its class: bit 63 is no address's.
    shape.words[key.tensor_at[i]] = address == 0 ? 0
                                                 : (std::uint64_t{1} << 63) | (address >> 32) << 16 |
                                                       std::uint64_t(same) << 8 | (alignment < 8 ? alignment : 8);
  }
  shape.tensor_count = key.tensor_count;
  shape.add_pointer(stream);
}

bool same_tensors(const std::uint64_t* a, const std::uint64_t* b, int count) {
  for (int i = 0; i < count; ++i)
    if (a[i] != b[i]) return false;
  return true;
}

__attribute__((cold)) void say(Family family, const char* what, const char* why) {
  if (config().verbose) log_line("relocation of %s: %s (%s)", noun_of(family), what, why);
}

// Everything below runs with the entry in kCapturing, held by this thread alone; it ends in
// publish(): kReady (the shape's graph is good), or kNever (its calls go by pointer).
struct Held {
  GraphCache::Entry& e;
  const ReplayCall& call;
  std::uint32_t m;
  ReplayThread& t;
  const Binding& binding;
  const std::uint64_t* tensors;
  int named;  // tensors
  Admitting admitting;
  Outcome refused = Outcome::kCount;  // why capture() made none (capture_call's refusal), if it said
  std::uint64_t trial_start = 0;      // host time when the held call began, for the trial (relocate())
  bool judged() const { return admitting == Admitting::kJudged; }
  // The last capture was refused because the program's stream is capturing its own graph (at the
  // learning call, which asks nothing before it; or a capture begun since the question before a
  // launch: another thread's global capture, the call on the legacy stream). The shape is not at
  // fault: it waits, as a key does (capture_and_launch).
  bool program_captured() const { return refused == Outcome::kCapturing; }

  const GraphDriver& driver() const { return binding.real; }
  std::uint64_t now() const { return host_ns(binding.real); }
  Shape* shape() const { return static_cast<Shape*>(e.extra.load(std::memory_order_relaxed)); }
  CUgraphExec exec() const { return static_cast<CUgraphExec>(e.graph.load(std::memory_order_relaxed)); }

  // The shape is given up (`why`: the counter that says so): its calls go by pointer. Its graph and
  // state go now, and its captures weigh as an evicted graph's would (the cache sees no graph left
  // to weigh).
  void give_up(Counter why = Counter::relocations_refused) {
    if (counting()) count(why);
    if (judged()) {
      const Released spent{e.graph.load(std::memory_order_relaxed), 1, e.launches.load(std::memory_order_relaxed)};
      if (const unsigned waste = waste_of(call.family, spent); waste != 0) t.admissions.waste(admitted_of(call.family), waste);
    }
    Released r{e.graph.exchange(nullptr, std::memory_order_relaxed), reinterpret_cast<std::uintptr_t>(&binding), 0,
               false, e.extra.exchange(nullptr, std::memory_order_relaxed)};
    destroy_shape(r);
    e.publish(Phase::kNever);
  }
  bool counting() const { return (m & mode::kCounting) != 0; }

  // Launches `exec` for the call; `again`: the shape's graph launched again (the rule's hit).
  int launch(CUgraphExec exec, bool again) {
    return shim::launch(driver(), exec, call, m, t, again ? &e : nullptr, admitting);
  }

  // A capture of the call, its graph kept and read; false (and nothing kept) when either failed.
  bool capture(replay::Captured& captured, GraphCopy*& copy) {
    // A call's host bytes (a pack's by-value tensors) are learnt into the entry: every capture of a
    // shape is made with the bytes its first had (replay_by_shape compares them before any).
    const CallCapture c = capture_call(call, t, binding, call.learn_host_bytes != nullptr ? &e : nullptr, true);
    refused = c.refusal;
    if (c.captured.exec == nullptr) return false;
    const char* why = nullptr;
    copy = replay::read_graph(driver(), c.captured.graph, c.context, &why);
    captured = c.captured;
    if (copy == nullptr) {
      say(call.family, "a graph that cannot be read", why);
      replay::destroy_graph(driver(), captured.exec);
      driver().cuGraphDestroy(captured.graph);
      return false;
    }
    e.context.store(c.context, std::memory_order_relaxed);
    return true;
  }
};

// A capture given up: its nodes' copy, its executable graph and its graph.
void discard(const Held& h, const replay::Captured& captured, GraphCopy* copy) {
  replay::free_copy(copy);
  replay::destroy_graph(h.driver(), captured.exec);
  h.driver().cuGraphDestroy(captured.graph);
}

// A proof made of `captured`: its graph is the shape's from now on, the old one destroyed (a graph
// destroyed while it runs is freed when it completes) with the first capture's copy or the old proof.
void adopt(Held& h, const replay::Captured& captured, Relocation* proof) {
  Shape* s = h.shape();
  replay::destroy_graph(h.driver(), h.exec());
  h.driver().cuGraphDestroy(s->graph);
  replay::free_copy(s->first);
  s->first = nullptr;
  Relocation::destroy(s->relocation);
  s->graph = captured.graph;
  s->relocation = proof;
  h.e.graph.store(captured.exec, std::memory_order_relaxed);
  if (h.counting()) count(Counter::relocations_proven);
}

// The first capture of a shape: kept, with its nodes and tensors, for the proof.
bool learn_first(Held& h, int& status) {
  g_fork_reset.register_once();  // before the first shape's graph exists
  Shape* s = new_shape();
  replay::Captured captured;
  if (s == nullptr || !h.capture(captured, s->first)) {
    std::free(s);
    h.e.publish(h.program_captured() ? Phase::kCounting : Phase::kNever);
    return false;
  }
  s->graph = captured.graph;
  std::memcpy(s->first_tensors, h.tensors, sizeof(std::uint64_t) * h.named);
  h.e.library.store(reinterpret_cast<std::uintptr_t>(&h.binding), std::memory_order_relaxed);
  h.e.graph.store(captured.exec, std::memory_order_relaxed);
  h.e.extra.store(s, std::memory_order_relaxed);
  count_outcome(h.m, h.call.family, Outcome::kCaptured);
  if (h.counting()) count(Counter::relocation_shapes);
  status = h.launch(captured.exec, false);
  h.e.publish(Phase::kReady);
  return true;
}

// A call of a shape being learnt with other tensors: captured too, and the two compared.
bool learn_second(Held& h, int& status) {
  Shape* s = h.shape();
  replay::Captured captured;
  GraphCopy* copy = nullptr;
  if (!h.capture(captured, copy)) {
    if (h.program_captured()) h.e.publish(Phase::kReady);  // its first capture kept for the next call
    else h.give_up();
    return false;
  }
  count_outcome(h.m, h.call.family, Outcome::kCaptured);
  const char* why = nullptr;
  bool ambiguous = false;
  Relocation* r = Relocation::prove(*s->first, s->first_tensors, copy, h.tensors, h.named, &why, &ambiguous);
  // The capture ran nothing: its graph does this call's work, kept or not (a graph destroyed while
  // it runs is freed when it completes).
  status = h.launch(captured.exec, false);
  if (r == nullptr) {
    discard(h, captured, copy);
    if (ambiguous && ++s->ambiguous < kMaxAmbiguous) {
      h.e.publish(Phase::kReady);
    } else {
      say(h.call.family, "a shape replayed by pointer", why);
      h.give_up();
    }
    return true;
  }
  adopt(h, captured, r);
  h.e.publish(Phase::kReady);
  return true;
}

// A call of a proven shape in which a tensor the proof did not see move has moved: captured, and
// proven again against the kept graph as it is now (Relocation::graph(), at applied()), whose
// tensors this call's moved from. Proven, the new graph and proof replace the old; not, the old
// stay. The call ran as the fresh capture's launch either way; past kMaxProofsAgain, or when no
// capture could be made, it goes by pointer.
CUDNN_FASTPATH_COLD bool prove_again(Held& h, int& status) {
  Shape* s = h.shape();
  if (s->proofs_again == kMaxProofsAgain) {  // by pointer
    h.e.publish(Phase::kReady);
    return false;
  }
  ++s->proofs_again;
  replay::Captured captured;
  GraphCopy* copy = nullptr;
  if (!h.capture(captured, copy)) {
    h.e.publish(Phase::kReady);
    return false;
  }
  count_outcome(h.m, h.call.family, Outcome::kCaptured);
  if (h.counting()) count(Counter::relocation_reproofs);
  std::uint64_t applied[kMaxTensors];
  s->relocation->applied(applied);
  const char* why = nullptr;
  bool ambiguous = false;
  Relocation* r = Relocation::prove(s->relocation->graph(), applied, copy, h.tensors, h.named, &why, &ambiguous);
  status = h.launch(captured.exec, false);
  if (r == nullptr) {
    discard(h, captured, copy);
    say(h.call.family, "a shape kept its proof", why);
  } else {
    adopt(h, captured, r);
  }
  h.e.publish(Phase::kReady);
  return true;
}

// The relocation checked against a fresh capture of the call (the words' candidates narrowed to
// those it agrees with first): kSame, kDiffers (`d` says where), kWrong (a word none of its
// candidates explains: the relocation cannot be right), or kNoCapture.
enum class Check { kSame, kDiffers, kWrong, kNoCapture };
Check check_against_fresh(Held& h, Relocation& r, Relocation::Difference& d) {
  replay::Captured fresh;
  GraphCopy* copy = nullptr;
  if (!h.capture(fresh, copy)) return Check::kNoCapture;
  Check verdict = Check::kWrong;
  if (r.resolve(*copy, h.tensors)) verdict = r.matches(*copy, h.tensors, &d) ? Check::kSame : Check::kDiffers;
  discard(h, fresh, copy);
  return verdict;
}

__attribute__((cold)) void say_mismatch(const Held& h, const Relocation& r, const Relocation::Difference& d) {
  log_line("verify: the relocated graph of %s differs from a fresh capture of the call (node %d, %s %u: "
           "0x%llx relocated, 0x%llx fresh%s); its shape is replayed by pointer from now on",
           noun_of(h.call.family), d.node, d.offset == Relocation::Difference::kLaunch ? "launch" : "argument byte",
           d.offset == Relocation::Difference::kLaunch ? 0u : unsigned{d.offset},
           static_cast<unsigned long long>(d.expected), static_cast<unsigned long long>(d.fresh),
           d.patched ? ", a rewritten word" : "");
  if (config().verbose)
    for (int i = 0; i < h.named; ++i)
      log_line("verify:   tensor %d: 0x%llx at the proof, 0x%llx now%s", i,
               static_cast<unsigned long long>(r.base()[i]), static_cast<unsigned long long>(h.tensors[i]),
               r.proven(i) ? "" : " (unproven)");
}

// Which alignments a check refused, and where its fresh capture differed (--verbose): what decides
// whether a library chose another kernel by alignment or something else followed the address.
__attribute__((cold)) void say_refused_alignment(const Held& h, std::uint32_t outside,
                                                 const Relocation::Difference& d) {
  for (int i = 0; i < h.named; ++i)
    if ((outside >> i) & 1)
      log_line("relocation of %s: tensor %d at 0x%llx (%d trailing zero bits) is of an alignment that calls now go "
               "by pointer for: a fresh capture differed at node %d, %s %u (0x%llx relocated, 0x%llx fresh)",
               noun_of(h.call.family), i, static_cast<unsigned long long>(h.tensors[i]),
               __builtin_ctzll(h.tensors[i] | (1ull << 63)),
               d.node, d.offset == Relocation::Difference::kLaunch ? "launch" : "argument byte",
               d.offset == Relocation::Difference::kLaunch ? 0u : unsigned{d.offset},
               static_cast<unsigned long long>(d.expected), static_cast<unsigned long long>(d.fresh));
}

__attribute__((cold)) void say_verdict(const Held& h, const Shape& s, bool saves) {
  log_line("relocation of %s: a shape %s (its relocated calls took %llu ns of host time, its direct calls %llu: "
           "the least of %d each)",
           noun_of(h.call.family), saves ? "relocated" : "replayed by pointer",
           static_cast<unsigned long long>(s.least_relocated), static_cast<unsigned long long>(s.least_direct),
           int{kTrialPairs});
}

// One of the trial's direct calls (relocate()), timed; after the last, the verdict: a shape whose
// relocated calls did not take less host time than its direct ones is given up. The call is the
// shape's (taken): its key and the admission rule count it as they count a relocated one.
bool trial_direct(Held& h, int& status) {
  Shape& s = *h.shape();
  const std::uint64_t start = h.now();
  status = run_direct(h.call, h.m);
  s.least_direct = std::min(s.least_direct, h.now() - start);
  if (++s.trial_calls < 2 * kTrialPairs) {
    h.e.publish(Phase::kReady);
    return true;
  }
  const bool saves = s.least_relocated < s.least_direct;
  if (config().verbose) say_verdict(h, s, saves);
  if (saves) h.e.publish(Phase::kReady);
  else h.give_up(Counter::relocations_unprofitable);
  return true;
}

// A call of a proven shape: its graph pointed at the call's tensors and launched; during its
// trial (kTrialPairs), every other call runs directly instead, both timed.
bool relocate(Held& h, int& status) {
  Relocation& r = *h.shape()->relocation;
  auto by_pointer = [&] {
    h.e.publish(Phase::kReady);
    return false;
  };
  for (int i = 0; i < h.named; ++i)
    if (!r.proven(i) && h.tensors[i] != r.base()[i])  // an unproven tensor moved
      return prove_again(h, status);
  // What only a fresh capture of this call can tell, asked once: which of a word's candidates it
  // follows (they moved apart), whether an alignment the proof did not see chooses the same kernel
  // (a match widens what is proven, a difference refuses that alignment), and in verify mode
  // whether the relocation is right at all.
  std::uint32_t refused = 0;
  const std::uint32_t outside = r.unproven_alignments(h.tensors, &refused);
  if (refused != 0) return by_pointer();
  const bool verify = config().verify;
  const bool checked = outside != 0 || verify || r.unresolved(h.tensors);
  if (checked) {
    if (!verify && h.counting()) count(Counter::relocation_checks);
    Relocation::Difference d;
    switch (check_against_fresh(h, r, d)) {
      case Check::kNoCapture:
        return by_pointer();
      case Check::kSame:
        if (outside != 0) r.widen_alignments(h.tensors);
        break;
      case Check::kDiffers:
        if (outside != 0) {  // the library chose by an alignment the proof did not see
          r.refuse_alignments(h.tensors, outside);
          if (config().verbose) say_refused_alignment(h, outside, d);
          return by_pointer();
        }
        [[fallthrough]];
      case Check::kWrong:
        if (verify) {
          if (h.counting()) count(Counter::relocation_mismatches);
          say_mismatch(h, r, d);
        } else {
          say(h.call.family, "a shape replayed by pointer", "a fresh capture followed no candidate of a word");
        }
        h.give_up();
        return false;
    }
  }
  // The trial times calls that made no capture (verify mode's calls all make one, so it runs no
  // trial), and of the relocated ones only those that updated a node and launched: a call whose
  // tensors are those of the last launch is a plain launch, which a load whose tensors alternate
  // would meet at every relocated call of the trial and at none after it.
  Shape& s = *h.shape();
  const bool trial = !checked && s.trial_calls < 2 * kTrialPairs;
  if (trial && s.trial_calls % 2 == 1) return trial_direct(h, status);
  const std::uint64_t updates = r.updates();
  switch (r.apply(h.driver(), h.exec(), h.tensors)) {
    case Relocation::Applied::kApplied:
      break;
    case Relocation::Applied::kDeclined:  // a word would change its high half: by pointer
      return by_pointer();
    case Relocation::Applied::kFailed:
      say(h.call.family, "an update failed", "the shape is replayed by pointer");
      h.give_up();
      return false;
  }
  if (h.counting()) {
    count(Counter::relocated);
    count(Counter::relocation_updates, r.updates() - updates);
  }
  status = h.launch(h.exec(), true);
  if (trial && r.updates() != updates && status == 0) {
    s.least_relocated = std::min(s.least_relocated, h.now() - h.trial_start);
    ++s.trial_calls;
  }
  h.e.publish(Phase::kReady);
  return true;
}

}  // namespace

bool replay_by_shape(const Key& key, const ReplayCall& call, std::uint32_t m, ReplayThread& t, Admitting admitting,
                     int& status) noexcept {
  const bool judged = admitting == Admitting::kJudged;
  if (key.tensor_count == 0 || t.capturing || !config().relocate) return false;
  const Binding* binding = driver_for(call.caller);
  if (binding == nullptr || !relocation_possible(binding->real)) return false;
  Key shape;
  std::uint64_t tensors[kMaxTensors];
  shape_of(key, call.stream, shape, tensors);
  if (!shape.complete) return false;
  const std::uint64_t hash = shape.hash();
  GraphCache& cache = g_shapes[static_cast<int>(call.family)];
  Released evicted;
  GraphCache::Lease lease = cache.acquire(shape, hash);
  if (!lease && admitting != Admitting::kShaped) lease = cache.insert(shape, hash, evicted);  // the handle is noted: the engine's insert did
  if (evicted.entry) {
    destroy_shape(evicted);
    // Only a shape's graph that did not repay its captures weighs: a shape evicted before its first
    // capture is a key the engine's own cache counted already.
    if (const unsigned waste = waste_of(call.family, evicted); waste != 0 && evicted.graph != nullptr && judged)
      t.admissions.waste(admitted_of(call.family), waste);
  }
  if (!lease) return false;
  GraphCache::Entry& e = cache.entry(lease);
  Held h{e, call, m, t, *binding, tensors, key.tensor_count, admitting};
  bool taken = false;
  switch (e.current_phase()) {
    case Phase::kCounting:
      // A shape is learnt at its config().shape_calls-th call (CUDNN_FASTPATH_SHAPE_CALLS, 16 unless
      // set), not at its third as a key is captured. Learning costs two captures, their graphs read
      // and compared (some 100 us of host time on an H200 for a strided-batched GEMM), and a relocated
      // call saves about 5 us against a direct one: a shape repays its learning after some 20
      // relocated calls. A shape that comes in a burst and never again (a decode step's attention
      // GEMMs, one per layer at a KV length the next step leaves behind) must not be learnt: at its
      // third call an 8-layer decode loop learnt both its shapes every step and ran 12.4% slower
      // (H200, run 80: 4 captures, 12 relocated launches and 4 direct calls a step). A shape that has
      // come this often is likely to come as often again; one that lives on (a Linear's one row in
      // generation, a conv layer fed fresh activations) pays its first calls direct, once.
      // A call of a shape still counting asks the driver nothing (cuStreamIsCapturing, 83 ns a call
      // on an H100, run 83): whether the program's stream captures its own graph is the capture's
      // question (capture_call), and a learning call inside such a capture leaves the shape
      // counting (learn_first). The price: calls made inside the program's capture count, and take
      // an entry (which may evict a learnt shape, its graphs destroyed then, as the pointer cache's
      // insert does), though the program's graph replays them without the shim; a shape called
      // mostly there is learnt at its first call outside, which costs its two captures once.
      // Relaxed: a count, as the engine's.
      if (e.executes.fetch_add(1, std::memory_order_relaxed) + 1 >= config().shape_calls &&
          e.begin_capture(Phase::kCounting))
        taken = learn_first(h, status);
      break;
    case Phase::kReady: {
      if (!e.begin_capture(Phase::kReady)) break;  // another thread holds it: by pointer
      // A relocated call of a shape on trial is timed from here: what follows is relocation's
      // own work (the calls of a shape given up go by pointer at kNever, before any of it). The
      // trial's direct calls (its odd ones) are timed around the library's call alone.
      const Shape& s = *h.shape();
      if (s.relocation != nullptr && s.trial_calls < 2 * kTrialPairs && s.trial_calls % 2 == 0)
        h.trial_start = h.now();
      if (replay::capturing(binding->real, call.stream) ||  // the program's own capture
          !replay::in_context(binding->real, call.stream, static_cast<CUcontext>(e.context.load(std::memory_order_relaxed))) ||
          (call.same_host_bytes != nullptr && !call.same_host_bytes(call.context, e))) {  // bytes it did not bake in
        e.publish(Phase::kReady);  // by pointer
        break;
      }
      if (s.relocation != nullptr) {
        taken = relocate(h, status);
      } else if (same_tensors(tensors, h.shape()->first_tensors, h.named)) {
        status = h.launch(h.exec(), true);
        e.publish(Phase::kReady);
        taken = true;
      } else {
        taken = learn_second(h, status);
      }
      break;
    }
    default:  // kNever: by pointer; kCapturing: another thread's
      break;
  }
  Released released;
  cache.release(lease, released);
  destroy_shape(released);
  return taken;
}

void forget_shapes_with_word(Family family, std::uint32_t word, std::uint64_t value) noexcept {
  g_shapes[static_cast<int>(family)].forget_if(
      [word, value](const GraphCache::StoredKey& k) { return k.length() > word && k[word] == value; },
      [](const Released& r) { destroy_shape(r); });
}

void forget_all_shapes(Family family) noexcept {
  g_shapes[static_cast<int>(family)].forget_if([](const GraphCache::StoredKey&) { return true; },
                                               [](const Released& r) { destroy_shape(r); });
}

}  // namespace cudnn_fastpath::shim
