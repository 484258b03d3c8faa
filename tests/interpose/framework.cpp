// libscenario_framework.so: stands for a framework library (libtorch_cuda, say) that links
// libcudnn, libcudart and libcuda and is itself loaded with dlopen, often RTLD_LOCAL.
// libscenario_framework8.so is the same source linked against the cuDNN 8 / CUDA 12 stubs.
#include "tests/interpose/scenario_api.h"

namespace {
cudnnStatus_t create(cudnnHandle_t* h) { return cudnnCreate(h); }
cudnnStatus_t destroy(cudnnHandle_t h) { return cudnnDestroy(h); }
cudnnStatus_t set_stream(cudnnHandle_t h, cudaStream_t s) { return cudnnSetStream(h, s); }
cudnnStatus_t get_stream(cudnnHandle_t h, cudaStream_t* s) { return cudnnGetStream(h, s); }
cudaError_t stream_create(cudaStream_t* s) { return cudaStreamCreate(s); }
cudaError_t stream_destroy(cudaStream_t s) { return cudaStreamDestroy(s); }
CUresult cu_stream_create(CUstream* s, unsigned int flags) { return cuStreamCreate(s, flags); }
CUresult cu_stream_destroy_v2(CUstream s) { return cuStreamDestroy_v2(s); }
CUresult cu_stream_destroy_legacy(CUstream s) { return cuStreamDestroy(s); }
}  // namespace

extern "C" __attribute__((visibility("default"))) const ScenarioApi* scenario_framework_api() {
  static const ScenarioApi api = {create,           destroy,
                                  set_stream,       get_stream,
                                  stream_create,    stream_destroy,
                                  stubcudnn_counters, stubcudart_counters,
                                  cu_stream_create, cu_stream_destroy_v2,
                                  cu_stream_destroy_legacy, stubcuda_counters};
  return &api;
}
