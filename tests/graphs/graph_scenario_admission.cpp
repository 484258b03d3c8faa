// The graph-replay scenario's cases about loads whose packs do not repeat (graph_scenario.h): the
// pack and graph caches must stop costing what they cannot give back (replay/admission.h).
#include <string>

#include "tests/graphs/graph_scenario.h"

namespace graph_scenario {

namespace {

// What reached the stubs: the calls a miss-heavy op could add (real packs made, set, finalized and
// destroyed; executes; captures begun, graphs instantiated and destroyed).
struct StubCalls {
  std::uint64_t backend = 0, captures = 0, instantiated = 0, exec_destroys = 0;
  static StubCalls now() {
    const StubBackendCounters b = g_api.counters();
    const StubCudaGraphCounters d = stubcuda_graph_counters();
    return {b.create_descriptor + b.set_attribute + b.finalize + b.destroy_descriptor + b.execute, d.captures_begun,
            d.instantiated, d.instantiated - d.live_execs};
  }
};

void print_calls_since(const StubCalls& before, const char* prefix) {
  const StubCalls after = StubCalls::now();
  const std::string p = prefix;
  print((p + "backend_calls").c_str(), static_cast<long long>(after.backend - before.backend));
  print((p + "captures").c_str(), static_cast<long long>(after.captures - before.captures));
  print((p + "instantiated").c_str(), static_cast<long long>(after.instantiated - before.instantiated));
  print((p + "graph_destroys").c_str(), static_cast<long long>(after.exec_destroys - before.exec_destroys));
}

// Ops whose packs are distinct: `pattern` fresh (never the same twice) or cycling (4096 contents
// in turn, sixteen times what the pack cache holds). A warm-up, then the measured ops, then a steady
// op repeated, which must be replayed again in the end (the caches come back).
int miss_heavy(bool fresh) {
  constexpr int kWarmup = 5000, kMeasured = 20000, kCycle = 4096, kSteady = 20000;
  Counts counts;
  for (int i = 0; i < kWarmup; ++i) run_op(g_main.handle, g_matmul.plan(), contents(10 + (fresh ? i : i % kCycle)), counts);
  const StubCalls before = StubCalls::now();
  for (int i = kWarmup; i < kWarmup + kMeasured; ++i)
    run_op(g_main.handle, g_matmul.plan(), contents(10 + (fresh ? i : i % kCycle)), counts);
  print("ops", kMeasured);
  print_calls_since(before, "measured.");
  const Contents steady = contents(1);
  for (int i = 0; i < kSteady; ++i) run_op(g_main.handle, g_matmul.plan(), steady, counts);
  const Snapshot last = Snapshot::now();
  for (int i = 0; i < 100; ++i) run_op(g_main.handle, g_matmul.plan(), steady, counts);
  print_since(last, "recovered.");
  print_counts(counts);
  return 0;
}

}  // namespace

int miss_heavy_fresh() { return miss_heavy(true); }
int miss_heavy_cycling() { return miss_heavy(false); }

}  // namespace graph_scenario
