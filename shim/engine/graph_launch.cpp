// Running a call: as it came, captured, launched (graph_launch.h).
#include "shim/engine/graph_launch.h"

#include <dlfcn.h>

#include <atomic>

#include "shim/libraries/mode.h"
#include "shim/process/config.h"
#include "shim/process/lifecycle.h"
#include "shim/process/log.h"

namespace cudnn_fastpath::shim {
namespace {

// In a forked child the parent's capture streams belong to its CUDA context: every thread's are
// forgotten (their generation moves on), never destroyed. Registered before the first capture.
std::atomic<std::uint32_t> g_fork_generation{0};  // relaxed: changed only in a forked child
void forget_streams_in_child() {
  g_fork_generation.store(g_fork_generation.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
}
ForkChildReset g_fork_reset{forget_streams_in_child};

// Whether libcuda is loaded at all: asked before resolving the driver for a caller, so that a
// program (a test) with no driver gets no "cannot find" message from the resolver. Relaxed: once
// loaded the driver stays (it is never unloaded), and a stale false only costs another probe.
std::atomic<bool> g_driver_loaded{false};

// The thread's capture stream in `context`, made in it if need be; null if none can be made. A
// thread that captures in more contexts than it keeps streams for destroys the oldest: a stream is
// used only between the begin and the end of a capture on this thread, so no work is left on it.
// (One thread driving three devices in turn made a stream per capture until the driver ran out.)
CUstream capture_stream(ReplayThread& t, const Binding& binding, CUcontext context) noexcept {
  const std::uint32_t generation = g_fork_generation.load(std::memory_order_relaxed);
  if (t.stream_generation != generation) {  // the parent's: dropped, not destroyed
    for (int i = 0; i < ReplayThread::kContexts; ++i) t.capture[i] = {};
    t.stream_generation = generation;
  }
  for (const ReplayThread::CaptureStream& c : t.capture)
    if (c.stream != nullptr && c.context == context) return c.stream;
  const CUstream made = replay::make_capture_stream(binding.real, context);
  if (made == nullptr) return nullptr;
  ReplayThread::CaptureStream& oldest = t.capture[t.next_stream++ % ReplayThread::kContexts];
  if (oldest.stream != nullptr) {
    const auto& maker = *static_cast<const Binding*>(oldest.maker);
    // The driver's own destroy, not the shim's: no handle of the program holds this stream.
    if (maker.real.cuStreamDestroy_v2 != nullptr) maker.real.cuStreamDestroy_v2(oldest.stream);
  }
  oldest = {context, made, &binding};
  return made;
}

// A call's run under the shim's capture: whatever the library calls from there is its own business.
struct CapturedRun {
  const ReplayCall& call;
  ReplayThread& t;
  static int run(void* context, CUstream on) {
    auto& r = *static_cast<CapturedRun*>(context);
    r.t.capturing = true;
    const int status = r.call.run(r.call.context, on);
    r.t.capturing = false;
    return status;
  }
};

__attribute__((cold)) void say_failure(Family family, const char* what, int code) noexcept {
  if (config().verbose)
    log_line("graph replay: %s of %s failed (%d); that call runs directly from now on", what, noun_of(family), code);
}

}  // namespace

int run_direct(const ReplayCall& call, std::uint32_t m, Counter refusal) noexcept {
  if (m & mode::kCounting) {
    count(counter_of(call.family, Outcome::kDirect));
    if (refusal != Counter::kCount) count(refusal);
  }
  const LibraryCall inside;
  return call.run(call.context, nullptr);
}

const Binding* driver_for(const void* caller) noexcept {
  if (!g_driver_loaded.load(std::memory_order_relaxed)) {
    void* loaded = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
    if (loaded == nullptr) return nullptr;
    dlclose(loaded);
    g_driver_loaded.store(true, std::memory_order_relaxed);
  }
  const Binding& binding = binding_for(Library::kCuda, caller);
  return binding.replays ? &binding : nullptr;
}

CallCapture capture_call(const ReplayCall& call, ReplayThread& t, const Binding& binding, HostBytes* host_bytes,
                         bool keep_graph) noexcept {
  g_fork_reset.register_once();  // before the first stream exists
  CallCapture out;
  const replay::GraphDriver& driver = binding.real;
  if (replay::capturing(driver, call.stream)) return out.refusal = Outcome::kCapturing, out;
  out.context = replay::capture_context(driver, call.stream);
  if (out.context == nullptr) return out.refusal = Outcome::kContext, out;
  if (call.learn_host_bytes != nullptr && !call.learn_host_bytes(call.context, binding.real, *host_bytes))
    return out.refusal = Outcome::kUnknown, out;
  const CUstream private_stream = capture_stream(t, binding, out.context);
  if (private_stream == nullptr) return out.refusal = Outcome::kFailed, out;
  // The handle's stream is the shim's for the length of one run, then the program's again.
  if (call.enter != nullptr && call.enter(call.context, private_stream) != 0) return out.refusal = Outcome::kFailed, out;
  CapturedRun run{call, t};
  out.captured = replay::capture_graph(driver, private_stream, CapturedRun::run, &run, keep_graph);
  if (call.leave != nullptr) call.leave(call.context);
  if (out.captured.exec == nullptr) {
    say_failure(call.family, out.captured.failed, out.captured.code);
    out.refusal = Outcome::kFailed;
  }
  return out;
}

}  // namespace cudnn_fastpath::shim
