// Graphs cuDNN cannot run, plans that fail, and callers' mistakes: each comes back as a Status
// that says what happened, and the next plan is tried where there is one.
#include <catch2/catch.hpp>

#include <cstdlib>

#include "tests/frontend/fixtures.h"
#include "tests/frontend/stub_calls.h"

using namespace cudnn_fastpath;
using namespace cudnn_fastpath::test;
using Catch::Contains;

namespace {
void* const a = fake_device_pointer(1);
void* const b = fake_device_pointer(2);
void* const c = fake_device_pointer(3);
void* const workspace = fake_device_pointer(9);

void set_notes(std::int64_t engine, std::initializer_list<cudnnBackendNumericalNote_t> notes) {
  stubbackend_set_engine_notes(engine, notes.begin(), static_cast<std::int64_t>(notes.size()));
}
}  // namespace

TEST_CASE("a graph no engine can run is a clear error, not a crash", "[refusal]") {
  StubHandle handle;
  for (std::int64_t engine : {0, 1, 2}) stubbackend_refuse_engine(engine, CUDNN_STATUS_NOT_SUPPORTED_SHAPE);
  Graph graph = Graph::matmul(small_matmul());

  const StubCalls before = StubCalls::now();
  const Status status = graph.execute(handle, {a, b, c}, nullptr);
  const StubCalls d = StubCalls::now() - before;

  CHECK_FALSE(status.ok());
  CHECK(status.code() == CUDNN_STATUS_NOT_SUPPORTED_SHAPE);
  CHECK_THAT(status.message(), Contains("cuDNN has no engine for matmul [b=2 m=64 n=32 k=16] bf16 -> bf16"));
  CHECK_THAT(status.message(), Contains("mode A offered 2, mode FALLBACK offered 1"));
  CHECK_THAT(status.message(), Contains("3 refused to finalize an execution plan"));
  CHECK_THAT(status.message(), Contains("stub: engine 2 does not support this graph"));  // cuDNN's own words
  CHECK_FALSE(graph.built());
  CHECK(d.backend.execute == 0);
  CHECK(d.backend.live_descriptors == 0);  // everything the failed build created is gone
}

TEST_CASE("an operation graph cuDNN refuses is a clear error", "[refusal]") {
  StubHandle handle;
  stubbackend_refuse_operation_graphs(CUDNN_STATUS_NOT_SUPPORTED_GRAPH_PATTERN);
  Graph graph = Graph::convolution(small_convolution());
  const Status status = graph.build(handle);
  CHECK(status.code() == CUDNN_STATUS_NOT_SUPPORTED_GRAPH_PATTERN);
  CHECK_THAT(status.message(), Contains("cudnnBackendFinalize(operation graph of convolution NHWC"));
  CHECK_FALSE(graph.built());

  SECTION("and the graph builds once cuDNN accepts it") {
    stubbackend_refuse_operation_graphs(CUDNN_STATUS_SUCCESS);
    CHECK(graph.execute(handle, {a, b, c}, nullptr).ok());
  }
}

TEST_CASE("when the first plan is not supported, the next one runs", "[refusal]") {
  StubHandle handle;
  stubbackend_refuse_engine(0, CUDNN_STATUS_NOT_SUPPORTED);
  Graph graph = Graph::matmul(small_matmul());
  REQUIRE(graph.execute(handle, {a, b, c}, nullptr).ok());
  CHECK(stubbackend_last_execution().engine == 1);
  CHECK_THAT(graph.plan_summary(), Contains("engine 1 (heuristics mode A, choice 2 of 2)"));
}

