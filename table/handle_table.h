// The handle table the shim and the frontend each keep: one size for both.
#pragma once

#include <cstddef>

#include "table/stream_table.h"

namespace cudnn_fastpath {

// 4096 slots of 16 bytes: 64 KiB of zero pages until used. Frameworks hold one handle per thread
// and device; past this many live handles, calls on the handles that found no slot are forwarded.
inline constexpr std::size_t kHandleTableCapacity = 4096;

using HandleTable = StreamTable<kHandleTableCapacity>;

}  // namespace cudnn_fastpath
