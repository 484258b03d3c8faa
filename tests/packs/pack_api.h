// The cuDNN backend calls a variant-pack scenario (pack_scenario.cpp) or benchmark makes, reached
// the way its load mode says, and the stub's controls; and a small matmul execution plan built
// with raw backend calls, the way PyTorch's cuDNN frontend builds one.
#pragma once

#include <cudnn.h>

#include <cstdint>
#include <type_traits>

#include "tests/stub/stub_backend_control.h"
#include "tests/stub/stub_control.h"

struct PackApi {
  // cuDNN, as the program calls it (through the shim when one is preloaded and interposes).
  cudnnStatus_t (*create_handle)(cudnnHandle_t*);
  cudnnStatus_t (*destroy_handle)(cudnnHandle_t);
  cudnnStatus_t (*set_stream)(cudnnHandle_t, cudaStream_t);
  cudnnStatus_t (*create)(cudnnBackendDescriptorType_t, cudnnBackendDescriptor_t*);
  cudnnStatus_t (*destroy)(cudnnBackendDescriptor_t);
  cudnnStatus_t (*set)(cudnnBackendDescriptor_t, cudnnBackendAttributeName_t, cudnnBackendAttributeType_t,
                       std::int64_t, const void*);
  cudnnStatus_t (*get)(cudnnBackendDescriptor_t, cudnnBackendAttributeName_t, cudnnBackendAttributeType_t,
                       std::int64_t, std::int64_t*, void*);
  cudnnStatus_t (*finalize)(cudnnBackendDescriptor_t);
  cudnnStatus_t (*initialize)(cudnnBackendDescriptor_t);
  cudnnStatus_t (*execute)(cudnnHandle_t, cudnnBackendDescriptor_t, cudnnBackendDescriptor_t);
  cudnnStatus_t (*populate_cuda_graph)(cudnnHandle_t, cudnnBackendDescriptor_t, cudnnBackendDescriptor_t,
                                       cudaGraph_t);
  cudnnStatus_t (*update_cuda_graph)(cudnnHandle_t, cudnnBackendDescriptor_t, cudnnBackendDescriptor_t,
                                     cudaGraph_t);

  // The stub's controls (stub_backend_control.h, stub_control.h): nothing interposes them.
  std::uint64_t (*created)(cudnnBackendDescriptorType_t);
  std::uint64_t (*live)(cudnnBackendDescriptorType_t);
  StubBackendCounters (*counters)();
  StubCudnnCounters (*cudnn_counters)();
  StubBackendExecution (*last_execution)();
  StubBackendExecution (*last_call)();
  cudnnStatus_t (*create_pack_internally)(cudnnBackendDescriptor_t*);
  void (*set_engine_workspace)(std::int64_t, std::int64_t);
};

// The calls through the program's own symbol lookup: the shim's where it interposes, the stub's
// otherwise (for programs that link the stub; the framework library has wrappers of its own).
inline PackApi linked_pack_api() {
  return {cudnnCreate, cudnnDestroy, cudnnSetStream, cudnnBackendCreateDescriptor,
          cudnnBackendDestroyDescriptor, cudnnBackendSetAttribute, cudnnBackendGetAttribute,
          cudnnBackendFinalize, cudnnBackendInitialize, cudnnBackendExecute,
          cudnnBackendPopulateCudaGraph, cudnnBackendUpdateCudaGraph,
          stubbackend_created, stubbackend_live, stubbackend_counters, stubcudnn_counters,
          stubbackend_last_execution, stubbackend_last_call, stubbackend_create_pack_internally,
          stubbackend_set_engine_workspace};
}

// The calls by name, as a program that looks them up makes them: cuDNN's from
// `look_up(functions, name)` (RTLD_DEFAULT, or a libcudnn handle), the stub's controls from
// `look_up(controls, name)`. False, with the first name not found in `missing`, when one is not.
// Inline in the program: the lookups are the program's own (the shim's dlsym sees it as the caller).
template <typename LookUp>
bool pack_api_from(PackApi& api, LookUp&& look_up, void* functions, void* controls, const char*& missing) {
  bool complete = true;
  auto take = [&](auto& out, void* where, const char* name) {
    out = reinterpret_cast<std::remove_reference_t<decltype(out)>>(look_up(where, name));
    if (out == nullptr && complete) complete = false, missing = name;
  };
  take(api.create_handle, functions, "cudnnCreate");
  take(api.destroy_handle, functions, "cudnnDestroy");
  take(api.set_stream, functions, "cudnnSetStream");
  take(api.create, functions, "cudnnBackendCreateDescriptor");
  take(api.destroy, functions, "cudnnBackendDestroyDescriptor");
  take(api.set, functions, "cudnnBackendSetAttribute");
  take(api.get, functions, "cudnnBackendGetAttribute");
  take(api.finalize, functions, "cudnnBackendFinalize");
  take(api.initialize, functions, "cudnnBackendInitialize");
  take(api.execute, functions, "cudnnBackendExecute");
  take(api.populate_cuda_graph, functions, "cudnnBackendPopulateCudaGraph");
  take(api.update_cuda_graph, functions, "cudnnBackendUpdateCudaGraph");
  take(api.created, controls, "stubbackend_created");
  take(api.live, controls, "stubbackend_live");
  take(api.counters, controls, "stubbackend_counters");
  take(api.cudnn_counters, controls, "stubcudnn_counters");
  take(api.last_execution, controls, "stubbackend_last_execution");
  take(api.last_call, controls, "stubbackend_last_call");
  take(api.create_pack_internally, controls, "stubbackend_create_pack_internally");
  take(api.set_engine_workspace, controls, "stubbackend_set_engine_workspace");
  return complete;
}

