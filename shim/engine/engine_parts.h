// What the replay engine's own files share (replay_engine.cpp, shape_replay.cpp): the capture of
// one call, and the bookkeeping every cache of the engine does alike. Not for the families.
#pragma once

#include <cuda.h>

#include <cstdint>

#include "replay/graph_capture.h"
#include "shim/engine/replay_engine.h"

namespace cudnn_fastpath::shim {

// One run of a call captured on the calling thread's capture stream for the call's stream's context
// (the handle pointed there and back): the executable graph (with its graph when `keep_graph`), or a
// null one and why (`refusal`: kCapturing, the program's stream is capturing its own graph; kContext,
// a green context's stream, or one the driver cannot place; kUnknown, host bytes it may not read;
// kFailed).
struct CallCapture {
  replay::Captured captured;
  CUcontext context = nullptr;
  Outcome refusal = Outcome::kCount;
};
CallCapture capture_call(const ReplayCall& call, ReplayThread& t, const Binding& binding, HostBytes* host_bytes,
                         bool keep_graph) noexcept;

// What an entry the cache evicted costs the admission rule, in wastes (replay_engine.cpp).
unsigned waste_of(Family family, const replay::Released& released) noexcept;

// Counts `outcome` for `family` when statistics are on (mode `m`).
void count_outcome(std::uint32_t m, Family family, Outcome outcome) noexcept;

// One call of `family`, in messages ("a batch norm").
const char* noun_of(Family family) noexcept;

// The driver a graph was made with (its entry's `library`).
const replay::GraphDriver& driver_of(std::uintptr_t library) noexcept;

}  // namespace cudnn_fastpath::shim
