// The shim under LD_PRELOAD, against the stub libcudnn, in every way a program can load cuDNN.
// Each test runs a scenario program (scenario.cpp) in a child process and judges what it printed.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include "shim/include/cudnn_fastpath/shim_control.h"
#include "tests/interpose/scenario_runner.h"

using namespace cudnn_fastpath::test;

TEST_CASE("1000 same-stream sets cost exactly one real call", "[interpose]") {
  const char* mode = GENERATE(from_range(kGlobalScopeModes));
  CAPTURE(mode);
  const Outcome shimmed = run_scenario(mode, "same_stream");
  CHECK(shimmed["failures"] == 0);
  CHECK(shimmed["get_agrees"] == 1);
  CHECK(shimmed["set_stream_calls"] == 1000);
  CHECK(shimmed["real_set_stream"] == 1);
  CHECK(shimmed.process.err.empty());

  // The same program without the shim: every call reaches cuDNN (and the counts are real).
  const Outcome plain = run_scenario(mode, "same_stream", {.preload = false});
  CHECK(plain["real_set_stream"] == 1000);
}

TEST_CASE("alternating streams forward every call", "[interpose]") {
  const char* mode = GENERATE(from_range(kGlobalScopeModes));
  CAPTURE(mode);
  const Outcome o = run_scenario(mode, "alternate");
  CHECK(o["disagreements"] == 0);
  CHECK(o["real_set_stream"] == 1000);
}

TEST_CASE("a null stream after a non-null one is forwarded, and cached in its turn", "[interpose]") {
  const char* mode = GENERATE(from_range(kGlobalScopeModes));
  CAPTURE(mode);
  const Outcome o = run_scenario(mode, "null_after_stream");
  CHECK(o["null_agrees"] == 1);
  CHECK(o["get_agrees"] == 1);
  CHECK(o["set_stream_calls"] == 5);
  CHECK(o["real_set_stream"] == 3);
}

TEST_CASE("a handle destroyed and recreated at the same address is forwarded", "[interpose]") {
  const char* mode = GENERATE(from_range(kGlobalScopeModes));
  CAPTURE(mode);
  const Outcome o = run_scenario(mode, "recreate");
  REQUIRE(o["same_address"] == 1);  // the premise: the stub reuses the address, as cuDNN does
  CHECK(o["get_agrees"] == 1);
  CHECK(o["real_set_stream"] == 2);
}

TEST_CASE("destroy alone, and create alone, void the handle's slot", "[interpose]") {
  const char* mode = GENERATE(from_range(kGlobalScopeModes));
  CAPTURE(mode);
  for (const char* name : {"recreate_shim_sees_destroy", "recreate_shim_sees_create"}) {
    INFO(name);
    const Outcome o = run_scenario(mode, name);
    REQUIRE(o["same_address"] == 1);
    CHECK(o["real_set_stream"] == 2);
  }
}

TEST_CASE("a failed set is never cached", "[interpose]") {
  const char* mode = GENERATE(from_range(kGlobalScopeModes));
  CAPTURE(mode);
  const Outcome o = run_scenario(mode, "failed_set");
  CHECK(o["rejected"] == 2);
  CHECK(o["real_set_stream"] == 2);
}

TEST_CASE("cudnnGetStream agrees with every set, and only changes reach cuDNN", "[interpose]") {
  const char* mode = GENERATE(from_range(kGlobalScopeModes));
  CAPTURE(mode);
  const Outcome o = run_scenario(mode, "get_agrees");
  CHECK(o["disagreements"] == 0);
  CHECK(o["real_set_stream"] == o["expected_real"]);
  CHECK(o["expected_real"] < o["set_stream_calls"] / 2);  // the premise: mostly repeats
}

TEST_CASE("RTLD_DEEPBIND: the library binds to its own libcudnn and the shim stays out", "[interpose]") {
#ifdef CUDNN_FASTPATH_SANITIZED
  // The sanitizer runtimes refuse RTLD_DEEPBIND (google/sanitizers#611); the plain build runs it.
  WARN("skipped under sanitizers: they refuse dlopen(RTLD_DEEPBIND)");
  return;
#endif
  const Outcome same = run_scenario("deepbind", "same_stream");
  CHECK(same["get_agrees"] == 1);
  CHECK(same["real_set_stream"] == 1000);
  const Outcome mixed = run_scenario("deepbind", "get_agrees");
  CHECK(mixed["disagreements"] == 0);
}

