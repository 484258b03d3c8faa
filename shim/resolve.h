// Finding one library's real functions for one calling object: the chain of lookups, in order.
#pragma once

#include "shim/loaded_objects.h"
#include "shim/real_symbols.h"

namespace cudnn_fastpath::shim {

// Looks `library` up for a caller in `caller` (nullptr: unknown, e.g. code made at run time) and
// returns the published binding, or a binding whose pointers are null. Calls the loader (dlsym,
// dlopen with RTLD_NOLOAD, dladdr, dl_iterate_phdr) and holds no lock of the shim meanwhile; two
// threads resolving at once both succeed, and may publish two equal bindings.
const Binding* resolve(Library library, const LoadedObject* caller) noexcept;

}  // namespace cudnn_fastpath::shim
