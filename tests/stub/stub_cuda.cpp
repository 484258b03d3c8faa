// A fake libcuda.so.1 (the CUDA driver) for tests: streams (cuStreamCreate and both cuStreamDestroy
// entry points), and the stream capture, graphs and launches the shim's graph replay uses (see
// stub_cuda.h). Like the real driver its symbols are unversioned. Streams are addresses in a pool,
// and a destroyed stream's address is the next one handed out, as in stub_cudart.cpp.
#include "tests/stub/stub_cuda.h"

#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <utility>
#include <vector>

#include "tests/stub/reusing_pool.h"
#include "tests/stub/stub_cuda_graph.h"

namespace stubcuda {

std::mutex graph_lock;
StubCudaGraphCounters graph_counters{};
std::set<StubGraph*>* graphs = new std::set<StubGraph*>;  // these three never freed
std::set<StubExec*>* execs = new std::set<StubExec*>;
std::map<const Node*, StubGraph*>* graph_nodes = new std::map<const Node*, StubGraph*>;

}  // namespace stubcuda

namespace {

using stubcuda::graph_counters;
using stubcuda::graph_lock;
using stubcuda::Node;
using stubcuda::NodeList;
using stubcuda::StubExec;
using stubcuda::StubGraph;

struct StubStream {
  bool live = false;  // under g_lock
};

ReusingPool<StubStream, 4096> g_streams;
std::mutex g_lock;  // orders a stream's destroy against another destroy of the same stream
std::atomic<std::uint64_t> g_created{0}, g_destroyed_v2{0}, g_destroyed_legacy{0}, g_destroyed_unseen{0};

// ---- capture and graphs: everything below is under graph_lock ----

struct StreamState {
  CUcontext context = STUBCUDA_PRIMARY_CONTEXT;
  unsigned long long id = 0;  // cuStreamGetId's answer: never the same for two streams
  bool green = false;
  bool capturing = false;
  bool invalidated = false;
  pid_t pid = 0;  // the process that made it with cuStreamCreate (0: not made by the stub)
  NodeList nodes;
};

unsigned long long g_next_stream_id = 16;  // 1 to 15: the legacy and per-thread streams
std::map<CUstream, StreamState>* g_states = new std::map<CUstream, StreamState>;  // never freed
std::vector<std::pair<std::uintptr_t, std::size_t>>* g_device = new std::vector<std::pair<std::uintptr_t, std::size_t>>;
CUstream g_last_launch_stream = nullptr;
int g_fail_captures = 0, g_fail_instantiations = 0;
int g_capturing_at_query = 0;  // stubcuda_capturing_at_query: queries until the one answered "capturing"
CUresult g_launch_result = CUDA_SUCCESS;

thread_local CUcontext t_current = STUBCUDA_PRIMARY_CONTEXT;

// The model of host time (stub_cuda.h): what each kind of call costs, in ns, and each thread's clock.
struct HostCosts {
  unsigned long long direct = 4000, launch = 1700, update = 600;
};

HostCosts read_host_costs() {
  HostCosts costs;
  if (const char* value = std::getenv("STUBCUDA_HOST_COSTS"))
    if (std::sscanf(value, "%llu,%llu,%llu", &costs.direct, &costs.launch, &costs.update) != 3) {
      std::fprintf(stderr, "stub libcuda: STUBCUDA_HOST_COSTS=%s is not DIRECT,LAUNCH,UPDATE\n", value);
      std::abort();
    }
  return costs;
}

const HostCosts& host_costs() {
  static const HostCosts costs = read_host_costs();
  return costs;
}

thread_local unsigned long long t_model_clock = 0;

bool legacy(CUstream stream) {
  const auto v = reinterpret_cast<std::uintptr_t>(stream);
  return v == 0 || v == 1 || v == 2;  // NULL, CU_STREAM_LEGACY, CU_STREAM_PER_THREAD
}

CUresult destroy(CUstream stream, std::atomic<std::uint64_t>& counter) {
  StubStream* s = g_streams.at(stream);
  {
    std::lock_guard<std::mutex> guard(g_lock);
    if (s == nullptr || !s->live) return CUDA_ERROR_INVALID_HANDLE;
    s->live = false;
  }
  {
    std::lock_guard<std::mutex> guard(graph_lock);
    g_states->erase(stream);
  }
  g_streams.release(s);
  counter.fetch_add(1, std::memory_order_relaxed);
  return CUDA_SUCCESS;
}

}  // namespace

