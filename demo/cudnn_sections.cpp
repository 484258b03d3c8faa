// Sections 2 to 4: cuDNN's backend API (a variant pack built per op, then executed) and its legacy
// batch norm, called the way PyTorch calls them.
#include <cstdio>

#include "demo/demo.h"
#include "tests/packs/pack_api.h"

namespace demo {

namespace {

// cuDNN's status as one line's worth.
std::string status_text(const Cudnn& cudnn, cudnnStatus_t s) {
  return std::string(cudnn.error(s)) + " (status " + std::to_string(static_cast<int>(s)) + ")";
}

// The backend calls as the program makes them, in the table the test tree's plan builder takes.
PackApi program_backend(const Cudnn& c) {
  PackApi api{};
  api.create_handle = c.cudnnCreate;
  api.destroy_handle = c.cudnnDestroy;
  api.set_stream = c.cudnnSetStream;
  api.create = c.cudnnBackendCreateDescriptor;
  api.destroy = c.cudnnBackendDestroyDescriptor;
  api.set = c.cudnnBackendSetAttribute;
  api.get = c.cudnnBackendGetAttribute;
  api.finalize = c.cudnnBackendFinalize;
  api.execute = c.cudnnBackendExecute;
  return api;
}

// One op as PyTorch's cuDNN frontend makes it: the handle's stream set, a variant pack made with
// the op's pointers and workspace, the plan executed with it, the pack destroyed.
cudnnStatus_t pack_and_execute(const PackApi& api, cudnnHandle_t handle, cudaStream_t stream,
                               cudnnBackendDescriptor_t plan, const std::int64_t uids[3], void* const pointers[3],
                               void* workspace, const char*& failed) {
  cudnnBackendDescriptor_t pack = nullptr;
  cudnnStatus_t s = api.set_stream(handle, stream);
  failed = "cudnnSetStream";
  if (s == 0) s = api.create(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, &pack), failed = "creating the variant pack";
  if (s == 0) s = api.set(pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, 3, uids), failed = "its uids";
  if (s == 0)
    s = api.set(pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, 3, pointers), failed = "its pointers";
  if (s == 0)
    s = api.set(pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &workspace), failed = "its workspace";
  if (s == 0) s = api.finalize(pack), failed = "cudnnBackendFinalize(variant pack)";
  if (s == 0) s = api.execute(handle, plan, pack), failed = "cudnnBackendExecute";
  if (pack != nullptr) {
    const cudnnStatus_t destroyed = api.destroy(pack);
    if (s == 0 && destroyed != 0) s = destroyed, failed = "destroying the variant pack";
  }
  return s;
}

}  // namespace

void backend_section(const Libraries& libs, const ShimCounters& shim, DeviceMemory& memory, Streams streams) {
  std::printf("2. variant packs: %d ops of a backend matmul plan, each building its cudnnBackend variant pack\n"
              "   anew with the same contents, as PyTorch's cuDNN frontend does\n",
              kOps);
  const Cudnn& cudnn = libs.cudnn;
  const PackApi api = program_backend(cudnn);
  cudnnHandle_t handle = nullptr;
  cudnnStatus_t s = cudnn.cudnnCreate(&handle);
  if (s != 0) return say_failed("cudnnCreate: %s", status_text(cudnn, s).c_str());
  constexpr std::int64_t kUids[3] = {1, 2, 3};
  MatmulPlan plan;  // C[1,64,32] = A[1,64,16] x B[1,16,32], fp32
  s = cudnn.cudnnSetStream(handle, streams.main);
  if (s == 0) s = plan.build(api, handle, kUids);
  std::int64_t workspace_size = 0, returned = 0;
  if (s == 0)
    s = api.get(plan.plan(), CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, &returned, &workspace_size);
  if (s != 0) {
    say_failed("building the matmul plan: %s", status_text(cudnn, s).c_str());
    plan.release();
    cudnn.cudnnDestroy(handle);
    return;
  }
  void* const pointers[3] = {memory.take(64 * 16 * 4), memory.take(16 * 32 * 4), memory.take(64 * 32 * 4)};
  void* workspace = memory.take(static_cast<std::size_t>(workspace_size > 0 ? workspace_size : 256));

  const ShimCounters::Snapshot before = shim.now();
  const StubBackendCounters stub_before = libs.stub.backend ? libs.stub.backend() : StubBackendCounters{};
  int done = 0;
  for (const char* failed = ""; done < kOps; ++done) {
    s = pack_and_execute(api, handle, streams.main, plan.plan(), kUids, pointers, workspace, failed);
    if (s != 0) {
      say_failed("op %d, %s: %s", done + 1, failed, status_text(cudnn, s).c_str());
      break;
    }
  }
  synchronize(libs, streams.main);
  shim.print_since(before, {"packs_proxied", "pack_hits", "pack_misses"});

  std::printf("3. executes: the same %d ops' cudnnBackendExecute, each with its new pack\n", done);
  if (libs.stub.backend) {
    const StubBackendCounters now = libs.stub.backend();
    std::printf("  the stub libcudnn ran %llu: %llu executes reached it, %llu run by graph launches\n",
                static_cast<unsigned long long>(now.runs - stub_before.runs),
                static_cast<unsigned long long>(now.execute - stub_before.execute),
                static_cast<unsigned long long>(now.replays - stub_before.replays));
  }
  shim.print_since(before, {"backend_launches", "backend_captured", "backend_direct"});
  plan.release();
  cudnn.cudnnDestroy(handle);
}

void batch_norm_section(const Libraries& libs, const ShimCounters& shim, DeviceMemory& memory, Streams streams) {
  constexpr int n = 2, c = 4, h = 8, w = 8;
  std::printf("4. legacy batch norm: %d cudnnBatchNormalizationForwardInference on [%d,%d,%d,%d], its two tensor\n"
              "   descriptors made and destroyed around every call, as PyTorch does\n",
              kOps, n, c, h, w);
  const Cudnn& cudnn = libs.cudnn;
  cudnnHandle_t handle = nullptr;
  cudnnStatus_t s = cudnn.cudnnCreate(&handle);
  if (s != 0) return say_failed("cudnnCreate: %s", status_text(cudnn, s).c_str());
  const std::size_t tensor_bytes = sizeof(float) * n * c * h * w, channel_bytes = sizeof(float) * c;
  const void* x = memory.take(tensor_bytes);
  void* y = memory.take(tensor_bytes);
  void* scale = memory.take(channel_bytes);
  void* bias = memory.take(channel_bytes);
  void* mean = memory.take(channel_bytes);
  void* variance = memory.take(channel_bytes);  // zero: with epsilon, y = scale * x / sqrt(eps) + bias
  const float one = 1.0f, zero = 0.0f;

  const ShimCounters::Snapshot before = shim.now();
  const StubCudnnOpCounters stub_before =
      libs.stub.legacy_op ? libs.stub.legacy_op(STUBCUDNN_BATCHNORM_FORWARD_INFERENCE) : StubCudnnOpCounters{};
  for (int i = 0; i < kOps; ++i) {
    cudnnTensorDescriptor_t x_desc = nullptr, bn_desc = nullptr;
    const char* failed = "cudnnSetStream";
    s = cudnn.cudnnSetStream(handle, streams.main);
    if (s == 0) s = cudnn.cudnnCreateTensorDescriptor(&x_desc), failed = "cudnnCreateTensorDescriptor";
    if (s == 0) s = cudnn.cudnnCreateTensorDescriptor(&bn_desc);
    if (s == 0)
      s = cudnn.cudnnSetTensor4dDescriptor(x_desc, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, n, c, h, w),
      failed = "cudnnSetTensor4dDescriptor";
    if (s == 0) s = cudnn.cudnnSetTensor4dDescriptor(bn_desc, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, c, 1, 1);
    if (s == 0)
      s = cudnn.cudnnBatchNormalizationForwardInference(handle, CUDNN_BATCHNORM_SPATIAL, &one, &zero, x_desc, x, x_desc,
                                                        y, bn_desc, scale, bias, mean, variance, 1e-5),
      failed = "cudnnBatchNormalizationForwardInference";
    if (bn_desc != nullptr) cudnn.cudnnDestroyTensorDescriptor(bn_desc);
    if (x_desc != nullptr) cudnn.cudnnDestroyTensorDescriptor(x_desc);
    if (s != 0) {
      say_failed("call %d, %s: %s", i + 1, failed, status_text(cudnn, s).c_str());
      break;
    }
  }
  synchronize(libs, streams.main);
  if (libs.stub.legacy_op) {
    const StubCudnnOpCounters now = libs.stub.legacy_op(STUBCUDNN_BATCHNORM_FORWARD_INFERENCE);
    std::printf("  the stub libcudnn ran it %llu times: %llu calls reached it, %llu run by graph launches\n",
                static_cast<unsigned long long>(now.direct_runs + now.replays - stub_before.direct_runs -
                                                stub_before.replays),
                static_cast<unsigned long long>(now.calls - stub_before.calls),
                static_cast<unsigned long long>(now.replays - stub_before.replays));
  }
  shim.print_since(before, {"legacy_bn_launches", "legacy_bn_captured", "legacy_bn_direct", "legacy_bn_unknown"});
  cudnn.cudnnDestroy(handle);
}

}  // namespace demo
