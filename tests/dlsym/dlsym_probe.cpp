// libdlsym_probe.so and libdlsym_probe_after.so: two libraries the dlsym scenario links in that
// order, both defining dlsym_probe_symbol (a function: two definitions of one global variable
// are an ODR violation to ASan). From the first, dlsym(RTLD_NEXT, "dlsym_probe_symbol") is the
// second one's: the lookup is relative to its caller, which an interposer of dlsym must leave
// glibc to see.
#include <dlfcn.h>

extern "C" __attribute__((visibility("default"))) int dlsym_probe_symbol() { return DLSYM_PROBE_VALUE; }

#ifdef DLSYM_PROBE_FIRST
using Dlsym = void* (*)(void*, const char*);

// Looks `name` up in `where` (RTLD_NEXT or RTLD_DEFAULT) through dlsym (an interposer's, if any)
// and through glibc's own (taken by version: no interposer sees it), both from this library.
// Returns 1 when the two agree, 0 when not, -1 when glibc's dlsym cannot be found.
extern "C" __attribute__((visibility("default"))) int dlsym_probe_agrees(void* where, const char* name,
                                                                        void** found) {
  auto glibc_dlsym = reinterpret_cast<Dlsym>(dlvsym(RTLD_DEFAULT, "dlsym", "GLIBC_2.2.5"));
  if (glibc_dlsym == nullptr) return -1;
  void* through = dlsym(where, name);
  asm volatile("" ::: "memory");  // a call from here, not a jump: this library is the caller
  void* direct = glibc_dlsym(where, name);
  asm volatile("" ::: "memory");
  *found = through;
  return through == direct ? 1 : 0;
}

// dlerror() right after dlsym(handle, name) from this library: 1 when it reports no error.
extern "C" __attribute__((visibility("default"))) int dlsym_probe_clean_lookup(void* handle, const char* name) {
  dlerror();
  void* found = dlsym(handle, name);
  asm volatile("" ::: "memory");
  return found != nullptr && dlerror() == nullptr ? 1 : 0;
}
#endif
