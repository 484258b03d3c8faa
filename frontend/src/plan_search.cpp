#include "plan_search.h"

#include <cstdlib>
#include <cstring>
#include <utility>
#include <vector>

#include "failure.h"

namespace cudnn_fastpath::detail {

namespace {

struct HeuristicMode {
  cudnnBackendHeurMode_t mode;
  const char* name;
};
// Mode A is the ranked list cuDNN recommends; FALLBACK lists engines that run the most graphs,
// for when none of A's work (see cuDNN's "heuristics" documentation).
constexpr HeuristicMode kHeuristicModes[] = {{CUDNN_HEUR_MODE_A, "A"},
                                             {CUDNN_HEUR_MODE_FALLBACK, "FALLBACK"}};

// What the plan search learns about an engine before building a plan with it.
struct EngineFacts {
  std::int64_t global_index = -1;
  bool notes[CUDNN_NUMERICAL_NOTE_TYPE_COUNT] = {};
  bool behaviour[CUDNN_BEHAVIOR_NOTE_TYPE_COUNT] = {};
};

// How the search went, for the message when it finds nothing.
struct SearchRecord {
  std::string offered;  // "mode A offered 2, mode FALLBACK offered 1"
  int ruled_out = 0;
  std::string ruled_out_because;
  int refused = 0;
  Status last_refusal;
  Status heuristics_failure;
};

const char* name_of(cudnnBackendNumericalNote_t note) {
  switch (note) {
    case CUDNN_NUMERICAL_NOTE_TENSOR_CORE: return "tensor_core";
    case CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS: return "down_convert_inputs";
    case CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION: return "reduced_precision_reduction";
    case CUDNN_NUMERICAL_NOTE_FFT: return "fft";
    case CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC: return "nondeterministic";
    case CUDNN_NUMERICAL_NOTE_WINOGRAD: return "winograd";
    case CUDNN_NUMERICAL_NOTE_WINOGRAD_TILE_4x4: return "winograd_4x4";
    case CUDNN_NUMERICAL_NOTE_WINOGRAD_TILE_6x6: return "winograd_6x6";
    case CUDNN_NUMERICAL_NOTE_WINOGRAD_TILE_13x13: return "winograd_13x13";
    case CUDNN_NUMERICAL_NOTE_STRICT_NAN_PROP: return "strict_nan_prop";
    default: return "other";
  }
}

const char* name_of(cudnnBackendBehaviorNote_t note) {
  switch (note) {
    case CUDNN_BEHAVIOR_NOTE_RUNTIME_COMPILATION: return "runtime_compilation";
    case CUDNN_BEHAVIOR_NOTE_SUPPORTS_CUDA_GRAPH_NATIVE_API: return "cuda_graph_native";
    case CUDNN_BEHAVIOR_NOTE_CUBLASLT_DEPENDENCY: return "cublaslt";
    case CUDNN_BEHAVIOR_NOTE_REQUIRES_FILTER_INT8x32_REORDER: return "filter_int8x32_reorder";
    case CUDNN_BEHAVIOR_NOTE_REQUIRES_BIAS_INT8x32_REORDER: return "bias_int8x32_reorder";
    default: return "other";
  }
}

// Engine configurations that heuristics `mode` offers for `graph`, best first.
Status query_heuristics(const OperationGraph& graph, const HeuristicMode& mode,
                        std::vector<BackendDescriptor>* configs) {
  const std::string what = std::string("heuristics mode ") + mode.name + " for " + graph.summary;
  BackendDescriptor heuristics;
  Status made = DescriptorBuilder(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, what)
                    .set_descriptor(CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, graph.descriptor)
                    .set(CUDNN_ATTR_ENGINEHEUR_MODE, mode.mode)
                    .finalize(&heuristics);
  if (!made.ok()) return made;

  // Asking for zero elements returns how many there are; the results are then copied into
  // engine-configuration descriptors the caller created.
  std::int64_t count = 0;
  cudnnStatus_t status = cudnnBackendGetAttribute(heuristics.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                                  CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count, nullptr);
  if (status != CUDNN_STATUS_SUCCESS) return cudnn_failure(status, "counting the results of " + what);

  configs->clear();
  std::vector<cudnnBackendDescriptor_t> raw;
  for (std::int64_t i = 0; i < count; ++i) {
    BackendDescriptor config;
    made = BackendDescriptor::create(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, "engine configuration", &config);
    if (!made.ok()) return made;
    raw.push_back(config.get());
    configs->push_back(std::move(config));
  }
  std::int64_t returned = 0;
  status = cudnnBackendGetAttribute(heuristics.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                    CUDNN_TYPE_BACKEND_DESCRIPTOR, count, &returned, raw.data());
  if (status != CUDNN_STATUS_SUCCESS) return cudnn_failure(status, "reading the results of " + what);
  if (returned < count) configs->resize(static_cast<std::size_t>(returned));
  return Status();
}

Status read_engine(const BackendDescriptor& config, EngineFacts* facts) {
  BackendDescriptor engine;
  Status made = BackendDescriptor::create(CUDNN_BACKEND_ENGINE_DESCRIPTOR, "engine", &engine);
  if (!made.ok()) return made;
  cudnnBackendDescriptor_t raw_engine = engine.get();
  std::int64_t count = 0;
  cudnnStatus_t status = cudnnBackendGetAttribute(config.get(), CUDNN_ATTR_ENGINECFG_ENGINE,
                                                  CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &count, &raw_engine);
  if (status != CUDNN_STATUS_SUCCESS)
    return cudnn_failure(status, "reading the engine of an engine configuration");
  status = cudnnBackendGetAttribute(engine.get(), CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64,
                                    1, &count, &facts->global_index);
  if (status != CUDNN_STATUS_SUCCESS) return cudnn_failure(status, "reading an engine's index");
  cudnnBackendNumericalNote_t notes[CUDNN_NUMERICAL_NOTE_TYPE_COUNT];
  status = cudnnBackendGetAttribute(engine.get(), CUDNN_ATTR_ENGINE_NUMERICAL_NOTE,
                                    CUDNN_TYPE_NUMERICAL_NOTE, CUDNN_NUMERICAL_NOTE_TYPE_COUNT,
                                    &count, notes);
  if (status != CUDNN_STATUS_SUCCESS)
    return cudnn_failure(status, "reading the numerical notes of engine " +
                                     std::to_string(facts->global_index));
  for (std::int64_t i = 0; i < count && i < CUDNN_NUMERICAL_NOTE_TYPE_COUNT; ++i)
    if (notes[i] >= 0 && notes[i] < CUDNN_NUMERICAL_NOTE_TYPE_COUNT) facts->notes[notes[i]] = true;

  cudnnBackendBehaviorNote_t behaviour[CUDNN_BEHAVIOR_NOTE_TYPE_COUNT];
  status = cudnnBackendGetAttribute(engine.get(), CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE,
                                    CUDNN_TYPE_BEHAVIOR_NOTE, CUDNN_BEHAVIOR_NOTE_TYPE_COUNT,
                                    &count, behaviour);
  if (status != CUDNN_STATUS_SUCCESS)
    return cudnn_failure(status, "reading the behaviour notes of engine " +
                                     std::to_string(facts->global_index));
  for (std::int64_t i = 0; i < count && i < CUDNN_BEHAVIOR_NOTE_TYPE_COUNT; ++i)
    if (behaviour[i] >= 0 && behaviour[i] < CUDNN_BEHAVIOR_NOTE_TYPE_COUNT)
      facts->behaviour[behaviour[i]] = true;
  return Status();
}

// NVIDIA's libraries read NVIDIA_TF32_OVERRIDE=0 as "no TF32 anywhere in this process".
bool tf32_off_process_wide() {
  const char* value = std::getenv("NVIDIA_TF32_OVERRIDE");
  return value != nullptr && std::strcmp(value, "0") == 0;
}

// Why `requirements` rule `engine` out, or nullptr when they accept it.
const char* conflict(const EngineRequirements& requirements, const EngineFacts& engine) {
  // Every description promises fp32 accumulation.
  if (engine.notes[CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION])
    return "accumulates in reduced precision";
  if (requirements.forbid_tf32 && (engine.notes[CUDNN_NUMERICAL_NOTE_TENSOR_CORE] ||
                                   engine.notes[CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS]))
    return "rounds fp32 inputs to TF32 (set allow_tf32 to accept)";
  // Measured on an H200 with cuDNN 9.19: the matmul engine built on cublasLt gives fp32 inputs
  // TF32's 1e-3 relative error, with no numerical note saying so, unless TF32 is switched off for
  // the whole process (NVIDIA_TF32_OVERRIDE=0: 1e-6).
  if (requirements.forbid_tf32 && engine.behaviour[CUDNN_BEHAVIOR_NOTE_CUBLASLT_DEPENDENCY] &&
      !tf32_off_process_wide())
    return "runs on cublasLt, which rounds fp32 inputs to TF32 unless NVIDIA_TF32_OVERRIDE=0 "
           "(set allow_tf32 to accept)";
  return nullptr;
}

std::string describe_notes(const EngineFacts& engine) {
  std::string text;
  auto add = [&text](const char* name) {
    text += text.empty() ? " [" : ", ";
    text += name;
  };
  for (int note = 0; note < CUDNN_NUMERICAL_NOTE_TYPE_COUNT; ++note)
    if (engine.notes[note]) add(name_of(static_cast<cudnnBackendNumericalNote_t>(note)));
  for (int note = 0; note < CUDNN_BEHAVIOR_NOTE_TYPE_COUNT; ++note)
    if (engine.behaviour[note]) add(name_of(static_cast<cudnnBackendBehaviorNote_t>(note)));
  return text.empty() ? text : text + "]";
}

Status finalize_plan(cudnnHandle_t handle, const BackendDescriptor& config, const std::string& what,
                     BackendDescriptor* plan) {
  // Like the operation graph's, the plan's handle attribute is deprecated in 9.19 and accepted.
  return DescriptorBuilder(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, what)
      .set(CUDNN_ATTR_EXECUTION_PLAN_HANDLE, handle)
      .set_descriptor(CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, config)
      .finalize(plan);
}

Status nothing_found(const OperationGraph& graph, const SearchRecord& record) {
  std::string message = "cuDNN has no engine for " + graph.summary + ": heuristics " +
                         (record.offered.empty() ? std::string("offered nothing") : record.offered);
  if (record.ruled_out > 0)
    message += "; " + std::to_string(record.ruled_out) + " ruled out, the last because it " +
               record.ruled_out_because;
  if (record.refused > 0)
    message += "; " + std::to_string(record.refused) +
               " refused to finalize an execution plan, the last with " +
               record.last_refusal.message();
  if (!record.heuristics_failure.ok())
    message += "; " + record.heuristics_failure.message();
  // The most specific code cuDNN gave: why the last plan, or the heuristics, failed.
  cudnnStatus_t code = CUDNN_STATUS_NOT_SUPPORTED;
  if (!record.last_refusal.ok()) code = record.last_refusal.code();
  else if (!record.heuristics_failure.ok()) code = record.heuristics_failure.code();
  return Status(code, std::move(message));
}

}  // namespace

Status read_workspace_size(cudnnBackendDescriptor_t plan, std::int64_t* bytes) {
  std::int64_t count = 0;
  const cudnnStatus_t status = cudnnBackendGetAttribute(
      plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, &count, bytes);
  if (status != CUDNN_STATUS_SUCCESS)
    return cudnn_failure(status, "reading the workspace size of an execution plan "
                                 "(is it a finalized CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR?)");
  return Status();
}

Status choose_plan(const OperationGraph& graph, cudnnHandle_t handle, ChosenPlan* out) {
  SearchRecord record;
  for (const HeuristicMode& mode : kHeuristicModes) {
    std::vector<BackendDescriptor> configs;
    Status queried = query_heuristics(graph, mode, &configs);
    if (!queried.ok()) {
      record.heuristics_failure = std::move(queried);  // the next mode may still answer
      continue;
    }
    if (!record.offered.empty()) record.offered += ", ";
    record.offered += std::string("mode ") + mode.name + " offered " + std::to_string(configs.size());

    for (std::size_t rank = 0; rank < configs.size(); ++rank) {
      EngineFacts engine;
      if (Status read = read_engine(configs[rank], &engine); !read.ok()) {
        ++record.refused;
        record.last_refusal = std::move(read);
        continue;
      }
      if (const char* reason = conflict(graph.requirements, engine)) {
        ++record.ruled_out;
        record.ruled_out_because = reason;
        continue;
      }
      const std::string engine_name = "engine " + std::to_string(engine.global_index);
      BackendDescriptor plan;
      Status finalized = finalize_plan(handle, configs[rank],
                                       "execution plan of " + engine_name + " for " + graph.summary,
                                       &plan);
      if (finalized.ok()) finalized = read_workspace_size(plan.get(), &out->workspace_size);
      if (!finalized.ok()) {
        ++record.refused;
        record.last_refusal = std::move(finalized);
        continue;
      }
      out->engine_config = std::move(configs[rank]);
      out->plan = std::move(plan);
      out->summary = engine_name + describe_notes(engine) + " (heuristics mode " + mode.name +
                     ", choice " + std::to_string(rank + 1) + " of " +
                     std::to_string(configs.size()) + "), workspace " +
                     std::to_string(out->workspace_size) + " bytes";
      return Status();
    }
  }
  return nothing_found(graph, record);
}

}  // namespace cudnn_fastpath::detail
