// What the scenario program's cases share (scenario.cpp and the scenario_*.cpp files, one per
// topic): the calls as the load mode reaches them, and the helpers that make and check them.
//
// "real_set_stream" is how many cudnnSetStream calls reached the stub; "set_stream_calls" how
// many the program made.
#pragma once

#include <cstdint>
#include <cstdio>

#include "tests/interpose/loader_lock.h"
#include "tests/interpose/scenario_api.h"
#include "tests/support/scaled.h"
#include "tests/support/scenario_main.h"

#ifndef SCENARIO_LINKED
// The loader_lock case's flags, exported (scenario_dlopen.dynlist) for the constructor library.
extern "C" __attribute__((visibility("default"))) LoaderLockFlags scenario_loader_lock_flags;
#endif

namespace scenario {

// Set by main before a case runs.
extern ScenarioApi g_api;
extern std::uint64_t g_calls;  // set_stream calls made by the main thread, through set()
extern const char* g_mode;     // the load mode
#ifndef SCENARIO_LINKED
extern void* g_shim_library;  // mode explicit: the shim's handle
#endif

inline cudnnHandle_t must_create() {
  cudnnHandle_t h = nullptr;
  if (g_api.create(&h) != CUDNN_STATUS_SUCCESS) die("cudnnCreate failed");
  return h;
}

inline cudaStream_t must_create_stream() {
  cudaStream_t s = nullptr;
  if (g_api.stream_create(&s) != cudaSuccess) die("cudaStreamCreate failed");
  return s;
}

// A counted cudnnSetStream (main thread only: g_calls is not atomic).
inline cudnnStatus_t set(cudnnHandle_t h, cudaStream_t s) {
  ++g_calls;
  return g_api.set_stream(h, s);
}

inline bool holds(cudnnHandle_t h, cudaStream_t s) {
  cudaStream_t held = nullptr;
  return g_api.get_stream(h, &held) == CUDNN_STATUS_SUCCESS && held == s;
}

inline std::uint64_t real_sets() { return g_api.counters().set_stream; }

using scenario_main::print;

inline void report(std::uint64_t real_before) {
  print("set_stream_calls", g_calls);
  print("real_set_stream", real_sets() - real_before);
}

inline cudaStream_t fake_stream(std::uintptr_t n) { return reinterpret_cast<cudaStream_t>(0x10000 * n); }

// The cases, by topic. Each prints key=value lines and returns the program's exit status.
// scenario_steady.cpp: one thread, sets that repeat or change, handles and streams reused.
int same_stream();
int alternate();
int null_after_stream();
int recreate();
int recreate_shim_sees_destroy();
int recreate_shim_sees_create();
int failed_set();
int get_agrees();
int stream_reuse();
int verify();
// scenario_lifecycle.cpp: fork, exec, the report around a fork, streams destroyed by the driver,
// verify mode during a capture, per-thread streams.
int fork_child();
int exec_child();
int fork_report();
int fork_report_child_calls();
int driver_stream_reuse();
int driver_stream_reuse_legacy();
int static_runtime_stream_reuse();
int verify_during_capture();
int per_thread_stream();
// scenario_threads.cpp: threads, races and tables under load (stress_test.cpp).
int threads();
int race();
int table_full();
int churn();
int live_4097();
int churn_race();
// scenario_hostile.cpp: the cases of hostile_test.cpp, and how cuDNN is found.
int concurrent_first_calls();
int thread_exit_counts();
#ifndef SCENARIO_LINKED
int no_cudnn();
int loader_lock();
int dlclose_shim();
int two_cudnns();
int cudnn_replaced();
int two_shims();
int bound_then_closed();
#endif
#if defined(FRAMEWORK8_PATH)
int versioned_scopes();
#endif

}  // namespace scenario
