// The shim under load: threads racing on one handle, and more handles than the table holds
// (label: stress; also run under ThreadSanitizer by scripts/test).
#include <catch2/catch.hpp>

#include "tests/interpose/scenario_runner.h"

using namespace cudnn_fastpath::test;

TEST_CASE("threads racing on one handle never leave the table claiming a stream cuDNN lacks",
          "[stress]") {
  const char* mode = GENERATE(from_range(kGlobalScopeModes));
  CAPTURE(mode);
  CHECK(run_scenario(mode, "race", {.env = {{"STUBCUDNN_JITTER", "1"}}})["stale"] == 0);
}

TEST_CASE("70,000 live handles: no wrong skip, no crash, one warning", "[stress]") {
  // 10,000 under the sanitizers (tests/support/scaled.h): past the table's 4096 slots all the same.
  const Outcome o = run_scenario("linked", "table_full");
  CHECK(o["failures"] == 0);
  CHECK(o["disagreements"] == 0);
  CHECK(count_lines_containing(o.process.err, "cudnn-fastpath:") == 1);
  CHECK(count_lines_containing(o.process.err, "handles") == 1);
}

TEST_CASE("one live handle at a time over 100,000 addresses: every handle cached, never a warning",
          "[stress]") {
#ifdef CUDNN_FASTPATH_SANITIZED
  const std::string handles = "20000";
#else
  const std::string handles = "100000";
#endif
  const Outcome o = run_scenario("linked", "churn",
                                 {.env = {{"STUBCUDNN_FRESH_HANDLES", "1"}, {"SCENARIO_HANDLES", handles}}});
  CHECK(o["distinct"] == 1);  // the premise: the stub handed out fresh addresses
  CHECK(o["failures"] == 0);
  CHECK(o["disagreements"] == 0);
  CHECK(o["real_set_stream"] == std::stoll(handles));  // one per handle: the other two skipped
  CHECK(o.process.err.empty());
}

TEST_CASE("4,097 live handles: one warning, every call still right", "[stress]") {
  const Outcome o = run_scenario("linked", "live_4097");
  CHECK(o["failures"] == 0);
  CHECK(o["disagreements"] == 0);
  CHECK(o["real_set_stream"] == 4096 * 4 + 8);  // 2 per round each, all 8 for the one without a slot
  CHECK(count_lines_containing(o.process.err, "cudnn-fastpath:") == 1);
  CHECK(count_lines_containing(o.process.err, "all 4096 slots of the handle table hold live cuDNN handles") == 1);
}

TEST_CASE("threads creating, setting and destroying handles at once: every set honoured", "[stress]") {
  const char* mode = GENERATE(from_range(kGlobalScopeModes));
  CAPTURE(mode);
  const Outcome o = run_scenario(mode, "churn_race", {.env = {{"STUBCUDNN_JITTER", "1"}}});
  CHECK(o["failures"] == 0);
  CHECK(o["disagreements"] == 0);
}
