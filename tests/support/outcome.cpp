#include "tests/support/outcome.h"

#include <catch2/catch.hpp>

#include <cstdlib>
#include <regex>

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

std::string shim_under_test(const std::string& built) {
  const char* other = std::getenv("CUDNN_FASTPATH_TEST_SHIM");
  return other != nullptr && *other != '\0' ? other : built;
}

Outcome run_program(const std::vector<std::string>& argv, const std::string& preload,
                    const std::vector<EnvChange>& env, bool require_success) {
  std::vector<EnvChange> all = env_without_shim();
  if (!preload.empty()) all.push_back({"LD_PRELOAD", preload});
  all.insert(all.end(), env.begin(), env.end());
  Outcome o = outcome_of(run_process(argv, all));
  std::string command;
  for (const std::string& a : argv) command += (command.empty() ? "" : " ") + a;
  INFO(command << (preload.empty() ? " (no shim)" : "") << " exited " << o.process.exit_code << "\nstdout:\n"
               << o.process.out << "stderr:\n" << o.process.err);
  if (require_success) REQUIRE(o.process.exit_code == 0);
  return o;
}

std::optional<double> json_number(const std::string& json, const std::string& key) {
  std::smatch m;
  if (!std::regex_search(json, m, std::regex("\"" + key + "\": (-?[0-9]+(\\.[0-9]+)?)"))) return std::nullopt;
  return std::stod(m[1]);
}

}  // namespace cudnn_fastpath::test
