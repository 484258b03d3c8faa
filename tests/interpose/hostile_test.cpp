// Hostile tests (label: hostile): the defects a hostile review of the shim found, one test case or
// more per finding, each named after it. Like interpose_test.cpp, each runs a scenario program
// (scenario.cpp) in a child process, under the shim unless said otherwise, and judges what it
// printed and wrote. They encode the behaviour the shim must have; see the report of the review
// for how each one fails on the shim they were written against.
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <string>

#include "tests/interpose/scenario_runner.h"

using namespace cudnn_fastpath::test;

namespace {

#ifdef CUDNN_FASTPATH_SANITIZED
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif

void write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  REQUIRE(out.good());
}

int count_lines(const std::string& text) { return count_lines_containing(text, ""); }

}  // namespace

// ---- 1 ------------------------------------------------------------------------------------------

TEST_CASE("concurrent first calls: resolving cuDNN and the CUDA runtime at once loses no call",
          "[hostile][threads]") {
  // The race is narrow (a few percent of processes): many fresh processes, since only a process's
  // first calls resolve anything. A process that crashes (a call through a pointer that another
  // thread's resolution nulled between its check and its use) counts as a losing one too.
  const int runs = kSanitized ? 20 : 100;
  const char* mode = GENERATE(from_range(kGlobalScopeModes));
  CAPTURE(mode);
  long long losses = 0;
  int losing_runs = 0, crashed_runs = 0;
  std::string first_loss;
  for (int i = 0; i < runs; ++i) {
    const Outcome o = run_scenario(mode, "concurrent_first_calls", {.require_success = false});
    long long lost = 0;
    if (o.process.exit_code != 0) {
      ++crashed_runs;
      lost = 1;
    } else {
      lost = o["losses"];
    }
    losses += lost;
    losing_runs += lost != 0;
    if (lost != 0 && first_loss.empty())
      first_loss = "exit " + std::to_string(o.process.exit_code) + "\n" + o.process.out + o.process.err;
  }
  INFO(losing_runs << " of " << runs << " processes lost calls (" << crashed_runs << " of them crashed); the first:\n"
                   << first_loss);
  CHECK(losing_runs == 0);
  CHECK(losses == 0);
}

// ---- 2 ------------------------------------------------------------------------------------------

TEST_CASE("no deadlock against the loader lock: a constructor's cuDNN call during another thread's first call",
          "[hostile][threads]") {
  // Control: without the shim the program's choreography completes.
  const Outcome plain = run_scenario("global", "loader_lock", {.preload = false});
  REQUIRE(plain["b_create_status"] == 0);
  REQUIRE(plain["constructor_create_status"] == 0);

  // Exit 4 and deadlock=1 when the scenario's 10 s alarm fires.
  const Outcome o = run_scenario("global", "loader_lock");
  CHECK(o["deadlock"] == 0);
  CHECK(o["b_create_status"] == 0);
  CHECK(o["constructor_create_status"] == 0);
}

// ---- 3 ------------------------------------------------------------------------------------------

TEST_CASE("counts after thread exit: calls from a later key destructor are counted, in live memory",
          "[hostile][stats]") {
  const char* mode = GENERATE("linked", "local");
  CAPTURE(mode);
  const std::string dir = make_temp_dir();
  const Outcome o = run_scenario(mode, "thread_exit_counts", {.env = {{"CUDNN_FASTPATH_STATS_FILE", dir + "/s.json"}}});
  REQUIRE(o["calls"] == 16);  // 10 in the thread, 6 in its key destructor
  const std::string json = read_file(dir + "/s.json");
  INFO(json);
  CHECK(json_number(json, "set_stream_calls").value_or(-1) == o["calls"]);
}

// ---- 4 ------------------------------------------------------------------------------------------

