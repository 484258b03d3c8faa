// elect_leader() of dispatch.h: the first copy of the shim in the loader's order leads.
#include <dlfcn.h>

#include <atomic>
#include <cstdint>

#include "shim/libraries/dispatch.h"
#include "shim/libraries/glibc_dlsym.h"
#include "shim/libraries/loaded_objects.h"
#include "shim/process/log.h"

namespace cudnn_fastpath::shim {
namespace {

std::atomic<bool> g_said{false};  // relaxed: only deduplicates the message

// The leader's functions, as this copy reaches them (dispatch.h's Reached says how they are written).
Dispatch g_leading;

using Lookup = void* (*)(const char* name);

// Whether the leader has every function a follower passes calls to without a way of its own to the
// library: cudnnSetStream's, the switch's, and those of the handles, stream destroys and backend API.
bool answers_everything_passed_on(const Dispatch& d) {
  bool all = d.set_stream.get() && d.features.get() && d.set_features.get();
#define CUDNN_FASTPATH_PASSED_ON(exported, library, function, ...) all = all && d.function.get() != nullptr;
  CUDNN_FASTPATH_HANDLE_ENTRY_POINTS(CUDNN_FASTPATH_PASSED_ON)
  CUDNN_FASTPATH_STREAM_ENTRY_POINTS(CUDNN_FASTPATH_PASSED_ON)
  CUDNN_FASTPATH_BACKEND_ENTRY_POINTS(CUDNN_FASTPATH_PASSED_ON)
#undef CUDNN_FASTPATH_PASSED_ON
  return all;
}

}  // namespace

const Dispatch* elect_leader() noexcept {
  LoadedObject first;
  const LoadedObject self = own_object();
  if (!first_shim_copy(first) || first.base == self.base) return nullptr;

  // Another copy comes first. Its entry is looked up in that very object and must lie inside it;
  // then each of its functions by name, once, each kept only if it lies inside it too. A copy
  // without this entry (one of an interface before it) is not followed. RTLD_NODELETE: the pointers
  // are kept for good, so the leader stays mapped even if it was built without -z nodelete.
  void* handle = first.path[0] ? dlopen(first.path, RTLD_NOLOAD | RTLD_NODELETE | RTLD_LAZY) : nullptr;
  void* entry = handle ? glibc_dlsym(handle, "cudnn_fastpath_dispatch_v2") : nullptr;
  if (handle) dlclose(handle);
  const auto address = reinterpret_cast<std::uintptr_t>(entry);
  bool reached = entry != nullptr && address >= first.begin && address < first.end;
  if (reached) {
    const auto lookup = reinterpret_cast<Lookup>(entry);
    each_function(g_leading, [lookup, &first](const char* name, auto& function) {
      void* answer = lookup(name);
      const auto at = reinterpret_cast<std::uintptr_t>(answer);
      function.set(at >= first.begin && at < first.end ? answer : nullptr);
    });
    reached = answers_everything_passed_on(g_leading);
  }
  if (!reached) {
    if (!g_said.exchange(true, std::memory_order_relaxed))
      log_line("another copy of the shim is loaded (%s) but cannot be reached; this one (%s) keeps "
               "its own table",
               first.path, self.path);
    return nullptr;
  }
  if (!g_said.exchange(true, std::memory_order_relaxed))
    log_line("another copy of the shim is loaded (%s); this one (%s) passes its calls to it", first.path,
             self.path);
  return &g_leading;
}

}  // namespace cudnn_fastpath::shim
