// What the shim reports: the statistics at exit (lines on stderr and/or a JSON file, when asked
// for), and the counts on request (cudnn_fastpath_stats of the public header).
#pragma once

#include <cstddef>

#include "cudnn_fastpath/shim_control.h"

namespace cudnn_fastpath::shim {

// cudnn_fastpath_stats and cudnn_fastpath_stats_fields, for this copy of the shim.
int fill_stats(cudnn_fastpath_stats_t* out, std::size_t size) noexcept;
const char* stats_fields() noexcept;

}  // namespace cudnn_fastpath::shim
