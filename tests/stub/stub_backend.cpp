// The backend API of the fake libcudnn.so.9: descriptors kept in memory, checked the way cuDNN
// checks them on the paths the frontend takes, and executed by recording what would have run.
// See stub_backend_control.h for what a test can read and steer.
#include <cudnn_graph.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <unordered_set>
#include <vector>

#include "tests/stub/stub_backend_control.h"
#include "tests/stub/stub_cuda.h"
#include "tests/stub/stub_styled_kernels.h"

// The driver stub, when the process has one (a weak reference: the stub libcudnn does not need it).
extern "C" __attribute__((weak)) int stubcuda_capture_node(CUstream, void (*)(const void*), const void*, std::size_t);
extern "C" cudaStream_t stubcudnn_handle_stream(cudnnHandle_t handle);
extern "C" std::uint64_t stubcudnn_handle_serial(cudnnHandle_t handle);
namespace stubcudnnblas {
void run_inner_lt_matmul(cudnnHandle_t handle);  // stub_cudnn_blas.cpp: the matmul a test may ask for
}

namespace {

constexpr int kEngines = 16;
constexpr int kDescriptorTypes = 64;
constexpr int kHeuristicModes = CUDNN_HEUR_MODES_COUNT;

struct Attribute {
  cudnnBackendAttributeType_t type;
  std::int64_t count;
  std::vector<unsigned char> bytes;
};

struct StubDescriptor {
  cudnnBackendDescriptorType_t type;
  bool finalized = false;
  std::map<int, Attribute> attributes;
  // Filled in by the stub itself: the engine of an engine configuration (from the heuristics) or
  // of an engine descriptor (read from a configuration), and the graph the heuristics were asked
  // about.
  std::int64_t engine = -1;
  StubDescriptor* graph = nullptr;
  std::uint64_t serial = 0;  // which create made it: tells descriptors at one address apart
};

struct EngineBehaviour {
  cudnnStatus_t plan_status = CUDNN_STATUS_SUCCESS;
  std::int64_t workspace = 0;
  std::vector<cudnnBackendNumericalNote_t> notes;
  std::vector<cudnnBackendBehaviorNote_t> behaviour;
};

// Everything below is under g_lock.
std::mutex g_lock;
std::unordered_set<StubDescriptor*>* g_live = nullptr;
// Destroyed descriptors by type, the last destroyed first: the next descriptor of that type takes
// its address, as the allocator mostly does, but every time, so that the tests of a descriptor met
// again at an old address are certain whatever else the process allocated in between. Made once
// and never destroyed, as g_live: the descriptors stay reachable to the leak checker at exit.
std::vector<StubDescriptor*>* g_released = nullptr;  // kDescriptorTypes of them
std::vector<std::int64_t> g_heuristics[kHeuristicModes];
EngineBehaviour g_engines[kEngines];
cudnnStatus_t g_graph_status = CUDNN_STATUS_SUCCESS;
cudnnStatus_t g_pack_status = CUDNN_STATUS_SUCCESS;  // what a variant pack's finalize fails with
cudnnStatus_t g_execute_status = CUDNN_STATUS_SUCCESS;
StubBackendExecution g_last_execution{};  // the last cudnnBackendExecute that passed the checks
StubBackendExecution g_last_call{};       // the last of execute, populate and update that did
std::uint64_t g_created_by_type[kDescriptorTypes] = {};

std::atomic<std::uint64_t> g_create{0}, g_destroy{0}, g_set{0}, g_get{0}, g_finalize{0},
    g_execute{0}, g_last_error_reads{0}, g_populate{0}, g_update{0};
std::uint64_t g_serials = 0, g_runs = 0, g_captured = 0, g_replays = 0, g_stale_replays = 0;  // under g_lock
thread_local StubBackendExecution t_last_execution{};

thread_local char t_last_error[256] = "";

void reset_configuration_locked() {
  for (auto& offered : g_heuristics) offered.clear();
  g_heuristics[CUDNN_HEUR_MODE_A] = {0, 1};
  g_heuristics[CUDNN_HEUR_MODE_FALLBACK] = {2};
  for (EngineBehaviour& engine : g_engines) engine = EngineBehaviour{};
  g_graph_status = CUDNN_STATUS_SUCCESS;
  g_pack_status = CUDNN_STATUS_SUCCESS;
  g_execute_status = CUDNN_STATUS_SUCCESS;
}

struct Defaults {
  Defaults() {
    std::lock_guard<std::mutex> guard(g_lock);
    g_live = new std::unordered_set<StubDescriptor*>;
    g_released = new std::vector<StubDescriptor*>[kDescriptorTypes];
    reset_configuration_locked();
  }
} g_defaults;

// A failure, with the sentence cudnnGetLastErrorString will return.
cudnnStatus_t fail(cudnnStatus_t status, const char* format, std::int64_t value = 0) {
  std::snprintf(t_last_error, sizeof t_last_error, format, static_cast<long long>(value));
  return status;
}

StubDescriptor* live(cudnnBackendDescriptor_t descriptor) {
  auto* d = static_cast<StubDescriptor*>(descriptor);
  return g_live->count(d) ? d : nullptr;
}

std::size_t element_size(cudnnBackendAttributeType_t type) {
  switch (type) {
    case CUDNN_TYPE_HANDLE:
    case CUDNN_TYPE_VOID_PTR:
    case CUDNN_TYPE_BACKEND_DESCRIPTOR: return sizeof(void*);
    case CUDNN_TYPE_INT64:
    case CUDNN_TYPE_DOUBLE: return 8;
    case CUDNN_TYPE_BOOLEAN: return sizeof(bool);
    case CUDNN_TYPE_CHAR: return 1;
    case CUDNN_TYPE_FRACTION: return sizeof(cudnnFraction_t);
    default: return 4;  // float, int32 and the enumerations
  }
}

const Attribute* find(const StubDescriptor& d, cudnnBackendAttributeName_t name) {
  auto it = d.attributes.find(name);
  return it == d.attributes.end() ? nullptr : &it->second;
}

template <typename T>
T element(const Attribute& attribute, std::int64_t index) {
  T value;
  std::memcpy(&value, attribute.bytes.data() + index * sizeof(T), sizeof(T));
  return value;
}

// The descriptor an attribute of `d` refers to, if it is alive.
StubDescriptor* referenced(const StubDescriptor& d, cudnnBackendAttributeName_t name,
                           std::int64_t index = 0) {
  const Attribute* a = find(d, name);
  if (a == nullptr || a->type != CUDNN_TYPE_BACKEND_DESCRIPTOR || index >= a->count) return nullptr;
  return live(element<cudnnBackendDescriptor_t>(*a, index));
}

struct Required {
  cudnnBackendAttributeName_t name;
  cudnnBackendAttributeType_t type;
};

// What each descriptor the frontend finalizes must have, as cuDNN requires it.
std::vector<Required> required_for(cudnnBackendDescriptorType_t type) {
  switch (type) {
    case CUDNN_BACKEND_TENSOR_DESCRIPTOR:
      return {{CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64},
              {CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE},
              {CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64},
              {CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64},
              {CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64}};
    case CUDNN_BACKEND_MATMUL_DESCRIPTOR:
      return {{CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_TYPE_DATA_TYPE}};
    case CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR:
      return {{CUDNN_ATTR_OPERATION_MATMUL_ADESC, CUDNN_TYPE_BACKEND_DESCRIPTOR},
              {CUDNN_ATTR_OPERATION_MATMUL_BDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR},
              {CUDNN_ATTR_OPERATION_MATMUL_CDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR},
              {CUDNN_ATTR_OPERATION_MATMUL_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR}};
    case CUDNN_BACKEND_POINTWISE_DESCRIPTOR:
      return {{CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE}};
    case CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR:
      return {{CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, CUDNN_TYPE_BACKEND_DESCRIPTOR},
              {CUDNN_ATTR_OPERATION_POINTWISE_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR},
              {CUDNN_ATTR_OPERATION_POINTWISE_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR}};
    case CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR:
      return {{CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE},
              {CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE},
              {CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64},
              {CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64},
              {CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64},
              {CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64},
              {CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64}};
    case CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR:
      return {{CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, CUDNN_TYPE_BACKEND_DESCRIPTOR},
              {CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, CUDNN_TYPE_BACKEND_DESCRIPTOR},
              {CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, CUDNN_TYPE_BACKEND_DESCRIPTOR},
              {CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR},
              {CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, CUDNN_TYPE_FLOAT},
              {CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, CUDNN_TYPE_FLOAT}};
    case CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR:
      return {{CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE},
              {CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR}};
    case CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR:
      return {{CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR},
              {CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE}};
    case CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR:
      return {{CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE},
              {CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_TYPE_BACKEND_DESCRIPTOR}};
    case CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR:
      return {{CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64},
              {CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR}};
    default:
      return {};
  }
}

cudnnStatus_t check_finalizable(const StubDescriptor& d) {
  for (const Required& r : required_for(d.type)) {
    const Attribute* a = find(d, r.name);
    if (a == nullptr || a->type != r.type || a->count < 1)
      return fail(CUDNN_STATUS_BAD_PARAM, "stub: attribute %lld missing or of the wrong type", r.name);
  }
  // Every descriptor referred to must be alive and finalized.
  for (const auto& [name, a] : d.attributes) {
    if (a.type != CUDNN_TYPE_BACKEND_DESCRIPTOR) continue;
    for (std::int64_t i = 0; i < a.count; ++i) {
      const StubDescriptor* target = live(element<cudnnBackendDescriptor_t>(a, i));
      if (target == nullptr || !target->finalized)
        return fail(CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED,
                    "stub: attribute %lld refers to a descriptor that is not finalized", name);
    }
  }
  if (d.type == CUDNN_BACKEND_TENSOR_DESCRIPTOR &&
      find(d, CUDNN_ATTR_TENSOR_DIMENSIONS)->count != find(d, CUDNN_ATTR_TENSOR_STRIDES)->count)
    return fail(CUDNN_STATUS_BAD_PARAM, "stub: %lld dimensions and a different number of strides",
                find(d, CUDNN_ATTR_TENSOR_DIMENSIONS)->count);
  if (d.type == CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR &&
      find(d, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS)->count !=
          find(d, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS)->count)
    return fail(CUDNN_STATUS_BAD_PARAM, "stub: %lld unique ids and a different number of pointers",
                find(d, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS)->count);
  if (d.type == CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR && g_pack_status != CUDNN_STATUS_SUCCESS)
    return fail(g_pack_status, "stub: variant packs are refused (status %lld)", g_pack_status);
  if (d.type == CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR && g_graph_status != CUDNN_STATUS_SUCCESS)
    return fail(g_graph_status, "stub: operation graphs are refused (status %lld)", g_graph_status);
  if (d.type == CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR) {
    const StubDescriptor* config = referenced(d, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG);
    if (config->type != CUDNN_BACKEND_ENGINECFG_DESCRIPTOR || config->engine < 0)
      return fail(CUDNN_STATUS_BAD_PARAM, "stub: the plan's engine configuration came from no heuristics");
    const cudnnStatus_t refusal = g_engines[config->engine].plan_status;
    if (refusal != CUDNN_STATUS_SUCCESS)
      return fail(refusal, "stub: engine %lld does not support this graph", config->engine);
  }
  return CUDNN_STATUS_SUCCESS;
}

// The unique ids of the non-virtual tensors of the graph a plan was built for (at most 16).
std::int64_t graph_tensors(const StubDescriptor& plan, std::int64_t uids[16]) {
  const StubDescriptor* config = referenced(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG);
  const StubDescriptor* graph = config ? config->graph : nullptr;
  if (graph == nullptr || !g_live->count(const_cast<StubDescriptor*>(graph))) return 0;
  std::int64_t count = 0;
  const Attribute* ops = find(*graph, CUDNN_ATTR_OPERATIONGRAPH_OPS);
  for (std::int64_t op = 0; ops != nullptr && op < ops->count; ++op) {
    const StubDescriptor* operation = live(element<cudnnBackendDescriptor_t>(*ops, op));
    if (operation == nullptr) continue;
    for (const auto& [name, a] : operation->attributes) {
      if (a.type != CUDNN_TYPE_BACKEND_DESCRIPTOR) continue;
      const StubDescriptor* tensor = live(element<cudnnBackendDescriptor_t>(a, 0));
      if (tensor == nullptr || tensor->type != CUDNN_BACKEND_TENSOR_DESCRIPTOR) continue;
      const Attribute* is_virtual = find(*tensor, CUDNN_ATTR_TENSOR_IS_VIRTUAL);
      if (is_virtual != nullptr && element<bool>(*is_virtual, 0)) continue;
      const auto uid = element<std::int64_t>(*find(*tensor, CUDNN_ATTR_TENSOR_UNIQUE_ID), 0);
      if (std::find(uids, uids + count, uid) == uids + count && count < 16) uids[count++] = uid;
    }
  }
  return count;
}

// GetAttribute for the results the stub computes rather than stores.
cudnnStatus_t get_computed(StubDescriptor& d, cudnnBackendAttributeName_t name,
                           cudnnBackendAttributeType_t type, std::int64_t requested,
                           std::int64_t* count, void* elements, bool* handled) {
  *handled = true;
  if (d.type == CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR && name == CUDNN_ATTR_ENGINEHEUR_RESULTS) {
    const auto mode = element<cudnnBackendHeurMode_t>(*find(d, CUDNN_ATTR_ENGINEHEUR_MODE), 0);
    const std::vector<std::int64_t>& offered = g_heuristics[mode];
    const auto available = static_cast<std::int64_t>(offered.size());
    if (requested == 0) {
      *count = available;
      return CUDNN_STATUS_SUCCESS;
    }
    auto* configs = static_cast<cudnnBackendDescriptor_t*>(elements);
    const std::int64_t filled = std::min(requested, available);
    for (std::int64_t i = 0; i < filled; ++i) {
      StubDescriptor* config = live(configs[i]);
      if (config == nullptr || config->type != CUDNN_BACKEND_ENGINECFG_DESCRIPTOR)
        return fail(CUDNN_STATUS_BAD_PARAM, "stub: result %lld is not an engine configuration", i);
      config->engine = offered[i];
      config->graph = referenced(d, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH);
      config->finalized = true;
    }
    *count = filled;
    return CUDNN_STATUS_SUCCESS;
  }
  if (d.type == CUDNN_BACKEND_ENGINECFG_DESCRIPTOR && name == CUDNN_ATTR_ENGINECFG_ENGINE) {
    StubDescriptor* engine = live(*static_cast<cudnnBackendDescriptor_t*>(elements));
    if (engine == nullptr || engine->type != CUDNN_BACKEND_ENGINE_DESCRIPTOR || requested < 1)
      return fail(CUDNN_STATUS_BAD_PARAM, "stub: %lld: not an engine descriptor", name);
    engine->engine = d.engine;
    engine->finalized = true;
    *count = 1;
    return CUDNN_STATUS_SUCCESS;
  }
  if (d.type == CUDNN_BACKEND_ENGINE_DESCRIPTOR && name == CUDNN_ATTR_ENGINE_GLOBAL_INDEX) {
    *static_cast<std::int64_t*>(elements) = d.engine;
    *count = 1;
    return CUDNN_STATUS_SUCCESS;
  }
  if (d.type == CUDNN_BACKEND_ENGINE_DESCRIPTOR && name == CUDNN_ATTR_ENGINE_NUMERICAL_NOTE) {
    const auto& notes = g_engines[d.engine].notes;
    const std::int64_t n = std::min(requested, static_cast<std::int64_t>(notes.size()));
    std::copy(notes.begin(), notes.begin() + n, static_cast<cudnnBackendNumericalNote_t*>(elements));
    *count = n;
    return CUDNN_STATUS_SUCCESS;
  }
  if (d.type == CUDNN_BACKEND_ENGINE_DESCRIPTOR && name == CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE) {
    const auto& notes = g_engines[d.engine].behaviour;
    const std::int64_t n = std::min(requested, static_cast<std::int64_t>(notes.size()));
    std::copy(notes.begin(), notes.begin() + n, static_cast<cudnnBackendBehaviorNote_t*>(elements));
    *count = n;
    return CUDNN_STATUS_SUCCESS;
  }
  if (d.type == CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR &&
      name == CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE && type == CUDNN_TYPE_INT64) {
    const StubDescriptor* config = referenced(d, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG);
    *static_cast<std::int64_t*>(elements) = g_engines[config->engine].workspace;
    *count = 1;
    return CUDNN_STATUS_SUCCESS;
  }
  *handled = false;
  return CUDNN_STATUS_SUCCESS;
}

bool valid_engine(std::int64_t engine) { return engine >= 0 && engine < kEngines; }

// What cuDNN checks when an attribute is set on a variant pack: the name must be one of a variant
// pack's, with its type (and the workspace is one pointer).
cudnnStatus_t check_variant_pack_attribute(cudnnBackendAttributeName_t name,
                                           cudnnBackendAttributeType_t type, std::int64_t count) {
  cudnnBackendAttributeType_t expected;
  switch (name) {
    case CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS: expected = CUDNN_TYPE_INT64; break;
    case CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS: expected = CUDNN_TYPE_VOID_PTR; break;
    case CUDNN_ATTR_VARIANT_PACK_INTERMEDIATES: expected = CUDNN_TYPE_VOID_PTR; break;
    case CUDNN_ATTR_VARIANT_PACK_WORKSPACE: expected = CUDNN_TYPE_VOID_PTR; break;
    // cuDNN 9's dynamic-shape overrides: accepted, never looked at.
    case CUDNN_ATTR_VARIANT_PACK_OVERRIDE_UNIQUE_IDS:
    case CUDNN_ATTR_VARIANT_PACK_OVERRIDE_SHAPES:
    case CUDNN_ATTR_VARIANT_PACK_OVERRIDE_STRIDES: expected = CUDNN_TYPE_INT64; break;
    default: return fail(CUDNN_STATUS_BAD_PARAM, "stub: %lld is not an attribute of a variant pack", name);
  }
  if (type != expected)
    return fail(CUDNN_STATUS_BAD_PARAM, "stub: variant pack attribute %lld set with the wrong type", name);
  if (name == CUDNN_ATTR_VARIANT_PACK_WORKSPACE && count != 1)
    return fail(CUDNN_STATUS_BAD_PARAM, "stub: a variant pack's workspace is one pointer, not %lld", count);
  return CUDNN_STATUS_SUCCESS;
}

// The by-value tensors of the graph a plan was built for, with the bytes at their pointers in the
// pack (host memory: read now, as cuDNN reads them at execute).
void read_by_value(const StubDescriptor& plan, const Attribute& uids, const Attribute& pointers,
                   StubBackendExecution& e) {
  e.by_value_count = 0;
  const StubDescriptor* config = referenced(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG);
  const StubDescriptor* graph = config ? config->graph : nullptr;
  if (graph == nullptr || !g_live->count(const_cast<StubDescriptor*>(graph))) return;
  const Attribute* ops = find(*graph, CUDNN_ATTR_OPERATIONGRAPH_OPS);
  for (std::int64_t op = 0; ops != nullptr && op < ops->count; ++op) {
    const StubDescriptor* operation = live(element<cudnnBackendDescriptor_t>(*ops, op));
    if (operation == nullptr) continue;
    for (const auto& [name, a] : operation->attributes) {
      if (a.type != CUDNN_TYPE_BACKEND_DESCRIPTOR) continue;
      const StubDescriptor* tensor = live(element<cudnnBackendDescriptor_t>(a, 0));
      if (tensor == nullptr || tensor->type != CUDNN_BACKEND_TENSOR_DESCRIPTOR) continue;
      const Attribute* by_value = find(*tensor, CUDNN_ATTR_TENSOR_IS_BY_VALUE);
      if (by_value == nullptr || !element<bool>(*by_value, 0) || e.by_value_count == 4) continue;
      const auto uid = element<std::int64_t>(*find(*tensor, CUDNN_ATTR_TENSOR_UNIQUE_ID), 0);
      const auto type = element<cudnnDataType_t>(*find(*tensor, CUDNN_ATTR_TENSOR_DATA_TYPE), 0);
      const std::size_t size = type == CUDNN_DATA_DOUBLE || type == CUDNN_DATA_INT64 ? 8
                               : type == CUDNN_DATA_HALF || type == CUDNN_DATA_BFLOAT16 ? 2 : 4;
      for (std::int64_t j = 0; j < uids.count; ++j) {
        if (element<std::int64_t>(uids, j) != uid) continue;
        std::uint64_t bits = 0;
        std::memcpy(&bits, element<void*>(pointers, j), size);
        e.by_value_uids[e.by_value_count] = uid;
        e.by_value_bits[e.by_value_count++] = bits;
      }
    }
  }
}

// A captured execute, run by a launch of a graph made from it: exactly the execute recorded. Its
// handle and plan must still be the ones captured (a plan's kernels go with it); its pack need not
// be: the graph holds the pack's pointers, not the pack, as cuDNN's kernels do.
// Either way of replaying (the opaque node, the styled kernels) records its execute here.
void record_replay(StubBackendExecution e) {
  e.replayed = 1;
  std::lock_guard<std::mutex> guard(g_lock);
  const StubDescriptor* plan = live(e.plan);
  if (plan == nullptr || plan->serial != e.plan_serial || stubcudnn_handle_serial(e.handle) != e.handle_serial)
    ++g_stale_replays;
  ++g_runs;
  ++g_replays;
  g_last_execution = t_last_execution = e;
}

void replay_execution(const void* blob) {
  StubBackendExecution e;
  std::memcpy(&e, blob, sizeof e);
  record_replay(e);
}

// ---- executes as kernels (stubbackend_set_kernel_style) ----------------------------------------

std::atomic<int> g_kernel_style{STUBBACKEND_OPAQUE};

// What decides an execute's work as its kernels carry it (stub_styled_kernels.h): the plan's and
// the handle's identity, the pack's uids and pointers, the last tensor its output and the others
// its inputs (the stub's convention), the workspace, and the by-value tensors' bytes (their
// pointers zeroed: cuDNN bakes the values in). Never the pack itself.
struct KernelBlob {
  std::uint64_t handle_serial, plan_serial;
  std::int64_t engine, tensor_count;
  std::int64_t uids[16];
  const void* inputs[15];
  void* output;
  void* workspace;
  std::int64_t by_value_count;
  std::int64_t by_value_uids[4];
  std::uint64_t by_value_bits[4];
  cudnnHandle_t handle;
  cudnnBackendDescriptor_t plan;
};
static_assert(sizeof(KernelBlob) % 8 == 0, "a blob is whole 8-byte words");

// The kernels' scratch memory when the workspace is too small for it.
alignas(256) unsigned char g_kernel_scratch[stubkernels::kScratchBytes];

std::uint64_t kernel_read_inputs(const void* blob, std::uint64_t h) {
  for (const void* input : static_cast<const KernelBlob*>(blob)->inputs) h = stubkernels::add_read(h, input);
  return h;
}

void kernel_write_outputs(const void* blob, std::uint64_t digest) {
  stubkernels::write_digest(static_cast<const KernelBlob*>(blob)->output, digest);
}

// A graph launch ran a captured execute's last kernel: recorded from the blob as the kernel saw it
// (a run at the call is recorded by run_plan, with its pack).
void kernel_ran(const void* blob, std::uint64_t, bool replayed) {
  if (!replayed) return;
  const KernelBlob& k = *static_cast<const KernelBlob*>(blob);
  StubBackendExecution e{};
  e.handle = k.handle;
  e.plan = k.plan;
  e.engine = k.engine;
  e.tensor_count = k.tensor_count;
  for (std::int64_t i = 0; i < k.tensor_count && i < 16; ++i) {
    e.uids[i] = k.uids[i];
    e.pointers[i] = i + 1 < k.tensor_count ? const_cast<void*>(k.inputs[i]) : k.output;
  }
  e.workspace = k.workspace;
  e.kind = STUBBACKEND_EXECUTE;
  e.by_value_count = k.by_value_count;
  std::memcpy(e.by_value_uids, k.by_value_uids, sizeof e.by_value_uids);
  std::memcpy(e.by_value_bits, k.by_value_bits, sizeof e.by_value_bits);
  e.stream = stubcudnn_handle_stream(k.handle);
  e.handle_serial = k.handle_serial;
  e.plan_serial = k.plan_serial;
  record_replay(e);
}

const stubkernels::Kernels& execute_kernels() {
  static const stubkernels::Kernels* const made = [] {  // never freed: graphs may hold its kernels
    stubkernels::Family family{"cudnn_backend_execute", sizeof(KernelBlob), {},
                               static_cast<std::uint32_t>(offsetof(KernelBlob, inputs)),
                               static_cast<std::uint32_t>(offsetof(KernelBlob, inputs) + 8),
                               static_cast<std::uint32_t>(offsetof(KernelBlob, output)), false,
                               kernel_read_inputs, kernel_write_outputs, kernel_ran};
    for (std::uint32_t offset = 0; offset < sizeof(KernelBlob); offset += 8) family.blob_params.push_back({offset, 8});
    return new stubkernels::Kernels(std::move(family));
  }();
  return *made;
}

// An execute of `e` (filled in by run_plan, its pack's contents in `uids` and `pointers`) as
// kernels in the chosen style, run at once or recorded into its stream's capture: true when
// recorded. `reference`: run at once whatever the stream, recording nothing.
bool launch_kernels(const StubBackendExecution& e, std::int64_t workspace_bytes, bool reference) {
  KernelBlob b;
  std::memset(&b, 0, sizeof b);
  b.handle_serial = e.handle_serial;
  b.plan_serial = e.plan_serial;
  b.engine = e.engine;
  b.tensor_count = e.tensor_count;
  stubkernels::Call call{};
  for (std::int64_t i = 0; i < e.tensor_count; ++i) {
    b.uids[i] = e.uids[i];
    bool by_value = false;
    for (std::int64_t k = 0; k < e.by_value_count; ++k) by_value = by_value || e.by_value_uids[k] == e.uids[i];
    void* pointer = by_value ? nullptr : e.pointers[i];
    const std::size_t field = i + 1 < e.tensor_count ? offsetof(KernelBlob, inputs) + 8 * i : offsetof(KernelBlob, output);
    std::memcpy(reinterpret_cast<unsigned char*>(&b) + field, &pointer, sizeof pointer);
    if (pointer != nullptr) call.tensor_fields[call.tensor_count++] = static_cast<std::uint32_t>(field);
  }
  b.workspace = e.workspace;
  b.by_value_count = e.by_value_count;
  std::memcpy(b.by_value_uids, e.by_value_uids, sizeof b.by_value_uids);
  std::memcpy(b.by_value_bits, e.by_value_bits, sizeof b.by_value_bits);
  b.handle = e.handle;
  b.plan = e.plan;
  call.blob = &b;
  const auto inside = [](const void* tensor) {  // a pointer to the tensor's second tile
    return tensor == nullptr ? 0 : reinterpret_cast<std::uintptr_t>(tensor) + 256;
  };
  call.interior[0] = inside(b.inputs[0]);
  call.interior[1] = inside(b.output);
  call.scratch = e.workspace != nullptr && workspace_bytes >= static_cast<std::int64_t>(stubkernels::kScratchBytes)
                     ? e.workspace
                     : g_kernel_scratch;
  call.stream = reinterpret_cast<CUstream>(e.stream);
  call.reference = reference;
  return execute_kernels().launch(static_cast<StubKernelStyle>(g_kernel_style.load()), call);
}

// The checks cudnnBackendExecute, cudnnBackendPopulateCudaGraph and cudnnBackendUpdateCudaGraph
// share. On success, records the call in g_last_call (and g_last_execution for an execute).
cudnnStatus_t run_plan(StubBackendCallKind kind, cudnnHandle_t handle,
                       cudnnBackendDescriptor_t plan_descriptor,
                       cudnnBackendDescriptor_t pack_descriptor, cudaGraph_t graph) {
  const StubDescriptor* plan = live(plan_descriptor);
  const StubDescriptor* pack = live(pack_descriptor);
  if (handle == nullptr) return fail(CUDNN_STATUS_BAD_PARAM, "stub: execute without a handle");
  if (plan == nullptr || plan->type != CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR || !plan->finalized)
    return fail(CUDNN_STATUS_BAD_PARAM, "stub: execute without a finalized execution plan");
  if (pack == nullptr || pack->type != CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR || !pack->finalized)
    return fail(CUDNN_STATUS_BAD_PARAM, "stub: execute without a finalized variant pack");
  if (kind != STUBBACKEND_EXECUTE && graph == nullptr)
    return fail(CUDNN_STATUS_BAD_PARAM, "stub: call %lld without a CUDA graph", kind);

  const Attribute& uids = *find(*pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS);
  const Attribute& pointers = *find(*pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS);
  const Attribute* workspace = find(*pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE);
  std::int64_t needed[16];
  const std::int64_t needed_count = graph_tensors(*plan, needed);
  for (std::int64_t i = 0; i < needed_count; ++i) {
    bool given = false;
    for (std::int64_t j = 0; j < uids.count; ++j)
      if (element<std::int64_t>(uids, j) == needed[i] && element<void*>(pointers, j) != nullptr)
        given = true;
    if (!given) return fail(CUDNN_STATUS_BAD_PARAM, "stub: no pointer for tensor %lld", needed[i]);
  }
  const StubDescriptor* config = referenced(*plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG);
  void* workspace_pointer = workspace ? element<void*>(*workspace, 0) : nullptr;
  if (g_engines[config->engine].workspace > 0 && workspace_pointer == nullptr)
    return fail(CUDNN_STATUS_BAD_PARAM, "stub: engine %lld needs a workspace", config->engine);

  StubBackendExecution& e = g_last_call;
  e.handle = handle;
  e.plan = plan_descriptor;
  e.variant_pack = pack_descriptor;
  e.engine = config->engine;
  e.tensor_count = std::min<std::int64_t>(uids.count, 16);
  for (std::int64_t i = 0; i < e.tensor_count; ++i) {
    e.uids[i] = element<std::int64_t>(uids, i);
    e.pointers[i] = element<void*>(pointers, i);
  }
  e.workspace = workspace_pointer;
  e.kind = kind;
  e.graph = graph;
  e.replayed = 0;
  e.stream = stubcudnn_handle_stream(handle);
  e.handle_serial = stubcudnn_handle_serial(handle);
  e.plan_serial = plan->serial;
  e.pack_serial = pack->serial;
  read_by_value(*plan, uids, pointers, e);
  if (kind != STUBBACKEND_EXECUTE) return g_execute_status;
  if (g_kernel_style.load() != STUBBACKEND_OPAQUE && g_execute_status == CUDNN_STATUS_SUCCESS) {
    if (launch_kernels(e, g_engines[config->engine].workspace, false)) {
      ++g_captured;
      return CUDNN_STATUS_SUCCESS;
    }
    ++g_runs;
    g_last_execution = t_last_execution = e;
    return CUDNN_STATUS_SUCCESS;
  }
  // On a capturing stream (the driver stub loaded), the execute is recorded, not run.
  if (g_execute_status == CUDNN_STATUS_SUCCESS && stubcuda_capture_node != nullptr &&
      stubcuda_capture_node(reinterpret_cast<CUstream>(e.stream), replay_execution, &e, sizeof e) == 1) {
    ++g_captured;
    return CUDNN_STATUS_SUCCESS;
  }
  ++g_runs;
  g_last_execution = t_last_execution = e;
  return g_execute_status;
}

}  // namespace

