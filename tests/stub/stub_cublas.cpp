// The stub libcublas.so.13: handles with the real setters and getters, and cublasGemmEx,
// cublasGemmEx_64, cublasGemmStridedBatchedEx and cublasGemmStridedBatchedEx_64, and the typed
// cublas<t>gemm_v2 and cublas<t>gemmStridedBatched with their _64 forms (see
// stub_blas_control.h). Like the real one it needs libcublasLt.so.13: its handles are accepted
// as cuBLASLt handles there, and with stubblas_inner_lt_calls on each GEMM runs an Lt matmul too.
//
// A GEMM reads its arguments and the handle's state into a blob when it is called, and launches
// kernels that carry it (stub_styled_kernels.h, in the style stubblas_set_kernel_style chose): on
// the handle's capturing stream they are recorded (and, with no user workspace, the GEMM is
// counted as an allocation the real cuBLAS would make inside the capture), otherwise they run: a
// digest into C.
#include <cublasLt.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <mutex>

#include "tests/stub/reusing_pool.h"
#include "tests/stub/stub_blas_control.h"
#include "tests/stub/stub_blas_digest.h"
#include "tests/stub/stub_cublas_internal.h"
#include "tests/stub/stub_cuda.h"
#include "tests/stub/stub_styled_kernels.h"

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
  // The GEMM kernels' scratch memory when the handle has no user workspace big enough for it.
  alignas(256) unsigned char kernel_scratch[stubkernels::kScratchBytes];
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

// What a GEMM's kernels read when they run: A, B, C and alpha and beta in device memory.
std::uint64_t read_gemm_inputs(const void* blob, std::uint64_t h) {
  const auto& g = *static_cast<const StubBlasGemmBlob*>(blob);
  for (const void* input : {g.a, g.b, static_cast<const void*>(g.c)}) h = stubkernels::add_read(h, input);
  if (g.alpha.kind == STUBBLAS_SCALAR_DEVICE) h = stubkernels::add_read(h, g.alpha.pointer);
  if (g.beta.kind == STUBBLAS_SCALAR_DEVICE) h = stubkernels::add_read(h, g.beta.pointer);
  return h;
}

void write_gemm_output(const void* blob, std::uint64_t digest) {
  stubkernels::write_digest(static_cast<const StubBlasGemmBlob*>(blob)->c, digest);
}

// A GEMM's last kernel ran (at the call, or at a launch of a graph captured from it), outside
// reference mode.
void gemm_ran(const void* blob, std::uint64_t digest, bool replayed) {
  std::memcpy(&t_last_run.blob, blob, sizeof t_last_run.blob);
  t_last_run.digest = digest;
  t_last_run.replayed = replayed;
  t_last_run.valid = 1;
  std::lock_guard<std::mutex> guard(g_lock);
  ++(replayed ? g_counters.gemm_replays : g_counters.gemm_direct);
}

// The GEMMs' kernels: each field of the blob a parameter, as a kernel with many arguments has them.
const stubkernels::Kernels& gemm_kernels() {
  using B = StubBlasGemmBlob;
  static_assert(sizeof(B) % 8 == 0, "a blob is whole 8-byte words");
  static const stubkernels::Kernels kernels(stubkernels::Family{
      "cublas_gemm", sizeof(B),
      {STUBKERNELS_FIELD(B, handle_serial), STUBKERNELS_FIELD(B, entry), STUBKERNELS_FIELD(B, transa),
       STUBKERNELS_FIELD(B, transb), STUBKERNELS_FIELD(B, a_type), STUBKERNELS_FIELD(B, b_type),
       STUBKERNELS_FIELD(B, c_type), STUBKERNELS_FIELD(B, compute_type), STUBKERNELS_FIELD(B, algo),
       STUBKERNELS_FIELD(B, m), STUBKERNELS_FIELD(B, n), STUBKERNELS_FIELD(B, k), STUBKERNELS_FIELD(B, lda),
       STUBKERNELS_FIELD(B, ldb), STUBKERNELS_FIELD(B, ldc), STUBKERNELS_FIELD(B, stride_a),
       STUBKERNELS_FIELD(B, stride_b), STUBKERNELS_FIELD(B, stride_c), STUBKERNELS_FIELD(B, batch_count),
       STUBKERNELS_FIELD(B, a), STUBKERNELS_FIELD(B, b), STUBKERNELS_FIELD(B, c), STUBKERNELS_FIELD(B, workspace),
       STUBKERNELS_FIELD(B, workspace_size), STUBKERNELS_FIELD(B, default_pool), STUBKERNELS_FIELD(B, pointer_mode),
       STUBKERNELS_FIELD(B, math_mode), STUBKERNELS_FIELD(B, atomics_mode), STUBKERNELS_FIELD(B, sm_count_target),
       STUBKERNELS_FIELD(B, emulation_strategy), STUBKERNELS_FIELD(B, special_values_support),
       STUBKERNELS_FIELD(B, mantissa_control), STUBKERNELS_FIELD(B, max_mantissa_bit_count),
       STUBKERNELS_FIELD(B, mantissa_bit_offset), STUBKERNELS_FIELD(B, mantissa_bit_count_pointer),
       STUBKERNELS_FIELD(B, alpha), STUBKERNELS_FIELD(B, beta)},
      offsetof(B, b), offsetof(B, a), offsetof(B, c), false, read_gemm_inputs, write_gemm_output, gemm_ran});
  return kernels;
}

// `pointer` moved by `elements` of `type` (a pointer inside a tensor: the start of its next batch).
std::uintptr_t inside(const void* pointer, std::int64_t elements, cudaDataType type) {
  const std::uint32_t size = stubblas::scale_size(type);
  return reinterpret_cast<std::uintptr_t>(pointer) + static_cast<std::uintptr_t>(elements) * (size == 0 ? 1 : size);
}

