// The shim's variant-pack cache, under LD_PRELOAD, against the stub libcudnn (label: packs).
//
// Each test runs a scenario program (pack_scenario.cpp) in a child process and judges what it
// printed; most run it a second time without the shim, which shows what the program sees from
// cuDNN alone: the counts the shim must beat, and the statuses it must not change.
#include <cstddef>
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "shim/include/cudnn_fastpath/shim_control.h"
#include "tests/support/process.h"
#include "tests/support/outcome.h"
#include "tests/support/scenario_run.h"

extern char** environ;

using namespace cudnn_fastpath::test;

namespace {

constexpr long long kSuccess = 0;           // CUDNN_STATUS_SUCCESS
constexpr long long kBadParam = 2000;       // CUDNN_STATUS_BAD_PARAM
constexpr long long kNullPointer = 2002;    // CUDNN_STATUS_BAD_PARAM_NULL_POINTER
constexpr long long kNotFinalized = 2004;   // CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED
constexpr long long kNotSupported = 3000;   // CUDNN_STATUS_NOT_SUPPORTED
constexpr long long kCacheCapacity = 256;   // finalized packs the shim's cache holds

const ScenarioRunner run{.programs = {{"linked", PACK_SCENARIO_LINKED}},
                         .shared = PACK_SCENARIO_DLOPEN,
                         .shim = SHIM_PATH};

Outcome run_without_shim(const std::string& mode, const std::string& name) {
  return run(mode, name, {.preload = false});
}

// Requires that two runs printed the same keys with `prefixes`, with the same values; says which
// differ.
void require_same(const Outcome& shimmed, const Outcome& plain, std::initializer_list<const char*> prefixes) {
  const auto with = shimmed.with_prefix(prefixes), without = plain.with_prefix(prefixes);
  REQUIRE(!without.empty());
  std::string differences;
  for (const auto& [key, value] : without) {
    const auto it = with.find(key);
    if (it == with.end()) differences += key + ": " + value + " without the shim, missing with it\n";
    else if (it->second != value) differences += key + ": " + value + " without the shim, " + it->second + " with it\n";
  }
  for (const auto& [key, value] : with)
    if (!without.count(key)) differences += key + ": only with the shim (" + value + ")\n";
  INFO("with the shim:\n" << shimmed.process.out << "stderr:\n" << shimmed.process.err);
  CHECK(differences == "");
}

// The single statistics file a run wrote into `dir`.
std::string stats_json(const std::string& dir) {
  const ProcessResult listing = run_process({"sh", "-c", "cat " + dir + "/*.json"});
  REQUIRE(listing.exit_code == 0);
  return listing.out;
}

// A run of a scenario (linked, no failed call) with a statistics file, and that file.
struct StatsRun {
  Outcome outcome;
  std::string json;
};
StatsRun run_with_stats_file(const std::string& name, std::vector<EnvChange> env = {}) {
  const std::string dir = make_temp_dir();
  env.push_back({"CUDNN_FASTPATH_STATS_FILE", dir + "/s.json"});
  StatsRun r{run("linked", name, {.env = env}), ""};
  CHECK(r.outcome["failures"] == 0);
  r.json = stats_json(dir);
  return r;
}

}  // namespace

TEST_CASE("1000 ops with the same contents make exactly one real variant pack", "[packs]") {
  const char* mode = GENERATE(from_range(kGlobalScopeModes));
  CAPTURE(mode);
  const Outcome plain = run_without_shim(mode, "steady");
  // The premise: without the shim every op makes its own pack, and the stub runs the caller's.
  CHECK(plain["real_packs"] == 1000);
  CHECK(plain["created_at_create"] == 1);
  CHECK(plain["executed_callers_pack"] == 1);
  CHECK(plain["failures"] == 0);
  CHECK(plain["live_packs"] == 0);

  const Outcome shimmed = run(mode, "steady");
  CHECK(shimmed["failures"] == 0);
  CHECK(shimmed["mismatches"] == 0);  // every execute ran with the uids, pointers, workspace set
  CHECK(shimmed["stub_executes"] == 1000);
  CHECK(shimmed["last_matches"] == 1);
  CHECK(shimmed["real_packs"] == 1);
  CHECK(shimmed["created_at_create"] == 0);       // a proxy: no cuDNN call at create
  CHECK(shimmed["executed_callers_pack"] == 0);   // the stub got the real pack, not the proxy
  CHECK(shimmed["live_packs"] == 1);              // the cached one
  CHECK(shimmed["real_set_stream"] == 1);         // the other feature is still on
  CHECK(shimmed.process.err.empty());
}

TEST_CASE("a changed pointer or workspace misses once, and contents seen before hit", "[packs]") {
  const Outcome plain = run_without_shim("linked", "pointer_change");
  CHECK(plain["real_after_alternating"] == 100);
  CHECK(plain["real_after_back_to_first"] == 400);
  CHECK(plain["failures"] == 0);
  CHECK(plain["mismatches"] == 0);

  const Outcome o = run("linked", "pointer_change");
  CHECK(o["failures"] == 0);
  CHECK(o["mismatches"] == 0);
  CHECK(o["real_after_alternating"] == 2);  // A, B, A, B...
  CHECK(o["real_after_third"] == 3);        // then C
  CHECK(o["real_after_workspace"] == 4);    // C's pointers with another workspace
  CHECK(o["real_after_back_to_first"] == 4);  // A again: still cached
}

TEST_CASE("arrays changed by the caller after SetAttribute do not change the pack", "[packs]") {
  const Outcome plain = run_without_shim("linked", "arrays_copied");
  CHECK(plain["executed_as_set"] == 2);
  CHECK(plain["real_packs"] == 2);

  const Outcome o = run("linked", "arrays_copied");
  CHECK(o["failures"] == 0);
  CHECK(o["executed_as_set"] == 2);
  CHECK(o["real_packs"] == 1);
}

