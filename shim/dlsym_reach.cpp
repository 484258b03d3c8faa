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

// Where no glibc dlsym can be found (never seen: every x86-64 glibc has GLIBC_2.2.5's), or while
// it is being found (a malloc interposer calling dlsym from inside glibc's dlvsym): the lookup
// fails, and one line said why.
void* no_dlsym(void*, const char*) { return nullptr; }
// Initial-exec, as the shim's other thread-local data: this runs before a sanitizer runtime has
// finished starting (its own first dlsym calls come here), when a __tls_get_addr call would reach
// the runtime's interceptor of it too early.
__thread bool t_finding_dlsym __attribute__((tls_model("initial-exec"))) = false;

Library library_of(EntryPoint entry) {
  const char* name = kEntryPointNames[static_cast<int>(entry)];
  if (std::strncmp(name, "cudnn", 5) == 0) return Library::kCudnn;
  return std::strncmp(name, "cuda", 4) == 0 ? Library::kCudart : Library::kCuda;
}

// The calls that can receive a variant pack: one answered with cuDNN's own function leaves the
// caller without proxies from then on (callers.h, dlsym_allows_proxies).
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

// The binding `handle` leads to, when it is the one any other object of the process would reach
// too: a pointer handed out may be called from another object than the one that looked it up
// (ctypes looks up, libffi calls), and that object's calls must reach the same library. With two
// copies of the library loaded, nothing is handed out (nullptr).
const Binding* unambiguous_binding(Library library, void* handle) {
  const Binding* from_handle = resolve_in_handle(library, handle);
  const Binding* anyone = resolve(library, nullptr);
  if (from_handle == nullptr || anyone == nullptr || from_handle->base != anyone->base) return nullptr;
  return from_handle;
}

// The answer for a program's lookup: the shim's function, or `found` where a rule says so.
void* answer(Caller& c, const LoadedObject& from, EntryPoint entry, void* handle, void* found) {
  const Config& cfg = config();
  if (cfg.disable || !cfg.dlsym) return found;
  // A copy that follows hands out nothing: its callers' entries would not be the leader's.
  if (current_mode() & mode::kFollower) return found;
  const char* name = kEntryPointNames[static_cast<int>(entry)];
  if (defines_itself(from, name)) return found;
  // The caller's binding for the library: the one this handle leads to, unless it has one.
  const Library library = library_of(entry);
  const Binding* binding = c.bindings[static_cast<int>(library)].load(std::memory_order_acquire);
  if (binding == nullptr) {
    binding = unambiguous_binding(library, handle);
    if (binding != nullptr) binding = adopt_binding(c, library, binding);
  }
  // No binding (two copies of the library), or another library than this handle's for this
  // caller: it keeps what it found.
  if (binding == nullptr || real_pointer(*binding, name) != found) {
    if (counting()) count(Counter::dlsym_declined);
    if (cfg.verbose) log_line("dlsym: %s for %s left to the library", name, from.is_main ? "the program" : from.path);
    return found;
  }
  // Relaxed: each bit is a fact on its own (callers.h).
  const std::uint32_t before =
      c.dlsym_names_taken.fetch_or(std::uint32_t{1} << static_cast<int>(entry), std::memory_order_relaxed);
  if (counting()) count(Counter::dlsym_handed_out);
  if (before == 0 && cfg.verbose)
    log_line("dlsym: %s gets the shim's functions for %s", from.is_main ? "the program" : from.path,
             binding->object);
  return own_entry_point(entry);
}

}  // namespace

void* answer_lookup(EntryPoint entry, void* handle, const void* caller, void* found) noexcept {
  LoadedObject from, definer;
  // Code outside any object, and the lookups of the shim itself or of another copy of it.
  if (!object_containing(reinterpret_cast<std::uintptr_t>(caller), from) || from.is_shim) return found;
  // cuDNN, the runtime or the driver looking up their own functions (cuDNN 9 opens its
  // sub-libraries and takes their functions this way).
  for (Library l : {Library::kCudnn, Library::kCudart, Library::kCuda})
    if (is_library_file(l, from.path)) return found;
  // Only a definition in the library itself: a tracer's, or one in the program, stays as found.
  if (!object_containing(reinterpret_cast<std::uintptr_t>(found), definer) || definer.is_shim ||
      !is_library_file(library_of(entry), definer.path))
    return found;
  Caller* c = caller_entry(caller);
  if (c == nullptr) return found;
  void* result = answer(*c, from, entry, handle, found);
  // Whatever the reason (the way in switched off included), a caller that holds cuDNN's own
  // function for a call that takes a variant pack gets real packs from now on. Relaxed: as above.
  if (result == found && takes_pack(entry)) c->dlsym_names_taken.fetch_or(kDlsymDeclined, std::memory_order_relaxed);
  return result;
}

}  // namespace cudnn_fastpath::shim

namespace shim = cudnn_fastpath::shim;

// Not instrumented by any sanitizer: a sanitizer runtime's first dlsym calls reach this while it
// is still starting, before the memory its instrumentation would touch (ASan's shadow) exists.
__attribute__((no_sanitize_address, no_sanitize_thread, no_sanitize_undefined)) void* cudnn_fastpath_find_real_dlsym() {
  // Acquire, pairing with the release below: a pointer is only read once it is whole. (The asm
  // reads it with a plain load, which x86-64 orders as an acquire.)
  if (void* known = __atomic_load_n(&cudnn_fastpath_real_dlsym, __ATOMIC_ACQUIRE)) return known;
  if (shim::t_finding_dlsym) return reinterpret_cast<void*>(&shim::no_dlsym);
  shim::t_finding_dlsym = true;
  // GLIBC_2.2.5, x86-64's first version, is kept by every glibc (in libdl before 2.34, in libc
  // after, where it is the same function as GLIBC_2.34's): asked first, it never fails, so glibc
  // allocates no error message. A versioned lookup never finds an unversioned definition: not this
  // shim's, not another copy's. RTLD_NEXT keeps an interposer of dlsym after the shim in the chain;
  // RTLD_DEFAULT is the fallback.
  void* found = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
  if (found == nullptr) found = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
  if (found == nullptr) found = dlvsym(RTLD_DEFAULT, "dlsym", "GLIBC_2.2.5");
  if (found == nullptr) found = dlvsym(RTLD_DEFAULT, "dlsym", "GLIBC_2.34");
  if (found == nullptr) {
    shim::log_line("cannot find glibc's dlsym; every dlsym lookup fails");
    found = reinterpret_cast<void*>(&shim::no_dlsym);
  }
  // Racing threads find the same function; each stores it, and any store is as good as another.
  __atomic_store_n(&cudnn_fastpath_real_dlsym, found, __ATOMIC_RELEASE);
  shim::t_finding_dlsym = false;
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
  void* result = shim::answer_lookup(static_cast<shim::EntryPoint>(entry), handle, caller, found);
  // answer_lookup may have called the loader, and a failed lookup of its own would stay in
  // dlerror()'s state: glibc clears that state at every call, so one more successful lookup leaves
  // it exactly as the program's own left it.
  real(handle, name);
  return result;
}