TEST_CASE("a destroyed stream's address, handed out again, reaches cuDNN", "[interpose][lifetime]") {
  const char* mode = GENERATE(from_range(kGlobalScopeModes));
  CAPTURE(mode);
  const Outcome o = run_scenario(mode, "stream_reuse");
  REQUIRE(o["same_address"] == 1);  // the premise: the runtime reuses the address
  CHECK(o["real_set_stream"] == 2);
}

TEST_CASE("verify mode catches a stream changed behind the shim's back", "[interpose][verify]") {
  const char* mode = GENERATE(from_range(kGlobalScopeModes));
  CAPTURE(mode);
  // Without verify the shim cannot know: this is the case verify mode exists for.
  const Outcome blind = run_scenario(mode, "verify");
  CHECK(blind["get_agrees"] == 0);

  const std::string dir = make_temp_dir();
  const Outcome checked = run_scenario(
      mode, "verify", {.env = {{"CUDNN_FASTPATH_VERIFY", "1"}, {"CUDNN_FASTPATH_STATS_FILE", dir + "/s.json"}}});
  CHECK(checked["get_agrees"] == 1);
  CHECK(checked["real_set_stream"] == 3);  // a, b around the shim, a forwarded after the mismatch
  CHECK(count_lines_containing(checked.process.err, "verify:") == 1);
  CHECK(read_file(dir + "/s.json").find("\"verify_mismatches\": 1,") != std::string::npos);
}

TEST_CASE("verify mode: a new stream at a destroyed stream's address reaches cuDNN though the destroy went unseen",
          "[interpose][verify]") {
  const char* mode = GENERATE(from_range(kGlobalScopeModes));
  CAPTURE(mode);
  // A program linked to the CUDA runtime statically: the shim never sees the destroy, and
  // without verify the new stream's first set is skipped (the README's known limit).
  const Outcome blind = run_scenario(mode, "static_runtime_stream_reuse");
  REQUIRE(blind["same_address"] == 1);  // the premise: the address comes back
  CHECK(blind["real_set_stream"] == 1);

  const std::string dir = make_temp_dir();
  const Outcome checked = run_scenario(mode, "static_runtime_stream_reuse",
                                       {.env = {{"CUDNN_FASTPATH_VERIFY", "1"},
                                                {"CUDNN_FASTPATH_STATS_FILE", dir + "/s.json"}}});
  CHECK(checked["real_set_stream"] == 2);  // the driver's stream id told the two streams apart
  CHECK(read_file(dir + "/s.json").find("\"verify_mismatches\": 1,") != std::string::npos);
}

// Watched failing on a shim whose verify mode asks cuStreamGetId of a capturing stream (end_capture
// 901, CUDA_ERROR_STREAM_CAPTURE_INVALIDATED: what broke PyTorch's own CUDA graphs under --verify on
// the H200).
TEST_CASE("verify mode: the program's own capture on the handle's stream survives the checked skips",
          "[interpose][verify]") {
  const char* mode = GENERATE(from_range(kGlobalScopeModes));
  CAPTURE(mode);
  const std::string dir = make_temp_dir();
  const Outcome o = run_scenario(mode, "verify_during_capture",
                                 {.env = {{"CUDNN_FASTPATH_VERIFY", "1"},
                                          {"CUDNN_FASTPATH_STATS_FILE", dir + "/s.json"}}});
  CHECK(o["end_capture"] == 0);
  CHECK(o["real_set_stream"] == 1);
  CHECK(read_file(dir + "/s.json").find("\"verify_mismatches\": 0,") != std::string::npos);
  const Outcome plain = run_scenario(mode, "verify_during_capture");
  CHECK(plain["end_capture"] == 0);
  CHECK(plain["real_set_stream"] == 1);
}

TEST_CASE("fork: the child's first set on an inherited handle reaches cuDNN", "[interpose][fork]") {
  const char* mode = GENERATE(from_range(kGlobalScopeModes));
  CAPTURE(mode);
  const Outcome o = run_scenario(mode, "fork");
  CHECK(o["child_exit"] == 0);
  CHECK(o["child_real_set_stream"] == 1);
  CHECK(o["child_status"] == 5000);  // CUDNN_STATUS_EXECUTION_FAILED from the stub, not a false success
  CHECK(o["parent_real_set_stream"] == 0);  // the parent's cache is untouched
}

