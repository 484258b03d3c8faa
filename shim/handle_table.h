// The shim's one handle-to-stream table.
#pragma once

#include <cstddef>

#include "table/stream_table.h"

namespace cudnn_fastpath::shim {

// 4096 slots of 16 bytes: 64 KiB of zero pages until used. Frameworks hold one handle per thread
// and device; past this many live handles, calls on the handles that found no slot are forwarded.
inline constexpr std::size_t kHandleTableCapacity = 4096;

using HandleTable = StreamTable<kHandleTableCapacity>;

HandleTable& handle_table() noexcept;

}  // namespace cudnn_fastpath::shim
