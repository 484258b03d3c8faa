// The shim's graph replay, under LD_PRELOAD, against the stub libcudnn and the stub libcuda
// (label: graphs).
//
// Each test runs a scenario program (graph_scenario.cpp) in a child process, in each load mode the
// packs suite uses, and judges what it printed. The stubs count what a graph replay changes: the
// executes that reached libcudnn, those recorded into a capture, the launches, and whether each op
// ran with exactly what the program gave it (a replay of a stale graph, or one that baked in an
// old by-value scalar, is a mismatch).
#include <catch2/catch.hpp>

#include <array>
#include <string>
#include <vector>

#include "tests/support/invariants.h"
#include "tests/support/outcome.h"
#include "tests/support/process.h"
#include "tests/support/scenario_run.h"

using namespace cudnn_fastpath::test;

namespace {

// dlsym and dlsym_library: JAX's way to cuDNN (every function taken with dlsym on a handle of its
// own), reached through the shim's exported dlsym (tests/dlsym).
constexpr std::array kModes{"linked", "global", "local", "dlsym", "dlsym_library"};

const ScenarioRunner run{.programs = {{"linked", GRAPH_SCENARIO_LINKED}},
                         .shared = GRAPH_SCENARIO_DLOPEN,
                         .shim = SHIM_PATH,
                         .env = {kShapesLearntAtThirdCall}};

// What holds in every run: no call failed, every op ran as made, no replay of a stale triple, no
// capture in global mode, no launch of a destroyed graph.
const InvariantChecker check_sound{.zero = {"failures", "mismatches"},
                                   .zero_per_phase = {"stale", "global_captures", "bad_launches", "foreign_destroys"}};

}  // namespace

TEST_CASE("100 steady ops: two direct executes, one capture, 98 launches on the program's stream", "[graphs]") {
  const char* mode = GENERATE(from_range(kModes));
  CAPTURE(mode);
  const Outcome plain = run(mode, "steady", {.preload = false});
  CHECK(plain["execute_calls"] == 100);  // the premise: every op reaches cuDNN
  CHECK(plain["launches"] == 0);
  check_sound(plain);

  const Outcome o = run(mode, "steady");
  check_sound(o);
  CHECK(o["execute_calls"] == 3);  // two direct, one captured
  CHECK(o["captured"] == 1);
  CHECK(o["runs"] == 100);  // every op did its work once: 2 directly, 98 by a launch
  CHECK(o["replays"] == 98);
  CHECK(o["launches"] == 98);
  CHECK(o["launched_on_program_stream"] == 1);
  CHECK(o["private_streams"] == 1);              // captured on a stream of the shim's
  CHECK(o["handle_holds_program_stream"] == 1);  // and the handle's stream restored
  CHECK(o.process.err.empty());
}

TEST_CASE("the A/B's blocks: after each switch back on, two direct executes, a capture, then launches", "[graphs][config]") {
  const char* mode = GENERATE(from_range(kModes));
  CAPTURE(mode);
  const Outcome o = run(mode, "ab_blocks");
  for (int round = 0; round < 3; ++round) {
    const std::string r = "round" + std::to_string(round) + ".op";
    INFO("round " << round);
    for (const char* op : {"0.", "1.", "2.", "3.", "4."}) check_sound(o, r + op);
    CHECK(o[r + "0.execute_calls"] == 1);  // the switch off forgot the graph
    CHECK(o[r + "0.launches"] == 0);
    CHECK(o[r + "1.execute_calls"] == 1);
    CHECK(o[r + "2.captures"] == 1);
    CHECK(o[r + "2.launches"] == 1);
    for (const char* op : {"3.", "4."}) {
      CHECK(o[r + op + "execute_calls"] == 0);  // what the A/B times: launches only
      CHECK(o[r + op + "launches"] == 1);
    }
  }
}

TEST_CASE("CUDNN_FASTPATH_GRAPHS=0, CUDNN_FASTPATH_VARIANT_PACKS=0 and CUDNN_FASTPATH_DISABLE=1: no graph", "[graphs][config]") {
  for (const char* setting : {"CUDNN_FASTPATH_GRAPHS=0", "CUDNN_FASTPATH_VARIANT_PACKS=0", "CUDNN_FASTPATH_DISABLE=1"}) {
    INFO(setting);
    const std::string s = setting;
    const Outcome o = run("linked", "steady", {.env = {{s.substr(0, s.find('=')), s.substr(s.find('=') + 1)}}});
    check_sound(o);
    CHECK(o["execute_calls"] == 100);
    CHECK(o["launches"] == 0);
    CHECK(o["private_streams"] == 0);
  }
}