TEST_CASE("exec: the new program starts with a fresh shim", "[interpose][fork]") {
  const char* mode = GENERATE(from_range(kGlobalScopeModes));
  CAPTURE(mode);
  const Outcome o = run_scenario(mode, "exec");
  CHECK(o["real_set_stream"] == 1);
  CHECK(o["get_agrees"] == 1);
}

TEST_CASE("threads on their own handles each cost one real call", "[interpose][threads]") {
  const char* mode = GENERATE(from_range(kGlobalScopeModes));
  CAPTURE(mode);
  const Outcome o = run_scenario(mode, "threads");
  CHECK(o["failures"] == 0);
  CHECK(o["real_set_stream"] == 8);
}

TEST_CASE("CUDNN_FASTPATH_DISABLE=1 makes the shim a pure pass-through", "[interpose][config]") {
  const char* mode = GENERATE(from_range(kGlobalScopeModes));
  CAPTURE(mode);
  const Outcome o = run_scenario(mode, "same_stream", {.env = {{"CUDNN_FASTPATH_DISABLE", "1"}}});
  CHECK(o["real_set_stream"] == 1000);
  CHECK(o.process.err.empty());
}

TEST_CASE("a bad variable value gets one warning line and the default", "[interpose][config]") {
  const Outcome o = run_scenario("linked", "same_stream",
                                 {.env = {{"CUDNN_FASTPATH_DISABLE", "maybe"}, {"CUDNN_FASTPATH_VERIFY", "2"}}});
  CHECK(o["real_set_stream"] == 1);  // not disabled
  CHECK(count_lines_containing(o.process.err, "CUDNN_FASTPATH_DISABLE=maybe is not a boolean") == 1);
  CHECK(count_lines_containing(o.process.err, "CUDNN_FASTPATH_VERIFY=2 is not a boolean") == 1);
  CHECK(count_lines_containing(o.process.err, "cudnn-fastpath:") == 2);
}

TEST_CASE("statistics: stderr lines and a JSON file named by pid", "[interpose][stats]") {
  const std::string dir = make_temp_dir();
  const Outcome o = run_scenario(
      "local", "same_stream",
      {.env = {{"CUDNN_FASTPATH_STATS", "yes"}, {"CUDNN_FASTPATH_STATS_FILE", dir + "/stats-%p.json"}}});
  // Statistics forward nothing of their own: the one call that had to reach cuDNN did.
  CHECK(o["real_set_stream"] == 1);
  INFO("stderr:\n" << o.process.err);
  CHECK(count_lines_containing(
            o.process.err,
            "cudnn-fastpath: cudnnSetStream: 999 skipped, 1 forwarded, 0 verify mismatches, 0 table full, 0 streams forgotten") == 1);
  CHECK(count_lines_containing(o.process.err, "cudnn-fastpath: 1 handles; cuDNN found by caller_scope in ") == 1);
  // No variant pack was made: no line for them.
  CHECK(count_lines_containing(o.process.err, "variant packs") == 0);
  CHECK(count_lines_containing(o.process.err, "cudnn-fastpath:") == 2);

  // The file's name holds the child's pid; there is exactly one file.
  const std::string json = run_process({"sh", "-c", "cat " + dir + "/stats-*.json; ls " + dir}).out;
  INFO(json);
  for (const char* key : {"\"set_stream_calls\": 1000,", "\"skipped\": 999,", "\"forwarded\": 1,",
                          "\"verify_mismatches\": 0,", "\"handles\": 1,", "\"live_handles\": 1,", "\"table_full\": 0,",
                          "\"streams_forgotten\": 0,", "\"packs_proxied\": 0,", "\"resolved_by\": \"caller_scope\","})
    CHECK(json.find(key) != std::string::npos);
  CHECK(count_lines_containing(json, "stats-") == 1);  // ls: one file, named stats-<pid>.json
  CHECK(json.find("stats-%p") == std::string::npos);

  // The keys, in the order docs/statistics.md gives: the counters come from one list.
  std::vector<std::string> keys;
  const std::regex key("\n  \"([a-z_]+)\": ");
  for (std::sregex_iterator m(json.begin(), json.end(), key), end; m != end; ++m)
    keys.push_back((*m)[1]);
  std::vector<std::string> expected = {"version", "pid", "set_stream_calls", "handles", "live_handles"};
#define CUDNN_FASTPATH_TEST_KEY(name, group, label, what) expected.push_back(#name);
  CUDNN_FASTPATH_COUNTERS(CUDNN_FASTPATH_TEST_KEY)
#undef CUDNN_FASTPATH_TEST_KEY
  for (const char* k : {"resolved_by", "cudnn_library", "cudnn_libraries", "cudart_resolved_by", "cublaslt_library",
                        "cublas_library", "verify", "variant_packs", "graphs", "legacy", "cublas", "dlsym", "disabled",
                        "cudnn_unseen", "dlsym_callers"})
    expected.push_back(k);
  CHECK(keys == expected);
}

