// One table of handles per process, however many copies of the shim are loaded.
//
// Every copy carries an ELF note (loaded_objects.cpp). The first copy in the loader's order (the
// preloaded one, or else the first one loaded) leads; any other copy passes each call, with the
// address of the code that made it, to the leader's function of the same name, which it looks up
// once through the leader's exported cudnn_fastpath_dispatch_v2(). Copies are never unloaded
// (-z nodelete), so the leader stays the first copy for the life of the process, and the table it
// keeps is the only one.
#pragma once

#include <cuda.h>
#include <cudnn.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "cudnn_fastpath/shim_control.h"

#include "shim/libraries/entry_points.h"
#include "shim/libraries/real_symbols.h"

namespace cudnn_fastpath::shim {


// Every interposed name, in one order: cudnnSetStream, then the table of entry_points.h.
// dlsym_reach.cpp hands out the shim's function for one of these names.
enum class EntryPoint : int {
  cudnnSetStream,
#define CUDNN_FASTPATH_ENTRY_ENUM(exported, ...) exported,
  CUDNN_FASTPATH_ENTRY_POINTS(CUDNN_FASTPATH_ENTRY_ENUM)
#undef CUDNN_FASTPATH_ENTRY_ENUM
  kCount
};
inline constexpr const char* kEntryPointNames[] = {
    "cudnnSetStream",
#define CUDNN_FASTPATH_ENTRY_NAME(exported, ...) #exported,
    CUDNN_FASTPATH_ENTRY_POINTS(CUDNN_FASTPATH_ENTRY_NAME)
#undef CUDNN_FASTPATH_ENTRY_NAME
};
static_assert(sizeof kEntryPointNames / sizeof kEntryPointNames[0] == static_cast<int>(EntryPoint::kCount));
// The library each interposed name belongs to.
inline constexpr Library kEntryPointLibraries[] = {
    Library::kCudnn,
#define CUDNN_FASTPATH_ENTRY_LIBRARY(exported, library, ...) Library::library,
    CUDNN_FASTPATH_ENTRY_POINTS(CUDNN_FASTPATH_ENTRY_LIBRARY)
#undef CUDNN_FASTPATH_ENTRY_LIBRARY
};

// This copy's own function for `entry` (exports.cpp): its definition, through a hidden alias, never
// whatever the name resolves to in the global scope (a tracer preloaded ahead of the shim).
void* own_entry_point(EntryPoint entry) noexcept;

// The declaration of an entry's shim function (each part defines its own; exports.cpp calls them).
#define CUDNN_FASTPATH_DECLARE_SHIM_FUNCTION(exported, library, function, how, arguments) \
  CUDNN_FASTPATH_RESULT(library) function(const void* caller, CUDNN_FASTPATH_PARAMETERS(arguments)) noexcept;

// A function of a copy of the shim as another copy reaches it: null where that copy has none of
// its name. A follower writes the leader's before the mode word is published (mode.cpp); a first
// call that races it and loses writes the same values again, after: relaxed, read after the mode
// word's acquire, each pointer whole whichever of the equal stores a reader sees.
template <typename Function>
class Reached {
 public:
  constexpr Reached(Function function = nullptr) noexcept : function_(function) {}
  Function get() const noexcept { return function_.load(std::memory_order_relaxed); }
  void set(void* function) noexcept {
    function_.store(reinterpret_cast<Function>(function), std::memory_order_relaxed);
  }
  template <typename... Args>
  auto operator()(Args... args) const noexcept {
    return get()(args...);
  }

 private:
  std::atomic<Function> function_;
};

// The functions one copy reaches in another: cudnnSetStream's and every entry's (which take the
// caller first), the run-time switch and the statistics. Each copy lays it out as it likes: only
// the names (each_function) pass between copies, so an entry can go anywhere in the table.
struct Dispatch {
  Reached<cudnnStatus_t (*)(const void* caller, cudnnHandle_t, cudaStream_t)> set_stream;
#define CUDNN_FASTPATH_DISPATCH_MEMBER(exported, library, function, how, arguments) \
  Reached<CUDNN_FASTPATH_RESULT(library) (*)(const void* caller, CUDNN_FASTPATH_PARAMETERS(arguments))> function;
  CUDNN_FASTPATH_ENTRY_POINTS(CUDNN_FASTPATH_DISPATCH_MEMBER)
#undef CUDNN_FASTPATH_DISPATCH_MEMBER
  Reached<unsigned (*)()> features;
  Reached<unsigned (*)(unsigned)> set_features;
  Reached<int (*)(cudnn_fastpath_stats_t*, std::size_t)> stats;
};

// visit(name, member) for each member of `dispatch`, by the name both copies know it by: the
// interposed function's, or the exported switch's and statistics'.
template <typename D, typename Visit>
void each_function(D& dispatch, Visit visit) noexcept {
  visit("cudnnSetStream", dispatch.set_stream);
#define CUDNN_FASTPATH_VISIT(exported, library, function, ...) visit(#exported, dispatch.function);
  CUDNN_FASTPATH_ENTRY_POINTS(CUDNN_FASTPATH_VISIT)
#undef CUDNN_FASTPATH_VISIT
  visit("cudnn_fastpath_features", dispatch.features);
  visit("cudnn_fastpath_set_features", dispatch.set_features);
  visit("cudnn_fastpath_stats", dispatch.stats);
}

// This copy's function named `name` (each_function), or nullptr: what its exported
// cudnn_fastpath_dispatch_v2() answers another copy (exports.cpp).
void* own_function(const char* name) noexcept;

// The leader's functions if another copy leads, else nullptr. Calls the loader (dl_iterate_phdr,
// dlopen with RTLD_NOLOAD, dlsym) without holding any lock of the shim.
const Dispatch* elect_leader() noexcept;

}  // namespace cudnn_fastpath::shim