TEST_CASE("a bad CUDNN_FASTPATH_GRAPHS value gets one warning line and the default", "[graphs][config]") {
  const Outcome o = run("linked", "steady", {.env = {{"CUDNN_FASTPATH_GRAPHS", "maybe"}}});
  check_sound(o);
  CHECK(o["launches"] == 98);
  CHECK(count_lines_containing(o.process.err, "CUDNN_FASTPATH_GRAPHS=maybe is not a boolean") == 1);
}

TEST_CASE("the program capturing its own graph: its executes reach cuDNN, none is launched", "[graphs]") {
  const char* mode = GENERATE(from_range(kModes));
  CAPTURE(mode);
  const Outcome o = run(mode, "program_capture");
  check_sound(o, "during.");
  CHECK(o["during.execute_calls"] == 5);
  CHECK(o["during.captured"] == 5);  // into the program's capture, as without the shim
  CHECK(o["during.launches"] == 0);
  CHECK(o["during.launches_into_capture"] == 0);
  CHECK(o["during.captures"] == 1);  // the program's own
  CHECK(o["program_launch.replays"] == 5);
  CHECK(o["program_launch.stale"] == 0);
}

TEST_CASE("a by-value scalar is compared at every launch, and one that keeps changing stops the captures", "[graphs][by_value]") {
  const char* mode = GENERATE(from_range(kModes));
  CAPTURE(mode);
  const Outcome plain = run(mode, "by_value", {.preload = false});
  check_sound(plain);
  CHECK(plain["execute_calls"] == 60);

  const Outcome o = run(mode, "by_value");
  check_sound(o);  // every op ran with the scale it was made with
  CHECK(o["steady.captures"] == 2);  // at 1.5, then again at 2.5
  CHECK(o["steady.launches"] == 18);
  CHECK(o["captures"] == 4);  // the first and three re-captures, then direct for good
  CHECK(o["runs"] == 60);
  CHECK(o["live_graphs"] == 0);
}

TEST_CASE("a host pointer that is not a known by-value tensor is never captured", "[graphs][by_value]") {
  const char* mode = GENERATE(from_range(kModes));
  CAPTURE(mode);
  const Outcome o = run(mode, "host_pointer");
  check_sound(o);
  CHECK(o["captures"] == 0);
  CHECK(o["execute_calls"] == 20);
  CHECK(o["runs"] == 20);
}

// Watched failing (the pack part, before issue 49 keyed an execute by its pack's contents): the
// key holding the pack's address instead of its cache instance, without the forget at eviction
// (launches 5, execute_calls 0: the new pack met the old graph). Now a graph holds the pack's
// pointers, never the pack, so an evicted pack's graph serves the next pack of the same contents.
TEST_CASE("graphs are forgotten with their handle, their plan and the feature, and an evicted pack's graph serves "
          "the next pack of its contents",
          "[graphs][forget]") {
  const char* mode = GENERATE(from_range(kModes));
  CAPTURE(mode);
  const Outcome o = run(mode, "forget");
  CHECK(o["failures"] == 0);
  CHECK(o["mismatches"] == 0);
  for (const char* part : {"handle.", "plan."}) {
    INFO(part);
    const std::string p = part;
    CHECK(o[p + "graphs_before"] == 1);
    CHECK(o[p + "graphs_after"] == 0);
    CHECK(o[p + "stale"] == 0);
    CHECK(o[p + "execute_calls"] == 3);  // counted and captured again from the start
    CHECK(o[p + "launches"] == 3);
  }
  CHECK(o["pack.graphs_before"] == 1);
  CHECK(o["pack.graphs_after"] == 1);  // the pack went, its graph stays
  CHECK(o["pack.stale"] == 0);
  CHECK(o["pack.execute_calls"] == 0);  // the new pack of `c`'s contents launches `c`'s graph
  CHECK(o["pack.launches"] == 5);
  CHECK(o["handle.same_address"] == 1);  // the premise: the new handle is where the old one was
  CHECK(o["pack.same_address"] == 1);  // and the new real pack where the evicted one was
  CHECK(o["switch.graphs_before"] == 1);
  CHECK(o["switch.features_off"] == 3);
  CHECK(o["switch.graphs_after"] == 0);
  CHECK(o["switch.off.execute_calls"] == 5);
  CHECK(o["switch.off.launches"] == 0);
  CHECK(o["switch.features_on"] == 7);
  CHECK(o["switch.on.launches"] == 3);
  CHECK(o["switch.graphs_only"] == 1);  // graphs without the pack cache: not granted
}

