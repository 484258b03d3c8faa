// One table of handles per process, however many copies of the shim are loaded.
//
// Every copy carries an ELF note (loaded_objects.cpp). The first copy in the loader's order (the
// preloaded one, or else the first one loaded) leads; any other copy passes each call, with the
// address of the code that made it, to the leader through the leader's exported
// cudnn_fastpath_dispatch_v1(). Copies are never unloaded (-z nodelete), so the leader stays the
// first copy for the life of the process, and the table it keeps is the only one.
#pragma once

#include <cuda.h>
#include <cudnn.h>

#include <cstddef>
#include <cstdint>

#include "cudnn_fastpath/shim_control.h"

#include "shim/real_symbols.h"

namespace cudnn_fastpath::shim {

// Version 1 of the interface between copies. Members are only ever appended; `size` says how many
// a leader has.
struct DispatchV1 {
  std::uint32_t size;
  cudnnStatus_t (*set_stream)(const void* caller, cudnnHandle_t, cudaStream_t);
  cudnnStatus_t (*create)(const void* caller, cudnnHandle_t*);
  cudnnStatus_t (*destroy)(const void* caller, cudnnHandle_t);
  cudaError_t (*cuda_stream_destroy)(const void* caller, cudaStream_t);
  CUresult (*cu_stream_destroy_v2)(const void* caller, CUstream);
  CUresult (*cu_stream_destroy)(const void* caller, CUstream);
  cudnnStatus_t (*backend_create_descriptor)(const void* caller, cudnnBackendDescriptorType_t,
                                             cudnnBackendDescriptor_t*);
  cudnnStatus_t (*backend_destroy_descriptor)(const void* caller, cudnnBackendDescriptor_t);
  cudnnStatus_t (*backend_initialize)(const void* caller, cudnnBackendDescriptor_t);
  cudnnStatus_t (*backend_finalize)(const void* caller, cudnnBackendDescriptor_t);
  cudnnStatus_t (*backend_set_attribute)(const void* caller, cudnnBackendDescriptor_t,
                                         cudnnBackendAttributeName_t, cudnnBackendAttributeType_t,
                                         int64_t, const void*);
  cudnnStatus_t (*backend_get_attribute)(const void* caller, cudnnBackendDescriptor_t,
                                         cudnnBackendAttributeName_t, cudnnBackendAttributeType_t,
                                         int64_t, int64_t*, void*);
  cudnnStatus_t (*backend_execute)(const void* caller, cudnnHandle_t, cudnnBackendDescriptor_t,
                                   cudnnBackendDescriptor_t);
  cudnnStatus_t (*backend_populate_cuda_graph)(const void* caller, cudnnHandle_t,
                                               cudnnBackendDescriptor_t, cudnnBackendDescriptor_t,
                                               cudaGraph_t);
  cudnnStatus_t (*backend_update_cuda_graph)(const void* caller, cudnnHandle_t,
                                             cudnnBackendDescriptor_t, cudnnBackendDescriptor_t,
                                             cudaGraph_t);
  unsigned (*features)();
  unsigned (*set_features)(unsigned);
  int (*stats)(cudnn_fastpath_stats_t*, std::size_t);
};

// This copy's own table (exports.cpp).
const DispatchV1& own_dispatch() noexcept;

// The leader's table if another copy leads, else nullptr. Calls the loader (dl_iterate_phdr,
// dlopen with RTLD_NOLOAD, dlsym) without holding any lock of the shim.
const DispatchV1* elect_leader() noexcept;

}  // namespace cudnn_fastpath::shim
