// The real functions behind the interposed ones, found lazily, once per library.
#pragma once

#include <cudnn.h>  // the exact signatures: every pointer below is typed from cuDNN's own header

namespace cudnn_fastpath::shim {

enum class Library : int { kCudnn, kCudart, kCount };

// The one table of real symbols: name, library it lives in.
#define CUDNN_FASTPATH_REAL_SYMBOLS(X) \
  X(cudnnSetStream, kCudnn)            \
  X(cudnnGetStream, kCudnn)            \
  X(cudnnCreate, kCudnn)               \
  X(cudnnDestroy, kCudnn)              \
  X(cudaStreamDestroy, kCudart)

struct RealSymbols {
#define CUDNN_FASTPATH_DECLARE_POINTER(name, library) decltype(&::name) name = nullptr;
  CUDNN_FASTPATH_REAL_SYMBOLS(CUDNN_FASTPATH_DECLARE_POINTER)
#undef CUDNN_FASTPATH_DECLARE_POINTER
};

// How a library's symbols were found.
enum class FoundBy : int {
  kNotFound,    // nothing worked: calls fail with a clear message
  kRtldNext,    // dlsym(RTLD_NEXT): the library is in the global scope after the shim
  kNoload,      // dlopen(soname, RTLD_NOLOAD): loaded in a local scope (the PyTorch case)
  kLoadedWalk,  // dl_iterate_phdr: loaded under another name (a renamed wheel copy, say)
  kEnvPath,     // CUDNN_FASTPATH_CUDNN / CUDNN_FASTPATH_CUDART
  kOtherCopy,   // another copy of the shim comes next: this one passes everything through to it
};

struct Resolution {
  FoundBy found_by = FoundBy::kNotFound;
  char object[4096] = {};  // the file the symbols came from
};

// Resolves `library` on first use (thread-safe, once) and returns the table; the library's
// members are null when it could not be found (a one-line message says so, once).
const RealSymbols& real_symbols(Library library) noexcept;

// How `library` was resolved; kNotFound also when it was never needed.
const Resolution& resolution(Library library) noexcept;

// A short name for reports: "rtld_next", "noload", "loaded_walk", "env_path", "other_copy", ...
const char* to_string(FoundBy found_by) noexcept;

}  // namespace cudnn_fastpath::shim