// Watched failing with an execute's pointers written into its key as plain words (no tensors, no
// shape, as before issue 49): no style launched any of its 200 (each key runs once).
TEST_CASE("relocation: backend executes with a new input and output every call, in each kernel style, relocated "
          "where the graph can follow them, every output right",
          "[graphs][relocation]") {
  const char* mode = GENERATE(from_range(kModes));
  CAPTURE(mode);
  for (const char* style : {"plain", "by_alignment", "indirect", "split", "memset", "two_kernels", "tma", "low_half",
                            "high_half", "page_index", "by_page_alignment"}) {
    INFO("style " << style);
    const std::string s = style;
    const Outcome o = run(mode, "relocation", {.env = {{"GRAPH_SCENARIO_STYLE", s}}});
    const std::string prefix = "relocation.";
    check_sound(o, prefix);
    const long long calls = o["relocation.calls"];
    CHECK(calls == 200);
    CHECK(o["relocation.runs"] == calls);  // every execute did its work once
    CHECK(o["relocation.mismatches"] == 0);
    if (s == "indirect" || s == "split" || s == "low_half" || s == "page_index") {
      // The moving tensors' addresses are in the scratch memory, in halves, in a page index or a
      // low half that another constant may hold: no proof, each call by pointer.
      CHECK(o["relocation.node_updates"] == 0);
      CHECK(o["relocation.launches"] <= 10);
    } else {
      // Two shapes (the output's two alignments), each captured twice for its proof, and once more
      // for each alignment above 256 bytes its proof did not see (each count of trailing zero bits
      // a class: 9 seen, 8 when classes stopped at 4 KiB).
      CHECK(10 * o["relocation.launches"] >= 9 * calls);
      CHECK(10 * o["relocation.node_updates"] >= 9 * calls);
      CHECK(o["relocation.captures"] <= 12);
    }
  }
}

// Verify mode checks each relocated execute against a fresh capture (none differs), and
// `--no-relocation` turns it off (every execute by pointer: each key runs once, directly).
TEST_CASE("relocation: backend executes verified against fresh captures, and none with relocation off",
          "[graphs][relocation]") {
  const char* mode = GENERATE(from_range(kModes));
  CAPTURE(mode);
  const std::string prefix = "relocation.";
  const Outcome verified = run(mode, "relocation", {.env = {{"CUDNN_FASTPATH_VERIFY", "1"}}});
  check_sound(verified, prefix);
  CHECK(count_lines_containing(verified.process.err, "verify:") == 0);
  CHECK(10 * verified["relocation.launches"] >= 9 * verified["relocation.calls"]);
  CHECK(verified["relocation.captures"] >= verified["relocation.launches"]);  // a fresh capture each

  const Outcome off = run(mode, "relocation", {.env = {kByPointerOnly}});
  check_sound(off, prefix);
  CHECK(off["relocation.node_updates"] == 0);
  CHECK(off["relocation.launches"] == 0);
  CHECK(off["relocation.runs"] == off["relocation.calls"]);
}

