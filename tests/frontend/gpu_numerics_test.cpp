// The frontend's graphs on a real GPU against double-precision references on the host: fresh
// random inputs for every run, the output poisoned with NaN bytes before it, so a stale or partly
// written result cannot pass. Without a CUDA device every test prints "SKIPPED: no CUDA device"
// and CTest reports it skipped.
#include <catch2/catch.hpp>
#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "cudnn_fastpath/frontend.h"
#include "tests/frontend/host_reference.h"

using namespace cudnn_fastpath;
using namespace cudnn_fastpath::test;

namespace {

constexpr double kReducedPrecisionTolerance = 1e-2;  // bf16 and fp16 tensors
constexpr double kFloatTolerance = 1e-5;             // fp32 tensors, fp32 arithmetic
constexpr double kTf32Tolerance = 5e-3;              // fp32 tensors rounded to TF32 (10 bits)
// Runs of one graph, new inputs each time in the same buffers: the first two execute directly, the
// third is captured as a CUDA graph and launched, the fourth and fifth are launches of it (graph
// replay, frontend/src/execute_replay.h), and the last writes to another output (a new pack,
// direct again). Each is checked against the reference.
constexpr int kRuns = 6;

bool skipped_without_gpu() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) == cudaSuccess && devices > 0) return false;
  std::puts("SKIPPED: no CUDA device");
  return true;
}

void check_cuda(cudaError_t error, const char* what) {
  INFO(what << ": " << cudaGetErrorString(error));
  REQUIRE(error == cudaSuccess);
}

double tolerance_for(DataType type, bool allow_tf32) {
  if (type != DataType::kFloat) return kReducedPrecisionTolerance;
  return allow_tf32 ? kTf32Tolerance : kFloatTolerance;
}

// Builds `graph`. An fp32 graph asks for fp32 arithmetic first; when cuDNN has no engine that
// keeps the inputs in fp32 for it (the build says every one rounds them to TF32), the graph is
// built again with allow_tf32, and the test says so loudly and checks it at TF32's tolerance.
enum class Tf32Fallback { kAllowed, kRefused };

template <typename Description, typename MakeGraph>
Graph build_graph(Description& d, bool fp32_inputs, cudnnHandle_t handle, const std::string& name,
                  Tf32Fallback fallback, MakeGraph make_graph) {
  Graph graph = make_graph(d);
  Status built = graph.build(handle);
  if (!built.ok() && fp32_inputs && !d.allow_tf32 && fallback == Tf32Fallback::kAllowed &&
      built.message().find("TF32") != std::string::npos) {
    std::printf("NOTE %s: no cuDNN engine keeps fp32 inputs in fp32 for this graph (%s); "
                "checking it with allow_tf32 at TF32's tolerance\n",
                name.c_str(), built.message().c_str());
    WARN(name << ": cuDNN offers TF32 engines only; checked with allow_tf32");
    d.allow_tf32 = true;
    graph = make_graph(d);
    built = graph.build(handle);
  }
  INFO(built.message());
  REQUIRE(built.ok());
  std::printf("%s: %s\n", name.c_str(), graph.plan_summary().c_str());
  return graph;
}

class DeviceBuffer {
 public:
  explicit DeviceBuffer(std::size_t bytes) : bytes_(bytes) {
    if (bytes > 0) check_cuda(cudaMalloc(&pointer_, bytes), "cudaMalloc");
  }
  ~DeviceBuffer() { cudaFree(pointer_); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  void* get() const { return pointer_; }
  std::size_t size() const { return bytes_; }

 private:
  void* pointer_ = nullptr;
  std::size_t bytes_;
};

// A handle that holds a stream of its own, set through set_stream.
class GpuContext {
 public:
  GpuContext() {
    check_cuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
    REQUIRE(create_handle(&handle_) == CUDNN_STATUS_SUCCESS);
    REQUIRE(set_stream(handle_, stream_) == CUDNN_STATUS_SUCCESS);
  }
  ~GpuContext() {
    destroy_handle(handle_);
    forget_stream(stream_);
    cudaStreamDestroy(stream_);
  }
  cudnnHandle_t handle() const { return handle_; }
  cudaStream_t stream() const { return stream_; }

