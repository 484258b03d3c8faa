#include "tests/support/scenario_main.h"

#include <cstdlib>
#include <cstring>
#include <string>

[[noreturn]] void die(const char* what) {
  std::fprintf(stderr, "%s: %s\n", kScenarioProgram.name, what);
  std::exit(3);
}

namespace scenario_main {

const char* g_program_path = nullptr;

}  // namespace scenario_main

int main(int argc, char** argv) {
  const scenario_main::Program& program = kScenarioProgram;
  scenario_main::g_program_path = argv[0];
  const bool mode_argument = program.fixed_mode == nullptr;
  if (argc != (mode_argument ? 3 : 2)) {
    const char* slash = std::strrchr(argv[0], '/');
    die(("usage: " + std::string(slash ? slash + 1 : argv[0]) + (mode_argument ? " MODE CASE" : " CASE")).c_str());
  }
  const char* mode = mode_argument ? argv[1] : program.fixed_mode;
  const char* name = argv[argc - 1];
  const scenario_main::Case* chosen = nullptr;
  for (const scenario_main::Case& c : program.cases)
    if (std::strcmp(c.name, name) == 0) chosen = &c;
  if (chosen == nullptr) die("unknown case");

  // Line by line: a case that forks or crashes leaves no result half-written or written twice.
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  if (program.load_api) program.load_api(mode);
  if (program.set_up) program.set_up();
  const int status = chosen->run();
  if (program.finish) program.finish();
  return status;
}
