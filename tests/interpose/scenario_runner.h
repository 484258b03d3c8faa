// Running a scenario program (scenario.cpp) under the shim and reading what it printed.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "tests/support/outcome.h"
#include "tests/support/process.h"

namespace cudnn_fastpath::test {

// The shim the scenarios preload: this build's, or the file CUDNN_FASTPATH_TEST_SHIM names (to
// watch a new test fail on an older build of the shim).
std::string shim_under_test();

struct ScenarioOptions {
  bool preload = true;
  std::string preload_value = shim_under_test();
  std::vector<EnvChange> env;
  // False: a non-zero exit is the caller's to judge (a test that counts crashed runs, say).
  bool require_success = true;
};

// Runs scenario `name` in `mode` ("linked", "global", "local", "deepbind", "none", "explicit",
// "self") and requires that it exits 0 (unless options.require_success is false). The child sees none of the caller's CUDNN_FASTPATH_* or LD_LIBRARY_PATH.
Outcome run_scenario(const std::string& mode, const std::string& name, const ScenarioOptions& options = {});

// The three ways a program gets to libcudnn through the global scope, where the shim sits first.
inline const char* const kGlobalScopeModes[] = {"linked", "global", "local"};

}  // namespace cudnn_fastpath::test
