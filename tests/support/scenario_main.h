// The one main() of the scenario programs (graph_scenario, blas_scenario, pack_scenario, scenario,
// legacy_scenario, dlsym_scenario). A scenario program runs the case its command line names and
// prints what happened as key=value lines, for its suite's Catch2 driver to judge
// (tests/support/outcome.h). It is built once for each way it reaches the libraries under test:
//
//   PROGRAM CASE        built for one load mode (linked: the program links the stubs)
//   PROGRAM MODE CASE   loads the libraries the way MODE says (dlopen RTLD_LOCAL, dlsym, ...)
//
// Each program describes itself in kScenarioProgram: its cases, how a mode takes the API, what
// every case shares. main() (scenario_main.cpp) reads the command line, finds the case, loads the
// API, sets up, runs the case, finishes and exits with the case's status. die() ends a program that
// cannot go on: "NAME: WHAT" on stderr and exit status 3, which a driver reads as "the scenario
// itself broke", never as a result.
#pragma once

#include <cstdio>
#include <span>
#include <string_view>

[[noreturn]] void die(const char* what);

namespace scenario_main {

struct Case {
  const char* name;
  int (*run)();  // the program's exit status
};

struct Program {
  const char* name;  // die()'s prefix ("graph scenario")
  // The load mode of a program built for one ("linked"): it takes the case alone. Null: the mode is
  // the first argument.
  const char* fixed_mode = nullptr;
  // Takes the calls the way `mode` reaches them; dies on a mode it does not know. Null: nothing to load.
  void (*load_api)(const char* mode) = nullptr;
  void (*set_up)() = nullptr;  // what every case shares, after load_api (null: nothing)
  void (*finish)() = nullptr;  // after the case, before the program exits with its status (null: nothing)
  std::span<const Case> cases;
};

// argv[0]: the program, for cases that run it again.
extern const char* g_program_path;

// One result line: KEY=VALUE.
inline void print(std::string_view key, long long value) {
  std::printf("%.*s=%lld\n", static_cast<int>(key.size()), key.data(), value);
}

}  // namespace scenario_main

// Defined by each scenario program.
extern const scenario_main::Program kScenarioProgram;
