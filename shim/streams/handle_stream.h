// A cuDNN handle's stream as the replayed families need it: which stream a call's work goes on,
// and pointing the handle at the shim's capture stream for the length of one captured call.
#pragma once

#include <cuda.h>
#include <cudnn.h>

#include <cstdint>

#include "shim/libraries/real_symbols.h"

namespace cudnn_fastpath::shim {

// The cudnnGetStream a replayed cuDNN call is launched on: the handle table's word when it is
// known (and trusted: skipping on, no verify mode), else cuDNN's answer. False if neither.
bool handle_stream(const RealSymbols& cudnn, cudnnHandle_t handle, std::uint32_t m, cudaStream_t& stream) noexcept;

// Points `handle` at the shim's capture stream for one call and back at `program` after it (the
// legacy families' enter and leave too). A restore that fails leaves the handle table not knowing
// the handle's stream.
int point_handle_at(const RealSymbols& cudnn, cudnnHandle_t handle, CUstream capture) noexcept;
void point_handle_back(const RealSymbols& cudnn, cudnnHandle_t handle, cudaStream_t program) noexcept;

}  // namespace cudnn_fastpath::shim
