#include "shim/resolve.h"

#include <dlfcn.h>

#include <atomic>
#include <cstdio>
#include <cstring>

#include "shim/config.h"
#include "shim/log.h"

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

// Indexed by Library.
const LibrarySpec kLibraries[] = {
    {"cuDNN", "cudnnSetStream", kCudnnSonames, "libcudnn", "CUDNN_FASTPATH_CUDNN"},
    {"the CUDA runtime", "cudaStreamDestroy", kCudartSonames, "libcudart", "CUDNN_FASTPATH_CUDART"},
    // "libcuda." and not "libcuda": libcudart and libcudnn start with that too.
    {"the CUDA driver", "cuStreamDestroy_v2", kCudaSonames, "libcuda.", nullptr},
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
};

// One message of each kind per library, whichever caller meets the problem first. Relaxed: the
// flag only deduplicates a message.
std::atomic<bool> g_said_not_found[kLibraryCount];
std::atomic<bool> g_said_env_failure[kLibraryCount];
std::atomic<bool> g_said_full{false};
std::atomic<bool> g_needed[kLibraryCount];  // relaxed: a report's detail only

bool first_time(std::atomic<bool>& said) { return !said.exchange(true, std::memory_order_relaxed); }

// A symbol inside a copy of the shim (this one or another) is not a real function.
bool is_real(void* symbol) {
  if (symbol == nullptr) return false;
  LoadedObject object;
  return !object_containing(reinterpret_cast<std::uintptr_t>(symbol), object) || !object.is_shim;
}

// Every symbol of `library` from `handle`; false if a required one is missing.
bool fill(RealSymbols& real, void* handle, Library library) {
  bool complete = true;
#define CUDNN_FASTPATH_LOOK_UP(name, lib, required)                                 \
  if (Library::lib == library) {                                                    \
    real.name = reinterpret_cast<decltype(real.name)>(dlsym(handle, #name));        \
    if (required && real.name == nullptr) complete = false;                         \
  }
  CUDNN_FASTPATH_REAL_SYMBOLS(CUDNN_FASTPATH_LOOK_UP)
#undef CUDNN_FASTPATH_LOOK_UP
  return complete;
}

// Keeps an object loaded for as long as the process lives: the shim holds pointers into it.
void pin(const char* path) {
  if (path == nullptr || *path == '\0') return;
  if (void* handle = dlopen(path, RTLD_NOLOAD | RTLD_LAZY | RTLD_NODELETE)) dlclose(handle);
}

// Takes `library` from wherever dlsym(where, primary) leads, if that is a real definition. The
// other symbols come from the object that defines the primary one, so that one binding never
// mixes two libraries.
bool take(void* where, Library library, FoundBy how, Binding& out) {
  const LibrarySpec& spec = kLibraries[static_cast<int>(library)];
  void* primary = dlsym(where, spec.primary);
  if (!is_real(primary)) return false;
  Dl_info info{};
  if (dladdr(primary, &info) == 0 || info.dli_fname == nullptr) return false;
  void* defining = dlopen(info.dli_fname, RTLD_NOLOAD | RTLD_LAZY);
  Binding candidate;
  const bool complete = fill(candidate.real, defining ? defining : where, library);
  if (defining) dlclose(defining);
  if (!complete) return false;
  candidate.library = library;
  candidate.found_by = how;
  candidate.base = reinterpret_cast<std::uintptr_t>(info.dli_fbase);
  std::snprintf(candidate.object, sizeof candidate.object, "%s", info.dli_fname);
  out = candidate;
  return true;
}

bool take_from_file(const char* path, Library library, FoundBy how, Binding& out) {
  void* handle = dlopen(path, RTLD_NOLOAD | RTLD_LAZY);
  if (handle == nullptr) return false;
  const bool taken = take(handle, library, how, out);
  dlclose(handle);  // the binding's object is pinned by publish()
  return taken;
}

const Binding* publish(const Binding& candidate) {
  const int claimed = g_claimed.load(std::memory_order_relaxed);
  for (int i = 0; i < claimed && i < kMaxBindings; ++i) {
    if (g_published[i].load(std::memory_order_acquire) && g_bindings[i].library == candidate.library &&
        g_bindings[i].base == candidate.base)
      return &g_bindings[i];
  }
  const int index = g_claimed.fetch_add(1, std::memory_order_relaxed);
  if (index >= kMaxBindings) {
    if (first_time(g_said_full)) log_line("more than %d libraries bound; %s in %s is not used", kMaxBindings,
                                          kLibraries[static_cast<int>(candidate.library)].what, candidate.object);
    return &kNotFound[static_cast<int>(candidate.library)];
  }
  pin(candidate.object);
  g_bindings[index] = candidate;
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
  Binding found;

  // 1. Next in the global scope: every caller's lookups search it first (a program that links
  //    the library, or dlopens it RTLD_GLOBAL).
  bool ok = take(RTLD_NEXT, library, FoundBy::kRtldNext, found);

  // 2. The caller's own dependencies: a framework opened RTLD_LOCAL reaches the library it links
  //    (PyTorch), and two such frameworks may each link their own.
  if (!ok && caller != nullptr && !caller->is_main && !caller->is_shim && caller->path[0] != '\0') {
    ok = take_from_file(caller->path, library, FoundBy::kCallerScope, found);
    if (ok) pin(caller->path);  // the caller's address range stays its own
  }

  // 3. Loaded somewhere under its usual soname.
  for (const char* const* soname = spec.sonames; !ok && *soname; ++soname)
    ok = take_from_file(*soname, library, FoundBy::kNoload, found);

  // 4. Loaded under another name.
  if (!ok) {
    LoadedObject candidates[8];
    const std::size_t count = objects_named(spec.walk_prefix, candidates, 8);
    for (std::size_t i = 0; !ok && i < count; ++i)
      ok = take_from_file(candidates[i].path, library, FoundBy::kLoadedWalk, found);
  }

  // 5. Where the user says it is. Loading a library is done only on this explicit request.
  const char* env_path = library == Library::kCudnn    ? cfg.cudnn_path
                         : library == Library::kCudart ? cfg.cudart_path
                                                       : "";
  if (!ok && *env_path) {
    void* handle = dlopen(env_path, RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      if (first_time(g_said_env_failure[static_cast<int>(library)]))
        log_line("%s=%s cannot be loaded: %s", spec.env_name, env_path, dlerror());
    } else if (!(ok = take(handle, library, FoundBy::kEnvPath, found))) {
      if (first_time(g_said_env_failure[static_cast<int>(library)]))
        log_line("%s=%s does not define %s", spec.env_name, env_path, spec.primary);
    }
  }

  if (!ok) {
    if (first_time(g_said_not_found[static_cast<int>(library)]))
      log_line("cannot find the real %s (%s): not next in the search order, not a dependency of its "
               "caller, not loaded%s%s; calls fail",
               spec.primary, spec.what, spec.env_name ? ", " : "", spec.env_name ? spec.env_name : "");
    return &kNotFound[static_cast<int>(library)];
  }
  return publish(found);
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
  }
  return "?";
}

}  // namespace cudnn_fastpath::shim
