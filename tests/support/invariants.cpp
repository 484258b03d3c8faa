#include "tests/support/invariants.h"

#include <catch2/catch.hpp>

namespace cudnn_fastpath::test {

void InvariantChecker::whole_run(const Outcome& o) const {
  for (const std::string& key : zero) {
    INFO("key " << key);
    CHECK(o[key] == 0);
  }
  for (const std::string& key : positive) {
    INFO("key " << key);
    CHECK(o[key] > 0);
  }
}

void InvariantChecker::phase(const Outcome& o, const std::string& prefix) const {
  for (const std::string& counter : zero_per_phase) {
    INFO("key " << prefix + counter);
    CHECK(o[prefix + counter] == 0);
  }
}

void InvariantChecker::operator()(const Outcome& o, const std::string& prefix) const {
  INFO("stdout:\n" << o.process.out << "stderr:\n" << o.process.err);
  whole_run(o);
  phase(o, prefix);
}

void InvariantChecker::every_phase(const Outcome& o) const {
  INFO("stdout:\n" << o.process.out << "stderr:\n" << o.process.err);
  whole_run(o);
  for (const auto& [key, value] : o.values)
    for (const std::string& counter : zero_per_phase)
      if (key.size() >= counter.size() && key.compare(key.size() - counter.size(), counter.size(), counter) == 0) {
        INFO("key " << key);
        CHECK(value == "0");
      }
}

}  // namespace cudnn_fastpath::test
