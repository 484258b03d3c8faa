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

// The interposed functions but cudnnSetStream (whose fast path exports.cpp writes out): return
// type, exported name, the shim's function (which takes the caller first), parameters, arguments.
// Their order is that of DispatchV1's members below.
#define CUDNN_FASTPATH_ENTRY_POINTS(X)                                                                  \
  X(cudnnStatus_t, cudnnCreate, create, (cudnnHandle_t * handle), (handle))                             \
  X(cudnnStatus_t, cudnnDestroy, destroy, (cudnnHandle_t handle), (handle))                             \
  X(cudaError_t, cudaStreamDestroy, cuda_stream_destroy, (cudaStream_t stream), (stream))               \
  X(CUresult, cuStreamDestroy_v2, cu_stream_destroy_v2, (CUstream stream), (stream))                    \
  X(CUresult, cuStreamDestroy, cu_stream_destroy, (CUstream stream), (stream))                          \
  X(cudnnStatus_t, cudnnBackendCreateDescriptor, backend_create_descriptor,                             \
    (cudnnBackendDescriptorType_t type, cudnnBackendDescriptor_t * descriptor), (type, descriptor))     \
  X(cudnnStatus_t, cudnnBackendDestroyDescriptor, backend_destroy_descriptor,                           \
    (cudnnBackendDescriptor_t descriptor), (descriptor))                                                \
  X(cudnnStatus_t, cudnnBackendInitialize, backend_initialize, (cudnnBackendDescriptor_t descriptor),   \
    (descriptor))                                                                                       \
  X(cudnnStatus_t, cudnnBackendFinalize, backend_finalize, (cudnnBackendDescriptor_t descriptor),       \
    (descriptor))                                                                                       \
  X(cudnnStatus_t, cudnnBackendSetAttribute, backend_set_attribute,                                     \
    (cudnnBackendDescriptor_t descriptor, cudnnBackendAttributeName_t name,                             \
     cudnnBackendAttributeType_t type, int64_t count, const void* elements),                            \
    (descriptor, name, type, count, elements))                                                          \
  X(cudnnStatus_t, cudnnBackendGetAttribute, backend_get_attribute,                                     \
    (cudnnBackendDescriptor_t descriptor, cudnnBackendAttributeName_t name,                             \
     cudnnBackendAttributeType_t type, int64_t requested, int64_t * count, void* elements),             \
    (descriptor, name, type, requested, count, elements))                                               \
  X(cudnnStatus_t, cudnnBackendExecute, backend_execute,                                                \
    (cudnnHandle_t handle, cudnnBackendDescriptor_t plan, cudnnBackendDescriptor_t pack),               \
    (handle, plan, pack))                                                                               \
  X(cudnnStatus_t, cudnnBackendPopulateCudaGraph, backend_populate_cuda_graph,                          \
    (cudnnHandle_t handle, cudnnBackendDescriptor_t plan, cudnnBackendDescriptor_t pack,                \
     cudaGraph_t graph),                                                                                \
    (handle, plan, pack, graph))                                                                        \
  X(cudnnStatus_t, cudnnBackendUpdateCudaGraph, backend_update_cuda_graph,                              \
    (cudnnHandle_t handle, cudnnBackendDescriptor_t plan, cudnnBackendDescriptor_t pack,                \
     cudaGraph_t graph),                                                                                \
    (handle, plan, pack, graph))

#define CUDNN_FASTPATH_EXPAND(...) __VA_ARGS__

// Every interposed name, in one order: cudnnSetStream, then the list above. dlsym_reach.cpp hands
// out the shim's function for one of these names.
enum class EntryPoint : int {
  cudnnSetStream,
#define CUDNN_FASTPATH_ENTRY_ENUM(result, exported, function, parameters, arguments) exported,
  CUDNN_FASTPATH_ENTRY_POINTS(CUDNN_FASTPATH_ENTRY_ENUM)
#undef CUDNN_FASTPATH_ENTRY_ENUM
  kCount
};
inline constexpr const char* kEntryPointNames[] = {
    "cudnnSetStream",
#define CUDNN_FASTPATH_ENTRY_NAME(result, exported, function, parameters, arguments) #exported,
    CUDNN_FASTPATH_ENTRY_POINTS(CUDNN_FASTPATH_ENTRY_NAME)
#undef CUDNN_FASTPATH_ENTRY_NAME
};
static_assert(sizeof kEntryPointNames / sizeof kEntryPointNames[0] == static_cast<int>(EntryPoint::kCount));

// This copy's own function for `entry` (exports.cpp): its definition, through a hidden alias, never
// whatever the name resolves to in the global scope (a tracer preloaded ahead of the shim).
void* own_entry_point(EntryPoint entry) noexcept;

// Version 1 of the interface between copies. Members are only ever appended; `size` says how many
// a leader has.
struct DispatchV1 {
  std::uint32_t size;
  cudnnStatus_t (*set_stream)(const void* caller, cudnnHandle_t, cudaStream_t);
#define CUDNN_FASTPATH_DISPATCH_MEMBER(result, exported, function, parameters, arguments) \
  result (*function)(const void* caller, CUDNN_FASTPATH_EXPAND parameters);
  CUDNN_FASTPATH_ENTRY_POINTS(CUDNN_FASTPATH_DISPATCH_MEMBER)
#undef CUDNN_FASTPATH_DISPATCH_MEMBER
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