// Every pack new (fresh activations): their form is one cuDNN finalized, so their finalizes build
// no real pack (deferred) and the pack cache never fills with packs used once; each execute is a
// launch of its shape's graph, which needs none. Before packs were deferred the cache filled and
// backed off, and the test watched that its proxies went on (failing with the declined packs made
// real: 321 of 1,500 launched); since, watched failing with the deferral taken out (1,500 real
// packs built).
TEST_CASE("relocation: fresh packs every execute still relocate once the pack cache backs off", "[graphs][relocation]") {
  const char* mode = GENERATE(from_range(kModes));
  CAPTURE(mode);
  const std::string file = make_temp_dir() + "/s.json";
  const Outcome o = run(mode, "fresh_packs", {.stats = false, .env = {{"CUDNN_FASTPATH_STATS_FILE", file}}});
  const std::string prefix = "fresh.";
  check_sound(o, prefix);
  const std::string json = read_file(file);
  INFO(json);
  CHECK(json_number(json, "packs_deferred").value_or(0) >= 1000);
  // Real packs: the form's first, and one for each capture (the proof's, an alignment check's).
  CHECK(json_number(json, "pack_misses").value_or(-1) <= 16);
  const long long calls = o["fresh.calls"];
  CHECK(o["fresh.runs"] == calls);
  CHECK(o["fresh.mismatches"] == 0);
  CHECK(10 * o["fresh.launches"] >= 9 * calls);
  CHECK(o["fresh.captures"] <= 16);  // 11 seen: the proof's two, a check for each new alignment
}

// A by-value scale that changes every ten calls: a shape's graph bakes one in, and only calls with
// that one launch it. Watched failing without replay_by_shape()'s host-bytes check: mismatches 188.
TEST_CASE("relocation: a by-value tensor's bytes decide whether a shape's graph may be launched", "[graphs][relocation]") {
  const char* mode = GENERATE(from_range(kModes));
  CAPTURE(mode);
  const Outcome o = run(mode, "relocation_by_value");
  const std::string prefix = "by_value.";
  check_sound(o, prefix);
  const long long calls = o["by_value.calls"];
  CHECK(o["by_value.runs"] == calls);
  CHECK(o["by_value.mismatches"] == 0);
  CHECK(o["by_value.launches"] >= calls / 2 - 10);  // the calls with the scale the graph baked in
}

TEST_CASE("fork: the child launches none of the parent's graphs and makes its own", "[graphs][fork]") {
  const char* mode = GENERATE(from_range(kModes));
  CAPTURE(mode);
  const Outcome o = run(mode, "fork");
  CHECK(o["parent_graphs"] == 1);
  CHECK(o["child_exit"] == 0);
  CHECK(o["child.failures"] == 0);
  CHECK(o["child.mismatches"] == 0);
  CHECK(o["child.foreign_launches"] == 0);
  CHECK(o["child.foreign_captures"] == 0);  // on a capture stream of its own, not the parent's
  CHECK(o["child_after_switch.foreign_destroys"] == 0);
  CHECK(o["child_after_switch.live_graphs"] == 1);  // the parent's, untouched (the child's is gone)
  CHECK(o["child.execute_calls"] == 3);
  CHECK(o["child.launches"] == 3);
}

TEST_CASE("a stream of another context, or of a green context, is executed directly", "[graphs][context]") {
  const char* mode = GENERATE(from_range(kModes));
  CAPTURE(mode);
  const Outcome o = run(mode, "other_context");
  CHECK(o["failures"] == 0);
  CHECK(o["mismatches"] == 0);
  CHECK(o["other.execute_calls"] == 5);
  CHECK(o["other.launches"] == 0);
  CHECK(o["back.launches"] == 5);  // the graph is still good on its own context
  CHECK(o["green.captures"] == 0);
  CHECK(o["green.execute_calls"] == 10);
}

TEST_CASE("a failed capture or instantiation executes directly for good, and a failed launch is an error", "[graphs][errors]") {
  const char* mode = GENERATE(from_range(kModes));
  CAPTURE(mode);
  const Outcome o = run(mode, "failures", {.env = {{"CUDNN_FASTPATH_VERBOSE", "1"}}});
  CHECK(o["failures"] == 0);
  CHECK(o["mismatches"] == 0);
  for (const char* part : {"capture.", "instantiate."}) {
    INFO(part);
    const std::string p = part;
    CHECK(o[p + "captures"] == 1);  // one attempt, never another
    CHECK(o[p + "runs"] == 10);     // every op ran
    CHECK(o[p + "launches"] == 0);
    CHECK(o[p + "live_graphs"] == 0);
  }
  CHECK(count_lines_containing(o.process.err, "graph replay: a capture of an execute failed") == 1);
  CHECK(count_lines_containing(o.process.err, "graph replay: an instantiation of an execute failed") == 1);
  CHECK(o["launch.status"] != 0);  // never a silent success
  CHECK(o["launch.runs"] == 0);

  const Outcome quiet = run(mode, "failures");
  CHECK(count_lines_containing(quiet.process.err, "graph replay") == 0);
}

