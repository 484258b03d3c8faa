// The interposed functions: cudnnSetStream, cudnnCreate, cudnnDestroy and cudaStreamDestroy.
//
// Each one fails open: whatever goes wrong inside the shim, the call is forwarded to the real
// function, and the table is only ever told what the real function did. The shim is built without
// exceptions, so nothing can unwind out of these into the caller.
#include <cudnn.h>
#include <pthread.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <cstdint>

#include "shim/config.h"
#include "shim/handle_table.h"
#include "shim/log.h"
#include "shim/real_symbols.h"
#include "shim/report.h"
#include "shim/stats.h"

namespace cudnn_fastpath::shim {
namespace {

HandleTable g_table;  // constant-initialised: usable before any constructor has run

// Set once, in initialise(). Relaxed everywhere: a skipping thread reads them after the acquire
// load in SlotState::holds() that saw a stream published after initialise(), and a forwarding
// thread after pthread_once; cudaStreamDestroy may read them before any cuDNN call, and then
// false (nothing to count, nothing cached) is the right answer.
std::atomic<bool> g_skip_needs_work{false};  // verify mode or statistics: a skip does more
std::atomic<bool> g_counting{false};         // statistics wanted
std::atomic<std::uint64_t> g_clock_cost_ns{0};  // two back-to-back clock reads, taken off samples

bool counting() noexcept { return g_counting.load(std::memory_order_relaxed); }

// In statistics mode two consecutive would-be skips in every kSamplePeriod per thread are forwarded
// on purpose, and the second one is timed. The first brings cuDNN's code and data back into the
// caches, so the second costs what a same-stream call costs in a program without the shim, where
// each op's call follows the previous op's: that is what a skip saves. (A call timed right after
// a thousand skips measured a cold cuDNN instead: about 12x the warm cost on an H200.) Off by
// default, so that without statistics the counts of real calls are exact.
constexpr std::uint64_t kSamplePeriod = 1024;
constexpr std::uint64_t kSampleWarmUp = 16;  // forwarded, not timed
constexpr std::uint64_t kSampleTimed = 17;   // forwarded and timed
thread_local std::uint64_t t_would_skip = 0;

pthread_once_t g_init_once = PTHREAD_ONCE_INIT;
std::atomic<bool> g_warned_table_full{false};
std::atomic<bool> g_warned_mismatch{false};

std::uint64_t now_ns() noexcept {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<std::uint64_t>(t.tv_sec) * 1000000000u + static_cast<std::uint64_t>(t.tv_nsec);
}

// The cheapest of a few back-to-back clock reads: what a timed sample's own timing adds.
std::uint64_t clock_cost_ns() noexcept {
  std::uint64_t cheapest = ~std::uint64_t{0};
  for (int i = 0; i < 16; ++i) {
    const std::uint64_t start = now_ns();
    cheapest = std::min(cheapest, now_ns() - start);
  }
  return cheapest;
}

void forget_everything_in_child() {
  g_table.reset_all_states();
  reset_counters_in_child();
}

void initialise() {
  const Config& cfg = config();
  g_counting.store(cfg.wants_report(), std::memory_order_relaxed);
  g_skip_needs_work.store(cfg.verify || cfg.wants_report(), std::memory_order_relaxed);
  if (cfg.wants_report()) g_clock_cost_ns.store(clock_cost_ns(), std::memory_order_relaxed);
  pthread_atfork(nullptr, nullptr, forget_everything_in_child);
  if (counting()) arm_report();
  if (cfg.verbose)
    log_line("loaded (disable=%d verify=%d stats=%d%s%s)", cfg.disable, cfg.verify, cfg.stats,
             cfg.stats_file[0] ? " stats_file=" : "", cfg.stats_file);
}

// Everything a forwarding cuDNN call needs. The table of real symbols is returned whether or not
// cuDNN was found; callers check the pointer they need.
const RealSymbols& ready_for_cudnn() noexcept {
  pthread_once(&g_init_once, initialise);
  return real_symbols(Library::kCudnn);
}

bool passes_through(Library library) noexcept {
  return config().disable || resolution(library).found_by == FoundBy::kOtherCopy;
}

// The real call, bracketed by the slot protocol. `slot` may be null (not looked up yet).
__attribute__((noinline)) cudnnStatus_t forward_set_stream(cudnnHandle_t handle,
                                                            cudaStream_t stream,
                                                            HandleTable::Slot* slot) noexcept {
  const RealSymbols& real = ready_for_cudnn();
  if (real.cudnnSetStream == nullptr) return CUDNN_STATUS_NOT_INITIALIZED;
  if (passes_through(Library::kCudnn)) return real.cudnnSetStream(handle, stream);

  if (slot == nullptr) slot = g_table.find_or_claim(handle);
  if (slot == nullptr) {
    if (handle != nullptr) {
      if (!g_warned_table_full.exchange(true, std::memory_order_relaxed))
        log_line("more than %zu cuDNN handles: calls on the handles past that are forwarded",
                 HandleTable::kCapacity);
      if (counting()) count(Counter::kTableFull);
    }
    if (counting()) count(Counter::kForwarded);
    return real.cudnnSetStream(handle, stream);
  }

  const SlotState::Ticket ticket = slot->state.enter();
  const cudnnStatus_t status = real.cudnnSetStream(handle, stream);
  slot->state.leave(ticket, reinterpret_cast<std::uintptr_t>(stream), status == CUDNN_STATUS_SUCCESS);
  if (counting()) count(Counter::kForwarded);
  return status;
}

// A skip in verify or statistics mode. Out of line, so that the plain skip needs no stack frame.
__attribute__((noinline, cold)) cudnnStatus_t skip_with_checks(cudnnHandle_t handle, cudaStream_t stream,
                               HandleTable::Slot& slot) noexcept {
  const Config& cfg = config();
  if (cfg.verify) {
    const RealSymbols& real = real_symbols(Library::kCudnn);
    cudaStream_t held = nullptr;
    const cudnnStatus_t status = real.cudnnGetStream(handle, &held);
    if (status != CUDNN_STATUS_SUCCESS || held != stream) {
      if (!g_warned_mismatch.exchange(true, std::memory_order_relaxed))
        log_line("verify: handle %p holds stream %p, not %p: something set it around the shim; "
                 "forwarding (further mismatches are only counted)",
                 static_cast<void*>(handle), static_cast<void*>(held), static_cast<void*>(stream));
      if (counting()) count(Counter::kVerifyMismatches);
      return forward_set_stream(handle, stream, &slot);
    }
  }
  if (counting()) {
    const std::uint64_t phase = ++t_would_skip % kSamplePeriod;
    if (phase == kSampleWarmUp || phase == kSampleTimed) {
      const std::uint64_t start = now_ns();
      const cudnnStatus_t status = forward_set_stream(handle, stream, &slot);
      const std::uint64_t elapsed = now_ns() - start;
      count(Counter::kSampled);
      if (phase == kSampleTimed && status == CUDNN_STATUS_SUCCESS) {
        const std::uint64_t clock_cost = g_clock_cost_ns.load(std::memory_order_relaxed);
        count(Counter::kSampleNanoseconds, elapsed > clock_cost ? elapsed - clock_cost : 0);
        count(Counter::kSamplesTimed);
      }
      return status;
    }
    count(Counter::kSkipped);
  }
  return CUDNN_STATUS_SUCCESS;
}

// Everything but a skip at the handle's home slot: the handle lives further along its probe
// chain, or it does not hold the stream.
__attribute__((noinline)) cudnnStatus_t set_stream_slow(cudnnHandle_t handle, cudaStream_t stream) noexcept {
  HandleTable::Slot* slot = g_table.find(handle);
  if (slot != nullptr && slot->state.holds(reinterpret_cast<std::uintptr_t>(stream)))
    return g_skip_needs_work.load(std::memory_order_relaxed) ? skip_with_checks(handle, stream, *slot)
                                                              : CUDNN_STATUS_SUCCESS;
  return forward_set_stream(handle, stream, slot);
}

// The fast path: hash, one key load, one acquire load of the state, compares. It makes no call
// (the others are tail calls), so it needs no stack frame.
cudnnStatus_t set_stream(cudnnHandle_t handle, cudaStream_t stream) noexcept {
  HandleTable::Slot* slot = g_table.find_at_home(handle);
  if (slot != nullptr && slot->state.holds(reinterpret_cast<std::uintptr_t>(stream)))
    return g_skip_needs_work.load(std::memory_order_relaxed) ? skip_with_checks(handle, stream, *slot)
                                                              : CUDNN_STATUS_SUCCESS;
  return set_stream_slow(handle, stream);
}

cudnnStatus_t create(cudnnHandle_t* handle) noexcept {
  const RealSymbols& real = ready_for_cudnn();
  if (real.cudnnCreate == nullptr) return CUDNN_STATUS_NOT_INITIALIZED;
  const cudnnStatus_t status = real.cudnnCreate(handle);
  // cuDNN hands a destroyed handle's address out again: whatever that slot said is void.
  if (status == CUDNN_STATUS_SUCCESS && handle != nullptr && !passes_through(Library::kCudnn))
    if (HandleTable::Slot* slot = g_table.find(*handle)) slot->state.forget();
  return status;
}

cudnnStatus_t destroy(cudnnHandle_t handle) noexcept {
  const RealSymbols& real = ready_for_cudnn();
  if (real.cudnnDestroy == nullptr) return CUDNN_STATUS_NOT_INITIALIZED;
  if (!passes_through(Library::kCudnn))
    if (HandleTable::Slot* slot = g_table.find(handle)) slot->state.forget();
  return real.cudnnDestroy(handle);
}

cudaError_t destroy_stream(cudaStream_t stream) noexcept {
  const RealSymbols& real = real_symbols(Library::kCudart);
  if (real.cudaStreamDestroy == nullptr) return cudaErrorInitializationError;
  if (passes_through(Library::kCudart)) return real.cudaStreamDestroy(stream);
  // The runtime may hand this address to the next stream it creates, so no slot may keep it.
  // Forgotten before the destroy, so that a new stream at this address is never skipped, and
  // again after it, in case a set on the dying stream slipped in between.
  const auto key = reinterpret_cast<std::uintptr_t>(stream);
  std::size_t forgotten = g_table.forget_stream(key);
  const cudaError_t status = real.cudaStreamDestroy(stream);
  forgotten += g_table.forget_stream(key);
  if (counting() && forgotten) count(Counter::kStreamsForgotten, forgotten);
  return status;
}

}  // namespace

HandleTable& handle_table() noexcept { return g_table; }

}  // namespace cudnn_fastpath::shim

// The exported names: the only symbols the shim's version script lets out.
#pragma GCC visibility push(default)
extern "C" {

cudnnStatus_t CUDNNWINAPI cudnnSetStream(cudnnHandle_t handle, cudaStream_t streamId) {
  return cudnn_fastpath::shim::set_stream(handle, streamId);
}

cudnnStatus_t CUDNNWINAPI cudnnCreate(cudnnHandle_t* handle) {
  return cudnn_fastpath::shim::create(handle);
}

cudnnStatus_t CUDNNWINAPI cudnnDestroy(cudnnHandle_t handle) {
  return cudnn_fastpath::shim::destroy(handle);
}

cudaError_t CUDARTAPI cudaStreamDestroy(cudaStream_t stream) {
  return cudnn_fastpath::shim::destroy_stream(stream);
}

}  // extern "C"
#pragma GCC visibility pop
