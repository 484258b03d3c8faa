// What an execute costs once the graph is built: one cudnnBackendExecute, nothing else.
#include <catch2/catch.hpp>

#include <memory>

#include "tests/frontend/allocation_counter.h"
#include "tests/frontend/fixtures.h"
#include "tests/frontend/stub_calls.h"

using namespace cudnn_fastpath;
using namespace cudnn_fastpath::test;

namespace {
void* const a = fake_device_pointer(1);
void* const b = fake_device_pointer(2);
void* const c = fake_device_pointer(3);
void* const other_c = fake_device_pointer(4);
void* const workspace = fake_device_pointer(9);
}  // namespace

TEST_CASE("in steady state an execute makes exactly one backend call", "[steady]") {
  StubHandle handle;
  Graph graph = Graph::matmul(small_matmul());
  REQUIRE(graph.execute(handle, {a, b, c}, nullptr).ok());

  const StubCalls before = StubCalls::now();
  for (int i = 0; i < 100; ++i) REQUIRE(graph.execute(handle, {a, b, c}, nullptr).ok());
  const StubCalls d = StubCalls::now() - before;

  CHECK(d.backend.execute == 100);
  CHECK(d.total() == 100);  // so: no cudnnGetStream, no descriptor created, set or finalized
  CHECK(d.cudnn.get_stream == 0);
  CHECK(d.backend.create_descriptor == 0);
  CHECK(stubbackend_last_execution().plan == graph.execution_plan());
}

TEST_CASE("a steady-state execute allocates no heap memory", "[steady]") {
  StubHandle handle;
  Graph graph = Graph::matmul(small_matmul());
  REQUIRE(graph.execute(handle, {a, b, c}, nullptr).ok());

  CountAllocations allocations;
  for (int i = 0; i < 100; ++i) {
    // Not REQUIRE: Catch2's own bookkeeping allocates.
    if (!graph.execute(handle, {a, b, c}, nullptr).ok()) break;
  }
  CHECK(allocations.count() == 0);
}

TEST_CASE("the allocation counter sees an allocation", "[steady]") {
  CountAllocations allocations;
  auto box = std::make_unique<int>(7);
  CHECK(allocations.count() == 1);
}