TEST_CASE("threads with their own handles and streams, one plan: each op runs as made", "[graphs][threads]") {
  const char* mode = GENERATE(from_range(kModes));
  CAPTURE(mode);
  const Outcome o = run(mode, "threads");
  check_sound(o);
  CHECK(o["runs"] == 800);
  // One capture per handle, or two where threads racing to finalize the same contents made two
  // real packs (a triple each); every op after a triple's capture is a launch.
  CHECK(o["captures"] >= 4);
  CHECK(o["captures"] <= 8);
  CHECK(o["launches"] == o["replays"]);
  CHECK(o["launches"] >= 800 - 3 * o["captures"]);
}

TEST_CASE("statistics: the graph counts in the JSON file and a stderr line", "[graphs][stats]") {
  const std::string dir = make_temp_dir();
  const Outcome o = run("linked", "steady", {.env = {{"CUDNN_FASTPATH_STATS_FILE", dir + "/s.json"}}});
  check_sound(o);
  const std::string json = read_file(dir + "/s.json");
  INFO(json);
  CHECK(json_number(json, "backend_captured").value_or(-1) == 1);
  CHECK(json_number(json, "backend_launches").value_or(-1) == 98);
  CHECK(json_number(json, "backend_direct").value_or(-1) == 2);
  CHECK(json_number(json, "backend_refused_capturing").value_or(-1) == 0);
  CHECK(json_number(json, "backend_evicted").value_or(-1) == 0);
  CHECK(json.find("\"graphs\": true") != std::string::npos);

  const Outcome refused = run("linked", "host_pointer", {.env = {{"CUDNN_FASTPATH_STATS", "1"}}});
  CHECK(count_lines_containing(refused.process.err,
                               "backend execute replay: 20 direct, 0 captured, 0 launches, 0 refused: capturing, 0 context, "
                               "0 failed, 0 full, 1 unknown") == 1);
}

TEST_CASE("the launcher's --no-graphs option executes every op directly", "[graphs][launcher]") {
  std::vector<EnvChange> env = env_without_shim();
  const ProcessResult with = run_process({LAUNCHER_BUILD, GRAPH_SCENARIO_LINKED, "steady"}, env);
  REQUIRE(with.exit_code == 0);
  CHECK(key_values(with.out).at("launches") == "98");
  const ProcessResult without = run_process({LAUNCHER_BUILD, "--no-graphs", GRAPH_SCENARIO_LINKED, "steady"}, env);
  INFO(without.err);
  REQUIRE(without.exit_code == 0);
  CHECK(key_values(without.out).at("launches") == "0");
  CHECK(key_values(without.out).at("execute_calls") == "100");
  CHECK(without.err.empty());
}

TEST_CASE("packs that never repeat, or cycle through more than the caches hold, cost no more calls than the caches off",
          "[graphs][admission]") {
  const char* mode = GENERATE("linked", "local", "dlsym");
  CAPTURE(mode);
  for (const char* pattern : {"miss_heavy_fresh", "miss_heavy_cycling"}) {
    INFO(pattern);
    const Outcome off = run(mode, pattern, {.env = {{"CUDNN_FASTPATH_VARIANT_PACKS", "0"}}});
    check_sound(off, "recovered.");
    const long long ops = off["ops"];
    CHECK(off["measured.backend_calls"] == 7 * ops);  // the premise: create, 3 sets, finalize, execute, destroy

    const std::string file = make_temp_dir() + "/s.json";
    const Outcome o = run(mode, pattern, {.env = {{"CUDNN_FASTPATH_STATS_FILE", file}}});
    check_sound(o, "recovered.");
    const long long graph_calls = o["measured.captures"] + o["measured.instantiated"] + o["measured.graph_destroys"];
    CHECK(o["measured.backend_calls"] + graph_calls <= off["measured.backend_calls"] + ops / 100);
    CHECK(graph_calls <= ops / 100);
    // A steady op after them is replayed again: the caches came back.
    CHECK(o["recovered.launches"] == 100);
    CHECK(o["recovered.execute_calls"] == 0);
    const std::string json = read_file(file);
    CHECK(json_number(json, "packs_declined").value_or(0) > 0);
  }
}
