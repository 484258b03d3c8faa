// Runs a program the way a test of an interposer must: in a child process, with an environment of
// the test's choosing (LD_PRELOAD above all), capturing what it prints.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace cudnn_fastpath::test {

struct ProcessResult {
  int exit_code = -1;   // the exit status, or 128 + signal number
  std::string out;      // standard output
  std::string err;      // standard error
};

// Environment changes for the child: a value sets the variable; unset = true removes it.
struct EnvChange {
  std::string name;
  std::string value;
  bool unset = false;
};

// Runs argv[0] (a path, or a name looked up in PATH) with the parent's environment plus `changes`.
// Under a sanitizer build, ASAN_OPTIONS/TSAN_OPTIONS get the settings a preloaded instrumented
// library needs. Fails the test (REQUIRE) if the program cannot be started at all.
ProcessResult run_process(const std::vector<std::string>& argv, const std::vector<EnvChange>& changes = {});

// The parent's LD_PRELOAD, LD_LIBRARY_PATH and every CUDNN_FASTPATH_* removed, so that a child sees
// only what the test sets (a user's CUDNN_FASTPATH_VARIANT_PACKS=0 would change the counts).
std::vector<EnvChange> env_without_shim();

// "key=value" lines of a scenario program's output.
std::map<std::string, std::string> key_values(const std::string& text);

// Number of lines of `text` that contain `needle`.
int count_lines_containing(const std::string& text, const std::string& needle);

// A fresh, empty directory under `parent` (by default $TMPDIR, or /tmp), removed with everything
// in it when the test process exits.
std::string make_temp_dir(const std::string& parent = "");

// The whole content of a file, or "" if it cannot be read.
std::string read_file(const std::string& path);

}  // namespace cudnn_fastpath::test