TEST_CASE("two plans' packs, op after op, make two real packs", "[packs]") {
  const Outcome plain = run_without_shim("linked", "two_plans");
  CHECK(plain["real_packs"] == 1000);
  CHECK(plain["failures"] == 0);

  const Outcome o = run("linked", "two_plans");
  CHECK(o["failures"] == 0);
  CHECK(o["mismatches"] == 0);
  CHECK(o["real_packs"] == 2);
}

TEST_CASE("errors at set, finalize and execute are cuDNN's own, call by call", "[packs][errors]") {
  const char* mode = GENERATE(from_range(kGlobalScopeModes));
  CAPTURE(mode);
  const Outcome plain = run_without_shim(mode, "errors");
  // What the stub checks, as cuDNN does (the premise of the comparison).
  CHECK(plain["status.wrong_type_uids.02_set_uids_int32"] == kBadParam);
  CHECK(plain["status.wrong_type_uids.07_execute"] == kSuccess);
  CHECK(plain["status.wrong_type_pointers.03_set_pointers_int64"] == kBadParam);
  CHECK(plain["status.wrong_type_workspace.04_set_workspace_int64"] == kBadParam);
  CHECK(plain["status.workspace_count_2.04_set_workspace_2"] == kBadParam);
  CHECK(plain["status.unknown_attribute.03_set_tensor_uid"] == kBadParam);
  CHECK(plain["status.count_mismatch.05_finalize"] == kBadParam);
  CHECK(plain["status.count_mismatch.06_execute"] == kBadParam);
  CHECK(plain["status.missing_pointers.04_finalize"] == kBadParam);
  CHECK(plain["status.missing_pointers.05_execute"] == kBadParam);
  CHECK(plain["status.set_after_finalize.06_set_pointers"] == kBadParam);
  CHECK(plain["status.set_after_finalize.08_execute"] == kSuccess);
  CHECK(plain["status.set_after_finalize.09_executed_as_set"] == 1);
  CHECK(plain["status.finalize_twice.06_finalize"] == kBadParam);
  CHECK(plain["status.execute_unfinalized.05_execute"] == kBadParam);
  CHECK(plain["status.execute_unfinalized.07_execute"] == kSuccess);
  CHECK(plain["status.set_twice.10_executed_as_set"] == 1);
  CHECK(plain["status.null_array.02_set_uids_null"] == kNullPointer);
  CHECK(plain["status.initialize.02_initialize"] == kNotSupported);
  CHECK(plain["status.get_before_finalize.05_get_uids"] == kNotFinalized);
  CHECK(plain["status.cuda_graph_unfinalized.05_populate"] == kBadParam);
  CHECK(plain["status.tensors_over_limit.07_get_uids_count"] == 29);
  CHECK(plain["status.used_after_destroy.07_stale_execute"] == kBadParam);
  CHECK(plain["status.used_after_destroy.08_stale_set"] == kBadParam);
  CHECK(plain["status.used_after_destroy.10_stale_destroy"] == kBadParam);

  // With the shim: the same status from every call.
  const Outcome shimmed = run(mode, "errors");
  require_same(shimmed, plain, {"status."});
}

TEST_CASE("INTERMEDIATES, which the proxy does not record, reaches cuDNN and the op runs", "[packs]") {
  const Outcome plain = run_without_shim("linked", "intermediates");
  CHECK(plain["intermediates_read_back"] == 10);
  CHECK(plain["real_with_intermediates"] == 10);
  CHECK(plain["live_packs"] == 0);

  const Outcome o = run("linked", "intermediates");
  CHECK(o["failures"] == 0);
  CHECK(o["mismatches"] == 0);
  CHECK(o["intermediates_read_back"] == 10);
  CHECK(o["real_with_intermediates"] == 10);  // each a private real pack
  CHECK(o["real_plain"] == 1);                // plain ops are cached again
  CHECK(o["live_packs"] == 1);                // the private packs went with their proxies
}

TEST_CASE("GetAttribute of a finalized pack returns what was set, hit or miss", "[packs]") {
  const Outcome plain = run_without_shim("linked", "get_attribute");
  CHECK(plain["first_reads_as_set"] == 1);
  CHECK(plain["second_reads_as_set"] == 1);
  CHECK(plain["real_packs"] == 2);

  const Outcome o = run("linked", "get_attribute");
  CHECK(o["first_reads_as_set"] == 1);
  CHECK(o["second_reads_as_set"] == 1);
  CHECK(o["real_packs"] == 1);  // reading a finalized proxy does not make it private
  require_same(o, plain, {"status."});
}

TEST_CASE("cudnnBackendPopulateCudaGraph and UpdateCudaGraph get a live finalized pack, not the proxy",
          "[packs][cuda_graph]") {
  const Outcome plain = run_without_shim("linked", "cuda_graph");
  CHECK(plain["populate_got_callers_pack"] == 1);  // the premise: the stub records what it got
  CHECK(plain["update_got_callers_pack"] == 1);

  const char* mode = GENERATE(from_range(kGlobalScopeModes));
  CAPTURE(mode);
  const Outcome o = run(mode, "cuda_graph");
  for (const char* key : {"made_first", "made_second", "populate_status", "update_status", "execute_status",
                          "update_again_status", "destroy_first", "destroy_second"})
    CHECK(o[key] == kSuccess);
  CHECK(o["populate_kind"] == 1);
  CHECK(o["update_kind"] == 1);
  CHECK(o["populate_as_set"] == 1);
  CHECK(o["update_as_set"] == 1);
  CHECK(o["update_again_as_set"] == 1);
  CHECK(o["populate_got_callers_pack"] == 0);
  CHECK(o["update_got_callers_pack"] == 0);
  CHECK(o["real_packs"] == 2);
  CHECK(o["stub_populate_calls"] == 1);
  CHECK(o["stub_update_calls"] == 2);
}

