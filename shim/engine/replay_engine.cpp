// The path of a replayed call (replay_engine.h): the pointer cache, then the shape cache, then
// capture, then launch.
#include "shim/engine/replay_engine.h"

#include "replay/graph_capture.h"
#include "replay/seen_filter.h"
#include "shim/engine/shape_cache.h"
#include "shim/process/lifecycle.h"

namespace cudnn_fastpath::shim {
namespace {

using replay::Phase;
using replay::Released;

constexpr std::uint8_t kMaxRecaptures = 3;
// Runs of a key whose calls its shape's graph relocates before the key gets a graph of its own: a
// relocated launch costs its node update over a launch by pointer (about 0.5 us on the H200,
// docs/graph-costs.md), a capture and instantiation some 45 us, so only a key that keeps coming back
// repays one. Keys that come back a few times and move on (generation's) stay relocated.
constexpr std::uint32_t kRunsBeforeCaptureOverRelocation = 16;

GraphCache g_graphs[kFamilies];

// The handles that ever headed a key of each family: a destroyed handle that never did costs a
// load, not a pass over the cache.
replay::SeenFilter g_seen_handles[kFamilies];

// In a forked child only the forking thread exists, and the parent's graphs belong to its CUDA
// context: the entries are dropped, not destroyed. Registered before the first graph exists.
void forget_graphs_in_child() {
  for (GraphCache& cache : g_graphs) cache.forget_in_child();
}
ForkChildReset g_fork_reset{forget_graphs_in_child};

bool counting(std::uint32_t m) { return (m & mode::kCounting) != 0; }

// Captures one run of the entry's key (the entry is in kCapturing, this thread's) and launches it.
// Ends the capture phase in kReady (launched, or the launch failed: its error is returned) or
// kNever (run directly instead), or back in kCounting (the program's stream is capturing: try
// again later).
__attribute__((cold, noinline)) int capture_and_launch(const ReplayCall& call, std::uint32_t m, GraphCache::Entry& e,
                                                       ReplayThread& t) noexcept {
  g_fork_reset.register_once();
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
  return launch(binding->real, c.captured.exec, call, m, t, nullptr, Admitting::kJudged);
}

// A ready entry: launch, unless a rule says direct.
int launch_ready(const ReplayCall& call, std::uint32_t m, GraphCache::Entry& e, ReplayThread& t,
                 Admitting admitting) noexcept {
  const replay::GraphDriver& driver = driver_of(e.library.load(std::memory_order_relaxed));
  if (const Outcome refusal = launch_refusal(driver, call, static_cast<CUcontext>(e.context.load(std::memory_order_relaxed)));
      refusal != Outcome::kCount)
    return run_direct(call, m, counter_of(call.family, refusal));
  if (call.same_host_bytes != nullptr && __builtin_expect(!call.same_host_bytes(call.context, e), 0)) {
    // The bytes changed: the graph is stale. Re-captured a few times, then direct for good. The
    // old graph is destroyed at once: a key's handle is used by one thread at a time (the
    // libraries' rule), so no other launch of it can be starting now.
    if (!e.begin_capture(Phase::kReady)) return run_direct(call, m);
    destroy_graph({e.graph.exchange(nullptr, std::memory_order_relaxed), e.library.load(std::memory_order_relaxed)});
    const std::uint8_t recaptures = e.recaptures.load(std::memory_order_relaxed);
    if (recaptures >= kMaxRecaptures) {
      e.publish(Phase::kNever);
      count_outcome(m, call.family, Outcome::kChurn);
      return run_direct(call, m);
    }
    e.recaptures.store(recaptures + 1, std::memory_order_relaxed);
    return capture_and_launch(call, m, e, t);
  }
  return launch(driver, static_cast<CUgraphExec>(e.graph.load(std::memory_order_relaxed)), call, m, t, &e, admitting);
}

// A call its shape's graph took: its family takes the shape's calls on this thread even while it
// backs off.
void note_shape_taken(const ReplayCall& call, ReplayThread& t) noexcept {
  t.relocating[static_cast<int>(admitted_of(call.family))] |= shape_bit(call.shape_sample(call.context));
}

// A new key's first call (admitted, and judged by the rule): noted among the thread's recent keys,
// and run by its shape's graph, or directly. Out of line: a steady call's path stays as short.
[[gnu::noinline]] int first_call(const Key& key, std::uint64_t hash, const ReplayCall& call, std::uint32_t m,
                                 ReplayThread& t) noexcept {
  int status = 0;
  const bool relocated = key.tensor_count != 0 && replay_by_shape(key, call, m, t, Admitting::kJudged, status);
  if (relocated) note_shape_taken(call, t);
  if (t.recent_keys.note(hash, relocated)) t.admissions.waste(admitted_of(call.family));
  return relocated ? status : run_direct(call, m);
}

// A call of a relocating shape while its family backs off: a graph of its key if there is one, else
// its shape's if the shape cache holds it; neither, it runs directly, declined. Nothing is inserted
// (a call of another shape that shares the bit costs its key and two looks, no more).
int replay_shaped(const Key& key, std::uint64_t hash, const ReplayCall& call, std::uint32_t m, ReplayThread& t) noexcept {
  GraphCache& cache = g_graphs[static_cast<int>(call.family)];
  if (GraphCache::Lease lease = cache.acquire(key, hash)) {
    GraphCache::Entry& e = cache.entry(lease);
    const bool ready = e.current_phase() == Phase::kReady;
    const int status = ready ? launch_ready(call, m, e, t, Admitting::kShaped) : 0;
    Released released;
    cache.release(lease, released);
    destroy_graph(released);
    if (ready) return status;
  }
  int status;
  if (replay_by_shape(key, call, m, t, Admitting::kShaped, status)) return status;
  return run_direct(call, m, counter_of(call.family, Outcome::kDeclined));
}

}  // namespace

int replay(const Key& key, const ReplayCall& call, std::uint32_t m, Admitting admitting) noexcept {
  if (admitting == Admitting::kDirect) return run_direct(call, m);
  if (admitting == Admitting::kDeclined) return run_direct(call, m, counter_of(call.family, Outcome::kDeclined));
  ReplayThread* t = t_replay;  // admit() found or made it
  const std::uint64_t hash = key.hash();
  if (admitting == Admitting::kShaped) return replay_shaped(key, hash, call, m, *t);
  const bool judged = admitting == Admitting::kJudged;
  const int f = static_cast<int>(call.family);
  GraphCache& cache = g_graphs[f];
  Released evicted;
  GraphCache::Lease lease = cache.acquire(key, hash);
  bool met_before = false;
  if (!lease) {
    // A new key's first call takes no entry: it is noted among the thread's recent keys
    // (replay/recent_keys.h) and runs directly, or by its shape's graph, and the key takes an entry
    // when it comes back, so that keys that never repeat cost the cache no insert and evict nothing
    // (an admitted call of a load whose shapes never repeat: 2,400 instructions on the stubs, the
    // insert and its copy of the key a sixth of them). A key pushed out of the notes unused is the
    // rule's waste, as an entry evicted unused is: such a load backs off as it did when its keys
    // filled the cache, but also where the cache starts empty, as after a switch of the features.
    // Not a sampled key: it came before, declined, and its entry is what lets its next call be the
    // rule's hit.
    if (judged) {
      met_before = t->recent_keys.take(hash);
      if (!met_before) return first_call(key, hash, call, m, *t);
    }
    // Noted before the insert, so that no entry can exist unseen.
    g_seen_handles[f].note(reinterpret_cast<const void*>(key.words[0]));
    lease = cache.insert(key, hash, evicted);
  }
  if (evicted.entry) {
    destroy_graph(evicted);
    if (evicted.graph != nullptr) count_outcome(m, call.family, Outcome::kEvicted);
    if (const unsigned waste = waste_of(call.family, evicted); waste != 0 && judged)
      t->admissions.waste(admitted_of(call.family), waste);
  }
  if (!lease) return run_direct(call, m, counter_of(call.family, Outcome::kFull));
  GraphCache::Entry& e = cache.entry(lease);
  int status;
  switch (e.current_phase()) {
    case Phase::kReady:
      status = launch_ready(call, m, e, *t, admitting);
      break;
    case Phase::kCounting: {
      // Relaxed: counts, ordered by nothing; two threads on one key (which the libraries forbid on
      // one handle) only capture a little earlier. A key met before its entry counts that run too.
      const bool relocated = e.relocated.load(std::memory_order_relaxed);
      const std::uint32_t runs = e.executes.fetch_add(met_before ? 2 : 1, std::memory_order_relaxed) + met_before;
      const std::uint32_t due = relocated ? kRunsBeforeCaptureOverRelocation : replay::kDirectRunsBeforeCapture;
      if (runs >= due && e.begin_capture(Phase::kCounting)) {
        status = capture_and_launch(call, m, e, *t);
        break;
      }
      // Not seen often enough for a graph of its own: its shape's, pointed at its tensors, if
      // that may be.
      if (key.tensor_count != 0 && replay_by_shape(key, call, m, *t, admitting, status)) {
        if (!relocated) {
          e.relocated.store(true, std::memory_order_relaxed);
          note_shape_taken(call, *t);
        }
        break;
      }
      // A key its shape took before and takes no more (the shape refused, or by pointer at this
      // alignment) is captured as any other key, at its third run, not left to run directly until
      // its seventeenth (relocation_refused_keys: two keys in turn ran 30 of their 60 calls directly).
      if (relocated && runs >= replay::kDirectRunsBeforeCapture && e.begin_capture(Phase::kCounting)) {
        status = capture_and_launch(call, m, e, *t);
        break;
      }
      status = run_direct(call, m);
      break;
    }
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

void note_forgotten(Family family, const Released& r) noexcept {
  if (r.graph == nullptr || r.launches != 0) return;
  if (ReplayThread* t = t_replay) t->admissions.waste(admitted_of(family));
}

void forget_graphs_of_handle(HandleOwner owner, const void* handle) noexcept {
  const auto h = reinterpret_cast<std::uintptr_t>(handle);
  for (int f = 0; f < kFamilies; ++f) {
    const auto family = static_cast<Family>(f);
    if (handle_owner_of(family) != owner || !g_seen_handles[f].maybe(handle)) continue;
    forget_graphs_where(family, [h](const GraphCache::StoredKey& k) { return k.length() > 0 && k[0] == h; });
    forget_shapes_with_word(family, 0, h);
  }
}

void forget_families(unsigned features) noexcept {
  for (int f = 0; f < kFamilies; ++f) {
    const auto family = static_cast<Family>(f);
    if (!(features & feature_of(family))) continue;
    g_graphs[f].forget_if([](const GraphCache::StoredKey&) { return true; }, [](const Released& r) { destroy_graph(r); });
    forget_all_shapes(family);
  }
}

}  // namespace cudnn_fastpath::shim
