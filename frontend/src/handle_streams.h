// The frontend's handle-to-stream table, behind set_stream (stream.h), and how a Graph's build
// reads a handle's stream through it.
#pragma once

#include <cudnn_graph.h>

namespace cudnn_fastpath::detail {

// cudnnGetStream(handle, stream), remembering the answer as set_stream would remember a set: the
// handle holds that stream now, so a set_stream of it right after is a skip.
cudnnStatus_t read_stream(cudnnHandle_t handle, cudaStream_t* stream) noexcept;

// The stream `handle` holds: from the table when it knows (no cuDNN call), else read_stream().
bool known_stream(cudnnHandle_t handle, cudaStream_t* stream) noexcept;

}  // namespace cudnn_fastpath::detail
