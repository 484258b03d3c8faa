#include "cudnn_fastpath/graph.h"

#include <cstdio>
#include <utility>
#include <variant>

#include "backend_descriptor.h"
#include "execute_replay.h"
#include "failure.h"
#include "handle_streams.h"
#include "operation_graph.h"
#include "plan_search.h"
#include "variant_pack.h"

namespace cudnn_fastpath {

using detail::BackendDescriptor;

// Declared in the order of construction; members are destroyed last to first, so the variant
// pack goes first and the operation graph, which the plan was built from, last.
struct Graph::State {
  // What the graph is built from; monostate for an adopted plan.
  std::variant<std::monostate, MatmulDescription, ConvolutionDescription> description;
  std::string summary;

  // Filled by the build.
  detail::OperationGraph operation_graph;  // empty for an adopted plan
  detail::ChosenPlan chosen;               // empty for an adopted plan
  BackendDescriptor adopted_plan;          // an adopted plan the Graph owns
  // The handle the plan was built with. Execute does not use it; it makes a failure on another
  // handle (of another device) explain itself.
  cudnnHandle_t built_with = nullptr;

  // What execute uses.
  cudnnBackendDescriptor_t plan = nullptr;  // null until built
  std::int64_t workspace_size = 0;
  std::vector<std::int64_t> tensor_uids;
  std::string plan_summary;
  detail::VariantPackCache pack;
  detail::ExecuteReplay replay;  // after the pack: its graph goes first

  // The last step of every build: the variant pack cache sized for the graph's tensors.
  void finish_build(std::vector<std::int64_t> uids) {
    tensor_uids = std::move(uids);
    pack.bind(tensor_uids, workspace_size);
  }
};

namespace {

Status empty_graph() {
  return Status(CUDNN_STATUS_BAD_PARAM,
                "this Graph is empty (default-constructed or moved from): assign one to it first");
}

std::string pointer_text(const void* pointer) {
  char text[32];
  std::snprintf(text, sizeof text, "%p", pointer);
  return text;
}

}  // namespace

Graph::Graph() noexcept = default;
Graph::Graph(std::unique_ptr<State> state) noexcept : state_(std::move(state)) {}
Graph::Graph(Graph&& other) noexcept = default;
Graph& Graph::operator=(Graph&& other) noexcept = default;
Graph::~Graph() = default;

Graph Graph::matmul(const MatmulDescription& description) {
  auto state = std::make_unique<State>();
  state->description = description;
  state->summary = detail::describe(description);
  return Graph(std::move(state));
}

Graph Graph::convolution(const ConvolutionDescription& description) {
  auto state = std::make_unique<State>();
  state->description = description;
  state->summary = detail::describe(description);
  return Graph(std::move(state));
}

Status Graph::adopt_plan(cudnnBackendDescriptor_t finalized_plan,
                         std::vector<std::int64_t> tensor_uids, PlanOwnership ownership,
                         Graph* out) {
  if (finalized_plan == nullptr || out == nullptr)
    return Status(CUDNN_STATUS_BAD_PARAM, "adopt_plan: the plan and the output Graph must not be null");
  auto state = std::make_unique<State>();
  state->summary = "adopted execution plan " + pointer_text(finalized_plan);
  // Reading the workspace size is also the check that the plan is finalized.
  Status read = detail::read_workspace_size(finalized_plan, &state->workspace_size);
  if (!read.ok()) return read;
  state->plan = finalized_plan;
  if (ownership == PlanOwnership::kAdopted) state->adopted_plan.reset(finalized_plan);
  state->plan_summary = state->summary + ", workspace " + std::to_string(state->workspace_size) + " bytes";
  state->finish_build(std::move(tensor_uids));
  *out = Graph(std::move(state));
  return Status();
}

Status Graph::build(cudnnHandle_t handle) {
  if (state_ == nullptr) return empty_graph();
  State& s = *state_;
  if (s.plan != nullptr) return Status();
  if (handle == nullptr)
    return Status(CUDNN_STATUS_BAD_PARAM, "building " + s.summary + ": the cuDNN handle is null");

  // The execute context: the handle's stream, the only thing a Graph ever asks the handle (the
  // device comes with the handle itself when the graph and plan are built with it). Reading it
  // also tells set_stream's table what the handle holds.
  cudaStream_t stream = nullptr;
  const cudnnStatus_t read = detail::read_stream(handle, &stream);
  if (read != CUDNN_STATUS_SUCCESS)
    return detail::cudnn_failure(read, "cudnnGetStream while building " + s.summary);

  detail::OperationGraph graph;
  Status made = empty_graph();
  if (const auto* matmul = std::get_if<MatmulDescription>(&s.description))
    made = detail::build_operation_graph(*matmul, handle, &graph);
  else if (const auto* convolution = std::get_if<ConvolutionDescription>(&s.description))
    made = detail::build_operation_graph(*convolution, handle, &graph);
  if (!made.ok()) return made;

  detail::ChosenPlan chosen;
  made = detail::choose_plan(graph, handle, &chosen);
  if (!made.ok()) return made;

  s.built_with = handle;
  s.operation_graph = std::move(graph);
  s.chosen = std::move(chosen);
  s.plan = s.chosen.plan.get();
  s.workspace_size = s.chosen.workspace_size;
  s.plan_summary = s.chosen.summary;
  s.finish_build(s.operation_graph.tensor_uids);
  return Status();
}

Status Graph::execute(cudnnHandle_t handle, const void* const* pointers, std::size_t count,
                      void* workspace) {
  if (state_ == nullptr) return empty_graph();
  State& s = *state_;
  if (s.plan == nullptr) {
    Status built = build(handle);
    if (!built.ok()) return built;
  }
  if (!s.pack.holds(pointers, count, workspace)) {
    Status packed = s.pack.rebuild(pointers, count, workspace, s.summary);
    if (!packed.ok()) return packed;
  }
  const cudnnStatus_t status = s.replay.execute(handle, s.plan, s.pack.get(), pointers, count);
  if (status == CUDNN_STATUS_SUCCESS) return Status();

  std::string what = "cudnnBackendExecute(" + s.summary + ", handle " + pointer_text(handle) + ")";
  if (s.built_with != nullptr && s.built_with != handle)
    what += " [the plan was built with handle " + pointer_text(s.built_with) +
            "; a plan runs only on its handle's device]";
  return detail::cudnn_failure(status, what);
}

bool Graph::built() const noexcept { return state_ != nullptr && state_->plan != nullptr; }

std::int64_t Graph::workspace_size() const noexcept {
  return state_ != nullptr ? state_->workspace_size : 0;
}

const std::vector<std::int64_t>& Graph::tensor_uids() const noexcept {
  static const std::vector<std::int64_t> kNone;
  return state_ != nullptr ? state_->tensor_uids : kNone;
}

cudnnBackendDescriptor_t Graph::execution_plan() const noexcept {
  return state_ != nullptr ? state_->plan : nullptr;
}

const std::string& Graph::plan_summary() const noexcept {
  static const std::string kNone;
  return state_ != nullptr ? state_->plan_summary : kNone;
}

}  // namespace cudnn_fastpath
