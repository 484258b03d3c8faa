#include "tests/support/outcome.h"

#include <catch2/catch.hpp>

namespace cudnn_fastpath::test {

long long Outcome::operator[](const std::string& key) const {
  const auto it = values.find(key);
  INFO("key " << key << "\nstdout:\n" << process.out << "stderr:\n" << process.err);
  REQUIRE(it != values.end());
  return std::stoll(it->second);
}

std::map<std::string, std::string> Outcome::with_prefix(std::initializer_list<const char*> prefixes) const {
  std::map<std::string, std::string> out;
  for (const auto& [key, value] : values)
    for (const char* prefix : prefixes)
      if (key.rfind(prefix, 0) == 0) out[key] = value;
  return out;
}

Outcome outcome_of(ProcessResult result) {
  Outcome o{std::move(result), {}};
  o.values = key_values(o.process.out);
  return o;
}

}  // namespace cudnn_fastpath::test
