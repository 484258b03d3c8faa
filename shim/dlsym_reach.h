// The way in for programs that take cuDNN's functions with dlsym on a library handle of their own
// (JAX/XLA's cuDNN stub, cudnn-frontend's Python package): the shim exports dlsym.
//
// dlsym_entry.S is the exported dlsym. A lookup in RTLD_DEFAULT or RTLD_NEXT jumps straight to
// glibc's dlsym, so glibc sees the original caller's return address (RTLD_NEXT is relative to it)
// and answers exactly as it would without the shim. A lookup in a handle jumps to
// cudnn_fastpath_dlsym_in_handle() below, which asks glibc, and when the name is one the shim
// interposes, found in one of its libraries (libcudnn*, libcudart*, libcuda.*), asked by an object
// that is neither that library, nor a copy of the shim, nor one that defines the name itself (a
// tracer looking for the function it wraps), answers with the shim's own function
// instead: the caller's binding for that library becomes the one the handle leads to, so each call
// reaches exactly the definition the program's own lookup found, and the caller is known to the
// shim as any other (the election among copies, the handle table, the caches). With two copies of
// that library loaded, nothing is handed out: a pointer may be called from another object than
// the one that looked it up (ctypes looks up, libffi calls), whose calls must reach the same copy.
//
// glibc's dlsym is found once, with dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5"): glibc's dlvsym is not
// interposed (the shim does not export it, which is why it stays the way to glibc; the programs
// the shim reaches use dlsym only), and a versioned lookup never finds the shim's unversioned
// definition. Nothing here holds a lock; the loader calls are glibc's own.
#pragma once

#include "shim/callers.h"
#include "shim/dispatch.h"

namespace cudnn_fastpath::shim {

// What dlsym answers for a lookup of interposed name `entry` in `handle` by `caller` (a return
// address), glibc having found `found` (not null).
void* answer_lookup(EntryPoint entry, void* handle, const void* caller, void* found) noexcept;

}  // namespace cudnn_fastpath::shim

extern "C" {
// glibc's dlsym, or null until first needed (dlsym_entry.S reads it; stored with release, by
// every thread that raced to find it, all with the same pointer).
extern void* cudnn_fastpath_real_dlsym __attribute__((visibility("hidden")));
// Finds glibc's dlsym (the asm's slow path); never returns null.
void* cudnn_fastpath_find_real_dlsym() __attribute__((visibility("hidden")));
// A lookup in a handle: jumped to by the exported dlsym, so its return address is the caller's.
void* cudnn_fastpath_dlsym_in_handle(void* handle, const char* name) __attribute__((visibility("hidden")));
}
