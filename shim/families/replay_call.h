// The life of a replayed call once it passed its gate (gate.h), one path for every family (the
// legacy ops and GEMMs of table_call.h, cuBLASLt's matmul, the backend execute): the admission
// rule's answer, asked before anything else (a declined call runs as it came, without a key); what
// the call reads besides its arguments; its key; the engine (replay_engine.h: the pointer cache, the
// shape cache, capture, launch).
//
// A family's entry point gives four things: `sample()`, a hash of what its key holds that changes
// from call to call without a look at any record, and `shape_sample()`, the same without its
// tensors (both asked only while the family backs off: admit()); `direct()`, the library's function
// as the call came (a declined call runs it, before anything else is made of the call); and
// `make()`, the call as the engine runs it: its adapter, which is its ReplayCall's context and says
// what differs between families:
//   kFamily, kPastGate, kLaunchFailed   its family; whether its gate already found the thread in no
//                capture or library call of the shim's (admit()); what a failed launch returns
//   known(m, refusal)   reads what the call needs besides its arguments (the handle's stream or
//                state); false: the call runs directly (counted as `refusal` when that is given)
//   caller, stream()    its return address; where the program's work goes
//   run(context, capture), and, for a call whose stream is handle state, enter() and leave()
//                (graph_launch.h's ReplayCall); learn_host_bytes() and same_host_bytes(), or nulls
//   write_key(key)   its key: left incomplete (or refused) when it needs what the shim did not see
//                (an unknown descriptor): the call runs directly, counted as unknown
//   shape_sample(context)   shape_sample() again, from the adapter (the engine asks it after the
//                shape cache took the call)
#pragma once

#include <cstdint>

#include "shim/engine/replay_engine.h"

namespace cudnn_fastpath::shim {

template <typename Adapter, typename Sample, typename ShapeSample, typename Direct, typename Make>
[[gnu::always_inline]] inline int replay_call(std::uint32_t m, Sample&& sample, ShapeSample&& shape_sample,
                                              Direct&& direct, Make&& make) noexcept {
  constexpr Family kFamily = Adapter::kFamily;
  const Admitting admitting =
      (m & mode::kGraphReplay) ? admit<Adapter::kPastGate>(kFamily, sample, shape_sample) : Admitting::kDirect;
  if (admitting == Admitting::kDeclined) return static_cast<int>(run_declined(kFamily, m, direct));
  Adapter a = make();
  Counter refusal = Counter::kCount;
  const bool known = a.known(m, refusal);
  const ReplayCall call{kFamily,          a.caller,
                        a.stream(),       Adapter::kLaunchFailed,
                        &a,               Adapter::run,
                        Adapter::enter,   Adapter::leave,
                        Adapter::learn_host_bytes, Adapter::same_host_bytes,
                        Adapter::shape_sample};
  if (!known || admitting == Admitting::kDirect) return run_direct(call, m, refusal);
  Key key;
  a.write_key(key);
  if (!key.complete) return run_direct(call, m, counter_of(kFamily, Outcome::kUnknown));
  return replay(key, call, m, admitting);
}

// The members of an adapter whose call needs none of them (a call with its stream as an argument, or
// no host bytes outside its arguments).
struct NoHandleStream {
  static constexpr int (*enter)(void*, CUstream) = nullptr;
  static constexpr void (*leave)(void*) = nullptr;
};
struct NoHostBytes {
  static constexpr bool (*learn_host_bytes)(void*, const RealSymbols&, HostBytes&) = nullptr;
  static constexpr bool (*same_host_bytes)(void*, const HostBytes&) = nullptr;
};

}  // namespace cudnn_fastpath::shim
