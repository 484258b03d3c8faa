// The way in for programs that take cuDNN's functions with dlsym on a library handle of their own
// (JAX/XLA's cuDNN stub, cudnn-frontend's Python package): the shim exports dlsym.
//
// dlsym_entry.S is the exported dlsym. Every lookup that is not the shim's business (RTLD_DEFAULT,
// RTLD_NEXT, and a lookup in a handle of any name the shim does not interpose) is a jump to the
// next dlsym in the lookup order after the shim (glibc_dlsym.h: another interposer of dlsym loaded
// after the shim, such as HAMi-core's libvgpu.so, else glibc's), which therefore sees the original
// caller and answers exactly as it would without the shim. A lookup of an interposed name in a
// handle goes to cudnn_fastpath_dlsym_in_handle() below, which asks the next dlsym on the
// program's behalf (the requester it sees is the shim) and, when the name's definition in the
// handle lies in one of the shim's libraries (libcudnn*, libcudart*, libcuda.*) and the asker is
// neither that library, nor a copy of the shim, nor an object that defines the name itself (a
// tracer looking for the function it wraps), answers with the shim's own function instead: the
// caller's binding for that library becomes the one the handle leads to, with each name as the
// program's own lookup would have found it (the next interposer's wrapper, where it wraps one:
// then both run, the shim's first), so the caller is known to the shim as any other (the election
// among copies, the handle table, the caches). With two copies of that library loaded, nothing is
// handed out: a pointer may be called from another object than the one that looked it up (ctypes
// looks up, libffi calls), whose calls must reach the same copy.
//
// CUDNN_FASTPATH_DISABLE=1 makes every lookup a jump (the shim never looks); CUDNN_FASTPATH_DLSYM=0
// keeps looking at the interposed names (a caller that holds cuDNN's own function for a call that
// takes a variant pack must get real packs) and answers them as the next dlsym does. Nothing here
// holds a lock.
#pragma once

#include "shim/libraries/callers.h"
#include "shim/libraries/dispatch.h"

namespace cudnn_fastpath::shim {

// The interposed name `name` is, or -1.
int entry_named(const char* name) noexcept;

// What dlsym answers for a lookup of interposed name `entry` in `handle` by `caller` (a return
// address), the next dlsym having found `found` (not null).
void* answer_lookup(EntryPoint entry, void* handle, const void* caller, void* found) noexcept;

// How many lookups of cuDNN's names the shim saw a program (not a library) make, and answered with
// cuDNN's own function: the statistics' one sure sign that calls bypass it.
unsigned long long cudnn_names_left_to_library() noexcept;

}  // namespace cudnn_fastpath::shim

extern "C" {
// Whether a lookup of `name` in `handle` (not RTLD_DEFAULT or RTLD_NEXT) is the shim's business:
// the exported dlsym jumps to the next dlsym when it is not.
bool cudnn_fastpath_dlsym_wants(void* handle, const char* name) __attribute__((visibility("hidden")));
// A lookup in a handle that is: jumped to by the exported dlsym, so its return address is the
// caller's.
void* cudnn_fastpath_dlsym_in_handle(void* handle, const char* name) __attribute__((visibility("hidden")));
}
