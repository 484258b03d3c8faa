// The frontend_bench variant that runs the same matmul through NVIDIA's cudnn-frontend (C++,
// header-only), built only where its headers are found (its pip wheel carries them): the issue's
// "beside cudnn-frontend's own execute". In a file of its own: the headers are heavy.
#pragma once

#include <cudnn.h>

#include <cstdint>
#include <functional>
#include <string>

// Builds the m x n x k bf16 matmul (fp32 compute) with cudnn-frontend's graph API and returns the
// loop that calls cudnnSetStream + graph.execute `calls` times (returning how many failed), or an
// empty function with `error` set. `version` gets cudnn-frontend's version.
std::function<int(int)> cudnn_frontend_matmul(cudnnHandle_t handle, cudaStream_t stream, std::int64_t m,
                                              std::int64_t n, std::int64_t k, void* a, void* b, void* c,
                                              std::string& error, std::string& version);
