// The CUDA driver functions graph replay calls, as one table: the shim takes them from the driver
// its caller reaches (shim/libraries/real_symbols.h, whose RealSymbols is a GraphDriver), the
// frontend from the loaded libcuda.so.1 (frontend/src/execute_replay.cpp).
#pragma once

#include <cuda.h>

namespace cudnn_fastpath::replay {

// F(C, name, required): C passed through to F untouched; `required`: replay needs it (a driver
// without cuStreamGetGreenCtx, older than green contexts, has none; the calls after cuGraphDestroy
// are relocation's, graph_relocation.h, which a driver without them does without).
#define CUDNN_FASTPATH_GRAPH_DRIVER(F, C)         \
  F(C, cuStreamBeginCapture_v2, true)             \
  F(C, cuStreamEndCapture, true)                  \
  F(C, cuStreamIsCapturing, true)                 \
  F(C, cuStreamGetCtx, true)                      \
  F(C, cuStreamGetGreenCtx, false)                \
  F(C, cuStreamCreate, true)                      \
  F(C, cuCtxGetCurrent, true)                     \
  F(C, cuCtxSetCurrent, true)                     \
  F(C, cuPointerGetAttribute, true)               \
  F(C, cuGraphInstantiateWithFlags, true)         \
  F(C, cuGraphLaunch, true)                       \
  F(C, cuGraphExecDestroy, true)                  \
  F(C, cuGraphDestroy, true)                      \
  F(C, cuGraphGetNodes, false)                    \
  F(C, cuGraphNodeGetType, false)                 \
  F(C, cuGraphKernelNodeGetParams_v2, false)      \
  F(C, cuFuncGetParamInfo, false)                 \
  F(C, cuKernelGetParamInfo, false)               \
  F(C, cuGraphExecKernelNodeSetParams_v2, false)  \
  F(C, cuGraphMemsetNodeGetParams, false)         \
  F(C, cuGraphExecMemsetNodeSetParams, false)

struct GraphDriver {
#define CUDNN_FASTPATH_GRAPH_DRIVER_MEMBER(C, name, required) decltype(&::name) name = nullptr;
  CUDNN_FASTPATH_GRAPH_DRIVER(CUDNN_FASTPATH_GRAPH_DRIVER_MEMBER, )
#undef CUDNN_FASTPATH_GRAPH_DRIVER_MEMBER

  // Whether it has every function replay needs.
  bool complete() const noexcept {
    bool all = true;
#define CUDNN_FASTPATH_GRAPH_DRIVER_PRESENT(C, name, required) all = all && (!(required) || name != nullptr);
    CUDNN_FASTPATH_GRAPH_DRIVER(CUDNN_FASTPATH_GRAPH_DRIVER_PRESENT, )
#undef CUDNN_FASTPATH_GRAPH_DRIVER_PRESENT
    return all;
  }
};

}  // namespace cudnn_fastpath::replay
