#include "shim/process/config.h"

#include <pthread.h>
#include <strings.h>

#include <cstdlib>
#include <cstring>

#include "shim/process/log.h"

namespace cudnn_fastpath::shim {

Config g_config;
std::atomic<bool> g_config_read{false};

namespace {

pthread_once_t g_once = PTHREAD_ONCE_INIT;

// The one list of variables.
constexpr struct {
  const char* name;
  bool Config::*field;
} kBooleans[] = {
    {"CUDNN_FASTPATH_DISABLE", &Config::disable}, {"CUDNN_FASTPATH_VERIFY", &Config::verify},
    {"CUDNN_FASTPATH_VERBOSE", &Config::verbose}, {"CUDNN_FASTPATH_STATS", &Config::stats},
    {"CUDNN_FASTPATH_VARIANT_PACKS", &Config::variant_packs}, {"CUDNN_FASTPATH_GRAPHS", &Config::graphs},
    {"CUDNN_FASTPATH_LEGACY", &Config::legacy}, {"CUDNN_FASTPATH_CUBLAS", &Config::cublas},
    {"CUDNN_FASTPATH_RELOCATE", &Config::relocate},
    {"CUDNN_FASTPATH_DLSYM", &Config::dlsym},
};
constexpr struct {
  const char* name;
  char (Config::*field)[sizeof Config::stats_file];
} kPaths[] = {
    {"CUDNN_FASTPATH_STATS_FILE", &Config::stats_file},
    {"CUDNN_FASTPATH_CUDNN", &Config::cudnn_path},
    {"CUDNN_FASTPATH_CUDART", &Config::cudart_path},
};

// Counts: a whole number within [low, high].
constexpr struct {
  const char* name;
  unsigned Config::*field;
  unsigned low, high;
} kCounts[] = {
    {"CUDNN_FASTPATH_SHAPE_CALLS", &Config::shape_calls, 1, 1000000},
};

void read_environment() {
  for (const auto& option : kBooleans) {
    const char* text = std::getenv(option.name);
    if (text == nullptr || *text == '\0') continue;  // unset or empty: the default
    bool& field = g_config.*option.field;
    if (!parse_boolean(text, field))
      log_line("%s=%.64s is not a boolean (1/0, true/false, yes/no, on/off); using %d", option.name, text,
               field ? 1 : 0);
  }
  for (const auto& option : kCounts) {
    const char* text = std::getenv(option.name);
    if (text == nullptr || *text == '\0') continue;
    unsigned& field = g_config.*option.field;
    char* end = nullptr;
    const unsigned long value = std::strtoul(text, &end, 10);
    if (*end != '\0' || text[0] == '-' || value < option.low || value > option.high)
      log_line("%s=%.64s is not a whole number from %u to %u; using %u", option.name, text, option.low, option.high,
               field);
    else
      field = static_cast<unsigned>(value);
  }
  for (const auto& option : kPaths) {
    // secure_getenv: a setuid or otherwise secure-execution process takes no paths from its
    // environment, so it neither loads a library nor writes a file it was told to.
    const char* text = secure_getenv(option.name);
    if (text == nullptr || *text == '\0') continue;
    char (&field)[sizeof Config::stats_file] = g_config.*option.field;
    const std::size_t length = std::strlen(text);
    if (length >= sizeof field) {
      log_line("%s is longer than %zu bytes; ignored", option.name, sizeof field - 1);
      continue;
    }
    std::memcpy(field, text, length + 1);
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

const Config& read_config() noexcept {
  pthread_once(&g_once, read_environment);
  // Release: a thread that sees the flag sees what read_environment() wrote (pthread_once ordered
  // it before this store).
  g_config_read.store(true, std::memory_order_release);
  return g_config;
}

}  // namespace cudnn_fastpath::shim
