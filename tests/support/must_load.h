// Loader calls a scenario program cannot go on without. Each program defines die(), which prints
// its own name and ends it with exit status 3 (a test reads that as "the scenario itself broke").
#pragma once

#include <dlfcn.h>

[[noreturn]] void die(const char* what);

inline void* must_dlopen(const char* path, int flags) {
  void* handle = dlopen(path, flags);
  if (handle == nullptr) die(dlerror());
  return handle;
}

template <typename T>
void must_dlsym(T& out, void* where, const char* name) {
  void* symbol = dlsym(where, name);
  if (symbol == nullptr) die(name);
  out = reinterpret_cast<T>(symbol);
}
