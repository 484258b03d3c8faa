// Graph::execute's steady state as a CUDA graph launch, against the stub libcudnn and the stub
// libcuda (stub_cuda.h), which this test program links: the stub records an execute made on a
// capturing stream instead of running it, and a launch runs exactly what was recorded.
#include <catch2/catch.hpp>

#include "tests/frontend/fixtures.h"
#include "tests/frontend/stub_calls.h"
#include "tests/stub/stub_cuda.h"

using namespace cudnn_fastpath;
using namespace cudnn_fastpath::test;

namespace {

void* const a = fake_device_pointer(1);
void* const b = fake_device_pointer(2);
void* const c = fake_device_pointer(3);
void* const other_c = fake_device_pointer(4);

// The fake pointers are device memory as far as the stub driver is concerned.
struct DeviceMemory {
  DeviceMemory() { stubcuda_add_device_memory(0x7f0000000000, std::size_t{1} << 32); }
} g_device_memory;

// A handle on a stream the stub driver made, set through the frontend (so its table knows it).
struct HandleOnStream {
  StubHandle handle;
  CUstream stream = nullptr;
  HandleOnStream() {
    cuStreamCreate(&stream, 0);
    set_stream(handle, reinterpret_cast<cudaStream_t>(stream));
  }
  ~HandleOnStream() { cuStreamDestroy_v2(stream); }
};

bool ran_with(cudnnBackendDescriptor_t plan, void* out) {
  const StubBackendExecution e = stubbackend_last_execution();
  return e.plan == plan && e.tensor_count == 3 && e.pointers[0] == a && e.pointers[1] == b && e.pointers[2] == out;
}

}  // namespace

TEST_CASE("the third execute with the same pointers is captured, every later one a graph launch", "[graph_replay]") {
  HandleOnStream h;
  Graph graph = Graph::matmul(small_matmul());
  const StubCalls before = StubCalls::now();
  const StubCudaGraphCounters driver_before = stubcuda_graph_counters();
  int mismatches = 0;
  for (int i = 0; i < 10; ++i) {
    REQUIRE(graph.execute(h.handle, {a, b, c}, nullptr).ok());
    mismatches += !ran_with(graph.execution_plan(), c);
  }
  const StubCalls d = StubCalls::now() - before;
  const StubCudaGraphCounters driver = stubcuda_graph_counters();
  CHECK(mismatches == 0);
  CHECK(d.backend.execute == 3);  // two direct, one captured
  CHECK(stubbackend_counters().captured - before.backend.captured == 1);
  CHECK(driver.launches - driver_before.launches == 8);
  CHECK(driver.global_mode_captures == driver_before.global_mode_captures);
  CHECK(stubcuda_last_launch_stream() == h.stream);
  // The build's cudnnGetStream and the capture's; the launches ask the frontend's table.
  CHECK(d.cudnn.get_stream == 2);
  CHECK(d.cudnn.set_stream == 2);  // the capture's stream, and the program's back
  cudaStream_t held = nullptr;
  cudnnGetStream(h.handle, &held);
  CHECK(held == reinterpret_cast<cudaStream_t>(h.stream));
}

TEST_CASE("new pointers drop the graph, and a destroyed Graph destroys its graph and stream", "[graph_replay]") {
  HandleOnStream h;
  const std::uint64_t live_before = stubcuda_graph_counters().live_execs;
  const std::uint64_t streams_destroyed = stubcuda_counters().stream_destroy_v2;
  {
    Graph graph = Graph::matmul(small_matmul());
    for (int i = 0; i < 4; ++i) REQUIRE(graph.execute(h.handle, {a, b, c}, nullptr).ok());
    CHECK(stubcuda_graph_counters().live_execs == live_before + 1);
    const StubCalls before = StubCalls::now();
    const std::uint64_t launches = stubcuda_graph_counters().launches;
    for (int i = 0; i < 4; ++i) {
      REQUIRE(graph.execute(h.handle, {a, b, other_c}, nullptr).ok());
      CHECK(ran_with(graph.execution_plan(), other_c));
    }
    CHECK((StubCalls::now() - before).backend.execute == 3);
    CHECK(stubcuda_graph_counters().launches - launches == 2);  // the capture's and the last one
    CHECK(stubcuda_graph_counters().live_execs == live_before + 1);  // the old one destroyed
  }
  CHECK(stubcuda_graph_counters().live_execs == live_before);
  CHECK(stubcuda_counters().stream_destroy_v2 == streams_destroyed + 1);  // the capture stream
}

TEST_CASE("inside the program's own capture every execute is recorded into it", "[graph_replay]") {
  HandleOnStream h;
  Graph graph = Graph::matmul(small_matmul());
  for (int i = 0; i < 5; ++i) REQUIRE(graph.execute(h.handle, {a, b, c}, nullptr).ok());
  const std::uint64_t captured = stubbackend_counters().captured;
  const StubCudaGraphCounters before = stubcuda_graph_counters();
  REQUIRE(cuStreamBeginCapture_v2(h.stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL) == CUDA_SUCCESS);
  for (int i = 0; i < 3; ++i) REQUIRE(graph.execute(h.handle, {a, b, c}, nullptr).ok());
  CUgraph program_graph = nullptr;
  REQUIRE(cuStreamEndCapture(h.stream, &program_graph) == CUDA_SUCCESS);
  CHECK(stubbackend_counters().captured - captured == 3);
  CHECK(stubcuda_graph_counters().launches == before.launches);
  CHECK(stubcuda_graph_counters().launches_into_capture == before.launches_into_capture);
  cuGraphDestroy(program_graph);
}

TEST_CASE("a pointer that is not device memory is never captured", "[graph_replay]") {
  HandleOnStream h;
  static float host[64];
  Graph graph = Graph::matmul(small_matmul());
  const std::uint64_t captures = stubcuda_graph_counters().captures_begun;
  const StubCalls before = StubCalls::now();
  for (int i = 0; i < 6; ++i) REQUIRE(graph.execute(h.handle, {a, host, c}, nullptr).ok());
  CHECK((StubCalls::now() - before).backend.execute == 6);
  CHECK(stubcuda_graph_counters().captures_begun == captures);
}

TEST_CASE("a failed launch is an error, never a silent success", "[graph_replay]") {
  HandleOnStream h;
  Graph graph = Graph::matmul(small_matmul());
  for (int i = 0; i < 4; ++i) REQUIRE(graph.execute(h.handle, {a, b, c}, nullptr).ok());
  stubcuda_fail_launches(CUDA_ERROR_LAUNCH_FAILED);
  const Status failed = graph.execute(h.handle, {a, b, c}, nullptr);
  stubcuda_fail_launches(CUDA_SUCCESS);
  CHECK_FALSE(failed.ok());
}
