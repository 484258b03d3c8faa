// dlsym reach: the exported dlsym's C half (dlsym_reach.h; the jump is dlsym_entry.S).
#include "shim/dlsym_reach.h"

#include <dlfcn.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <initializer_list>

#include "shim/config.h"
#include "shim/counters.h"
#include "shim/loaded_objects.h"
#include "shim/log.h"
#include "shim/process.h"
#include "shim/resolve.h"

extern "C" {
void* cudnn_fastpath_real_dlsym = nullptr;
}

namespace cudnn_fastpath::shim {
namespace {

using DlsymFunction = void* (*)(void*, const char*);

// Where no glibc dlsym can be found (never seen: every glibc has both versions looked for): every
// lookup fails, and one line said why.
void* no_dlsym(void*, const char*) { return nullptr; }

Library library_of(EntryPoint entry) {
  const char* name = kEntryPointNames[static_cast<int>(entry)];
  if (std::strncmp(name, "cudnn", 5) == 0) return Library::kCudnn;
  return std::strncmp(name, "cuda", 4) == 0 ? Library::kCudart : Library::kCuda;
}

// The calls that can receive a variant pack: one answered with cuDNN's own function leaves the
// caller without proxies for good (callers.h, dlsym_allows_proxies).
bool takes_pack(EntryPoint entry) {
  const char* name = kEntryPointNames[static_cast<int>(entry)];
  return std::strncmp(name, "cudnnBackend", 12) == 0 && entry != EntryPoint::cudnnBackendCreateDescriptor;
}

bool counting() { return (current_mode() & mode::kCounting) != 0; }

// Whether `object` defines `name` itself: then it is a wrapper (a tracer) looking for the function
// it wraps, not a program looking for cuDNN's. Its own handle finds its own definition first.
bool defines_itself(const LoadedObject& object, const char* name) {
  void* self = dlopen(object.is_main ? nullptr : object.path, RTLD_LAZY | RTLD_NOLOAD);
  if (self == nullptr) return false;
  const auto own = reinterpret_cast<std::uintptr_t>(dlsym(self, name));
  dlclose(self);
  return own >= object.begin && own < object.end;
}

}  // namespace

void* hand_out(EntryPoint entry, void* handle, const void* caller, void* found) noexcept {
  const Config& cfg = config();
  if (cfg.disable || !cfg.dlsym) return found;
  // A copy that follows hands out nothing: its callers' entries would not be the leader's.
  if (current_mode() & mode::kFollower) return found;
  LoadedObject from, definer;
  // Code outside any object, and the lookups of the shim itself or of another copy of it.
  if (!object_containing(reinterpret_cast<std::uintptr_t>(caller), from) || from.is_shim) return found;
  // cuDNN, the runtime or the driver looking up their own functions (cuDNN 9 opens its
  // sub-libraries and takes their functions this way).
  for (Library l : {Library::kCudnn, Library::kCudart, Library::kCuda})
    if (is_library_file(l, from.path)) return found;
  const char* name = kEntryPointNames[static_cast<int>(entry)];
  if (defines_itself(from, name)) return found;
  const Library library = library_of(entry);
  // Only a definition in the library itself: a tracer's, or one in the program, stays as found.
  if (!object_containing(reinterpret_cast<std::uintptr_t>(found), definer) || definer.is_shim ||
      !is_library_file(library, definer.path))
    return found;
  Caller* c = caller_entry(caller);
  if (c == nullptr) return found;
  // The caller's binding for the library: the one this handle leads to, unless it has one.
  const Binding* binding = c->bindings[static_cast<int>(library)].load(std::memory_order_acquire);
  if (binding == nullptr) {
    binding = resolve_in_handle(library, handle);
    if (binding != nullptr) binding = adopt_binding(*c, library, binding);
  }
  if (binding == nullptr || real_pointer(*binding, name) != found) {
    // A second library for the same caller (or one the shim cannot use): the caller keeps what it
    // found, and never gets proxies if this call can receive one.
    if (takes_pack(entry)) c->dlsym_entries.fetch_or(kDlsymDeclined, std::memory_order_relaxed);
    if (counting()) count(Counter::dlsym_declined);
    if (cfg.verbose) log_line("dlsym: %s for %s left as found in %s", name, from.is_main ? "the program" : from.path,
                              definer.path);
    return found;
  }
  const std::uint32_t before =
      c->dlsym_entries.fetch_or(std::uint32_t{1} << static_cast<int>(entry), std::memory_order_relaxed);
  if (counting()) count(Counter::dlsym_handed_out);
  if (before == 0 && cfg.verbose)
    log_line("dlsym: %s gets the shim's functions for %s", from.is_main ? "the program" : from.path, definer.path);
  return own_entry_point(entry);
}

}  // namespace cudnn_fastpath::shim

namespace shim = cudnn_fastpath::shim;

void* cudnn_fastpath_find_real_dlsym() {
  // Acquire, pairing with the release below: a pointer is only read once it is whole. (The asm
  // reads it with a plain load, which x86-64 orders as an acquire.)
  if (void* known = __atomic_load_n(&cudnn_fastpath_real_dlsym, __ATOMIC_ACQUIRE)) return known;
  // GLIBC_2.34 is where glibc moved dlsym into libc; GLIBC_2.2.5, x86-64's first version, is kept
  // by every glibc (in libdl before 2.34). dlvsym never finds an unversioned definition: not this
  // shim's, not another copy's.
  void* found = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
  if (found == nullptr) found = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
  if (found == nullptr) {
    shim::log_line("cannot find glibc's dlsym; every dlsym lookup fails");
    found = reinterpret_cast<void*>(&shim::no_dlsym);
  }
  // Racing threads find the same function; the last store is as good as the first.
  __atomic_store_n(&cudnn_fastpath_real_dlsym, found, __ATOMIC_RELEASE);
  return found;
}

void* cudnn_fastpath_dlsym_in_handle(void* handle, const char* name) {
  const void* caller = __builtin_return_address(0);  // jumped to: the program's return address
  const auto real = reinterpret_cast<shim::DlsymFunction>(cudnn_fastpath_find_real_dlsym());
  void* found = real(handle, name);
  // Most lookups end here: a miss, or a name that is not cuDNN's, the runtime's or the driver's.
  if (found == nullptr || name == nullptr || name[0] != 'c' || name[1] != 'u') return found;
  constexpr int kCount = static_cast<int>(shim::EntryPoint::kCount);
  int entry = 0;
  while (entry < kCount && std::strcmp(shim::kEntryPointNames[entry], name) != 0) ++entry;
  if (entry == kCount) return found;
  void* answer = shim::hand_out(static_cast<shim::EntryPoint>(entry), handle, caller, found);
  // hand_out may have called the loader, and a failed lookup of its own would stay in dlerror()'s
  // state: glibc clears that state at every call, so one more successful lookup leaves it exactly
  // as the program's own left it.
  real(handle, name);
  return answer;
}
