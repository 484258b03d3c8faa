// The real functions behind the interposed ones. Each calling object gets the library its own
// calls would reach without the shim (two frameworks may each bring their own cuDNN), found once
// per caller and library, without a lock, and published with an atomic.
#pragma once

#include <cuda.h>
#include <cublasLt.h>
#include <cublas_api.h>
#include <cudnn.h>

#include "replay/graph_driver.h"
#include "shim/libraries/entry_points.h"

#include <cstdint>

// cuda.h renames cuStreamDestroy to cuStreamDestroy_v2. libcuda exports both names; a program
// built against an old cuda.h calls the first one, which the shim interposes as well.
#undef cuStreamDestroy
extern "C" CUresult CUDAAPI cuStreamDestroy(CUstream stream);

// Not the driver's: a driver that models the host time of the libraries' calls exports it (the test
// stubs' libcuda.so.1, whose calls advance a clock of each thread's by what they would cost on a GPU
// machine); the real one does not. Relocation's trial reads it where it exists (shape_cache.cpp).
extern "C" unsigned long long cudnn_fastpath_model_clock_ns(void);

namespace cudnn_fastpath::shim {

enum class Library : int { kCudnn, kCudart, kCuda, kCublasLt, kCublas, kCount };

// The functions the shim calls but does not interpose: X(name, library, 0), and the driver's that
// graph replay calls (replay/graph_driver.h: without them, every call is direct). With every entry
// point of entry_points.h (whose entries start with the same two fields), the one table of real
// symbols: CUDNN_FASTPATH_REAL_SYMBOLS.
#define CUDNN_FASTPATH_CALLED_ONLY(X) \
  X(cudnnSetStream, kCudnn, 0)        \
  X(cudnnGetStream, kCudnn, 0)        \
  X(cuStreamGetId, kCuda, 0)          \
  X(cudnn_fastpath_model_clock_ns, kCuda, 0)
#define CUDNN_FASTPATH_GRAPH_DRIVER_SYMBOL(X, name, required) X(name, kCuda, 0)

#define CUDNN_FASTPATH_REAL_SYMBOLS(X) \
  CUDNN_FASTPATH_CALLED_ONLY(X) CUDNN_FASTPATH_GRAPH_DRIVER(CUDNN_FASTPATH_GRAPH_DRIVER_SYMBOL, X) CUDNN_FASTPATH_ENTRY_POINTS(X)

// The functions a library must have for the shim to use it (a binding without one is refused,
// the call fails with a clear message); the others are newer than some versions the shim may
// meet: a caller that calls one has it.
inline constexpr const char* kRequiredSymbols[] = {"cudnnSetStream",        "cudnnGetStream", "cudnnCreate",
                                                   "cudnnDestroy",          "cudaStreamDestroy", "cuStreamDestroy_v2",
                                                   "cublasLtMatmul",        "cublasCreate_v2"};

// Typed from the libraries' own headers (an entry point by its row of the table, which cuBLAS's
// C++ overloads of some names would make ambiguous for decltype). A binding fills only its own
// library's members; a driver's binding is the GraphDriver the replay engine captures with.
struct RealSymbols : replay::GraphDriver {
#define CUDNN_FASTPATH_DECLARE_POINTER(name, ...) decltype(&::name) name = nullptr;
  CUDNN_FASTPATH_CALLED_ONLY(CUDNN_FASTPATH_DECLARE_POINTER)
#undef CUDNN_FASTPATH_DECLARE_POINTER
#define CUDNN_FASTPATH_DECLARE_ENTRY_POINTER(name, library, function, how, arguments) \
  CUDNN_FASTPATH_RESULT(library) (*name)(CUDNN_FASTPATH_PARAMETERS(arguments)) = nullptr;
  CUDNN_FASTPATH_ENTRY_POINTS(CUDNN_FASTPATH_DECLARE_ENTRY_POINTER)
#undef CUDNN_FASTPATH_DECLARE_ENTRY_POINTER
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
  bool replays = false;     // the driver's: it has every function a graph replay needs (publish())
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
