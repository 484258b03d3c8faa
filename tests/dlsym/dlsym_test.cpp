// The shim's dlsym way in (shim/libraries/dlsym_reach.h), under LD_PRELOAD, against the stub libcudnn
// (label: dlsym).
//
// dlsym_scenario checks lookups that must come out exactly as glibc's, each against glibc's own
// dlsym called from the same object. graph_scenario (tests/graphs) in its dlsym load modes stands
// for JAX/XLA: a program, or a library opened RTLD_LOCAL, that opens libcudnn RTLD_LOCAL and takes
// every function with dlsym on that handle; the graphs suite runs all its cases in those modes too,
// and this one adds what only dlsym changes: the statistics, the switch, the unseen cuDNN, a
// caller that took cudnnBackendExecute around the shim, two copies of the shim.
#include <catch2/catch.hpp>

#include <map>
#include <regex>
#include <string>
#include <vector>

#include "tests/support/process.h"
#include "tests/support/outcome.h"

using namespace cudnn_fastpath::test;

namespace {

Outcome run(const std::vector<std::string>& argv, const std::vector<EnvChange>& extra, bool preload = true) {
  return run_program(argv, preload ? shim_under_test(SHIM_PATH) : "", extra);
}

Outcome scenario(const std::string& which, bool preload = true, const std::vector<EnvChange>& extra = {}) {
  return run({DLSYM_SCENARIO, which}, extra, preload);
}

Outcome steady(const std::string& mode, const std::vector<EnvChange>& extra = {}, bool preload = true) {
  return run({GRAPH_SCENARIO_DLOPEN, mode, "steady"}, extra, preload);
}

long long json_count(const std::string& json, const std::string& key) {
  INFO("key " << key << " in\n" << json);
  REQUIRE(json_number(json, key).has_value());
  return static_cast<long long>(*json_number(json, key));
}

}  // namespace

TEST_CASE("RTLD_NEXT and RTLD_DEFAULT lookups return what glibc returns to their caller", "[dlsym]") {
  for (const bool preload : {false, true}) {
    INFO((preload ? "under the shim" : "without it"));
    const Outcome o = scenario("next", preload);
    for (const char* name : {"dlsym_probe_symbol", "cudnnSetStream", "puts"}) {
      INFO(name);
      CHECK(o[std::string("next_agrees.") + name] == 1);
      CHECK(o[std::string("default_agrees.") + name] == 1);
    }
    CHECK(o["next_is_after"] == 1);  // relative to the library that asked, not to the shim
    CHECK(o["probe"] == 1);
  }
}

TEST_CASE("dlerror() after a failed lookup is glibc's message, and a handed-out name leaves no error", "[dlsym]") {
  const Outcome plain = scenario("dlerror", false);
  CHECK(plain["execute_handed_out"] == 0);  // the premise: without the shim, glibc's answer

  const Outcome o = scenario("dlerror");
  CHECK(o["missing_is_null"] == 1);
  CHECK(o["message_same"] == 1);
  CHECK(o["second_read_null"] == 1);
  CHECK(o["cleared_after_interposed"] == o["cleared_by_glibc"]);
  CHECK(o["execute_handed_out"] == 1);
  CHECK(o["execute_in_shim"] == 1);
  CHECK(o["get_version_same"] == 1);
  CHECK(o["clean_from_library"] == 1);
}

TEST_CASE("two cuDNNs opened RTLD_LOCAL: only the one every object reaches is handed out", "[dlsym]") {
  const std::string file = make_temp_dir() + "/two.json";
  const Outcome o = scenario("two", true, {{"CUDNN_FASTPATH_STATS_FILE", file}});
  CHECK(o["nine_handed_out"] == 1);
  CHECK(o["eight_handed_out"] == 0);
  CHECK(o["eight_is_glibcs"] == 1);
  const std::string json = read_file(file);
  CHECK(json_count(json, "dlsym_handed_out") == 1);
  CHECK(json_count(json, "dlsym_declined") == 1);
}