TEST_CASE("descriptors of every other type pass straight through", "[packs]") {
  const Outcome plain = run_without_shim("linked", "other_types");
  // The premise: two plans and one more tensor were made (17: CUDNN_BACKEND_TENSOR_DESCRIPTOR,
  // 5: CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, 3: CUDNN_BACKEND_ENGINECFG_DESCRIPTOR).
  CHECK(plain["created.17"] == 7);
  CHECK(plain["created.5"] == 2);
  CHECK(plain["created.3"] == 2);
  const char* mode = GENERATE(from_range(kGlobalScopeModes));
  CAPTURE(mode);
  const Outcome o = run(mode, "other_types");
  CHECK(o["failures"] == 0);
  CHECK(o["executed_callers_plan"] == 1);
  require_same(o, plain, {"created.", "live.", "status."});
}

TEST_CASE("a variant pack created inside libcudnn is not proxied", "[packs]") {
  const Outcome plain = run_without_shim("linked", "internal");
  CHECK(plain["created_at_once"] == 10);

  const char* mode = GENERATE(from_range(kGlobalScopeModes));
  CAPTURE(mode);
  const Outcome o = run(mode, "internal");
  CHECK(o["created_at_once"] == 10);       // the stub saw each creation at once
  CHECK(o["executed_callers_pack"] == 10);  // and executed the pack the caller holds
  CHECK(o["real_packs"] == 10);
  CHECK(o["failures"] == 0);
  require_same(o, plain, {"status."});
}

TEST_CASE("eviction never takes the pack of a live proxy", "[packs][eviction]") {
  const Outcome plain = run_without_shim("linked", "eviction");
  CHECK(plain["live_packs_with_kept"] == 1);
  CHECK(plain["real_packs"] == 2000);  // 1000 contents, each twice

  const std::string dir = make_temp_dir();
  const Outcome o = run("linked", "eviction", {.env = {{"CUDNN_FASTPATH_STATS_FILE", dir + "/s.json"}}});
  CHECK(o["kept_status"] == kSuccess);
  CHECK(o["kept_first_execute"] == kSuccess);
  CHECK(o["failures"] == 0);
  CHECK(o["mismatches"] == 0);
  CHECK(o["real_packs"] == 1000);
  CHECK(o["kept_execute"] == kSuccess);
  CHECK(o["kept_as_set"] == 1);
  CHECK(o["kept_get"] == kSuccess);
  CHECK(o["kept_reads_as_set"] == 1);
  CHECK(o["live_packs_with_kept"] <= kCacheCapacity + 1);
  CHECK(o["kept_destroy"] == kSuccess);
  CHECK(o["live_packs_end"] <= kCacheCapacity);

  const std::string json = stats_json(dir);
  INFO(json);
  // 1001 distinct contents (the kept one, then the loop's), each a miss and a hit, through a cache
  // of 256:
  // at least misses - 256 entries left it, less one if the kept proxy's entry, which must live on,
  // is not counted.
  const double misses = json_number(json, "pack_misses").value_or(-1);
  CHECK(misses == 1001);
  CHECK(json_number(json, "pack_evictions").value_or(-1) >= misses - kCacheCapacity - 1);
  CHECK(json_number(json, "pack_evictions").value_or(-1) <= misses);
}

TEST_CASE("300 live packs with distinct contents each run with their own", "[packs][eviction]") {
  const Outcome plain = run_without_shim("linked", "many_live");
  CHECK(plain["live_packs_peak"] == 300);
  CHECK(plain["live_packs_end"] == 0);

  const Outcome o = run("linked", "many_live");
  CHECK(o["failures"] == 0);
  CHECK(o["mismatches"] == 0);
  CHECK(o["live_packs_peak"] == 1);  // one form: the first built, the others when they execute
  CHECK(o["live_packs_end"] <= kCacheCapacity);
}

// Activations that move: packs of one form, other pointers each. Watched failing with the deferral
// taken out (finalize_miss building always): built_at_finalize 5, refused_execute 0.
TEST_CASE("packs of a form cuDNN finalized before: a real pack only for a call that needs one", "[packs][deferred]") {
  const Outcome plain = run_without_shim("linked", "deferred");
  CHECK(plain["built_at_finalize"] == 5);
  CHECK(plain["refused_execute"] == kSuccess);  // built at its finalize, before cuDNN refused any
  CHECK(plain["mismatches"] == 0);

  const StatsRun r = run_with_stats_file("deferred");
  const Outcome& o = r.outcome;
  INFO(r.json);
  CHECK(o["built_at_finalize"] == 1);  // the form's first; the other four deferred
  CHECK(json_number(r.json, "packs_deferred").value_or(-1) == 4);
  CHECK(o["read_get"] == kSuccess);  // cuDNN answers for a deferred pack: one is built for it
  CHECK(o["read_as_set"] == 1);
  CHECK(o["shared_failures"] == 0);
  CHECK(o["shared_built"] >= 1);  // four threads at once: each may build one before it knows
  CHECK(o["shared_built"] <= 4);
  CHECK(o["shared_live"] == 1);  // one pack kept, the others given back
  CHECK(o["refuse_found"] == 1);
  CHECK(o["refused_execute"] == 2008);  // CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH, the build's answer
  CHECK(o["accepted_execute"] == kSuccess);
  CHECK(o["built_at_destroy"] == 0);  // the unused pack was never built
  CHECK(o["mismatches"] == 0);
  CHECK(o["live_packs_end"] <= kCacheCapacity);

  // Without graph replay an execute always needs the real pack: every finalize builds it.
  const Outcome no_graphs = run("linked", "deferred", {.env = {{"CUDNN_FASTPATH_GRAPHS", "0"}}});
  CHECK(no_graphs["built_at_finalize"] == 5);
  CHECK(no_graphs["refused_execute"] == kSuccess);
  CHECK(no_graphs["failures"] == 0);
  CHECK(no_graphs["mismatches"] == 0);
}

