// The exported names: the only symbols the shim's version script lets out.
//
// Each interposed function hands its own return address on as `caller`: the object that made the
// call decides which library it reaches (real_symbols.h), and a copy of the shim that does not
// lead passes it on to the one that does (dispatch.h). They are noexcept and fail open: the shim is
// built without exceptions, and nothing can unwind out of these into the caller.
#include <cuda.h>
#include <cudnn.h>

#include "cudnn_fastpath/shim_control.h"
#include "shim/code_layout.h"
#include "shim/dispatch.h"
#include "shim/features.h"
#include "shim/report.h"
#include "shim/set_stream.h"
#include "shim/stream_destroy.h"
#include "shim/variant_packs.h"

#define CUDNN_FASTPATH_CALLER __builtin_return_address(0)

namespace cudnn_fastpath::shim {

const DispatchV1& own_dispatch() noexcept {
  static constexpr DispatchV1 kDispatch = {
      sizeof(DispatchV1),
      set_stream_from,
      create,
      destroy,
      cuda_stream_destroy,
      cu_stream_destroy_v2,
      cu_stream_destroy,
      backend_create_descriptor,
      backend_destroy_descriptor,
      backend_initialize,
      backend_finalize,
      backend_set_attribute,
      backend_get_attribute,
      backend_execute,
      backend_populate_cuda_graph,
      backend_update_cuda_graph,
      features,
      set_features,
      fill_stats,
  };
  return kDispatch;
}

}  // namespace cudnn_fastpath::shim

namespace shim = cudnn_fastpath::shim;

#pragma GCC visibility push(default)
extern "C" {

// Aligned to a cache line: the fast path is then two lines whatever the code before it, and its
// cost does not move by a third of a nanosecond from one build to the next.
__attribute__((aligned(64))) CUDNN_FASTPATH_HOT cudnnStatus_t CUDNNWINAPI cudnnSetStream(cudnnHandle_t handle, cudaStream_t streamId) {
  return shim::set_stream(handle, streamId, CUDNN_FASTPATH_CALLER);
}

cudnnStatus_t CUDNNWINAPI cudnnCreate(cudnnHandle_t* handle) {
  return shim::create(CUDNN_FASTPATH_CALLER, handle);
}

cudnnStatus_t CUDNNWINAPI cudnnDestroy(cudnnHandle_t handle) {
  return shim::destroy(CUDNN_FASTPATH_CALLER, handle);
}

cudaError_t CUDARTAPI cudaStreamDestroy(cudaStream_t stream) {
  return shim::cuda_stream_destroy(CUDNN_FASTPATH_CALLER, stream);
}

CUresult CUDAAPI cuStreamDestroy_v2(CUstream stream) {
  return shim::cu_stream_destroy_v2(CUDNN_FASTPATH_CALLER, stream);
}

CUresult CUDAAPI cuStreamDestroy(CUstream stream) {
  return shim::cu_stream_destroy(CUDNN_FASTPATH_CALLER, stream);
}

CUDNN_FASTPATH_HOT cudnnStatus_t CUDNNWINAPI cudnnBackendCreateDescriptor(cudnnBackendDescriptorType_t type,
                                                       cudnnBackendDescriptor_t* descriptor) {
  return shim::backend_create_descriptor(CUDNN_FASTPATH_CALLER, type, descriptor);
}

CUDNN_FASTPATH_HOT cudnnStatus_t CUDNNWINAPI cudnnBackendDestroyDescriptor(cudnnBackendDescriptor_t descriptor) {
  return shim::backend_destroy_descriptor(CUDNN_FASTPATH_CALLER, descriptor);
}

cudnnStatus_t CUDNNWINAPI cudnnBackendInitialize(cudnnBackendDescriptor_t descriptor) {
  return shim::backend_initialize(CUDNN_FASTPATH_CALLER, descriptor);
}

CUDNN_FASTPATH_HOT cudnnStatus_t CUDNNWINAPI cudnnBackendFinalize(cudnnBackendDescriptor_t descriptor) {
  return shim::backend_finalize(CUDNN_FASTPATH_CALLER, descriptor);
}

CUDNN_FASTPATH_HOT cudnnStatus_t CUDNNWINAPI cudnnBackendSetAttribute(cudnnBackendDescriptor_t descriptor,
                                                   cudnnBackendAttributeName_t name,
                                                   cudnnBackendAttributeType_t type, int64_t count,
                                                   const void* elements) {
  return shim::backend_set_attribute(CUDNN_FASTPATH_CALLER, descriptor, name, type, count, elements);
}

cudnnStatus_t CUDNNWINAPI cudnnBackendGetAttribute(cudnnBackendDescriptor_t const descriptor,
                                                   cudnnBackendAttributeName_t name,
                                                   cudnnBackendAttributeType_t type, int64_t requested,
                                                   int64_t* count, void* elements) {
  return shim::backend_get_attribute(CUDNN_FASTPATH_CALLER, descriptor, name, type, requested, count,
                                     elements);
}

CUDNN_FASTPATH_HOT cudnnStatus_t CUDNNWINAPI cudnnBackendExecute(cudnnHandle_t handle, cudnnBackendDescriptor_t plan,
                                              cudnnBackendDescriptor_t pack) {
  return shim::backend_execute(CUDNN_FASTPATH_CALLER, handle, plan, pack);
}

cudnnStatus_t CUDNNWINAPI cudnnBackendPopulateCudaGraph(cudnnHandle_t handle, cudnnBackendDescriptor_t plan,
                                                        cudnnBackendDescriptor_t pack, cudaGraph_t graph) {
  return shim::backend_populate_cuda_graph(CUDNN_FASTPATH_CALLER, handle, plan, pack, graph);
}

cudnnStatus_t CUDNNWINAPI cudnnBackendUpdateCudaGraph(cudnnHandle_t handle, cudnnBackendDescriptor_t plan,
                                                      cudnnBackendDescriptor_t pack, cudaGraph_t graph) {
  return shim::backend_update_cuda_graph(CUDNN_FASTPATH_CALLER, handle, plan, pack, graph);
}

unsigned cudnn_fastpath_features(void) { return shim::features(); }

unsigned cudnn_fastpath_set_features(unsigned features) { return shim::set_features(features); }

int cudnn_fastpath_stats(cudnn_fastpath_stats_t* out, size_t size) { return shim::fill_stats(out, size); }

const char* cudnn_fastpath_stats_fields(void) { return shim::stats_fields(); }

// For other copies of the shim only (dispatch.h); not part of the public interface.
const shim::DispatchV1* cudnn_fastpath_dispatch_v1(void) { return &shim::own_dispatch(); }

}  // extern "C"
#pragma GCC visibility pop
