// How the engine runs a call: as it came, captured as a CUDA graph, or as a launch of a graph made
// before. The one place that captures and launches for the shim (replay/graph_capture.h does the
// driver's part, for the frontend too).
//
// A capture runs on a stream of the shim's, one per thread and context (the program's stream's
// context; four contexts a thread, the oldest stream destroyed when a fifth needs one), in
// thread-local mode, the handle pointed at that stream just before the capture begins and back
// just after it ends, so that nothing but the call itself is captured; a captured call runs
// nothing, so the graph's first launch does the work. A launch goes on the program's stream,
// unless that stream is capturing (the program's own graph) or belongs to another context than the
// graph's: then the call runs directly.
#pragma once

#include <cuda.h>

#include <cstdint>

#include "replay/graph_capture.h"
#include "shim/engine/family_facts.h"
#include "shim/libraries/callers.h"
#include "shim/libraries/real_symbols.h"

namespace cudnn_fastpath::shim {

// Whether a call of a family goes through its graph cache (replay/admission.h; replay_engine.h's
// admit() answers it before the key is written, so that a cache that backs off costs its declined
// calls no key), and how the rule sees what it does there: kJudged (admitting, or a probe by count:
// its hits and wastes judge the cache), kSampled (backing off, a sampled key seen before in the
// sample: a launch of its graph is the rule's hit, what it evicts no waste), kShaped (backing off,
// a call of a shape whose calls the shape cache took on this thread: to the shape cache alone,
// nothing inserted, its launches no hit, for they tell nothing of the family's other calls),
// kDeclined, or kDirect (no replay block, or inside one of the shim's captures or library calls).
enum class Admitting : std::uint8_t { kJudged, kSampled, kShaped, kDeclined, kDirect };

// One call, as the engine runs it.
struct ReplayCall {
  Family family;
  const void* caller;  // its return address: which driver the engine uses
  CUstream stream;     // where the program's work goes
  int launch_failed;   // what a failed graph launch returns (the library's own "execution failed")
  void* context;       // the family's, for the functions below
  // Runs the call as the program made it: exactly as it came (`capture` null), or with its work
  // going to `capture`, the shim's capture stream. Returns the library's status, 0 for success
  // (cuDNN's and cuBLAS's).
  int (*run)(void* context, CUstream capture);
  // For a call whose stream is handle state (cuDNN, cuBLAS), or null: points the handle at
  // `capture` before the capture begins (non-zero: no capture, direct for good), and puts the
  // program's state back after it ends, so that no library call but the run itself is captured.
  int (*enter)(void* context, CUstream capture);
  void (*leave)(void* context);
  // Host memory the call reads that its key does not hold (a variant pack's by-value tensors), or
  // null: learnt into the entry at capture (false refuses the capture for good), compared at
  // every launch (a change re-captures, a few times, then runs direct for good).
  bool (*learn_host_bytes)(void* context, const RealSymbols& cuda, HostBytes& entry);
  bool (*same_host_bytes)(void* context, const HostBytes& entry);
  // The hash of what the call's key holds besides its tensors (admit()'s shape sample), asked only
  // when its shape's graph took the call.
  std::uint64_t (*shape_sample)(const void* context);
};

// Runs `call` as it came, counted as a direct run of its family (`refusal`, when given, counted
// as why). The library's calls from inside it are its own (LibraryCall).
int run_direct(const ReplayCall& call, std::uint32_t m, Counter refusal = Counter::kCount) noexcept;

// The driver the calls of `caller` reach, when it is loaded and has everything graph replay uses;
// nullptr otherwise (every call is then direct).
const Binding* driver_for(const void* caller) noexcept;
// The same for a caller whose entry `known` reach_for() found: its driver binding, once made, is
// taken from the entry without a second lookup of the caller.
inline const Binding* driver_for(const void* caller, const Caller* known) noexcept {
  // Acquire: pairs with the CAS that published the binding, as in reach_for().
  const Binding* b =
      known != nullptr ? known->bindings[static_cast<int>(Library::kCuda)].load(std::memory_order_acquire) : nullptr;
  if (b == nullptr) return driver_for(caller);
  return b->replays ? b : nullptr;
}

// The driver a graph was made with (its entry's `library`).
inline const replay::GraphDriver& driver_of(std::uintptr_t library) noexcept {
  return reinterpret_cast<const Binding*>(library)->real;
}

// One run of a call captured on the calling thread's capture stream for the call's stream's context
// (the handle pointed there and back): the executable graph (with its graph when `keep_graph`), or a
// null one and why (`refusal`: kCapturing, the program's stream is capturing its own graph; kContext,
// a green context's stream, or one the driver cannot place; kUnknown, host bytes it may not read;
// kFailed, said in one line with CUDNN_FASTPATH_VERBOSE).
struct CallCapture {
  replay::Captured captured;
  CUcontext context = nullptr;
  Outcome refusal = Outcome::kCount;
};
CallCapture capture_call(const ReplayCall& call, ReplayThread& t, const Binding& binding, HostBytes* host_bytes,
                         bool keep_graph) noexcept;

// Why a graph of `context` may not be launched for `call` now (kCapturing: the program's stream is
// capturing its own graph; kContext: the stream is another context's), or kCount: it may. Inline,
// as launch(): both are on every replayed call's path.
inline Outcome launch_refusal(const replay::GraphDriver& driver, const ReplayCall& call, CUcontext context) noexcept {
  if (replay::capturing(driver, call.stream)) return Outcome::kCapturing;
  if (!replay::in_context(driver, call.stream, context)) return Outcome::kContext;
  return Outcome::kCount;
}

// Launches `exec` on the call's stream: 0, or the family's "execution failed". `again`: the graph of
// that entry launched again after its capture (only that pays a capture back: the admission rule's
// hit, unless the call is kShaped).
inline int launch(const replay::GraphDriver& driver, CUgraphExec exec, const ReplayCall& call, std::uint32_t m,
                  ReplayThread& t, GraphCache::Entry* again, Admitting admitting) noexcept {
  if (!replay::launch_graph(driver, exec, call.stream)) return call.launch_failed;
  if (again != nullptr) {
    again->note_launch();
    if (admitting != Admitting::kShaped) t.admissions.hit(admitted_of(call.family));
  }
  count_outcome(m, call.family, Outcome::kLaunch);
  return 0;
}

// Destroys a graph the cache let go of (legal while it runs: it is freed when it completes).
inline void destroy_graph(const replay::Released& r) noexcept {
  if (r.graph != nullptr && r.library != 0) replay::destroy_graph(driver_of(r.library), static_cast<CUgraphExec>(r.graph));
}

}  // namespace cudnn_fastpath::shim