TEST_CASE("threads on their own handles, some sharing contents: few real packs", "[packs][threads]") {
  const Outcome plain = run_without_shim("linked", "threads");
  CHECK(plain["real_packs"] == 4000);
  CHECK(plain["failures"] == 0);

  const char* mode = GENERATE(from_range(kGlobalScopeModes));
  CAPTURE(mode);
  const Outcome o = run(mode, "threads");
  CHECK(o["failures"] == 0);
  CHECK(o["read_back_wrong"] == 0);
  // Three distinct contents: at least three, and at most one more per thread racing a miss.
  CHECK(o["real_packs"] >= 3);
  CHECK(o["real_packs"] <= 3 + 4);
}

TEST_CASE("statistics with threads: every thread's packs counted, exactly", "[packs][threads][stats]") {
  const StatsRun r = run_with_stats_file("threads");
  CHECK(r.outcome["read_back_wrong"] == 0);
  INFO(r.json);
  // 4 threads of 1000 packs, each a proxy; every real pack the stub made is a miss's.
  CHECK(json_number(r.json, "packs_proxied").value_or(-1) == 4000);
  const double misses = json_number(r.json, "pack_misses").value_or(-1);
  CHECK(misses == r.outcome["real_packs"]);
  CHECK(json_number(r.json, "pack_hits").value_or(-1) == 4000 - misses);
  CHECK(r.outcome["real_packs"] >= 3);
  CHECK(r.outcome["real_packs"] <= 3 + 4);
}

TEST_CASE("statistics: threads in turn, each taking over an exited thread's block: every op counted once",
          "[packs][threads][stats]") {
  const StatsRun r = run_with_stats_file("threads_in_turn");
  CHECK(r.outcome["mismatches"] == 0);
  INFO(r.json);
  // Three threads in turn, 1000 packs each, one content: one miss, and no count lost with a thread
  // or counted twice by the thread that takes its block over.
  CHECK(json_number(r.json, "packs_proxied").value_or(-1) == 3000);
  CHECK(json_number(r.json, "pack_hits").value_or(-1) == 2999);
  CHECK(json_number(r.json, "pack_misses").value_or(-1) == 1);
  CHECK(r.outcome["real_packs"] == 1);
}

TEST_CASE("statistics: switching the features off and on, the A/B's shape: counts exact, the cache kept",
          "[packs][stats][config]") {
  CHECK(run_without_shim("linked", "switch_every")["have_switch"] == 0);

  // 48 ops with the cache on and 48 off, until 4096 have run with it on; then a switch every 10.
  for (const int every : {48, 10}) {
    INFO("a switch every " << every << " ops");
    const StatsRun r = run_with_stats_file("switch_every", {{"SCENARIO_SWITCH_EVERY", std::to_string(every)}});
    REQUIRE(r.outcome["have_switch"] == 1);
    INFO(r.json);
    CHECK(r.outcome["ops_on"] == 4096);
    CHECK(json_number(r.json, "packs_proxied").value_or(-1) == 4096);
    CHECK(json_number(r.json, "pack_hits").value_or(-1) == 4095);
    CHECK(json_number(r.json, "pack_misses").value_or(-1) == 1);  // the cache outlives the switches
    // Every op with the cache off made its own real pack; with it on, one in all.
    const long long ops_off = every * ((4096 + every - 1) / every);
    CHECK(r.outcome["real_packs"] == 1 + ops_off);
  }
}

TEST_CASE("2000 short-lived threads, one op each: the pool never runs dry", "[packs][threads]") {
  const Outcome plain = run_without_shim("linked", "short_threads");
  CHECK(plain["ops"] > 1024);  // more threads than the pool has proxies
  CHECK(plain["real_packs"] == plain["ops"]);
  CHECK(plain["failures"] == 0);

  const char* mode = GENERATE(from_range(kGlobalScopeModes));
  CAPTURE(mode);
  const Outcome o = run(mode, "short_threads");
  CHECK(o["failures"] == 0);
  CHECK(o["mismatches"] == 0);
  CHECK(o["live_packs"] <= 1);  // the cached pack
  // One real pack for the contents; a proxy lost at each thread's exit would make it hundreds.
  CHECK(o["real_packs"] == 1);
}

TEST_CASE("two copies of the shim: a pack made through one and used through the other", "[packs][resolve]") {
  const std::string dir = make_temp_dir();
  const std::string copy = dir + "/libcudnn_fastpath_copy.so";
  REQUIRE(run_process({"cp", SHIM_PATH, copy}).exit_code == 0);
  const Outcome o = run("global", "two_shims", {.env = {{"SCENARIO_SHIM_COPY", copy}}});
  CHECK(o["failures"] == 0);
  CHECK(o["mismatches"] == 0);
  CHECK(o["real_packs"] == 1);
}

TEST_CASE("fork: the child forgets the cache and builds its own pack", "[packs][fork]") {
  const Outcome plain = run_without_shim("linked", "fork");
  CHECK(plain["child_real_packs"] == 100);
  CHECK(plain["child_failures"] == 0);

  const char* mode = GENERATE(from_range(kGlobalScopeModes));
  CAPTURE(mode);
  const Outcome o = run(mode, "fork");
  CHECK(o["child_exit"] == 0);
  CHECK(o["parent_real_warm"] == 1);
  CHECK(o["child_real_packs"] == 1);
  CHECK(o["child_failures"] == 0);
  CHECK(o["child_mismatches"] == 0);
  CHECK(o["parent_real_after"] == 0);  // the parent's cache is untouched
  CHECK(o["failures"] == 0);
}