TEST_CASE("cudnnSetStream taken with dlsym on a handle: the skip", "[dlsym]") {
  const Outcome plain = scenario("skip", false);
  CHECK(plain["real_set_stream"] == 1000);  // the premise: every call reaches cuDNN
  const Outcome o = scenario("skip");
  CHECK(o["failures"] == 0);
  CHECK(o["real_set_stream"] == 1);
  const Outcome off = scenario("skip", true, {{"CUDNN_FASTPATH_DLSYM", "0"}});
  CHECK(off["real_set_stream"] == 1000);
}

TEST_CASE("first lookups from 8 threads at once and from a constructor during dlopen", "[dlsym][threads]") {
  const Outcome o = scenario("threads");
  CHECK(o["failures"] == 0);
  CHECK(o["same_answers"] == 1);
  CHECK(o["handed_out"] == 1);
  CHECK(o["constructor_result"] == 1);
  CHECK(o["real_set_stream"] == 9);  // one per handle: eight threads' and the constructor's
}

TEST_CASE("cuDNN's lookups of its own functions pass through", "[dlsym]") {
  const Outcome o = scenario("self");
  CHECK(o["own_lookup_real.cudnnBackendExecute"] == 1);
  CHECK(o["own_lookup_real.cudnnSetStream"] == 1);
}

TEST_CASE("a program that never loads cuDNN: its lookups are glibc's and the shim says nothing", "[dlsym]") {
  const Outcome o = run({DLSYM_PLAIN}, {{"CUDNN_FASTPATH_STATS", "1"}});
  CHECK(o["cos_same"] == 1);
  CHECK(o["missing_null"] == 1);
  CHECK(o["next_same"] == 1);
  CHECK(o.process.err.empty());
}

TEST_CASE("statistics: the names handed out through dlsym, and to which object", "[dlsym][stats]") {
  const std::string dir = make_temp_dir();
  const std::string mode = GENERATE("dlsym", "dlsym_library");
  CAPTURE(mode);
  const std::string file = dir + "/" + mode + ".json";
  const Outcome o = steady(mode, {{"CUDNN_FASTPATH_STATS_FILE", file}, {"CUDNN_FASTPATH_STATS", "1"}});
  CHECK(o["execute_calls"] == 3);  // replayed: two direct, one captured
  CHECK(o["launches"] == 98);
  const std::string json = read_file(file);
  CHECK(json_count(json, "dlsym_handed_out") == 12);  // every interposed name the program takes
  CHECK(json_count(json, "dlsym_declined") == 0);
  CHECK(json_count(json, "pack_hits") == 99);
  const std::string object = mode == "dlsym" ? "program" : "libdlsym_framework.so";
  CHECK(std::regex_search(json, std::regex("\"dlsym_callers\": \\[\\{\"object\": \"[^\"]*" + object +
                                           "\", \"names\": 12, \"declined\": false\\}\\]")));
  CHECK(json.find("\"resolved_by\": \"dlsym_handle\"") != std::string::npos);
  CHECK(o.process.err.find("dlsym: 12 handed out, 0 left to the library") != std::string::npos);
}

TEST_CASE("statistics on or off, the same calls reach cuDNN through dlsym pointers", "[dlsym][stats]") {
  const std::string dir = make_temp_dir();
  const std::string mode = GENERATE("dlsym", "dlsym_library");
  CAPTURE(mode);
  const Outcome off = steady(mode);
  const Outcome on =
      steady(mode, {{"CUDNN_FASTPATH_STATS", "1"}, {"CUDNN_FASTPATH_STATS_FILE", dir + "/" + mode + ".json"}});
  CHECK(off.values == on.values);  // every count the stubs kept: executes, captures, launches, packs, sets
  CHECK(on["real_packs"] == 1);
  CHECK(on["execute_calls"] == 3);
}

