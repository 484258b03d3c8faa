// The real functions behind the interposed ones. Each calling object gets the library its own
// calls would reach without the shim (two frameworks may each bring their own cuDNN), found once
// per caller and library, without a lock, and published with an atomic.
#pragma once

#include <cuda.h>
#include <cudnn.h>

#include <cstdint>

// cuda.h renames cuStreamDestroy to cuStreamDestroy_v2. libcuda exports both names; a program
// built against an old cuda.h calls the first one, which the shim interposes as well.
#undef cuStreamDestroy
extern "C" CUresult CUDAAPI cuStreamDestroy(CUstream stream);

namespace cudnn_fastpath::shim {

enum class Library : int { kCudnn, kCudart, kCuda, kCount };

// The one table of real symbols: name, library, and whether a library without it is refused (the
// others are newer than some versions the shim may meet: a caller that calls one has it). The
// driver calls after cuStreamDestroy are the replay engine's (replay_engine.cpp): without them, every
// execute is direct.
#define CUDNN_FASTPATH_REAL_SYMBOLS(X)             \
  X(cudnnSetStream, kCudnn, true)                  \
  X(cudnnGetStream, kCudnn, true)                  \
  X(cudnnCreate, kCudnn, true)                     \
  X(cudnnDestroy, kCudnn, true)                    \
  X(cudnnBackendCreateDescriptor, kCudnn, false)   \
  X(cudnnBackendDestroyDescriptor, kCudnn, false)  \
  X(cudnnBackendInitialize, kCudnn, false)         \
  X(cudnnBackendFinalize, kCudnn, false)           \
  X(cudnnBackendSetAttribute, kCudnn, false)       \
  X(cudnnBackendGetAttribute, kCudnn, false)       \
  X(cudnnBackendExecute, kCudnn, false)            \
  X(cudnnBackendPopulateCudaGraph, kCudnn, false)  \
  X(cudnnBackendUpdateCudaGraph, kCudnn, false)    \
  X(cudaStreamDestroy, kCudart, true)              \
  X(cuStreamDestroy_v2, kCuda, true)               \
  X(cuStreamDestroy, kCuda, false)                 \
  X(cuStreamBeginCapture_v2, kCuda, false)         \
  X(cuStreamEndCapture, kCuda, false)              \
  X(cuStreamIsCapturing, kCuda, false)             \
  X(cuStreamGetCtx, kCuda, false)                  \
  X(cuStreamGetGreenCtx, kCuda, false)             \
  X(cuStreamGetId, kCuda, false)                   \
  X(cuStreamCreate, kCuda, false)                  \
  X(cuCtxGetCurrent, kCuda, false)                 \
  X(cuCtxSetCurrent, kCuda, false)                 \
  X(cuPointerGetAttribute, kCuda, false)           \
  X(cuGraphInstantiateWithFlags, kCuda, false)     \
  X(cuGraphLaunch, kCuda, false)                   \
  X(cuGraphExecDestroy, kCuda, false)              \
  X(cuGraphDestroy, kCuda, false)

// Typed from the libraries' own headers. A binding fills only its own library's members.
struct RealSymbols {
#define CUDNN_FASTPATH_DECLARE_POINTER(name, library, required) decltype(&::name) name = nullptr;
  CUDNN_FASTPATH_REAL_SYMBOLS(CUDNN_FASTPATH_DECLARE_POINTER)
#undef CUDNN_FASTPATH_DECLARE_POINTER
};

// How a library's symbols were found for a caller, in the order the steps are tried.
enum class FoundBy : int {
  kNotFound,     // nothing worked: calls fail with a clear message
  kRtldNext,     // dlsym(RTLD_NEXT): next in the global scope, where every caller looks first
  kCallerScope,  // the calling object's own dependencies (a framework opened RTLD_LOCAL: PyTorch)
  kNoload,       // dlopen(soname, RTLD_NOLOAD): loaded somewhere, by its usual soname
  kLoadedWalk,   // loaded under another file name (a renamed wheel copy, say)
  kEnvPath,      // CUDNN_FASTPATH_CUDNN / CUDNN_FASTPATH_CUDART
  kDlsymHandle,  // the library handle a caller looked the names up in (dlsym_reach.h)
};

// One library as found for one or more callers. Immutable once published.
struct Binding {
  RealSymbols real;
  Library library = Library::kCudnn;
  FoundBy found_by = FoundBy::kNotFound;
  std::uintptr_t base = 0;  // load bias of the object defining them: the library's identity
  char object[512] = {};    // its file
};

// binding_for(), which gives the binding for a calling object, is in callers.h.

// For the report: the first binding published for `library` (nullptr if none), and how many
// distinct objects were bound for it.
const Binding* first_binding(Library library) noexcept;
int distinct_bindings(Library library) noexcept;

// How the first binding of `library` was found (to_string of it), "not_found" when it was looked
// for in vain, "unused" when nothing needed it.
const char* how_found(Library library) noexcept;

// A short name for reports: "rtld_next", "caller_scope", "noload", "loaded_walk", ...
const char* to_string(FoundBy found_by) noexcept;

}  // namespace cudnn_fastpath::shim