TEST_CASE("CUDNN_FASTPATH_VARIANT_PACKS=0 and CUDNN_FASTPATH_DISABLE=1 make every pack real", "[packs][config]") {
  const char* mode = GENERATE(from_range(kGlobalScopeModes));
  CAPTURE(mode);
  const Outcome off = run(mode, "steady", {.env = {{"CUDNN_FASTPATH_VARIANT_PACKS", "0"}}});
  CHECK(off["real_packs"] == 1000);
  CHECK(off["created_at_create"] == 1);
  CHECK(off["executed_callers_pack"] == 1);
  CHECK(off["failures"] == 0);
  CHECK(off["real_set_stream"] == 1);  // only this feature is off
  CHECK(off.process.err.empty());

  const Outcome disabled = run(mode, "steady", {.env = {{"CUDNN_FASTPATH_DISABLE", "1"}}});
  CHECK(disabled["real_packs"] == 1000);
  CHECK(disabled["executed_callers_pack"] == 1);
  CHECK(disabled["failures"] == 0);
  CHECK(disabled["real_set_stream"] == 100);
  CHECK(disabled.process.err.empty());

  const Outcome on = run(mode, "steady", {.env = {{"CUDNN_FASTPATH_VARIANT_PACKS", "1"}}});
  CHECK(on["real_packs"] == 1);
}

TEST_CASE("a bad CUDNN_FASTPATH_VARIANT_PACKS value gets one warning line and the default", "[packs][config]") {
  const Outcome o = run("linked", "steady", {.env = {{"CUDNN_FASTPATH_VARIANT_PACKS", "maybe"}}});
  CHECK(o["real_packs"] == 1);
  CHECK(count_lines_containing(o.process.err, "CUDNN_FASTPATH_VARIANT_PACKS=maybe is not a boolean") == 1);
  CHECK(count_lines_containing(o.process.err, "cudnn-fastpath:") == 1);
}

TEST_CASE("the run-time switch: packs off and on again, earlier proxies keep working", "[packs][config]") {
  CHECK(run_without_shim("linked", "runtime_switch")["have_switch"] == 0);  // the shim exports it

  SECTION("in each load mode") {
    const char* mode = GENERATE(from_range(kGlobalScopeModes));
    CAPTURE(mode);
    const Outcome o = run(mode, "runtime_switch");
    REQUIRE(o["have_switch"] == 1);
    CHECK(o["features_initial"] == 31);  // every feature is on by default
    CHECK(o["real_warm"] == 1);
    CHECK(o["kept_status"] == kSuccess);
    CHECK(o["early_create"] == kSuccess);
    CHECK(o["set_off"] == 1);
    CHECK(o["features_off"] == 1);
    CHECK(o["real_off"] == 100);  // every pack real while off
    CHECK(o["kept_execute_off"] == kSuccess);
    CHECK(o["kept_as_set_off"] == 1);
    CHECK(o["early_status"] == kSuccess);
    CHECK(o["early_as_set"] == 1);
    CHECK(o["late_create"] == kSuccess);
    CHECK(o["set_on"] == 3);
    CHECK(o["features_on"] == 3);
    CHECK(o["real_on"] <= 1);  // cached again
    CHECK(o["kept_execute_on"] == kSuccess);
    CHECK(o["late_execute_on"] == kSuccess);
    CHECK(o["late_as_set"] == 1);
    CHECK(o["set_unknown_bits"] == 31);
    CHECK(o["set_variant_packs_only"] == 2);
    CHECK(o["real_set_stream_without_feature"] == 10);
    CHECK(o["set_both_again"] == 3);
    CHECK(o["failures"] == 0);
    CHECK(o["mismatches"] == 0);
  }

  SECTION("a feature the configuration turned off cannot be turned on at run time") {
    const Outcome configured_off = run("linked", "runtime_switch", {.env = {{"CUDNN_FASTPATH_VARIANT_PACKS", "0"}}});
    REQUIRE(configured_off["have_switch"] == 1);
    CHECK(configured_off["features_initial"] == 25);  // the skip, legacy and cuBLAS replay
    CHECK(configured_off["real_warm"] == 10);
    CHECK(configured_off["set_on"] == 1);
    CHECK(configured_off["real_on"] == 100);
    CHECK(configured_off["failures"] == 0);

    const Outcome disabled = run("linked", "runtime_switch", {.env = {{"CUDNN_FASTPATH_DISABLE", "1"}}});
    REQUIRE(disabled["have_switch"] == 1);
    CHECK(disabled["features_initial"] == 0);
    CHECK(disabled["set_on"] == 0);
    CHECK(disabled["real_on"] == 100);
    CHECK(disabled["failures"] == 0);
  }
}

TEST_CASE("more than 28 tensors is never proxied, and 28 is", "[packs]") {
  const Outcome plain = run_without_shim("linked", "tensor_limit");
  CHECK(plain["real_at_limit"] == 100);
  CHECK(plain["real_over_limit"] == 100);

  const Outcome o = run("linked", "tensor_limit");
  CHECK(o["failures"] == 0);
  CHECK(o["mismatches"] == 0);
  CHECK(o["real_at_limit"] == 1);
  CHECK(o["real_over_limit"] == 100);
  CHECK(o["live_packs"] == 1);
}

