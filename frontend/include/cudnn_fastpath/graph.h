// Graph: one cuDNN operation graph and the execution plan chosen for it, executed with nothing
// but cudnnBackendExecute once it is built.
//
//   MatmulDescription gemm;
//   gemm.m = gemm.n = gemm.k = 256;                  // bf16 in and out, fp32 accumulation
//   Graph graph = Graph::matmul(gemm);
//   Status built = graph.build(handle);              // optional: execute builds on first use
//   ... allocate graph.workspace_size() bytes of device memory ...
//   Status done = graph.execute(handle, {a, b, c}, workspace);
//
// What each call costs:
//   - build (explicit, or inside the first execute): the only time a Graph asks the handle
//     anything (cudnnGetStream, once). It builds the operation graph, asks cuDNN's heuristics
//     for engine configurations (mode A, then FALLBACK) and keeps the first execution plan that
//     finalizes. A graph cuDNN cannot run comes back as a Status saying so, never as a crash.
//   - execute with the pointers and workspace of the previous execute: one cudnnBackendExecute,
//     no other cuDNN call and no heap allocation; from the third such execute on the same handle,
//     one CUDA graph launch of that execute instead (captured once, the handle's stream set to a
//     stream of the Graph's and restored: a cudnnGetStream too unless set_stream() or the build
//     told the frontend which stream the handle holds; see below). Not while the handle's stream
//     is capturing the program's own graph, nor for a stream of another context; never for
//     pointers that are not device memory, nor after a failed capture. CUDNN_FASTPATH_GRAPHS=0 in
//     the environment, or no libcuda.so.1 loaded, keeps every execute a cudnnBackendExecute.
//   - execute with other pointers or another workspace: the variant pack is rebuilt once
//     (create, set, finalize; the previous pack destroyed), then the steady state resumes.
//
// The plan runs on the stream the handle holds at execute time (set it with set_stream(), see
// stream.h) and on the handle's device: cuDNN binds a plan to the device of the handle it was
// built with, so execute a Graph only with handles of that device.
//
// Thread safety: a Graph is a mutable object (execute may build, and caches the variant pack).
// Distinct Graphs may be used by distinct threads at the same time, with distinct handles or with
// one handle per thread as cuDNN requires. One Graph must not be used by two threads at once; hand
// it from one thread to another with the usual synchronisation (a mutex, a join, a queue). The
// const accessors may be called concurrently with each other, not with build or execute.
#pragma once

#include <cudnn_graph.h>

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "cudnn_fastpath/export.h"
#include "cudnn_fastpath/op_descriptions.h"
#include "cudnn_fastpath/status.h"

namespace cudnn_fastpath {

// Who destroys an adopted execution plan.
enum class PlanOwnership {
  kBorrowed,  // the caller; it must outlive the Graph
  kAdopted,   // the Graph, when it is destroyed
};

class CUDNN_FASTPATH_API Graph {
 public:
  // A graph from a description. Nothing is checked or built until build() or the first execute().
  static Graph matmul(const MatmulDescription& description);
  static Graph convolution(const ConvolutionDescription& description);

  // A graph from an execution plan the caller finalized itself (with cudnn-frontend, or the
  // backend API). `tensor_uids` are the unique ids of the plan's non-virtual tensors, in the order
  // execute() will take their pointers. The Graph is built on return: its executes never ask any
  // handle anything. Fails (and leaves *out alone) if the plan is not a finalized execution plan.
  static Status adopt_plan(cudnnBackendDescriptor_t finalized_plan,
                           std::vector<std::int64_t> tensor_uids, PlanOwnership ownership,
                           Graph* out);

  Graph() noexcept;  // empty: build and execute fail; assign a graph to it
  Graph(Graph&& other) noexcept;
  Graph& operator=(Graph&& other) noexcept;
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;
  ~Graph();

  // Builds the execution plan with `handle` if it is not built yet; does nothing otherwise.
  Status build(cudnnHandle_t handle);

  // Enqueues the graph on the stream `handle` holds. `pointers`: the tensors' device addresses in
  // the order of tensor_uids() (see the descriptions); `workspace`: at least workspace_size()
  // bytes of device memory (may be null when that is 0).
  Status execute(cudnnHandle_t handle, const void* const* pointers, std::size_t count,
                 void* workspace);
  Status execute(cudnnHandle_t handle, std::initializer_list<const void*> pointers,
                 void* workspace) {
    return execute(handle, pointers.begin(), pointers.size(), workspace);
  }

  bool built() const noexcept;
  // Bytes of workspace execute() needs; 0 until built.
  std::int64_t workspace_size() const noexcept;
  // The unique ids of the tensors execute() takes pointers for, in that order; empty until built.
  const std::vector<std::int64_t>& tensor_uids() const noexcept;
  // The finalized execution plan (owned by the Graph unless borrowed); null until built.
  cudnnBackendDescriptor_t execution_plan() const noexcept;
  // Which engine the plan runs and how it was chosen, for logs; empty until built.
  const std::string& plan_summary() const noexcept;

 private:
  struct State;
  explicit Graph(std::unique_ptr<State> state) noexcept;
  std::unique_ptr<State> state_;
};

}  // namespace cudnn_fastpath
