// cuBLAS's GEMMs under the shim: a steady cublasGemmEx (or its strided-batched and 64-bit forms)
// becomes one CUDA graph launch (the replay engine). A GEMM reads the handle's state as well as its
// arguments: the key holds both, the state as the program's setters left it (blas_records.cpp:
// workspace, pointer mode, math mode, atomics mode, SM count target, every emulation setting), and
// the arguments by the role the table of entry_points.h gives each (legacy_replay.cpp's letters;
// alpha and beta, S, as the handle's pointer mode reads them: host, their bytes sized by the
// compute type, twice that for a complex C; device, the pointers). The capture points the handle at
// the shim's stream and puts back exactly the state the program had (a stream set gives cuBLAS's
// own pool back: the workspace is set again, both times). A handle without a workspace of its own
// is never captured: cuBLAS would allocate inside the graph.
#include <cublas_api.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <tuple>
#include <type_traits>

#include "shim/engine/replay_engine.h"
#include "shim/families/blas.h"
#include "shim/families/blas_keys.h"
#include "shim/libraries/mode.h"
#include "shim/process/config.h"

namespace cudnn_fastpath::shim {
namespace {

enum class Role : std::uint8_t { H, V, S, D, CT, TC };
namespace roles {
constexpr Role H = Role::H, V = Role::V, S = Role::S, D = Role::D, CT = Role::CT, TC = Role::TC;
}  // namespace roles

template <typename T>
constexpr bool fits(Role role) {
  using U = std::remove_cv_t<T>;
  switch (role) {
    case Role::H: return std::is_same_v<U, cublasHandle_t>;
    case Role::V: return std::is_arithmetic_v<U> || std::is_enum_v<U>;
    case Role::S:
    case Role::D: return std::is_pointer_v<U>;
    case Role::CT: return std::is_same_v<U, cublasComputeType_t>;
    case Role::TC: return std::is_same_v<U, cudaDataType>;
  }
  return false;
}

// The bytes of one scaling factor of a GEMM that computes in `compute`.
std::uint32_t compute_scale_bytes(std::int64_t compute) noexcept {
  switch (compute) {
    case CUBLAS_COMPUTE_16F:
    case CUBLAS_COMPUTE_16F_PEDANTIC: return 2;
    case CUBLAS_COMPUTE_32F:
    case CUBLAS_COMPUTE_32F_PEDANTIC:
    case CUBLAS_COMPUTE_32F_FAST_16F:
    case CUBLAS_COMPUTE_32F_FAST_16BF:
    case CUBLAS_COMPUTE_32F_FAST_TF32:
    case CUBLAS_COMPUTE_32F_EMULATED_16BFX9:
    case CUBLAS_COMPUTE_32I:
    case CUBLAS_COMPUTE_32I_PEDANTIC: return 4;
    case CUBLAS_COMPUTE_64F:
    case CUBLAS_COMPUTE_64F_PEDANTIC:
    case CUBLAS_COMPUTE_64F_EMULATED_FIXEDPOINT: return 8;
    default: return 0;
  }
}

bool complex_type(std::int64_t type) noexcept {
  switch (type) {
    case CUDA_C_16F:
    case CUDA_C_16BF:
    case CUDA_C_32F:
    case CUDA_C_64F:
    case CUDA_C_8I:
    case CUDA_C_32I: return true;
    default: return false;
  }
}

// Writes a GEMM's key argument by argument; the scaling factors last, once the compute type and
// C's type are known.
struct KeyWriter {
  Key& key;
  bool device_scales;
  std::uint32_t scale_words[2];
  const void* scales[2];
  int scale_count = 0;
  std::int64_t compute = -1, c_type = -1;

  template <typename T>
  void add(Role role, T value) noexcept {
    switch (role) {
      case Role::H: return;  // the key's first word already
      case Role::S:
        if constexpr (std::is_pointer_v<T>) {
          if (device_scales) return key.add_pointer(value);
          if (scale_count == 2 || value == nullptr) return key.refuse();
          scale_words[scale_count] = key.length;
          scales[scale_count++] = value;
          key.add(0), key.add(0);  // up to 16 bytes (a complex double), filled in by finish()
        }
        return;
      case Role::D:
        if constexpr (std::is_pointer_v<T>) key.add_pointer(value);
        return;
      default:
        if constexpr (std::is_arithmetic_v<T> || std::is_enum_v<T>) {
          if (role == Role::CT) compute = static_cast<std::int64_t>(value);
          if (role == Role::TC) c_type = static_cast<std::int64_t>(value);
          key.add_bytes(&value, sizeof value);
        }
        return;
    }
  }

  void finish() noexcept {
    const std::uint32_t size = compute_scale_bytes(compute) * (complex_type(c_type) ? 2 : 1);
    if (!device_scales && size == 0) return key.refuse();
    for (int i = 0; i < scale_count && key.complete; ++i) {
      std::uint64_t words[2] = {0, 0};
      std::memcpy(words, scales[i], size);
      key.words[scale_words[i]] = words[0];
      key.words[scale_words[i] + 1] = words[1];
    }
  }
};

// One GEMM, as the engine runs it.
template <auto kReal, typename... Args>
struct Gemm {
  const RealSymbols& cublas;
  std::tuple<Args...> arguments;
  cublasHandle_t handle;
  BlasHandleRecord state;

