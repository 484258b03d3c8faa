// The CUDA driver API as the tests and the stub libcuda.so.1 see it.
//
// cuda.h maps cuStreamDestroy to cuStreamDestroy_v2 with a macro, as it does for every function
// that got a _v2; programs built against old headers still call the unsuffixed symbol, which
// the real libcuda.so.1 keeps exporting. The macro is undone here so that the legacy function
// can be defined (by the stub) and called (by the scenarios) under its own name.
#pragma once

#include <cuda.h>

#include <cstdint>

#undef cuStreamDestroy

extern "C" {

// The legacy entry point (declared again: cuda.h's own declaration was renamed by the macro).
CUresult CUDAAPI cuStreamDestroy(CUstream hStream);

struct StubCudaCounters {
  std::uint64_t stream_create;
  std::uint64_t stream_destroy_v2;      // cuStreamDestroy_v2 calls that destroyed a stream
  std::uint64_t stream_destroy_legacy;  // cuStreamDestroy calls that destroyed a stream
};

// A snapshot of the stub's counters.
StubCudaCounters stubcuda_counters(void);

}  // extern "C"
