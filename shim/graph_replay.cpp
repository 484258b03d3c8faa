// Graph replay: the shim's execute path for cached variant packs (see graph_replay.h).
//
// Per (handle, plan, real pack) triple, in graphs/graph_cache.h:
//   - the first kDirectExecutes executes reach cuDNN directly (cuDNN may initialise lazily on a
//     first execute, and a pack seen once or twice is not worth a graph);
//   - the next one is captured: on a stream of the shim's own (one per thread and context, the
//     handle's stream's context), with the handle's stream set to it and restored around the call,
//     in thread-local capture mode (global mode would make other threads' cudaMalloc fail). A
//     captured execute runs nothing; the graph's first launch, right after, does the work;
//   - every later execute launches the graph on the handle's current stream.
// The capture happens inside the program's own execute call, so no other call on the handle is in
// flight (cuDNN forbids it): the handle table's invariant, stated for when no call on a handle is
// in flight, holds again when the stream is restored, before this call returns.
//
// Safety rules (each has a test in tests/graphs):
//   - the program's stream is capturing (its own CUDA graph): direct, as without the shim;
//   - by-value tensors (CUDNN_ATTR_TENSOR_IS_BY_VALUE) are host pointers that cuDNN reads at
//     execute, so a graph bakes in their bytes. Their uids and exact sizes are learnt from the
//     tensor descriptors the program builds (note_tensor_attribute: uid, data type, dimensions);
//     the bytes are kept with the graph and compared at every launch. Changed bytes re-capture,
//     at most kMaxRecaptures times, then the triple is executed directly for good (no capture
//     churn). A host pointer that is not a known by-value tensor: direct for good;
//   - a graph is forgotten when its handle or plan is destroyed, its pack evicted, in a forked
//     child, and when the feature is switched off;
//   - a stream of another context than the graph was captured in (another device, a green
//     context): direct. A green context's stream is never captured;
//   - a failed capture or instantiation marks the triple "never" and executes directly (one line
//     with CUDNN_FASTPATH_VERBOSE); a failed launch returns an error to the program.
#include "shim/graph_replay.h"

#include <dlfcn.h>

#include <atomic>
#include <cstring>

#include "graphs/graph_cache.h"
#include "shim/callers.h"
#include "shim/config.h"
#include "shim/handle_table.h"
#include "shim/lifecycle.h"
#include "shim/log.h"
#include "shim/process.h"
#include "shim/counters.h"