TEST_CASE("statistics: the pack counts in the JSON file and a stderr line", "[packs][stats]") {
  const std::string dir = make_temp_dir();
  const Outcome o = run("local", "steady",
                        {.env = {{"CUDNN_FASTPATH_STATS", "1"}, {"CUDNN_FASTPATH_STATS_FILE", dir + "/stats-%p.json"}}});
  CHECK(o["failures"] == 0);
  CHECK(count_lines_containing(o.process.err, "variant packs:") == 1);

  CHECK(o["real_packs"] == 1);
  CHECK(count_lines_containing(o.process.err,
                               "cudnn-fastpath: variant packs: 1000 proxied, 999 cache hits, 1 built, 0 evicted, 0 materialized") == 1);

  const std::string json = stats_json(dir);
  INFO(json);
  // 1000 packs with one content, one thread: exact counts.
  const std::pair<const char*, double> exact[] = {
      {"packs_proxied", 1000}, {"pack_hits", 999}, {"pack_misses", 1}, {"pack_evictions", 0}, {"packs_materialized", 0}};
  for (const auto& [key, value] : exact) {
    INFO(key);
    CHECK(json_number(json, key).value_or(-1) == value);
  }
  // What the stub saw: the miss's pack.
  CHECK(o["real_packs"] == static_cast<long long>(json_number(json, "pack_misses").value_or(-1)));
  // The set-stream keys are still there.
  CHECK(json_number(json, "set_stream_calls").value_or(-1) == 100);
  CHECK(json_number(json, "forwarded").value_or(-1) == o["real_set_stream"]);
}

TEST_CASE("the launcher's --no-variant-packs option makes every pack real", "[packs][launcher]") {
  std::vector<EnvChange> env = env_without_shim();
  const ProcessResult with = run_process({LAUNCHER_BUILD, PACK_SCENARIO_LINKED, "steady"}, env);
  REQUIRE(with.exit_code == 0);
  CHECK(key_values(with.out).at("real_packs") == "1");

  const ProcessResult without = run_process({LAUNCHER_BUILD, "--no-variant-packs", PACK_SCENARIO_LINKED, "steady"}, env);
  INFO(without.err);
  REQUIRE(without.exit_code == 0);
  CHECK(key_values(without.out).at("real_packs") == "1000");
  CHECK(key_values(without.out).at("real_set_stream") == "1");  // the shim is still there
  CHECK(without.err.empty());
}

// ---- statistics never change which calls reach cuDNN -------------------------------------------

namespace {

// Runs case calls_reaching_cudnn in `mode` without statistics, then with both kinds on (stderr and
// a file), and requires that the stub saw the same cudnnSetStream calls and built the same variant
// packs. `through_shim`: the shim sees the program's calls (it does in every mode but deepbind),
// so the counts are the exact ones, and the statistics file says what reached the stub.
void check_same_calls_with_statistics(const std::string& mode, bool through_shim, const std::string& preload_value = "") {
  const Outcome off = run(mode, "calls_reaching_cudnn", {.preload_value = preload_value});
  const std::string dir = make_temp_dir();
  const Outcome on = run(mode, "calls_reaching_cudnn",
                         {.preload_value = preload_value,
                          .env = {{"CUDNN_FASTPATH_STATS", "1"}, {"CUDNN_FASTPATH_STATS_FILE", dir + "/s-%p.json"}}});
  CHECK(off["failures"] == 0);
  CHECK(on["failures"] == 0);
  CHECK(on["real_set_stream"] == off["real_set_stream"]);
  CHECK(on["real_packs"] == off["real_packs"]);
  if (through_shim) {
    // Two streams on the main thread's handle, one on each thread's; one content.
    CHECK(off["real_set_stream"] == 2 + 4);
    CHECK(off["real_packs"] == 1);
    const std::string json = stats_json(dir);
    INFO(json);
    CHECK(json_number(json, "set_stream_calls").value_or(-1) == on["set_stream_calls"]);
    CHECK(json_number(json, "forwarded").value_or(-1) == on["real_set_stream"]);
    CHECK(json_number(json, "skipped").value_or(-1) == on["set_stream_calls"] - on["real_set_stream"]);
    CHECK(json_number(json, "packs_proxied").value_or(-1) == on["ops"]);
    CHECK(json_number(json, "pack_misses").value_or(-1) == on["real_packs"]);
    CHECK(json_number(json, "pack_hits").value_or(-1) == on["ops"] - on["real_packs"]);
  } else {
    // The premise of the deepbind mode: every call reached the stub, around the shim.
    CHECK(off["real_set_stream"] == off["set_stream_calls"]);
    CHECK(off["real_packs"] == off["ops"]);
  }
}

}  // namespace

TEST_CASE("statistics on or off, the same calls reach cuDNN: the program links libcudnn", "[packs][stats]") {
  check_same_calls_with_statistics("linked", true);
}

TEST_CASE("statistics on or off, the same calls reach cuDNN: dlopen RTLD_GLOBAL", "[packs][stats]") {
  check_same_calls_with_statistics("global", true);
}

TEST_CASE("statistics on or off, the same calls reach cuDNN: RTLD_LOCAL behind a framework library",
          "[packs][stats]") {
  check_same_calls_with_statistics("local", true);
}

TEST_CASE("statistics on or off, the same calls reach cuDNN: RTLD_DEEPBIND", "[packs][stats]") {
#ifdef CUDNN_FASTPATH_SANITIZED
  // The sanitizer runtimes refuse RTLD_DEEPBIND (google/sanitizers#611); the plain build runs it.
  WARN("skipped under sanitizers: they refuse dlopen(RTLD_DEEPBIND)");
  return;
#endif
  check_same_calls_with_statistics("deepbind", false);
}

TEST_CASE("statistics on or off, the same calls reach cuDNN: the shim preloaded twice", "[packs][stats]") {
  const std::string dir = make_temp_dir();
  const std::string copy = dir + "/libcudnn_fastpath_copy.so";
  REQUIRE(run_process({"cp", shim_under_test(SHIM_PATH), copy}).exit_code == 0);
  const char* mode = GENERATE(from_range(kGlobalScopeModes));
  CAPTURE(mode);
  check_same_calls_with_statistics(mode, true, copy + " " + shim_under_test(SHIM_PATH));
}

