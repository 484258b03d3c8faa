// libblas_tracer.so: a tracer preloaded before the shim that wraps cublasLtMatmul and forwards it
// with dlsym(RTLD_NEXT), as a timing or logging preload does. cuBLAS's own Lt matmul then reaches
// the shim from this library, not from libcublas: only the shim's knowledge that it is inside a
// GEMM of its own tells it that the call is cuBLAS's. Built -fno-optimize-sibling-calls (and with
// work after the call): the forward is a call from here, not a jump.
#include <cublasLt.h>
#include <dlfcn.h>

#include <atomic>
#include <cstdint>

namespace {
std::atomic<std::uint64_t> g_calls{0};
}

extern "C" {

__attribute__((visibility("default"))) cublasStatus_t cublasLtMatmul(
    cublasLtHandle_t lightHandle, cublasLtMatmulDesc_t computeDesc, const void* alpha, const void* A,
    cublasLtMatrixLayout_t Adesc, const void* B, cublasLtMatrixLayout_t Bdesc, const void* beta, const void* C,
    cublasLtMatrixLayout_t Cdesc, void* D, cublasLtMatrixLayout_t Ddesc, const cublasLtMatmulAlgo_t* algo,
    void* workspace, size_t workspaceSizeInBytes, cudaStream_t stream) {
  static const auto next = reinterpret_cast<decltype(&cublasLtMatmul)>(dlsym(RTLD_NEXT, "cublasLtMatmul"));
  if (next == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  const cublasStatus_t status = next(lightHandle, computeDesc, alpha, A, Adesc, B, Bdesc, beta, C, Cdesc, D, Ddesc,
                                     algo, workspace, workspaceSizeInBytes, stream);
  g_calls.fetch_add(1, std::memory_order_relaxed);
  return status;
}

// The matmuls it forwarded.
__attribute__((visibility("default"))) std::uint64_t blas_tracer_calls() { return g_calls.load(); }

}  // extern "C"
