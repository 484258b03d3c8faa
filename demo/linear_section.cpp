// Section 5: a PyTorch-style Linear layer, y = x W^T (in features 64, out 32, batch 16), through
// cuBLASLt the way at::cuda::blas makes it (descriptors made and destroyed per call, the
// heuristic asked each time, then the matmul), and the same product through cublasGemmEx on a
// cuBLAS handle whose stream and workspace are set before every call, as PyTorch's handle pool does.
#include <cstdio>

#include "demo/demo.h"

namespace demo {

namespace {

constexpr int kIn = 64, kOut = 32, kBatch = 16;
constexpr std::size_t kWorkspaceBytes = 1 << 20;

std::string blas_status(cublasStatus_t s) { return "cublasStatus_t " + std::to_string(static_cast<int>(s)); }

struct LinearBuffers {
  const void* weight;  // [out, in] row-major: column-major in x out, used transposed
  const void* input;   // [batch, in] row-major: column-major in x batch
  void* output;        // [batch, out] row-major: column-major out x batch
  void* workspace;
};

// One call of the Lt path; the name of the step that failed in `failed`.
cublasStatus_t lt_linear(const Blas& b, cublasLtHandle_t handle, const LinearBuffers& m, cudaStream_t stream,
                         const char*& failed) {
  const float alpha = 1.0f, beta = 0.0f;
  const cublasOperation_t transpose = CUBLAS_OP_T;
  const std::uint64_t max_workspace = kWorkspaceBytes;
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, x = nullptr, y = nullptr;
  cublasLtMatmulPreference_t preference = nullptr;
  cublasLtMatmulHeuristicResult_t result{};
  int returned = 0;
  cublasStatus_t s = b.cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F);
  failed = "cublasLtMatmulDescCreate";
  if (s == 0)
    s = b.cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &transpose, sizeof transpose),
    failed = "cublasLtMatmulDescSetAttribute";
  if (s == 0) s = b.cublasLtMatrixLayoutCreate(&a, CUDA_R_32F, kIn, kOut, kIn), failed = "cublasLtMatrixLayoutCreate";
  if (s == 0) s = b.cublasLtMatrixLayoutCreate(&x, CUDA_R_32F, kIn, kBatch, kIn);
  if (s == 0) s = b.cublasLtMatrixLayoutCreate(&y, CUDA_R_32F, kOut, kBatch, kOut);
  if (s == 0) s = b.cublasLtMatmulPreferenceCreate(&preference), failed = "cublasLtMatmulPreferenceCreate";
  if (s == 0)
    s = b.cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &max_workspace,
                                               sizeof max_workspace),
    failed = "cublasLtMatmulPreferenceSetAttribute";
  if (s == 0)
    s = b.cublasLtMatmulAlgoGetHeuristic(handle, desc, a, x, y, y, preference, 1, &result, &returned),
    failed = "cublasLtMatmulAlgoGetHeuristic";
  if (s == 0 && returned == 0) s = CUBLAS_STATUS_NOT_SUPPORTED;
  if (s == 0)
    s = b.cublasLtMatmul(handle, desc, &alpha, m.weight, a, m.input, x, &beta, m.output, y, m.output, y, &result.algo,
                         m.workspace, kWorkspaceBytes, stream),
    failed = "cublasLtMatmul";
  if (preference != nullptr) b.cublasLtMatmulPreferenceDestroy(preference);
  for (cublasLtMatrixLayout_t layout : {y, x, a})
    if (layout != nullptr) b.cublasLtMatrixLayoutDestroy(layout);
  if (desc != nullptr) b.cublasLtMatmulDescDestroy(desc);
  return s;
}

}  // namespace