  void upload(const DeviceBuffer& to, const HostTensor& from) const {
    REQUIRE(to.size() == from.bytes.size());
    check_cuda(cudaMemcpyAsync(to.get(), from.bytes.data(), from.bytes.size(),
                               cudaMemcpyHostToDevice, stream_), "upload");
  }
  // 0xFF bytes are a NaN in fp32, fp16 and bf16 alike.
  void poison(const DeviceBuffer& buffer) const {
    check_cuda(cudaMemsetAsync(buffer.get(), 0xFF, buffer.size(), stream_), "poison");
  }
  std::vector<double> download(const DeviceBuffer& from, DataType type) const {
    std::vector<unsigned char> bytes(from.size());
    check_cuda(cudaMemcpyAsync(bytes.data(), from.get(), bytes.size(), cudaMemcpyDeviceToHost,
                               stream_), "download");
    check_cuda(cudaStreamSynchronize(stream_), "synchronize");
    return decode_all(type, bytes);
  }

 private:
  cudaStream_t stream_ = nullptr;
  cudnnHandle_t handle_ = nullptr;
};

std::mt19937_64 seeded_random(const std::string& what) {
  const std::uint64_t seed = (static_cast<std::uint64_t>(std::random_device{}()) << 32) ^ std::random_device{}();
  std::printf("%s: seed %llu\n", what.c_str(), static_cast<unsigned long long>(seed));
  return std::mt19937_64(seed);
}

void check_matmul(MatmulDescription d, const std::string& name,
                  Tf32Fallback fallback = Tf32Fallback::kAllowed) {
  GpuContext gpu;
  std::mt19937_64 random = seeded_random(name);
  Graph graph =
      build_graph(d, d.input_type == DataType::kFloat, gpu.handle(), name, fallback, Graph::matmul);

  const std::size_t a_count = d.batch * d.m * d.k, b_count = d.batch * d.k * d.n;
  const std::size_t c_count = d.batch * d.m * d.n;
  DeviceBuffer a(a_count * element_bytes(d.input_type)), b(b_count * element_bytes(d.input_type));
  DeviceBuffer bias(d.n * element_bytes(d.output_type));
  // Two outputs: the last run writes to the second, so the variant pack is rebuilt once.
  DeviceBuffer c0(c_count * element_bytes(d.output_type)), c1(c_count * element_bytes(d.output_type));
  DeviceBuffer workspace(static_cast<std::size_t>(graph.workspace_size()));

  for (int run = 0; run < kRuns; ++run) {
    const HostTensor host_a = random_tensor(d.input_type, a_count, random, -1, 1);
    const HostTensor host_b = random_tensor(d.input_type, b_count, random, -1, 1);
    const HostTensor host_bias = random_tensor(d.output_type, d.n, random, -2, 2);
    const DeviceBuffer& c = run + 1 < kRuns ? c0 : c1;
    gpu.upload(a, host_a);
    gpu.upload(b, host_b);
    if (d.add_bias) gpu.upload(bias, host_bias);
    gpu.poison(c);

    const Status status = d.add_bias
        ? graph.execute(gpu.handle(), {a.get(), b.get(), bias.get(), c.get()}, workspace.get())
        : graph.execute(gpu.handle(), {a.get(), b.get(), c.get()}, workspace.get());
    INFO(status.message());
    REQUIRE(status.ok());

    const std::vector<double> expected =
        reference_matmul(d, host_a.values, host_b.values, d.add_bias ? &host_bias.values : nullptr);
    const double error = max_relative_error(gpu.download(c, d.output_type), expected);
    std::printf("%s: run %d, max relative error %.3g\n", name.c_str(), run, error);
    INFO(name << ", run " << run << ": max relative error " << error);
    CHECK(error <= tolerance_for(d.output_type, d.allow_tf32));
  }
}

void check_convolution(ConvolutionDescription d, const std::string& name) {
  GpuContext gpu;
  std::mt19937_64 random = seeded_random(name);
  Graph graph = build_graph(d, d.data_type == DataType::kFloat, gpu.handle(), name,
                            Tf32Fallback::kAllowed, Graph::convolution);

  const std::size_t x_count = d.n * d.h * d.w * d.c, w_count = d.k * d.r * d.s * d.c;
  const std::size_t y_count = d.n * d.output_h() * d.output_w() * d.k;
  const std::size_t bytes = element_bytes(d.data_type);
  DeviceBuffer x(x_count * bytes), w(w_count * bytes), y0(y_count * bytes), y1(y_count * bytes);
  DeviceBuffer workspace(static_cast<std::size_t>(graph.workspace_size()));

  for (int run = 0; run < kRuns; ++run) {
    const HostTensor host_x = random_tensor(d.data_type, x_count, random, -1, 1);
    const HostTensor host_w = random_tensor(d.data_type, w_count, random, -1, 1);
    const DeviceBuffer& y = run + 1 < kRuns ? y0 : y1;
    gpu.upload(x, host_x);
    gpu.upload(w, host_w);
    gpu.poison(y);

    const Status status = graph.execute(gpu.handle(), {x.get(), w.get(), y.get()}, workspace.get());
    INFO(status.message());
    REQUIRE(status.ok());

    const std::vector<double> expected = reference_convolution(d, host_x.values, host_w.values);
    const double error = max_relative_error(gpu.download(y, d.data_type), expected);
    std::printf("%s: run %d, max relative error %.3g\n", name.c_str(), run, error);
    INFO(name << ", run " << run << ": max relative error " << error);
    CHECK(error <= tolerance_for(d.data_type, d.allow_tf32));
  }
}

MatmulDescription matmul_of(DataType type) {
  MatmulDescription d;
  d.batch = 3;
  d.m = 64;
  d.n = 96;
  d.k = 128;
  d.input_type = d.output_type = type;
  return d;
}

ConvolutionDescription convolution_of(DataType type) {
  ConvolutionDescription d;
  d.n = 2;
  d.h = d.w = 16;
  d.c = 32;
  d.k = 64;
  d.r = d.s = 3;
  d.pad_h = d.pad_w = 1;
  d.data_type = type;
  return d;
}

}  // namespace

