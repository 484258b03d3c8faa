// set_stream and its table: the shim's StreamTable and SlotState protocol, with an instance of
// its own (a program may link the frontend and preload the shim; each keeps what it saw).
#include "handle_streams.h"

#include <pthread.h>

#include <cstdint>

#include "cudnn_fastpath/stream.h"
#include "table/handle_table.h"

namespace cudnn_fastpath {

namespace {

// As many live handles as the shim's table holds (table/handle_table.h). Past that, set_stream on
// the handles that found no slot is always forwarded.
HandleTable g_table;  // constant-initialised: usable before any constructor has run

// In a forked child nothing the parent cached may be trusted (its handles are unusable there).
pthread_once_t g_fork_handler_once = PTHREAD_ONCE_INIT;
void forget_everything_in_child() { g_table.reset_in_child(); }
void register_fork_handler() { pthread_atfork(nullptr, nullptr, forget_everything_in_child); }

std::uintptr_t key_of(cudaStream_t stream) noexcept {
  return reinterpret_cast<std::uintptr_t>(stream);
}

// A call that tells us which stream `handle` holds once it returns successfully, bracketed by the
// slot protocol so that the table learns it only if nothing raced with it.
template <typename RealCall>
cudnnStatus_t learn(cudnnHandle_t handle, HandleTable::Slot* slot, RealCall&& call) noexcept {
  pthread_once(&g_fork_handler_once, register_fork_handler);
  if (slot == nullptr) slot = g_table.find_or_claim(handle);
  cudaStream_t stream = nullptr;
  if (slot == nullptr) return call(&stream);  // null handle, or the table is full
  const HandleTable::Visit visit = g_table.enter(*slot, handle);
  const cudnnStatus_t status = call(&stream);
  HandleTable::leave(visit, key_of(stream), status == CUDNN_STATUS_SUCCESS);
  return status;
}

}  // namespace

cudnnStatus_t set_stream(cudnnHandle_t handle, cudaStream_t stream) noexcept {
  HandleTable::Slot* slot = g_table.find(handle);
  if (slot != nullptr && slot->state.holds(key_of(stream))) return CUDNN_STATUS_SUCCESS;
  return learn(handle, slot, [&](cudaStream_t* held) {
    *held = stream;
    return cudnnSetStream(handle, stream);
  });
}

cudnnStatus_t create_handle(cudnnHandle_t* handle) noexcept {
  const cudnnStatus_t status = cudnnCreate(handle);
  // cuDNN hands a destroyed handle's address out again: whatever its slot said is void.
  if (status == CUDNN_STATUS_SUCCESS && handle != nullptr) forget_handle(*handle);
  return status;
}

cudnnStatus_t destroy_handle(cudnnHandle_t handle) noexcept {
  // The slot becomes free for the next handle (whatever address it has).
  if (HandleTable::Slot* slot = g_table.find(handle)) g_table.release(*slot, handle);
  return cudnnDestroy(handle);
}

void forget_handle(cudnnHandle_t handle) noexcept {
  if (HandleTable::Slot* slot = g_table.find(handle)) slot->state.forget();
}

void forget_stream(cudaStream_t stream) noexcept { g_table.forget_stream(key_of(stream)); }

namespace detail {

cudnnStatus_t read_stream(cudnnHandle_t handle, cudaStream_t* stream) noexcept {
  return learn(handle, g_table.find(handle), [&](cudaStream_t* held) {
    const cudnnStatus_t status = cudnnGetStream(handle, held);
    if (status == CUDNN_STATUS_SUCCESS) *stream = *held;
    return status;
  });
}

bool known_stream(cudnnHandle_t handle, cudaStream_t* stream) noexcept {
  if (HandleTable::Slot* slot = g_table.find(handle)) {
    std::uintptr_t held = 0;
    if (slot->state.held(held)) {
      *stream = reinterpret_cast<cudaStream_t>(held);
      return true;
    }
  }
  return read_stream(handle, stream) == CUDNN_STATUS_SUCCESS;
}

}  // namespace detail

}  // namespace cudnn_fastpath
