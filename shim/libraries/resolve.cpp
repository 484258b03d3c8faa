#include "shim/libraries/resolve.h"

#include <dlfcn.h>

#include <atomic>
#include <cstdio>
#include <cstring>

#include "shim/libraries/glibc_dlsym.h"
#include "shim/libraries/object_references.h"
#include "shim/process/config.h"
#include "shim/process/log.h"

namespace cudnn_fastpath::shim {
namespace {

struct LibrarySpec {
  const char* what;            // for messages
  const char* primary;         // the symbol that identifies the library
  const char* const* sonames;  // tried with RTLD_NOLOAD, in order, nullptr-terminated
  const char* walk_prefix;     // file-name prefix for the loaded-object walk
  const char* env_name;        // the variable naming the library's path, if there is one
};

constexpr const char* kCudnnSonames[] = {"libcudnn.so.9", "libcudnn.so.8", "libcudnn.so",
                                         "libcudnn_graph.so.9", nullptr};
constexpr const char* kCudartSonames[] = {"libcudart.so.13", "libcudart.so.12",
                                          "libcudart.so.11.0", "libcudart.so", nullptr};
constexpr const char* kCudaSonames[] = {"libcuda.so.1", "libcuda.so", nullptr};
constexpr const char* kCublasLtSonames[] = {"libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so.11", "libcublasLt.so",
                                            nullptr};
constexpr const char* kCublasSonames[] = {"libcublas.so.13", "libcublas.so.12", "libcublas.so.11", "libcublas.so", nullptr};

// Indexed by Library.
const LibrarySpec kLibraries[] = {
    {"cuDNN", "cudnnSetStream", kCudnnSonames, "libcudnn", "CUDNN_FASTPATH_CUDNN"},
    {"the CUDA runtime", "cudaStreamDestroy", kCudartSonames, "libcudart", "CUDNN_FASTPATH_CUDART"},
    // "libcuda." and not "libcuda": libcudart and libcudnn start with that too.
    {"the CUDA driver", "cuStreamDestroy_v2", kCudaSonames, "libcuda.", nullptr},
    {"cuBLASLt", "cublasLtMatmul", kCublasLtSonames, "libcublasLt", nullptr},
    // "libcublas." and not "libcublas": libcublasLt starts with that too.
    {"cuBLAS", "cublasCreate_v2", kCublasSonames, "libcublas.", nullptr},
};
constexpr int kLibraryCount = static_cast<int>(Library::kCount);
static_assert(sizeof kLibraries / sizeof kLibraries[0] == kLibraryCount, "one spec per library");

// Published bindings: written once each, then read by anyone. A slot is claimed with fetch_add and
// published with a release store of its flag; readers check the flag with acquire.
constexpr int kMaxBindings = 32;
Binding g_bindings[kMaxBindings];
std::atomic<bool> g_published[kMaxBindings];
std::atomic<int> g_claimed{0};

const Binding kNotFound[kLibraryCount] = {
    {RealSymbols{}, Library::kCudnn, FoundBy::kNotFound, 0, ""},
    {RealSymbols{}, Library::kCudart, FoundBy::kNotFound, 0, ""},
    {RealSymbols{}, Library::kCuda, FoundBy::kNotFound, 0, ""},
    {RealSymbols{}, Library::kCublasLt, FoundBy::kNotFound, 0, ""},
    {RealSymbols{}, Library::kCublas, FoundBy::kNotFound, 0, ""},
};

// One message of each kind per library, whichever caller meets the problem first. Relaxed: the
// flag only deduplicates a message.
std::atomic<bool> g_said_not_found[kLibraryCount];
std::atomic<bool> g_said_env_failure[kLibraryCount];
std::atomic<bool> g_said_full{false};
std::atomic<bool> g_needed[kLibraryCount];  // relaxed: a report's detail only

bool first_time(std::atomic<bool>& said) { return !said.exchange(true, std::memory_order_relaxed); }

// Where a name's definition for one caller was found: the pointer, its object and the step.
struct Definition {
  void* address = nullptr;
  FoundBy how = FoundBy::kNotFound;
  std::uintptr_t base = 0;  // load bias of the defining object
};

constexpr bool same_name(const char* a, const char* b) {
  while (*a && *a == *b) ++a, ++b;
  return *a == *b;
}
constexpr bool is_required(const char* name) {
  for (const char* required : kRequiredSymbols)
    if (same_name(name, required)) return true;
  return false;
}

// The table of real symbols as data: name, whether a library lacking it is refused, library.
#define CUDNN_FASTPATH_NAME_OF(name, lib, ...) {#name, is_required(#name), Library::lib},
struct TableEntry {
  const char* name;
  bool required;
  Library library;
};
constexpr TableEntry kTable[] = {CUDNN_FASTPATH_REAL_SYMBOLS(CUDNN_FASTPATH_NAME_OF)};
#undef CUDNN_FASTPATH_NAME_OF
constexpr int kTableSize = static_cast<int>(sizeof kTable / sizeof kTable[0]);

// Where RealSymbols keeps the pointer for table entry `index`.
void** slot_of(RealSymbols& real, int index) {
  void** slots[kTableSize] = {
#define CUDNN_FASTPATH_SLOT(name, ...) reinterpret_cast<void**>(&real.name),
      CUDNN_FASTPATH_REAL_SYMBOLS(CUDNN_FASTPATH_SLOT)
#undef CUDNN_FASTPATH_SLOT
  };
  return slots[index];
}

bool same_pointers(const RealSymbols& a, const RealSymbols& b) {
  bool same = true;
#define CUDNN_FASTPATH_COMPARE(name, ...) \
  same = same && reinterpret_cast<void*>(a.name) == reinterpret_cast<void*>(b.name);
  CUDNN_FASTPATH_REAL_SYMBOLS(CUDNN_FASTPATH_COMPARE)
#undef CUDNN_FASTPATH_COMPARE
  return same;
}

// What a reference to `name` requiring `version` ("": none) binds to among the definitions
// `where` leads to, as the dynamic linker decides it: the first definition, if its object defines
// no versions (the linker takes an unversioned definition there, dlvsym does not); else the one of
// that version.
void* look_up(void* where, const char* name, const char* version) {
  void* first = glibc_dlsym(where, name);
  if (!*version || first == nullptr) return first;
  LoadedObject object;
  if (object_containing(reinterpret_cast<std::uintptr_t>(first), object) && !defines_versions(object)) return first;
  return dlvsym(where, name, version);
}

// A definition the call may go to: not inside a copy of the shim (this one or another), and not
// inside `skipped`: a caller ahead of the shim (a tracer preloaded before it, forwarding to "the
// next one") must not get itself back. A caller after the shim may: cuDNN calling its own exported
// functions binds to them without the shim.
bool acceptable(void* symbol, const LoadedObject* skipped, Definition& out, FoundBy how) {
  if (symbol == nullptr) return false;
  const auto address = reinterpret_cast<std::uintptr_t>(symbol);
  if (skipped != nullptr && address >= skipped->begin && address < skipped->end) return false;
  LoadedObject object;
  if (object_containing(address, object) && object.is_shim) return false;
  Dl_info info{};
  if (dladdr(symbol, &info) == 0 || info.dli_fname == nullptr) return false;
  out.address = symbol;
  out.how = how;
  out.base = reinterpret_cast<std::uintptr_t>(info.dli_fbase);
  return true;
}

bool from_file(const char* path, const char* name, const char* version, const LoadedObject* skipped, FoundBy how,
               Definition& out) {
  void* handle = dlopen(path, RTLD_NOLOAD | RTLD_LAZY);
  if (handle == nullptr) return false;
  const bool found = acceptable(look_up(handle, name, version), skipped, out, how);
  dlclose(handle);  // the definition's object is pinned by publish()
  return found;
}

// The caller's own scope after the global one: what dlsym on its handle finds (itself, then its
// dependencies, breadth first), or, when that is a skipped definition of its own, what its needed
// libraries define.
bool in_caller_scope(const LoadedObject& caller, const LoadedObject* skipped, const char* name, const char* version,
                     Definition& out) {
  if (caller.is_main || caller.is_shim || caller.path[0] == '\0') return false;
  if (from_file(caller.path, name, version, skipped, FoundBy::kCallerScope, out)) return true;
  if (skipped == nullptr) return false;
  char needed[kMaxNeeded][kNeededNameSize];
  const std::size_t count = needed_libraries(caller, needed);
  for (std::size_t i = 0; i < count; ++i)
    if (from_file(needed[i], name, version, skipped, FoundBy::kCallerScope, out)) return true;
  return false;
}

// The next definition of `name` for `caller`, in the order its own reference would be bound
// without the shim: the global scope after the shim (where a tracer preloaded after it sits),
// then the caller's own dependencies (a framework opened RTLD_LOCAL), then the fallbacks.
// `skipped` is the caller when it comes before the shim, else nullptr.
bool next_definition(const char* name, const char* version, const LoadedObject* caller, const LoadedObject* skipped,
                     Library library, Definition& out) {
  const LibrarySpec& spec = kLibraries[static_cast<int>(library)];
  // 1. Next in the global scope. A copy of the shim there is no definition; what lies after it is
  //    then found by the steps below (docs/design.md, finding the real functions).
  if (acceptable(look_up(RTLD_NEXT, name, version), skipped, out, FoundBy::kRtldNext)) return true;
  // 2. The caller's own dependencies.
  if (caller != nullptr && in_caller_scope(*caller, skipped, name, version, out)) return true;
  // 3. Loaded somewhere under its usual soname.
  for (const char* const* soname = spec.sonames; *soname; ++soname)
    if (from_file(*soname, name, version, skipped, FoundBy::kNoload, out)) return true;
  // 4. Loaded under another name.
  LoadedObject candidates[8];
  const std::size_t count = objects_named(spec.walk_prefix, candidates, 8);
  for (std::size_t i = 0; i < count; ++i)
    if (from_file(candidates[i].path, name, version, skipped, FoundBy::kLoadedWalk, out)) return true;
  return false;
}

// Keeps the object defining `symbol` loaded for as long as the process lives: the shim holds
// pointers into it.
void pin(void* symbol) {
  Dl_info info{};
  if (dladdr(symbol, &info) == 0 || info.dli_fname == nullptr || *info.dli_fname == '\0') return;
  if (void* handle = dlopen(info.dli_fname, RTLD_NOLOAD | RTLD_LAZY | RTLD_NODELETE)) dlclose(handle);
}

const Binding* publish(const Binding& candidate, const Definition* definitions, int count) {
  const int claimed = g_claimed.load(std::memory_order_relaxed);
  for (int i = 0; i < claimed && i < kMaxBindings; ++i) {
    if (g_published[i].load(std::memory_order_acquire) && g_bindings[i].library == candidate.library &&
        same_pointers(g_bindings[i].real, candidate.real))
      return &g_bindings[i];
  }
  const int index = g_claimed.fetch_add(1, std::memory_order_relaxed);
  if (index >= kMaxBindings) {
    if (first_time(g_said_full)) log_line("more than %d libraries bound; %s in %s is not used", kMaxBindings,
                                          kLibraries[static_cast<int>(candidate.library)].what, candidate.object);
    return &kNotFound[static_cast<int>(candidate.library)];
  }
  for (int i = 0; i < count; ++i) pin(definitions[i].address);  // every object a pointer leads into
  g_bindings[index] = candidate;
  g_bindings[index].replays = candidate.library == Library::kCuda && candidate.real.complete();
  // Release: whoever sees the flag (acquire) sees the binding's contents.
  g_published[index].store(true, std::memory_order_release);
  if (config().verbose)
    log_line("%s found by %s in %s", kLibraries[static_cast<int>(candidate.library)].what,
             to_string(candidate.found_by), candidate.object);
  return &g_bindings[index];
}

}  // namespace

const Binding* resolve(Library library, const LoadedObject* caller) noexcept {
  g_needed[static_cast<int>(library)].store(true, std::memory_order_relaxed);
  const LibrarySpec& spec = kLibraries[static_cast<int>(library)];
  const Config& cfg = config();

  // The version each of the caller's references asks for; a name it does not reference (the shim
  // calls some on its own) takes the version its other references to the library ask for, so that
  // one binding never mixes two versions of a library.
  const char* names[kTableSize];
  for (int i = 0; i < kTableSize; ++i) names[i] = kTable[i].library == library ? kTable[i].name : "";
  char versions[kTableSize][kVersionSize] = {};
  if (caller != nullptr) required_versions(*caller, names, kTableSize, versions);
  const char* library_version = "";
  for (int i = 0; i < kTableSize && !*library_version; ++i) library_version = versions[i];

  const char* env_path = library == Library::kCudnn    ? cfg.cudnn_path
                         : library == Library::kCudart ? cfg.cudart_path
                                                       : "";
  // A caller ahead of the shim reached it through "the next definition" (a tracer preloaded before
  // it): its own definitions are behind it. The library itself is never skipped (cuDNN's calls of
  // its own functions, reaching a shim opened after it).
  const bool is_the_library =
      caller != nullptr && std::strncmp(base_name(caller->path), spec.walk_prefix, std::strlen(spec.walk_prefix)) == 0;
  const LoadedObject* skipped = caller != nullptr && !is_the_library && loaded_before_shim(*caller) ? caller : nullptr;
  Binding found;
  found.library = library;
  Definition definitions[kTableSize];
  int defined = 0;
  bool complete = true;
  void* env_handle = nullptr;
  bool env_tried = false;
  for (int i = 0; i < kTableSize; ++i) {
    if (kTable[i].library != library) continue;
    const char* name = kTable[i].name;
    const char* version = *versions[i] ? versions[i] : library_version;
    Definition d;
    bool ok = next_definition(name, version, caller, skipped, library, d);
    // 5. Where the user says it is. Loading a library is done only on this explicit request.
    if (!ok && *env_path && !env_tried) {
      env_tried = true;
      env_handle = dlopen(env_path, RTLD_NOW | RTLD_LOCAL);
      if (env_handle == nullptr && first_time(g_said_env_failure[static_cast<int>(library)]))
        log_line("%s=%s cannot be loaded: %s", spec.env_name, env_path, dlerror());
    }
    if (!ok && env_handle != nullptr) ok = acceptable(look_up(env_handle, name, version), skipped, d, FoundBy::kEnvPath);
    // A version nothing defines: the dynamic linker would have refused the program; the shim
    // fails open to the default version instead.
    if (!ok && *version) ok = next_definition(name, "", caller, skipped, library, d);
    if (!ok) {
      complete = complete && !kTable[i].required;
      continue;
    }
    *slot_of(found.real, i) = d.address;
    definitions[defined++] = d;
  }
  if (env_handle != nullptr && !complete && first_time(g_said_env_failure[static_cast<int>(library)]))
    log_line("%s=%s does not define %s", spec.env_name, env_path, spec.primary);

  if (!complete) {
    if (first_time(g_said_not_found[static_cast<int>(library)]))
      log_line("cannot find the real %s (%s): not next in the search order, not a dependency of its "
               "caller, not loaded%s%s; calls fail",
               spec.primary, spec.what, spec.env_name ? ", " : "", spec.env_name ? spec.env_name : "");
    return &kNotFound[static_cast<int>(library)];
  }
  // The binding's identity for reports: the object most of its names lead to (the library itself,
  // with a tracer in front of a few of them); the first such in table order on a tie.
  int best = 0, best_count = 0;
  for (int i = 0; i < defined; ++i) {
    int same = 0;
    for (int j = 0; j < defined; ++j) same += definitions[j].base == definitions[i].base;
    if (same > best_count) best = i, best_count = same;
  }
  found.found_by = definitions[best].how;
  found.base = definitions[best].base;
  Dl_info info{};
  if (dladdr(definitions[best].address, &info) != 0 && info.dli_fname != nullptr)
    std::snprintf(found.object, sizeof found.object, "%s", info.dli_fname);
  return publish(found, definitions, defined);
}

const Binding* resolve_in_handle(Library library, void* handle) noexcept {
  Binding found;
  found.library = library;
  found.found_by = FoundBy::kDlsymHandle;
  Definition definitions[kTableSize];
  int defined = 0;
  for (int i = 0; i < kTableSize; ++i) {
    if (kTable[i].library != library) continue;
    Definition d;
    if (!acceptable(glibc_dlsym(handle, kTable[i].name), nullptr, d, FoundBy::kDlsymHandle)) {
      if (kTable[i].required) return nullptr;
      continue;
    }
    *slot_of(found.real, i) = d.address;
    definitions[defined++] = d;
  }
  if (defined == 0) return nullptr;
  found.base = definitions[0].base;
  Dl_info info{};
  if (dladdr(definitions[0].address, &info) != 0 && info.dli_fname != nullptr)
    std::snprintf(found.object, sizeof found.object, "%s", info.dli_fname);
  const Binding* published = publish(found, definitions, defined);
  return published->found_by == FoundBy::kNotFound ? nullptr : published;
}

const Binding* with_pointer(const Binding& binding, const char* name, void* pointer) noexcept {
  Binding changed = binding;
  Definition d;
  int index = 0;
  while (index < kTableSize && std::strcmp(kTable[index].name, name) != 0) ++index;
  if (index == kTableSize || kTable[index].library != binding.library ||
      !acceptable(pointer, nullptr, d, binding.found_by))
    return nullptr;
  *slot_of(changed.real, index) = pointer;
  const Binding* published = publish(changed, &d, 1);
  return published->found_by == FoundBy::kNotFound ? nullptr : published;
}

void* real_pointer(const Binding& binding, const char* name) noexcept {
  for (int i = 0; i < kTableSize; ++i)
    if (std::strcmp(kTable[i].name, name) == 0) return *slot_of(const_cast<RealSymbols&>(binding.real), i);
  return nullptr;
}

bool is_library_file(Library library, const char* path) noexcept {
  const char* prefix = kLibraries[static_cast<int>(library)].walk_prefix;
  return std::strncmp(base_name(path), prefix, std::strlen(prefix)) == 0;
}

const Binding* first_binding(Library library) noexcept {
  const int claimed = g_claimed.load(std::memory_order_relaxed);
  for (int i = 0; i < claimed && i < kMaxBindings; ++i)
    if (g_published[i].load(std::memory_order_acquire) && g_bindings[i].library == library)
      return &g_bindings[i];
  return nullptr;
}

int distinct_bindings(Library library) noexcept {
  const int claimed = g_claimed.load(std::memory_order_relaxed);
  int distinct = 0;
  for (int i = 0; i < claimed && i < kMaxBindings; ++i) {
    if (!g_published[i].load(std::memory_order_acquire) || g_bindings[i].library != library) continue;
    bool seen = false;
    for (int j = 0; j < i; ++j)
      seen = seen || (g_published[j].load(std::memory_order_acquire) && g_bindings[j].library == library &&
                      g_bindings[j].base == g_bindings[i].base);
    distinct += seen ? 0 : 1;
  }
  return distinct;
}

const char* how_found(Library library) noexcept {
  if (const Binding* first = first_binding(library)) return to_string(first->found_by);
  return g_needed[static_cast<int>(library)].load(std::memory_order_relaxed) ? "not_found" : "unused";
}

const char* to_string(FoundBy found_by) noexcept {
  switch (found_by) {
    case FoundBy::kNotFound: return "not_found";
    case FoundBy::kRtldNext: return "rtld_next";
    case FoundBy::kCallerScope: return "caller_scope";
    case FoundBy::kNoload: return "noload";
    case FoundBy::kLoadedWalk: return "loaded_walk";
    case FoundBy::kEnvPath: return "env_path";
    case FoundBy::kDlsymHandle: return "dlsym_handle";
  }
  return "?";
}

}  // namespace cudnn_fastpath::shim
