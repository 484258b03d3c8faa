// The stub's legacy ops under the stub driver's stream capture, in reference mode, with inner
// calls, and in the second library that exports them, libcudnn_ops.so.9.
#include <dlfcn.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <cstring>
#include <string>
#include <thread>

#include "tests/stub/stub_cuda.h"
#include "tests/stub/stub_legacy_test.h"

using namespace stub_legacy_test;

namespace {

// A stream of the stub driver, made the handle's stream, capturing from the constructor on.
struct Capture {
  explicit Capture(cudnnHandle_t handle) {
    REQUIRE(cuStreamCreate(&stream, 0) == CUDA_SUCCESS);
    REQUIRE(cudnnSetStream(handle, reinterpret_cast<cudaStream_t>(stream)) == CUDNN_STATUS_SUCCESS);
    REQUIRE(cuStreamBeginCapture_v2(stream, CU_STREAM_CAPTURE_MODE_RELAXED) == CUDA_SUCCESS);
  }
  ~Capture() {
    if (exec) cuGraphExecDestroy(exec);
    if (graph) cuGraphDestroy(graph);
    cuStreamDestroy_v2(stream);
  }
  void end() {
    REQUIRE(cuStreamEndCapture(stream, &graph) == CUDA_SUCCESS);
    REQUIRE(cuGraphInstantiateWithFlags(&exec, graph, 0) == CUDA_SUCCESS);
  }
  void launch(World& w) {
    for (int i = 0; i < w.outputs; ++i) std::memset(w.out[i], 0, 8);
    REQUIRE(cuGraphLaunch(exec, stream) == CUDA_SUCCESS);
  }
  CUstream stream = nullptr;
  CUgraph graph = nullptr;
  CUgraphExec exec = nullptr;
};

// The function `name` of libcudnn_ops.so.9, linked into this program next to libcudnn.so.9.
template <typename F>
F ops_library(const char* name) {
  void* found = dlvsym(RTLD_DEFAULT, name, "libcudnn_ops.so.9");
  REQUIRE(found != nullptr);
  return reinterpret_cast<F>(found);
}

}  // namespace

TEST_CASE("legacy ops: each launch of a capture writes the digest of the values at capture, the inputs at launch") {
  for (const Op& op : ops()) {
    INFO(op.name);
    World w(op);
    Capture capture(w.handle);
    for (int i = 0; i < w.outputs; ++i) std::memset(w.out[i], 0, 8);
    const StubCudnnOpCounters before = stubcudnn_op_counters(op.id);
    REQUIRE(op.call(w) == CUDNN_STATUS_SUCCESS);
    CHECK(stubcudnn_op_counters(op.id).captured == before.captured + 1);
    CHECK(stubcudnn_op_counters(op.id).direct_runs == before.direct_runs);
    CHECK(output(w, 0) == 0);  // recorded, not run
    capture.end();

    const auto all = mutations(op);
    for (const Mutation& m : all)
      if (m.kind == Change::kContent) m.apply(w);
    const std::uint64_t expected = digest(op, w, true);  // the inputs now, everything else as captured
    for (const Mutation& m : all)
      if (m.kind == Change::kInPlace) m.apply(w);
    CHECK(digest(op, w, true) != expected);  // the changes matter to a call made now

    for (int launch = 1; launch <= 2; ++launch) {
      capture.launch(w);
      for (int i = 0; i < w.outputs; ++i) CHECK(output(w, i) == expected);
      CHECK(stubcudnn_op_counters(op.id).replays == before.replays + launch);
    }
    CHECK(stubcudnn_op_counters(op.id).calls == before.calls + 1);
  }
}

TEST_CASE("legacy ops: reference calls run at once on a capturing stream and count nowhere, on their thread only") {
  const Op& op = ops()[STUBCUDNN_CONVOLUTION_FORWARD];
  World w(op);
  Capture capture(w.handle);
  const StubCudnnOpCounters before = stubcudnn_op_totals();
  const std::uint64_t inner = stubcudnn_inner_call_count();
  stubcudnn_inner_calls(1);
  const std::uint64_t reference = digest(op, w, true);  // ran: digest() requires the outputs written
  stubcudnn_reference_calls(1);
  cudnnStatus_t status = CUDNN_STATUS_NOT_INITIALIZED;
  std::thread other([&] { status = op.call(w); });  // not in reference mode
  other.join();
  stubcudnn_reference_calls(0);
  stubcudnn_inner_calls(0);
  CHECK(status == CUDNN_STATUS_SUCCESS);
  const StubCudnnOpCounters after = stubcudnn_op_totals();
  CHECK(after.calls == before.calls + 1);
  CHECK(after.captured == before.captured + 1);  // the other thread's call only
  CHECK(after.direct_runs == before.direct_runs);
  CHECK(stubcudnn_inner_call_count() == inner + 3);
  capture.end();
  capture.launch(w);
  CHECK(output(w, 0) == reference);  // the other thread's call, same arguments
  CHECK(stubcudnn_op_totals().replays == before.replays + 1);
}