// ---- the statistics C API ------------------------------------------------------------------------

TEST_CASE("cudnn_fastpath_stats: exact counts summed over threads, none with statistics off", "[packs][stats]") {
  const Outcome plain = run_without_shim("linked", "stats_api");
  CHECK(plain["have_stats_api"] == 0);  // the shim exports it
  CHECK(plain["real_set_stream"] == 200);
  CHECK(plain["real_packs"] == 1000);

  // The fields the spec lists, in its order; later counters may follow them.
  const std::string listed = "handles live_handles skipped forwarded verify_mismatches table_full streams_forgotten "
                             "packs_proxied pack_hits pack_misses pack_evictions packs_materialized";
  SECTION("in each load mode") {
    const char* mode = GENERATE(from_range(kGlobalScopeModes));
    CAPTURE(mode);
    const Outcome on = run(mode, "stats_api", {.env = {{"CUDNN_FASTPATH_STATS", "1"}}});
    REQUIRE(on["have_stats_api"] == 1);
    CHECK(on["failures"] == 0);
    const std::string fields = on.values.at("fields");
    CHECK(fields.rfind(listed, 0) == 0);
    if (on.values.count("header_fields")) CHECK(on.values.at("header_fields") == fields);
    const long long count = std::count(fields.begin(), fields.end(), ' ') + 1;
    CHECK(on["status"] == 0);
    CHECK(on["size"] == static_cast<long long>(offsetof(cudnn_fastpath_stats_t, handles)) + 8 * count);
    CHECK(on["counting"] == 1);
    CHECK(on["version"] == CUDNN_FASTPATH_STATS_VERSION);
    // Two handles (the thread's destroyed), each set's first call forwarded; one content.
    const std::pair<const char*, long long> exact[] = {
        {"handles", 2}, {"live_handles", 1}, {"skipped", 198}, {"forwarded", 2}, {"verify_mismatches", 0},
        {"table_full", 0}, {"streams_forgotten", 0}, {"packs_proxied", 1000}, {"pack_hits", 999},
        {"pack_misses", 1}, {"pack_evictions", 0}, {"packs_materialized", 0}};
    for (const auto& [name, value] : exact) {
      INFO(name);
      CHECK(on[std::string("api.") + name] == value);
    }
    CHECK(on["api.forwarded"] == on["real_set_stream"]);
    CHECK(on["api.pack_misses"] == on["real_packs"]);
    // A null pointer and a buffer shorter than its two words are refused, and left alone; a buffer
    // of 16 bytes gets the two words and the first count.
    CHECK(on["null_status"] == -1);
    CHECK(on["small_status"] == -1);
    CHECK(on["small_untouched"] == 1);
    CHECK(on["partial_status"] == 0);
    CHECK(on["partial_size"] == 24);
    CHECK(on["partial_handles"] == 2);
    CHECK(on["partial_rest_untouched"] == 1);

    // Statistics off: handles are still counted (the table sees them), every counter reads 0.
    const Outcome off = run(mode, "stats_api");
    REQUIRE(off["have_stats_api"] == 1);
    CHECK(off["status"] == 0);
    CHECK(off["counting"] == 0);
    CHECK(off["api.handles"] == 2);
    CHECK(off["api.live_handles"] == 1);
    for (const auto& [name, value] : exact) {
      if (std::string(name).find("handles") != std::string::npos) continue;
      INFO(name);
      CHECK(off[std::string("api.") + name] == 0);
    }
    CHECK(off["real_set_stream"] == on["real_set_stream"]);
    CHECK(off["real_packs"] == on["real_packs"]);
  }

  SECTION("under CUDNN_FASTPATH_DISABLE=1 nothing is counted, statistics asked for or not, every call passes through") {
    const Outcome disabled =
        run("linked", "stats_api", {.env = {{"CUDNN_FASTPATH_DISABLE", "1"}, {"CUDNN_FASTPATH_STATS", "1"}}});
    REQUIRE(disabled["have_stats_api"] == 1);
    CHECK(disabled["status"] == 0);
    CHECK(disabled["counting"] == 0);
    for (const std::string& name :
         {"handles", "live_handles", "skipped", "forwarded", "packs_proxied", "pack_hits", "pack_misses"}) {
      INFO(name);
      CHECK(disabled["api." + name] == 0);
    }
    CHECK(disabled["real_set_stream"] == 200);
    CHECK(disabled["real_packs"] == 1000);
  }
}

TEST_CASE("cudnn_fastpath_stats: a second copy of the shim answers with the first one's counts", "[packs][stats][resolve]") {
  const std::string dir = make_temp_dir();
  const std::string copy = dir + "/libcudnn_fastpath_copy.so";
  REQUIRE(run_process({"cp", shim_under_test(SHIM_PATH), copy}).exit_code == 0);
  const Outcome o = run("global", "stats_api", {.env = {{"CUDNN_FASTPATH_STATS", "1"}, {"SCENARIO_SHIM_COPY", copy}}});
  REQUIRE(o["have_stats_api"] == 1);
  CHECK(o["api.skipped"] == 198);
  CHECK(o["follower_same"] == 1);
}

// ---- tracers: other preloads beside the shim ---------------------------------------------------

