// The shim's counters, read through its public control API (shim_control.h) by name: the demo
// looks the functions up, so it runs without the shim too, and reads each counter where
// cudnn_fastpath_stats_fields() says it is, so a shim with more counters than this build knows works.
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <sstream>

#include "demo/demo.h"

namespace demo {

namespace {
// The members before the counters (size, counting, version, reserved), in uint64_t words.
constexpr std::size_t kHeader = offsetof(cudnn_fastpath_stats_t, handles);
constexpr std::size_t kHeaderWords = kHeader / sizeof(std::uint64_t);
}  // namespace

ShimCounters::ShimCounters() {
  stats_ = reinterpret_cast<decltype(stats_)>(program_function("cudnn_fastpath_stats"));
  auto fields = reinterpret_cast<const char* (*)()>(program_function("cudnn_fastpath_stats_fields"));
  if (stats_ == nullptr || fields == nullptr) {
    stats_ = nullptr;
    return;
  }
  std::istringstream words(fields());
  for (std::string name; words >> name;) names_.push_back(name);
}

// [0]: the bytes filled; [kHeaderWords + i]: counter i. Empty without a shim, or when it is not
// counting.
ShimCounters::Snapshot ShimCounters::now() const {
  if (stats_ == nullptr) return {};
  Snapshot raw(kHeaderWords + names_.size(), 0);
  if (stats_(reinterpret_cast<cudnn_fastpath_stats_t*>(raw.data()), raw.size() * sizeof raw[0]) != 0) return {};
  std::uint32_t header[2];
  std::memcpy(header, raw.data(), sizeof header);
  if (header[1] == 0) return {};  // counting off: every counter reads 0
  raw[0] = header[0];
  return raw;
}

void ShimCounters::print_since(const Snapshot& before, std::initializer_list<const char*> names) const {
  if (stats_ == nullptr) {
    std::printf("  shim: no shim loaded (run it under scripts/cudnn-fastpath --stats)\n");
    return;
  }
  const Snapshot after = now();
  if (after.empty() || before.empty()) {
    std::printf("  shim: loaded, but not counting (no --stats, or CUDNN_FASTPATH_DISABLE=1)\n");
    return;
  }
  std::string line = "  shim:";
  for (const char* name : names) {
    std::size_t i = 0;
    while (i < names_.size() && names_[i] != name) ++i;
    const bool filled = i < names_.size() && kHeader + (i + 1) * sizeof(std::uint64_t) <= after[0];
    line += std::string(" ") + name + "=" +
            (filled ? std::to_string(after[kHeaderWords + i] - before[kHeaderWords + i]) : std::string("?"));
  }
  std::printf("%s\n", line.c_str());
}

}  // namespace demo