cublasStatus_t gemm(cublasHandle_t handle, const Gemm& g) {
  const bool reference = stubblas_reference_calls_on() != 0;
  StubBlasGemmBlob blob;
  std::memset(&blob, 0, sizeof blob);  // padding too: the blob is hashed
  cudaStream_t stream = nullptr;
  void* scratch = nullptr;
  void* kernel_scratch = nullptr;
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
    kernel_scratch = blob.workspace_size >= stubkernels::kScratchBytes ? blob.workspace : h->kernel_scratch;
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
  stubkernels::Call call{};
  call.blob = &blob;
  const std::int64_t a_columns = g.transa == CUBLAS_OP_N ? g.k : g.m;
  call.interior[0] = inside(g.a, g.stride_a != 0 ? g.stride_a : g.lda * a_columns, g.a_type);
  call.interior[1] = inside(g.c, g.stride_c != 0 ? g.stride_c : g.ldc * g.n, g.c_type);
  for (std::uint32_t field : {offsetof(StubBlasGemmBlob, a), offsetof(StubBlasGemmBlob, b), offsetof(StubBlasGemmBlob, c)})
    call.tensor_fields[call.tensor_count++] = field;
  call.scratch = kernel_scratch;
  call.stream = reinterpret_cast<CUstream>(stream);
  call.reference = reference;
  // On the handle's capturing stream (the driver stub loaded), the GEMM is recorded, not run.
  if (gemm_kernels().launch(static_cast<StubKernelStyle>(stubblas_kernel_style()), call)) {
    std::lock_guard<std::mutex> guard(g_lock);
    ++g_counters.gemm_captured;
    if (blob.default_pool) ++g_counters.allocations_in_capture;
  }
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

// cuBLAS's typed GEMMs: the generic GEMM with the types their letter says (S float, D double, C
// complex float, Z complex double), the compute type of that precision.
#define STUB_TYPED_GEMMS(letter, index, T, data, compute)                                                       \
  cublasStatus_t CUBLASWINAPI cublas##letter##gemm_v2(cublasHandle_t handle, cublasOperation_t transa,             \
                                                     cublasOperation_t transb, int m, int n, int k, const T* alpha, \
                                                     const T* A, int lda, const T* B, int ldb, const T* beta, T* C, \
                                                     int ldc) {                                                  \
    return gemm(handle, {StubBlasGemmEntry(STUBBLAS_TYPED_GEMM + 4 * index), transa, transb, m, n, k, alpha, A,  \
                         data, lda, 0, B, data, ldb, 0, beta, C, data, ldc, 0, 1, compute, CUBLAS_GEMM_DEFAULT}); \
  }                                                                                                              \
  cublasStatus_t CUBLASWINAPI cublas##letter##gemm_v2_64(cublasHandle_t handle, cublasOperation_t transa,          \
                                                        cublasOperation_t transb, int64_t m, int64_t n, int64_t k, \
                                                        const T* alpha, const T* A, int64_t lda, const T* B,     \
                                                        int64_t ldb, const T* beta, T* C, int64_t ldc) {         \
    return gemm(handle, {StubBlasGemmEntry(STUBBLAS_TYPED_GEMM + 4 * index + 1), transa, transb, m, n, k, alpha, \
                         A, data, lda, 0, B, data, ldb, 0, beta, C, data, ldc, 0, 1, compute, CUBLAS_GEMM_DEFAULT}); \
  }                                                                                                              \
  cublasStatus_t CUBLASWINAPI cublas##letter##gemmStridedBatched(                                                \
      cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n, int k,            \
      const T* alpha, const T* A, int lda, long long int strideA, const T* B, int ldb, long long int strideB,    \
      const T* beta, T* C, int ldc, long long int strideC, int batchCount) {                                     \
    return gemm(handle, {StubBlasGemmEntry(STUBBLAS_TYPED_GEMM + 4 * index + 2), transa, transb, m, n, k, alpha, \
                         A, data, lda, strideA, B, data, ldb, strideB, beta, C, data, ldc, strideC, batchCount,   \
                         compute, CUBLAS_GEMM_DEFAULT});                                                         \
  }                                                                                                              \
  cublasStatus_t CUBLASWINAPI cublas##letter##gemmStridedBatched_64(                                             \
      cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int64_t m, int64_t n,           \
      int64_t k, const T* alpha, const T* A, int64_t lda, long long int strideA, const T* B, int64_t ldb,        \
      long long int strideB, const T* beta, T* C, int64_t ldc, long long int strideC, int64_t batchCount) {      \
    return gemm(handle, {StubBlasGemmEntry(STUBBLAS_TYPED_GEMM + 4 * index + 3), transa, transb, m, n, k, alpha, \
                         A, data, lda, strideA, B, data, ldb, strideB, beta, C, data, ldc, strideC, batchCount,   \
                         compute, CUBLAS_GEMM_DEFAULT});                                                         \
  }
STUB_TYPED_GEMMS(S, 0, float, CUDA_R_32F, CUBLAS_COMPUTE_32F)
STUB_TYPED_GEMMS(D, 1, double, CUDA_R_64F, CUBLAS_COMPUTE_64F)
STUB_TYPED_GEMMS(C, 2, cuComplex, CUDA_C_32F, CUBLAS_COMPUTE_32F)
STUB_TYPED_GEMMS(Z, 3, cuDoubleComplex, CUDA_C_64F, CUBLAS_COMPUTE_64F)
#undef STUB_TYPED_GEMMS

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
