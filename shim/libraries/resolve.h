// Finding one library's real functions for one calling object: the chain of lookups, in order.
#pragma once

#include "shim/libraries/loaded_objects.h"
#include "shim/libraries/real_symbols.h"

namespace cudnn_fastpath::shim {

// Looks `library` up for a caller in `caller` (nullptr: unknown, e.g. code made at run time) and
// returns the published binding, or a binding whose pointers are null. Calls the loader (dlsym,
// dlopen with RTLD_NOLOAD, dladdr, dl_iterate_phdr) and holds no lock of the shim meanwhile; two
// threads resolving at once both succeed, and may publish two equal bindings.
const Binding* resolve(Library library, const LoadedObject* caller) noexcept;

// The binding `handle` (from dlopen) leads to: each name as dlsym(handle, name) finds it, which is
// what a program that looks the names up in that handle calls. nullptr when the handle lacks a
// required name or leads into a copy of the shim. Calls the loader, holds no lock.
const Binding* resolve_in_handle(Library library, void* handle) noexcept;

// A binding like `binding` but for `name`, which leads to `pointer` (an interposer's wrapper of the
// library's function); nullptr for a name not in the table or a pointer into a copy of the shim.
// Published like any other (the object `pointer` lies in is pinned).
const Binding* with_pointer(const Binding& binding, const char* name, void* pointer) noexcept;

// The pointer `binding` holds for `name`; nullptr for a name not in the table.
void* real_pointer(const Binding& binding, const char* name) noexcept;

// Whether the file `path` is one of `library`'s objects, by its name: libcudnn*, libcudart*,
// libcuda.*.
bool is_library_file(Library library, const char* path) noexcept;

}  // namespace cudnn_fastpath::shim
