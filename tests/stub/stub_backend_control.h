// What the stub's backend API (stub_backend.cpp) records, and how a test steers it.
//
// The stub keeps real descriptors in memory and checks what cuDNN would check on the paths the
// frontend uses: required attributes present and of the right type before a finalize, referenced
// descriptors alive and finalized, a variant pack that gives every non-virtual tensor of the plan's
// graph a pointer, and on variant packs the attribute names and types cuDNN accepts. It runs
// nothing. Its heuristics offer engines by number (0 to 15); a test can make an engine's plans fail
// to finalize, give it numerical or behaviour notes or a workspace, and refuse operation graphs
// outright.
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
  std::uint64_t populate_cuda_graph;
  std::uint64_t update_cuda_graph;
  // With a stub libcuda loaded (stub_cuda.h): an execute on a capturing stream is recorded into
  // the capture instead of running, and runs at each launch of a graph made from it.
  std::uint64_t runs;            // executes that ran: directly, or replayed by a graph launch
  std::uint64_t captured;        // executes recorded into a capture
  std::uint64_t replays;         // executes run by a graph launch
  std::uint64_t stale_replays;   // replays whose handle or plan is gone, or another now (not the
                                 // pack: a graph holds its pointers, as cuDNN's kernels do)
};
StubBackendCounters stubbackend_counters(void);

// Descriptors of `type` created since the process started.
std::uint64_t stubbackend_created(cudnnBackendDescriptorType_t type);
// Descriptors of `type` alive now (created and not destroyed).
std::uint64_t stubbackend_live(cudnnBackendDescriptorType_t type);
// Whether `descriptor` is a live descriptor (created and not destroyed).
int stubbackend_is_live(cudnnBackendDescriptor_t descriptor);

// Creates a variant pack the way cuDNN's own code would: a call of cudnnBackendCreateDescriptor
// made from inside libcudnn.so.9, through the library's own PLT (so an interposer sees a caller
// in libcudnn). What cudnnBackendCreateDescriptor returned.
cudnnStatus_t stubbackend_create_pack_internally(cudnnBackendDescriptor_t* descriptor);

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
// Variant packs fail to finalize with `status`, whatever they hold (CUDNN_STATUS_SUCCESS: they
// finalize): cuDNN refusing a pack of a form it accepted before.
void stubbackend_refuse_variant_packs(cudnnStatus_t status);
// What cudnnBackendExecute returns once its checks pass.
void stubbackend_set_execute_status(cudnnStatus_t status);

// Which call ran a plan.
typedef enum {
  STUBBACKEND_EXECUTE = 1,              // cudnnBackendExecute
  STUBBACKEND_POPULATE_CUDA_GRAPH = 2,  // cudnnBackendPopulateCudaGraph
  STUBBACKEND_UPDATE_CUDA_GRAPH = 3,    // cudnnBackendUpdateCudaGraph
} StubBackendCallKind;

// A call that ran a plan and passed the stub's checks: the plan finalized, the variant pack a live
// finalized variant pack of the stub's that gives each tensor of the graph a pointer.
struct StubBackendExecution {
  cudnnHandle_t handle;
  cudnnBackendDescriptor_t plan;
  cudnnBackendDescriptor_t variant_pack;
  std::int64_t engine;  // of the plan's engine configuration
  std::int64_t tensor_count;
  std::int64_t uids[16];
  void* pointers[16];
  void* workspace;
  StubBackendCallKind kind;
  cudaGraph_t graph;  // null for an execute
  // By-value tensors of the plan's graph (CUDNN_ATTR_TENSOR_IS_BY_VALUE), in graph order: their
  // uids and the bytes read from their host pointers when the execute was made (for a replay,
  // when it was captured), as in cuDNN, which reads them at execute.
  std::int64_t by_value_count;
  std::int64_t by_value_uids[4];
  std::uint64_t by_value_bits[4];  // up to 8 bytes each, zero-extended
  int replayed;                    // run by a graph launch
  cudaStream_t stream;             // the handle's stream when the execute was made
  std::uint64_t handle_serial, plan_serial, pack_serial;  // tell descriptors at one address apart
};
// How an execute does its work: STUBBACKEND_OPAQUE (the default), one node of the stub driver's
// own that replays the recorded execute (a host node to the driver's API, whose work no update can
// move), or a kernel style (stub_kernel_style.h): the execute's kernels (stub_styled_kernels.h)
// carry its plan's and handle's serials, the pack's uids and pointers (its last tensor the output,
// the others inputs; a by-value tensor's pointer zeroed, its bytes carried), the workspace and the
// by-value bytes, and write a digest of them and of the inputs' first 8 bytes into the output's
// first 8 bytes. A replayed execute is recorded (stubbackend_last_execution) from the blob its
// kernels saw: its variant_pack is null, a by-value tensor's pointer too. Returns the style before,
// or -2 for a style that is none of these.
enum { STUBBACKEND_OPAQUE = -1 };
int stubbackend_set_kernel_style(int style);
// The kernels' run of plan `plan` on `count` tensors (uids, pointers) and `workspace`, at once and
// recording nothing, in the current kernel style: the digest a correct execute of them writes now.
// CUDNN_STATUS_BAD_PARAM for a plan that is not a live finalized one, or a count outside 1 to 16.
cudnnStatus_t stubbackend_reference_execute(cudnnHandle_t handle, cudnnBackendDescriptor_t plan, std::int64_t count,
                                            const std::int64_t* uids, void* const* pointers, void* workspace);

// The last cudnnBackendExecute that passed the stub's checks and ran (directly or replayed).
StubBackendExecution stubbackend_last_execution(void);
// The same, of those run on the calling thread.
StubBackendExecution stubbackend_thread_last_execution(void);
// The last cudnnBackendExecute, cudnnBackendPopulateCudaGraph or cudnnBackendUpdateCudaGraph that
// passed them.
StubBackendExecution stubbackend_last_call(void);

}  // extern "C"
