// cudnnSetStream under the shim. `caller` is the return address of
// the interposed call: it decides which cuDNN the call reaches (real_symbols.h).
#pragma once

#include <cudnn.h>

#include <atomic>
#include <cstdint>

#include "shim/libraries/mode.h"
#include "shim/streams/handle_table.h"

namespace cudnn_fastpath::shim {

// Hidden: addressed directly from the fast path, not through the GOT.
extern HandleTable g_table __attribute__((visibility("hidden")));

cudnnStatus_t set_stream_slow(cudnnHandle_t handle, cudaStream_t stream, const void* caller) noexcept;

// A would-be skip that has more to do (statistics, verify mode, skipping switched off).
cudnnStatus_t set_stream_checked_skip(cudnnHandle_t handle, cudaStream_t stream, const void* caller,
                                      HandleTable::Slot& slot, std::uint32_t m) noexcept;

// The fast path: hash, one key load and one state load (both acquire: plain loads on x86), one
// mode load, compares. It makes no call (the others are tail calls), so it needs no stack frame;
// the skip is the branch laid out straight through. Relaxed mode load: the skip rests on a
// publication this thread acquired, made after the mode was set up; a feature switched by another
// thread meanwhile applies from this thread's next call.
inline cudnnStatus_t set_stream(cudnnHandle_t handle, cudaStream_t stream, const void* caller) noexcept {
  HandleTable::Slot* slot = g_table.find_at_home(handle);
  if (__builtin_expect(slot != nullptr && slot->state.holds(reinterpret_cast<std::uintptr_t>(stream)), 1)) {
    const std::uint32_t m = g_every_call.mode.load(std::memory_order_relaxed);
    if (__builtin_expect((m & mode::kPlainSkip) != 0, 1)) return CUDNN_STATUS_SUCCESS;
    return set_stream_checked_skip(handle, stream, caller, *slot, m);
  }
  return set_stream_slow(handle, stream, caller);
}

// The same, with the caller first, for other copies of the shim (dispatch.h).
cudnnStatus_t set_stream_from(const void* caller, cudnnHandle_t handle, cudaStream_t stream) noexcept;

}  // namespace cudnn_fastpath::shim