TEST_CASE("a caller that took a pack-taking call around the shim gets real variant packs only", "[dlsym]") {
  const std::string dir = make_temp_dir();
  for (const std::string name : {"cudnnBackendExecute", "cudnnBackendFinalize", "cudnnBackendSetAttribute",
                                 "cudnnBackendGetAttribute", "cudnnBackendDestroyDescriptor"}) {
    INFO(name << " taken with glibc's own dlsym");
    const std::string file = dir + "/" + name + ".json";
    const Outcome o = steady("dlsym_around", {{"CUDNN_FASTPATH_STATS_FILE", file}, {"GRAPH_SCENARIO_AROUND", name}});
    CHECK(o["failures"] == 0);  // a proxy reaching cuDNN's own function fails there
    CHECK(o["mismatches"] == 0);
    CHECK(o["execute_calls"] == 100);
    const std::string json = read_file(file);
    CHECK(json_count(json, "packs_proxied") == 0);
    CHECK(json_count(json, "dlsym_handed_out") == 11);
  }
}

TEST_CASE("a program that takes only the driver's stream destroy with dlsym keeps its proxies", "[dlsym]") {
  // cuBLAS does this; the proxy rule is about cuDNN's names only.
  const std::string file = make_temp_dir() + "/stream.json";
  const Outcome o = run({GRAPH_SCENARIO_LINKED, "steady"},
                        {{"CUDNN_FASTPATH_STATS_FILE", file}, {"GRAPH_SCENARIO_DLSYM_STREAM_DESTROY", "1"}});
  CHECK(o["execute_calls"] == 3);
  const std::string json = read_file(file);
  CHECK(json_count(json, "dlsym_handed_out") == 1);
  CHECK(json_count(json, "packs_proxied") == 100);
}

TEST_CASE("CUDNN_FASTPATH_DLSYM=0 and --no-dlsym leave the lookups alone, and one line says cuDNN was unseen",
          "[dlsym][config]") {
  const std::string file = make_temp_dir() + "/off.json";
  const Outcome o = steady("dlsym", {{"CUDNN_FASTPATH_DLSYM", "0"}, {"CUDNN_FASTPATH_STATS", "1"},
                                     {"CUDNN_FASTPATH_STATS_FILE", file}});
  CHECK(o["execute_calls"] == 100);
  CHECK(o["launches"] == 0);
  CHECK(o["failures"] == 0);
  CHECK(o.process.err.find("libcudnn.so.9 is loaded but no cuDNN call reached the shim: its callers took") !=
        std::string::npos);
  const std::string json = read_file(file);
  CHECK(std::regex_search(json, std::regex("\"cudnn_unseen\": \"[^\"]*libcudnn.so.9\"")));
  CHECK(json.find("\"dlsym\": false") != std::string::npos);

  const Outcome launched = run({LAUNCHER_BUILD, "--no-dlsym", "--verbose", "--", GRAPH_SCENARIO_DLOPEN, "dlsym",
                                "steady"},
                               {}, false);
  CHECK(launched["execute_calls"] == 100);
  CHECK(launched.process.err.find("no cuDNN call reached the shim") != std::string::npos);

  const Outcome bad = steady("dlsym", {{"CUDNN_FASTPATH_DLSYM", "maybe"}});
  CHECK(bad["execute_calls"] == 3);  // the default, on
  CHECK(bad.process.err.find("CUDNN_FASTPATH_DLSYM=maybe is not a boolean") != std::string::npos);
}

TEST_CASE("two copies of the shim preloaded: the first one's dlsym hands out, one table serves", "[dlsym][copies]") {
  const std::string copy = make_temp_dir() + "/libcudnn_fastpath_copy.so";
  REQUIRE(run_process({"cp", SHIM_PATH, copy}).exit_code == 0);
  SECTION("in each dlsym mode") {
    const std::string mode = GENERATE("dlsym", "dlsym_library");
    CAPTURE(mode);
    const Outcome o = steady(mode, {{"LD_PRELOAD", std::string(SHIM_PATH) + ":" + copy}}, false);
    CHECK(o["failures"] == 0);
    CHECK(o["mismatches"] == 0);
    CHECK(o["execute_calls"] == 3);
    CHECK(o["launches"] == 98);
  }
  SECTION("RTLD_NEXT") {
    const Outcome next = run({DLSYM_SCENARIO, "next"}, {{"LD_PRELOAD", std::string(SHIM_PATH) + ":" + copy}}, false);
    CHECK(next["next_agrees.dlsym_probe_symbol"] == 1);
    CHECK(next["next_is_after"] == 1);
  }
}