TEST_CASE("matmul matches a double-precision reference", "[gpu][matmul]") {
  if (skipped_without_gpu()) return;
  check_matmul(matmul_of(DataType::kBFloat16), "matmul bf16");
  check_matmul(matmul_of(DataType::kHalf), "matmul fp16");
  check_matmul(matmul_of(DataType::kFloat), "matmul fp32");
}

// cuDNN 9.19 on an H200 has no matmul engine that keeps fp32 inputs in fp32 unless TF32 is off for
// the whole process; then its cublasLt engine does. CTest runs this with NVIDIA_TF32_OVERRIDE=0.
TEST_CASE("fp32 matmul in fp32 arithmetic when TF32 is off process-wide", "[gpu][matmul_fp32_no_tf32]") {
  if (skipped_without_gpu()) return;
  const char* override_value = std::getenv("NVIDIA_TF32_OVERRIDE");
  if (override_value == nullptr || std::string(override_value) != "0") {
    std::puts("SKIPPED: needs NVIDIA_TF32_OVERRIDE=0");
    return;
  }
  check_matmul(matmul_of(DataType::kFloat), "matmul fp32, NVIDIA_TF32_OVERRIDE=0", Tf32Fallback::kRefused);
}

TEST_CASE("matmul + bias + ReLU matches a double-precision reference", "[gpu][matmul_bias_relu]") {
  if (skipped_without_gpu()) return;
  for (DataType type : {DataType::kBFloat16, DataType::kFloat}) {
    MatmulDescription d = matmul_of(type);
    d.add_bias = true;
    d.relu = true;
    check_matmul(d, type == DataType::kFloat ? "matmul+bias+relu fp32" : "matmul+bias+relu bf16");
  }
}

TEST_CASE("convolution matches a double-precision reference", "[gpu][convolution]") {
  if (skipped_without_gpu()) return;
  check_convolution(convolution_of(DataType::kBFloat16), "convolution bf16");
  check_convolution(convolution_of(DataType::kFloat), "convolution fp32");
  ConvolutionDescription strided = convolution_of(DataType::kBFloat16);
  strided.stride_h = strided.stride_w = 2;
  strided.r = strided.s = 5;
  strided.pad_h = strided.pad_w = 2;
  check_convolution(strided, "convolution bf16 5x5 stride 2");
}
