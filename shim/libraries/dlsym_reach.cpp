// dlsym reach: the exported dlsym's C half (dlsym_reach.h; the jump is dlsym_entry.S).
#include "shim/libraries/dlsym_reach.h"

#include <dlfcn.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <initializer_list>

#include "shim/libraries/glibc_dlsym.h"
#include "shim/libraries/loaded_objects.h"
#include "shim/libraries/mode.h"
#include "shim/libraries/resolve.h"
#include "shim/process/config.h"
#include "shim/process/counters.h"
#include "shim/process/log.h"

namespace cudnn_fastpath::shim {
namespace {

// The interposed names by hash, built at compile time: a lookup of a name that is not one of them
// costs a few compares (most names do not start with "cu") or a hash and one probe.
constexpr int kEntries = static_cast<int>(EntryPoint::kCount);
constexpr int kNameSlots = 512;
static_assert(kNameSlots >= 2 * kEntries, "the name table stays at most half full");

constexpr std::uint32_t name_hash(const char* s) noexcept {
  std::uint32_t h = 2166136261u;  // FNV-1a
  for (; *s; ++s) h = (h ^ static_cast<unsigned char>(*s)) * 16777619u;
  return h;
}

struct NameTable {
  std::int16_t entry[kNameSlots];
};

constexpr NameTable make_name_table() noexcept {
  NameTable table{};
  for (std::int16_t& e : table.entry) e = -1;
  for (int i = 0; i < kEntries; ++i) {
    std::uint32_t slot = name_hash(kEntryPointNames[i]) & (kNameSlots - 1);
    while (table.entry[slot] >= 0) slot = (slot + 1) & (kNameSlots - 1);
    table.entry[slot] = static_cast<std::int16_t>(i);
  }
  return table;
}
constexpr NameTable kNames = make_name_table();

Library library_of(EntryPoint entry) { return kEntryPointLibraries[static_cast<int>(entry)]; }

// What it means for the caller that `entry` was answered with the library's own function
// (callers.h): a call that can receive a variant pack leaves it without proxies from then on; a
// legacy descriptor or op name, without legacy replay.
std::uint32_t declined_kind(EntryPoint entry) {
  if (entry == EntryPoint::cudnnBackendCreateDescriptor) return 0;  // takes no pack
  switch (entry) {
#define CUDNN_FASTPATH_CASE(exported, ...) case EntryPoint::exported:
    CUDNN_FASTPATH_BACKEND_ENTRY_POINTS(CUDNN_FASTPATH_CASE) return kDeclinedPacks;
    CUDNN_FASTPATH_LEGACY_DESCRIPTOR_ENTRY_POINTS(CUDNN_FASTPATH_CASE)
    CUDNN_FASTPATH_LEGACY_OP_ENTRY_POINTS(CUDNN_FASTPATH_CASE) return kDeclinedLegacy;
#undef CUDNN_FASTPATH_CASE
    default: break;
  }
  if (library_of(entry) == Library::kCublasLt || library_of(entry) == Library::kCublas) return kDeclinedBlas;
  return 0;
}

bool counting() { return (current_mode() & mode::kCounting) != 0; }

std::atomic<unsigned long long> g_cudnn_names_left{0};  // relaxed: a count read at exit

// Whether `object` defines `name` itself: then it is a wrapper (a tracer) looking for the function
// it wraps, not a program looking for cuDNN's. Its own handle finds its own definition first.
bool defines_itself(const LoadedObject& object, const char* name) {
  void* self = dlopen(object.is_main ? nullptr : object.path, RTLD_LAZY | RTLD_NOLOAD);
  if (self == nullptr) return false;
  const auto own = reinterpret_cast<std::uintptr_t>(glibc_dlsym(self, name));
  dlclose(self);
  return own >= object.begin && own < object.end;
}

// The binding `handle` leads to, when it is the one any other object of the process would reach
// too: a pointer handed out may be called from another object than the one that looked it up
// (ctypes looks up, libffi calls), and that object's calls must reach the same library. With two
// copies of the library loaded, nothing is handed out (nullptr).
const Binding* unambiguous_binding(Library library, void* handle) {
  const Binding* from_handle = resolve_in_handle(library, handle);
  const Binding* anyone = resolve(library, nullptr);
  if (from_handle == nullptr || anyone == nullptr || from_handle->base != anyone->base) return nullptr;
  return from_handle;
}

// The caller's binding for `library`, with `name` leading to `found`: the one it has when that is
// so already; the one the handle leads to, made so, when `name` there is the library's own
// function (`own`) and `found` an interposer's wrapper of it; nullptr when the caller reaches
// another library for this name (it keeps what it found).
const Binding* binding_reaching(Caller& c, Library library, void* handle, const char* name, void* own, void* found) {
  const Binding* binding = c.bindings[static_cast<int>(library)].load(std::memory_order_acquire);
  if (binding == nullptr) {
    binding = unambiguous_binding(library, handle);
    if (binding == nullptr) return nullptr;
    binding = adopt_binding(c, library, binding);
  }
  for (;;) {
    void* reached = real_pointer(*binding, name);
    if (reached == found) return binding;
    if (reached != own) return nullptr;
    const Binding* wrapped = with_pointer(*binding, name, found);
    if (wrapped == nullptr) return nullptr;
    const Binding* now = replace_binding(c, library, binding, wrapped);
    if (now == wrapped) return wrapped;
    binding = now;  // another thread changed it first: look again
  }
}

// The answer for a program's lookup: the shim's function, or `found` where a rule says so.
void* answer(Caller& c, const LoadedObject& from, EntryPoint entry, void* handle, void* own, void* found) {
  const Config& cfg = config();
  if (!cfg.dlsym) return found;
  // A copy that follows hands out nothing: its callers' entries would not be the leader's.
  if (current_mode() & mode::kFollower) return found;
  const char* name = kEntryPointNames[static_cast<int>(entry)];
  if (defines_itself(from, name)) return found;
  const Binding* binding = binding_reaching(c, library_of(entry), handle, name, own, found);
  // No binding (two copies of the library), or another library than this handle's for this
  // caller: it keeps what it found.
  if (binding == nullptr) {
    if (counting()) count(Counter::dlsym_declined);
    if (cfg.verbose) log_line("dlsym: %s for %s left to the library", name, from.is_main ? "the program" : from.path);
    return found;
  }
  // Relaxed: each bit is a fact on its own (callers.h).
  const int e = static_cast<int>(entry);
  std::uint64_t before = c.dlsym_names_taken[e / 64].fetch_or(std::uint64_t{1} << (e % 64), std::memory_order_relaxed);
  for (int w = 0; w < kEntryWords; ++w) before |= w == e / 64 ? 0 : c.dlsym_names_taken[w].load(std::memory_order_relaxed);
  if (counting()) count(Counter::dlsym_handed_out);
  if (before == 0 && cfg.verbose)
    log_line("dlsym: %s gets the shim's functions for %s", from.is_main ? "the program" : from.path,
             binding->object);
  return own_entry_point(entry);
}

}  // namespace

int entry_named(const char* name) noexcept {
  if (name == nullptr || name[0] != 'c' || name[1] != 'u') return -1;
  for (std::uint32_t slot = name_hash(name) & (kNameSlots - 1);; slot = (slot + 1) & (kNameSlots - 1)) {
    const int entry = kNames.entry[slot];
    if (entry < 0) return -1;
    if (std::strcmp(kEntryPointNames[entry], name) == 0) return entry;
  }
}

void* answer_lookup(EntryPoint entry, void* handle, const void* caller, void* found) noexcept {
  LoadedObject from, definer;
  // Code outside any object, and the lookups of the shim itself or of another copy of it.
  if (!object_containing(reinterpret_cast<std::uintptr_t>(caller), from) || from.is_shim) return found;
  // One of the libraries looking up its own functions or another's (cuDNN 9 opens its
  // sub-libraries and takes their functions this way).
  for (int l = 0; l < kLibraryCount; ++l)
    if (is_library_file(static_cast<Library>(l), from.path)) return found;
  // Only a name whose definition in the handle lies in the library itself: a program's own, or
  // one in some other object, stays as found. The next dlsym's answer may be a wrapper of it.
  void* own = glibc_dlsym(handle, kEntryPointNames[static_cast<int>(entry)]);
  if (own == nullptr || !object_containing(reinterpret_cast<std::uintptr_t>(own), definer) || definer.is_shim ||
      !is_library_file(library_of(entry), definer.path))
    return found;
  Caller* c = caller_entry(caller);
  if (c == nullptr) return found;
  void* result = answer(*c, from, entry, handle, own, found);
  // Whatever the reason (the way in switched off included), a caller that holds cuDNN's own
  // function for a call that takes a variant pack gets real packs from now on, and one that holds
  // a legacy one no legacy replay. Relaxed: as above.
  if (result == found)
    if (const std::uint32_t kind = declined_kind(entry)) c->dlsym_declined.fetch_or(kind, std::memory_order_relaxed);
  if (result == found && library_of(entry) == Library::kCudnn) g_cudnn_names_left.fetch_add(1, std::memory_order_relaxed);
  return result;
}

unsigned long long cudnn_names_left_to_library() noexcept { return g_cudnn_names_left.load(std::memory_order_relaxed); }

}  // namespace cudnn_fastpath::shim