TEST_CASE("dlclose of the shim with statistics on: a thread that counted exits cleanly afterwards",
          "[hostile][stats]") {
  // No LD_PRELOAD: the program opens the shim itself (mode explicit) and unloads it.
  const Outcome o = run_scenario("explicit", "dlclose_shim", {.preload = false, .env = {{"CUDNN_FASTPATH_STATS", "1"}}});
  CHECK(o["dlclose_status"] == 0);
  CHECK(o["joined"] == 1);
}

// ---- 5 ------------------------------------------------------------------------------------------

TEST_CASE("several libcudnn copies: each framework's calls reach its own cuDNN and runtime", "[hostile][resolve]") {
  for (const bool preload : {false, true}) {  // without the shim: the control
    INFO((preload ? "under the shim" : "without the shim"));
    const Outcome o = run_scenario("self", "two_cudnns", {.preload = preload});
    REQUIRE(o["distinct_cudnns"] == 1);  // the premise: two libcudnn objects are loaded
    REQUIRE(o["distinct_cudarts"] == 1);
    for (const std::string p : {"v9", "v8"}) {
      INFO(p);
      CHECK(o[p + "_get_agrees"] == 1);
      CHECK(o[p + "_real_set_stream"] == (preload ? 1 : 2));  // the second set is a repeat
      CHECK(o[p + "_stream_destroy_status"] == 0);
      CHECK(o[p + "_stub_stream_destroys"] == 1);
    }
  }
}

// Each call must reach the cuDNN and runtime whose version the caller's reference asks for.
TEST_CASE("versioned symbols in two scopes: cuDNN 8 and 9, runtime 12 and 13", "[hostile][resolve]") {
  // cuDNN 9 and runtime 13 in the global scope, a framework opened RTLD_LOCAL that links cuDNN 8
  // and runtime 12: the next definition after the shim is cuDNN 9's, of another version.
  const char* mode = GENERATE("linked", "global");
  CAPTURE(mode);
  for (const bool preload : {false, true}) {
    for (const bool disabled : {false, true}) {
      if (disabled && !preload) continue;
      INFO((preload ? "under the shim" : "without the shim") << (disabled ? ", disabled" : ""));
      std::vector<EnvChange> env;
      if (disabled) env.push_back({"CUDNN_FASTPATH_DISABLE", "1"});
      const Outcome o = run_scenario(mode, "versioned_scopes", {.preload = preload, .env = env});
      REQUIRE(o["distinct_cudnns"] == 1);
      for (const std::string p : {"v8", "v9"}) {
        INFO(p);
        CHECK(o[p + "_create_status"] == 0);
        CHECK(o[p + "_set_status"] == 0);
        CHECK(o[p + "_get_status"] == 0);
        CHECK(o[p + "_get_agrees"] == 1);
        CHECK(o[p + "_real_set_stream"] == (preload && !disabled ? 1 : 2));
        CHECK(o[p + "_stream_destroy_status"] == 0);
        CHECK(o[p + "_stub_stream_destroys"] == 1);
        CHECK(o[p + "_destroy_status"] == 0);
      }
    }
  }
}

TEST_CASE("every bound object and every caller stays mapped after dlclose", "[hostile][resolve]") {
  // A framework opened RTLD_GLOBAL: its libcudnn is next after the shim in the global scope.
  const Outcome plain = run_scenario("self", "bound_then_closed", {.preload = false});
  REQUIRE(plain["framework_mapped"] == 0);  // the premise: dlclose unmaps the caller without the shim
  const Outcome o = run_scenario("self", "bound_then_closed");
  CHECK(o["framework_get_agrees"] == 1);
  CHECK(o["framework_mapped"] == 1);
  // The libraries it reached: unmapped without the shim here (Debian 12's glibc 2.36); on the GPU
  // machine (glibc 2.39) the stub libcudnn and libcudart stayed mapped without the shim too, and
  // there is then nothing to show for them.
  for (const char* library : {"cudnn_mapped", "cudart_mapped"}) {
    INFO(library);
    if (plain[library] == 0) CHECK(o[library] == 1);
    else WARN(std::string(library) + ": stays mapped after dlclose without the shim on this machine");
  }
}