TEST_CASE("statistics file name: %p is the pid, %% a percent sign", "[interpose][stats]") {
  const std::string dir = make_temp_dir();
  const Outcome o = run_scenario("linked", "same_stream", {.env = {{"CUDNN_FASTPATH_STATS_FILE", dir + "/100%%-%p.json"}}});
  const std::string listing = run_process({"ls", dir}).out;
  INFO(listing);
  CHECK(std::regex_match(listing, std::regex("100%-[0-9]+\\.json\n")));
  CHECK(o["real_set_stream"] == 1);
}

TEST_CASE("statistics from Python: docs/statistics.md's ctypes recipe reads cudnn_fastpath_stats", "[interpose][stats]") {
  if (access("/usr/bin/python3", X_OK) != 0) {
    WARN("skipped: no /usr/bin/python3");
    return;
  }
  // The recipe as the document gives it, then the struct's size against what the shim filled.
  const std::string recipe = R"(import ctypes
shim = ctypes.CDLL(None)
shim.cudnn_fastpath_stats_fields.restype = ctypes.c_char_p
fields = shim.cudnn_fastpath_stats_fields().decode().split()
class Stats(ctypes.Structure):
    _fields_ = [(name, ctypes.c_uint32) for name in ("size", "counting", "version", "reserved")] + \
               [(name, ctypes.c_uint64) for name in fields]
s = Stats()
if shim.cudnn_fastpath_stats(ctypes.byref(s), ctypes.c_size_t(ctypes.sizeof(s))) == 0 and s.counting:
    print(s.skipped, s.forwarded, s.pack_hits, s.pack_misses)
print("filled", s.size == ctypes.sizeof(s), "version", s.version)
)";
  const ProcessResult r = run_process({"/usr/bin/python3", "-c", recipe},
                                      {{"LD_PRELOAD", shim_under_test()},
                                       {"CUDNN_FASTPATH_DISABLE", "", true},
                                       {"CUDNN_FASTPATH_STATS", "1"}});
  INFO(r.out << r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.out == "0 0 0 0\nfilled True version 4\n");  // no cuDNN call: every count 0
}

TEST_CASE("how the real symbols are found, in each load mode", "[interpose][resolve]") {
  const auto [mode, found_by] = GENERATE(table<const char*, const char*>(
      {{"linked", "rtld_next"}, {"global", "rtld_next"}, {"local", "caller_scope"}}));
  CAPTURE(mode);
  const Outcome o = run_scenario(mode, "same_stream", {.env = {{"CUDNN_FASTPATH_VERBOSE", "1"}}});
  CHECK(count_lines_containing(o.process.err, std::string("cuDNN found by ") + found_by) == 1);
}

