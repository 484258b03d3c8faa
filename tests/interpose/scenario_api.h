// The cuDNN, CUDA runtime and CUDA driver calls a scenario makes, reached the way the load mode
// says.
#pragma once

#include <cudnn.h>

#include "tests/stub/stub_control.h"
#include "tests/stub/stub_cuda.h"

struct ScenarioApi {
  cudnnStatus_t (*create)(cudnnHandle_t*);
  cudnnStatus_t (*destroy)(cudnnHandle_t);
  cudnnStatus_t (*set_stream)(cudnnHandle_t, cudaStream_t);
  cudnnStatus_t (*get_stream)(cudnnHandle_t, cudaStream_t*);
  cudaError_t (*stream_create)(cudaStream_t*);
  cudaError_t (*stream_destroy)(cudaStream_t);
  StubCudnnCounters (*counters)();
  StubCudartCounters (*cudart_counters)();
  // The driver (libcuda.so.1): cuStreamDestroy_v2 and the legacy, unsuffixed cuStreamDestroy.
  CUresult (*cu_stream_create)(CUstream*, unsigned int);
  CUresult (*cu_stream_destroy_v2)(CUstream);
  CUresult (*cu_stream_destroy_legacy)(CUstream);
  StubCudaCounters (*cuda_counters)();
};

// Exported by libscenario_framework.so: the calls as a framework library that links libcudnn
// makes them (through its own PLT), the way libtorch_cuda does.
extern "C" const ScenarioApi* scenario_framework_api();
