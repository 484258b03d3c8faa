#include "tests/interpose/scenario_runner.h"

namespace cudnn_fastpath::test {

std::string shim_under_test() { return shim_under_test(SHIM_PATH); }

const ScenarioRunner run_scenario{.programs = {{"linked", SCENARIO_LINKED}}, .shared = SCENARIO_DLOPEN, .shim = SHIM_PATH};

}  // namespace cudnn_fastpath::test
