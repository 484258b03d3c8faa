// What every run of a suite's scenario program must show, whatever its case: no call failed that
// should have succeeded, every output was right, no graph was captured in global mode or launched
// after its destruction, and so on. Each suite names the keys its program prints for these.
#pragma once

#include <string>
#include <vector>

#include "tests/support/outcome.h"

namespace cudnn_fastpath::test {

struct InvariantChecker {
  std::vector<std::string> zero;      // keys of the whole run that must read 0 ("failures")
  std::vector<std::string> positive;  // keys of the whole run that must read more than 0 ("checks")
  // Counters printed for each phase of a case, after the phase's prefix ("matmul.cuda.bad_launches"),
  // that must read 0.
  std::vector<std::string> zero_per_phase;

  // The whole run's keys, and zero_per_phase after `prefix` ("": the counters of the whole run).
  void operator()(const Outcome& o, const std::string& prefix = "") const;
  // zero_per_phase after `prefix` alone.
  void phase(const Outcome& o, const std::string& prefix) const;
  // The whole run's keys, and zero_per_phase in every phase: each key that ends with one of them.
  void every_phase(const Outcome& o) const;

 private:
  void whole_run(const Outcome& o) const;
};

}  // namespace cudnn_fastpath::test
