// The shim preloaded into a program that links the real cuDNN and CUDA runtime (ctest label: gpu).
//
// Each case runs one scenario of set_stream_scenarios.cpp three times: without the shim (the
// scenario's own expectations hold against cuDNN itself), under the shim with a statistics file
// (what reached cuDNN), and under the shim in verify mode (no mismatch). The scenario checks
// cudnnGetStream after every step; this driver checks the shim's counts against what the scenario
// says had to reach cuDNN. Without a GPU nothing runs: "SKIPPED: no CUDA device" and exit status 77,
// which ctest reports as skipped (SKIP_RETURN_CODE).
#define CATCH_CONFIG_RUNNER
#include <spawn.h>
#include <sys/wait.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <cstdio>
#include <map>
#include <regex>
#include <string>
#include <vector>

#include "tests/support/process.h"

extern char** environ;

using cudnn_fastpath::test::EnvChange;
using cudnn_fastpath::test::key_values;
using cudnn_fastpath::test::make_temp_dir;
using cudnn_fastpath::test::ProcessResult;
using cudnn_fastpath::test::read_file;
using cudnn_fastpath::test::run_process;

namespace {

constexpr int kSkipReturnCode = 77;  // ctest's SKIP_RETURN_CODE, and the scenario's "no device"

// The statistics file is flat JSON: "key": number, "string", true or false.
std::map<std::string, std::string> parse_flat_json(const std::string& text) {
  static const std::regex kPair(R"re("(\w+)"\s*:\s*(?:"([^"]*)"|([^,\s}]+)))re");
  std::map<std::string, std::string> values;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), kPair); it != std::sregex_iterator(); ++it)
    values[(*it)[1]] = (*it)[2].matched ? (*it)[2].str() : (*it)[3].str();
  return values;
}

enum class Shim { kNone, kStats, kVerify };

struct Run {
  ProcessResult process;
  std::map<std::string, std::string> printed;  // the scenario's key=value lines
  std::map<std::string, std::string> stats;    // the shim's statistics file (empty without it)
  std::string stats_text;

  static long long number(const std::map<std::string, std::string>& values, const std::string& key) {
    const auto it = values.find(key);
    INFO("key " << key);
    REQUIRE(it != values.end());
    return std::stoll(it->second);
  }
  long long value(const std::string& key) const { return number(printed, key); }
  long long stat(const std::string& key) const { return number(stats, key); }
  std::string text_stat(const std::string& key) const {
    const auto it = stats.find(key);
    return it == stats.end() ? "(missing)" : it->second;
  }
};

Run run_scenario(const std::string& scenario, Shim shim) {
  // Only this test's settings reach the child, never those of whoever runs the suite.
  std::vector<EnvChange> env;
  for (const char* name : {"DISABLE", "VERIFY", "VERBOSE", "STATS", "STATS_FILE", "CUDNN", "CUDART"})
    env.push_back({std::string("CUDNN_FASTPATH_") + name, "", true});
  const std::string stats_path = make_temp_dir() + "/stats.json";
  if (shim == Shim::kNone) {
    env.push_back({"LD_PRELOAD", "", true});
  } else {
    env.push_back({"LD_PRELOAD", CUDNN_FASTPATH_SHIM});
    env.push_back({"CUDNN_FASTPATH_STATS_FILE", stats_path});
    if (shim == Shim::kVerify) env.push_back({"CUDNN_FASTPATH_VERIFY", "1"});
  }

  Run run{run_process({SCENARIOS_PROGRAM, scenario}, env), {}, {}, {}};
  run.printed = key_values(run.process.out);
  run.stats_text = read_file(stats_path);
  run.stats = parse_flat_json(run.stats_text);
  const char* what = shim == Shim::kNone ? "without the shim" : shim == Shim::kStats ? "under the shim" : "in verify mode";
  std::printf("--- %s %s: exit %d\n%s%s%s", scenario.c_str(), what, run.process.exit_code,
              run.process.out.c_str(), run.process.err.c_str(), run.stats_text.c_str());
  INFO(scenario << " " << what << " exited " << run.process.exit_code << "\nstdout:\n"
                << run.process.out << "stderr:\n" << run.process.err << "stats:\n" << run.stats_text);
  // 0: every cuDNN call succeeded and cudnnGetStream agreed with every set.
  REQUIRE(run.process.exit_code == 0);
  REQUIRE(run.value("get_stream_mismatches") == 0);
  REQUIRE(run.value("work_checked") > 0);
  return run;
}

