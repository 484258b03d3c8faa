// What the stub's backend API (stub_backend.cpp) records, and how a test steers it.
//
// The stub keeps real descriptors in memory and checks what cuDNN would check on the paths the
// frontend uses: required attributes present and of the right type before a finalize, referenced
// descriptors alive and finalized, a variant pack that gives every non-virtual tensor of the plan's
// graph a pointer. It runs nothing. Its heuristics offer engines by number (0 to 15); a test can
// make an engine's plans fail to finalize, give it numerical or behaviour notes or a workspace, and refuse
// operation graphs outright.
#pragma once

#include <cudnn_graph.h>

#include <cstdint>

extern "C" {

// Calls that reached the stub's backend API since the process started. Tests compare snapshots.
struct StubBackendCounters {
  std::uint64_t create_descriptor;
  std::uint64_t destroy_descriptor;
  std::uint64_t set_attribute;
  std::uint64_t get_attribute;
  std::uint64_t finalize;
  std::uint64_t execute;
  std::uint64_t get_last_error_string;
  std::uint64_t live_descriptors;  // created and not yet destroyed
};
StubBackendCounters stubbackend_counters(void);

// Descriptors of `type` created since the process started.
std::uint64_t stubbackend_created(cudnnBackendDescriptorType_t type);

// Back to the defaults below (the counters keep counting):
//   heuristics mode A offers engines {0, 1}, FALLBACK offers {2}, the other modes nothing;
//   no engine is refused, has notes or needs a workspace; graphs are accepted; execute succeeds.
void stubbackend_reset(void);

void stubbackend_set_heuristic_results(cudnnBackendHeurMode_t mode, const std::int64_t* engines,
                                       std::int64_t count);
void stubbackend_set_engine_notes(std::int64_t engine, const cudnnBackendNumericalNote_t* notes,
                                  std::int64_t count);
void stubbackend_set_engine_behaviour_notes(std::int64_t engine,
                                            const cudnnBackendBehaviorNote_t* notes,
                                            std::int64_t count);
void stubbackend_set_engine_workspace(std::int64_t engine, std::int64_t bytes);
// Execution plans of `engine` fail to finalize with `status` (CUDNN_STATUS_SUCCESS: they finalize).
void stubbackend_refuse_engine(std::int64_t engine, cudnnStatus_t status);
// Operation graphs fail to finalize with `status` (CUDNN_STATUS_SUCCESS: they finalize).
void stubbackend_refuse_operation_graphs(cudnnStatus_t status);
// What cudnnBackendExecute returns once its checks pass.
void stubbackend_set_execute_status(cudnnStatus_t status);

// The last cudnnBackendExecute that passed the stub's checks.
struct StubBackendExecution {
  cudnnHandle_t handle;
  cudnnBackendDescriptor_t plan;
  cudnnBackendDescriptor_t variant_pack;
  std::int64_t engine;  // of the plan's engine configuration
  std::int64_t tensor_count;
  std::int64_t uids[16];
  void* pointers[16];
  void* workspace;
};
StubBackendExecution stubbackend_last_execution(void);

}  // extern "C"
