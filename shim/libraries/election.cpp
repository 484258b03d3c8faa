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

using DispatchEntry = const DispatchV1* (*)();

}  // namespace

const DispatchV1* elect_leader() noexcept {
  LoadedObject first;
  const LoadedObject self = own_object();
  if (!first_shim_copy(first) || first.base == self.base) return nullptr;

  // Another copy comes first. Its entry is looked up in that very object and must lie inside it.
  void* handle = first.path[0] ? dlopen(first.path, RTLD_NOLOAD | RTLD_LAZY) : nullptr;
  void* entry = handle ? glibc_dlsym(handle, "cudnn_fastpath_dispatch_v1") : nullptr;
  if (handle) dlclose(handle);
  const auto address = reinterpret_cast<std::uintptr_t>(entry);
  if (entry == nullptr || address < first.begin || address >= first.end) {
    if (!g_said.exchange(true, std::memory_order_relaxed))
      log_line("another copy of the shim is loaded (%s) but cannot be reached; this one (%s) keeps "
               "its own table",
               first.path, self.path);
    return nullptr;
  }
  const DispatchV1* leader = reinterpret_cast<DispatchEntry>(entry)();
  if (!g_said.exchange(true, std::memory_order_relaxed))
    log_line("another copy of the shim is loaded (%s); this one (%s) passes its calls to it", first.path,
             self.path);
  return leader;
}

}  // namespace cudnn_fastpath::shim
