#include "execute_replay.h"

#include <dlfcn.h>
#include <strings.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "cudnn_fastpath/stream.h"
#include "handle_streams.h"

namespace cudnn_fastpath::detail {
namespace {

constexpr unsigned kDirectExecutes = 2;  // cuDNN may initialise lazily on a first execute

// The driver calls replay needs, from the loaded libcuda.so.1; null members if it is not loaded.
struct Driver {
  decltype(&::cuStreamBeginCapture_v2) begin_capture = nullptr;
  decltype(&::cuStreamEndCapture) end_capture = nullptr;
  decltype(&::cuStreamIsCapturing) is_capturing = nullptr;
  decltype(&::cuStreamGetCtx) stream_context = nullptr;
  decltype(&::cuStreamCreate) create_stream = nullptr;
  decltype(&::cuStreamDestroy_v2) destroy_stream = nullptr;
  decltype(&::cuCtxGetCurrent) current_context = nullptr;
  decltype(&::cuCtxSetCurrent) set_context = nullptr;
  decltype(&::cuPointerGetAttribute) pointer_attribute = nullptr;
  decltype(&::cuGraphInstantiateWithFlags) instantiate = nullptr;
  decltype(&::cuGraphLaunch) launch = nullptr;
  decltype(&::cuGraphExecDestroy) destroy_exec = nullptr;
  decltype(&::cuGraphDestroy) destroy_graph = nullptr;
  bool complete = false;
};

template <typename T>
void look_up(void* library, T& out, const char* name) {
  out = reinterpret_cast<T>(dlsym(library, name));
}

Driver find_driver() {
  Driver d;
  const char* setting = std::getenv("CUDNN_FASTPATH_GRAPHS");
  if (setting != nullptr && (std::strcmp(setting, "0") == 0 || strcasecmp(setting, "false") == 0 ||
                             strcasecmp(setting, "no") == 0 || strcasecmp(setting, "off") == 0))
    return d;
  // Never loaded here: a process that runs cuDNN on a GPU has the driver already.
  void* library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (library == nullptr) return d;
  look_up(library, d.begin_capture, "cuStreamBeginCapture_v2");
  look_up(library, d.end_capture, "cuStreamEndCapture");
  look_up(library, d.is_capturing, "cuStreamIsCapturing");
  look_up(library, d.stream_context, "cuStreamGetCtx");
  look_up(library, d.create_stream, "cuStreamCreate");
  look_up(library, d.destroy_stream, "cuStreamDestroy_v2");
  look_up(library, d.current_context, "cuCtxGetCurrent");
  look_up(library, d.set_context, "cuCtxSetCurrent");
  look_up(library, d.pointer_attribute, "cuPointerGetAttribute");
  look_up(library, d.instantiate, "cuGraphInstantiateWithFlags");
  look_up(library, d.launch, "cuGraphLaunch");
  look_up(library, d.destroy_exec, "cuGraphExecDestroy");
  look_up(library, d.destroy_graph, "cuGraphDestroy");
  d.complete = d.begin_capture && d.end_capture && d.is_capturing && d.stream_context && d.create_stream &&
               d.destroy_stream && d.current_context && d.set_context && d.pointer_attribute && d.instantiate &&
               d.launch && d.destroy_exec && d.destroy_graph;
  return d;  // the handle stays open: the library is never unloaded
}

// Looked up at the first execute that may capture (a function-local static: thread-safe, once).
const Driver& driver() {
  static const Driver d = find_driver();
  return d;
}

bool capturing(const Driver& d, CUstream stream) noexcept {
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  return d.is_capturing(stream, &status) != CUDA_SUCCESS || status != CU_STREAM_CAPTURE_STATUS_NONE;
}

}  // namespace

void ExecuteReplay::reset(bool streams) noexcept {
  // Both exist only if the driver was found (a Graph that never captured asks nothing here).
  // Destroying an executable graph still running on the GPU is legal: it is freed when it completes.
  if (graph_ != nullptr) driver().destroy_exec(graph_);
  graph_ = nullptr;
  context_ = nullptr;
  handle_ = nullptr;
  pack_ = nullptr;
  executes_ = 0;
  never_ = false;
  if (streams && capture_stream_ != nullptr) driver().destroy_stream(capture_stream_);
  if (streams) capture_stream_ = nullptr;
}

cudnnStatus_t ExecuteReplay::execute(cudnnHandle_t handle, cudnnBackendDescriptor_t plan,
                                     cudnnBackendDescriptor_t pack, const void* const* pointers,
                                     std::size_t count) noexcept {
  if (handle != handle_ || pack != pack_) {
    reset(false);
    handle_ = handle;
    pack_ = pack;
  }
  if (graph_ == nullptr) {
    if (never_ || executes_ < kDirectExecutes || !driver().complete) {
      if (executes_ < kDirectExecutes) ++executes_;
      return cudnnBackendExecute(handle, plan, pack);
    }
    return capture_and_launch(handle, plan, pack, pointers, count);
  }
  const Driver& d = driver();
  CUstream stream = nullptr;
  CUcontext context = nullptr;
  if (!known_stream(handle, reinterpret_cast<cudaStream_t*>(&stream)) || capturing(d, stream) ||
      d.stream_context(stream, &context) != CUDA_SUCCESS || context != context_)
    return cudnnBackendExecute(handle, plan, pack);
  return d.launch(graph_, stream) == CUDA_SUCCESS ? CUDNN_STATUS_SUCCESS : CUDNN_STATUS_EXECUTION_FAILED_CUDA_DRIVER;
}

cudnnStatus_t ExecuteReplay::capture_and_launch(cudnnHandle_t handle, cudnnBackendDescriptor_t plan,
                                                cudnnBackendDescriptor_t pack, const void* const* pointers,
                                                std::size_t count) noexcept {
  const Driver& d = driver();
  cudaStream_t program_stream = nullptr;
  if (read_stream(handle, &program_stream) != CUDNN_STATUS_SUCCESS) return cudnnBackendExecute(handle, plan, pack);
  const auto stream = reinterpret_cast<CUstream>(program_stream);
  // The program's own capture: its execute belongs in it, as without the frontend's replay.
  if (capturing(d, stream)) return cudnnBackendExecute(handle, plan, pack);
  auto never = [&] {
    never_ = true;
    return cudnnBackendExecute(handle, plan, pack);
  };
  CUcontext context = nullptr;
  if (d.stream_context(stream, &context) != CUDA_SUCCESS || context == nullptr) return never();
  // Only device memory is safe to bake into a graph: a host pointer is read at execute.
  for (std::size_t i = 0; i < count; ++i) {
    CUmemorytype type = CU_MEMORYTYPE_HOST;
    if (pointers[i] != nullptr &&
        (d.pointer_attribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, reinterpret_cast<CUdeviceptr>(pointers[i])) !=
             CUDA_SUCCESS ||
         type != CU_MEMORYTYPE_DEVICE))
      return never();
  }
  if (capture_stream_ == nullptr || capture_context_ != context) {
    if (capture_stream_ != nullptr) d.destroy_stream(capture_stream_);
    capture_stream_ = nullptr;
    CUcontext current = nullptr;
    if (d.current_context(&current) != CUDA_SUCCESS) return never();
    if (current != context && d.set_context(context) != CUDA_SUCCESS) return never();
    const CUresult made = d.create_stream(&capture_stream_, CU_STREAM_NON_BLOCKING);
    if (current != context) d.set_context(current);
    if (made != CUDA_SUCCESS) {
      capture_stream_ = nullptr;
      return never();
    }
    capture_context_ = context;
  }
  // The handle's stream is the Graph's for the length of one execute, then the program's again:
  // set and restored with cuDNN's own calls, so the frontend's handle table stays right.
  if (cudnnSetStream(handle, reinterpret_cast<cudaStream_t>(capture_stream_)) != CUDNN_STATUS_SUCCESS) return never();
  CUgraph graph = nullptr;
  CUresult result = d.begin_capture(capture_stream_, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
  cudnnStatus_t captured = CUDNN_STATUS_SUCCESS;
  if (result == CUDA_SUCCESS) {
    captured = cudnnBackendExecute(handle, plan, pack);
    result = d.end_capture(capture_stream_, &graph);
  }
  if (cudnnSetStream(handle, program_stream) != CUDNN_STATUS_SUCCESS) cudnn_fastpath::forget_handle(handle);
  if (result != CUDA_SUCCESS || captured != CUDNN_STATUS_SUCCESS || graph == nullptr) {
    if (graph != nullptr) d.destroy_graph(graph);
    return never();
  }
  result = d.instantiate(&graph_, graph, 0);
  d.destroy_graph(graph);
  if (result != CUDA_SUCCESS || graph_ == nullptr) {
    graph_ = nullptr;
    return never();
  }
  context_ = context;
  return d.launch(graph_, stream) == CUDA_SUCCESS ? CUDNN_STATUS_SUCCESS : CUDNN_STATUS_EXECUTION_FAILED_CUDA_DRIVER;
}

}  // namespace cudnn_fastpath::detail
