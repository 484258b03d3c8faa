// The CUDA driver API as the tests and the stub libcuda.so.1 see it.
//
// cuda.h maps cuStreamDestroy to cuStreamDestroy_v2 with a macro, as it does for every function
// that got a _v2; programs built against old headers still call the unsuffixed symbol, which
// the real libcuda.so.1 keeps exporting. The macro is undone here so that the legacy function
// can be defined (by the stub) and called (by the scenarios) under its own name.
#pragma once

#include <cuda.h>

#include <cstddef>
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

// Destroys `stream` the way a program linked to the CUDA runtime statically does: inside the
// driver, through no exported name an interposer could see. cuStreamGetId gives every stream an id
// that no other stream ever had, however its address comes back.
void stubcuda_destroy_unseen(CUstream stream);

// ---- stream capture and graphs (graph replay's tests) ------------------------------------------
//
// The stub models what the shim's graph replay relies on: a stream captures what is recorded into
// it between cuStreamBeginCapture_v2 and cuStreamEndCapture (the stub libcudnn's execute records
// itself, stubcuda_capture_node, instead of running); a graph, instantiated, replays exactly those
// records at each cuGraphLaunch (on the launching thread, before the launch returns). Contexts are
// addresses: every thread starts with STUBCUDA_PRIMARY_CONTEXT current, a stream belongs to the
// context current when it was made (any other address to the primary one, unless a test says
// otherwise). Memory is host memory unless a test declares a range device memory.

#define STUBCUDA_PRIMARY_CONTEXT ((CUcontext)(std::uintptr_t)0xC0C0000)

struct StubCudaGraphCounters {
  std::uint64_t captures_begun;
  std::uint64_t global_mode_captures;  // begun in CU_STREAM_CAPTURE_MODE_GLOBAL
  std::uint64_t captures_ended;        // with a graph
  std::uint64_t instantiated;
  std::uint64_t live_execs;            // instantiated and not destroyed
  std::uint64_t launches;              // that ran their records
  std::uint64_t launches_into_capture; // on a capturing stream (recorded into it, not run)
  std::uint64_t foreign_launches;      // of a graph instantiated in another process (a fork's parent)
  std::uint64_t bad_launches;          // of a destroyed or unknown graph
  std::uint64_t streams_created;       // by cuStreamCreate
  std::uint64_t foreign_destroys;      // of a graph instantiated in another process
  std::uint64_t foreign_captures;      // refused: on a stream made in another process
  std::uint64_t kernel_node_updates;   // cuGraphExecKernelNodeSetParams_v2 calls that succeeded
  std::uint64_t memset_node_updates;   // cuGraphExecMemsetNodeSetParams calls that succeeded
  std::uint64_t capture_queries;       // cuStreamIsCapturing calls
};
StubCudaGraphCounters stubcuda_graph_counters(void);

// A model of host time, the clock the shim's relocation trial reads where a driver exports it
// (shim/engine/shape_cache.cpp): each thread's, in ns, advanced by what a call would cost on a GPU
// machine and by nothing else. A library's own launch of a node (a direct call's kernel or memset)
// costs DIRECT, a graph launch that runs LAUNCH, a node update UPDATE; the environment's
// STUBCUDA_HOST_COSTS=DIRECT,LAUNCH,UPDATE sets them (default 4000,1700,600: a legacy batch norm,
// a graph launch and an update on an H100, docs/graph-costs.md's run 89).
unsigned long long cudnn_fastpath_model_clock_ns(void);
// The stream the last launch that ran was on.
CUstream stubcuda_last_launch_stream(void);

// Records `size` bytes at `blob` into `stream`'s capture, to be replayed by run(copy of blob) at
// each launch of a graph made from it: 1 when recorded, 0 when the stream is not capturing. The
// node is opaque: a host node (CU_GRAPH_NODE_TYPE_HOST) to cuGraphNodeGetType, whose work no
// update can move.
int stubcuda_capture_node(CUstream stream, void (*run)(const void* blob), const void* blob, std::size_t size);

// ---- kernel nodes (stub_kernel.h), memset nodes and tensor maps --------------------------------
//
// A stub library launches a kernel (a CUfunction that points at a StubKernel of its own) with
// stubcuda_capture_kernel: on a capturing stream it records a kernel node holding a copy of the
// `size` argument bytes (1), otherwise it records nothing (0) and the library runs the kernel
// itself, kernel->run on the same bytes; -1: not a stub kernel, or `size` is not its args_size.
// The node is then what the real driver makes of a launch: cuGraphGetNodes lists it (nodes in
// the order they were captured), cuGraphNodeGetType says CU_GRAPH_NODE_TYPE_KERNEL,
// cuGraphKernelNodeGetParams_v2 gives its function, a constant grid and block, its context and
// its argument bytes: as `kernelParams` (a pointer to each parameter, laid out as
// cuFuncGetParamInfo says; `kern` is then the function as a CUkernel, as for the runtime's
// launches) or, with `use_extra`, as `extra` = {CU_LAUNCH_PARAM_BUFFER_POINTER, bytes,
// CU_LAUNCH_PARAM_BUFFER_SIZE, &size, CU_LAUNCH_PARAM_END} (and `kern` NULL, as for cuLaunchKernel).
// cuFuncGetParamInfo and cuKernelGetParamInfo know the kernels recorded so far.
//
// cuGraphExecKernelNodeSetParams_v2 rewrites the exec's copy of a node (named by its handle in the
// graph the exec was instantiated from, which must still be alive: the stub is strict where the
// driver's documentation only says the node must remain in that graph): the same function only,
// exactly one of kernelParams and extra (a buffer of the kernel's args_size). Each launch runs each
// kernel node on its arguments as they are at the launch. cuMemsetD8Async/D16Async/D32Async record
// a 1-D memset node on a capturing stream (read with cuGraphMemsetNodeGetParams, updated with
// cuGraphExecMemsetNodeSetParams: destination and value, nothing else) and run at once on any
// other. cuTensorMapReplaceAddress rewrites the address of a tensor map in the stub's encoding
// (stub_tensor_map.h), which no 8-byte word of the map holds.
int stubcuda_capture_kernel(CUstream stream, CUfunction function, const void* args, std::size_t size, int use_extra);

// [begin, begin + size) is device memory from now on.
void stubcuda_add_device_memory(std::uintptr_t begin, std::size_t size);
// `stream` belongs to `context`; `green`: a green context's stream.
void stubcuda_set_stream_context(CUstream stream, CUcontext context, int green);
// The next `n` captures end invalidated (no graph); the next `n` instantiations fail.
void stubcuda_fail_captures(int n);
void stubcuda_fail_instantiations(int n);
// Every launch from now on returns `result` without running (CUDA_SUCCESS: launches work).
void stubcuda_fail_launches(CUresult result);
// The `n`-th cuStreamIsCapturing from now (1: the next) answers that its stream captures, once,
// whatever stream it asks of: a capture another thread begins between two questions of a call (the
// legacy stream under another thread's global capture). 0: none.
void stubcuda_capturing_at_query(int n);

}  // extern "C"
