// The shim's one handle-to-stream table.
#pragma once

#include "table/handle_table.h"

namespace cudnn_fastpath::shim {

using cudnn_fastpath::HandleTable;

HandleTable& handle_table() noexcept;

}  // namespace cudnn_fastpath::shim
