// cuBLAS's GEMMs under the shim: a steady cublasGemmEx (or its strided-batched and 64-bit forms),
// or a typed one (cublasSgemm_v2 and its kin, the typed_gemm family), becomes one CUDA graph launch
// (the replay engine). A GEMM reads the handle's state as well as its
// arguments: the key holds both, the state as the program's setters left it (blas_records.cpp:
// workspace, pointer mode, math mode, atomics mode, SM count target, every emulation setting), and
// the arguments by the role the table of entry_points.h gives each (roles.h; alpha and beta, S, as
// the handle's pointer mode reads them: host, their bytes sized by the compute type, twice that for
// a complex C; device, the pointers). The capture points the handle at the shim's stream and puts
// back exactly the state the program had (a stream set gives cuBLAS's own pool back: the workspace
// is set again, both times). A handle without a workspace of its own is never captured: cuBLAS
// would allocate inside the graph.
#include <cublas_api.h>

#include <cstddef>
#include <cstdint>

#include "shim/families/blas.h"
#include "shim/families/table_call.h"

namespace cudnn_fastpath::shim {
namespace {

// cuBLAS's adapter (table_call.h).
struct Gemms {
  using Status = cublasStatus_t;
  static constexpr Library kLibrary = Library::kCublas;
  static constexpr Gate<Status> kGate{mode::kCublas, kDeclinedBlas, CUBLAS_STATUS_NOT_INITIALIZED};
  static constexpr int kLaunchFailed = CUBLAS_STATUS_EXECUTION_FAILED;

  using State = BlasHandleRecord;
  // The state the key needs, and a workspace of the program's own (without one, cuBLAS would
  // allocate inside the graph).
  static bool read_state(const RealSymbols& cublas, cublasHandle_t handle, std::uint32_t, State& state, Family family,
                         Counter& refusal) noexcept {
    const bool known = g_blas_objects.read(handle, kBlasHandle, [&](const std::atomic<std::uint64_t>* words, std::uint32_t) {
      state = replay::load_record<BlasHandleRecord>(words);
    });
    if (known && (state.set & BlasHandleRecord::kWorkspace) && cublas.cublasSetStream_v2 != nullptr &&
        cublas.cublasSetWorkspace_v2 != nullptr)
      return true;
    refusal = counter_of(family, Outcome::kUnknown);
    return false;
  }
  static CUstream stream(const State& state) noexcept { return reinterpret_cast<CUstream>(state.stream); }
  // Everything but the stream: the graph is launched on whatever stream the handle holds.
  static void add_state(Key& key, State state) noexcept {
    state.stream = 0;
    key.add_bytes(&state, sizeof state);
  }
  static bool device_scales(const State& state) noexcept { return state.pointer_mode == CUBLAS_POINTER_MODE_DEVICE; }
  // The handle on the shim's stream, with the program's workspace (a stream set drops it).
  static int enter(const RealSymbols& cublas, cublasHandle_t handle, const State& state, CUstream capture) noexcept {
    const cublasStatus_t status = cublas.cublasSetStream_v2(handle, reinterpret_cast<cudaStream_t>(capture));
    return status != CUBLAS_STATUS_SUCCESS ? status : restore_workspace(cublas, handle, state);
  }
  static void leave(const RealSymbols& cublas, cublasHandle_t handle, const State& state) noexcept {
    cublas.cublasSetStream_v2(handle, reinterpret_cast<cudaStream_t>(state.stream));
    restore_workspace(cublas, handle, state);
  }
  static int restore_workspace(const RealSymbols& cublas, cublasHandle_t handle, const State& state) noexcept {
    return cublas.cublasSetWorkspace_v2(handle, reinterpret_cast<void*>(state.workspace), state.workspace_size);
  }
};

using namespace roles;
CUDNN_FASTPATH_CUBLAS_GEMM_ENTRY_POINTS(CUDNN_FASTPATH_TABLE_CALL_ROLES)
CUDNN_FASTPATH_CUBLAS_TYPED_GEMM_ENTRY_POINTS(CUDNN_FASTPATH_TABLE_CALL_ROLES)
// Each entry's number in its family's keys (the two lists are two families).
enum GemmNumber : int { CUDNN_FASTPATH_CUBLAS_GEMM_ENTRY_POINTS(CUDNN_FASTPATH_TABLE_CALL_NUMBER) };
enum TypedGemmNumber : int { CUDNN_FASTPATH_CUBLAS_TYPED_GEMM_ENTRY_POINTS(CUDNN_FASTPATH_TABLE_CALL_NUMBER) };

}  // namespace

#define CUDNN_FASTPATH_DEFINE_GEMM(...) CUDNN_FASTPATH_TABLE_CALL_DEFINITION(Gemms, __VA_ARGS__)
CUDNN_FASTPATH_CUBLAS_GEMM_ENTRY_POINTS(CUDNN_FASTPATH_DEFINE_GEMM)
CUDNN_FASTPATH_CUBLAS_TYPED_GEMM_ENTRY_POINTS(CUDNN_FASTPATH_DEFINE_GEMM)
#undef CUDNN_FASTPATH_DEFINE_GEMM

}  // namespace cudnn_fastpath::shim
