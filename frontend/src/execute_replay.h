// A Graph's steady execute as one CUDA graph launch.
//
// A Graph executes one plan with one variant pack at a time. Once the same handle and pack have
// run directly (replay::kDirectRunsBeforeCapture times), the next execute is captured (by the
// shim's capture engine, replay/graph_capture.h, on a stream of the Graph's own, with the handle's
// stream set to it and restored) and launched; every later execute with them launches the graph
// on the handle's stream.
// A new pack or another handle drops the graph and starts again (the pack is told apart by its
// address: the Graph keeps its current pack alive, so no new pack can take that address). Rules, as in the shim
// (shim/engine/replay_engine.cpp): the handle's stream capturing the program's own graph, or a stream of
// another context than the graph's: direct. A pointer the driver does not call device memory (a
// by-value scalar of an adopted plan, say), a failed capture or instantiation: direct for good (for
// this pack). A failed launch is returned as an error.
//
// The CUDA driver comes from the already-loaded libcuda.so.1 (the frontend links no CUDA library);
// without it, or with CUDNN_FASTPATH_GRAPHS=0 in the environment, every execute is direct.
#pragma once

#include <cuda.h>
#include <cudnn_graph.h>

#include <cstddef>

namespace cudnn_fastpath::detail {

class ExecuteReplay {
 public:
  ExecuteReplay() = default;
  ExecuteReplay(const ExecuteReplay&) = delete;
  ExecuteReplay& operator=(const ExecuteReplay&) = delete;
  ~ExecuteReplay() { reset(true); }

  // cudnnBackendExecute(handle, plan, pack), directly or by a graph; `pointers` are the pack's.
  cudnnStatus_t execute(cudnnHandle_t handle, cudnnBackendDescriptor_t plan, cudnnBackendDescriptor_t pack,
                        const void* const* pointers, std::size_t count) noexcept;

 private:
  // Drops the graph; `streams` too: the capture stream (the Graph is going away).
  void reset(bool streams) noexcept;
  cudnnStatus_t capture_and_launch(cudnnHandle_t handle, cudnnBackendDescriptor_t plan,
                                   cudnnBackendDescriptor_t pack, const void* const* pointers,
                                   std::size_t count) noexcept;

  cudnnHandle_t handle_ = nullptr;
  cudnnBackendDescriptor_t pack_ = nullptr;
  unsigned executes_ = 0;  // direct executes of (handle_, pack_)
  bool never_ = false;     // (handle_, pack_) is executed directly for good
  CUgraphExec graph_ = nullptr;
  CUcontext context_ = nullptr;        // of the stream graph_ was captured for
  CUstream capture_stream_ = nullptr;  // the Graph's own, in capture_context_
  CUcontext capture_context_ = nullptr;
};

}  // namespace cudnn_fastpath::detail