extern "C" {

cudnnStatus_t CUDNNWINAPI cudnnBackendCreateDescriptor(cudnnBackendDescriptorType_t type,
                                                       cudnnBackendDescriptor_t* descriptor) {
  g_create.fetch_add(1, std::memory_order_relaxed);
  if (descriptor == nullptr || type < 0 || type >= kDescriptorTypes)
    return fail(CUDNN_STATUS_BAD_PARAM, "stub: cannot create descriptor type %lld", type);
  std::lock_guard<std::mutex> guard(g_lock);
  std::vector<StubDescriptor*>& released = g_released[type];
  StubDescriptor* d = released.empty() ? new StubDescriptor : released.back();
  if (!released.empty()) released.pop_back();
  *d = StubDescriptor{};
  d->type = type;
  d->serial = ++g_serials;
  g_live->insert(d);
  ++g_created_by_type[type];
  *descriptor = d;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t CUDNNWINAPI cudnnBackendDestroyDescriptor(cudnnBackendDescriptor_t descriptor) {
  g_destroy.fetch_add(1, std::memory_order_relaxed);
  std::lock_guard<std::mutex> guard(g_lock);
  StubDescriptor* d = live(descriptor);
  if (d == nullptr) return fail(CUDNN_STATUS_BAD_PARAM, "stub: destroying an unknown descriptor");
  g_live->erase(d);
  g_released[d->type].push_back(d);
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t CUDNNWINAPI cudnnBackendInitialize(cudnnBackendDescriptor_t) {
  return fail(CUDNN_STATUS_NOT_SUPPORTED, "stub: cudnnBackendInitialize is deprecated");
}

cudnnStatus_t CUDNNWINAPI cudnnBackendSetAttribute(cudnnBackendDescriptor_t descriptor,
                                                   cudnnBackendAttributeName_t name,
                                                   cudnnBackendAttributeType_t type,
                                                   int64_t count, const void* elements) {
  g_set.fetch_add(1, std::memory_order_relaxed);
  std::lock_guard<std::mutex> guard(g_lock);
  StubDescriptor* d = live(descriptor);
  if (d == nullptr) return fail(CUDNN_STATUS_BAD_PARAM, "stub: setting %lld on an unknown descriptor", name);
  if (d->finalized) return fail(CUDNN_STATUS_BAD_PARAM, "stub: setting %lld on a finalized descriptor", name);
  if (count < 0 || (count > 0 && elements == nullptr))
    return fail(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, "stub: attribute %lld without elements", name);
  if (d->type == CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR) {
    const cudnnStatus_t checked = check_variant_pack_attribute(name, type, count);
    if (checked != CUDNN_STATUS_SUCCESS) return checked;
  }
  const auto* bytes = static_cast<const unsigned char*>(elements);
  d->attributes[name] = Attribute{type, count, {bytes, bytes + count * element_size(type)}};
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t CUDNNWINAPI cudnnBackendGetAttribute(cudnnBackendDescriptor_t const descriptor,
                                                   cudnnBackendAttributeName_t name,
                                                   cudnnBackendAttributeType_t type,
                                                   int64_t requested, int64_t* count,
                                                   void* elements) {
  g_get.fetch_add(1, std::memory_order_relaxed);
  std::lock_guard<std::mutex> guard(g_lock);
  StubDescriptor* d = live(descriptor);
  if (d == nullptr) return fail(CUDNN_STATUS_BAD_PARAM, "stub: getting %lld of an unknown descriptor", name);
  if (!d->finalized)
    return fail(CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED, "stub: getting %lld of a descriptor not finalized", name);
  if (count == nullptr || (requested > 0 && elements == nullptr))
    return fail(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, "stub: getting %lld into nothing", name);
  bool handled = false;
  const cudnnStatus_t computed = get_computed(*d, name, type, requested, count, elements, &handled);
  if (handled) return computed;
  const Attribute* a = find(*d, name);
  if (a == nullptr || a->type != type)
    return fail(CUDNN_STATUS_BAD_PARAM, "stub: attribute %lld not set or of another type", name);
  const std::int64_t n = std::min(requested, a->count);
  if (n > 0) std::memcpy(elements, a->bytes.data(), n * element_size(type));
  *count = a->count;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t CUDNNWINAPI cudnnBackendFinalize(cudnnBackendDescriptor_t descriptor) {
  g_finalize.fetch_add(1, std::memory_order_relaxed);
  std::lock_guard<std::mutex> guard(g_lock);
  StubDescriptor* d = live(descriptor);
  if (d == nullptr) return fail(CUDNN_STATUS_BAD_PARAM, "stub: finalizing an unknown descriptor");
  if (d->finalized) return fail(CUDNN_STATUS_BAD_PARAM, "stub: finalizing a descriptor twice");
  const cudnnStatus_t status = check_finalizable(*d);
  if (status == CUDNN_STATUS_SUCCESS) d->finalized = true;
  return status;
}

// Allocates nothing: the frontend's tests count heap allocations around steady-state executes.
cudnnStatus_t CUDNNWINAPI cudnnBackendExecute(cudnnHandle_t handle,
                                              cudnnBackendDescriptor_t plan_descriptor,
                                              cudnnBackendDescriptor_t pack_descriptor) {
  g_execute.fetch_add(1, std::memory_order_relaxed);
  stubcudnnblas::run_inner_lt_matmul(handle);
  std::lock_guard<std::mutex> guard(g_lock);
  return run_plan(STUBBACKEND_EXECUTE, handle, plan_descriptor, pack_descriptor, nullptr);
}

// The stub builds no graph: it checks what cuDNN would check and records the call.
cudnnStatus_t CUDNNWINAPI cudnnBackendPopulateCudaGraph(cudnnHandle_t handle,
                                                        cudnnBackendDescriptor_t plan_descriptor,
                                                        cudnnBackendDescriptor_t pack_descriptor,
                                                        cudaGraph_t graph) {
  g_populate.fetch_add(1, std::memory_order_relaxed);
  std::lock_guard<std::mutex> guard(g_lock);
  return run_plan(STUBBACKEND_POPULATE_CUDA_GRAPH, handle, plan_descriptor, pack_descriptor, graph);
}

cudnnStatus_t CUDNNWINAPI cudnnBackendUpdateCudaGraph(cudnnHandle_t handle,
                                                      cudnnBackendDescriptor_t plan_descriptor,
                                                      cudnnBackendDescriptor_t pack_descriptor,
                                                      cudaGraph_t graph) {
  g_update.fetch_add(1, std::memory_order_relaxed);
  std::lock_guard<std::mutex> guard(g_lock);
  return run_plan(STUBBACKEND_UPDATE_CUDA_GRAPH, handle, plan_descriptor, pack_descriptor, graph);
}

void CUDNNWINAPI cudnnGetLastErrorString(char* message, size_t max_size) {
  g_last_error_reads.fetch_add(1, std::memory_order_relaxed);
  if (message == nullptr || max_size == 0) return;
  std::snprintf(message, max_size, "%s", t_last_error);
}

int stubbackend_set_kernel_style(int style) {
  if (style < STUBBACKEND_OPAQUE || style >= STUB_KERNEL_STYLES) return -2;
  return g_kernel_style.exchange(style);
}

cudnnStatus_t stubbackend_reference_execute(cudnnHandle_t handle, cudnnBackendDescriptor_t plan_descriptor,
                                            std::int64_t count, const std::int64_t* uids, void* const* pointers,
                                            void* workspace) {
  std::lock_guard<std::mutex> guard(g_lock);
  const StubDescriptor* plan = live(plan_descriptor);
  if (plan == nullptr || plan->type != CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR || !plan->finalized || count < 1 ||
      count > 16 || uids == nullptr || pointers == nullptr)
    return CUDNN_STATUS_BAD_PARAM;
  const auto bytes_of = [count](const void* array, std::size_t size) {
    const auto* first = static_cast<const unsigned char*>(array);
    return std::vector<unsigned char>(first, first + count * size);
  };
  const Attribute uid_array{CUDNN_TYPE_INT64, count, bytes_of(uids, sizeof *uids)};
  const Attribute pointer_array{CUDNN_TYPE_VOID_PTR, count, bytes_of(pointers, sizeof *pointers)};
  const StubDescriptor* config = referenced(*plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG);
  StubBackendExecution e{};
  e.handle = handle;
  e.plan = plan_descriptor;
  e.engine = config->engine;
  e.tensor_count = count;
  for (std::int64_t i = 0; i < count; ++i) {
    e.uids[i] = uids[i];
    e.pointers[i] = pointers[i];
  }
  e.workspace = workspace;
  e.kind = STUBBACKEND_EXECUTE;
  e.stream = stubcudnn_handle_stream(handle);
  e.handle_serial = stubcudnn_handle_serial(handle);
  e.plan_serial = plan->serial;
  read_by_value(*plan, uid_array, pointer_array, e);
  launch_kernels(e, g_engines[config->engine].workspace, true);
  return CUDNN_STATUS_SUCCESS;
}

StubBackendCounters stubbackend_counters(void) {
  std::lock_guard<std::mutex> guard(g_lock);
  return {g_create.load(), g_destroy.load(), g_set.load(), g_get.load(), g_finalize.load(),
          g_execute.load(), g_last_error_reads.load(), g_live->size(), g_populate.load(),
          g_update.load(), g_runs, g_captured, g_replays, g_stale_replays};
}

std::uint64_t stubbackend_created(cudnnBackendDescriptorType_t type) {
  std::lock_guard<std::mutex> guard(g_lock);
  return type >= 0 && type < kDescriptorTypes ? g_created_by_type[type] : 0;
}

int stubbackend_is_live(cudnnBackendDescriptor_t descriptor) {
  std::lock_guard<std::mutex> guard(g_lock);
  return g_live->count(static_cast<StubDescriptor*>(descriptor)) != 0;
}

std::uint64_t stubbackend_live(cudnnBackendDescriptorType_t type) {
  std::lock_guard<std::mutex> guard(g_lock);
  std::uint64_t count = 0;
  for (const StubDescriptor* d : *g_live) count += d->type == type;
  return count;
}

void stubbackend_reset(void) {
  std::lock_guard<std::mutex> guard(g_lock);
  reset_configuration_locked();
}

void stubbackend_set_heuristic_results(cudnnBackendHeurMode_t mode, const std::int64_t* engines,
                                       std::int64_t count) {
  std::lock_guard<std::mutex> guard(g_lock);
  if (mode < 0 || mode >= kHeuristicModes) return;
  g_heuristics[mode].clear();
  for (std::int64_t i = 0; i < count; ++i)
    if (valid_engine(engines[i])) g_heuristics[mode].push_back(engines[i]);
}

void stubbackend_set_engine_notes(std::int64_t engine, const cudnnBackendNumericalNote_t* notes,
                                  std::int64_t count) {
  std::lock_guard<std::mutex> guard(g_lock);
  if (valid_engine(engine)) g_engines[engine].notes.assign(notes, notes + count);
}

void stubbackend_set_engine_behaviour_notes(std::int64_t engine,
                                            const cudnnBackendBehaviorNote_t* notes,
                                            std::int64_t count) {
  std::lock_guard<std::mutex> guard(g_lock);
  if (valid_engine(engine)) g_engines[engine].behaviour.assign(notes, notes + count);
}

void stubbackend_set_engine_workspace(std::int64_t engine, std::int64_t bytes) {
  std::lock_guard<std::mutex> guard(g_lock);
  if (valid_engine(engine)) g_engines[engine].workspace = bytes;
}

void stubbackend_refuse_engine(std::int64_t engine, cudnnStatus_t status) {
  std::lock_guard<std::mutex> guard(g_lock);
  if (valid_engine(engine)) g_engines[engine].plan_status = status;
}

void stubbackend_refuse_operation_graphs(cudnnStatus_t status) {
  std::lock_guard<std::mutex> guard(g_lock);
  g_graph_status = status;
}

void stubbackend_refuse_variant_packs(cudnnStatus_t status) {
  std::lock_guard<std::mutex> guard(g_lock);
  g_pack_status = status;
}

void stubbackend_set_execute_status(cudnnStatus_t status) {
  std::lock_guard<std::mutex> guard(g_lock);
  g_execute_status = status;
}

StubBackendExecution stubbackend_last_execution(void) {
  std::lock_guard<std::mutex> guard(g_lock);
  return g_last_execution;
}

StubBackendExecution stubbackend_thread_last_execution(void) { return t_last_execution; }

StubBackendExecution stubbackend_last_call(void) {
  std::lock_guard<std::mutex> guard(g_lock);
  return g_last_call;
}

}  // extern "C"
