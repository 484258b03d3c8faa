// What a loaded object's own references ask the loader for: the symbol version a reference to a
// name requires (its .gnu.version_r), and the libraries it needs (DT_NEEDED). Read from the
// object's mapped dynamic section inside dl_iterate_phdr: no dlopen, no dlsym, no lock of the shim.
#pragma once

#include <cstddef>

#include "shim/libraries/loaded_objects.h"

namespace cudnn_fastpath::shim {

inline constexpr std::size_t kVersionSize = 64;

// For each of `count` names, the version `object`'s undefined reference to it requires
// ("libcudnn.so.8"), copied into versions[i]; "" when it has no such reference, or an unversioned
// one; an empty name is skipped. One pass over the object's dynamic symbols (a framework's can hold a hundred thousand).
void required_versions(const LoadedObject& object, const char* const* names, std::size_t count,
                       char (*versions)[kVersionSize]) noexcept;

// Whether `object` defines symbol versions (DT_VERDEF). The dynamic linker binds a versioned
// reference to an unversioned definition only in an object that defines none.
bool defines_versions(const LoadedObject& object) noexcept;

inline constexpr std::size_t kMaxNeeded = 32;
inline constexpr std::size_t kNeededNameSize = 128;

// The sonames in `object`'s DT_NEEDED entries, in its order (at most kMaxNeeded; a longer name is
// left out). Returns how many were copied.
std::size_t needed_libraries(const LoadedObject& object, char (*names)[kNeededNameSize]) noexcept;

}  // namespace cudnn_fastpath::shim
