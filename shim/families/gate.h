// The gate every call of a replayed family passes first (cuDNN's legacy ops, cuBLASLt's matmul and
// heuristic, cuBLAS's GEMMs), and whose calls are the program's own.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "shim/engine/replay_thread.h"
#include "shim/libraries/callers.h"
#include "shim/libraries/dispatch.h"
#include "shim/libraries/mode.h"
#include "shim/process/counters.h"

namespace cudnn_fastpath::shim {

// Whether a call from `caller` is the program's own: not a library's calling itself (cuDNN's
// sub-libraries making descriptors, cuBLAS running its own cuBLASLt matmul), not made inside a call
// the shim made for the program (its captures, a library call reached through a tracer that hides
// who called), and not from a dlsym caller that was answered the library's own function for a name
// of one of the `declined` kinds (callers.h: what it sets through that one is never recorded, so
// its calls must not be replayed).
__attribute__((always_inline)) inline bool programs_call(const void* caller, std::uint32_t declined,
                                                       const Caller* known = nullptr) noexcept {
  if (inside_library_call()) return false;
  const Caller* c = known != nullptr ? known : known_caller(reinterpret_cast<std::uintptr_t>(caller));
  return c == nullptr || (!c->in_library.load(std::memory_order_relaxed) &&
                          !(c->dlsym_declined.load(std::memory_order_relaxed) & declined));
}

// What a family's gate needs to know: the mode bit of its feature, the kind of names a dlsym caller
// must not hold the library's own function for, and the library's "not initialized".
template <typename Status>
struct Gate {
  std::uint32_t feature;
  std::uint32_t declined;
  Status missing;
};

// What every interposed call of a family does first, a replayed call at its gate as a recorded one:
// a follower copy of the shim passes the call to the leading copy (or, when that copy has no
// function of this name, to the library); a caller without the library gets its "not initialized"
// (`missing`). True when answered so, with `status`. `kLeader` is the entry point's member of
// Dispatch.
template <auto kLeader, typename Status, typename Real, typename... Args>
__attribute__((always_inline)) inline bool passed_on(Status& status, Status missing, std::uint32_t m,
                                                   const void* caller, Real real, Args... args) noexcept {
  if (__builtin_expect(m & mode::kFollower, 0)) {
    const auto lead = (leader().*kLeader).get();
    status = lead ? lead(caller, args...) : real ? real(args...) : missing;
    return true;
  }
  if (real == nullptr) {
    status = missing;
    return true;
  }
  return false;
}

// Returns true when the call was answered at the gate, with `status`: passed on (above); the
// feature off, or a call that is not the program's own (programs_call), ran as it came, marked a
// library call. Otherwise the call is the family's to replay (and the process has made a call the
// report at exit covers). `known` is the caller's entry that gave `real` (reach_for), or null.
template <auto kLeader, typename Status, typename Real, typename... Args>
__attribute__((always_inline)) inline bool answered_at_gate(Status& status, const Gate<Status>& gate, std::uint32_t m,
                                                          const void* caller, const Caller* known, Real real,
                                                          Args... args) noexcept {
  if (passed_on<kLeader>(status, gate.missing, m, caller, real, args...)) return true;
  if (!(m & gate.feature) || !programs_call(caller, gate.declined, known)) {
    if ((m & mode::kCounting) && (m & gate.feature)) count(Counter::library_calls);
    const LibraryCall inside;
    status = real(args...);
    return true;
  }
  note_cudnn_call();
  return false;
}

}  // namespace cudnn_fastpath::shim
