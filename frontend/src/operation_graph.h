// What a description becomes: a finalized cuDNN operation graph, with what the plan search and
// execute need to know about it.
#pragma once

#include <cudnn_graph.h>

#include <cstdint>
#include <string>
#include <vector>

#include "backend_descriptor.h"
#include "cudnn_fastpath/op_descriptions.h"
#include "cudnn_fastpath/status.h"

namespace cudnn_fastpath::detail {

// Which engines may run a graph, from what its description promised.
struct EngineRequirements {
  // fp32 inputs without allow_tf32: no engine that rounds them to TF32 on tensor cores.
  bool forbid_tf32 = false;
};

struct OperationGraph {
  // Declared before `descriptor` so that the graph is destroyed before what it refers to.
  std::vector<BackendDescriptor> parts;  // the tensors and operations of the graph
  BackendDescriptor descriptor;          // CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, finalized
  std::vector<std::int64_t> tensor_uids;  // the non-virtual tensors, in execute()'s order
  EngineRequirements requirements;
  std::string summary;  // "matmul [b=1 m=256 n=256 k=256] bf16 -> bf16", for messages
};

std::string describe(const MatmulDescription& description);
std::string describe(const ConvolutionDescription& description);

// Build the operation graph of a description with `handle`. On failure *out is unspecified.
Status build_operation_graph(const MatmulDescription& description, cudnnHandle_t handle,
                             OperationGraph* out);
Status build_operation_graph(const ConvolutionDescription& description, cudnnHandle_t handle,
                             OperationGraph* out);

// Shared by the builders above.
struct TensorSpec {
  std::string name;
  std::int64_t uid = 0;
  cudnnDataType_t data_type = CUDNN_DATA_FLOAT;
  std::vector<std::int64_t> dims;
  std::vector<std::int64_t> strides;
  bool is_virtual = false;  // an intermediate that never reaches memory
};
Status make_tensor(const TensorSpec& spec, BackendDescriptor* out);

// Finalizes out->descriptor over `operations`; out->summary names the graph in messages.
Status finalize_operation_graph(cudnnHandle_t handle,
                                const std::vector<cudnnBackendDescriptor_t>& operations,
                                OperationGraph* out);

}  // namespace cudnn_fastpath::detail
