// Running a suite's scenario program in a load mode, the way every driver of tests/ does: the mode
// picks the program and its arguments, the case's options the preload and the environment.
#pragma once

#include <array>
#include <map>
#include <string>
#include <vector>

#include "tests/support/outcome.h"
#include "tests/support/process.h"

namespace cudnn_fastpath::test {

// The three ways a program gets to libcudnn through the global scope, where the shim sits first. A
// test runs in each load mode of a list with Catch2's generators, the mode named in its failures:
//   const char* mode = GENERATE(from_range(kGlobalScopeModes));
//   CAPTURE(mode);
// Catch2 then runs the test case once per mode, from its start: what comes before the GENERATE runs
// each time, and what must run once goes in a SECTION of its own.
inline constexpr std::array kGlobalScopeModes{"linked", "global", "local"};

// A run whose shim replays calls only with the tensors they were captured with (no graph of a
// call's shape pointed at another call's tensors: shim/engine/shape_cache.h): the cases that count
// exactly what reaches the stubs when each argument of a call changes in turn run this way, and
// once more with relocation on for their outputs alone.
inline const EnvChange kByPointerOnly{"CUDNN_FASTPATH_RELOCATE", "0"};

// What one run changes from its suite's way.
struct RunOptions {
  bool preload = true;        // false: nothing preloaded
  bool stats = true;          // false: no statistics file, where the suite writes one (ScenarioRunner)
  std::string preload_value;  // LD_PRELOAD when preload is set; empty: the suite's shim (and the mode's)
  std::vector<EnvChange> env;  // after the suite's own settings
  bool require_success = true;  // false: a non-zero exit is the caller's to judge
};

// A suite's scenario programs by load mode. A mode in `programs` has a program of its own, run as
// PROGRAM CASE; every other mode runs `shared` as PROGRAM MODE CASE (the program loads cuDNN the
// way MODE says). The child sees none of the caller's CUDNN_FASTPATH_* or LD_* settings.
// The relocation scenarios' runs learn a call shape at its third call, as a key is captured: their
// cases (kernel styles, moved tensors, proofs again) need a few calls each, not the default's 16
// (CUDNN_FASTPATH_SHAPE_CALLS; shape_cache.cpp), which the cases that name the default test.
inline const EnvChange kShapesLearntAtThirdCall{"CUDNN_FASTPATH_SHAPE_CALLS", "3"};
// A run with the default: the runner's kShapesLearntAtThirdCall undone (an empty value is unset).
inline const EnvChange kShapesLearntByDefault{"CUDNN_FASTPATH_SHAPE_CALLS", ""};
// A proven shape's calls that its trial runs directly (shape_cache.cpp's kTrialPairs): every other
// call after the proof, until this many have run so.
inline constexpr long long kTrialDirectCalls = 3;

struct ScenarioRunner {
  std::map<std::string, std::string> programs;
  std::string shared;
  std::string shim;  // this build's shim (shim_under_test picks it or CUDNN_FASTPATH_TEST_SHIM's)
  // What a mode preloads after the shim (a second copy of it, say), made when first asked for.
  std::map<std::string, std::string (*)()> also_preload;
  // Each run with the shim writes its statistics to a fresh file, so that the shim counts (the
  // scenario prints its shim.* keys), unless the run's stats is false.
  bool stats_file = false;
  std::vector<EnvChange> env;  // every run's, before the run's own

  // Runs case `name` in `mode`; requires that it exits 0 unless options.require_success is false.
  Outcome operator()(const std::string& mode, const std::string& name, const RunOptions& options = {}) const;
};

}  // namespace cudnn_fastpath::test