TEST_CASE("when mode A offers nothing that works, FALLBACK's engines are tried", "[refusal]") {
  StubHandle handle;
  SECTION("mode A offers nothing") { stubbackend_set_heuristic_results(CUDNN_HEUR_MODE_A, nullptr, 0); }
  SECTION("mode A's engines all fail") {
    stubbackend_refuse_engine(0, CUDNN_STATUS_NOT_SUPPORTED);
    stubbackend_refuse_engine(1, CUDNN_STATUS_NOT_SUPPORTED);
  }
  Graph graph = Graph::matmul(small_matmul());
  REQUIRE(graph.execute(handle, {a, b, c}, nullptr).ok());
  CHECK(stubbackend_last_execution().engine == 2);
  CHECK_THAT(graph.plan_summary(), Contains("heuristics mode FALLBACK"));
}

TEST_CASE("fp32 graphs skip engines that round to TF32 unless allowed", "[refusal]") {
  StubHandle handle;
  set_notes(0, {CUDNN_NUMERICAL_NOTE_TENSOR_CORE});
  MatmulDescription description = small_matmul();

  SECTION("fp32 inputs: the tensor-core engine is passed over") {
    description.input_type = description.output_type = DataType::kFloat;
    Graph graph = Graph::matmul(description);
    REQUIRE(graph.execute(handle, {a, b, c}, nullptr).ok());
    CHECK(stubbackend_last_execution().engine == 1);
  }
  SECTION("fp32 inputs with allow_tf32: the tensor-core engine runs") {
    description.input_type = description.output_type = DataType::kFloat;
    description.allow_tf32 = true;
    Graph graph = Graph::matmul(description);
    REQUIRE(graph.execute(handle, {a, b, c}, nullptr).ok());
    CHECK(stubbackend_last_execution().engine == 0);
    CHECK_THAT(graph.plan_summary(), Contains("engine 0 [tensor_core]"));
  }
  SECTION("bf16 inputs: tensor cores are how bf16 runs") {
    Graph graph = Graph::matmul(description);
    REQUIRE(graph.execute(handle, {a, b, c}, nullptr).ok());
    CHECK(stubbackend_last_execution().engine == 0);
  }
  SECTION("fp32 convolutions too") {
    ConvolutionDescription convolution = small_convolution();
    convolution.data_type = DataType::kFloat;
    Graph graph = Graph::convolution(convolution);
    REQUIRE(graph.execute(handle, {a, b, c}, nullptr).ok());
    CHECK(stubbackend_last_execution().engine == 1);
  }
  SECTION("fp32 inputs: an engine built on cublasLt is passed over too") {
    const cudnnBackendBehaviorNote_t cublaslt = CUDNN_BEHAVIOR_NOTE_CUBLASLT_DEPENDENCY;
    set_notes(0, {});
    stubbackend_set_engine_behaviour_notes(0, &cublaslt, 1);
    description.input_type = description.output_type = DataType::kFloat;
    Graph graph = Graph::matmul(description);
    REQUIRE(graph.execute(handle, {a, b, c}, nullptr).ok());
    CHECK(stubbackend_last_execution().engine == 1);

    description.allow_tf32 = true;
    Graph tf32 = Graph::matmul(description);
    REQUIRE(tf32.execute(handle, {a, b, c}, nullptr).ok());
    CHECK(stubbackend_last_execution().engine == 0);
    CHECK_THAT(tf32.plan_summary(), Contains("engine 0 [cublaslt]"));

    description.allow_tf32 = false;
    setenv("NVIDIA_TF32_OVERRIDE", "0", 1);  // TF32 off for the whole process: cublasLt is fp32
    Graph no_tf32 = Graph::matmul(description);
    const Status status = no_tf32.execute(handle, {a, b, c}, nullptr);
    unsetenv("NVIDIA_TF32_OVERRIDE");
    REQUIRE(status.ok());
    CHECK(stubbackend_last_execution().engine == 0);
  }
  SECTION("an engine that accumulates in reduced precision is never taken") {
    set_notes(0, {CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION});
    Graph graph = Graph::matmul(description);
    REQUIRE(graph.execute(handle, {a, b, c}, nullptr).ok());
    CHECK(stubbackend_last_execution().engine == 1);
  }
  SECTION("when every engine is ruled out, the error says why") {
    description.input_type = description.output_type = DataType::kFloat;
    set_notes(1, {CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS});
    set_notes(2, {CUDNN_NUMERICAL_NOTE_TENSOR_CORE});
    Graph graph = Graph::matmul(description);
    const Status status = graph.execute(handle, {a, b, c}, nullptr);
    CHECK(status.code() == CUDNN_STATUS_NOT_SUPPORTED);
    CHECK_THAT(status.message(), Contains("3 ruled out, the last because it rounds fp32 inputs to TF32"));
  }
}

