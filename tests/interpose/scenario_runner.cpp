#include "tests/interpose/scenario_runner.h"

#include <catch2/catch.hpp>
#include <cstdlib>

namespace cudnn_fastpath::test {

std::string shim_under_test() { return shim_under_test(SHIM_PATH); }

Outcome run_scenario(const std::string& mode, const std::string& name, const ScenarioOptions& options) {
  std::vector<std::string> argv;
  if (mode == "linked") argv = {SCENARIO_LINKED, name};
  else argv = {SCENARIO_DLOPEN, mode, name};
  return run_program(argv, options.preload ? options.preload_value : "", options.env, options.require_success);
}

}  // namespace cudnn_fastpath::test