void stubcuda::spend_update() { t_model_clock += host_costs().update; }

int stubcuda::capture(CUstream stream, std::unique_ptr<Node> node) {
  const auto direct = [] {  // the library runs the node's work itself: a launch of its own
    t_model_clock += host_costs().direct;
    return 0;
  };
  if (legacy(stream)) return direct();
  std::lock_guard<std::mutex> guard(graph_lock);
  const auto it = g_states->find(stream);
  if (it == g_states->end() || !it->second.capturing) return direct();
  node->id = next_node_id();
  node->context = it->second.context;
  if (node->kind == stubcuda::NodeKind::kKernel) know_kernel(node->kernel);
  it->second.nodes.push_back(std::move(node));
  return 1;
}

extern "C" {

unsigned long long cudnn_fastpath_model_clock_ns(void) { return t_model_clock; }

CUresult CUDAAPI cuStreamCreate(CUstream* stream, unsigned int) {
  if (stream == nullptr) return CUDA_ERROR_INVALID_VALUE;
  StubStream* s = g_streams.acquire();
  if (s == nullptr) return CUDA_ERROR_OUT_OF_MEMORY;
  {
    std::lock_guard<std::mutex> guard(g_lock);
    s->live = true;
  }
  *stream = reinterpret_cast<CUstream>(s);
  {
    std::lock_guard<std::mutex> guard(graph_lock);
    StreamState& state = (*g_states)[*stream];
    state = StreamState{};
    state.context = t_current;
    state.pid = getpid();
    state.id = g_next_stream_id++;
    ++graph_counters.streams_created;
  }
  g_created.fetch_add(1, std::memory_order_relaxed);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuStreamDestroy_v2(CUstream stream) { return destroy(stream, g_destroyed_v2); }

CUresult CUDAAPI cuStreamDestroy(CUstream stream) { return destroy(stream, g_destroyed_legacy); }

CUresult CUDAAPI cuStreamGetId(CUstream stream, unsigned long long* id) {
  if (id == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (legacy(stream)) {
    *id = reinterpret_cast<std::uintptr_t>(stream) + 1;
    return CUDA_SUCCESS;
  }
  std::lock_guard<std::mutex> guard(graph_lock);
  const auto it = g_states->find(stream);
  if (it == g_states->end() || it->second.id == 0) return CUDA_ERROR_INVALID_HANDLE;
  // As the real driver does (seen on the H200, driver 580): asked of a stream that is capturing,
  // it answers, and the capture is invalidated.
  if (it->second.capturing) it->second.invalidated = true;
  *id = it->second.id;
  return CUDA_SUCCESS;
}

void stubcuda_destroy_unseen(CUstream stream) { destroy(stream, g_destroyed_unseen); }

CUresult CUDAAPI cuMemAlloc_v2(CUdeviceptr* pointer, std::size_t bytes) {
  if (pointer == nullptr || bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  void* memory = std::malloc(bytes);
  if (memory == nullptr) return CUDA_ERROR_OUT_OF_MEMORY;
  *pointer = reinterpret_cast<CUdeviceptr>(memory);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemFree_v2(CUdeviceptr pointer) {
  std::free(reinterpret_cast<void*>(pointer));
  return CUDA_SUCCESS;
}

StubCudaCounters stubcuda_counters(void) {
  return {g_created.load(), g_destroyed_v2.load(), g_destroyed_legacy.load()};
}

CUresult CUDAAPI cuCtxGetCurrent(CUcontext* context) {
  if (context == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *context = t_current;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxSetCurrent(CUcontext context) {
  t_current = context;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuStreamGetCtx(CUstream stream, CUcontext* context) {
  if (context == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (legacy(stream)) {
    *context = t_current;
    return CUDA_SUCCESS;
  }
  std::lock_guard<std::mutex> guard(graph_lock);
  *context = (*g_states)[stream].context;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuStreamGetGreenCtx(CUstream stream, CUgreenCtx* green) {
  if (green == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<std::mutex> guard(graph_lock);
  const StreamState& state = (*g_states)[stream];
  *green = state.green ? reinterpret_cast<CUgreenCtx>(state.context) : nullptr;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuStreamBeginCapture_v2(CUstream stream, CUstreamCaptureMode mode) {
  if (legacy(stream)) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  std::lock_guard<std::mutex> guard(graph_lock);
  StreamState& state = (*g_states)[stream];
  if (state.pid != 0 && state.pid != getpid()) {  // a forked child's copy of its parent's stream
    ++graph_counters.foreign_captures;
    return CUDA_ERROR_INVALID_HANDLE;
  }
  if (state.capturing) return CUDA_ERROR_ILLEGAL_STATE;
  state.capturing = true;
  state.invalidated = g_fail_captures > 0;
  if (g_fail_captures > 0) --g_fail_captures;
  state.nodes.clear();
  ++graph_counters.captures_begun;
  if (mode == CU_STREAM_CAPTURE_MODE_GLOBAL) ++graph_counters.global_mode_captures;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuStreamEndCapture(CUstream stream, CUgraph* graph) {
  if (graph == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<std::mutex> guard(graph_lock);
  StreamState& state = (*g_states)[stream];
  *graph = nullptr;
  if (!state.capturing) return CUDA_ERROR_ILLEGAL_STATE;
  state.capturing = false;
  if (state.invalidated) return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
  auto* made = new StubGraph{std::move(state.nodes)};
  state.nodes.clear();
  stubcuda::graphs->insert(made);
  for (const auto& node : made->nodes) (*stubcuda::graph_nodes)[node.get()] = made;
  ++graph_counters.captures_ended;
  *graph = reinterpret_cast<CUgraph>(made);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuStreamIsCapturing(CUstream stream, CUstreamCaptureStatus* status) {
  if (status == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<std::mutex> guard(graph_lock);
  ++graph_counters.capture_queries;
  *status = CU_STREAM_CAPTURE_STATUS_NONE;
  if (g_capturing_at_query > 0 && --g_capturing_at_query == 0) {
    *status = CU_STREAM_CAPTURE_STATUS_ACTIVE;
    return CUDA_SUCCESS;
  }
  const auto it = g_states->find(stream);
  if (it != g_states->end() && it->second.capturing)
    *status = it->second.invalidated ? CU_STREAM_CAPTURE_STATUS_INVALIDATED : CU_STREAM_CAPTURE_STATUS_ACTIVE;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGraphDestroy(CUgraph graph) {
  std::lock_guard<std::mutex> guard(graph_lock);
  auto* g = reinterpret_cast<StubGraph*>(graph);
  if (!stubcuda::graphs->erase(g)) return CUDA_ERROR_INVALID_VALUE;
  for (const auto& node : g->nodes) stubcuda::graph_nodes->erase(node.get());
  delete g;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGraphInstantiateWithFlags(CUgraphExec* exec, CUgraph graph, unsigned long long) {
  if (exec == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<std::mutex> guard(graph_lock);
  auto* g = reinterpret_cast<StubGraph*>(graph);
  if (!stubcuda::graphs->count(g)) return CUDA_ERROR_INVALID_VALUE;
  if (g_fail_instantiations > 0) {
    --g_fail_instantiations;
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  auto* made = new StubExec{{}, getpid()};
  for (const auto& node : g->nodes) made->nodes.push_back(stubcuda::clone(*node, node->id));
  stubcuda::execs->insert(made);
  ++graph_counters.instantiated;
  *exec = reinterpret_cast<CUgraphExec>(made);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGraphExecDestroy(CUgraphExec exec) {
  std::lock_guard<std::mutex> guard(graph_lock);
  auto* e = reinterpret_cast<StubExec*>(exec);
  if (!stubcuda::execs->erase(e)) return CUDA_ERROR_INVALID_VALUE;
  if (e->pid != getpid()) ++graph_counters.foreign_destroys;
  delete e;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGraphLaunch(CUgraphExec exec, CUstream stream) {
  NodeList nodes;  // the exec's nodes as they are now (an update after this launch is for the next)
  {
    std::lock_guard<std::mutex> guard(graph_lock);
    auto* e = reinterpret_cast<StubExec*>(exec);
    if (!stubcuda::execs->count(e)) {
      ++graph_counters.bad_launches;
      return CUDA_ERROR_INVALID_HANDLE;
    }
    if (e->pid != getpid()) ++graph_counters.foreign_launches;
    if (g_launch_result != CUDA_SUCCESS) return g_launch_result;
    if (!legacy(stream)) {
      StreamState& state = (*g_states)[stream];
      if (state.capturing) {  // the graph becomes part of the capture, as a child graph would
        for (const auto& node : e->nodes) state.nodes.push_back(stubcuda::clone(*node, 0));
        ++graph_counters.launches_into_capture;
        return CUDA_SUCCESS;
      }
    }
    ++graph_counters.launches;
    t_model_clock += host_costs().launch;
    g_last_launch_stream = stream;
    for (const auto& node : e->nodes) nodes.push_back(stubcuda::clone(*node, 0));
  }
  for (const auto& node : nodes) stubcuda::run(*node);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuPointerGetAttribute(void* data, CUpointer_attribute attribute, CUdeviceptr pointer) {
  if (data == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (attribute != CU_POINTER_ATTRIBUTE_MEMORY_TYPE) return CUDA_ERROR_NOT_SUPPORTED;
  std::lock_guard<std::mutex> guard(graph_lock);
  for (const auto& [begin, size] : *g_device)
    if (pointer >= begin && pointer - begin < size) {
      *static_cast<CUmemorytype*>(data) = CU_MEMORYTYPE_DEVICE;
      return CUDA_SUCCESS;
    }
  return CUDA_ERROR_INVALID_VALUE;  // what the driver says of pageable host memory
}

int stubcuda_capture_node(CUstream stream, void (*run)(const void*), const void* blob, std::size_t size) {
  auto node = std::make_unique<Node>();
  node->kind = stubcuda::NodeKind::kOpaque;
  node->run = run;
  const auto* bytes = static_cast<const unsigned char*>(blob);
  node->blob.assign(bytes, bytes + size);
  return stubcuda::capture(stream, std::move(node));
}

StubCudaGraphCounters stubcuda_graph_counters(void) {
  std::lock_guard<std::mutex> guard(graph_lock);
  StubCudaGraphCounters c = graph_counters;
  c.live_execs = stubcuda::execs->size();
  return c;
}

CUstream stubcuda_last_launch_stream(void) {
  std::lock_guard<std::mutex> guard(graph_lock);
  return g_last_launch_stream;
}

void stubcuda_add_device_memory(std::uintptr_t begin, std::size_t size) {
  std::lock_guard<std::mutex> guard(graph_lock);
  g_device->emplace_back(begin, size);
}

void stubcuda_set_stream_context(CUstream stream, CUcontext context, int green) {
  std::lock_guard<std::mutex> guard(graph_lock);
  StreamState& state = (*g_states)[stream];
  state.context = context;
  state.green = green != 0;
}

void stubcuda_fail_captures(int n) {
  std::lock_guard<std::mutex> guard(graph_lock);
  g_fail_captures = n;
}

void stubcuda_capturing_at_query(int n) {
  std::lock_guard<std::mutex> guard(graph_lock);
  g_capturing_at_query = n;
}

void stubcuda_fail_instantiations(int n) {
  std::lock_guard<std::mutex> guard(graph_lock);
  g_fail_instantiations = n;
}

void stubcuda_fail_launches(CUresult result) {
  std::lock_guard<std::mutex> guard(graph_lock);
  g_launch_result = result;
}

}  // extern "C"
