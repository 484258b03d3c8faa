#include "tests/interpose/scenario_runner.h"

#include <catch2/catch.hpp>
#include <cstdlib>

namespace cudnn_fastpath::test {

std::string shim_under_test() {
  const char* other = std::getenv("CUDNN_FASTPATH_TEST_SHIM");
  return other != nullptr && *other != '\0' ? other : SHIM_PATH;
}

Outcome run_scenario(const std::string& mode, const std::string& name, const ScenarioOptions& options) {
  std::vector<std::string> argv;
  if (mode == "linked") argv = {SCENARIO_LINKED, name};
  else argv = {SCENARIO_DLOPEN, mode, name};

  // The child sees no CUDNN_FASTPATH_* or LD_* setting of whoever runs the tests, only ours:
  // LD_LIBRARY_PATH could otherwise lead it to the real libcudnn instead of the stub.
  std::vector<EnvChange> env = env_without_shim();
  if (options.preload) env.push_back({"LD_PRELOAD", options.preload_value});
  else env.push_back({"LD_PRELOAD", "", true});
  env.insert(env.end(), options.env.begin(), options.env.end());

  Outcome outcome = outcome_of(run_process(argv, env));
  INFO(mode << " " << name << " exited " << outcome.process.exit_code << "\nstdout:\n"
            << outcome.process.out << "stderr:\n" << outcome.process.err);
  if (options.require_success) REQUIRE(outcome.process.exit_code == 0);
  return outcome;
}

}  // namespace cudnn_fastpath::test
