// The replay engine (replay_engine.h): capture, launch, and the rules that say direct.
#include "shim/engine/replay_engine.h"

#include <dlfcn.h>

#include <atomic>

#include "replay/graph_capture.h"
#include "replay/seen_filter.h"
#include "shim/engine/engine_parts.h"
#include "shim/engine/shape_replay.h"
#include "shim/libraries/callers.h"
#include "shim/libraries/mode.h"
#include "shim/process/config.h"
#include "shim/process/lifecycle.h"
#include "shim/process/log.h"

namespace cudnn_fastpath::shim {
namespace {

using replay::GraphDriver;
using replay::Phase;
using replay::Released;

constexpr std::uint8_t kMaxRecaptures = 3;

GraphCache g_graphs[kFamilies];

// What each family's row says (CUDNN_FASTPATH_REPLAY_FAMILIES).
struct FamilyFacts {
  const char* noun;     // one of its calls, in messages
  unsigned feature;     // the CUDNN_FASTPATH_FEATURE_* bit that switches it
  HandleOwner handle;   // whose handle is the first word of its keys
  std::uint8_t capture_cost;  // launches that repay a capture
  Counter outcomes[static_cast<int>(Outcome::kCount)];  // its counter of each outcome
};
// The counters of a prefixed family are CUDNN_FASTPATH_REPLAY_COUNTERS, in Outcome's order; an own
// family's are listed here (the backend execute's, which came before the families had a list).
#define CUDNN_FASTPATH_OUTCOMES_prefixed(name)                                                          \
  {Counter::name##_direct, Counter::name##_captured, Counter::name##_launches,                         \
   Counter::name##_refused_capturing, Counter::name##_refused_context, Counter::name##_refused_failed, \
   Counter::name##_refused_full, Counter::name##_unknown, Counter::name##_declined}
#define CUDNN_FASTPATH_OUTCOMES_own(name) kOwnOutcomes_##name
#define kOwnOutcomes_backend                                                                    \
  {Counter::direct_executes, Counter::graphs_captured, Counter::graph_launches,               \
   Counter::graph_refusals_capturing, Counter::graph_refusals_context, Counter::graph_refusals_failed, \
   Counter::graph_refusals_full, Counter::graph_refusals_host_pointer, Counter::graphs_declined}
constexpr FamilyFacts kFacts[kFamilies] = {
#define CUDNN_FASTPATH_FAMILY_FACTS(C, name, group, feature, noun, handle, capture_cost, counters) \
  {noun, CUDNN_FASTPATH_FEATURE_##feature, HandleOwner::handle, capture_cost, CUDNN_FASTPATH_OUTCOMES_##counters(name)},
    CUDNN_FASTPATH_REPLAY_FAMILIES(CUDNN_FASTPATH_FAMILY_FACTS, )
#undef CUDNN_FASTPATH_FAMILY_FACTS
};
#undef kOwnOutcomes_backend
#undef CUDNN_FASTPATH_OUTCOMES_own
#undef CUDNN_FASTPATH_OUTCOMES_prefixed

const FamilyFacts& facts(Family family) { return kFacts[static_cast<int>(family)]; }

// The handles that ever headed a key of each family: a destroyed handle that never did costs a
// load, not a pass over the cache.
replay::SeenFilter g_seen_handles[kFamilies];

// In a forked child only the forking thread exists, and the parent's graphs and capture streams
// belong to its CUDA context: the entries are dropped (not destroyed) and every thread's streams
// forgotten (their generation moves on). Registered before the first capture.
std::atomic<std::uint32_t> g_fork_generation{0};  // relaxed: changed only in a forked child
void forget_in_child() {
  for (GraphCache& cache : g_graphs) cache.forget_in_child();
  forget_shapes_in_child();
  g_fork_generation.store(g_fork_generation.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
}
ForkChildReset g_fork_reset{forget_in_child};

bool counting(std::uint32_t m) { return (m & mode::kCounting) != 0; }


static_assert(static_cast<int>(Admitted::backend) == kFirstAdmittedFamily && static_cast<int>(Family::backend) == 0,
              "a family's admission state is at its place after the pack cache's");

// ---- the driver --------------------------------------------------------------------------------

// Whether libcuda is loaded at all: asked before resolving the driver for a caller, so that a
// program (a test) with no driver gets no "cannot find" message from the resolver. Relaxed: once
// loaded the driver stays (it is never unloaded), and a stale false only costs another probe.
std::atomic<bool> g_driver_loaded{false};


// The thread's capture stream in `context`, made in it if need be; null if none can be made. A
// thread that captures in more contexts than it keeps streams for destroys the oldest: a stream is
// used only between the begin and the end of a capture on this thread, so no work is left on it.
// (One thread driving three devices in turn made a stream per capture until the driver ran out.)
CUstream capture_stream(ReplayThread& t, const Binding& binding, CUcontext context) noexcept {
  const std::uint32_t generation = g_fork_generation.load(std::memory_order_relaxed);
  if (t.stream_generation != generation) {  // the parent's: dropped, not destroyed
    for (int i = 0; i < ReplayThread::kContexts; ++i) t.capture[i] = {};
    t.stream_generation = generation;
  }
  for (const ReplayThread::CaptureStream& c : t.capture)
    if (c.stream != nullptr && c.context == context) return c.stream;
  const CUstream made = replay::make_capture_stream(binding.real, context);
  if (made == nullptr) return nullptr;
  ReplayThread::CaptureStream& oldest = t.capture[t.next_stream++ % ReplayThread::kContexts];
  if (oldest.stream != nullptr) {
    const auto& maker = *static_cast<const Binding*>(oldest.maker);
    // The driver's own destroy, not the shim's: no handle of the program holds this stream.
    if (maker.real.cuStreamDestroy_v2 != nullptr) maker.real.cuStreamDestroy_v2(oldest.stream);
  }
  oldest = {context, made, &binding};
  return made;
}

// A call's run under the shim's capture: whatever the library calls from there is its own business.
struct CapturedRun {
  const ReplayCall& call;
  ReplayThread& t;
  static int run(void* context, CUstream on) {
    auto& r = *static_cast<CapturedRun*>(context);
    r.t.capturing = true;
    const int status = r.call.run(r.call.context, on);
    r.t.capturing = false;
    return status;
  }
};

__attribute__((cold)) void say_failure(Family family, const char* what, int code) noexcept {
  if (config().verbose)
    log_line("graph replay: %s of %s failed (%d); that call runs directly from now on", what, facts(family).noun, code);
}

// `again`: a launch of a graph captured before, not the first one right after its capture (only a
// launch again pays back a capture: the admission rule's hit).
int launch_graph(const GraphDriver& driver, GraphCache::Entry& e, const ReplayCall& call, std::uint32_t m,
                 ReplayThread& t, bool again) noexcept {
  if (!replay::launch_graph(driver, static_cast<CUgraphExec>(e.graph.load(std::memory_order_relaxed)), call.stream))
    return call.launch_failed;
  if (again) {
    e.note_launch();
    t.admissions.hit(admitted_of(call.family));
  }
  count_outcome(m, call.family, Outcome::kLaunch);
  return 0;
}

}  // namespace

// What an entry the cache evicted costs the admission rule, in wastes (a launch again, its hit,
// weighs two: replay/admission.h): none when its graph was launched again at least as often as a
// capture of its family costs; one for an entry never captured (a key seen once or twice); twice the
// capture's cost for a graph launched fewer times (a capture counts as capture_cost launches).
unsigned waste_of(Family family, const Released& r) noexcept {
  const unsigned cost = facts(family).capture_cost;
  if (r.graph == nullptr) return 1;
  return r.launches >= cost ? 0 : 2 * cost;
}

void count_outcome(std::uint32_t m, Family family, Outcome outcome) noexcept {
  if (counting(m)) count(counter_of(family, outcome));
}

const GraphDriver& driver_of(std::uintptr_t library) noexcept { return reinterpret_cast<const Binding*>(library)->real; }

const char* noun_of(Family family) noexcept { return facts(family).noun; }


CallCapture capture_call(const ReplayCall& call, ReplayThread& t, const Binding& binding, HostBytes* host_bytes,
                         bool keep_graph) noexcept {
  g_fork_reset.register_once();  // before the first graph exists
  CallCapture out;
  const GraphDriver& driver = binding.real;
  if (replay::capturing(driver, call.stream)) return out.refusal = Outcome::kCapturing, out;
  out.context = replay::capture_context(driver, call.stream);
  if (out.context == nullptr) return out.refusal = Outcome::kContext, out;
  if (call.learn_host_bytes != nullptr && !call.learn_host_bytes(call.context, binding.real, *host_bytes))
    return out.refusal = Outcome::kUnknown, out;
  const CUstream private_stream = capture_stream(t, binding, out.context);
  if (private_stream == nullptr) return out.refusal = Outcome::kFailed, out;
  // The handle's stream is the shim's for the length of one run, then the program's again.
  if (call.enter != nullptr && call.enter(call.context, private_stream) != 0) return out.refusal = Outcome::kFailed, out;
  CapturedRun run{call, t};
  out.captured = replay::capture_graph(driver, private_stream, CapturedRun::run, &run, keep_graph);
  if (call.leave != nullptr) call.leave(call.context);
  if (out.captured.exec == nullptr) {
    say_failure(call.family, out.captured.failed, out.captured.code);
    out.refusal = Outcome::kFailed;
  }
  return out;
}

namespace {

// Captures one run of the entry's key (the entry is in kCapturing, this thread's) and launches it.
// Ends the capture phase in kReady (launched, or the launch failed: its error is returned) or
// kNever (run directly instead), or back in kCounting (the program's stream is capturing: try
// again later).
__attribute__((cold, noinline)) int capture_and_launch(const ReplayCall& call, std::uint32_t m, GraphCache::Entry& e,
                                                       ReplayThread& t) noexcept {
  const Binding* binding = driver_for(call.caller);
  CallCapture c;
  if (binding != nullptr) c = capture_call(call, t, *binding, &e, false);
  else c.refusal = Outcome::kFailed;  // no driver
  if (c.refusal == Outcome::kCapturing) {
    e.publish(Phase::kCounting);
    count_outcome(m, call.family, Outcome::kCapturing);
    return run_direct(call, m);
  }
  if (c.captured.exec == nullptr) {
    e.publish(Phase::kNever);
    count_outcome(m, call.family, c.refusal);
    return run_direct(call, m);
  }
  e.context.store(c.context, std::memory_order_relaxed);
  e.library.store(reinterpret_cast<std::uintptr_t>(binding), std::memory_order_relaxed);
  e.graph.store(c.captured.exec, std::memory_order_relaxed);
  e.publish(Phase::kReady);
  count_outcome(m, call.family, Outcome::kCaptured);
  return launch_graph(binding->real, e, call, m, t, false);
}

// A ready entry: launch, unless a rule says direct.
int launch(const ReplayCall& call, std::uint32_t m, GraphCache::Entry& e, ReplayThread& t) noexcept {
  const GraphDriver& driver = driver_of(e.library.load(std::memory_order_relaxed));
  if (replay::capturing(driver, call.stream)) return run_direct(call, m, counter_of(call.family, Outcome::kCapturing));
  if (!replay::in_context(driver, call.stream, static_cast<CUcontext>(e.context.load(std::memory_order_relaxed))))
    return run_direct(call, m, counter_of(call.family, Outcome::kContext));
  if (call.same_host_bytes != nullptr && __builtin_expect(!call.same_host_bytes(call.context, e), 0)) {
    // The bytes changed: the graph is stale. Re-captured a few times, then direct for good. The
    // old graph is destroyed at once: a key's handle is used by one thread at a time (the
    // libraries' rule), so no other launch of it can be starting now.
    if (!e.begin_capture(Phase::kReady)) return run_direct(call, m);
    destroy_graph({e.graph.exchange(nullptr, std::memory_order_relaxed), e.library.load(std::memory_order_relaxed)});
    const std::uint8_t recaptures = e.recaptures.load(std::memory_order_relaxed);
    if (recaptures >= kMaxRecaptures) {
      e.publish(Phase::kNever);
      if (counting(m) && call.family == Family::backend) count(Counter::graph_refusals_churn);
      return run_direct(call, m);
    }
    e.recaptures.store(recaptures + 1, std::memory_order_relaxed);
    return capture_and_launch(call, m, e, t);
  }
  return launch_graph(driver, e, call, m, t, true);
}

}  // namespace

Counter counter_of(Family family, Outcome outcome) noexcept {
  return facts(family).outcomes[static_cast<int>(outcome)];
}

int run_direct(const ReplayCall& call, std::uint32_t m, Counter refusal) noexcept {
  if (counting(m)) {
    count(counter_of(call.family, Outcome::kDirect));
    if (refusal != Counter::kCount) count(refusal);
  }
  const LibraryCall inside;
  return call.run(call.context, nullptr);
}

int replay(const Key& key, const ReplayCall& call, std::uint32_t m, Admitting admitting) noexcept {
  if (admitting == Admitting::kDirect) return run_direct(call, m);
  if (admitting == Admitting::kDeclined) return run_direct(call, m, counter_of(call.family, Outcome::kDeclined));
  ReplayThread* t = t_replay;  // admit() found or made it
  const bool judged = admitting == Admitting::kJudged;
  const std::uint64_t hash = key.hash();
  const int f = static_cast<int>(call.family);
  GraphCache& cache = g_graphs[f];
  Released evicted;
  GraphCache::Lease lease = cache.acquire(key, hash);
  if (!lease) {
    // Noted before the insert, so that no entry can exist unseen.
    g_seen_handles[f].note(reinterpret_cast<const void*>(key.words[0]));
    lease = cache.insert(key, hash, evicted);
  }
  if (evicted.entry) {
    destroy_graph(evicted);
    if (evicted.graph != nullptr && counting(m) && call.family == Family::backend) count(Counter::graph_evictions);
    if (const unsigned waste = waste_of(call.family, evicted); waste != 0 && judged)
      t->admissions.waste(admitted_of(call.family), waste);
  }
  if (!lease) return run_direct(call, m, counter_of(call.family, Outcome::kFull));
  GraphCache::Entry& e = cache.entry(lease);
  int status;
  switch (e.current_phase()) {
    case Phase::kReady:
      status = launch(call, m, e, *t);
      break;
    case Phase::kCounting:
      // Relaxed: a count, ordered by nothing; two threads on one key (which the libraries forbid
      // on one handle) only capture a little earlier.
      if (e.executes.fetch_add(1, std::memory_order_relaxed) >= replay::kDirectRunsBeforeCapture && e.begin_capture(Phase::kCounting)) {
        status = capture_and_launch(call, m, e, *t);
        break;
      }
      // Not seen often enough for a graph of its own: its shape's, pointed at its tensors, if
      // that may be.
      if (key.tensor_count != 0 && replay_by_shape(key, call, m, *t, judged, status)) break;
      status = run_direct(call, m);
      break;
    default:  // kNever, or another thread capturing it
      status = run_direct(call, m);
      break;
  }
  Released released;
  cache.release(lease, released);
  destroy_graph(released);
  return status;
}

GraphCache& graphs_of(Family family) noexcept { return g_graphs[static_cast<int>(family)]; }

void destroy_graph(const Released& r) noexcept {
  if (r.graph != nullptr && r.library != 0) replay::destroy_graph(driver_of(r.library), static_cast<CUgraphExec>(r.graph));
}

void note_forgotten(Family family, const Released& r) noexcept {
  if (r.graph == nullptr || r.launches != 0) return;
  if (ReplayThread* t = t_replay) t->admissions.waste(admitted_of(family));
}

void forget_graphs_of_handle(HandleOwner owner, const void* handle) noexcept {
  const auto h = reinterpret_cast<std::uintptr_t>(handle);
  for (int f = 0; f < kFamilies; ++f) {
    if (kFacts[f].handle != owner || !g_seen_handles[f].maybe(handle)) continue;
    forget_graphs_where(static_cast<Family>(f), [h](const GraphCache::StoredKey& k) { return k.length() > 0 && k[0] == h; });
    forget_shapes_of_handle(static_cast<Family>(f), h);
  }
}

void forget_families(unsigned features) noexcept {
  for (int f = 0; f < kFamilies; ++f) {
    if (!(features & kFacts[f].feature)) continue;
    g_graphs[f].forget_if([](const GraphCache::StoredKey&) { return true; }, [](const Released& r) { destroy_graph(r); });
    forget_all_shapes(static_cast<Family>(f));
  }
}

const Binding* driver_for(const void* caller) noexcept {
  if (!g_driver_loaded.load(std::memory_order_relaxed)) {
    void* loaded = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
    if (loaded == nullptr) return nullptr;
    dlclose(loaded);
    g_driver_loaded.store(true, std::memory_order_relaxed);
  }
  const Binding& binding = binding_for(Library::kCuda, caller);
  return binding.replays ? &binding : nullptr;
}

}  // namespace cudnn_fastpath::shim
