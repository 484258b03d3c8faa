// The exported names: the only symbols the shim's version script lets out.
//
// Each interposed function hands its own return address on as `caller`: the object that made the
// call decides which library it reaches (real_symbols.h), and a copy of the shim that does not
// lead passes it on to the one that does (dispatch.h). They are noexcept and fail open: the shim is
// built without exceptions, and nothing can unwind out of these into the caller.
#include <cuda.h>
#include <cudnn.h>

#include <cstring>

#include "cudnn_fastpath/shim_control.h"
#include "shim/families/blas.h"
#include "shim/families/legacy.h"
#include "shim/features.h"
#include "shim/handles.h"
#include "shim/libraries/dispatch.h"
#include "shim/pack_proxy/variant_packs.h"
#include "shim/process/code_layout.h"
#include "shim/statistics/report.h"
#include "shim/streams/set_stream.h"
#include "shim/streams/stream_destroy.h"

#define CUDNN_FASTPATH_CALLER __builtin_return_address(0)

namespace cudnn_fastpath::shim {

namespace {

// This copy's functions, by the names other copies ask for them by (each_function).
constexpr Dispatch kOwn = {
    set_stream_from,
#define CUDNN_FASTPATH_OWN_FUNCTION(exported, library, function, ...) function,
    CUDNN_FASTPATH_ENTRY_POINTS(CUDNN_FASTPATH_OWN_FUNCTION)
#undef CUDNN_FASTPATH_OWN_FUNCTION
    features,
    set_features,
    fill_stats};

}  // namespace

// A follower asks for each name once, at its first call: a walk of the names will do.
void* own_function(const char* name) noexcept {
  void* found = nullptr;
  if (name == nullptr) return found;
  each_function(kOwn, [&](const char* own, const auto& function) {
    if (found == nullptr && std::strcmp(own, name) == 0) found = reinterpret_cast<void*>(function.get());
  });
  return found;
}

}  // namespace cudnn_fastpath::shim

namespace shim = cudnn_fastpath::shim;

#pragma GCC visibility push(default)
extern "C" {

// Aligned to a cache line: the fast path is then two lines whatever the code before it, and its
// cost does not move by a third of a nanosecond from one build to the next.
__attribute__((aligned(64))) CUDNN_FASTPATH_HOT cudnnStatus_t cudnnSetStream(cudnnHandle_t handle, cudaStream_t streamId) {
  return shim::set_stream(handle, streamId, CUDNN_FASTPATH_CALLER);
}

// Each of the others hands its caller to the shim's function. Hot: a steady op runs several.
#define CUDNN_FASTPATH_EXPORT(exported, library, function, how, arguments)                      \
  CUDNN_FASTPATH_HOT CUDNN_FASTPATH_RESULT(library) exported(CUDNN_FASTPATH_PARAMETERS(arguments)) { \
    return shim::function(CUDNN_FASTPATH_CALLER, CUDNN_FASTPATH_ARGUMENTS(arguments));              \
  }
CUDNN_FASTPATH_ENTRY_POINTS(CUDNN_FASTPATH_EXPORT)
#undef CUDNN_FASTPATH_EXPORT

unsigned cudnn_fastpath_features(void) { return shim::features(); }

unsigned cudnn_fastpath_set_features(unsigned features) { return shim::set_features(features); }

int cudnn_fastpath_stats(cudnn_fastpath_stats_t* out, size_t size) { return shim::fill_stats(out, size); }

const char* cudnn_fastpath_stats_fields(void) { return shim::stats_fields(); }

// For other copies of the shim only (dispatch.h); not part of the public interface.
void* cudnn_fastpath_dispatch_v2(const char* name) { return shim::own_function(name); }

}  // extern "C"
#pragma GCC visibility pop

// Hidden aliases of the interposed functions: the addresses dlsym_reach.cpp hands out, taken
// without going through the global offset table (which may lead to another object's definition).
extern "C" {
CUDNN_FASTPATH_HOT __attribute__((visibility("hidden"), alias("cudnnSetStream"))) cudnnStatus_t own_cudnnSetStream(cudnnHandle_t,
                                                                                              cudaStream_t);
#define CUDNN_FASTPATH_OWN_ALIAS(exported, library, function, how, arguments)                             \
  CUDNN_FASTPATH_HOT __attribute__((visibility("hidden"), alias(#exported))) CUDNN_FASTPATH_RESULT(library) \
      own_##exported(CUDNN_FASTPATH_PARAMETERS(arguments));
CUDNN_FASTPATH_ENTRY_POINTS(CUDNN_FASTPATH_OWN_ALIAS)
#undef CUDNN_FASTPATH_OWN_ALIAS
}  // extern "C"

void* shim::own_entry_point(EntryPoint entry) noexcept {
  switch (entry) {
    case EntryPoint::cudnnSetStream: return reinterpret_cast<void*>(&own_cudnnSetStream);
#define CUDNN_FASTPATH_OWN_CASE(exported, ...) \
  case EntryPoint::exported: return reinterpret_cast<void*>(&own_##exported);
      CUDNN_FASTPATH_ENTRY_POINTS(CUDNN_FASTPATH_OWN_CASE)
#undef CUDNN_FASTPATH_OWN_CASE
    case EntryPoint::kCount: break;
  }
  return nullptr;
}
