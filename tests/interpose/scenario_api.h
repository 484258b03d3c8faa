// The cuDNN and CUDA runtime calls a scenario makes, reached the way the load mode says.
#pragma once

#include <cudnn.h>

#include "tests/stub/stub_control.h"

struct ScenarioApi {
  cudnnStatus_t (*create)(cudnnHandle_t*);
  cudnnStatus_t (*destroy)(cudnnHandle_t);
  cudnnStatus_t (*set_stream)(cudnnHandle_t, cudaStream_t);
  cudnnStatus_t (*get_stream)(cudnnHandle_t, cudaStream_t*);
  cudaError_t (*stream_create)(cudaStream_t*);
  cudaError_t (*stream_destroy)(cudaStream_t);
  StubCudnnCounters (*counters)();
};

// Exported by libscenario_framework.so: the calls as a framework library that links libcudnn
// makes them (through its own PLT), the way libtorch_cuda does.
extern "C" const ScenarioApi* scenario_framework_api();
