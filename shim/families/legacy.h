// cuDNN's legacy API under the shim: the descriptors it records (legacy_descriptors.cpp) and the
// ops it replays (legacy_replay.cpp), one function per entry of entry_points.h's two legacy lists.
#pragma once

#include <cudnn.h>

#include "shim/libraries/dispatch.h"

namespace cudnn_fastpath::shim {

CUDNN_FASTPATH_LEGACY_DESCRIPTOR_ENTRY_POINTS(CUDNN_FASTPATH_DECLARE_SHIM_FUNCTION)
CUDNN_FASTPATH_LEGACY_OP_ENTRY_POINTS(CUDNN_FASTPATH_DECLARE_SHIM_FUNCTION)

}  // namespace cudnn_fastpath::shim
