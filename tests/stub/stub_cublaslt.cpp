// The stub libcublasLt.so.13: handles, cublasLtMatmulAlgoGetHeuristic and cublasLtMatmul (see
// stub_blas_control.h); the descriptors are in stub_cublaslt_desc.cpp.
//
// The heuristic's algos are a hash of every input, so that a cache keyed on less hands out a wrong
// one; a matmul reads everything that decides the GPU's work when it is called into a blob, and
// launches kernels that carry it (stub_styled_kernels.h, in the style stubblas_set_kernel_style
// chose), recorded into a capturing stream (the stub libcuda) or run at once. Running them writes
// a digest of the blob and of its inputs' first bytes, read then, into D.
#include <cublasLt.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <map>
#include <mutex>

#include "tests/stub/reusing_pool.h"
#include "tests/stub/stub_blas_control.h"
#include "tests/stub/stub_blas_digest.h"
#include "tests/stub/stub_cublaslt_internal.h"
#include "tests/stub/stub_cuda.h"
#include "tests/stub/stub_styled_kernels.h"

namespace {

struct LtHandle {
  bool live = false;          // under g_lock
  std::uint64_t serial = 0;
};

ReusingPool<LtHandle, 1024> g_handles;
std::mutex g_lock;  // everything below
std::map<const void*, std::uint64_t>* g_adopted = new std::map<const void*, std::uint64_t>;  // cuBLAS handles
std::atomic<std::uint64_t> g_serials{0};  // shared by cuBLASLt and cuBLAS handles: never reused
StubBlasLtCounters g_counters{};          // the descriptor counts are kept in stub_cublaslt_desc.cpp

std::atomic<int> g_kernel_style{STUB_KERNEL_STYLE_PLAIN};  // cuBLASLt's and cuBLAS's
// The matmul kernels' scratch memory when the call's workspace is too small for it.
alignas(256) unsigned char g_kernel_scratch[stubkernels::kScratchBytes];

thread_local int t_reference = 0;
thread_local StubLtMatmulRun t_last_run{};
thread_local cudaStream_t t_last_stream = nullptr;

// The handle's serial, if cuBLASLt would accept it (under g_lock): one of its own, or a cuBLAS one.
std::uint64_t serial_locked(const void* handle) {
  if (LtHandle* h = g_handles.at(handle)) return h->live ? h->serial : 0;
  const auto it = g_adopted->find(handle);
  return it == g_adopted->end() ? 0 : it->second;
}

// The descriptor's values and, when it names one, its emulation descriptor's (false: not live).
bool read_desc(cublasLtMatmulDesc_t desc, StubLtMatmulDescValues* values, StubLtEmulationValues* emulation,
               std::int32_t* has_emulation) {
  if (!stublt::read_matmul_desc(desc, values)) return false;
  std::memset(emulation, 0, sizeof *emulation);
  *has_emulation = values->emulation_descriptor != nullptr;
  return !*has_emulation || stublt::read_emulation(values->emulation_descriptor, emulation);
}

bool read_layouts(const cublasLtMatrixLayout_t (&descs)[4], StubLtLayoutValues (&layouts)[4]) {
  for (int i = 0; i < 4; ++i)
    if (!stublt::read_layout(descs[i], &layouts[i])) return false;
  return true;
}

// Everything a heuristic answer depends on: a change in any of it changes every algo.
struct HeuristicInputs {
  StubLtMatmulDescValues desc;
  StubLtEmulationValues emulation;
  std::int32_t has_emulation;
  std::int32_t requested;
  StubLtLayoutValues layouts[4];
  StubLtPreferenceValues preference;
};

// What a matmul's kernels read when they run: A, B, C and alpha and beta in device memory.
std::uint64_t read_matmul_inputs(const void* blob, std::uint64_t h) {
  const auto& m = *static_cast<const StubLtMatmulBlob*>(blob);
  for (const void* input : {m.a, m.b, m.c}) h = stubkernels::add_read(h, input);
  if (m.alpha.kind == STUBBLAS_SCALAR_DEVICE) h = stubkernels::add_read(h, m.alpha.pointer);
  if (m.beta.kind == STUBBLAS_SCALAR_DEVICE) h = stubkernels::add_read(h, m.beta.pointer);
  return h;
}

void write_matmul_output(const void* blob, std::uint64_t digest) {
  stubkernels::write_digest(static_cast<const StubLtMatmulBlob*>(blob)->d, digest);
}

// A matmul's last kernel ran (at the call, or at a launch of a graph captured from it), outside
// reference mode.
void matmul_ran(const void* blob, std::uint64_t digest, bool replayed) {
  std::memcpy(&t_last_run.blob, blob, sizeof t_last_run.blob);
  t_last_run.digest = digest;
  t_last_run.replayed = replayed;
  t_last_run.valid = 1;
  std::lock_guard<std::mutex> guard(g_lock);
  ++(replayed ? g_counters.matmul_replays : g_counters.matmul_direct);
}

// The matmul's kernels: the whole blob one parameter, as CUTLASS kernels take one Params struct
// (and report their arguments through `extra`, as cuLaunchKernel launches do).
const stubkernels::Kernels& matmul_kernels() {
  using B = StubLtMatmulBlob;
  static_assert(sizeof(B) % 8 == 0, "a blob is whole 8-byte words");
  static const stubkernels::Kernels kernels(stubkernels::Family{
      "cublasLt_matmul", sizeof(B), {{0, static_cast<std::uint32_t>(sizeof(B))}}, offsetof(B, b), offsetof(B, a),
      offsetof(B, d), true, read_matmul_inputs, write_matmul_output, matmul_ran});
  return kernels;
}

// A pointer inside a tensor: the start of its next batch (or of the next matrix after it).
std::uintptr_t next_batch(const void* pointer, const StubLtLayoutValues& layout) {
  const std::uint32_t size = stubblas::scale_size(static_cast<int>(layout.type));
  const std::int64_t elements = layout.strided_batch_offset != 0 ? layout.strided_batch_offset
                                                                 : layout.ld * static_cast<std::int64_t>(layout.cols);
  return reinterpret_cast<std::uintptr_t>(pointer) + static_cast<std::uintptr_t>(elements) * (size == 0 ? 1 : size);
}

// How cuBLASLt reads alpha and beta in each pointer mode.
cublasStatus_t read_scalars(std::int32_t mode, std::uint32_t size, const void* alpha, const void* beta,
                            StubLtMatmulBlob* blob) {
  if (alpha == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  if (mode != CUBLASLT_POINTER_MODE_ALPHA_DEVICE_VECTOR_BETA_ZERO && beta == nullptr)
    return CUBLAS_STATUS_INVALID_VALUE;
  switch (mode) {
    case CUBLASLT_POINTER_MODE_HOST:
      blob->alpha = stubblas::host_scalar(alpha, size);
      blob->beta = stubblas::host_scalar(beta, size);
      return CUBLAS_STATUS_SUCCESS;
    case CUBLASLT_POINTER_MODE_DEVICE:
    case CUBLASLT_POINTER_MODE_DEVICE_VECTOR:
      blob->alpha = stubblas::device_scalar(alpha, size);
      blob->beta = stubblas::device_scalar(beta, size);
      return CUBLAS_STATUS_SUCCESS;
    case CUBLASLT_POINTER_MODE_ALPHA_DEVICE_VECTOR_BETA_ZERO:
      blob->alpha = stubblas::device_scalar(alpha, size);
      blob->beta = stubblas::unread_scalar();
      return CUBLAS_STATUS_SUCCESS;
    case CUBLASLT_POINTER_MODE_ALPHA_DEVICE_VECTOR_BETA_HOST:
      blob->alpha = stubblas::device_scalar(alpha, size);
      blob->beta = stubblas::host_scalar(beta, size);
      return CUBLAS_STATUS_SUCCESS;
    default:
      return CUBLAS_STATUS_INVALID_VALUE;
  }
}

}  // namespace

extern "C" {

cublasStatus_t CUBLASWINAPI cublasLtCreate(cublasLtHandle_t* lightHandle) {
  if (lightHandle == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  LtHandle* h = g_handles.acquire();
  if (h == nullptr) return CUBLAS_STATUS_ALLOC_FAILED;
  std::lock_guard<std::mutex> guard(g_lock);
  h->live = true;
  h->serial = ++g_serials;
  ++g_counters.handles_created;
  *lightHandle = reinterpret_cast<cublasLtHandle_t>(h);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t CUBLASWINAPI cublasLtDestroy(cublasLtHandle_t lightHandle) {
  LtHandle* h = g_handles.at(lightHandle);
  {
    std::lock_guard<std::mutex> guard(g_lock);
    if (h == nullptr || !h->live) return CUBLAS_STATUS_NOT_INITIALIZED;
    h->live = false;
    ++g_counters.handles_destroyed;
  }
  g_handles.release(h);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t CUBLASWINAPI cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t lightHandle,
                                                           cublasLtMatmulDesc_t operationDesc,
                                                           cublasLtMatrixLayout_t Adesc,
                                                           cublasLtMatrixLayout_t Bdesc,
                                                           cublasLtMatrixLayout_t Cdesc,
                                                           cublasLtMatrixLayout_t Ddesc,
                                                           cublasLtMatmulPreference_t preference,
                                                           int requestedAlgoCount,
                                                           cublasLtMatmulHeuristicResult_t heuristicResultsArray[],
                                                           int* returnAlgoCount) {
  {
    std::lock_guard<std::mutex> guard(g_lock);
    if (!t_reference) ++g_counters.heuristic_calls;
    if (serial_locked(lightHandle) == 0) return CUBLAS_STATUS_NOT_INITIALIZED;
  }
  if (requestedAlgoCount <= 0 || heuristicResultsArray == nullptr || returnAlgoCount == nullptr)
    return CUBLAS_STATUS_INVALID_VALUE;
  HeuristicInputs in;
  std::memset(&in, 0, sizeof in);  // padding too: the whole struct is hashed
  in.requested = requestedAlgoCount;
  if (!read_desc(operationDesc, &in.desc, &in.emulation, &in.has_emulation) ||
      !read_layouts({Adesc, Bdesc, Cdesc, Ddesc}, in.layouts) ||
      !stublt::read_preference(preference, &in.preference))
    return CUBLAS_STATUS_INVALID_VALUE;
  const std::uint64_t inputs = stubblas::fnv(&in, sizeof in);
  const int count = requestedAlgoCount < 3 ? requestedAlgoCount : 3;
  for (int i = 0; i < count; ++i) {
    cublasLtMatmulHeuristicResult_t& r = heuristicResultsArray[i];
    std::memset(&r, 0, sizeof r);
    const std::uint64_t h = stubblas::mix(inputs ^ stubblas::mix(static_cast<std::uint64_t>(i) + 1));
    for (int j = 0; j < 8; ++j) r.algo.data[j] = stubblas::mix(h + static_cast<std::uint64_t>(j));
    const std::uint64_t limit = in.preference.max_workspace_bytes;  // never more than allowed
    r.workspaceSize = limit == 0 ? 0 : stubblas::mix(h ^ 0x57u) % (limit + 1);
    r.state = CUBLAS_STATUS_SUCCESS;
    r.wavesCount = static_cast<float>(stubblas::mix(h ^ 0xA5u) >> 40) / static_cast<float>(1u << 24) * 4.0f;
  }
  *returnAlgoCount = count;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t CUBLASWINAPI cublasLtMatmul(cublasLtHandle_t lightHandle, cublasLtMatmulDesc_t computeDesc,
                                           const void* alpha, const void* A, cublasLtMatrixLayout_t Adesc,
                                           const void* B, cublasLtMatrixLayout_t Bdesc, const void* beta,
                                           const void* C, cublasLtMatrixLayout_t Cdesc, void* D,
                                           cublasLtMatrixLayout_t Ddesc, const cublasLtMatmulAlgo_t* algo,
                                           void* workspace, size_t workspaceSizeInBytes, cudaStream_t stream) {
  // The blob: zeroed first (padding included), then filled with what the GPU's work depends on.
  StubLtMatmulBlob blob;
  std::memset(&blob, 0, sizeof blob);
  {
    std::lock_guard<std::mutex> guard(g_lock);
    if (!t_reference) ++g_counters.matmul_calls;
    blob.handle_serial = serial_locked(lightHandle);
  }
  if (blob.handle_serial == 0) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (A == nullptr || B == nullptr || D == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  if (!read_desc(computeDesc, &blob.desc, &blob.emulation, &blob.has_emulation) ||
      !read_layouts({Adesc, Bdesc, Cdesc, Ddesc}, blob.layouts))
    return CUBLAS_STATUS_INVALID_VALUE;
  const std::uint32_t size = stubblas::scale_size(blob.desc.scale_type);
  if (size == 0) return CUBLAS_STATUS_NOT_SUPPORTED;
  const cublasStatus_t scalars = read_scalars(blob.desc.pointer_mode, size, alpha, beta, &blob);
  if (scalars != CUBLAS_STATUS_SUCCESS) return scalars;
  blob.algo_null = algo == nullptr;
  if (algo != nullptr) blob.algo = *algo;
  blob.workspace = workspace;
  blob.workspace_size = workspaceSizeInBytes;
  blob.a = A;
  blob.b = B;
  blob.c = C;
  blob.d = D;
  if (!t_reference) t_last_stream = stream;
  stubkernels::Call call{};
  call.blob = &blob;
  call.interior[0] = next_batch(A, blob.layouts[0]);
  call.interior[1] = next_batch(D, blob.layouts[3]);
  for (std::uint32_t field : {offsetof(StubLtMatmulBlob, a), offsetof(StubLtMatmulBlob, b),
                              offsetof(StubLtMatmulBlob, c), offsetof(StubLtMatmulBlob, d)})
    if (*reinterpret_cast<const void* const*>(reinterpret_cast<const unsigned char*>(&blob) + field) != nullptr)
      call.tensor_fields[call.tensor_count++] = field;
  call.scratch = workspace != nullptr && workspaceSizeInBytes >= stubkernels::kScratchBytes ? workspace : g_kernel_scratch;
  call.stream = reinterpret_cast<CUstream>(stream);
  call.reference = t_reference != 0;
  // On a capturing stream (the driver stub loaded), the matmul is recorded, not run.
  if (matmul_kernels().launch(static_cast<StubKernelStyle>(g_kernel_style.load()), call)) {
    std::lock_guard<std::mutex> guard(g_lock);
    ++g_counters.matmul_captured;
  }
  return CUBLAS_STATUS_SUCCESS;
}

StubBlasLtCounters stubblaslt_counters(void) {
  StubBlasLtCounters c;
  {
    std::lock_guard<std::mutex> guard(g_lock);
    c = g_counters;
    c.live_handles = c.handles_created - c.handles_destroyed;
  }
  stublt::descriptor_counts(&c);
  return c;
}

StubLtMatmulRun stubblaslt_thread_last_matmul(void) { return t_last_run; }

cudaStream_t stubblaslt_thread_last_matmul_stream(void) { return t_last_stream; }

std::uint64_t stubblaslt_handle_serial(cublasLtHandle_t handle) {
  std::lock_guard<std::mutex> guard(g_lock);
  return serial_locked(handle);
}

int stubblas_reference_calls(int on) {
  const int old = t_reference;
  t_reference = on != 0;
  return old;
}

int stubblas_reference_calls_on(void) { return t_reference; }

int stubblas_set_kernel_style(int style) {
  if (style < 0 || style >= STUB_KERNEL_STYLES) return -1;
  return g_kernel_style.exchange(style);
}

int stubblas_kernel_style(void) { return g_kernel_style.load(); }

std::uint64_t stubblaslt_adopt_handle(const void* handle) {
  std::lock_guard<std::mutex> guard(g_lock);
  const std::uint64_t serial = ++g_serials;
  (*g_adopted)[handle] = serial;
  return serial;
}

void stubblaslt_forget_handle(const void* handle) {
  std::lock_guard<std::mutex> guard(g_lock);
  g_adopted->erase(handle);
}

}  // extern "C"