// ---- other interposers of dlsym (HAMi-core's libvgpu.so and the like) -------------------------

namespace {

// In a sanitized build, the sanitizer's runtime first in LD_PRELOAD: it looks up what it
// intercepts with dlsym(RTLD_NEXT) as it starts, and an interposer of dlsym that calls (rather than
// jumps, as the shim does) would make those lookups relative to itself, find the runtime's own
// interceptors behind it, and loop (as HAMi-core would under a sanitizer).
std::string runtime_first(const std::string& preload) {
  const std::string runtime = SANITIZER_RUNTIME;
  return runtime.empty() ? preload : runtime + ":" + preload;
}

// dlsym_neighbours with `preload` as LD_PRELOAD (the shim under test named as "SHIM").
Outcome neighbours(const std::string& preload, const std::vector<EnvChange>& extra = {}) {
  std::string expanded = runtime_first(preload);
  if (const auto at = expanded.find("SHIM"); at != std::string::npos)
    expanded.replace(at, 4, shim_under_test(SHIM_PATH));
  return run_program({DLSYM_NEIGHBOURS}, expanded, extra);
}

// What holds whoever sits where: the interposer's limit is enforced, the stream made and destroyed.
void check_limit_enforced(const Outcome& o, const std::string& interposer) {
  INFO("stdout:\n" << o.process.out << "stderr:\n" << o.process.err);
  CHECK(o[interposer + ".loaded"] == 1);
  CHECK(o["big_allocated"] == 0);
  CHECK(o["small_allocated"] == 1);
  CHECK(o[interposer + ".refused"] == 1);
  CHECK(o[interposer + ".passed"] == 1);
  CHECK(o["stream_made"] == 1);
  CHECK(o["stream_destroyed"] == 1);
  CHECK(o[interposer + ".stream_destroys"] == 1);  // its wrapper ran
}

}  // namespace

TEST_CASE("a dlsym interposer after the shim sees each of the program's lookups once and keeps its limit",
          "[dlsym][neighbours]") {
  const Outcome plain = neighbours(DLSYM_INTERPOSER_B);
  check_limit_enforced(plain, "b");
  CHECK(plain["b.lookups"] == 5);  // the premise: four in the driver's handle, one RTLD_DEFAULT
  CHECK(plain["b.from_program"] == 5);

  // LD_PRELOAD's order (HAMi-core's device plugin puts it in /etc/ld.so.preload, read after it),
  // and the launcher's, which puts the shim first.
  const Outcome preloaded = neighbours(std::string("SHIM:") + DLSYM_INTERPOSER_B);
  const Outcome launched = run_program({LAUNCHER_BUILD, "--", DLSYM_NEIGHBOURS}, runtime_first(DLSYM_INTERPOSER_B),
                                       {{"CUDNN_FASTPATH_SHIM", shim_under_test(SHIM_PATH)}});
  for (const Outcome* o : {&preloaded, &launched}) {
    check_limit_enforced(*o, "b");
    CHECK((*o)["b.lookups"] == 5);
    // The shim asks for cuStreamDestroy_v2 on the program's behalf; the other four reach the
    // interposer from the program itself, by a jump.
    CHECK((*o)["b.from_program"] == 4);
    CHECK((*o)["destroy_in_shim"] == 1);  // the shim's function, which forwards to the wrapper
  }
}