TEST_CASE("several libcudnn copies: a cuDNN unloaded and another loaded in its place", "[hostile][resolve]") {
  const Outcome o = run_scenario("self", "cudnn_replaced");
  REQUIRE(o["v9_dlclose_status"] == 0);
  CHECK(o["v9_get_agrees"] == 1);
  CHECK(o["v8_get_agrees"] == 1);
}

// ---- 6 ------------------------------------------------------------------------------------------

TEST_CASE("the statistics file never follows a symlink", "[hostile][stats]") {
  const std::string dir = make_temp_dir();
  write_text(dir + "/victim", "precious");
  REQUIRE(symlink("victim", (dir + "/stats.json").c_str()) == 0);

  const Outcome o = run_scenario("linked", "same_stream", {.env = {{"CUDNN_FASTPATH_STATS_FILE", dir + "/stats.json"}}});
  CHECK(read_file(dir + "/victim") == "precious");
  struct stat st {};
  REQUIRE(lstat((dir + "/stats.json").c_str(), &st) == 0);
  CHECK(S_ISLNK(st.st_mode));
  INFO("stderr:\n" << o.process.err);
  CHECK(count_lines(o.process.err) == 1);
  CHECK(count_lines_containing(o.process.err, "not writing statistics to") == 1);
  CHECK(count_lines_containing(o.process.err, "symbolic link") == 1);
}

TEST_CASE("the statistics file never follows a symlink: an existing file is replaced, never written into",
          "[hostile][stats]") {
  const std::string dir = make_temp_dir();
  write_text(dir + "/stats.json", "old");
  REQUIRE(link((dir + "/stats.json").c_str(), (dir + "/other").c_str()) == 0);

  const Outcome o = run_scenario("linked", "same_stream", {.env = {{"CUDNN_FASTPATH_STATS_FILE", dir + "/stats.json"}}});
  INFO("stderr:\n" << o.process.err);
  CHECK(read_file(dir + "/stats.json").find("\"set_stream_calls\"") != std::string::npos);
  CHECK(read_file(dir + "/other") == "old");
}

// ---- 7 ------------------------------------------------------------------------------------------

TEST_CASE("two copies of the shim from different files share one table", "[hostile][resolve]") {
  const std::string dir = make_temp_dir();
  const std::string copy = dir + "/libcudnn_fastpath_copy.so";
  REQUIRE(run_process({"cp", SHIM_PATH, copy}).exit_code == 0);

  // A is the preloaded shim; B the copy, opened RTLD_LOCAL by the program.
  const Outcome preloaded =
      run_scenario("global", "two_shims", {.env = {{"SCENARIO_SHIM_COPY", copy}, {"SCENARIO_SHIM_A", "preload"}}});
  {
    INFO("A preloaded\nstderr:\n" << preloaded.process.err);
    REQUIRE(preloaded["distinct_shims"] == 1);
    CHECK(preloaded["get_agrees"] == 1);
    CHECK(count_lines(preloaded.process.err) <= 1);
  }

  // No preload: the program opens both, SHIM_PATH (A) and the copy (B), RTLD_LOCAL.
  const Outcome opened = run_scenario(
      "global", "two_shims",
      {.preload = false, .env = {{"SCENARIO_SHIM_COPY", copy}, {"SCENARIO_SHIM_A", "dlopen"}}});
  {
    INFO("A opened by the program\nstderr:\n" << opened.process.err);
    REQUIRE(opened["distinct_shims"] == 1);
    CHECK(opened["get_agrees"] == 1);
    CHECK(count_lines(opened.process.err) <= 1);
  }
}

// ---- 8: in tests/unit/slot_state_test.cpp ("in-flight count saturation: ...") -------------------

// ---- 9 ------------------------------------------------------------------------------------------

