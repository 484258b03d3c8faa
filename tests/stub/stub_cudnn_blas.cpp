// The stub libcudnn's inner cuBLASLt matmul (stub_cudnn_blas_control.h). In a file of its own, for
// the reason stub_hooks.cpp gives: cublasLtMatmul is defined in libcublasLt, so the call goes
// through libcudnn's PLT, which the dynamic linker binds to the first definition in the global
// scope (a preloaded interposer's, if any); it is not a tail call.
#include <cudnn_graph.h>

#include <atomic>
#include <mutex>

#include "tests/stub/stub_cudnn_blas_control.h"

extern "C" cudaStream_t stubcudnn_handle_stream(cudnnHandle_t handle);

namespace {

std::atomic<bool> g_on{false};  // relaxed: set by a test before the executes it means
std::mutex g_lock;              // the matmul below
StubCudnnInnerMatmul g_matmul{};
std::atomic<std::uint64_t> g_calls{0}, g_failures{0};
std::atomic<bool> g_set_armed{false};  // relaxed: armed by a test before the execute it means
cublasLtMatmulDesc_t g_set_desc = nullptr;  // the set below, under g_lock
std::uint32_t g_set_epilogue = 0;

// The armed set of stubcudnn_inner_lt_epilogue, once.
void run_inner_set() {
  if (!g_set_armed.load(std::memory_order_relaxed) || !g_set_armed.exchange(false, std::memory_order_relaxed)) return;
  cublasLtMatmulDesc_t desc;
  std::uint32_t epilogue;
  {
    std::lock_guard<std::mutex> guard(g_lock);
    desc = g_set_desc;
    epilogue = g_set_epilogue;
  }
  cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof epilogue);
  asm volatile("" ::: "memory");  // a call from here, not a jump
}

}  // namespace

namespace stubcudnnblas {

// Called by cudnnBackendExecute before its own work (hidden: no other object sees it).
__attribute__((visibility("hidden"))) void run_inner_lt_matmul(cudnnHandle_t handle) {
  run_inner_set();
  if (!g_on.load(std::memory_order_relaxed)) return;  // off: nothing, no lock (the frontend's timings)
  StubCudnnInnerMatmul m;
  {
    std::lock_guard<std::mutex> guard(g_lock);
    m = g_matmul;
  }
  const cublasStatus_t status =
      cublasLtMatmul(m.handle, m.desc, m.alpha, m.a, m.a_desc, m.b, m.b_desc, m.beta, m.c, m.c_desc, m.d, m.d_desc,
                     nullptr, m.workspace, m.workspace_size, stubcudnn_handle_stream(handle));
  asm volatile("" ::: "memory");  // the matmul above is a call from here, not a jump
  g_calls.fetch_add(1, std::memory_order_relaxed);
  if (status != CUBLAS_STATUS_SUCCESS) g_failures.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace stubcudnnblas

extern "C" {

void stubcudnn_inner_lt_matmul(const StubCudnnInnerMatmul* matmul) {
  std::lock_guard<std::mutex> guard(g_lock);
  if (matmul != nullptr) g_matmul = *matmul;
  g_on.store(matmul != nullptr, std::memory_order_relaxed);
}

void stubcudnn_inner_lt_epilogue(cublasLtMatmulDesc_t desc, uint32_t epilogue) {
  {
    std::lock_guard<std::mutex> guard(g_lock);
    g_set_desc = desc;
    g_set_epilogue = epilogue;
  }
  g_set_armed.store(true, std::memory_order_relaxed);
}

StubCudnnInnerMatmulCounts stubcudnn_inner_lt_matmul_counts(void) {
  return {g_calls.load(std::memory_order_relaxed), g_failures.load(std::memory_order_relaxed)};
}

}  // extern "C"
