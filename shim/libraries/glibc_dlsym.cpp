// glibc's dlsym and the next one after the shim (glibc_dlsym.h).
#include "shim/libraries/glibc_dlsym.h"

#include <dlfcn.h>

#include "shim/process/log.h"

extern "C" {
void* cudnn_fastpath_real_dlsym = nullptr;
void* cudnn_fastpath_next_dlsym = nullptr;
}

namespace cudnn_fastpath::shim {
namespace {

// Where no glibc dlsym can be found (never seen: every x86-64 glibc has GLIBC_2.2.5's), or while
// it is being found (a malloc interposer calling dlsym from inside glibc's dlvsym): the lookup
// fails, and one line said why.
void* no_dlsym(void*, const char*) { return nullptr; }

// Initial-exec, as the shim's other thread-local data: this runs before a sanitizer runtime has
// finished starting (its own first dlsym calls come here), when a __tls_get_addr call would reach
// the runtime's interceptor of it too early.
__thread bool t_finding_real __attribute__((tls_model("initial-exec"))) = false;
__thread bool t_finding_next __attribute__((tls_model("initial-exec"))) = false;

}  // namespace
}  // namespace cudnn_fastpath::shim

namespace shim = cudnn_fastpath::shim;

// Neither is instrumented by any sanitizer: a sanitizer runtime's first dlsym calls (RTLD_NEXT
// lookups of what it intercepts) reach them while it is still starting, before the memory its
// instrumentation would touch (ASan's shadow) exists.
__attribute__((no_sanitize_address, no_sanitize_thread, no_sanitize_undefined)) void* cudnn_fastpath_find_real_dlsym() {
  // Acquire, pairing with the release below: a pointer is only read once it is whole.
  if (void* known = __atomic_load_n(&cudnn_fastpath_real_dlsym, __ATOMIC_ACQUIRE)) return known;
  if (shim::t_finding_real) return reinterpret_cast<void*>(&shim::no_dlsym);
  shim::t_finding_real = true;
  // GLIBC_2.2.5, x86-64's first version, is kept by every glibc (in libdl before 2.34, in libc
  // after, where it is the same function as GLIBC_2.34's): asked first, it never fails, so glibc
  // allocates no error message. dlvsym is glibc's (the shim does not export it), and a versioned
  // lookup never finds an unversioned definition: not this shim's, not another interposer's.
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
  shim::t_finding_real = false;
  return found;
}

__attribute__((no_sanitize_address, no_sanitize_thread, no_sanitize_undefined)) void* cudnn_fastpath_find_next_dlsym() {
  if (void* known = __atomic_load_n(&cudnn_fastpath_next_dlsym, __ATOMIC_ACQUIRE)) return known;  // as above
  void* real = cudnn_fastpath_find_real_dlsym();
  if (shim::t_finding_next) return real;
  shim::t_finding_next = true;
  // An unversioned lookup of the name, as an interposer preloaded after the shim defines it (and
  // as a program's own reference finds it): the first definition after the shim in the lookup
  // order, else glibc's default version. A copy of the shim after this one is a link like any
  // other: its dlsym passes on what it does not answer.
  void* next = reinterpret_cast<shim::DlsymFunction>(real)(RTLD_NEXT, "dlsym");
  if (next == nullptr) next = real;
  __atomic_store_n(&cudnn_fastpath_next_dlsym, next, __ATOMIC_RELEASE);  // as above
  shim::t_finding_next = false;
  return next;
}
