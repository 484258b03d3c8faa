// A stub "kernel": what a CUfunction of the stub libraries points at, shared by the stub driver
// (stub_cuda*.cpp), which records launches of it as kernel nodes and answers cuFuncGetParamInfo
// from it, and the stub libraries, which define kernels and launch them (stub_kernel_launch.h).
//
// Like a real kernel, it is a function of its argument bytes alone: `run` gets the bytes of the
// parameter buffer, laid out as `params` say (offset and size of each parameter, in order, as
// cuFuncGetParamInfo reports them), and reads and writes memory only through the addresses in
// them (host memory stands for device memory in the stubs). A graph's kernel node keeps a copy
// of the bytes it was launched with; each launch runs `run` on the node's bytes as they are then,
// so cuGraphExecKernelNodeSetParams_v2 changes what a launch does.
#pragma once

#include <cstddef>
#include <cstdint>

extern "C" {

struct StubKernelParam {
  std::uint32_t offset;  // in the parameter buffer
  std::uint32_t size;
};

#define STUB_KERNEL_MAGIC 0x4c4e524b42545553ull  // "STUBKRNL": the driver refuses any other CUfunction

struct StubKernel {
  std::uint64_t magic;      // STUB_KERNEL_MAGIC
  const char* name;
  // The kernel's work on `args` (args_size bytes, aligned to 128).
  void (*run)(const StubKernel* self, const unsigned char* args);
  const StubKernelParam* params;
  std::uint32_t param_count;
  std::uint32_t args_size;  // the parameter buffer's size: at least the end of the last parameter
  const void* context;      // the library's, for `run`
};

}  // extern "C"
