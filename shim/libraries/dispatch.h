// One table of handles per process, however many copies of the shim are loaded.
//
// Every copy carries an ELF note (loaded_objects.cpp). The first copy in the loader's order (the
// preloaded one, or else the first one loaded) leads; any other copy passes each call, with the
// address of the code that made it, to the leader through the leader's exported
// cudnn_fastpath_dispatch_v1(). Copies are never unloaded (-z nodelete), so the leader stays the
// first copy for the life of the process, and the table it keeps is the only one.
#pragma once

#include <cuda.h>
#include <cudnn.h>

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

// Version 1 of the interface between copies. Members are only ever appended; `size` says how many
// a leader has (leads(): a member past it is not there, and the call goes to the library).
struct DispatchV1 {
  std::uint32_t size;
  cudnnStatus_t (*set_stream)(const void* caller, cudnnHandle_t, cudaStream_t);
#define CUDNN_FASTPATH_DISPATCH_MEMBER(exported, library, function, how, arguments) \
  CUDNN_FASTPATH_RESULT(library) (*function)(const void* caller, CUDNN_FASTPATH_PARAMETERS(arguments));
  CUDNN_FASTPATH_ENTRY_POINTS_V1(CUDNN_FASTPATH_DISPATCH_MEMBER)
  unsigned (*features)();
  unsigned (*set_features)(unsigned);
  int (*stats)(cudnn_fastpath_stats_t*, std::size_t);
  CUDNN_FASTPATH_ENTRY_POINTS_APPENDED(CUDNN_FASTPATH_DISPATCH_MEMBER)
#undef CUDNN_FASTPATH_DISPATCH_MEMBER
};

// Whether `leader` has the member at `offset` (offsetof(DispatchV1, member)).
inline bool leads(const DispatchV1& leader, std::size_t offset) noexcept { return leader.size > offset; }

// This copy's own table (exports.cpp).
const DispatchV1& own_dispatch() noexcept;

// The leader's table if another copy leads, else nullptr. Calls the loader (dl_iterate_phdr,
// dlopen with RTLD_NOLOAD, dlsym) without holding any lock of the shim.
const DispatchV1* elect_leader() noexcept;

}  // namespace cudnn_fastpath::shim