void linear_section(const Libraries& libs, const ShimCounters& shim, DeviceMemory& memory, Streams streams) {
  std::printf("5. Linear layer (in %d, out %d, batch %d) as PyTorch runs it: %d times through cuBLASLt, its\n"
              "   descriptors made per call, the heuristic asked, then the matmul; %d times through cublasGemmEx\n",
              kIn, kOut, kBatch, kOps, kOps);
  if (!libs.blas_loaded) {
    std::printf("  skipped: cuBLAS is not there (%s)\n", libs.blas_missing.c_str());
    return;
  }
  const Blas& b = libs.blas;
  const LinearBuffers m{memory.take(sizeof(float) * kOut * kIn), memory.take(sizeof(float) * kBatch * kIn),
                        memory.take(sizeof(float) * kBatch * kOut), memory.take(kWorkspaceBytes)};

  cublasLtHandle_t lt = nullptr;
  cublasStatus_t s = b.cublasLtCreate(&lt);
  if (s != 0) return say_failed("cublasLtCreate: %s", blas_status(s).c_str());
  ShimCounters::Snapshot before = shim.now();
  const StubBlasLtCounters lt_before = libs.stub.lt ? libs.stub.lt() : StubBlasLtCounters{};
  for (int i = 0; i < kOps; ++i) {
    const char* failed = "";
    s = lt_linear(b, lt, m, streams.main, failed);
    if (s != 0) {
      say_failed("call %d, %s: %s", i + 1, failed, blas_status(s).c_str());
      break;
    }
  }
  synchronize(libs, streams.main);
  if (libs.stub.lt) {
    const StubBlasLtCounters now = libs.stub.lt();
    std::printf("  the stub libcublasLt: %llu heuristic calls and %llu matmuls reached it, %llu matmuls run by graph launches\n",
                static_cast<unsigned long long>(now.heuristic_calls - lt_before.heuristic_calls),
                static_cast<unsigned long long>(now.matmul_calls - lt_before.matmul_calls),
                static_cast<unsigned long long>(now.matmul_replays - lt_before.matmul_replays));
  }
  shim.print_since(before, {"heuristic_cached", "heuristic_stored", "heuristic_direct"});
  shim.print_since(before, {"lt_matmul_launches", "lt_matmul_captured", "lt_matmul_direct", "lt_matmul_unknown"});
  b.cublasLtDestroy(lt);

  // The same product through cuBLAS: y^T (out x batch) = W (in x out)^T x^T (in x batch).
  cublasHandle_t handle = nullptr;
  s = b.cublasCreate_v2(&handle);
  if (s != 0) return say_failed("cublasCreate_v2: %s", blas_status(s).c_str());
  before = shim.now();
  const StubBlasCounters blas_before = libs.stub.blas ? libs.stub.blas() : StubBlasCounters{};
  const float alpha = 1.0f, beta = 0.0f;
  for (int i = 0; i < kOps; ++i) {
    const char* failed = "cublasSetStream_v2";
    s = b.cublasSetStream_v2(handle, streams.main);
    if (s == 0) s = b.cublasSetWorkspace_v2(handle, m.workspace, kWorkspaceBytes), failed = "cublasSetWorkspace_v2";
    if (s == 0)
      s = b.cublasGemmEx(handle, CUBLAS_OP_T, CUBLAS_OP_N, kOut, kBatch, kIn, &alpha, m.weight, CUDA_R_32F, kIn,
                         m.input, CUDA_R_32F, kIn, &beta, m.output, CUDA_R_32F, kOut, CUBLAS_COMPUTE_32F,
                         CUBLAS_GEMM_DEFAULT),
      failed = "cublasGemmEx";
    if (s != 0) {
      say_failed("call %d, %s: %s", i + 1, failed, blas_status(s).c_str());
      break;
    }
  }
  synchronize(libs, streams.main);
  if (libs.stub.blas) {
    const StubBlasCounters now = libs.stub.blas();
    std::printf("  the stub libcublas: %llu GEMMs reached it, %llu run by graph launches\n",
                static_cast<unsigned long long>(now.gemm_calls - blas_before.gemm_calls),
                static_cast<unsigned long long>(now.gemm_replays - blas_before.gemm_replays));
  }
  shim.print_since(before, {"gemm_launches", "gemm_captured", "gemm_direct", "gemm_unknown"});
  b.cublasDestroy_v2(handle);
}

}  // namespace demo
