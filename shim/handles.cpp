#include "shim/handles.h"

#include "shim/engine/replay_engine.h"
#include "shim/libraries/callers.h"
#include "shim/libraries/mode.h"
#include "shim/process/counters.h"
#include "shim/streams/handle_table.h"

namespace cudnn_fastpath::shim {

cudnnStatus_t create(const void* caller, cudnnHandle_t* handle) noexcept {
  const std::uint32_t m = current_mode();
  if (m & mode::kFollower) return leader().create(caller, handle);
  const RealSymbols& real = binding_for(Library::kCudnn, caller).real;
  if (real.cudnnCreate == nullptr) return CUDNN_STATUS_NOT_INITIALIZED;
  if (!(m & mode::kDisabled)) note_cudnn_call();
  const cudnnStatus_t status = real.cudnnCreate(handle);
  // cuDNN hands a destroyed handle's address out again; if the destroy went around the shim, the
  // address may still have a slot, and whatever it says is void.
  if (status == CUDNN_STATUS_SUCCESS && handle != nullptr && !(m & mode::kDisabled)) {
    if (HandleTable::Slot* slot = handle_table().find(*handle)) slot->state.forget();
    forget_graphs_of_handle(HandleOwner::cudnn, *handle);  // likewise any graph of a handle at this address
  }
  return status;
}

cudnnStatus_t destroy(const void* caller, cudnnHandle_t handle) noexcept {
  const std::uint32_t m = current_mode();
  if (m & mode::kFollower) return leader().destroy(caller, handle);
  const RealSymbols& real = binding_for(Library::kCudnn, caller).real;
  if (real.cudnnDestroy == nullptr) return CUDNN_STATUS_NOT_INITIALIZED;
  if (!(m & mode::kDisabled)) {
    note_cudnn_call();
    // The slot becomes free for the next handle (whatever address it has).
    if (HandleTable::Slot* slot = handle_table().find(handle)) handle_table().release(*slot, handle);
    // Its graphs go with it, before its address can be handed out again.
    forget_graphs_of_handle(HandleOwner::cudnn, handle);
  }
  return real.cudnnDestroy(handle);
}

}  // namespace cudnn_fastpath::shim
