#include "shim/libraries/object_references.h"

#include <elf.h>
#include <link.h>

#include <cstdint>
#include <cstring>

namespace cudnn_fastpath::shim {
namespace {

// The parts of one object's dynamic section these lookups read.
struct DynamicTables {
  const dl_phdr_info* info = nullptr;
  const ElfW(Dyn)* dynamic = nullptr;
  const ElfW(Sym)* symbols = nullptr;
  const char* strings = nullptr;
  const ElfW(Half)* versions = nullptr;  // DT_VERSYM: one entry per symbol
  const ElfW(Verneed)* needed_versions = nullptr;
  std::size_t needed_version_count = 0;
  std::size_t symbol_count = 0;
};

bool in_segment(const dl_phdr_info& info, std::uintptr_t address, std::size_t size) {
  for (int i = 0; i < info.dlpi_phnum; ++i) {
    const ElfW(Phdr)& segment = info.dlpi_phdr[i];
    if (segment.p_type != PT_LOAD) continue;
    const std::uintptr_t start = info.dlpi_addr + segment.p_vaddr;
    if (address >= start && address + size <= start + segment.p_memsz) return true;
  }
  return false;
}

// glibc relocates most address entries of a loaded object's dynamic section in place, not all of
// them (DT_VERNEED stays an offset): an offset is below the load bias, an address is not.
std::uintptr_t address_of(const dl_phdr_info& info, ElfW(Addr) value) {
  return value >= info.dlpi_addr ? value : info.dlpi_addr + value;
}

// Symbols in DT_GNU_HASH's table: the highest index any chain reaches, plus one (the unhashed,
// undefined symbols come before symoffset).
std::size_t gnu_hash_symbol_count(const std::uint32_t* table) {
  const std::uint32_t buckets = table[0], first = table[1], bloom_words = table[2];
  const auto* bucket = reinterpret_cast<const std::uint32_t*>(reinterpret_cast<const ElfW(Addr)*>(table + 4) + bloom_words);
  const std::uint32_t* chain = bucket + buckets;
  std::uint32_t last = 0;
  for (std::uint32_t b = 0; b < buckets; ++b) last = bucket[b] > last ? bucket[b] : last;
  if (last < first) return first;
  while ((chain[last - first] & 1u) == 0) ++last;
  return last + 1;
}

bool read_tables(const dl_phdr_info& info, DynamicTables& tables) {
  tables.info = &info;
  for (int i = 0; i < info.dlpi_phnum; ++i)
    if (info.dlpi_phdr[i].p_type == PT_DYNAMIC)
      tables.dynamic = reinterpret_cast<const ElfW(Dyn)*>(info.dlpi_addr + info.dlpi_phdr[i].p_vaddr);
  if (tables.dynamic == nullptr) return false;
  const std::uint32_t* sysv_hash = nullptr;
  const std::uint32_t* gnu_hash = nullptr;
  for (const ElfW(Dyn)* d = tables.dynamic; d->d_tag != DT_NULL; ++d) {
    switch (d->d_tag) {
      case DT_SYMTAB: tables.symbols = reinterpret_cast<const ElfW(Sym)*>(address_of(info, d->d_un.d_ptr)); break;
      case DT_STRTAB: tables.strings = reinterpret_cast<const char*>(address_of(info, d->d_un.d_ptr)); break;
      case DT_VERSYM: tables.versions = reinterpret_cast<const ElfW(Half)*>(address_of(info, d->d_un.d_ptr)); break;
      case DT_VERNEED:
        tables.needed_versions = reinterpret_cast<const ElfW(Verneed)*>(address_of(info, d->d_un.d_ptr));
        break;
      case DT_VERNEEDNUM: tables.needed_version_count = d->d_un.d_val; break;
      case DT_HASH: sysv_hash = reinterpret_cast<const std::uint32_t*>(address_of(info, d->d_un.d_ptr)); break;
      case DT_GNU_HASH: gnu_hash = reinterpret_cast<const std::uint32_t*>(address_of(info, d->d_un.d_ptr)); break;
      default: break;
    }
  }
  // Only tables inside the object's own mapping are read.
  const auto mapped = [&](const void* p, std::size_t size) {
    return p != nullptr && in_segment(info, reinterpret_cast<std::uintptr_t>(p), size);
  };
  if (!mapped(tables.strings, 1)) return false;
  if (!mapped(tables.symbols, sizeof(ElfW(Sym)))) tables.symbols = nullptr;
  if (tables.symbols != nullptr) {
    if (mapped(sysv_hash, 8)) tables.symbol_count = sysv_hash[1];  // nchain: one per symbol
    else if (mapped(gnu_hash, 16)) tables.symbol_count = gnu_hash_symbol_count(gnu_hash);
    if (tables.symbol_count == 0 || !mapped(tables.symbols + (tables.symbol_count - 1), sizeof(ElfW(Sym))))
      tables.symbol_count = 0;
  }
  if (tables.versions != nullptr && !mapped(tables.versions, sizeof(ElfW(Half)) * (tables.symbol_count + 1)))
    tables.versions = nullptr;
  if (!mapped(tables.needed_versions, sizeof(ElfW(Verneed)))) tables.needed_versions = nullptr;
  return true;
}

// The name of version index `index` among the object's needed versions; nullptr if none.
const char* needed_version_name(const DynamicTables& t, ElfW(Half) index) {
  const auto* need = reinterpret_cast<const char*>(t.needed_versions);
  for (std::size_t n = 0; need != nullptr && n < t.needed_version_count; ++n) {
    const auto* entry = reinterpret_cast<const ElfW(Verneed)*>(need);
    const auto* aux = reinterpret_cast<const char*>(entry) + entry->vn_aux;
    for (unsigned a = 0; a < entry->vn_cnt; ++a) {
      const auto* version = reinterpret_cast<const ElfW(Vernaux)*>(aux);
      if (!in_segment(*t.info, reinterpret_cast<std::uintptr_t>(version), sizeof *version)) return nullptr;
      if (version->vna_other == index) return t.strings + version->vna_name;
      if (version->vna_next == 0) break;
      aux += version->vna_next;
    }
    if (entry->vn_next == 0) break;
    need += entry->vn_next;
  }
  return nullptr;
}

// The object to read: the one with the load bias and the name of `object` (the program: "").
struct Search {
  const LoadedObject* object;
  const char* const* names;  // version lookups: the referenced symbols
  std::size_t name_count;
  char (*versions)[kVersionSize];   // their versions, out
  char (*needed)[kNeededNameSize];  // needed lookups: the names, out
  std::size_t found;
};

bool is_object(const dl_phdr_info& info, const LoadedObject& object) {
  const char* name = info.dlpi_name ? info.dlpi_name : "";
  return info.dlpi_addr == object.base && (object.is_main ? *name == '\0' : std::strcmp(name, object.path) == 0);
}

// The walk's callbacks run under the loader's lock: they only read and copy.
int find_versions(dl_phdr_info* info, size_t, void* data) {
  auto* search = static_cast<Search*>(data);
  if (!is_object(*info, *search->object)) return 0;
  DynamicTables t;
  if (!read_tables(*info, t) || t.symbols == nullptr || t.versions == nullptr) return 1;
  for (std::size_t i = 1; i < t.symbol_count && search->found < search->name_count; ++i) {
    const ElfW(Sym)& symbol = t.symbols[i];
    if (symbol.st_shndx != SHN_UNDEF) continue;
    const char* symbol_name = t.strings + symbol.st_name;
    for (std::size_t n = 0; n < search->name_count; ++n) {
      if (!*search->names[n] || std::strcmp(symbol_name, search->names[n]) != 0) continue;
      ++search->found;
      const ElfW(Half) index = t.versions[i] & 0x7fff;  // the top bit marks a hidden version
      if (index < 2) break;                              // local or global: unversioned
      const char* version = needed_version_name(t, index);
      if (version != nullptr && std::strlen(version) < kVersionSize) std::strcpy(search->versions[n], version);
      break;
    }
  }
  return 1;
}

int find_needed(dl_phdr_info* info, size_t, void* data) {
  auto* search = static_cast<Search*>(data);
  if (!is_object(*info, *search->object)) return 0;
  DynamicTables t;
  if (!read_tables(*info, t)) return 1;
  for (const ElfW(Dyn)* d = t.dynamic; d->d_tag != DT_NULL && search->found < kMaxNeeded; ++d) {
    if (d->d_tag != DT_NEEDED) continue;
    const char* name = t.strings + d->d_un.d_val;
    if (std::strlen(name) < kNeededNameSize) std::strcpy(search->needed[search->found++], name);
  }
  return 1;
}

int find_version_definitions(dl_phdr_info* info, size_t, void* data) {
  auto* search = static_cast<Search*>(data);
  if (!is_object(*info, *search->object)) return 0;
  DynamicTables t;
  if (!read_tables(*info, t)) return 1;
  for (const ElfW(Dyn)* d = t.dynamic; d->d_tag != DT_NULL; ++d)
    if (d->d_tag == DT_VERDEF) search->found = 1;
  return 1;
}

}  // namespace

bool defines_versions(const LoadedObject& object) noexcept {
  Search search{&object, nullptr, 0, nullptr, nullptr, 0};
  dl_iterate_phdr(find_version_definitions, &search);
  return search.found != 0;
}

void required_versions(const LoadedObject& object, const char* const* names, std::size_t count,
                       char (*versions)[kVersionSize]) noexcept {
  for (std::size_t n = 0; n < count; ++n) versions[n][0] = '\0';
  Search search{&object, names, count, versions, nullptr, 0};
  dl_iterate_phdr(find_versions, &search);
}

std::size_t needed_libraries(const LoadedObject& object, char (*names)[kNeededNameSize]) noexcept {
  Search search{&object, nullptr, 0, nullptr, names, 0};
  dl_iterate_phdr(find_needed, &search);
  return search.found;
}

}  // namespace cudnn_fastpath::shim
