// Capture, instantiation and launch of one library call as a CUDA graph: the one place that does
// them, for the shim's replayed families (shim/engine/replay_engine.cpp) and the frontend's lazy
// execute context (frontend/src/execute_replay.cpp).
//
// CUDA's rules this follows: a call is captured on a stream of the caller's own (the legacy NULL
// stream cannot capture, and the program's stream is the program's), in thread-local mode (global
// mode would make other threads' cudaMalloc fail); a captured call runs nothing, so the graph's
// first launch, right after, does the work; the kernels recorded do not depend on the stream, so
// the graph is launched on the program's; while the program's stream is capturing (its own graph),
// its call belongs in that capture and runs directly.
#pragma once

#include <cuda.h>

#include <cstdint>

#include "replay/graph_driver.h"

namespace cudnn_fastpath::replay {

// Direct runs of a new call before its capture: a library may initialise lazily on a first call,
// and a call seen once or twice is not worth a graph.
inline constexpr std::uint32_t kDirectRunsBeforeCapture = 2;

// Whether `stream` is capturing (the program's own graph); an error (the legacy stream while
// another thread captures globally, say) counts as capturing. Inline, as the other two calls of
// every launch: they are on its path.
inline bool capturing(const GraphDriver& driver, CUstream stream) noexcept {
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  return driver.cuStreamIsCapturing(stream, &status) != CUDA_SUCCESS || status != CU_STREAM_CAPTURE_STATUS_NONE;
}

// The context `stream` belongs to, if a graph may be captured for it: null for a green context's
// stream, or when the driver cannot say.
CUcontext capture_context(const GraphDriver& driver, CUstream stream) noexcept;

// Whether `stream` belongs to `context` (a graph captured for that context may be launched on it).
inline bool in_context(const GraphDriver& driver, CUstream stream, CUcontext context) noexcept {
  CUcontext own = nullptr;
  return driver.cuStreamGetCtx(stream, &own) == CUDA_SUCCESS && own == context;
}

// A new non-blocking stream in `context` (made current for the call if it is not), for captures;
// null when none can be made.
CUstream make_capture_stream(const GraphDriver& driver, CUcontext context) noexcept;

// What capture_graph() made: an executable graph (and, when asked for, the graph it came from, whose
// nodes relocation reads and updates), or which step failed and how.
struct Captured {
  CUgraphExec exec = nullptr;
  CUgraph graph = nullptr;
  const char* failed = nullptr;  // null, or "a capture", "a call under capture", "an instantiation"
  int code = 0;                  // the failed step's status: the call's own, or the driver's
};

// Captures one run of `run(context, on)` on `on` and instantiates it; `keep_graph`: the graph is
// handed back too (the caller destroys it), else destroyed.
Captured capture_graph(const GraphDriver& driver, CUstream on, int (*run)(void* context, CUstream on), void* context,
                       bool keep_graph = false) noexcept;

// Launches `exec` on the program's `stream`.
inline bool launch_graph(const GraphDriver& driver, CUgraphExec exec, CUstream stream) noexcept {
  return driver.cuGraphLaunch(exec, stream) == CUDA_SUCCESS;
}

// Destroys `exec` (legal while it runs on the GPU: it is freed when it completes).
void destroy_graph(const GraphDriver& driver, CUgraphExec exec) noexcept;

}  // namespace cudnn_fastpath::replay