TEST_CASE("forked children do not report: a child that made no call stays silent", "[hostile][fork][stats]") {
  const char* mode = GENERATE("linked", "local");
  CAPTURE(mode);
  const std::string dir = make_temp_dir();
  const Outcome o = run_scenario(
      mode, "fork_report",
      {.env = {{"CUDNN_FASTPATH_STATS", "1"}, {"CUDNN_FASTPATH_STATS_FILE", dir + "/stats.json"}}});
  INFO("stderr:\n" << o.process.err);
  REQUIRE(o["child_exit"] == 0);
  REQUIRE(o["set_stream_calls"] == 150);
  // One handle, one stream: one call forwarded, the other 149 skipped.
  CHECK(count_lines_containing(o.process.err, "cudnn-fastpath: cudnnSetStream: ") == 1);
  CHECK(count_lines_containing(o.process.err, "cudnn-fastpath: cudnnSetStream: 149 skipped, 1 forwarded,") == 1);
  const std::string json = read_file(dir + "/stats.json");
  INFO(json);
  CHECK(json_number(json, "pid").value_or(-1) == o["parent_pid"]);
  CHECK(json_number(json, "set_stream_calls").value_or(-1) == 150);
  CHECK(access((dir + "/stats.json." + std::to_string(o["child_pid"])).c_str(), F_OK) != 0);
}

TEST_CASE("forked children do not report: a child that made calls reports to a file of its own",
          "[hostile][fork][stats]") {
  const char* mode = GENERATE("linked", "local");
  CAPTURE(mode);
  const std::string dir = make_temp_dir();
  const Outcome o = run_scenario(
      mode, "fork_report_child_calls",
      {.env = {{"CUDNN_FASTPATH_STATS", "1"}, {"CUDNN_FASTPATH_STATS_FILE", dir + "/stats.json"}}});
  INFO("stderr:\n" << o.process.err);
  REQUIRE(o["child_exit"] == 0);
  CHECK(count_lines_containing(o.process.err, "cudnn-fastpath: cudnnSetStream: ") == 2);
  CHECK(count_lines_containing(o.process.err, "cudnn-fastpath: cudnnSetStream: 149 skipped, 1 forwarded,") == 1);
  CHECK(count_lines_containing(o.process.err, "cudnn-fastpath: cudnnSetStream: 9 skipped, 1 forwarded,") == 1);

  const std::string parent = read_file(dir + "/stats.json");
  const std::string child = read_file(dir + "/stats.json." + std::to_string(o["child_pid"]));
  INFO("stats.json:\n" << parent << "stats.json.<child pid>:\n" << child);
  CHECK(json_number(parent, "pid").value_or(-1) == o["parent_pid"]);
  CHECK(json_number(parent, "set_stream_calls").value_or(-1) == 150);
  CHECK(json_number(child, "pid").value_or(-1) == o["child_pid"]);
  CHECK(json_number(child, "set_stream_calls").value_or(-1) == 10);
}

// ---- 10 -----------------------------------------------------------------------------------------

TEST_CASE("driver-API stream destroys: a destroyed stream's address, handed out again, reaches cuDNN",
          "[hostile][lifetime]") {
  const char* mode = GENERATE(from_range(kGlobalScopeModes));
  CAPTURE(mode);
  for (const char* name : {"driver_stream_reuse", "driver_stream_reuse_legacy"}) {
    INFO(name);
    const Outcome o = run_scenario(mode, name);
    REQUIRE(o["same_address"] == 1);  // the premise: the driver reuses the address
    CHECK(o["destroy_status"] == 0);
    CHECK(o["real_set_stream"] == 2);
  }
}

// ---- 11 -----------------------------------------------------------------------------------------

TEST_CASE("cudaStreamPerThread is never cached, while the null and legacy streams are", "[hostile][threads]") {
  const char* mode = GENERATE(from_range(kGlobalScopeModes));
  CAPTURE(mode);
  const Outcome o = run_scenario(mode, "per_thread_stream");
  CHECK(o["per_thread_real"] == 6);
  CHECK(o["null_real"] == 1);
  CHECK(o["legacy_real"] == 1);
}
