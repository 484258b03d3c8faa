// glibc's own dlsym, for tests and benchmarks that need a library's own function around the shim:
// the shim exports dlsym (and answers lookups of the names it interposes with its own functions),
// but not dlvsym, through which glibc's dlsym is taken here by version.
#pragma once

#include <dlfcn.h>

#include <initializer_list>

inline void* glibc_dlsym(void* where, const char* name) {
  using Dlsym = void* (*)(void*, const char*);
  static const Dlsym real = [] {
    // 2.34: dlsym moved into libc; 2.2.5 (x86-64) and 2.17 (aarch64): the first versions.
    for (const char* version : {"GLIBC_2.34", "GLIBC_2.2.5", "GLIBC_2.17"})
      if (void* found = dlvsym(RTLD_DEFAULT, "dlsym", version)) return reinterpret_cast<Dlsym>(found);
    return static_cast<Dlsym>(&dlsym);
  }();
  return real(where, name);
}