TEST_CASE("a call with no cuDNN anywhere fails cleanly, with one line", "[interpose][resolve]") {
  const Outcome plain = run_scenario("none", "no_cudnn", {.preload = false});
  CHECK(plain["defined"] == 0);

  const Outcome o = run_scenario("none", "no_cudnn");
  CHECK(o["defined"] == 1);
  CHECK(o["first_status"] == 1001);  // CUDNN_STATUS_NOT_INITIALIZED
  CHECK(o["second_status"] == 1001);
  CHECK(count_lines_containing(o.process.err, "cannot find the real cudnnSetStream") == 1);
  CHECK(count_lines_containing(o.process.err, "cudnn-fastpath:") == 1);

  // CUDNN_FASTPATH_CUDNN names it: the shim loads it and the call reaches the stub, which
  // refuses the made-up handle.
  const Outcome named = run_scenario("none", "no_cudnn", {.env = {{"CUDNN_FASTPATH_CUDNN", STUB_CUDNN_PATH}}});
  CHECK(named["first_status"] == 2000);  // CUDNN_STATUS_BAD_PARAM
  CHECK(named.process.err.empty());
}

TEST_CASE("two copies of the shim: one line, and the calls still skip once", "[interpose][resolve]") {
  const std::string dir = make_temp_dir();
  const std::string copy = dir + "/libcudnn_fastpath.so";
  REQUIRE(run_process({"cp", SHIM_PATH, copy}).exit_code == 0);
  const char* mode = GENERATE(from_range(kGlobalScopeModes));
  CAPTURE(mode);
  const Outcome o = run_scenario(mode, "same_stream", {.preload_value = copy + " " + SHIM_PATH});
  CHECK(o["real_set_stream"] == 1);
  CHECK(o["get_agrees"] == 1);
  CHECK(count_lines_containing(o.process.err, "another copy of the shim is loaded") <= 1);
  CHECK(count_lines_containing(o.process.err, "cudnn-fastpath:") <= 1);
}

TEST_CASE("a first copy of the shim that does not give its functions by name is not followed",
          "[interpose][resolve]") {
  // One of the positional interface before the names, one that answers with functions outside
  // itself, and one that knows no name: the shim keeps its own table (the calls still skip) and
  // says so once. Watched failing with election.cpp following a leader whatever it answers: the
  // nameless one's cudnnCreate, a null call (signal 11); the other's, abort (signal 6).
  const char* first = GENERATE(UNFOLLOWED_V1_PATH, UNFOLLOWED_ELSEWHERE_PATH, UNFOLLOWED_NAMELESS_PATH);
  const char* mode = GENERATE(from_range(kGlobalScopeModes));
  CAPTURE(first, mode);
  const Outcome o = run_scenario(mode, "same_stream", {.preload_value = std::string(first) + " " + SHIM_PATH});
  CHECK(o["real_set_stream"] == 1);
  CHECK(o["get_agrees"] == 1);
  CHECK(count_lines_containing(o.process.err, "cannot be reached; this one") == 1);
  CHECK(count_lines_containing(o.process.err, "cudnn-fastpath:") == 1);
}

TEST_CASE("programs that never touch cuDNN see nothing of the shim", "[interpose]") {
  const std::vector<std::vector<std::string>> programs = {
      {"true"},
      {"sh", "-c", "exit 7"},
      {"sh", "-c", "grep -c 'libcudnn\\.so' /proc/self/maps; exit 0"},
  };
  const std::vector<EnvChange> env = {{"LD_PRELOAD", SHIM_PATH},
                                      {"CUDNN_FASTPATH_STATS", "1"},
                                      {"CUDNN_FASTPATH_VERBOSE", "1"}};
  for (const auto& argv : programs) {
    INFO(argv.back());
    const ProcessResult with = run_process(argv, env);
    const ProcessResult without = run_process(argv, {{"LD_PRELOAD", "", true}});
    CHECK(with.exit_code == without.exit_code);
    CHECK(with.err.empty());
    CHECK(with.out == without.out);
  }
  // libcudnn is not loaded by the shim (the grep above printed 0 in both runs).
  CHECK(run_process({"sh", "-c", "grep -c 'libcudnn\\.so' /proc/self/maps"}, env).out == "0\n");
  // The shim itself is: the premise of the checks above.
  CHECK(run_process({"sh", "-c", "grep -c libcudnn_fastpath /proc/self/maps"}, env).out != "0\n");

  if (access("/usr/bin/python3", X_OK) == 0) {
    const ProcessResult py = run_process({"python3", "-c", "import sys; sys.exit(3)"}, env);
    CHECK(py.exit_code == 3);
    CHECK(py.err.empty());
  }
}

