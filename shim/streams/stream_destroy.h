// cudaStreamDestroy and the driver's cuStreamDestroy(_v2) under the shim: the runtime and the
// driver hand a destroyed stream's address to the next stream they create, so no handle may keep
// claiming it.
#pragma once

#include <cuda.h>
#include <cuda_runtime_api.h>

#include "shim/libraries/real_symbols.h"

namespace cudnn_fastpath::shim {

cudaError_t cuda_stream_destroy(const void* caller, cudaStream_t stream) noexcept;
CUresult cu_stream_destroy_v2(const void* caller, CUstream stream) noexcept;
CUresult cu_stream_destroy(const void* caller, CUstream stream) noexcept;

}  // namespace cudnn_fastpath::shim