namespace shim = cudnn_fastpath::shim;

// Not instrumented: the exported dlsym calls it for every lookup in a handle, a sanitizer
// runtime's early ones too (glibc_dlsym.cpp says why that matters). It reads the configuration
// and the mode only for an interposed name.
__attribute__((no_sanitize_address, no_sanitize_thread, no_sanitize_undefined)) bool cudnn_fastpath_dlsym_wants(
    void*, const char* name) {
  if (shim::entry_named(name) < 0) return false;
  // Disabled, or a copy that follows: a pure pass-through, the shim never looks.
  return !shim::config().disable && !(shim::current_mode() & shim::mode::kFollower);
}

void* cudnn_fastpath_dlsym_in_handle(void* handle, const char* name) {
  const void* caller = __builtin_return_address(0);  // jumped to: the program's return address
  void* found = shim::next_dlsym(handle, name);
  if (found == nullptr) return found;
  const int entry = shim::entry_named(name);
  void* result = shim::answer_lookup(static_cast<shim::EntryPoint>(entry), handle, caller, found);
  // answer_lookup may have called the loader, and a failed lookup of its own would stay in
  // dlerror()'s state: glibc clears that state at every call, so one more successful lookup leaves
  // it exactly as the program's own left it.
  shim::glibc_dlsym(handle, name);
  return result;
}
