#include "shim/real_symbols.h"

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>

#include <cstdio>
#include <cstring>

#include "shim/config.h"
#include "shim/log.h"

namespace cudnn_fastpath::shim {
namespace {

struct LibrarySpec {
  const char* what;             // for messages
  const char* primary;          // the symbol that identifies the library
  const char* const* sonames;   // tried with RTLD_NOLOAD, in order, nullptr-terminated
  const char* walk_prefix;      // file-name prefix for the loaded-object walk
  const char* env_name;         // the variable naming the library's path
};

constexpr const char* kCudnnSonames[] = {"libcudnn.so.9", "libcudnn.so.8", "libcudnn.so",
                                         "libcudnn_graph.so.9", nullptr};
constexpr const char* kCudartSonames[] = {"libcudart.so.13", "libcudart.so.12",
                                          "libcudart.so.11.0", "libcudart.so", nullptr};

const LibrarySpec kLibraries[] = {
    {"cuDNN", "cudnnSetStream", kCudnnSonames, "libcudnn", "CUDNN_FASTPATH_CUDNN"},
    {"the CUDA runtime", "cudaStreamDestroy", kCudartSonames, "libcudart", "CUDNN_FASTPATH_CUDART"},
};

constexpr char kShimFilePrefix[] = "libcudnn_fastpath";

RealSymbols g_real;
Resolution g_resolution[static_cast<int>(Library::kCount)];
pthread_once_t g_once[static_cast<int>(Library::kCount)] = {PTHREAD_ONCE_INIT, PTHREAD_ONCE_INIT};

const char* base_name(const char* path) {
  const char* slash = std::strrchr(path, '/');
  return slash ? slash + 1 : path;
}

// The shim's own load address: pointers into it are never "real".
const void* own_base() {
  Dl_info info{};
  dladdr(reinterpret_cast<void*>(&own_base), &info);
  return info.dli_fbase;
}

bool is_shim_file(const char* path) {
  return std::strncmp(base_name(path), kShimFilePrefix, sizeof kShimFilePrefix - 1) == 0;
}

enum class Verdict { kReal, kOwn, kOtherCopy, kMissing };

Verdict judge(void* symbol, Dl_info& info) {
  if (symbol == nullptr) return Verdict::kMissing;
  if (dladdr(symbol, &info) == 0 || info.dli_fname == nullptr) return Verdict::kReal;
  if (info.dli_fbase == own_base()) return Verdict::kOwn;
  if (is_shim_file(info.dli_fname)) return Verdict::kOtherCopy;
  return Verdict::kReal;
}

// Looks every symbol of `library` up in `where` (a handle or RTLD_NEXT) and commits them only if
// all are real. Returns the verdict on the primary symbol; `info` describes its object.
Verdict take_all(void* where, Library library, Dl_info& info) {
  RealSymbols found = g_real;
  Verdict primary = Verdict::kMissing;
  bool all_real = true;
  const char* primary_name = kLibraries[static_cast<int>(library)].primary;
#define CUDNN_FASTPATH_LOOK_UP(name, lib)                                  \
  if (Library::lib == library) {                                           \
    void* symbol = dlsym(where, #name);                                    \
    Dl_info symbol_info{};                                                 \
    const Verdict verdict = judge(symbol, symbol_info);                    \
    if (std::strcmp(#name, primary_name) == 0) {                           \
      primary = verdict;                                                   \
      info = symbol_info;                                                  \
    }                                                                      \
    if (verdict == Verdict::kReal || verdict == Verdict::kOtherCopy)       \
      found.name = reinterpret_cast<decltype(found.name)>(symbol);         \
    else                                                                   \
      all_real = false;                                                    \
  }
  CUDNN_FASTPATH_REAL_SYMBOLS(CUDNN_FASTPATH_LOOK_UP)
#undef CUDNN_FASTPATH_LOOK_UP
  // Another copy of the shim defines only the interposed names, and only those are called when
  // passing through to it; a real library must define them all.
  if (primary == Verdict::kOtherCopy || (primary == Verdict::kReal && all_real)) g_real = found;
  else if (primary == Verdict::kReal) primary = Verdict::kMissing;  // incomplete library
  return primary;
}

void record(Library library, FoundBy found_by, const char* object) {
  Resolution& r = g_resolution[static_cast<int>(library)];
  r.found_by = found_by;
  std::snprintf(r.object, sizeof r.object, "%s", object ? object : "?");
}

// Keeps the object loaded for as long as the process lives: the shim holds pointers into it.
void pin(const char* object_path) {
  if (object_path != nullptr && *object_path != '\0') dlopen(object_path, RTLD_NOLOAD | RTLD_LAZY);
}

struct WalkState {
  const char* prefix;
  char candidates[8][512];
  int count;
};

int collect_candidate(dl_phdr_info* object, size_t, void* data) {
  auto* state = static_cast<WalkState*>(data);
  if (object->dlpi_name == nullptr || *object->dlpi_name == '\0') return 0;
  const char* name = base_name(object->dlpi_name);
  if (std::strncmp(name, state->prefix, std::strlen(state->prefix)) != 0) return 0;
  if (is_shim_file(name)) return 0;
  if (std::strlen(object->dlpi_name) >= sizeof state->candidates[0]) return 0;
  std::strcpy(state->candidates[state->count++], object->dlpi_name);
  return state->count == 8 ? 1 : 0;  // enough: stop walking
}

bool resolve_from_loaded_objects(Library library, const LibrarySpec& spec) {
  // dlopen is not called inside the walk: the walk holds the loader's lock.
  static WalkState state;  // under pthread_once: one walk at a time
  state.prefix = spec.walk_prefix;
  state.count = 0;
  dl_iterate_phdr(collect_candidate, &state);
  for (int i = 0; i < state.count; ++i) {
    void* handle = dlopen(state.candidates[i], RTLD_NOLOAD | RTLD_LAZY);
    if (handle == nullptr) continue;
    Dl_info info{};
    if (take_all(handle, library, info) == Verdict::kReal) {
      record(library, FoundBy::kLoadedWalk, state.candidates[i]);
      return true;
    }
    dlclose(handle);
  }
  return false;
}

void resolve(Library library) {
  const LibrarySpec& spec = kLibraries[static_cast<int>(library)];
  const Config& cfg = config();
  Dl_info info{};

  // 1. Next in the global search order: a program that links the library, or dlopens it globally.
  switch (take_all(RTLD_NEXT, library, info)) {
    case Verdict::kReal:
      pin(info.dli_fname);
      record(library, FoundBy::kRtldNext, info.dli_fname);
      break;
    case Verdict::kOtherCopy: {
      Dl_info self{};
      dladdr(reinterpret_cast<void*>(&own_base), &self);
      log_line("another copy of the shim is loaded (%s); this one (%s) passes calls through to it",
               info.dli_fname, self.dli_fname ? self.dli_fname : "?");
      record(library, FoundBy::kOtherCopy, info.dli_fname);
      break;
    }
    default:
      break;
  }

  // 2. Already loaded, but in a local scope that RTLD_NEXT does not search (PyTorch).
  for (const char* const* soname = spec.sonames; *soname && resolution(library).found_by == FoundBy::kNotFound;
       ++soname) {
    void* handle = dlopen(*soname, RTLD_NOLOAD | RTLD_LAZY);
    if (handle == nullptr) continue;
    if (take_all(handle, library, info) == Verdict::kReal) record(library, FoundBy::kNoload, info.dli_fname);
    else dlclose(handle);
  }

  // 3. Loaded under another name.
  if (g_resolution[static_cast<int>(library)].found_by == FoundBy::kNotFound)
    resolve_from_loaded_objects(library, spec);

  // 4. Where the user says it is. Loading a library is done only on this explicit request.
  const char* env_path = library == Library::kCudnn ? cfg.cudnn_path : cfg.cudart_path;
  if (g_resolution[static_cast<int>(library)].found_by == FoundBy::kNotFound && *env_path) {
    void* handle = dlopen(env_path, RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      log_line("%s=%s cannot be loaded: %s", spec.env_name, env_path, dlerror());
    } else if (take_all(handle, library, info) == Verdict::kReal) {
      record(library, FoundBy::kEnvPath, env_path);
    } else {
      log_line("%s=%s does not define %s", spec.env_name, env_path, spec.primary);
    }
  }

  const Resolution& r = g_resolution[static_cast<int>(library)];
  if (r.found_by == FoundBy::kNotFound) {
    log_line("cannot find the real %s (%s): not next in the search order, not loaded, %s unset; "
             "calls fail",
             spec.primary, spec.what, spec.env_name);
  } else if (cfg.verbose) {
    log_line("%s found by %s in %s", spec.what, to_string(r.found_by), r.object);
  }
}

void resolve_cudnn() { resolve(Library::kCudnn); }
void resolve_cudart() { resolve(Library::kCudart); }

}  // namespace

const RealSymbols& real_symbols(Library library) noexcept {
  pthread_once(&g_once[static_cast<int>(library)],
               library == Library::kCudnn ? resolve_cudnn : resolve_cudart);
  return g_real;
}

const Resolution& resolution(Library library) noexcept {
  return g_resolution[static_cast<int>(library)];
}

const char* to_string(FoundBy found_by) noexcept {
  switch (found_by) {
    case FoundBy::kNotFound: return "not_found";
    case FoundBy::kRtldNext: return "rtld_next";
    case FoundBy::kNoload: return "noload";
    case FoundBy::kLoadedWalk: return "loaded_walk";
    case FoundBy::kEnvPath: return "env_path";
    case FoundBy::kOtherCopy: return "other_copy";
  }
  return "?";
}

}  // namespace cudnn_fastpath::shim
