// The shim's configuration: CUDNN_FASTPATH_* environment variables, read once.
#pragma once

#include <atomic>

namespace cudnn_fastpath::shim {

// Each field is read from one variable (the table in config.cpp): CUDNN_FASTPATH_DISABLE (pure
// pass-through), _VERIFY (ask cudnnGetStream before each skip), _VERBOSE (say how the real symbols
// were found), _STATS (report on stderr at exit), _STATS_FILE (JSON report at exit, %p the pid),
// _VARIANT_PACKS (cache variant packs, default on), _GRAPHS (replay steady executes of cached
// packs as CUDA graphs, default on; only with the packs), _LEGACY (replay steady calls of cuDNN's
// legacy API, default on; only with graphs), _CUBLAS (replay cuBLASLt and cuBLAS calls, with
// graphs, and cache the matmul heuristic's answers; default on), _RELOCATE (point a call shape's
// graph at a call's own tensors when they moved, default on: shape_cache.h), _DLSYM (answer dlsym
// lookups of the interposed names with the shim's functions, default on: dlsym_reach.h), _SHAPE_CALLS
// (the calls of a call shape run directly before it is learnt for relocation, default 16:
// shape_cache.cpp), _CUDNN and _CUDART (the real libraries, when no loaded one can be found).
struct Config {
  bool disable = false;
  bool verify = false;
  bool verbose = false;
  bool stats = false;
  bool variant_packs = true;
  bool graphs = true;
  bool legacy = true;
  bool cublas = true;
  bool relocate = true;
  bool dlsym = true;
  unsigned shape_calls = 16;
  // Empty when unset. Paths are read with secure_getenv: unset in secure-execution processes.
  char stats_file[4096] = {};
  char cudnn_path[4096] = {};
  char cudart_path[4096] = {};

  bool wants_report() const noexcept { return stats || stats_file[0] != '\0'; }
};

extern Config g_config __attribute__((visibility("hidden")));
extern std::atomic<bool> g_config_read __attribute__((visibility("hidden")));
const Config& read_config() noexcept;

// Reads the environment the first time it is called (thread-safe); the same object afterwards,
// for one load (a relocated call asks for `relocate` and `verify`). Acquire: pairs with read_config()'s
// release, so the fields are seen as read.
inline const Config& config() noexcept {
  return __builtin_expect(g_config_read.load(std::memory_order_acquire), 1) ? g_config : read_config();
}

// Parses one boolean the way the options table does. Exposed for the unit tests.
// Returns false, and leaves `value` alone, for text that is not a boolean.
bool parse_boolean(const char* text, bool& value) noexcept;

}  // namespace cudnn_fastpath::shim