// The shim's counts against what the scenario says had to reach cuDNN.
void check_counts(const Run& run) {
  INFO("stats:\n" << run.stats_text << "scenario:\n" << run.process.out);
  REQUIRE_FALSE(run.stats.empty());
  const long long set_calls = run.value("set_calls");
  const long long needed = run.value("expected_forwards");
  // Every call the program made went through the shim, and nothing else called it (cuDNN itself
  // binds its internal calls locally).
  CHECK(run.stat("set_stream_calls") == set_calls);
  // Exactly the calls that had to reach cuDNN did (statistics forward nothing of their own).
  CHECK(run.stat("forwarded") == needed);
  CHECK(run.stat("skipped") == set_calls - needed);
  CHECK(run.stat("handles") == run.value("expected_handles"));
  CHECK(run.stat("streams_forgotten") == run.value("expected_streams_forgotten"));
  CHECK(run.stat("table_full") == 0);
  CHECK(run.stat("verify_mismatches") == 0);
  // The program links both libraries: they sit in the global scope, next after the shim.
  CHECK(run.text_stat("resolved_by") == "rtld_next");
  CHECK(run.text_stat("cudart_resolved_by") == "rtld_next");
}

// Returns the run under the shim, for the checks a case adds.
Run check_scenario(const std::string& scenario) {
  const Run plain = run_scenario(scenario, Shim::kNone);
  CHECK(plain.stats.empty());  // no shim, no statistics file

  const Run shimmed = run_scenario(scenario, Shim::kStats);
  check_counts(shimmed);
  CHECK(shimmed.text_stat("verify") == "false");
  // The program made the same calls with and without the shim.
  CHECK(shimmed.value("set_calls") == plain.value("set_calls"));

  const Run verified = run_scenario(scenario, Shim::kVerify);
  check_counts(verified);
  CHECK(verified.text_stat("verify") == "true");
  return shimmed;
}

// Runs the scenario program once to learn whether a GPU is there; it prints why not.
int probe_device() {
  char* argv[] = {const_cast<char*>(SCENARIOS_PROGRAM), const_cast<char*>("probe"), nullptr};
  pid_t pid = -1;
  if (posix_spawn(&pid, argv[0], nullptr, nullptr, argv, environ) != 0) return -1;
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  std::fflush(stdout);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace

TEST_CASE("same stream many times", "[gpu]") { check_scenario("same_stream"); }

TEST_CASE("alternating streams", "[gpu]") { check_scenario("alternating"); }

TEST_CASE("NULL after a stream", "[gpu]") { check_scenario("null_after_stream"); }

TEST_CASE("handle destroyed and recreated", "[gpu]") {
  // The case is only exercised when cuDNN hands the address out again; say so if it did not.
  Run run = check_scenario("handle_reuse");
  std::printf("handle address: first %s, last %s, reused in %s of 3 cycles\n",
              run.printed["handle_first"].c_str(), run.printed["handle_last"].c_str(),
              run.printed["handle_reused"].c_str());
  if (run.value("handle_reused") == 0) WARN("cuDNN never returned a destroyed handle's address");
}

TEST_CASE("stream destroyed and recreated", "[gpu]") {
  Run run = check_scenario("stream_reuse");
  std::printf("stream address %s reused: %s\n", run.printed["stream_address"].c_str(),
              run.printed["stream_reused"].c_str());
  if (run.value("stream_reused") == 0) WARN("the runtime never returned a destroyed stream's address");
  // Both handles held the stream when it was destroyed: cudaStreamDestroy went through the shim.
  CHECK(run.stat("streams_forgotten") == 2);
}

int main(int argc, char* argv[]) {
  Catch::Session session;
  if (const int status = session.applyCommandLine(argc, argv)) return status;
  // Decided once, before any case: a machine without a GPU (CI) skips them all, and says so.
  const int probe = probe_device();
  if (probe == kSkipReturnCode) {
    std::printf("SKIPPED: no CUDA device\n");
    return kSkipReturnCode;
  }
  // Anything but 0 here (a missing library, a crash) is left to the cases, which fail and show it.
  // Catch2 returns the number of failed assertions, which could be 77: keep "skipped" for the above.
  return session.run() == 0 ? 0 : 1;
}
