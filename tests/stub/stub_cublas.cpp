// The stub libcublas.so.13: handles with the real setters and getters, and cublasGemmEx,
// cublasGemmEx_64, cublasGemmStridedBatchedEx and cublasGemmStridedBatchedEx_64 (see
// stub_blas_control.h). Like the real one it needs libcublasLt.so.13: its handles are accepted
// as cuBLASLt handles there, and with stubblas_inner_lt_calls on each GEMM runs an Lt matmul too.
//
// A GEMM reads its arguments and the handle's state into a blob when it is called; on the
// handle's capturing stream it is recorded (and, with no user workspace, counted as an allocation
// the real cuBLAS would make inside the capture), otherwise it runs: a digest into C.
#include <cublasLt.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <mutex>

#include "tests/stub/reusing_pool.h"
#include "tests/stub/stub_blas_control.h"
#include "tests/stub/stub_blas_digest.h"
#include "tests/stub/stub_cublas_internal.h"
#include "tests/stub/stub_cuda.h"

// The driver stub, when the process has one (a weak reference: cuBLAS does not need it).
extern "C" __attribute__((weak)) int stubcuda_capture_node(CUstream, void (*)(const void*), const void*, std::size_t);

namespace {

struct BlasHandle {
  bool live = false;  // this and everything below under g_lock
  std::uint64_t serial = 0;
  cudaStream_t stream = nullptr;
  bool user_workspace = false;
  void* workspace = nullptr;
  std::size_t workspace_size = 0;
  cublasPointerMode_t pointer_mode = CUBLAS_POINTER_MODE_HOST;
  cublasMath_t math_mode = CUBLAS_DEFAULT_MATH;
  cublasAtomicsMode_t atomics_mode = CUBLAS_ATOMICS_NOT_ALLOWED;
  int sm_count_target = 0;
  cublasEmulationStrategy_t emulation_strategy = CUBLAS_EMULATION_STRATEGY_DEFAULT;
  cudaEmulationSpecialValuesSupport special_values = CUDA_EMULATION_SPECIAL_VALUES_SUPPORT_DEFAULT;
  cudaEmulationMantissaControl mantissa_control = CUDA_EMULATION_MANTISSA_CONTROL_DYNAMIC;
  int max_mantissa_bit_count = 0;
  int mantissa_bit_offset = 0;
  int* mantissa_bit_count_pointer = nullptr;
  alignas(256) unsigned char scratch[256];  // D of the inner Lt matmuls (stubblas_inner_lt_calls)
};

ReusingPool<BlasHandle, 1024> g_handles;
std::mutex g_lock;
StubBlasCounters g_counters{};  // under g_lock
std::atomic<int> g_inner_calls{0};

thread_local StubBlasGemmRun t_last_run{};
thread_local cudaStream_t t_last_stream = nullptr;

// A live handle, or nullptr (under g_lock).
BlasHandle* live(cublasHandle_t handle) {
  BlasHandle* h = g_handles.at(handle);
  return h != nullptr && h->live ? h : nullptr;
}

// Runs `f` on the live handle under the lock; NOT_INITIALIZED for anything else.
template <typename F>
cublasStatus_t with_handle(cublasHandle_t handle, F f) {
  std::lock_guard<std::mutex> guard(g_lock);
  BlasHandle* h = live(handle);
  return h == nullptr ? CUBLAS_STATUS_NOT_INITIALIZED : f(*h);
}

// A getter: INVALID_VALUE for a NULL output.
template <typename T, typename V>
cublasStatus_t get(cublasHandle_t handle, T* out, V BlasHandle::*field) {
  if (out == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  return with_handle(handle, [&](BlasHandle& h) {
    *out = static_cast<T>(h.*field);
    return CUBLAS_STATUS_SUCCESS;
  });
}

// A setter: INVALID_VALUE when `valid` is false.
template <typename V>
cublasStatus_t set(cublasHandle_t handle, V value, V BlasHandle::*field, bool valid = true) {
  return with_handle(handle, [&](BlasHandle& h) {
    if (!valid) return CUBLAS_STATUS_INVALID_VALUE;
    h.*field = value;
    return CUBLAS_STATUS_SUCCESS;
  });
}

bool complex_type(int type) {
  switch (type) {
    case CUDA_C_16F: case CUDA_C_16BF: case CUDA_C_32F: case CUDA_C_64F: case CUDA_C_4I: case CUDA_C_4U:
    case CUDA_C_8I: case CUDA_C_8U: case CUDA_C_16I: case CUDA_C_16U: case CUDA_C_32I: case CUDA_C_32U:
    case CUDA_C_64I: case CUDA_C_64U:
      return true;
    default:
      return false;
  }
}

// The type of alpha and beta under a compute type (complex when C is): 0 for an unknown one.
cudaDataType_t scale_type(cublasComputeType_t compute, cudaDataType_t c_type, std::uint32_t* size) {
  const bool complex = complex_type(c_type);
  cudaDataType_t type;
  switch (compute) {
    case CUBLAS_COMPUTE_32F: case CUBLAS_COMPUTE_32F_PEDANTIC: case CUBLAS_COMPUTE_32F_FAST_16F:
    case CUBLAS_COMPUTE_32F_FAST_16BF: case CUBLAS_COMPUTE_32F_FAST_TF32: case CUBLAS_COMPUTE_32F_EMULATED_16BFX9:
      type = complex ? CUDA_C_32F : CUDA_R_32F;
      break;
    case CUBLAS_COMPUTE_64F: case CUBLAS_COMPUTE_64F_PEDANTIC: case CUBLAS_COMPUTE_64F_EMULATED_FIXEDPOINT:
      type = complex ? CUDA_C_64F : CUDA_R_64F;
      break;
    case CUBLAS_COMPUTE_16F: case CUBLAS_COMPUTE_16F_PEDANTIC:
      type = complex ? CUDA_C_16F : CUDA_R_16F;
      break;
    case CUBLAS_COMPUTE_32I: case CUBLAS_COMPUTE_32I_PEDANTIC:
      type = complex ? CUDA_C_32I : CUDA_R_32I;
      break;
    default:
      *size = 0;
      return CUDA_R_32F;
  }
  *size = stubblas::scale_size(type);
  return type;
}

// A GEMM's arguments, whichever entry point it came through.
struct Gemm {
  StubBlasGemmEntry entry;
  cublasOperation_t transa, transb;
  std::int64_t m, n, k;
  const void* alpha;
  const void* a;
  cudaDataType a_type;
  std::int64_t lda, stride_a;
  const void* b;
  cudaDataType b_type;
  std::int64_t ldb, stride_b;
  const void* beta;
  void* c;
  cudaDataType c_type;
  std::int64_t ldc, stride_c, batch_count;
  cublasComputeType_t compute_type;
  cublasGemmAlgo_t algo;
};

// Runs a GEMM from its blob (at the call, or at each launch of a graph captured from it).
void run_gemm(const StubBlasGemmBlob& blob, bool replayed) {
  const void* reads[3] = {blob.a, blob.b, blob.c};
  const std::uint64_t digest = stubblas::digest(&blob, sizeof blob, reads, 3, blob.alpha, blob.beta);
  std::memcpy(blob.c, &digest, sizeof digest);
  if (!replayed && stubblas_reference_calls_on()) return;  // a reference call: not counted, not recorded
  std::memcpy(&t_last_run.blob, &blob, sizeof blob);
  t_last_run.digest = digest;
  t_last_run.replayed = replayed;
  t_last_run.valid = 1;
  std::lock_guard<std::mutex> guard(g_lock);
  ++(replayed ? g_counters.gemm_replays : g_counters.gemm_direct);
}

void replay_gemm(const void* blob) { run_gemm(*static_cast<const StubBlasGemmBlob*>(blob), true); }

cublasStatus_t gemm(cublasHandle_t handle, const Gemm& g) {
  const bool reference = stubblas_reference_calls_on() != 0;
  StubBlasGemmBlob blob;
  std::memset(&blob, 0, sizeof blob);  // padding too: the blob is hashed
  cudaStream_t stream = nullptr;
  void* scratch = nullptr;
  {
    std::lock_guard<std::mutex> guard(g_lock);
    if (!reference) ++g_counters.gemm_calls;
    BlasHandle* h = live(handle);
    if (h == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
    blob.handle_serial = h->serial;
    stream = h->stream;
    blob.default_pool = !h->user_workspace;
    blob.workspace = h->user_workspace ? h->workspace : nullptr;
    blob.workspace_size = h->user_workspace ? h->workspace_size : 0;
    blob.pointer_mode = h->pointer_mode;
    blob.math_mode = h->math_mode;
    blob.atomics_mode = h->atomics_mode;
    blob.sm_count_target = h->sm_count_target;
    blob.emulation_strategy = h->emulation_strategy;
    blob.special_values_support = h->special_values;
    blob.mantissa_control = h->mantissa_control;
    blob.max_mantissa_bit_count = h->max_mantissa_bit_count;
    blob.mantissa_bit_offset = h->mantissa_bit_offset;
    blob.mantissa_bit_count_pointer = h->mantissa_bit_count_pointer;
    scratch = h->scratch;
  }
  if (g.m < 0 || g.n < 0 || g.k < 0 || g.lda < 0 || g.ldb < 0 || g.ldc < 0 || g.batch_count < 0)
    return CUBLAS_STATUS_INVALID_VALUE;
  if (g.alpha == nullptr || g.beta == nullptr || g.a == nullptr || g.b == nullptr || g.c == nullptr)
    return CUBLAS_STATUS_INVALID_VALUE;
  std::uint32_t size = 0;
  const cudaDataType_t scale = scale_type(g.compute_type, g.c_type, &size);
  if (size == 0) return CUBLAS_STATUS_INVALID_VALUE;
  const bool device = blob.pointer_mode == CUBLAS_POINTER_MODE_DEVICE;
  blob.alpha = device ? stubblas::device_scalar(g.alpha, size) : stubblas::host_scalar(g.alpha, size);
  blob.beta = device ? stubblas::device_scalar(g.beta, size) : stubblas::host_scalar(g.beta, size);
  blob.entry = g.entry;
  blob.transa = g.transa;
  blob.transb = g.transb;
  blob.a_type = g.a_type;
  blob.b_type = g.b_type;
  blob.c_type = g.c_type;
  blob.compute_type = g.compute_type;
  blob.algo = g.algo;
  blob.m = g.m;
  blob.n = g.n;
  blob.k = g.k;
  blob.lda = g.lda;
  blob.ldb = g.ldb;
  blob.ldc = g.ldc;
  blob.stride_a = g.stride_a;
  blob.stride_b = g.stride_b;
  blob.stride_c = g.stride_c;
  blob.batch_count = g.batch_count;
  blob.a = g.a;
  blob.b = g.b;
  blob.c = g.c;
  if (g_inner_calls.load() != 0) {  // the real cuBLAS's own Lt matmul, from inside libcublas
    const stubcublas::InnerMatmul inner = {reinterpret_cast<cublasLtHandle_t>(handle), stream, g.compute_type, scale, blob.pointer_mode,
             g.transa, g.transb, g.a_type, g.b_type, g.c_type, g.m, g.n, g.k, g.lda, g.ldb, g.ldc,
             g.stride_a, g.stride_b, g.stride_c, g.batch_count, g.alpha, g.beta, g.a, g.b, g.c, scratch,
             blob.workspace, blob.workspace_size};
    const cublasStatus_t status = stubcublas::inner_matmul(inner);
    if (!reference) {
      std::lock_guard<std::mutex> guard(g_lock);
      ++g_counters.inner_lt_calls;
      if (status != CUBLAS_STATUS_SUCCESS) ++g_counters.inner_lt_failures;
    }
  }
  if (!reference) t_last_stream = stream;
  // On the handle's capturing stream (the driver stub loaded), the GEMM is recorded, not run.
  if (!reference && stubcuda_capture_node != nullptr &&
      stubcuda_capture_node(reinterpret_cast<CUstream>(stream), replay_gemm, &blob, sizeof blob) == 1) {
    std::lock_guard<std::mutex> guard(g_lock);
    ++g_counters.gemm_captured;
    if (blob.default_pool) ++g_counters.allocations_in_capture;
    return CUBLAS_STATUS_SUCCESS;
  }
  run_gemm(blob, false);
  return CUBLAS_STATUS_SUCCESS;
}

}  // namespace

extern "C" {

cublasStatus_t CUBLASWINAPI cublasCreate_v2(cublasHandle_t* handle) {
  if (handle == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  BlasHandle* h = g_handles.acquire();
  if (h == nullptr) return CUBLAS_STATUS_ALLOC_FAILED;
  const std::uint64_t serial = stubblaslt_adopt_handle(h);  // cuBLASLt takes it as its own
  std::lock_guard<std::mutex> guard(g_lock);
  *h = BlasHandle{};
  h->live = true;
  h->serial = serial;
  ++g_counters.handles_created;
  *handle = reinterpret_cast<cublasHandle_t>(h);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t CUBLASWINAPI cublasDestroy_v2(cublasHandle_t handle) {
  BlasHandle* h = nullptr;
  {
    std::lock_guard<std::mutex> guard(g_lock);
    h = live(handle);
    if (h == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
    h->live = false;
    ++g_counters.handles_destroyed;
  }
  stubblaslt_forget_handle(h);
  g_handles.release(h);
  return CUBLAS_STATUS_SUCCESS;
}

// As in the real cuBLAS, a new stream (even the same one) unconditionally brings back the
// default workspace pool.
cublasStatus_t CUBLASWINAPI cublasSetStream_v2(cublasHandle_t handle, cudaStream_t streamId) {
  return with_handle(handle, [&](BlasHandle& h) {
    h.stream = streamId;
    h.user_workspace = false;
    h.workspace = nullptr;
    h.workspace_size = 0;
    ++g_counters.set_stream;
    return CUBLAS_STATUS_SUCCESS;
  });
}

cublasStatus_t CUBLASWINAPI cublasGetStream_v2(cublasHandle_t handle, cudaStream_t* streamId) {
  return get(handle, streamId, &BlasHandle::stream);
}

// The real cuBLAS wants the workspace aligned to 256 bytes.
cublasStatus_t CUBLASWINAPI cublasSetWorkspace_v2(cublasHandle_t handle, void* workspace, size_t workspaceSizeInBytes) {
  return with_handle(handle, [&](BlasHandle& h) {
    if (reinterpret_cast<std::uintptr_t>(workspace) % 256 != 0) return CUBLAS_STATUS_INVALID_VALUE;
    h.user_workspace = true;
    h.workspace = workspace;
    h.workspace_size = workspaceSizeInBytes;
    ++g_counters.set_workspace;
    return CUBLAS_STATUS_SUCCESS;
  });
}

cublasStatus_t CUBLASWINAPI cublasGetPointerMode_v2(cublasHandle_t handle, cublasPointerMode_t* mode) {
  return get(handle, mode, &BlasHandle::pointer_mode);
}

cublasStatus_t CUBLASWINAPI cublasSetPointerMode_v2(cublasHandle_t handle, cublasPointerMode_t mode) {
  return set(handle, mode, &BlasHandle::pointer_mode,
             mode == CUBLAS_POINTER_MODE_HOST || mode == CUBLAS_POINTER_MODE_DEVICE);
}

cublasStatus_t CUBLASWINAPI cublasGetAtomicsMode(cublasHandle_t handle, cublasAtomicsMode_t* mode) {
  return get(handle, mode, &BlasHandle::atomics_mode);
}

cublasStatus_t CUBLASWINAPI cublasSetAtomicsMode(cublasHandle_t handle, cublasAtomicsMode_t mode) {
  return set(handle, mode, &BlasHandle::atomics_mode,
             mode == CUBLAS_ATOMICS_NOT_ALLOWED || mode == CUBLAS_ATOMICS_ALLOWED);
}

cublasStatus_t CUBLASWINAPI cublasGetMathMode(cublasHandle_t handle, cublasMath_t* mode) {
  return get(handle, mode, &BlasHandle::math_mode);
}

// A mode (0 to 4, or 8) with or without CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION.
cublasStatus_t CUBLASWINAPI cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode) {
  const int base = mode & 0xf;
  const bool valid = (mode & ~0x1f) == 0 && (base <= CUBLAS_FP32_EMULATED_BF16X9_MATH ||
                                             base == CUBLAS_FP64_EMULATED_FIXEDPOINT_MATH);
  return set(handle, mode, &BlasHandle::math_mode, valid);
}

cublasStatus_t CUBLASWINAPI cublasGetSmCountTarget(cublasHandle_t handle, int* smCountTarget) {
  return get(handle, smCountTarget, &BlasHandle::sm_count_target);
}

cublasStatus_t CUBLASWINAPI cublasSetSmCountTarget(cublasHandle_t handle, int smCountTarget) {
  return set(handle, smCountTarget, &BlasHandle::sm_count_target, smCountTarget >= 0);
}

cublasStatus_t CUBLASWINAPI cublasGetEmulationStrategy(cublasHandle_t handle,
                                                       cublasEmulationStrategy_t* emulationStrategy) {
  return get(handle, emulationStrategy, &BlasHandle::emulation_strategy);
}

cublasStatus_t CUBLASWINAPI cublasSetEmulationStrategy(cublasHandle_t handle,
                                                       cublasEmulationStrategy_t emulationStrategy) {
  return set(handle, emulationStrategy, &BlasHandle::emulation_strategy,
             emulationStrategy >= CUBLAS_EMULATION_STRATEGY_DEFAULT &&
                 emulationStrategy <= CUBLAS_EMULATION_STRATEGY_EAGER);
}

cublasStatus_t CUBLASWINAPI cublasGetEmulationSpecialValuesSupport(cublasHandle_t handle,
                                                                   cudaEmulationSpecialValuesSupport* mask) {
  return get(handle, mask, &BlasHandle::special_values);
}

cublasStatus_t CUBLASWINAPI cublasSetEmulationSpecialValuesSupport(cublasHandle_t handle,
                                                                   cudaEmulationSpecialValuesSupport mask) {
  return set(handle, mask, &BlasHandle::special_values);
}

cublasStatus_t CUBLASWINAPI cublasGetFixedPointEmulationMantissaControl(cublasHandle_t handle,
                                                                        cudaEmulationMantissaControl* mantissaControl) {
  return get(handle, mantissaControl, &BlasHandle::mantissa_control);
}

cublasStatus_t CUBLASWINAPI cublasSetFixedPointEmulationMantissaControl(cublasHandle_t handle,
                                                                        cudaEmulationMantissaControl mantissaControl) {
  return set(handle, mantissaControl, &BlasHandle::mantissa_control,
             mantissaControl == CUDA_EMULATION_MANTISSA_CONTROL_DYNAMIC ||
                 mantissaControl == CUDA_EMULATION_MANTISSA_CONTROL_FIXED);
}

cublasStatus_t CUBLASWINAPI cublasGetFixedPointEmulationMaxMantissaBitCount(cublasHandle_t handle,
                                                                            int* maxMantissaBitCount) {
  return get(handle, maxMantissaBitCount, &BlasHandle::max_mantissa_bit_count);
}

cublasStatus_t CUBLASWINAPI cublasSetFixedPointEmulationMaxMantissaBitCount(cublasHandle_t handle,
                                                                            int maxMantissaBitCount) {
  return set(handle, maxMantissaBitCount, &BlasHandle::max_mantissa_bit_count, maxMantissaBitCount >= 0);
}

cublasStatus_t CUBLASWINAPI cublasGetFixedPointEmulationMantissaBitOffset(cublasHandle_t handle,
                                                                          int* mantissaBitOffset) {
  return get(handle, mantissaBitOffset, &BlasHandle::mantissa_bit_offset);
}

cublasStatus_t CUBLASWINAPI cublasSetFixedPointEmulationMantissaBitOffset(cublasHandle_t handle, int mantissaBitOffset) {
  return set(handle, mantissaBitOffset, &BlasHandle::mantissa_bit_offset);
}

cublasStatus_t CUBLASWINAPI cublasGetFixedPointEmulationMantissaBitCountPointer(cublasHandle_t handle,
                                                                                int** mantissaBitCount) {
  return get(handle, mantissaBitCount, &BlasHandle::mantissa_bit_count_pointer);
}

cublasStatus_t CUBLASWINAPI cublasSetFixedPointEmulationMantissaBitCountPointer(cublasHandle_t handle,
                                                                                int* mantissaBitCount) {
  return set(handle, mantissaBitCount, &BlasHandle::mantissa_bit_count_pointer);
}

cublasStatus_t CUBLASWINAPI cublasGemmEx(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
                                         int m, int n, int k, const void* alpha, const void* A, cudaDataType Atype,
                                         int lda, const void* B, cudaDataType Btype, int ldb, const void* beta,
                                         void* C, cudaDataType Ctype, int ldc, cublasComputeType_t computeType,
                                         cublasGemmAlgo_t algo) {
  return gemm(handle, {STUBBLAS_GEMM_EX, transa, transb, m, n, k, alpha, A, Atype, lda, 0, B, Btype, ldb, 0, beta,
                       C, Ctype, ldc, 0, 1, computeType, algo});
}

cublasStatus_t CUBLASWINAPI cublasGemmEx_64(cublasHandle_t handle, cublasOperation_t transa,
                                            cublasOperation_t transb, int64_t m, int64_t n, int64_t k,
                                            const void* alpha, const void* A, cudaDataType Atype, int64_t lda,
                                            const void* B, cudaDataType Btype, int64_t ldb, const void* beta,
                                            void* C, cudaDataType Ctype, int64_t ldc,
                                            cublasComputeType_t computeType, cublasGemmAlgo_t algo) {
  return gemm(handle, {STUBBLAS_GEMM_EX_64, transa, transb, m, n, k, alpha, A, Atype, lda, 0, B, Btype, ldb, 0,
                       beta, C, Ctype, ldc, 0, 1, computeType, algo});
}

cublasStatus_t CUBLASWINAPI cublasGemmStridedBatchedEx(cublasHandle_t handle, cublasOperation_t transa,
                                                       cublasOperation_t transb, int m, int n, int k,
                                                       const void* alpha, const void* A, cudaDataType Atype,
                                                       int lda, long long int strideA, const void* B,
                                                       cudaDataType Btype, int ldb, long long int strideB,
                                                       const void* beta, void* C, cudaDataType Ctype, int ldc,
                                                       long long int strideC, int batchCount,
                                                       cublasComputeType_t computeType, cublasGemmAlgo_t algo) {
  return gemm(handle, {STUBBLAS_GEMM_STRIDED_BATCHED_EX, transa, transb, m, n, k, alpha, A, Atype, lda, strideA, B,
                       Btype, ldb, strideB, beta, C, Ctype, ldc, strideC, batchCount, computeType, algo});
}

cublasStatus_t CUBLASWINAPI cublasGemmStridedBatchedEx_64(cublasHandle_t handle, cublasOperation_t transa,
                                                          cublasOperation_t transb, int64_t m, int64_t n, int64_t k,
                                                          const void* alpha, const void* A, cudaDataType Atype,
                                                          int64_t lda, long long int strideA, const void* B,
                                                          cudaDataType Btype, int64_t ldb, long long int strideB,
                                                          const void* beta, void* C, cudaDataType Ctype,
                                                          int64_t ldc, long long int strideC, int64_t batchCount,
                                                          cublasComputeType_t computeType, cublasGemmAlgo_t algo) {
  return gemm(handle, {STUBBLAS_GEMM_STRIDED_BATCHED_EX_64, transa, transb, m, n, k, alpha, A, Atype, lda, strideA,
                       B, Btype, ldb, strideB, beta, C, Ctype, ldc, strideC, batchCount, computeType, algo});
}

StubBlasCounters stubblas_counters(void) {
  std::lock_guard<std::mutex> guard(g_lock);
  StubBlasCounters c = g_counters;
  c.live_handles = c.handles_created - c.handles_destroyed;
  return c;
}

StubBlasGemmRun stubblas_thread_last_gemm(void) { return t_last_run; }

cudaStream_t stubblas_thread_last_gemm_stream(void) { return t_last_stream; }

std::uint64_t stubblas_handle_serial(cublasHandle_t handle) {
  std::lock_guard<std::mutex> guard(g_lock);
  BlasHandle* h = live(handle);
  return h == nullptr ? 0 : h->serial;
}

int stubblas_inner_lt_calls(int on) { return g_inner_calls.exchange(on != 0); }

}  // extern "C"