TEST_CASE("a plan that needs a workspace refuses a null one", "[refusal]") {
  StubHandle handle;
  stubbackend_set_engine_workspace(0, 4096);
  Graph graph = Graph::matmul(small_matmul());
  REQUIRE(graph.build(handle).ok());
  CHECK(graph.workspace_size() == 4096);

  const Status status = graph.execute(handle, {a, b, c}, nullptr);
  CHECK(status.code() == CUDNN_STATUS_BAD_PARAM);
  CHECK_THAT(status.message(), Contains("needs 4096 bytes of workspace"));
  REQUIRE(graph.execute(handle, {a, b, c}, workspace).ok());
  CHECK(stubbackend_last_execution().workspace == workspace);
}

TEST_CASE("an execute cuDNN fails returns cuDNN's status", "[refusal]") {
  StubHandle handle;
  Graph graph = Graph::matmul(small_matmul());
  REQUIRE(graph.execute(handle, {a, b, c}, nullptr).ok());
  stubbackend_set_execute_status(CUDNN_STATUS_EXECUTION_FAILED);
  const Status status = graph.execute(handle, {a, b, c}, nullptr);
  CHECK(status.code() == CUDNN_STATUS_EXECUTION_FAILED);
  CHECK_THAT(status.message(), Contains("cudnnBackendExecute(matmul"));

  SECTION("on another handle than the plan's, the message says so") {
    StubHandle other;
    stubbackend_set_execute_status(CUDNN_STATUS_EXECUTION_FAILED);
    const Status elsewhere = graph.execute(other, {a, b, c}, nullptr);
    CHECK_THAT(elsewhere.message(), Contains("the plan was built with handle"));
  }
}

TEST_CASE("descriptions that cannot be right are refused before cuDNN is asked", "[refusal]") {
  StubHandle handle;
  const StubCalls before = StubCalls::now();
  MatmulDescription empty = small_matmul();
  empty.k = 0;
  const Status matmul = Graph::matmul(empty).build(handle);
  CHECK(matmul.code() == CUDNN_STATUS_BAD_PARAM);
  CHECK_THAT(matmul.message(), Contains("must all be positive"));

  ConvolutionDescription too_small = small_convolution();
  too_small.pad_h = too_small.pad_w = 0;
  too_small.h = too_small.w = 2;
  const Status convolution = Graph::convolution(too_small).build(handle);
  CHECK(convolution.code() == CUDNN_STATUS_BAD_PARAM);
  CHECK_THAT(convolution.message(), Contains("the filter is larger than the padded input"));
  CHECK((StubCalls::now() - before).backend.create_descriptor == 0);
}

TEST_CASE("an empty Graph and a null handle are errors, not crashes", "[refusal]") {
  StubHandle handle;
  Graph empty;
  CHECK(empty.execute(handle, {a, b, c}, nullptr).code() == CUDNN_STATUS_BAD_PARAM);
  CHECK_THAT(empty.build(handle).message(), Contains("this Graph is empty"));
  CHECK_FALSE(empty.built());
  CHECK(empty.execution_plan() == nullptr);

  Graph graph = Graph::matmul(small_matmul());
  const Status status = graph.execute(nullptr, {a, b, c}, nullptr);
  CHECK(status.code() == CUDNN_STATUS_BAD_PARAM);
  CHECK_THAT(status.message(), Contains("the cuDNN handle is null"));
}
