#include "tests/support/scenario_run.h"

namespace cudnn_fastpath::test {

Outcome ScenarioRunner::operator()(const std::string& mode, const std::string& name,
                                   const RunOptions& options) const {
  std::vector<std::string> argv;
  if (const auto own = programs.find(mode); own != programs.end()) argv = {own->second, name};
  else argv = {shared, mode, name};
  std::string preload;
  if (options.preload && !options.preload_value.empty()) {
    preload = options.preload_value;
  } else if (options.preload) {
    preload = shim_under_test(shim);
    if (const auto also = also_preload.find(mode); also != also_preload.end()) preload += " " + also->second();
  }
  std::vector<EnvChange> all;
  if (stats_file && options.stats && options.preload)
    all.push_back({"CUDNN_FASTPATH_STATS_FILE", make_temp_dir() + "/s.json"});
  all.insert(all.end(), env.begin(), env.end());
  all.insert(all.end(), options.env.begin(), options.env.end());
  return run_program(argv, preload, all, options.require_success);
}

}  // namespace cudnn_fastpath::test