namespace {

// The tracers (tests/tracer) and the functions each wraps, of those the stub counts.
struct Tracer {
  const char* name;
  const char* path;
  std::vector<std::string> wraps;
};
const std::vector<std::string> kCounted = {
    "cudnnCreate", "cudnnDestroy", "cudnnSetStream", "cudnnGetStream", "cudnnBackendCreateDescriptor",
    "cudnnBackendDestroyDescriptor", "cudnnBackendSetAttribute", "cudnnBackendGetAttribute",
    "cudnnBackendFinalize", "cudnnBackendExecute"};
const Tracer kTracers[] = {
    {"one", TRACER_ONE, {"cudnnBackendExecute"}},
    {"few", TRACER_FEW, {"cudnnSetStream", "cudnnBackendExecute"}},
    {"handle", TRACER_HANDLE, {"cudnnCreate", "cudnnDestroy", "cudnnSetStream", "cudnnGetStream"}},
    {"all", TRACER_ALL, kCounted},
};

// The traced case with LD_PRELOAD as given (the shim, a tracer, or both), and a statistics file;
// the file's JSON, "" if none.
StatsRun run_traced(const std::string& mode, const std::string& preload, bool disabled) {
  const std::string dir = make_temp_dir();
  std::vector<EnvChange> env = {{"CUDNN_FASTPATH_STATS_FILE", dir + "/s.json"}};
  if (disabled) env.push_back({"CUDNN_FASTPATH_DISABLE", "1"});
  const bool shim = preload.find(shim_under_test(SHIM_PATH)) != std::string::npos;
  if (!shim) env.push_back({"LD_PRELOAD", preload});
  StatsRun r{run(mode, "traced", {.preload = shim, .preload_value = preload, .env = env}), ""};
  r.json = read_file(dir + "/s.json");
  return r;
}

// The traced case under `tracer` with the shim, the tracer `after` it in LD_PRELOAD or before it,
// with the shim's features on and under CUDNN_FASTPATH_DISABLE=1, judged against the run with
// the tracer alone.
void check_traced(const char* mode, const Tracer& tracer, bool after) {
  INFO("mode " << mode << ", tracer " << tracer.name << (after ? " after the shim" : " before the shim"));
  // Without the shim: the tracer alone sees each wrapped call once (the premise), and the
  // program's calls, which the runs with the shim are judged against.
  const StatsRun alone = run_traced(mode, tracer.path, false);
  REQUIRE(alone.outcome["tracer_present"] == 1);
  for (const std::string& name : tracer.wraps) {
    INFO(name);
    REQUIRE(alone.outcome["tracer." + name] == alone.outcome["stub." + name]);
  }
  for (const bool disabled : {false, true}) {
    INFO((disabled ? "CUDNN_FASTPATH_DISABLE=1" : "features on"));
    const std::string preload = after ? shim_under_test(SHIM_PATH) + " " + tracer.path : std::string(tracer.path) + " " + shim_under_test(SHIM_PATH);
    const StatsRun r = run_traced(mode, preload, disabled);
    const Outcome& o = r.outcome;
    require_same(o, alone.outcome, {"status."});
    for (const std::string& name : tracer.wraps) {
      INFO(name);
      // After the shim the tracer is between it and cuDNN: it sees what reaches cuDNN, the shim's
      // own calls included (the real packs it builds for cache misses). Before the shim it sees
      // what the program calls, as without the shim.
      if (after) CHECK(o["tracer." + name] == o["stub." + name]);
      else CHECK(o["tracer." + name] == alone.outcome["tracer." + name]);
    }
    INFO(r.json);
    if (!disabled) {
      // The shim still skips and hits; what it forwards is what cuDNN got.
      CHECK(json_number(r.json, "set_stream_calls").value_or(-1) == 201);
      CHECK(json_number(r.json, "skipped").value_or(-1) > 90);
      CHECK(json_number(r.json, "forwarded").value_or(-1) == o["stub.cudnnSetStream"]);
      CHECK(json_number(r.json, "pack_hits").value_or(-1) > 100);
      CHECK(o["stub.cudnnSetStream"] < alone.outcome["stub.cudnnSetStream"]);
    } else {  // a pure pass-through (which writes no statistics)
      for (const std::string& name : kCounted) {
        INFO(name);
        CHECK(o["stub." + name] == alone.outcome["stub." + name]);
      }
    }
  }
}

}  // namespace

// Tracers wrapping one function, a few, or the whole API.
TEST_CASE("a tracer after the shim sees every call that reaches cuDNN, once", "[packs][tracers][tracer_after]") {
  const char* mode = GENERATE(from_range(kGlobalScopeModes));  // check_traced names it in its failures
  for (const Tracer& tracer : kTracers)
    if (std::string(tracer.name) != "handle") check_traced(mode, tracer, true);
}

// A tracer that wraps only cudnnCreate, cudnnDestroy, cudnnSetStream and cudnnGetStream, and links
// no cuDNN: the backend calls must still find cuDNN.
TEST_CASE("a tracer after the shim of the handle functions only: results as without it",
          "[packs][tracers][tracer_handle]") {
  check_traced(GENERATE(from_range(kGlobalScopeModes)), kTracers[2], true);
}

TEST_CASE("a shim opened after cuDNN sends cuDNN's own calls back to cuDNN", "[packs][tracers]") {
  // cuDNN comes before the shim in load order here, as a tracer preloaded ahead of the shim does;
  // only the tracer's own definitions are passed over.
  const Outcome o = run("local_lazy", "shim_opened_later",
                        {.preload = false, .env = {{"CUDNN_FASTPATH_VERBOSE", "1"}, {"LD_BIND_NOW", "", true}}});
  REQUIRE(o["shim_loaded"] == 1);
  // The premise: cuDNN's call reached the shim (verbose: a line at its first call).
  REQUIRE(count_lines_containing(o.process.err, "cudnn-fastpath: loaded") == 1);
  CHECK(o["status.internal_create"] == kSuccess);
  CHECK(o["real_packs"] == 1);
  CHECK(o["status.destroy"] == kSuccess);
}

TEST_CASE("a tracer before the shim sees every call the program makes, once", "[packs][tracers][tracer_before]") {
  const char* mode = GENERATE(from_range(kGlobalScopeModes));  // check_traced names it in its failures
  for (const Tracer& tracer : kTracers) check_traced(mode, tracer, false);
}
