// cudnnSetStream under the shim: the handle table at work.
//
// Each one fails open: whatever goes wrong inside the shim, the call is forwarded to the real
// function, and the table is only ever told what the real function did.
#include "shim/streams/set_stream.h"

#include <dlfcn.h>

#include <atomic>
#include <cstdint>

#include "shim/libraries/callers.h"
#include "shim/libraries/mode.h"
#include "shim/process/counters.h"
#include "shim/process/lifecycle.h"
#include "shim/process/log.h"
#include "shim/streams/handle_table.h"

namespace cudnn_fastpath::shim {

HandleTable g_table;  // constant-initialised: usable before any constructor has run

HandleTable& handle_table() noexcept { return g_table; }

namespace {

std::atomic<bool> g_warned_table_full{false};  // relaxed: only deduplicates a message
std::atomic<bool> g_warned_mismatch{false};

// In a forked child the parent's handles are unusable, and cuDNN's first answer must reach the
// program. The table learns nothing before its first claim: registered then.
void forget_in_child() { g_table.reset_in_child(); }
ForkChildReset g_fork_reset{forget_in_child};

std::uintptr_t key_of(cudaStream_t stream) noexcept { return reinterpret_cast<std::uintptr_t>(stream); }

const RealSymbols& cudnn_for(const void* caller) noexcept {
  return binding_for(Library::kCudnn, caller).real;
}

// Verify mode only: the driver's id of the stream each slot's handle was last set to. An id is
// never given to a second stream, so a new stream at a destroyed stream's address (destroyed
// where the shim could not see it: a runtime linked statically) differs from the one the slot
// learnt, though cuDNN holds the same address. Relaxed: written by the handle's forwarding call,
// read by its next would-be skip (one thread at a time on a handle, cuDNN's rule); a stale value
// only forwards a set.
std::atomic<unsigned long long> g_stream_ids[HandleTable::kCapacity];
std::atomic<bool> g_driver_loaded{false};  // relaxed: once loaded the driver stays

// Whether `stream` is capturing a graph (false without a driver). cuStreamIsCapturing is safe
// during a capture, unlike cuStreamGetId: asked of a capturing stream, the driver answers and
// invalidates the capture (seen on the H200, driver 580).
bool capturing(const RealSymbols& cuda, cudaStream_t stream) noexcept {
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  return cuda.cuStreamIsCapturing != nullptr &&
         cuda.cuStreamIsCapturing(reinterpret_cast<CUstream>(stream), &status) == CUDA_SUCCESS &&
         status != CU_STREAM_CAPTURE_STATUS_NONE;
}

// The driver's id of `stream`; false when there is none to compare: no driver (or it does not know
// the stream), the NULL stream (never destroyed), or a stream that is capturing (alive by
// definition, and spoilt by the question).
bool stream_id(const void* caller, cudaStream_t stream, unsigned long long& id) noexcept {
  if (stream == nullptr) return false;
  if (!g_driver_loaded.load(std::memory_order_relaxed)) {
    void* loaded = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
    if (loaded == nullptr) return false;
    dlclose(loaded);
    g_driver_loaded.store(true, std::memory_order_relaxed);
  }
  const RealSymbols& cuda = binding_for(Library::kCuda, caller).real;
  return cuda.cuStreamGetId != nullptr && !capturing(cuda, stream) &&
         cuda.cuStreamGetId(reinterpret_cast<CUstream>(stream), &id) == CUDA_SUCCESS;
}

void remember_stream_id(const void* caller, HandleTable::Slot& slot, cudaStream_t stream) noexcept {
  unsigned long long id = 0;
  if (!stream_id(caller, stream, id)) id = 0;
  g_stream_ids[g_table.index_of(slot)].store(id, std::memory_order_relaxed);
}

// The slot of `handle`, claimed if it has none; nullptr (and one warning) when every slot holds a
// live handle.
HandleTable::Slot* claim(cudnnHandle_t handle, std::uint32_t m) noexcept {
  g_fork_reset.register_once();
  HandleTable::Slot* slot = g_table.find_or_claim(handle);
  if (slot == nullptr && handle != nullptr) {
    if (!g_warned_table_full.exchange(true, std::memory_order_relaxed))
      log_line("all %zu slots of the handle table hold live cuDNN handles (%zu now): calls on the "
               "handles without a slot are forwarded",
               HandleTable::kCapacity, g_table.live());
    if (m & mode::kCounting) count(Counter::table_full);
  }
  return slot;
}

// The real call, bracketed by the slot protocol. `slot` may be null (not looked up yet).
__attribute__((noinline)) cudnnStatus_t forward(const void* caller, cudnnHandle_t handle,
                                                cudaStream_t stream, HandleTable::Slot* slot,
                                                std::uint32_t m) noexcept {
  const RealSymbols& real = cudnn_for(caller);
  if (real.cudnnSetStream == nullptr) return CUDNN_STATUS_NOT_INITIALIZED;
  if (slot == nullptr) slot = claim(handle, m);
  if (m & mode::kCounting) count(Counter::forwarded);
  if (slot == nullptr) return real.cudnnSetStream(handle, stream);
  const HandleTable::Visit visit = g_table.enter(*slot, handle);
  const cudnnStatus_t status = real.cudnnSetStream(handle, stream);
  HandleTable::leave(visit, key_of(stream), status == CUDNN_STATUS_SUCCESS);
  if ((m & mode::kVerify) && status == CUDNN_STATUS_SUCCESS) remember_stream_id(caller, *slot, stream);
  return status;
}

// A would-be skip that has more to do: skipping switched off, verify mode, or statistics.
__attribute__((noinline, cold)) cudnnStatus_t skip_with_checks(const void* caller, cudnnHandle_t handle,
                                                               cudaStream_t stream, HandleTable::Slot& slot,
                                                               std::uint32_t m) noexcept {
  if (!(m & mode::kSkipping)) return forward(caller, handle, stream, &slot, m);
  if (m & mode::kVerify) {
    cudaStream_t held = nullptr;
    const cudnnStatus_t status = cudnn_for(caller).cudnnGetStream(handle, &held);
    // The same address is not always the same stream: the driver's id tells (0: not known).
    unsigned long long id = 0;
    const unsigned long long learnt = g_stream_ids[g_table.index_of(slot)].load(std::memory_order_relaxed);
    const bool same_stream = learnt == 0 || capturing(binding_for(Library::kCuda, caller).real, stream) ||
                             (stream_id(caller, stream, id) && id == learnt);
    if (status != CUDNN_STATUS_SUCCESS || held != stream || !same_stream) {
      if (!g_warned_mismatch.exchange(true, std::memory_order_relaxed))
        log_line("verify: handle %p holds stream %p, not %p%s: something set it, or destroyed it, around the "
                 "shim; forwarding (further mismatches are only counted)",
                 static_cast<void*>(handle), static_cast<void*>(held), static_cast<void*>(stream),
                 held == stream ? " (a new stream at that address)" : "");
      if (m & mode::kCounting) count(Counter::verify_mismatches);
      return forward(caller, handle, stream, &slot, m);
    }
  }
  if (m & mode::kCounting) count(Counter::skipped);
  return CUDNN_STATUS_SUCCESS;
}

}  // namespace

// With statistics on, a skip counts itself in the thread's block: a few instructions here; verify
// mode and the rest are skip_with_checks().
cudnnStatus_t set_stream_checked_skip(cudnnHandle_t handle, cudaStream_t stream, const void* caller,
                                      HandleTable::Slot& slot, std::uint32_t m) noexcept {
  constexpr std::uint32_t kCountingOnly = mode::kReady | mode::kCounting | mode::kSkipping;
  constexpr std::uint32_t kRelevant = kCountingOnly | mode::kVerify | mode::kFollower | mode::kDisabled;
  if ((m & kRelevant) == kCountingOnly) {
    count(Counter::skipped);
    return CUDNN_STATUS_SUCCESS;
  }
  if (!(m & mode::kReady)) return set_stream_slow(handle, stream, caller);
  return skip_with_checks(caller, handle, stream, slot, m);
}

cudnnStatus_t set_stream_slow(cudnnHandle_t handle, cudaStream_t stream, const void* caller) noexcept {
  const std::uint32_t m = current_mode();
  if (m & mode::kFollower) return leader().set_stream(caller, handle, stream);
  if (m & mode::kDisabled) {
    const RealSymbols& real = cudnn_for(caller);
    return real.cudnnSetStream ? real.cudnnSetStream(handle, stream) : CUDNN_STATUS_NOT_INITIALIZED;
  }
  note_cudnn_call();
  HandleTable::Slot* slot = g_table.find(handle);
  if (slot != nullptr && slot->state.holds(key_of(stream)))
    return (m & mode::kPlainSkip) ? CUDNN_STATUS_SUCCESS : skip_with_checks(caller, handle, stream, *slot, m);
  return forward(caller, handle, stream, slot, m);
}

cudnnStatus_t set_stream_from(const void* caller, cudnnHandle_t handle, cudaStream_t stream) noexcept {
  return set_stream(handle, stream, caller);
}

}  // namespace cudnn_fastpath::shim
