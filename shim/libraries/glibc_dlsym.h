// The two dlsym functions the shim calls: glibc's own, for every lookup the shim makes for itself,
// and the next dlsym in the process's lookup order after the shim (another interposer's, such as
// HAMi-core's libvgpu.so, when one is loaded after the shim; else glibc's), to which the exported
// dlsym (dlsym_entry.S) passes the program's lookups.
//
// The shim's own references to dlsym would bind to its own exported dlsym (the first definition in
// the global scope), and from there to the next interposer: the shim's lookups never take that
// way, so another interposer sees each of the program's lookups once and none of the shim's.
// Both are found once, lazily, without a lock (racing threads find the same function and store
// it), and without recursion: a lookup made while one is being found (a malloc interposer calling
// dlsym from inside glibc's) gets glibc's dlsym, or no answer while glibc's is being found.
#pragma once

extern "C" {
// glibc's dlsym and the next one, or null until first needed. The exported dlsym reads the second
// with a plain load (an acquire on x86-64); both are stored with release.
extern void* cudnn_fastpath_real_dlsym __attribute__((visibility("hidden")));
extern void* cudnn_fastpath_next_dlsym __attribute__((visibility("hidden")));
// Find them (the exported dlsym's slow path calls the second); never return null.
void* cudnn_fastpath_find_real_dlsym() __attribute__((visibility("hidden")));
void* cudnn_fastpath_find_next_dlsym() __attribute__((visibility("hidden")));
}

namespace cudnn_fastpath::shim {

using DlsymFunction = void* (*)(void*, const char*);

// glibc's dlsym. RTLD_NEXT is relative to the shim (glibc finds the caller from the return
// address, which lies in the shim).
inline void* glibc_dlsym(void* handle, const char* name) noexcept {
  return reinterpret_cast<DlsymFunction>(cudnn_fastpath_find_real_dlsym())(handle, name);
}

// The next dlsym after the shim, on the program's behalf: the requester it sees is the shim.
inline void* next_dlsym(void* handle, const char* name) noexcept {
  void* next = __atomic_load_n(&cudnn_fastpath_next_dlsym, __ATOMIC_ACQUIRE);
  if (next == nullptr) next = cudnn_fastpath_find_next_dlsym();
  return reinterpret_cast<DlsymFunction>(next)(handle, name);
}

}  // namespace cudnn_fastpath::shim
