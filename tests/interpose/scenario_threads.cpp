// Scenario cases with threads and many handles: races on one handle, a full table, churn
// (scenario.h; stress_test.cpp judges most of them).
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <thread>
#include <vector>
#include "tests/interpose/scenario.h"

namespace scenario {

// Threads on their own handles, each setting its own stream again and again.
int threads() {
  const std::uint64_t before = real_sets();
  // Each thread's calls after its first are skips whatever their number: fewer under the sanitizers.
  constexpr int kThreads = 8, kSets = scaled(10000, 2000);
  std::atomic<int> failures{0};
  std::vector<std::thread> workers;
  for (int t = 0; t < kThreads; ++t)
    workers.emplace_back([&] {
      cudnnHandle_t h = must_create();
      cudaStream_t s = must_create_stream();
      for (int i = 0; i < kSets; ++i) failures += g_api.set_stream(h, s) != CUDNN_STATUS_SUCCESS;
      failures += !holds(h, s);
    });
  for (auto& w : workers) w.join();
  g_calls += kThreads * kSets;
  print("failures", failures.load());
  report(before);  // expected with the shim: one per thread
  return 0;
}

// Threads racing cudnnSetStream on ONE handle (cuDNN forbids it; programs do it). After each
// round, every stream is set in turn from one thread: a table left claiming a stream that cuDNN
// does not hold would skip that set, and cudnnGetStream would disagree.
int race() {
  // ThreadSanitizer sees a racy access the first time it happens: fewer rounds under the sanitizers.
  constexpr int kThreads = 4, kRounds = scaled(150, 50), kSetsPerRound = 200;
  cudnnHandle_t h = must_create();
  cudaStream_t streams[kThreads];
  for (auto& s : streams) s = must_create_stream();
  int stale = 0;
  for (int round = 0; round < kRounds; ++round) {
    std::atomic<int> ready{0};
    std::vector<std::thread> racers;
    for (int t = 0; t < kThreads; ++t)
      racers.emplace_back([&, t] {
        ready.fetch_add(1);
        while (ready.load() < kThreads) {
        }
        for (int i = 0; i < kSetsPerRound; ++i) g_api.set_stream(h, streams[(t + i) % kThreads]);
      });
    for (auto& r : racers) r.join();
    for (cudaStream_t s : streams) {
      set(h, s);
      stale += !holds(h, s);
    }
  }
  print("stale", stale);
  return 0;
}

// More live handles than the shim's table holds.
int table_full() {
  // Past the table's 4096 slots, and under the sanitizers no further than that proves.
  constexpr int kHandles = scaled(70000, 10000);
  std::vector<cudnnHandle_t> handles(kHandles);
  for (auto& h : handles) h = must_create();
  cudaStream_t a = fake_stream(1), b = fake_stream(2);
  int disagreements = 0, failures = 0;
  for (auto h : handles) {
    failures += set(h, a) != CUDNN_STATUS_SUCCESS;
    failures += set(h, a) != CUDNN_STATUS_SUCCESS;
  }
  for (auto h : handles) {
    failures += set(h, b) != CUDNN_STATUS_SUCCESS;
    disagreements += !holds(h, b);
  }
  print("failures", failures);
  print("disagreements", disagreements);
  for (auto h : handles) g_api.destroy(h);
  return 0;
}

// One live handle at a time over many distinct addresses (STUBCUDNN_FRESH_HANDLES=1): each new
// handle costs one real call, and the table never fills. SCENARIO_HANDLES sets how many.
int churn() {
  const char* value = std::getenv("SCENARIO_HANDLES");
  const int handles = value ? std::atoi(value) : 100000;
  const std::uint64_t before = real_sets();
  cudaStream_t s = fake_stream(1);
  int disagreements = 0, failures = 0;
  cudnnHandle_t first = nullptr, last = nullptr;
  for (int i = 0; i < handles; ++i) {
    cudnnHandle_t h = must_create();
    if (i == 0) first = h;
    last = h;
    for (int k = 0; k < 3; ++k) failures += set(h, s) != CUDNN_STATUS_SUCCESS;
    disagreements += !holds(h, s);
    g_api.destroy(h);
  }
  print("distinct", first != last);
  print("failures", failures);
  print("disagreements", disagreements);
  report(before);  // expected with the shim: one real call per handle
  return 0;
}

// One live handle more than the table has slots.
int live_4097() {
  constexpr int kHandles = 4097;
  std::vector<cudnnHandle_t> handles(kHandles);
  for (auto& h : handles) h = must_create();
  const std::uint64_t before = real_sets();
  cudaStream_t a = fake_stream(1), b = fake_stream(2);
  int disagreements = 0, failures = 0;
  for (int round = 0; round < 2; ++round)
    for (auto h : handles)
      for (cudaStream_t s : {a, a, b, b}) {
        failures += set(h, s) != CUDNN_STATUS_SUCCESS;
        disagreements += !holds(h, s);
      }
  print("failures", failures);
  print("disagreements", disagreements);
  report(before);  // with the shim: 4 per handle with a slot, all 8 for the one without
  for (auto h : handles) g_api.destroy(h);
  return 0;
}

// Threads creating, using and destroying handles at once, with the jittered stub: slots are
// claimed and reclaimed under one another's feet, and every set must still be honoured.
int churn_race() {
  constexpr int kThreads = 4, kRounds = scaled(2000, 500);
  std::atomic<int> disagreements{0}, failures{0};
  std::vector<std::thread> workers;
  for (int t = 0; t < kThreads; ++t)
    workers.emplace_back([&, t] {
      cudaStream_t mine[2] = {fake_stream(10 + 2 * static_cast<std::uintptr_t>(t)),
                              fake_stream(11 + 2 * static_cast<std::uintptr_t>(t))};
      for (int i = 0; i < kRounds; ++i) {
        cudnnHandle_t h = nullptr;
        if (g_api.create(&h) != CUDNN_STATUS_SUCCESS) {
          ++failures;
          continue;
        }
        for (int k = 0; k < 4; ++k) {
          cudaStream_t s = mine[(i + k / 2) % 2];
          failures += g_api.set_stream(h, s) != CUDNN_STATUS_SUCCESS;
          disagreements += !holds(h, s);
        }
        g_api.destroy(h);
      }
    });
  for (auto& w : workers) w.join();
  print("failures", failures.load());
  print("disagreements", disagreements.load());
  return 0;
}

}  // namespace scenario