TEST_CASE("legacy ops: inner calls create, set and destroy a tensor descriptor before each counted call") {
  const Op& op = ops()[STUBCUDNN_ADD_TENSOR];
  World w(op);
  const StubCudnnDescriptorCounters tensors = stubcudnn_descriptor_counters(STUBCUDNN_TENSOR_DESCRIPTOR);
  const std::uint64_t inner = stubcudnn_inner_call_count();
  digest(op, w);  // off: none
  CHECK(stubcudnn_inner_call_count() == inner);
  stubcudnn_inner_calls(1);
  digest(op, w);
  digest(op, w, true);  // reference mode: none
  const cudnnTensorDescriptor_t c = w.t[1];
  w.t[1] = nullptr;
  CHECK(op.call(w) == CUDNN_STATUS_BAD_PARAM);  // a failed call: none
  w.t[1] = c;
  stubcudnn_inner_calls(0);
  CHECK(stubcudnn_inner_call_count() == inner + 3);
  const StubCudnnDescriptorCounters now = stubcudnn_descriptor_counters(STUBCUDNN_TENSOR_DESCRIPTOR);
  CHECK(now.created == tensors.created + 1);
  CHECK(now.set == tensors.set + 1);
  CHECK(now.destroyed == tensors.destroyed + 1);
  CHECK(now.live == tensors.live);
}

TEST_CASE("legacy ops: libcudnn_ops.so.9 exports the legacy API with its own counters and the same digests") {
  using Create = decltype(&cudnnCreateTensorDescriptor);
  using Set = decltype(&cudnnSetTensor4dDescriptor);
  using Destroy = decltype(&cudnnDestroyTensorDescriptor);
  using Add = decltype(&cudnnAddTensor);
  using Descriptors = decltype(&stubcudnn_descriptor_counters);
  using Counters = decltype(&stubcudnn_op_counters);
  const auto create = ops_library<Create>("cudnnCreateTensorDescriptor");
  const auto set = ops_library<Set>("cudnnSetTensor4dDescriptor");
  const auto destroy = ops_library<Destroy>("cudnnDestroyTensorDescriptor");
  const auto add_tensor = ops_library<Add>("cudnnAddTensor");
  const auto descriptors = ops_library<Descriptors>("stubcudnn_descriptor_counters");
  const auto counters = ops_library<Counters>("stubcudnn_op_counters");
  CHECK(reinterpret_cast<void*>(add_tensor) != reinterpret_cast<void*>(&cudnnAddTensor));
  Dl_info info{};
  REQUIRE(dladdr(reinterpret_cast<void*>(add_tensor), &info) != 0);
  CHECK(std::string(info.dli_fname).find("libcudnn_ops.so.9") != std::string::npos);

  const Op& op = ops()[STUBCUDNN_ADD_TENSOR];
  World w(op);
  const std::uint64_t expected = digest(op, w);  // libcudnn.so.9's
  const StubCudnnDescriptorCounters main_tensors = stubcudnn_descriptor_counters(STUBCUDNN_TENSOR_DESCRIPTOR);
  const StubCudnnOpCounters main_adds = stubcudnn_op_counters(STUBCUDNN_ADD_TENSOR);
  const StubCudnnDescriptorCounters own_tensors = descriptors(STUBCUDNN_TENSOR_DESCRIPTOR);
  const StubCudnnOpCounters own_adds = counters(STUBCUDNN_ADD_TENSOR);

  cudnnTensorDescriptor_t a = nullptr, c = nullptr;  // set as World's, by the other library
  REQUIRE(create(&a) == CUDNN_STATUS_SUCCESS);
  REQUIRE(create(&c) == CUDNN_STATUS_SUCCESS);
  REQUIRE(set(a, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 2, 3, 4, 5) == CUDNN_STATUS_SUCCESS);
  REQUIRE(set(c, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 2, 3, 4, 6) == CUDNN_STATUS_SUCCESS);
  std::memset(w.out[0], 0, 8);
  CHECK(add_tensor(w.handle, w.scalar[0], a, w.in[0], w.scalar[1], c, w.out[0]) == CUDNN_STATUS_SUCCESS);
  CHECK(output(w, 0) == expected);  // a handle of libcudnn.so.9, the same blob
  REQUIRE(destroy(a) == CUDNN_STATUS_SUCCESS);
  REQUIRE(destroy(c) == CUDNN_STATUS_SUCCESS);

  CHECK(descriptors(STUBCUDNN_TENSOR_DESCRIPTOR).created == own_tensors.created + 2);
  CHECK(descriptors(STUBCUDNN_TENSOR_DESCRIPTOR).live == own_tensors.live);
  CHECK(counters(STUBCUDNN_ADD_TENSOR).direct_runs == own_adds.direct_runs + 1);
  CHECK(stubcudnn_descriptor_counters(STUBCUDNN_TENSOR_DESCRIPTOR).created == main_tensors.created);
  CHECK(stubcudnn_op_counters(STUBCUDNN_ADD_TENSOR).calls == main_adds.calls);

  Capture capture(w.handle);  // its captures too
  REQUIRE(create(&a) == CUDNN_STATUS_SUCCESS);
  REQUIRE(set(a, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 2, 3, 4, 5) == CUDNN_STATUS_SUCCESS);
  const StubCudnnOpCounters main_before_capture = stubcudnn_op_counters(STUBCUDNN_ADD_TENSOR);
  CHECK(add_tensor(w.handle, w.scalar[0], a, w.in[0], w.scalar[1], w.t[1], w.out[0]) == CUDNN_STATUS_SUCCESS);
  CHECK(counters(STUBCUDNN_ADD_TENSOR).captured == own_adds.captured + 1);
  capture.end();
  capture.launch(w);
  CHECK(output(w, 0) == expected);
  CHECK(counters(STUBCUDNN_ADD_TENSOR).replays == own_adds.replays + 1);
  CHECK(stubcudnn_op_counters(STUBCUDNN_ADD_TENSOR).replays == main_before_capture.replays);
  REQUIRE(destroy(a) == CUDNN_STATUS_SUCCESS);
}
