// What the test stubs of libcudnn and libcudart record, for the tests to read.
//
// The stubs stand in for the real libraries on machines without a GPU: same sonames
// (libcudnn.so.9, libcudart.so.13), same symbol versions, same signatures (from cuDNN's and
// CUDA's own headers). They do no GPU work; they count calls and remember, per handle, the stream
// that the last successful cudnnSetStream gave it, so a test can tell whether a call reached them.
#pragma once

#include <cstdint>

extern "C" {

struct StubCudnnCounters {
  std::uint64_t set_stream;  // every cudnnSetStream that reached the stub
  std::uint64_t get_stream;
  std::uint64_t create;
  std::uint64_t destroy;
};

// A snapshot of the stub's counters.
StubCudnnCounters stubcudnn_counters(void);

// From now on every cudnnCreate returns a never-used address (true), or the last destroyed one
// (false, the default; STUBCUDNN_FRESH_HANDLES=1 makes true the default).
void stubcudnn_fresh_handles(bool fresh);

// The stream value the stub refuses with CUDNN_STATUS_BAD_PARAM (to test failed sets).
#define STUBCUDNN_REJECTED_STREAM ((cudaStream_t)(std::uintptr_t)0xBAD0)

struct StubCudartCounters {
  std::uint64_t stream_create;
  std::uint64_t stream_destroy;
};
StubCudartCounters stubcudart_counters(void);

}  // extern "C"