TEST_CASE("a secure-execution process writes no statistics file", "[interpose][secure]") {
  // A set-user-ID copy of the scenario, owned by nobody and run by root, is a secure-execution
  // process (AT_SECURE). The control runs the same copy as nobody without the set-user-ID bit.
  if (geteuid() != 0 || access("/usr/bin/setpriv", X_OK) != 0) {
    WARN("skipped: needs root and setpriv to make a secure-execution process");
    return;
  }
#ifdef CUDNN_FASTPATH_SANITIZED
  // The sanitizer runtimes ignore their options in a set-user-ID process and LeakSanitizer then
  // fails at exit; the plain build runs this test.
  WARN("skipped under sanitizers: they cannot run a set-user-ID process cleanly");
  return;
#endif
  // The program runs as nobody and loads the stubs and the shim from the build tree, which a
  // checkout made by `mktemp -d` (mode 0700) keeps from other users.
  if (run_process({"setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "test", "-r", STUB_CUDNN_PATH, "-a",
                   "-r", SHIM_PATH})
          .exit_code != 0) {
    WARN("skipped: user nobody cannot read the build tree (" << STUB_CUDNN_PATH << "); build where others can read");
    return;
  }
  // In /tmp, not the suite's $TMPDIR: nobody must reach the directory, and scripts/test makes
  // its scratch $TMPDIR private (mode 0700), where the control below could write nothing.
  const std::string dir = make_temp_dir("/tmp");
  const std::string program = dir + "/scenario";
  REQUIRE(run_process({"cp", SCENARIO_DLOPEN, program}).exit_code == 0);
  REQUIRE(run_process({"chmod", "0777", dir}).exit_code == 0);
  REQUIRE(run_process({"chown", "nobody", program}).exit_code == 0);
  const std::vector<EnvChange> env = {{"LD_LIBRARY_PATH", "", true},
                                      {"LD_PRELOAD", "", true},
                                      {"CUDNN_FASTPATH_STATS_FILE", dir + "/stats-%p.json"}};
  const auto count_files = [&] {
    return run_process({"sh", "-c", "ls " + dir + " | grep -c '^stats-'"}).out;
  };

  // Control: not secure, same user, same directory: the file is written.
  const ProcessResult plain =
      run_process({"setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", program, "explicit", "same_stream"}, env);
  INFO(plain.out << plain.err);
  REQUIRE(plain.exit_code == 0);
  // The shim was in use: one real call, statistics on or not.
  REQUIRE(key_values(plain.out)["real_set_stream"] == "1");
  REQUIRE(count_files() == "1\n");
  REQUIRE(run_process({"sh", "-c", "rm -f " + dir + "/stats-*"}).exit_code == 0);

  REQUIRE(run_process({"chmod", "4755", program}).exit_code == 0);
  const ProcessResult secure = run_process({program, "explicit", "same_stream"}, env);
  INFO(secure.out << secure.err);
  REQUIRE(secure.exit_code == 0);
  CHECK(key_values(secure.out)["real_set_stream"] == "1");  // in use, and not counting
  CHECK(count_files() == "0\n");
}

TEST_CASE("odd paths: an unwritable statistics file and a library that is not there", "[interpose][config]") {
  const Outcome unwritable = run_scenario(
      "linked", "same_stream", {.env = {{"CUDNN_FASTPATH_STATS_FILE", "/nonexistent-dir/stats.json"}}});
  CHECK(unwritable["get_agrees"] == 1);
  CHECK(count_lines_containing(unwritable.process.err, "cannot write statistics to /nonexistent-dir/stats.json") == 1);
  CHECK(count_lines_containing(unwritable.process.err, "cudnn-fastpath:") == 1);

  const Outcome missing = run_scenario("none", "no_cudnn", {.env = {{"CUDNN_FASTPATH_CUDNN", "/nonexistent/libcudnn.so.9"}}});
  CHECK(missing["first_status"] == 1001);  // CUDNN_STATUS_NOT_INITIALIZED
  CHECK(count_lines_containing(missing.process.err, "CUDNN_FASTPATH_CUDNN=/nonexistent/libcudnn.so.9 cannot be loaded") == 1);
  CHECK(count_lines_containing(missing.process.err, "cannot find the real cudnnSetStream") == 1);
  CHECK(count_lines_containing(missing.process.err, "cudnn-fastpath:") == 2);
}