TEST_CASE("a changed pointer set rebuilds the variant pack exactly once", "[steady]") {
  StubHandle handle;
  Graph graph = Graph::matmul(small_matmul());
  for (int i = 0; i < 3; ++i) REQUIRE(graph.execute(handle, {a, b, c}, nullptr).ok());

  CreatedSince packs(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
  StubCalls before = StubCalls::now();
  for (int i = 0; i < 5; ++i) REQUIRE(graph.execute(handle, {a, b, other_c}, nullptr).ok());
  StubCalls d = StubCalls::now() - before;
  CHECK(packs.count() == 1);
  CHECK(d.backend.finalize == 1);
  CHECK(d.backend.destroy_descriptor == 1);  // the previous pack
  CHECK(d.backend.live_descriptors == 0);
  CHECK(d.backend.execute == 5);
  CHECK(d.cudnn.get_stream == 0);
  const StubBackendExecution last = stubbackend_last_execution();
  REQUIRE(last.tensor_count == 3);
  CHECK(last.pointers[0] == a);
  CHECK(last.pointers[1] == b);
  CHECK(last.pointers[2] == other_c);

  SECTION("a new workspace is a new pointer set") {
    CreatedSince more_packs(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
    for (int i = 0; i < 5; ++i) REQUIRE(graph.execute(handle, {a, b, other_c}, workspace).ok());
    CHECK(more_packs.count() == 1);
    CHECK(stubbackend_last_execution().workspace == workspace);
  }
  SECTION("going back to the first pointers rebuilds once more: one pack is kept, not a cache") {
    CreatedSince more_packs(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
    for (int i = 0; i < 5; ++i) REQUIRE(graph.execute(handle, {a, b, c}, nullptr).ok());
    CHECK(more_packs.count() == 1);
    CHECK(stubbackend_last_execution().pointers[2] == c);
  }
}

TEST_CASE("an unbuilt graph builds its execute context exactly once", "[steady]") {
  StubHandle handle;
  Graph graph = Graph::matmul(small_matmul());
  CHECK_FALSE(graph.built());

  CreatedSince graphs(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
  CreatedSince heuristics(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
  CreatedSince plans(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
  const StubCalls before = StubCalls::now();
  for (int i = 0; i < 10; ++i) REQUIRE(graph.execute(handle, {a, b, c}, nullptr).ok());
  const StubCalls d = StubCalls::now() - before;

  CHECK(graph.built());
  CHECK(d.cudnn.get_stream == 1);
  CHECK(graphs.count() == 1);
  CHECK(heuristics.count() == 1);  // mode A's first engine finalized: FALLBACK never asked
  CHECK(plans.count() == 1);
  CHECK(d.backend.execute == 10);
  CHECK(stubbackend_last_execution().engine == 0);
}

TEST_CASE("a graph built ahead of its executes never asks the handle again", "[steady]") {
  StubHandle handle;
  Graph graph = Graph::matmul(small_matmul());
  REQUIRE(graph.build(handle).ok());
  CHECK(graph.built());
  CHECK(graph.workspace_size() == 0);
  CHECK(graph.tensor_uids().size() == 3);

  const StubCalls before = StubCalls::now();
  REQUIRE(graph.build(handle).ok());  // built already: nothing happens
  for (int i = 0; i < 10; ++i) REQUIRE(graph.execute(handle, {a, b, c}, nullptr).ok());
  const StubCalls d = StubCalls::now() - before;
  CHECK(d.cudnn.get_stream == 0);
  CHECK(d.backend.create_descriptor == 1);  // the variant pack
  CHECK(d.backend.execute == 10);
}

TEST_CASE("the epilogue adds the bias tensor, third in execute's order", "[steady]") {
  StubHandle handle;
  MatmulDescription description = small_matmul();
  description.add_bias = true;
  description.relu = true;
  Graph graph = Graph::matmul(description);
  void* const bias = fake_device_pointer(5);
  REQUIRE(graph.execute(handle, {a, b, bias, c}, nullptr).ok());
  CHECK(graph.tensor_uids() == std::vector<std::int64_t>{1, 2, 3, 4});
  const StubBackendExecution last = stubbackend_last_execution();
  REQUIRE(last.tensor_count == 4);
  CHECK(last.uids[2] == 3);
  CHECK(last.pointers[2] == bias);

  const Status too_few = graph.execute(handle, {a, b, c}, nullptr);
  CHECK(too_few.code() == CUDNN_STATUS_BAD_PARAM);
  CHECK_THAT(too_few.message(), Catch::Contains("got 3 device pointers, the graph has 4 tensors"));
}

TEST_CASE("a convolution graph executes with its three tensors", "[steady]") {
  StubHandle handle;
  Graph graph = Graph::convolution(small_convolution());
  REQUIRE(graph.execute(handle, {a, b, c}, nullptr).ok());
  CHECK(graph.tensor_uids() == std::vector<std::int64_t>{1, 2, 3});

  const StubCalls before = StubCalls::now();
  for (int i = 0; i < 10; ++i) REQUIRE(graph.execute(handle, {a, b, c}, nullptr).ok());
  CHECK((StubCalls::now() - before).total() == 10);
}

TEST_CASE("a Graph destroys every descriptor it created", "[steady]") {
  StubHandle handle;
  const StubCalls before = StubCalls::now();
  {
    MatmulDescription description = small_matmul();
    description.add_bias = true;
    description.relu = true;
    Graph graph = Graph::matmul(description);
    REQUIRE(graph.execute(handle, {a, b, a, c}, nullptr).ok());
    Graph moved = std::move(graph);
    REQUIRE(moved.execute(handle, {a, b, a, other_c}, nullptr).ok());
    CHECK(StubCalls::now().backend.live_descriptors > before.backend.live_descriptors);
  }
  CHECK(StubCalls::now().backend.live_descriptors == before.backend.live_descriptors);
}
