// Running a scenario program (scenario.cpp) under the shim and reading what it printed.
#pragma once

#include <string>

#include "tests/support/scenario_run.h"

namespace cudnn_fastpath::test {

// The shim the scenarios preload: this build's, or the file CUDNN_FASTPATH_TEST_SHIM names (to
// watch a new test fail on an older build of the shim).
std::string shim_under_test();

// Runs scenario `name` in `mode` ("linked", "global", "local", "deepbind", "none", "explicit",
// "self") and requires that it exits 0 (unless its options' require_success is false).
extern const ScenarioRunner run_scenario;

}  // namespace cudnn_fastpath::test
