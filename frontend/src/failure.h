// How the frontend turns a failed cuDNN call into a Status.
#pragma once

#include <cudnn_graph.h>

#include <string>

#include "cudnn_fastpath/status.h"

namespace cudnn_fastpath::detail {

// "<what>: <cuDNN's status name> (<cuDNN's last error message>)", with `status` as the code.
Status cudnn_failure(cudnnStatus_t status, const std::string& what);

}  // namespace cudnn_fastpath::detail
