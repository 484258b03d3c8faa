// The shim's configuration: CUDNN_FASTPATH_* environment variables, read once.
#pragma once

namespace cudnn_fastpath::shim {

// One row per variable of the options table in config.cpp.
enum class Option : int {
  kDisable,    // CUDNN_FASTPATH_DISABLE: pure pass-through
  kVerify,     // CUDNN_FASTPATH_VERIFY: ask cudnnGetStream before each skip
  kVerbose,    // CUDNN_FASTPATH_VERBOSE: say how the real symbols were found
  kStats,      // CUDNN_FASTPATH_STATS: report on stderr at exit
  kStatsFile,  // CUDNN_FASTPATH_STATS_FILE: JSON report at exit, %p expands to the pid
  kVariantPacks,  // CUDNN_FASTPATH_VARIANT_PACKS: cache variant packs (default on)
  kGraphs,     // CUDNN_FASTPATH_GRAPHS: replay steady executes as CUDA graphs (needs the packs)
  kCudnn,      // CUDNN_FASTPATH_CUDNN: the real libcudnn, when no loaded one can be found
  kCudart,     // CUDNN_FASTPATH_CUDART: the real libcudart, likewise
  kCount
};

struct Config {
  bool disable = false;
  bool verify = false;
  bool verbose = false;
  bool stats = false;
  bool variant_packs = true;
  bool graphs = true;
  // Empty when unset. Paths are read with secure_getenv: unset in secure-execution processes.
  char stats_file[4096] = {};
  char cudnn_path[4096] = {};
  char cudart_path[4096] = {};

  bool wants_report() const noexcept { return stats || stats_file[0] != '\0'; }
};

// Reads the environment the first time it is called (thread-safe); the same object afterwards.
const Config& config() noexcept;

// Parses one boolean the way the options table does. Exposed for the unit tests.
// Returns false, and leaves `value` alone, for text that is not a boolean.
bool parse_boolean(const char* text, bool& value) noexcept;

}  // namespace cudnn_fastpath::shim
