// See cudnn_frontend_variant.h.
#include "bench/frontend/cudnn_frontend_variant.h"

#include <cuda_runtime_api.h>

#include <memory>
#include <unordered_map>
#include <vector>

#include <cudnn_frontend.h>

namespace fe = cudnn_frontend;

std::function<int(int)> cudnn_frontend_matmul(cudnnHandle_t handle, cudaStream_t stream, std::int64_t m,
                                              std::int64_t n, std::int64_t k, void* a, void* b, void* c,
                                              std::string& error, std::string& version) {
  version = std::to_string(CUDNN_FRONTEND_MAJOR_VERSION) + "." + std::to_string(CUDNN_FRONTEND_MINOR_VERSION) + "." +
            std::to_string(CUDNN_FRONTEND_PATCH_VERSION);
  auto graph = std::make_shared<fe::graph::Graph>();
  graph->set_io_data_type(fe::DataType_t::BFLOAT16)
      .set_intermediate_data_type(fe::DataType_t::FLOAT)
      .set_compute_data_type(fe::DataType_t::FLOAT);
  auto A = graph->tensor(fe::graph::Tensor_attributes().set_name("A").set_uid(1).set_dim({1, m, k}).set_stride(
      {m * k, k, 1}));
  auto B = graph->tensor(fe::graph::Tensor_attributes().set_name("B").set_uid(2).set_dim({1, k, n}).set_stride(
      {k * n, n, 1}));
  auto C = graph->matmul(A, B, fe::graph::Matmul_attributes().set_name("gemm"));
  C->set_output(true).set_uid(3).set_data_type(fe::DataType_t::BFLOAT16);
  if (auto built = graph->build(handle, {fe::HeurMode_t::A}); !built.is_good()) {
    error = "cudnn-frontend build: " + built.get_message();
    return {};
  }
  std::int64_t workspace_size = 0;
  if (auto sized = graph->get_workspace_size(workspace_size); !sized.is_good()) {
    error = "cudnn-frontend workspace: " + sized.get_message();
    return {};
  }
  void* workspace = nullptr;
  if (workspace_size > 0 && cudaMalloc(&workspace, static_cast<std::size_t>(workspace_size)) != cudaSuccess) {
    error = "cudaMalloc of cudnn-frontend's workspace";
    return {};
  }
  // What a cudnn-frontend user writes per call: set the stream, execute with a map of pointers.
  return [graph, handle, stream, a, b, c, workspace](int calls) {
    int failures = 0;
    for (int i = 0; i < calls; ++i) {
      cudnnSetStream(handle, stream);
      std::unordered_map<std::int64_t, void*> pointers = {{1, a}, {2, b}, {3, c}};
      failures += graph->execute(handle, pointers, workspace).is_good() ? 0 : 1;
    }
    return failures;
  };
}