  static int run(void* context, CUstream) {
    auto& x = *static_cast<Gemm*>(context);
    return std::apply(x.cublas.*kReal, x.arguments);
  }
  // The handle on the shim's stream, with the program's workspace (a stream set drops it).
  static int enter(void* context, CUstream capture) {
    auto& x = *static_cast<Gemm*>(context);
    const cublasStatus_t status = x.cublas.cublasSetStream_v2(x.handle, reinterpret_cast<cudaStream_t>(capture));
    return status != CUBLAS_STATUS_SUCCESS ? status : x.restore_workspace();
  }
  static void leave(void* context) {
    auto& x = *static_cast<Gemm*>(context);
    x.cublas.cublasSetStream_v2(x.handle, reinterpret_cast<cudaStream_t>(x.state.stream));
    x.restore_workspace();
  }
  int restore_workspace() {
    return cublas.cublasSetWorkspace_v2(handle, reinterpret_cast<void*>(state.workspace), state.workspace_size);
  }
};

template <auto kReal, const Role* kRoles, std::size_t kOffset, auto kLeader, typename... Args, std::size_t... I>
cublasStatus_t gemm(int op, std::index_sequence<I...>, const void* caller, Args... args) noexcept {
  static_assert((fits<Args>(kRoles[I]) && ...), "a role of the table does not fit its argument's type");
  static_assert(kRoles[0] == Role::H, "the handle comes first");
  const std::uint32_t m = current_mode();
  const Binding& cublas = binding_for(Library::kCublas, caller);
  const auto real = cublas.real.*kReal;
  if (__builtin_expect(m & mode::kFollower, 0)) {
    const DispatchV1& lead = leader();
    if (leads(lead, kOffset)) return (lead.*kLeader)(caller, args...);
  }
  if (real == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (!(m & mode::kCublas) || (m & mode::kFollower) || !config().graphs || !replayable_caller(caller)) {
    const LibraryCall inside;
    return real(args...);
  }
  note_cudnn_call();
  const cublasHandle_t handle = std::get<0>(std::forward_as_tuple(args...));
  BlasHandleRecord state{};
  const bool known = g_blas_objects.read(handle, kBlasHandle, [&](const std::atomic<std::uint64_t>* words,
                                                                  std::uint32_t) {
    state = replay::load_record<BlasHandleRecord>(words);
  });
  Gemm<kReal, Args...> x{cublas.real, {args...}, handle, state};
  const ReplayCall call{Family::gemm, caller, reinterpret_cast<CUstream>(state.stream), CUBLAS_STATUS_EXECUTION_FAILED,
                        &x,            x.run,  x.enter,                                  x.leave,
                        nullptr,       nullptr};
  // The state the key needs, and a workspace of the program's own (without one, cuBLAS would
  // allocate inside the graph).
  if (!known || !(state.set & BlasHandleRecord::kWorkspace) || cublas.real.cublasSetStream_v2 == nullptr ||
      cublas.real.cublasSetWorkspace_v2 == nullptr)
    return static_cast<cublasStatus_t>(run_direct(call, m, counter_of(Family::gemm, Outcome::kUnknown)));
  Key key;
  key.add_pointer(handle);
  key.add(static_cast<std::uint64_t>(op));
  state.stream = 0;  // not the key's: the graph is launched on whatever stream the handle holds
  key.add_bytes(&state, sizeof state);
  KeyWriter writer{key, state.pointer_mode == CUBLAS_POINTER_MODE_DEVICE, {}, {}};
  (writer.add(kRoles[I], args), ...);
  writer.finish();
  if (!key.complete) return static_cast<cublasStatus_t>(run_direct(call, m, counter_of(Family::gemm, Outcome::kUnknown)));
  return static_cast<cublasStatus_t>(replay(key, call, m));
}

#define CUDNN_FASTPATH_GEMM_ROLES(exported, library, result, function, parameters, arguments, gemm_roles) \
  constexpr Role kRolesOf_##exported[] = {CUDNN_FASTPATH_EXPAND gemm_roles};
using namespace roles;
CUDNN_FASTPATH_CUBLAS_GEMM_ENTRY_POINTS(CUDNN_FASTPATH_GEMM_ROLES)
#undef CUDNN_FASTPATH_GEMM_ROLES

enum GemmNumber : int {
#define CUDNN_FASTPATH_GEMM_NUMBER(exported, ...) kGemm_##exported,
  CUDNN_FASTPATH_CUBLAS_GEMM_ENTRY_POINTS(CUDNN_FASTPATH_GEMM_NUMBER)
#undef CUDNN_FASTPATH_GEMM_NUMBER
};

}  // namespace

#define CUDNN_FASTPATH_DEFINE_GEMM(exported, library, result, function, parameters, arguments, gemm_roles)          \
  result function(const void* caller, CUDNN_FASTPATH_EXPAND parameters) noexcept {                                  \
    return gemm<&RealSymbols::exported, kRolesOf_##exported, offsetof(DispatchV1, function), &DispatchV1::function>( \
        kGemm_##exported, std::make_index_sequence<sizeof kRolesOf_##exported / sizeof(Role)>{}, caller,            \
        CUDNN_FASTPATH_EXPAND arguments);                                                                            \
  }
CUDNN_FASTPATH_CUBLAS_GEMM_ENTRY_POINTS(CUDNN_FASTPATH_DEFINE_GEMM)
#undef CUDNN_FASTPATH_DEFINE_GEMM

}  // namespace cudnn_fastpath::shim
