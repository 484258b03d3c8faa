// set_stream: cudnnSetStream for programs that link this library instead of preloading the shim,
// skipped when the handle already holds the stream.
//
// It keeps the shim's table (table/stream_table.h) and its invariant: whenever no call on a handle
// is in flight, a handle the table says holds stream S does hold S in cuDNN. Sequential use is
// exact; a skip is one acquire load and a compare, with no store, lock or shared counter.
//
// The table only knows what passes through it. A program that uses set_stream on a handle must
// therefore also:
//   - create and destroy that handle with create_handle / destroy_handle (cuDNN hands a destroyed
//     handle's address out again), or call forget_handle after cudnnCreate / before cudnnDestroy;
//   - call forget_handle after setting the handle's stream any other way (cudnnSetStream directly,
//     a library that shares the handle);
//   - call forget_stream before destroying a stream a handle may hold (the runtime hands a
//     destroyed stream's address out again, and cuDNN reads properties of a stream when it is set).
// Building a Graph reads the handle's stream once (cudnnGetStream) and records it the same way, so
// a set_stream of that same stream right after a build is already a skip.
//
// Thread safety: every function here may be called from any thread at any time. cuDNN itself
// forbids using one handle from two threads at once; a program that does so anyway with
// set_stream gets an extra cudnnSetStream, never a skip that leaves the wrong stream in place.
#pragma once

#include <cudnn_graph.h>

#include "cudnn_fastpath/export.h"

namespace cudnn_fastpath {

// cudnnSetStream(handle, stream), or CUDNN_STATUS_SUCCESS at once when this library already made
// `handle` hold `stream`. A failed cudnnSetStream is returned as is and nothing is remembered.
CUDNN_FASTPATH_API cudnnStatus_t set_stream(cudnnHandle_t handle, cudaStream_t stream) noexcept;

// cudnnCreate and cudnnDestroy, keeping the table honest about reused handle addresses.
CUDNN_FASTPATH_API cudnnStatus_t create_handle(cudnnHandle_t* handle) noexcept;
CUDNN_FASTPATH_API cudnnStatus_t destroy_handle(cudnnHandle_t handle) noexcept;

// The table no longer trusts what it knew about `handle`: its next set_stream calls cuDNN.
CUDNN_FASTPATH_API void forget_handle(cudnnHandle_t handle) noexcept;

// No handle is taken to hold `stream` any more: call it before cudaStreamDestroy(stream).
CUDNN_FASTPATH_API void forget_stream(cudaStream_t stream) noexcept;

}  // namespace cudnn_fastpath
