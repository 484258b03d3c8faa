// cuDNN's legacy ops under the shim: a steady call becomes one CUDA graph launch (the replay
// engine, replay_engine.h), its key written from the role of each argument that the table of
// entry_points.h names (CUDNN_FASTPATH_LEGACY_OP_ENTRY_POINTS; the roles: roles.h). A descriptor
// enters the key as the record of what the program set it to (legacy_records.h), never as its
// address; one the shim did not see set makes the call run directly. The call runs on the handle's
// stream: the capture points the handle at the shim's stream and back.
#include <cudnn.h>

#include <cstddef>
#include <cstdint>

#include "shim/families/legacy.h"
#include "shim/families/table_call.h"
#include "shim/streams/handle_stream.h"

namespace cudnn_fastpath::shim {
namespace {

// The legacy ops' adapter (table_call.h).
struct LegacyOps {
  using Status = cudnnStatus_t;
  static constexpr Library kLibrary = Library::kCudnn;
  static constexpr Gate<Status> kGate{mode::kLegacy, kDeclinedLegacy, CUDNN_STATUS_NOT_INITIALIZED};
  static constexpr int kLaunchFailed = CUDNN_STATUS_EXECUTION_FAILED_CUDA_DRIVER;

  struct State {
    cudaStream_t stream;  // the program's, which the handle holds
  };
  static bool read_state(const RealSymbols& cudnn, cudnnHandle_t handle, std::uint32_t m, State& state, Family,
                         Counter&) noexcept {
    return handle_stream(cudnn, handle, m, state.stream) && cudnn.cudnnSetStream != nullptr;
  }
  static CUstream stream(const State& state) noexcept { return reinterpret_cast<CUstream>(state.stream); }
  static void add_state(Key&, const State&) noexcept {}  // a legacy op reads nothing of its handle but the stream
  static bool device_scales(const State&) noexcept { return false; }
  static int enter(const RealSymbols& cudnn, cudnnHandle_t handle, const State&, CUstream capture) noexcept {
    return point_handle_at(cudnn, handle, capture);
  }
  static void leave(const RealSymbols& cudnn, cudnnHandle_t handle, const State& state) noexcept {
    point_handle_back(cudnn, handle, state.stream);
  }
};

using namespace roles;
CUDNN_FASTPATH_LEGACY_OP_ENTRY_POINTS(CUDNN_FASTPATH_TABLE_CALL_ROLES)
enum OpNumber : int { CUDNN_FASTPATH_LEGACY_OP_ENTRY_POINTS(CUDNN_FASTPATH_TABLE_CALL_NUMBER) };

}  // namespace

#define CUDNN_FASTPATH_DEFINE_LEGACY_OP(...) CUDNN_FASTPATH_TABLE_CALL_DEFINITION(LegacyOps, __VA_ARGS__)
CUDNN_FASTPATH_LEGACY_OP_ENTRY_POINTS(CUDNN_FASTPATH_DEFINE_LEGACY_OP)
#undef CUDNN_FASTPATH_DEFINE_LEGACY_OP

}  // namespace cudnn_fastpath::shim
