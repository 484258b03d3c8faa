// Adopting an execution plan the caller finalized itself, with the backend API directly.
#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

#include "tests/frontend/fixtures.h"
#include "tests/frontend/stub_calls.h"

using namespace cudnn_fastpath;
using namespace cudnn_fastpath::test;

namespace {

void* const x = fake_device_pointer(1);
void* const w = fake_device_pointer(2);
void* const y = fake_device_pointer(3);

// The raw backend calls a program that does not use this library makes: one matmul, uids 11-13.
class HandBuiltPlan {
 public:
  explicit HandBuiltPlan(cudnnHandle_t handle) {
    cudnnBackendDescriptor_t tensors[3];
    for (int i = 0; i < 3; ++i) {
      const std::int64_t uid = 11 + i, alignment = 16;
      const std::int64_t dims[3] = {1, 8, 8}, strides[3] = {64, 8, 1};
      const cudnnDataType_t type = CUDNN_DATA_FLOAT;
      tensors[i] = make(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
      set(tensors[i], CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid);
      set(tensors[i], CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &type);
      set(tensors[i], CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 3, dims);
      set(tensors[i], CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 3, strides);
      set(tensors[i], CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &alignment);
      finalize(tensors[i]);
    }
    const cudnnDataType_t compute = CUDNN_DATA_FLOAT;
    cudnnBackendDescriptor_t matmul = make(CUDNN_BACKEND_MATMUL_DESCRIPTOR);
    set(matmul, CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &compute);
    finalize(matmul);
    cudnnBackendDescriptor_t op = make(CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR);
    set(op, CUDNN_ATTR_OPERATION_MATMUL_ADESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &tensors[0]);
    set(op, CUDNN_ATTR_OPERATION_MATMUL_BDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &tensors[1]);
    set(op, CUDNN_ATTR_OPERATION_MATMUL_CDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &tensors[2]);
    set(op, CUDNN_ATTR_OPERATION_MATMUL_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &matmul);
    finalize(op);
    cudnnBackendDescriptor_t graph = make(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
    set(graph, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle);
    set(graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &op);
    finalize(graph);
    const cudnnBackendHeurMode_t mode = CUDNN_HEUR_MODE_A;
    cudnnBackendDescriptor_t heuristics = make(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
    set(heuristics, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &graph);
    set(heuristics, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode);
    finalize(heuristics);
    cudnnBackendDescriptor_t config = make(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
    std::int64_t count = 0;
    REQUIRE(cudnnBackendGetAttribute(heuristics, CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                     CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &count, &config) ==
            CUDNN_STATUS_SUCCESS);
    plan_ = make(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
    set(plan_, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle);
    set(plan_, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &config);
    owned_.pop_back();  // the plan: its owner is decided by each test
  }
  ~HandBuiltPlan() {
    for (auto it = owned_.rbegin(); it != owned_.rend(); ++it) cudnnBackendDestroyDescriptor(*it);
  }
  cudnnBackendDescriptor_t finalized_plan() {
    finalize(plan_);
    return plan_;
  }
  cudnnBackendDescriptor_t unfinalized_plan() const { return plan_; }

 private:
  cudnnBackendDescriptor_t make(cudnnBackendDescriptorType_t type) {
    cudnnBackendDescriptor_t d = nullptr;
    REQUIRE(cudnnBackendCreateDescriptor(type, &d) == CUDNN_STATUS_SUCCESS);
    owned_.push_back(d);
    return d;
  }
  static void set(cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t name,
                  cudnnBackendAttributeType_t type, std::int64_t count, const void* values) {
    REQUIRE(cudnnBackendSetAttribute(d, name, type, count, values) == CUDNN_STATUS_SUCCESS);
  }
  static void finalize(cudnnBackendDescriptor_t d) {
    REQUIRE(cudnnBackendFinalize(d) == CUDNN_STATUS_SUCCESS);
  }

  std::vector<cudnnBackendDescriptor_t> owned_;
  cudnnBackendDescriptor_t plan_ = nullptr;
};

}  // namespace

TEST_CASE("an adopted plan executes without asking the handle anything", "[adopt]") {
  StubHandle handle;
  HandBuiltPlan hand_built(handle);
  cudnnBackendDescriptor_t plan = hand_built.finalized_plan();

  CreatedSince graphs(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
  CreatedSince plans(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
  CreatedSince packs(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
  const StubCalls before = StubCalls::now();
  Graph graph;
  REQUIRE(Graph::adopt_plan(plan, {11, 12, 13}, PlanOwnership::kAdopted, &graph).ok());
  CHECK(graph.built());
  CHECK(graph.execution_plan() == plan);
  for (int i = 0; i < 10; ++i) REQUIRE(graph.execute(handle, {x, w, y}, nullptr).ok());
  const StubCalls d = StubCalls::now() - before;

  CHECK(d.cudnn.get_stream == 0);
  CHECK(graphs.count() == 0);
  CHECK(plans.count() == 0);
  CHECK(packs.count() == 1);
  CHECK(d.backend.execute == 10);
  CHECK(stubbackend_last_execution().plan == plan);
  CHECK(stubbackend_last_execution().uids[2] == 13);

  const StubCalls steady = StubCalls::now();
  for (int i = 0; i < 10; ++i) REQUIRE(graph.execute(handle, {x, w, y}, nullptr).ok());
  CHECK((StubCalls::now() - steady).total() == 10);
}

TEST_CASE("an adopted plan is destroyed with its Graph, a borrowed one is not", "[adopt]") {
  StubHandle handle;
  HandBuiltPlan hand_built(handle);
  cudnnBackendDescriptor_t plan = hand_built.finalized_plan();
  const std::uint64_t live_before = StubCalls::now().backend.live_descriptors;

  SECTION("borrowed") {
    {
      Graph graph;
      REQUIRE(Graph::adopt_plan(plan, {11, 12, 13}, PlanOwnership::kBorrowed, &graph).ok());
      REQUIRE(graph.execute(handle, {x, w, y}, nullptr).ok());
    }
    CHECK(StubCalls::now().backend.live_descriptors == live_before);
    CHECK(cudnnBackendDestroyDescriptor(plan) == CUDNN_STATUS_SUCCESS);
  }
  SECTION("adopted") {
    {
      Graph graph;
      REQUIRE(Graph::adopt_plan(plan, {11, 12, 13}, PlanOwnership::kAdopted, &graph).ok());
      REQUIRE(graph.execute(handle, {x, w, y}, nullptr).ok());
    }
    CHECK(StubCalls::now().backend.live_descriptors == live_before - 1);
  }
}

TEST_CASE("adopting a plan that is not finalized fails clearly and takes nothing", "[adopt]") {
  StubHandle handle;
  HandBuiltPlan hand_built(handle);
  Graph graph;
  const Status status =
      Graph::adopt_plan(hand_built.unfinalized_plan(), {11, 12, 13}, PlanOwnership::kAdopted, &graph);
  CHECK(status.code() == CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED);
  CHECK_THAT(status.message(), Catch::Contains("is it a finalized CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR?"));
  CHECK_FALSE(graph.built());
  CHECK(cudnnBackendDestroyDescriptor(hand_built.unfinalized_plan()) == CUDNN_STATUS_SUCCESS);
}

TEST_CASE("an adopted plan still needs a pointer for each of its tensors", "[adopt]") {
  StubHandle handle;
  HandBuiltPlan hand_built(handle);
  Graph graph;
  REQUIRE(Graph::adopt_plan(hand_built.finalized_plan(), {11, 12}, PlanOwnership::kAdopted, &graph).ok());
  // The Graph takes the caller's word for the uids; cuDNN notices the missing one.
  const Status status = graph.execute(handle, {x, w}, nullptr);
  CHECK(status.code() == CUDNN_STATUS_BAD_PARAM);
  CHECK_THAT(status.message(), Catch::Contains("stub: no pointer for tensor 13"));
}
