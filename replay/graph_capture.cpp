// Capture, instantiation and launch (graph_capture.h): the only file of the libraries that makes a
// CUDA graph.
#include "replay/graph_capture.h"

namespace cudnn_fastpath::replay {

CUcontext capture_context(const GraphDriver& driver, CUstream stream) noexcept {
  CUcontext context = nullptr;
  if (driver.cuStreamGetCtx(stream, &context) != CUDA_SUCCESS) return nullptr;
  CUgreenCtx green = nullptr;
  if (driver.cuStreamGetGreenCtx != nullptr && driver.cuStreamGetGreenCtx(stream, &green) == CUDA_SUCCESS &&
      green != nullptr)
    return nullptr;
  return context;
}

CUstream make_capture_stream(const GraphDriver& driver, CUcontext context) noexcept {
  CUcontext current = nullptr;
  if (driver.cuCtxGetCurrent(&current) != CUDA_SUCCESS) return nullptr;
  if (current != context && driver.cuCtxSetCurrent(context) != CUDA_SUCCESS) return nullptr;
  CUstream made = nullptr;
  const CUresult created = driver.cuStreamCreate(&made, CU_STREAM_NON_BLOCKING);
  if (current != context) driver.cuCtxSetCurrent(current);
  return created == CUDA_SUCCESS ? made : nullptr;
}

Captured capture_graph(const GraphDriver& driver, CUstream on, int (*run)(void* context, CUstream on), void* context,
                       bool keep_graph) noexcept {
  Captured out;
  CUgraph graph = nullptr;
  CUresult result = driver.cuStreamBeginCapture_v2(on, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
  int called = 0;
  if (result == CUDA_SUCCESS) {
    called = run(context, on);
    result = driver.cuStreamEndCapture(on, &graph);
  }
  if (result != CUDA_SUCCESS || called != 0 || graph == nullptr) {
    if (graph != nullptr) driver.cuGraphDestroy(graph);
    out.failed = called != 0 ? "a call under capture" : "a capture";
    out.code = called != 0 ? called : static_cast<int>(result);
    return out;
  }
  result = driver.cuGraphInstantiateWithFlags(&out.exec, graph, 0);
  if (keep_graph && result == CUDA_SUCCESS && out.exec != nullptr) out.graph = graph;
  else driver.cuGraphDestroy(graph);
  if (result != CUDA_SUCCESS || out.exec == nullptr) {
    out.exec = nullptr;
    out.failed = "an instantiation";
    out.code = static_cast<int>(result);
  }
  return out;
}

void destroy_graph(const GraphDriver& driver, CUgraphExec exec) noexcept {
  if (exec != nullptr) driver.cuGraphExecDestroy(exec);
}

}  // namespace cudnn_fastpath::replay