namespace cudnn_fastpath::shim {
namespace {

using graphs::GraphKey;
using graphs::Phase;
using graphs::Released;
using Cache = graphs::GraphCache<64, 8>;  // 512 triples; a lookup compares at most 8 tags
using ByValue = Cache::ByValue;

constexpr std::uint32_t kDirectExecutes = 2;
constexpr std::uint8_t kMaxRecaptures = 3;

Cache g_graphs;

// In a forked child only the forking thread exists, and the parent's graphs and capture streams
// belong to its CUDA context: the entries are dropped (not destroyed) and the thread's streams
// forgotten (their generation moves on). Registered before the first capture.
std::atomic<std::uint32_t> g_fork_generation{0};  // relaxed: changed only in a forked child
void forget_in_child() {
  g_graphs.forget_in_child();
  g_fork_generation.store(g_fork_generation.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
}
ForkChildReset g_fork_reset{forget_in_child};

// One bit per hash of each handle, plan and pack that ever got an entry: a destroyed descriptor
// that never did (most of them) costs a load, not a pass over the cache. Relaxed: a bit set by an
// insert racing the destroy of that same descriptor is a use after free by the program.
std::atomic<std::uint64_t> g_seen_handles{0}, g_seen_plans{0}, g_seen_packs{0};

std::uint64_t bit_of(const void* p) noexcept {
  const auto v = reinterpret_cast<std::uintptr_t>(p);
  return std::uint64_t{1} << (((v >> 4) ^ (v >> 10) ^ (v >> 16)) & 63);
}

bool counting(std::uint32_t m) { return (m & mode::kCounting) != 0; }

// ---- by-value tensors --------------------------------------------------------------------------

// The bytes of one element of a cuDNN data type; 0 when it is not a whole number of bytes.
std::uint32_t element_bytes(std::int32_t type) noexcept {
  switch (type) {
    case CUDNN_DATA_HALF:
    case CUDNN_DATA_BFLOAT16: return 2;
    case CUDNN_DATA_FLOAT:
    case CUDNN_DATA_INT32:
    case CUDNN_DATA_INT8x4:
    case CUDNN_DATA_UINT8x4: return 4;
    case CUDNN_DATA_DOUBLE:
    case CUDNN_DATA_INT64: return 8;
    case CUDNN_DATA_INT8:
    case CUDNN_DATA_UINT8:
    case CUDNN_DATA_BOOLEAN:
    case CUDNN_DATA_FP8_E4M3:
    case CUDNN_DATA_FP8_E5M2: return 1;
    case CUDNN_DATA_INT8x32: return 32;
    default: return 0;
  }
}

// A tensor descriptor being built, as far as its attributes were seen. A descriptor is built by
// one thread, its sets one after another: a thread keeps its last few.
struct TensorNote {
  const void* descriptor;
  std::int64_t uid;
  std::int64_t elements;
  std::int32_t type;
  bool has_uid, has_type, has_dims, by_value;
};
// Four: cudnn-frontend and PyTorch build one tensor descriptor at a time. The shim's thread-local
// data goes into the static TLS block (it has initial-exec variables), which a dlopened copy must
// find room in (glibc keeps 512 bytes for all such libraries): it is kept to about 200 bytes.
constexpr int kNotes = 4;
thread_local TensorNote t_notes[kNotes];
thread_local unsigned t_next_note;

// The by-value uids seen in the process, with their exact sizes: {uid, size} published by a
// claim word. A uid seen with two sizes is ambiguous (kAmbiguous): a host pointer of it is
// refused. Linear probing; full: a uid not noted is refused like any unknown host pointer.
constexpr int kByValueUids = 64;
constexpr std::uint32_t kAmbiguous = ~std::uint32_t{0};
struct ByValueUid {
  std::atomic<std::uint32_t> state{0};  // 0 empty, 1 being claimed, 2 ready
  std::atomic<std::int64_t> uid{0};
  std::atomic<std::uint32_t> size{0};
};
ByValueUid g_by_value[kByValueUids];

std::size_t uid_home(std::int64_t uid) noexcept {
  return static_cast<std::size_t>((static_cast<std::uint64_t>(uid) * 0x9e3779b97f4a7c15ull) >> 58) & (kByValueUids - 1);
}

void publish_by_value(std::int64_t uid, std::uint32_t size) noexcept {
  for (int step = 0; step < kByValueUids; ++step) {
    ByValueUid& slot = g_by_value[(uid_home(uid) + step) & (kByValueUids - 1)];
    // Acquire: pairs with the release below, so a ready slot's uid and size are read after it.
    std::uint32_t state = slot.state.load(std::memory_order_acquire);
    if (state == 0) {
      // acq_rel: the winner writes the slot, then publishes it with the release store.
      if (slot.state.compare_exchange_strong(state, 1, std::memory_order_acq_rel, std::memory_order_acquire)) {
        slot.uid.store(uid, std::memory_order_relaxed);
        slot.size.store(size, std::memory_order_relaxed);
        slot.state.store(2, std::memory_order_release);
        return;
      }
    }
    // Being claimed: two stores away from ready (no call in between).
    while (state == 1) state = slot.state.load(std::memory_order_acquire);
    if (slot.uid.load(std::memory_order_relaxed) != uid) continue;
    // Relaxed: sizes only ever move to kAmbiguous; a reader that misses it reads a size that was
    // right for one descriptor of this uid, and compares that many bytes.
    if (slot.size.load(std::memory_order_relaxed) != size) slot.size.store(kAmbiguous, std::memory_order_relaxed);
    return;
  }
}

// The size of by-value uid `uid`, or 0 when it is not known as one (or ambiguous).
std::uint32_t by_value_size(std::int64_t uid) noexcept {
  for (int step = 0; step < kByValueUids; ++step) {
    const ByValueUid& slot = g_by_value[(uid_home(uid) + step) & (kByValueUids - 1)];
    const std::uint32_t state = slot.state.load(std::memory_order_acquire);  // as in publish_by_value
    if (state == 0) return 0;
    if (state != 2 || slot.uid.load(std::memory_order_relaxed) != uid) continue;
    const std::uint32_t size = slot.size.load(std::memory_order_relaxed);
    return size == kAmbiguous ? 0 : size;
  }
  return 0;
}

// ---- the driver --------------------------------------------------------------------------------

// Whether libcuda is loaded at all: asked before resolving the driver for a caller, so that a
// program (a test) with no driver gets no "cannot find" message from the resolver. Relaxed: once
// loaded the driver stays (it is never unloaded), and a stale false only costs another probe.
std::atomic<bool> g_driver_loaded{false};

const Binding* driver_for(const void* caller) noexcept {
  if (!g_driver_loaded.load(std::memory_order_relaxed)) {
    void* loaded = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
    if (loaded == nullptr) return nullptr;
    dlclose(loaded);
    g_driver_loaded.store(true, std::memory_order_relaxed);
  }
  const Binding& binding = binding_for(Library::kCuda, caller);
  const RealSymbols& cuda = binding.real;
  const bool complete = cuda.cuStreamBeginCapture_v2 && cuda.cuStreamEndCapture && cuda.cuStreamIsCapturing &&
                        cuda.cuStreamGetCtx && cuda.cuStreamCreate && cuda.cuCtxGetCurrent && cuda.cuCtxSetCurrent &&
                        cuda.cuPointerGetAttribute && cuda.cuGraphInstantiateWithFlags && cuda.cuGraphLaunch &&
                        cuda.cuGraphExecDestroy && cuda.cuGraphDestroy;
  return complete ? &binding : nullptr;
}

const RealSymbols& driver_of(std::uintptr_t library) noexcept {
  return reinterpret_cast<const Binding*>(library)->real;
}

void destroy_graph(const Released& r) noexcept {
  if (r.graph != nullptr && r.library != 0)
    driver_of(r.library).cuGraphExecDestroy(static_cast<CUgraphExec>(r.graph));
}

// The thread's capture streams, one per context it captured in. Plain thread-local data, no
// destructor: a thread's streams outlive it (a few per thread that ever captured). `generation`
// is g_fork_generation when they were made: a forked child's streams are not the parent's.
constexpr int kCaptureContexts = 2;  // per thread; a third context reuses the oldest slot
struct CaptureStreams {
  CUcontext context[kCaptureContexts];
  CUstream stream[kCaptureContexts];
  std::uint32_t generation;
  std::uint32_t next;
};
thread_local CaptureStreams t_streams;

// The thread's capture stream in `context`, made in it if need be; null if none can be made.
CUstream capture_stream(const RealSymbols& cuda, CUcontext context) noexcept {
  CaptureStreams& s = t_streams;
  const std::uint32_t generation = g_fork_generation.load(std::memory_order_relaxed);
  if (s.generation != generation) s = CaptureStreams{{}, {}, generation, 0};
  for (int i = 0; i < kCaptureContexts; ++i)
    if (s.stream[i] != nullptr && s.context[i] == context) return s.stream[i];
  CUcontext current = nullptr;
  if (cuda.cuCtxGetCurrent(&current) != CUDA_SUCCESS) return nullptr;
  if (current != context && cuda.cuCtxSetCurrent(context) != CUDA_SUCCESS) return nullptr;
  CUstream made = nullptr;
  const CUresult created = cuda.cuStreamCreate(&made, CU_STREAM_NON_BLOCKING);
  if (current != context) cuda.cuCtxSetCurrent(current);
  if (created != CUDA_SUCCESS) return nullptr;
  const int i = static_cast<int>(s.next++ % kCaptureContexts);
  // A third context: the oldest stream is left to the driver (never destroyed here: the
  // shim interposes stream destroys, and a few streams per thread are nothing).
  s.context[i] = context;
  s.stream[i] = made;
  return made;
}

// ---- the execute path --------------------------------------------------------------------------

enum class Refusal { kCapturing, kHostPointer, kContext, kChurn, kFailed, kFull };

void count_refusal(std::uint32_t m, Refusal why) noexcept {
  if (!counting(m)) return;
  switch (why) {
    case Refusal::kCapturing: count(Counter::graph_refusals_capturing); break;
    case Refusal::kHostPointer: count(Counter::graph_refusals_host_pointer); break;
    case Refusal::kContext: count(Counter::graph_refusals_context); break;
    case Refusal::kChurn: count(Counter::graph_refusals_churn); break;
    case Refusal::kFailed: count(Counter::graph_refusals_failed); break;
    case Refusal::kFull: count(Counter::graph_refusals_full); break;
  }
}

cudnnStatus_t direct(const Binding& cudnn, cudnnHandle_t handle, cudnnBackendDescriptor_t plan,
                     cudnnBackendDescriptor_t pack, std::uint32_t m) noexcept {
  if (counting(m)) count(Counter::direct_executes);
  return cudnn.real.cudnnBackendExecute(handle, plan, pack);
}

// The stream the handle holds: the handle table's word when it is known (and the table is
// trusted: skipping on, no verify mode), else cuDNN's answer.
bool stream_of(const Binding& cudnn, cudnnHandle_t handle, std::uint32_t m, CUstream& stream) noexcept {
  if ((m & mode::kSkipping) && !(m & mode::kVerify))
    if (HandleTable::Slot* slot = handle_table().find(handle)) {
      std::uintptr_t held = 0;
      if (slot->state.held(held)) {
        stream = reinterpret_cast<CUstream>(held);
        return true;
      }
    }
  cudaStream_t asked = nullptr;
  if (cudnn.real.cudnnGetStream == nullptr || cudnn.real.cudnnGetStream(handle, &asked) != CUDNN_STATUS_SUCCESS)
    return false;
  stream = reinterpret_cast<CUstream>(asked);
  return true;
}

bool capturing(const RealSymbols& cuda, CUstream stream) noexcept {
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  // An error (the legacy stream while another thread captures globally, say): as if capturing.
  return cuda.cuStreamIsCapturing(stream, &status) != CUDA_SUCCESS || status != CU_STREAM_CAPTURE_STATUS_NONE;
}

// The by-value layout of `contents` into `e` and their bytes into `bytes`; false (a refusal) when
// a host pointer is not a known by-value tensor, or they do not fit.
bool learn_by_value(const RealSymbols& cuda, const packs::PackContents& contents, Cache::Entry& e,
                    unsigned char (&bytes)[Cache::kByValueBytes]) noexcept {
  int n = 0;
  std::uint32_t offset = 0;
  for (std::int32_t i = 0; i < contents.pointer_count; ++i) {
    void* pointer = contents.pointer(i);
    if (pointer == nullptr) continue;
    CUmemorytype type = CU_MEMORYTYPE_HOST;
    if (cuda.cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, reinterpret_cast<CUdeviceptr>(pointer)) ==
            CUDA_SUCCESS &&
        type == CU_MEMORYTYPE_DEVICE)
      continue;
    // Host memory (or memory the driver does not know): only a known by-value tensor is read.
    const std::uint32_t size = i < contents.uid_count ? by_value_size(contents.uid(i)) : 0;
    if (size == 0 || n == Cache::kMaxByValue || offset + size > Cache::kByValueBytes) return false;
    std::memcpy(bytes + offset, pointer, size);
    e.set_by_value(n++, ByValue{static_cast<std::uint8_t>(i), static_cast<std::uint8_t>(offset),
                                static_cast<std::uint8_t>(size)});
    offset += size;
  }
  e.by_value_count.store(static_cast<std::uint8_t>(n), std::memory_order_relaxed);
  return true;
}

// Whether the by-value bytes at the pack's pointers are still the ones the graph baked in.
bool same_by_value(const Cache::Entry& e, const packs::PackContents& contents) noexcept {
  const int n = e.by_value_count.load(std::memory_order_relaxed);
  if (n == 0) return true;
  unsigned char baked[Cache::kByValueBytes];
  e.load_bytes(baked);
  for (int k = 0; k < n; ++k) {
    const ByValue b = e.by_value_at(k);
    if (std::memcmp(contents.pointer(b.tensor), baked + b.offset, b.size) != 0) return false;
  }
  return true;
}

__attribute__((cold)) void say_failure(const char* what, int code) noexcept {
  if (config().verbose) log_line("graph replay: %s failed (%d); this execute runs directly from now on", what, code);
}

// Captures one execute of the entry's triple (the entry is in kCapturing, this thread's) and
// launches it. Ends the capture phase in kReady (launched, or the launch failed: its error is
// returned) or kNever (executed directly instead), or back in kCounting (the program's stream
// is capturing: try again later).
__attribute__((cold, noinline)) cudnnStatus_t capture_and_launch(
    const void* caller, const Binding& cudnn, cudnnHandle_t handle, cudnnBackendDescriptor_t plan,
    cudnnBackendDescriptor_t pack, const packs::PackContents& contents, std::uint32_t m, Cache::Entry& e) noexcept {
  g_fork_reset.register_once();  // before the first graph exists
  const RealSymbols& real = cudnn.real;
  const Binding* driver = driver_for(caller);
  const RealSymbols* cuda = driver ? &driver->real : nullptr;
  auto never = [&](Refusal why) {
    e.publish(Phase::kNever);
    count_refusal(m, why);
    return direct(cudnn, handle, plan, pack, m);
  };
  if (cuda == nullptr || real.cudnnGetStream == nullptr || real.cudnnSetStream == nullptr) return never(Refusal::kFailed);
  cudaStream_t program_stream = nullptr;
  if (real.cudnnGetStream(handle, &program_stream) != CUDNN_STATUS_SUCCESS) return never(Refusal::kFailed);
  const auto stream = reinterpret_cast<CUstream>(program_stream);
  if (capturing(*cuda, stream)) {
    e.publish(Phase::kCounting);
    count_refusal(m, Refusal::kCapturing);
    return direct(cudnn, handle, plan, pack, m);
  }
  CUcontext context = nullptr;
  if (cuda->cuStreamGetCtx(stream, &context) != CUDA_SUCCESS || context == nullptr) return never(Refusal::kContext);
  CUgreenCtx green = nullptr;
  if (cuda->cuStreamGetGreenCtx && cuda->cuStreamGetGreenCtx(stream, &green) == CUDA_SUCCESS && green != nullptr)
    return never(Refusal::kContext);
  unsigned char bytes[Cache::kByValueBytes] = {};
  if (!learn_by_value(*cuda, contents, e, bytes)) return never(Refusal::kHostPointer);
  const CUstream private_stream = capture_stream(*cuda, context);
  if (private_stream == nullptr) return never(Refusal::kFailed);

  // The handle's stream is the shim's for the length of one execute, then the program's again.
  if (real.cudnnSetStream(handle, reinterpret_cast<cudaStream_t>(private_stream)) != CUDNN_STATUS_SUCCESS)
    return never(Refusal::kFailed);
  CUgraph graph = nullptr;
  CUresult result = cuda->cuStreamBeginCapture_v2(private_stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
  cudnnStatus_t captured = CUDNN_STATUS_SUCCESS;
  if (result == CUDA_SUCCESS) {
    captured = real.cudnnBackendExecute(handle, plan, pack);
    result = cuda->cuStreamEndCapture(private_stream, &graph);
  }
  if (real.cudnnSetStream(handle, program_stream) != CUDNN_STATUS_SUCCESS) {
    // cuDNN holds the shim's stream: whatever the table says of the handle is void.
    if (HandleTable::Slot* slot = handle_table().find(handle)) slot->state.forget();
  }
  if (result != CUDA_SUCCESS || captured != CUDNN_STATUS_SUCCESS || graph == nullptr) {
    if (graph != nullptr) cuda->cuGraphDestroy(graph);
    say_failure(captured != CUDNN_STATUS_SUCCESS ? "an execute under capture" : "a capture",
                captured != CUDNN_STATUS_SUCCESS ? static_cast<int>(captured) : static_cast<int>(result));
    return never(Refusal::kFailed);
  }
  CUgraphExec exec = nullptr;
  result = cuda->cuGraphInstantiateWithFlags(&exec, graph, 0);
  cuda->cuGraphDestroy(graph);
  if (result != CUDA_SUCCESS || exec == nullptr) {
    say_failure("an instantiation", static_cast<int>(result));
    return never(Refusal::kFailed);
  }
  e.store_bytes(bytes);
  e.context.store(context, std::memory_order_relaxed);
  e.library.store(reinterpret_cast<std::uintptr_t>(driver), std::memory_order_relaxed);
  e.graph.store(exec, std::memory_order_relaxed);
  e.publish(Phase::kReady);
  if (counting(m)) count(Counter::graphs_captured);
  if (cuda->cuGraphLaunch(exec, stream) != CUDA_SUCCESS) return CUDNN_STATUS_EXECUTION_FAILED_CUDA_DRIVER;
  if (counting(m)) count(Counter::graph_launches);
  return CUDNN_STATUS_SUCCESS;
}

// A ready entry: launch, unless a rule says direct.
cudnnStatus_t launch(const void* caller, const Binding& cudnn, cudnnHandle_t handle, cudnnBackendDescriptor_t plan,
                     cudnnBackendDescriptor_t pack, const packs::PackContents& contents, std::uint32_t m,
                     Cache::Entry& e) noexcept {
  const RealSymbols& cuda = driver_of(e.library.load(std::memory_order_relaxed));
  CUstream stream = nullptr;
  if (!stream_of(cudnn, handle, m, stream)) return direct(cudnn, handle, plan, pack, m);
  if (capturing(cuda, stream)) {
    count_refusal(m, Refusal::kCapturing);
    return direct(cudnn, handle, plan, pack, m);
  }
  CUcontext context = nullptr;
  if (cuda.cuStreamGetCtx(stream, &context) != CUDA_SUCCESS || context != e.context.load(std::memory_order_relaxed)) {
    count_refusal(m, Refusal::kContext);
    return direct(cudnn, handle, plan, pack, m);
  }
  if (__builtin_expect(!same_by_value(e, contents), 0)) {
    // The bytes changed: the graph is stale. Re-captured a few times, then direct for good. The
    // old graph is destroyed at once: a triple's handle is used by one thread at a time (cuDNN's
    // rule), so no other launch of it can be starting now.
    if (!e.begin_capture(Phase::kReady)) return direct(cudnn, handle, plan, pack, m);
    destroy_graph({e.graph.exchange(nullptr, std::memory_order_relaxed), e.library.load(std::memory_order_relaxed)});
    const std::uint8_t recaptures = e.recaptures.load(std::memory_order_relaxed);
    if (recaptures >= kMaxRecaptures) {
      e.publish(Phase::kNever);
      count_refusal(m, Refusal::kChurn);
      return direct(cudnn, handle, plan, pack, m);
    }
    e.recaptures.store(recaptures + 1, std::memory_order_relaxed);
    return capture_and_launch(caller, cudnn, handle, plan, pack, contents, m, e);
  }
  auto* exec = static_cast<CUgraphExec>(e.graph.load(std::memory_order_relaxed));
  if (cuda.cuGraphLaunch(exec, stream) != CUDA_SUCCESS) return CUDNN_STATUS_EXECUTION_FAILED_CUDA_DRIVER;
  if (counting(m)) count(Counter::graph_launches);
  return CUDNN_STATUS_SUCCESS;
}

// Forgets the graphs whose key matches: each destroyed now, or by the execute that still holds it.
template <typename Match>
void forget_where(Match&& matches) noexcept {
  g_graphs.forget_if(matches, [](const Released& r) { destroy_graph(r); });
}

}  // namespace

cudnnStatus_t execute_with_graphs(const void* caller, const Binding& cudnn, cudnnHandle_t handle,
                                  cudnnBackendDescriptor_t plan, cudnnBackendDescriptor_t pack,
                                  const packs::PackContents& contents, std::uint32_t m) noexcept {
  const GraphKey key{reinterpret_cast<std::uintptr_t>(handle), reinterpret_cast<std::uintptr_t>(plan),
                     reinterpret_cast<std::uintptr_t>(pack)};
  bool inserted = false;
  Released evicted;
  const Cache::Lease lease = g_graphs.acquire_or_insert(key, inserted, evicted);
  if (evicted.graph) {
    destroy_graph(evicted);
    if (counting(m)) count(Counter::graph_evictions);
  }
  if (!lease) {
    count_refusal(m, Refusal::kFull);
    return direct(cudnn, handle, plan, pack, m);
  }
  if (inserted) {
    // Relaxed: see g_seen_handles.
    g_seen_handles.fetch_or(bit_of(handle), std::memory_order_relaxed);
    g_seen_plans.fetch_or(bit_of(plan), std::memory_order_relaxed);
    g_seen_packs.fetch_or(bit_of(pack), std::memory_order_relaxed);
  }
  Cache::Entry& e = g_graphs.entry(lease);
  cudnnStatus_t status;
  switch (e.current_phase()) {
    case Phase::kReady:
      status = launch(caller, cudnn, handle, plan, pack, contents, m, e);
      break;
    case Phase::kCounting:
      // Relaxed: a count, ordered by nothing; two threads on one triple (which cuDNN forbids on
      // one handle) only capture a little earlier.
      if (e.executes.fetch_add(1, std::memory_order_relaxed) >= kDirectExecutes && e.begin_capture(Phase::kCounting)) {
        status = capture_and_launch(caller, cudnn, handle, plan, pack, contents, m, e);
        break;
      }
      status = direct(cudnn, handle, plan, pack, m);
      break;
    default:  // kNever, or another thread capturing it
      status = direct(cudnn, handle, plan, pack, m);
      break;
  }
  Released released;
  g_graphs.release(lease, released);
  destroy_graph(released);
  return status;
}

void note_tensor_attribute(cudnnBackendDescriptor_t descriptor, cudnnBackendAttributeName_t name,
                           cudnnBackendAttributeType_t type, std::int64_t count, const void* elements) noexcept {
  if (elements == nullptr || count < 1) return;
  TensorNote* note = nullptr;
  for (TensorNote& n : t_notes)
    if (n.descriptor == descriptor) note = &n;
  if (note == nullptr) {
    note = &t_notes[t_next_note++ % kNotes];
    *note = TensorNote{descriptor, 0, 0, 0, false, false, false, false};
  }
  switch (name) {
    case CUDNN_ATTR_TENSOR_UNIQUE_ID:
      if (type != CUDNN_TYPE_INT64) return;
      note->uid = *static_cast<const std::int64_t*>(elements);
      note->has_uid = true;
      break;
    case CUDNN_ATTR_TENSOR_DATA_TYPE:
      if (type != CUDNN_TYPE_DATA_TYPE) return;
      note->type = *static_cast<const std::int32_t*>(elements);
      note->has_type = true;
      break;
    case CUDNN_ATTR_TENSOR_DIMENSIONS: {
      if (type != CUDNN_TYPE_INT64) return;
      std::int64_t product = 1;
      for (std::int64_t i = 0; i < count && product > 0 && product <= Cache::kByValueBytes; ++i)
        product *= static_cast<const std::int64_t*>(elements)[i];
      note->elements = product;
      note->has_dims = true;
      break;
    }
    case CUDNN_ATTR_TENSOR_IS_BY_VALUE:
      if (type != CUDNN_TYPE_BOOLEAN) return;
      note->by_value = *static_cast<const bool*>(elements);
      break;
    default:
      return;
  }
  if (note->by_value && note->has_uid && note->has_type && note->has_dims) {
    const std::uint64_t bytes = static_cast<std::uint64_t>(note->elements) * element_bytes(note->type);
    const bool exact = note->elements > 0 && bytes > 0 && bytes <= Cache::kByValueBytes;
    publish_by_value(note->uid, exact ? static_cast<std::uint32_t>(bytes) : kAmbiguous);
  }
}

void forget_graphs_of_handle(cudnnHandle_t handle) noexcept {
  if (!(g_seen_handles.load(std::memory_order_relaxed) & bit_of(handle))) return;
  const auto key = reinterpret_cast<std::uintptr_t>(handle);
  forget_where([key](const GraphKey& k) { return k.handle == key; });
}

void forget_graphs_of_plan(cudnnBackendDescriptor_t plan) noexcept {
  if (!(g_seen_plans.load(std::memory_order_relaxed) & bit_of(plan))) return;
  const auto key = reinterpret_cast<std::uintptr_t>(plan);
  forget_where([key](const GraphKey& k) { return k.plan == key; });
}

void forget_graphs_of_pack(cudnnBackendDescriptor_t pack) noexcept {
  if (!(g_seen_packs.load(std::memory_order_relaxed) & bit_of(pack))) return;
  const auto key = reinterpret_cast<std::uintptr_t>(pack);
  forget_where([key](const GraphKey& k) { return k.pack == key; });
}

void forget_all_graphs() noexcept {
  forget_where([](const GraphKey&) { return true; });
}


}  // namespace cudnn_fastpath::shim
