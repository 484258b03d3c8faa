#include "execute_replay.h"

#include <dlfcn.h>
#include <strings.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "cudnn_fastpath/stream.h"
#include "handle_streams.h"
#include "replay/graph_capture.h"

namespace cudnn_fastpath::detail {
namespace {

using replay::GraphDriver;

// The driver replay needs, from the loaded libcuda.so.1, and the stream destroy for the Graph's
// own capture stream; null members if it is not loaded.
struct Driver {
  GraphDriver graph;
  decltype(&::cuStreamDestroy_v2) destroy_stream = nullptr;
  bool complete = false;
};

Driver find_driver() {
  Driver d;
  const char* setting = std::getenv("CUDNN_FASTPATH_GRAPHS");
  if (setting != nullptr && (std::strcmp(setting, "0") == 0 || strcasecmp(setting, "false") == 0 ||
                             strcasecmp(setting, "no") == 0 || strcasecmp(setting, "off") == 0))
    return d;
  // Never loaded here: a process that runs cuDNN on a GPU has the driver already.
  void* library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (library == nullptr) return d;
#define CUDNN_FASTPATH_LOOK_UP(C, name, required) d.graph.name = reinterpret_cast<decltype(&::name)>(dlsym(library, #name));
  CUDNN_FASTPATH_GRAPH_DRIVER(CUDNN_FASTPATH_LOOK_UP, )
#undef CUDNN_FASTPATH_LOOK_UP
  d.destroy_stream = reinterpret_cast<decltype(&::cuStreamDestroy_v2)>(dlsym(library, "cuStreamDestroy_v2"));
  d.complete = d.graph.complete() && d.destroy_stream != nullptr;
  return d;  // the handle stays open: the library is never unloaded
}

// Looked up at the first execute that may capture (a function-local static: thread-safe, once).
const Driver& driver() {
  static const Driver d = find_driver();
  return d;
}

struct Execute {
  cudnnHandle_t handle;
  cudnnBackendDescriptor_t plan, pack;
  static int run(void* context, CUstream) {
    const Execute& x = *static_cast<const Execute*>(context);
    return cudnnBackendExecute(x.handle, x.plan, x.pack);
  }
};

}  // namespace

void ExecuteReplay::reset(bool streams) noexcept {
  // Both exist only if the driver was found (a Graph that never captured asks nothing here).
  if (graph_ != nullptr) replay::destroy_graph(driver().graph, graph_);
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
    if (never_ || executes_ < replay::kDirectRunsBeforeCapture || !driver().complete) {
      if (executes_ < replay::kDirectRunsBeforeCapture) ++executes_;
      return cudnnBackendExecute(handle, plan, pack);
    }
    return capture_and_launch(handle, plan, pack, pointers, count);
  }
  const GraphDriver& d = driver().graph;
  CUstream stream = nullptr;
  if (!known_stream(handle, reinterpret_cast<cudaStream_t*>(&stream)) || replay::capturing(d, stream) ||
      !replay::in_context(d, stream, context_))
    return cudnnBackendExecute(handle, plan, pack);
  return replay::launch_graph(d, graph_, stream) ? CUDNN_STATUS_SUCCESS : CUDNN_STATUS_EXECUTION_FAILED_CUDA_DRIVER;
}

cudnnStatus_t ExecuteReplay::capture_and_launch(cudnnHandle_t handle, cudnnBackendDescriptor_t plan,
                                                cudnnBackendDescriptor_t pack, const void* const* pointers,
                                                std::size_t count) noexcept {
  const Driver& found = driver();
  const GraphDriver& d = found.graph;
  cudaStream_t program_stream = nullptr;
  if (read_stream(handle, &program_stream) != CUDNN_STATUS_SUCCESS) return cudnnBackendExecute(handle, plan, pack);
  const auto stream = reinterpret_cast<CUstream>(program_stream);
  // The program's own capture: its execute belongs in it, as without the frontend's replay.
  if (replay::capturing(d, stream)) return cudnnBackendExecute(handle, plan, pack);
  auto never = [&] {
    never_ = true;
    return cudnnBackendExecute(handle, plan, pack);
  };
  const CUcontext context = replay::capture_context(d, stream);
  if (context == nullptr) return never();
  // Only device memory is safe to bake into a graph: a host pointer is read at execute.
  for (std::size_t i = 0; i < count; ++i) {
    CUmemorytype type = CU_MEMORYTYPE_HOST;
    if (pointers[i] != nullptr &&
        (d.cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, reinterpret_cast<CUdeviceptr>(pointers[i])) !=
             CUDA_SUCCESS ||
         type != CU_MEMORYTYPE_DEVICE))
      return never();
  }
  if (capture_stream_ == nullptr || capture_context_ != context) {
    if (capture_stream_ != nullptr) found.destroy_stream(capture_stream_);
    capture_stream_ = replay::make_capture_stream(d, context);
    if (capture_stream_ == nullptr) return never();
    capture_context_ = context;
  }
  // The handle's stream is the Graph's for the length of one execute, then the program's again:
  // set and restored with cuDNN's own calls, so the frontend's handle table stays right.
  if (cudnnSetStream(handle, reinterpret_cast<cudaStream_t>(capture_stream_)) != CUDNN_STATUS_SUCCESS) return never();
  Execute x{handle, plan, pack};
  const replay::Captured captured = replay::capture_graph(d, capture_stream_, Execute::run, &x);
  if (cudnnSetStream(handle, program_stream) != CUDNN_STATUS_SUCCESS) cudnn_fastpath::forget_handle(handle);
  if (captured.exec == nullptr) return never();
  graph_ = captured.exec;
  context_ = context;
  return replay::launch_graph(d, graph_, stream) ? CUDNN_STATUS_SUCCESS : CUDNN_STATUS_EXECUTION_FAILED_CUDA_DRIVER;
}

}  // namespace cudnn_fastpath::detail
