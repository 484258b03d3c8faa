// What a scenario program printed: its process result and its key=value lines, read by key.
#pragma once

#include <initializer_list>
#include <map>
#include <string>

#include "tests/support/process.h"

namespace cudnn_fastpath::test {

struct Outcome {
  ProcessResult process;
  std::map<std::string, std::string> values;

  // The value printed for `key`; fails the test if the scenario did not print it.
  long long operator[](const std::string& key) const;

  // Every printed key=value whose key starts with one of `prefixes`.
  std::map<std::string, std::string> with_prefix(std::initializer_list<const char*> prefixes) const;
};

// `result` with its stdout's key=value lines read.
Outcome outcome_of(ProcessResult result);

}  // namespace cudnn_fastpath::test