// Exported by libpack_framework.so: the calls as a framework library that links libcudnn makes
// them (through its own PLT), the way libtorch_cuda does.
extern "C" const PackApi* pack_framework_api();

// A matmul C[1,M,N] = A[1,M,K] x B[1,K,N] in fp32, as an execution plan of engine configuration
// 0 of heuristics mode A. Every descriptor it made stays alive until release(): the stub checks a
// variant pack against the graph's tensors only while they live.
class MatmulPlan {
 public:
  static constexpr int kDescriptors = 9;

  // uids: the unique ids of A, B and C. Returns CUDNN_STATUS_SUCCESS or the first failure.
  cudnnStatus_t build(const PackApi& api, cudnnHandle_t handle, const std::int64_t uids[3]) {
    api_ = &api;
    const std::int64_t m = 64, n = 32, k = 16;
    const std::int64_t dims[3][3] = {{1, m, k}, {1, k, n}, {1, m, n}};
    cudnnBackendDescriptor_t tensors[3] = {};
    cudnnStatus_t s = CUDNN_STATUS_SUCCESS;
    for (int t = 0; t < 3 && s == CUDNN_STATUS_SUCCESS; ++t) {
      const std::int64_t strides[3] = {dims[t][1] * dims[t][2], dims[t][2], 1};
      const cudnnDataType_t type = CUDNN_DATA_FLOAT;
      const std::int64_t alignment = 16;
      s = make(CUDNN_BACKEND_TENSOR_DESCRIPTOR, &tensors[t]);
      if (s == 0) s = api.set(tensors[t], CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uids[t]);
      if (s == 0) s = api.set(tensors[t], CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &type);
      if (s == 0) s = api.set(tensors[t], CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 3, dims[t]);
      if (s == 0) s = api.set(tensors[t], CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 3, strides);
      if (s == 0) s = api.set(tensors[t], CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &alignment);
      if (s == 0) s = api.finalize(tensors[t]);
    }
    cudnnBackendDescriptor_t matmul = nullptr, operation = nullptr, graph = nullptr, heuristics = nullptr;
    const cudnnDataType_t compute = CUDNN_DATA_FLOAT;
    if (s == 0) s = make(CUDNN_BACKEND_MATMUL_DESCRIPTOR, &matmul);
    if (s == 0) s = api.set(matmul, CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &compute);
    if (s == 0) s = api.finalize(matmul);
    if (s == 0) s = make(CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR, &operation);
    const cudnnBackendAttributeName_t operands[3] = {CUDNN_ATTR_OPERATION_MATMUL_ADESC,
                                                     CUDNN_ATTR_OPERATION_MATMUL_BDESC,
                                                     CUDNN_ATTR_OPERATION_MATMUL_CDESC};
    for (int t = 0; t < 3 && s == 0; ++t)
      s = api.set(operation, operands[t], CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &tensors[t]);
    if (s == 0) s = api.set(operation, CUDNN_ATTR_OPERATION_MATMUL_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &matmul);
    if (s == 0) s = api.finalize(operation);
    if (s == 0) s = make(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, &graph);
    if (s == 0) s = api.set(graph, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle);
    if (s == 0) s = api.set(graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &operation);
    if (s == 0) s = api.finalize(graph);
    const cudnnBackendHeurMode_t mode = CUDNN_HEUR_MODE_A;
    if (s == 0) s = make(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, &heuristics);
    if (s == 0) s = api.set(heuristics, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &graph);
    if (s == 0) s = api.set(heuristics, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode);
    if (s == 0) s = api.finalize(heuristics);
    cudnnBackendDescriptor_t config = nullptr;
    std::int64_t returned = 0;
    if (s == 0) s = make(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, &config);
    if (s == 0)
      s = api.get(heuristics, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &returned, &config);
    if (s == 0 && returned != 1) s = CUDNN_STATUS_NOT_SUPPORTED;
    if (s == 0) s = make(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, &plan_);
    if (s == 0) s = api.set(plan_, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle);
    if (s == 0) s = api.set(plan_, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &config);
    if (s == 0) s = api.finalize(plan_);
    return s;
  }

  cudnnBackendDescriptor_t plan() const { return plan_; }

  // Destroys every descriptor it made, the plan last.
  void release() {
    for (int i = 0; i < count_; ++i)
      if (made_[i] != plan_) api_->destroy(made_[i]);
    if (plan_ != nullptr) api_->destroy(plan_);
    count_ = 0;
    plan_ = nullptr;
  }

 private:
  cudnnStatus_t make(cudnnBackendDescriptorType_t type, cudnnBackendDescriptor_t* out) {
    const cudnnStatus_t s = api_->create(type, out);
    if (s == CUDNN_STATUS_SUCCESS && count_ < kDescriptors + 1) made_[count_++] = *out;
    return s;
  }

  const PackApi* api_ = nullptr;
  cudnnBackendDescriptor_t plan_ = nullptr;
  cudnnBackendDescriptor_t made_[kDescriptors + 1] = {};
  int count_ = 0;
};
