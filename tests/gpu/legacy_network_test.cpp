// legacy_network (ONNX Runtime's way with cuDNN's legacy API: descriptors kept per node and set
// again in place as two input shapes alternate) without the shim, under it, and in verify mode
// (ctest labels gpu and legacy_cpp). Two runs without the shim must write the same bytes first (the
// program is reproducible); then each run under the shim must write exactly those bytes. The shim's
// statistics file is printed and read: one cudnnSetStream per handle reached cuDNN, and where the
// shim writes legacy_* counters (its replay of legacy calls as CUDA graphs) each family of the
// network's ops was replayed. Without a GPU: "SKIPPED: no CUDA device", exit status 77.
#define CATCH_CONFIG_RUNNER
#include <spawn.h>
#include <sys/wait.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <cstdio>
#include <string>
#include <vector>

#include "tests/support/outcome.h"

using cudnn_fastpath::test::EnvChange;
using cudnn_fastpath::test::json_number;
using cudnn_fastpath::test::make_temp_dir;
using cudnn_fastpath::test::Outcome;
using cudnn_fastpath::test::read_file;
using cudnn_fastpath::test::run_program;
using cudnn_fastpath::test::shim_under_test;

extern char** environ;

namespace {

constexpr int kSkipReturnCode = 77;
constexpr int kIterations = 200;

enum class Shim { kNone, kStats, kVerify };

struct Run {
  Outcome outcome;
  std::string bytes;  // the program's output file
  std::string stats;  // the shim's statistics file ("" without the shim)
};

Run run_network(Shim shim, const char* label) {
  const std::string dir = make_temp_dir();
  std::vector<EnvChange> env;
  std::string preload;
  if (shim != Shim::kNone) {
    preload = shim_under_test(CUDNN_FASTPATH_SHIM);
    env.push_back({"CUDNN_FASTPATH_STATS_FILE", dir + "/stats.json"});
    env.push_back({"CUDNN_FASTPATH_VERBOSE", "1"});
    if (shim == Shim::kVerify) env.push_back({"CUDNN_FASTPATH_VERIFY", "1"});
  }
  Outcome o = run_program({LEGACY_NETWORK, "run", "--iters", std::to_string(kIterations), "--out", dir + "/out.bin"},
                          preload, env);
  Run run{o, read_file(dir + "/out.bin"), read_file(dir + "/stats.json")};
  std::printf("--- %s: exit %d\n%s%s%s\n", label, o.process.exit_code, o.process.out.c_str(), o.process.err.c_str(),
              run.stats.c_str());
  REQUIRE(o["failed_calls"] == 0);
  REQUIRE(o["output_bytes"] == static_cast<long long>(run.bytes.size()));
  return run;
}

// The statistics of a run under the shim: the calls it saw, and the legacy replay where it has one.
void check_stats(const Run& run, const Run& plain) {
  INFO("statistics file:\n" << run.stats);
  REQUIRE_FALSE(run.stats.empty());
  // The program sets the stream once per iteration, always the same one: one call reaches cuDNN.
  CHECK(json_number(run.stats, "set_stream_calls").value_or(-1) == kIterations);
  CHECK(json_number(run.stats, "forwarded").value_or(-1) == json_number(run.stats, "handles").value_or(-2));
  CHECK(json_number(run.stats, "verify_mismatches").value_or(-1) == 0);
  // The program made the same calls as without the shim.
  CHECK(run.outcome.with_prefix({"calls."}) == plain.outcome.with_prefix({"calls."}));
  for (const char* family : {"legacy_conv", "legacy_bn", "legacy_tensor"}) {
    const std::string key = std::string(family) + "_launches";
    const auto launches = json_number(run.stats, key);
    if (!launches) {
      WARN("no " << key << " in the statistics: a shim without the replay of legacy calls");
      continue;
    }
    INFO(key);
    CHECK(*launches > 0);
  }
}

// Runs the program once to learn whether a GPU is there (outside any test case: no Catch2 macro);
// it prints why not, or cuDNN's version.
int probe_device() {
  char* argv[] = {const_cast<char*>(LEGACY_NETWORK), const_cast<char*>("probe"), nullptr};
  pid_t pid = -1;
  if (posix_spawn(&pid, argv[0], nullptr, nullptr, argv, environ) != 0) return -1;
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  std::fflush(stdout);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace

TEST_CASE("legacy network: the same bytes without the shim, under it and in verify mode", "[gpu][legacy_cpp]") {
  const Run plain = run_network(Shim::kNone, "without the shim");
  const Run again = run_network(Shim::kNone, "without the shim, again");
  INFO("two runs without the shim must agree first: " << plain.bytes.size() << " bytes");
  REQUIRE(plain.bytes == again.bytes);
  CHECK(plain.stats.empty());

  const Run shimmed = run_network(Shim::kStats, "under the shim");
  CHECK(shimmed.bytes == plain.bytes);
  check_stats(shimmed, plain);
  CHECK(shimmed.stats.find("\"verify\": false") != std::string::npos);

  const Run verified = run_network(Shim::kVerify, "in verify mode");
  CHECK(verified.bytes == plain.bytes);
  check_stats(verified, plain);
  CHECK(verified.stats.find("\"verify\": true") != std::string::npos);
}

int main(int argc, char* argv[]) {
  Catch::Session session;
  if (const int status = session.applyCommandLine(argc, argv)) return status;
  // Decided once: a machine without a GPU (CI) skips, and says so.
  if (probe_device() == kSkipReturnCode) {
    std::printf("SKIPPED: no CUDA device\n");
    return kSkipReturnCode;
  }
  // Catch2 returns the number of failed assertions, which could be 77: keep "skipped" for the above.
  return session.run() == 0 ? 0 : 1;
}
