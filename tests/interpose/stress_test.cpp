// The shim under load: threads racing on one handle, and more handles than the table holds
// (label: stress; also run under ThreadSanitizer by scripts/test).
#include <catch2/catch.hpp>

#include "tests/interpose/scenario_runner.h"

using namespace cudnn_fastpath::test;

TEST_CASE("threads racing on one handle never leave the table claiming a stream cuDNN lacks",
          "[stress]") {
  for (const char* mode : kGlobalScopeModes) {
    INFO("mode " << mode);
    CHECK(run_scenario(mode, "race", {.env = {{"STUBCUDNN_JITTER", "1"}}})["stale"] == 0);
  }
}

TEST_CASE("70,000 live handles: no wrong skip, no crash, one warning", "[stress]") {
  const Outcome o = run_scenario("linked", "table_full");
  CHECK(o["failures"] == 0);
  CHECK(o["disagreements"] == 0);
  CHECK(count_lines_containing(o.process.err, "cudnn-fastpath:") == 1);
  CHECK(count_lines_containing(o.process.err, "handles") == 1);
}
