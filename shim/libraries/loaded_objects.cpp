#include "shim/libraries/loaded_objects.h"

#include <elf.h>
#include <link.h>

#include <cstring>

namespace cudnn_fastpath::shim {
namespace {

// The note every copy of the shim carries, in an allocated SHT_NOTE section, so that the linker
// puts it in a PT_NOTE segment that dl_iterate_phdr shows: name "cudnn-fastpath", type 1, and the
// version of the interface other copies reach it by (dispatch.h).
#define CUDNN_FASTPATH_NOTE_NAME "cudnn-fastpath"
constexpr char kNoteName[] = CUDNN_FASTPATH_NOTE_NAME;
constexpr std::uint32_t kNoteType = 1;
asm(".pushsection .note.cudnn_fastpath, \"a\", @note\n"
    ".balign 4\n"
    ".long 2f - 1f\n"  // name size, terminating zero included
    ".long 4f - 3f\n"  // descriptor size
    ".long 1\n"        // type
    "1: .asciz \"" CUDNN_FASTPATH_NOTE_NAME "\"\n"
    "2: .balign 4\n"
    "3: .long 2\n"  // the dispatch interface version (cudnn_fastpath_dispatch_v2)
    "4: .balign 4\n"
    ".popsection\n");

// Whether [address, address + size) lies inside one of the object's PT_LOAD segments: a note is
// read only where the object is mapped.
bool mapped(const dl_phdr_info& info, ElfW(Addr) address, std::size_t size) {
  for (int i = 0; i < info.dlpi_phnum; ++i) {
    const ElfW(Phdr)& segment = info.dlpi_phdr[i];
    if (segment.p_type != PT_LOAD) continue;
    const ElfW(Addr) start = info.dlpi_addr + segment.p_vaddr;
    if (address >= start && address + size <= start + segment.p_memsz) return true;
  }
  return false;
}

bool has_shim_note(const dl_phdr_info& info) {
  for (int i = 0; i < info.dlpi_phnum; ++i) {
    const ElfW(Phdr)& segment = info.dlpi_phdr[i];
    if (segment.p_type != PT_NOTE) continue;
    const ElfW(Addr) start = info.dlpi_addr + segment.p_vaddr;
    if (!mapped(info, start, segment.p_memsz)) continue;
    for (std::size_t offset = 0; offset + sizeof(ElfW(Nhdr)) <= segment.p_memsz;) {
      const auto* note = reinterpret_cast<const ElfW(Nhdr)*>(start + offset);
      const std::size_t name_size = (note->n_namesz + 3u) & ~std::size_t{3};
      const std::size_t desc_size = (note->n_descsz + 3u) & ~std::size_t{3};
      const auto* name = reinterpret_cast<const char*>(note + 1);
      if (offset + sizeof *note + name_size > segment.p_memsz) break;
      if (note->n_type == kNoteType && note->n_namesz == sizeof kNoteName &&
          std::memcmp(name, kNoteName, sizeof kNoteName) == 0)
        return true;
      offset += sizeof *note + name_size + desc_size;
    }
  }
  return false;
}

void describe(const dl_phdr_info& info, LoadedObject& object) {
  object = LoadedObject{};
  object.begin = ~std::uintptr_t{0};
  for (int i = 0; i < info.dlpi_phnum; ++i) {
    const ElfW(Phdr)& segment = info.dlpi_phdr[i];
    if (segment.p_type != PT_LOAD) continue;
    const std::uintptr_t start = info.dlpi_addr + segment.p_vaddr;
    if (start < object.begin) object.begin = start;
    if (start + segment.p_memsz > object.end) object.end = start + segment.p_memsz;
  }
  if (object.end == 0) object.begin = 0;
  object.base = info.dlpi_addr;
  const char* name = info.dlpi_name ? info.dlpi_name : "";
  object.is_main = *name == '\0';
  object.is_shim = has_shim_note(info);
  // A path too long to keep is kept empty: it is then never opened by name.
  if (std::strlen(name) < sizeof object.path) std::strcpy(object.path, name);
}

bool contains(const dl_phdr_info& info, std::uintptr_t address) {
  for (int i = 0; i < info.dlpi_phnum; ++i) {
    const ElfW(Phdr)& segment = info.dlpi_phdr[i];
    if (segment.p_type != PT_LOAD) continue;
    const std::uintptr_t start = info.dlpi_addr + segment.p_vaddr;
    if (address >= start && address < start + segment.p_memsz) return true;
  }
  return false;
}

// The walk's callbacks run under the loader's own lock: they only read and copy.
struct Containing {
  std::uintptr_t address;
  LoadedObject* object;
};
int find_containing(dl_phdr_info* info, size_t, void* data) {
  auto* search = static_cast<Containing*>(data);
  if (!contains(*info, search->address)) return 0;
  describe(*info, *search->object);
  return 1;
}

int find_first_copy(dl_phdr_info* info, size_t, void* data) {
  if (!has_shim_note(*info)) return 0;
  describe(*info, *static_cast<LoadedObject*>(data));
  return 1;
}

struct Before {
  const LoadedObject* object;
  bool before;
};
int find_before_shim(dl_phdr_info* info, size_t, void* data) {
  auto* search = static_cast<Before*>(data);
  if (has_shim_note(*info)) return 1;  // a copy of the shim first: the object is not before it
  if (info->dlpi_addr != search->object->base) return 0;
  const char* name = info->dlpi_name ? info->dlpi_name : "";
  if (search->object->is_main ? *name != '\0' : std::strcmp(name, search->object->path) != 0) return 0;
  search->before = true;
  return 1;
}

struct Named {
  const char* prefix;
  LoadedObject* objects;
  std::size_t capacity;
  std::size_t found;
};
int collect_named(dl_phdr_info* info, size_t, void* data) {
  auto* search = static_cast<Named*>(data);
  const char* name = base_name(info->dlpi_name ? info->dlpi_name : "");
  if (std::strncmp(name, search->prefix, std::strlen(search->prefix)) != 0) return 0;
  LoadedObject& object = search->objects[search->found];
  describe(*info, object);
  if (object.is_shim || object.path[0] == '\0') return 0;
  return ++search->found == search->capacity ? 1 : 0;
}

}  // namespace

const char* base_name(const char* path) noexcept {
  const char* slash = std::strrchr(path, '/');
  return slash ? slash + 1 : path;
}

bool object_containing(std::uintptr_t address, LoadedObject& object) noexcept {
  Containing search{address, &object};
  return dl_iterate_phdr(find_containing, &search) != 0;
}

bool loaded_before_shim(const LoadedObject& object) noexcept {
  Before search{&object, false};
  dl_iterate_phdr(find_before_shim, &search);
  return search.before;
}

bool first_shim_copy(LoadedObject& object) noexcept {
  return dl_iterate_phdr(find_first_copy, &object) != 0;
}

std::size_t objects_named(const char* prefix, LoadedObject* objects, std::size_t capacity) noexcept {
  if (capacity == 0) return 0;
  Named search{prefix, objects, capacity, 0};
  dl_iterate_phdr(collect_named, &search);
  return search.found;
}

LoadedObject own_object() noexcept {
  LoadedObject own;
  object_containing(reinterpret_cast<std::uintptr_t>(&own_object), own);
  return own;
}

}  // namespace cudnn_fastpath::shim
