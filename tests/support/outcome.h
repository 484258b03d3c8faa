// What a scenario program printed: its process result and its key=value lines, read by key.
#pragma once

#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "tests/support/process.h"

namespace cudnn_fastpath::test {

struct Outcome {
  ProcessResult process;
  std::map<std::string, std::string> values;

  // The value printed for `key`; fails the test if the scenario did not print it.
  long long operator[](const std::string& key) const;

  // Every printed key=value whose key starts with one of `prefixes`.
  std::map<std::string, std::string> with_prefix(std::initializer_list<const char*> prefixes) const;
};

// `result` with its stdout's key=value lines read.
Outcome outcome_of(ProcessResult result);

// The shim a test preloads: `built` (this build's), or the file CUDNN_FASTPATH_TEST_SHIM names (to
// watch a test fail on another build of the shim).
std::string shim_under_test(const std::string& built);

// Runs `argv` with none of the caller's CUDNN_FASTPATH_* or LD_* settings (LD_LIBRARY_PATH could
// lead it to the real libcudnn instead of the stub), `preload` as LD_PRELOAD ("": nothing
// preloaded), then `env`; requires that it exits 0 unless told otherwise.
Outcome run_program(const std::vector<std::string>& argv, const std::string& preload,
                    const std::vector<EnvChange>& env, bool require_success = true);

// The number after "key": in the shim's JSON report, if the key is there.
std::optional<double> json_number(const std::string& json, const std::string& key);

}  // namespace cudnn_fastpath::test
