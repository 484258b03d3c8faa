// What the dynamic loader has mapped, read through dl_iterate_phdr alone: which object an address
// belongs to, and which objects are copies of this shim (they carry its ELF note, whatever their
// file is called). Nothing here calls dlopen or dlsym, and nothing holds a lock of the shim.
#pragma once

#include <cstddef>
#include <cstdint>

namespace cudnn_fastpath::shim {

struct LoadedObject {
  std::uintptr_t begin = 0;  // lowest and one past the highest address of its PT_LOAD segments
  std::uintptr_t end = 0;
  std::uintptr_t base = 0;  // the load bias (dlpi_addr): with the file, the object's identity
  bool is_main = false;     // the program itself (the loader names it "")
  bool is_shim = false;     // carries this shim's note: a copy of the shim (or this one)
  char path[512] = {};      // as the loader knows it; "" for the program
};

// The object whose segments contain `address`; false for an address outside every object (code
// made at run time, say).
bool object_containing(std::uintptr_t address, LoadedObject& object) noexcept;

// The first object in the loader's order (load order: the program, preloads, then the rest) that
// carries the shim's note. False if none does.
bool first_shim_copy(LoadedObject& object) noexcept;

// Whether `object` comes before every copy of the shim in the loader's order (the program, and
// libraries preloaded ahead of the shim): its own definitions of a name then come before the
// shim's in the global scope, never after it.
bool loaded_before_shim(const LoadedObject& object) noexcept;

// Up to `capacity` objects whose file name starts with `prefix`, in load order, copies of the
// shim excluded. Returns how many were found.
std::size_t objects_named(const char* prefix, LoadedObject* objects, std::size_t capacity) noexcept;

// This copy of the shim (a walk of the loaded objects: not for hot paths).
LoadedObject own_object() noexcept;

// The file-name part of a path.
const char* base_name(const char* path) noexcept;

}  // namespace cudnn_fastpath::shim
