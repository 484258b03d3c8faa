#include "shim/streams/handle_stream.h"

#include "shim/libraries/mode.h"
#include "shim/streams/handle_table.h"

namespace cudnn_fastpath::shim {

bool handle_stream(const RealSymbols& cudnn, cudnnHandle_t handle, std::uint32_t m, cudaStream_t& stream) noexcept {
  if ((m & mode::kSkipping) && !(m & mode::kVerify))
    if (HandleTable::Slot* slot = handle_table().find(handle)) {
      std::uintptr_t held = 0;
      if (slot->state.held(held)) {
        stream = reinterpret_cast<cudaStream_t>(held);
        return true;
      }
    }
  return cudnn.cudnnGetStream != nullptr && cudnn.cudnnGetStream(handle, &stream) == CUDNN_STATUS_SUCCESS;
}

int point_handle_at(const RealSymbols& cudnn, cudnnHandle_t handle, CUstream capture) noexcept {
  if (cudnn.cudnnSetStream == nullptr) return CUDNN_STATUS_NOT_INITIALIZED;
  return cudnn.cudnnSetStream(handle, reinterpret_cast<cudaStream_t>(capture));
}

void point_handle_back(const RealSymbols& cudnn, cudnnHandle_t handle, cudaStream_t program) noexcept {
  // cuDNN holding the shim's stream: whatever the table says of the handle is void.
  if (cudnn.cudnnSetStream(handle, program) != CUDNN_STATUS_SUCCESS)
    if (HandleTable::Slot* slot = handle_table().find(handle)) slot->state.forget();
}

}  // namespace cudnn_fastpath::shim
