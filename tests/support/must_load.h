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

// The table of calls a framework library hands out through its function `getter` (the local load
// mode: a library that links cuDNN, opened RTLD_LOCAL as PyTorch's is), the library opened with `flags`.
template <typename Api>
Api framework_api(const char* path, const char* getter, int flags = RTLD_NOW | RTLD_LOCAL) {
  const Api* (*api)() = nullptr;
  must_dlsym(api, must_dlopen(path, flags), getter);
  return *api();
}