TEST_CASE("a dlsym interposer before the shim works as without it, and one on each side sees what it would without the shim",
          "[dlsym][neighbours]") {
  const Outcome before = neighbours(std::string(DLSYM_INTERPOSER_A) + ":SHIM");
  check_limit_enforced(before, "a");
  CHECK(before["a.lookups"] == 5);
  CHECK(before["a.from_program"] == 5);
  CHECK(before["destroy_in_shim"] == 0);  // it takes glibc's dlsym by version, around the shim

  const std::string both = std::string(DLSYM_INTERPOSER_A) + ":" + DLSYM_INTERPOSER_B;
  const Outcome plain = neighbours(both);
  const Outcome o = neighbours(std::string(DLSYM_INTERPOSER_A) + ":SHIM:" + DLSYM_INTERPOSER_B);
  for (const char* key : {"big_allocated", "small_allocated", "a.lookups", "a.from_program", "a.refused",
                          "a.stream_destroys", "b.lookups", "b.refused", "b.stream_destroys"}) {
    INFO(key);
    CHECK(o[key] == plain[key]);
  }
}

TEST_CASE("CUDNN_FASTPATH_DISABLE=1 leaves dlsym alone entirely, and CUDNN_FASTPATH_DLSYM=0 hands nothing out",
          "[dlsym][neighbours][config]") {
  const std::string order = std::string("SHIM:") + DLSYM_INTERPOSER_B;
  const Outcome disabled = neighbours(order, {{"CUDNN_FASTPATH_DISABLE", "1"}});
  check_limit_enforced(disabled, "b");
  CHECK(disabled["b.lookups"] == 5);
  CHECK(disabled["b.from_program"] == 5);  // every lookup a jump: the shim never looks
  CHECK(disabled["destroy_in_shim"] == 0);

  // The interposed name is still looked at (a caller holding cuDNN's own function for a call that
  // takes a variant pack must get real packs) and answered with what the next dlsym found.
  const Outcome off = neighbours(order, {{"CUDNN_FASTPATH_DLSYM", "0"}});
  check_limit_enforced(off, "b");
  CHECK(off["b.lookups"] == 5);
  CHECK(off["b.from_program"] == 4);
  CHECK(off["destroy_in_shim"] == 0);
}

// ---- the unseen cuDNN ------------------------------------------------------------------------

TEST_CASE("a process that loads cuDNN and never calls it: nothing on stderr with --stats-file alone", "[dlsym][unseen]") {
  const std::string file = make_temp_dir() + "/never.json";
  const Outcome quiet = run({DLSYM_PLAIN, "load-cudnn"}, {{"CUDNN_FASTPATH_STATS_FILE", file}});
  CHECK(quiet.process.err.empty());
  CHECK(std::regex_search(read_file(file), std::regex("\"cudnn_unseen\": \"[^\"]*libcudnn.so.9\"")));

  // With --stats the line may be printed, and says nothing false: the program made no call.
  const Outcome asked = run({DLSYM_PLAIN, "load-cudnn"}, {{"CUDNN_FASTPATH_STATS", "1"}});
  CHECK(count_lines_containing(asked.process.err, "is loaded but no cuDNN call reached the shim: the program made none,") == 1);
  CHECK(asked.process.err.find("bind around it") == std::string::npos);  // the landed shim's claim
}

TEST_CASE("calls taken with glibc's own dlsym bypass the shim: the unseen line says so where the docs say", "[dlsym][unseen]") {
  const Outcome o = run({DLSYM_PLAIN, "bypass"}, {{"CUDNN_FASTPATH_STATS", "1"}});
  CHECK(o["bypass_calls"] == 3);
  CHECK(count_lines_containing(o.process.err, "no cuDNN call reached the shim: the program made none, or its "
                                              "callers bind around the shim (a dlvsym lookup") == 1);
  const std::string file = make_temp_dir() + "/bypass.json";
  const Outcome file_only = run({DLSYM_PLAIN, "bypass"}, {{"CUDNN_FASTPATH_STATS_FILE", file}});
  CHECK(file_only.process.err.empty());
  CHECK(std::regex_search(read_file(file), std::regex("\"cudnn_unseen\": \"[^\"]*libcudnn.so.9\"")));
}
