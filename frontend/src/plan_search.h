// Choosing an execution plan for an operation graph: cuDNN's heuristics (mode A, then FALLBACK)
// rank engine configurations; the first one the graph's requirements accept and whose execution
// plan finalizes is kept.
#pragma once

#include <cudnn_graph.h>

#include <cstdint>
#include <string>

#include "backend_descriptor.h"
#include "cudnn_fastpath/status.h"
#include "operation_graph.h"

namespace cudnn_fastpath::detail {

struct ChosenPlan {
  // Declared before `plan` so that the plan is destroyed before the configuration it came from.
  BackendDescriptor engine_config;
  BackendDescriptor plan;  // finalized
  std::int64_t workspace_size = 0;
  std::string summary;  // "engine 7 (heuristics mode A, choice 2 of 12), workspace 0 bytes"
};

// The plan for `graph`, or a Status that says why cuDNN has none: what the heuristics offered,
// what the requirements ruled out, and cuDNN's last refusal.
Status choose_plan(const OperationGraph& graph, cudnnHandle_t handle, ChosenPlan* out);

// The workspace a finalized execution plan needs; fails if `plan` is not one.
Status read_workspace_size(cudnnBackendDescriptor_t plan, std::int64_t* bytes);

}  // namespace cudnn_fastpath::detail
