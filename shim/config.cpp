#include "shim/config.h"

#include <pthread.h>
#include <strings.h>

#include <cstdlib>
#include <cstring>

#include "shim/log.h"

namespace cudnn_fastpath::shim {
namespace {

enum class Kind { kBoolean, kPath };

struct OptionSpec {
  Option option;
  const char* name;
  Kind kind;
};

// The one list of variables. Order follows the Option enum (checked below).
constexpr OptionSpec kOptions[] = {
    {Option::kDisable, "CUDNN_FASTPATH_DISABLE", Kind::kBoolean},
    {Option::kVerify, "CUDNN_FASTPATH_VERIFY", Kind::kBoolean},
    {Option::kVerbose, "CUDNN_FASTPATH_VERBOSE", Kind::kBoolean},
    {Option::kStats, "CUDNN_FASTPATH_STATS", Kind::kBoolean},
    {Option::kStatsFile, "CUDNN_FASTPATH_STATS_FILE", Kind::kPath},
    {Option::kVariantPacks, "CUDNN_FASTPATH_VARIANT_PACKS", Kind::kBoolean},
    {Option::kGraphs, "CUDNN_FASTPATH_GRAPHS", Kind::kBoolean},
    {Option::kCudnn, "CUDNN_FASTPATH_CUDNN", Kind::kPath},
    {Option::kCudart, "CUDNN_FASTPATH_CUDART", Kind::kPath},
};
static_assert(sizeof kOptions / sizeof kOptions[0] == static_cast<int>(Option::kCount),
              "one row per Option");
constexpr bool rows_follow_enum() {
  for (int i = 0; i < static_cast<int>(Option::kCount); ++i)
    if (static_cast<int>(kOptions[i].option) != i) return false;
  return true;
}
static_assert(rows_follow_enum(), "kOptions rows must follow the Option enum");

Config g_config;
pthread_once_t g_once = PTHREAD_ONCE_INIT;

bool* boolean_field(Option option) {
  switch (option) {
    case Option::kDisable: return &g_config.disable;
    case Option::kVerify: return &g_config.verify;
    case Option::kVerbose: return &g_config.verbose;
    case Option::kStats: return &g_config.stats;
    case Option::kVariantPacks: return &g_config.variant_packs;
    case Option::kGraphs: return &g_config.graphs;
    default: return nullptr;
  }
}

char* path_field(Option option) {
  switch (option) {
    case Option::kStatsFile: return g_config.stats_file;
    case Option::kCudnn: return g_config.cudnn_path;
    case Option::kCudart: return g_config.cudart_path;
    default: return nullptr;
  }
}

void read_environment() {
  for (const OptionSpec& spec : kOptions) {
    if (spec.kind == Kind::kBoolean) {
      const char* text = std::getenv(spec.name);
      if (text == nullptr || *text == '\0') continue;  // unset or empty: the default
      bool* field = boolean_field(spec.option);
      if (!parse_boolean(text, *field))
        log_line("%s=%.64s is not a boolean (1/0, true/false, yes/no, on/off); using %d",
                 spec.name, text, *field ? 1 : 0);
    } else {
      // secure_getenv: a setuid or otherwise secure-execution process takes no paths from its
      // environment, so it neither loads a library nor writes a file it was told to.
      const char* text = secure_getenv(spec.name);
      if (text == nullptr || *text == '\0') continue;
      char* field = path_field(spec.option);
      const std::size_t length = std::strlen(text);
      if (length >= sizeof g_config.stats_file) {
        log_line("%s is longer than %zu bytes; ignored", spec.name, sizeof g_config.stats_file - 1);
        continue;
      }
      std::memcpy(field, text, length + 1);
    }
  }
}

}  // namespace

bool parse_boolean(const char* text, bool& value) noexcept {
  static constexpr const char* kTrue[] = {"1", "true", "yes", "on"};
  static constexpr const char* kFalse[] = {"0", "false", "no", "off"};
  for (const char* word : kTrue)
    if (strcasecmp(text, word) == 0) return value = true, true;
  for (const char* word : kFalse)
    if (strcasecmp(text, word) == 0) return value = false, true;
  return false;
}

const Config& config() noexcept {
  pthread_once(&g_once, read_environment);
  return g_config;
}

}  // namespace cudnn_fastpath::shim
