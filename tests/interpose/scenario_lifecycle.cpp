// Scenario cases about lifetimes: fork, exec, the statistics report around a fork, streams
// destroyed through the driver, per-thread streams (scenario.h).
#include <dlfcn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "tests/interpose/scenario.h"
#include "tests/support/must_load.h"

namespace scenario {

int fork_child() {
  cudnnHandle_t h = must_create();
  cudaStream_t s = must_create_stream();
  set(h, s);
  set(h, s);
  std::fflush(stdout);
  const pid_t pid = fork();
  if (pid == 0) {
    const std::uint64_t before = real_sets();
    const cudnnStatus_t status = g_api.set_stream(h, s);
    print("child_status", status);
    print("child_real_set_stream", real_sets() - before);
    std::fflush(stdout);
    _exit(0);
  }
  int wstatus = 0;
  waitpid(pid, &wstatus, 0);
  const std::uint64_t before = real_sets();
  set(h, s);
  print("parent_real_set_stream", real_sets() - before);
  print("child_exit", WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : 128 + WTERMSIG(wstatus));
  return 0;
}

// Sets a stream, then becomes a fresh program (same LD_PRELOAD) running same_stream.
int exec_child() {
  cudnnHandle_t h = must_create();
  set(h, must_create_stream());
  std::fflush(stdout);
  const char* self = scenario_main::g_program_path;
#ifdef SCENARIO_LINKED
  execl(self, self, "same_stream", static_cast<char*>(nullptr));
#else
  execl(self, self, g_mode, "same_stream", static_cast<char*>(nullptr));
#endif
  die("exec failed");
}

// With statistics on: the parent's 150 calls around a fork whose child makes none (or, with
// `child_calls`, 10 on a handle of its own) and exits normally.
int fork_report_with(bool child_calls) {
  cudnnHandle_t h = must_create();
  cudaStream_t s = must_create_stream();
  for (int i = 0; i < 100; ++i) set(h, s);
  print("parent_pid", static_cast<unsigned long long>(getpid()));
  std::fflush(stdout);
  const pid_t pid = fork();
  if (pid < 0) die("fork failed");
  if (pid == 0) {
    if (child_calls) {
      cudnnHandle_t own = must_create();
      for (int i = 0; i < 10; ++i) g_api.set_stream(own, s);
    }
    std::exit(0);  // a normal exit: destructors run
  }
  int wstatus = 0;
  waitpid(pid, &wstatus, 0);
  print("child_pid", static_cast<unsigned long long>(pid));
  print("child_exit", WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : 128 + WTERMSIG(wstatus));
  for (int i = 0; i < 50; ++i) set(h, s);
  print("set_stream_calls", g_calls);
  return 0;
}
int fork_report() { return fork_report_with(false); }
int fork_report_child_calls() { return fork_report_with(true); }

// Streams created and destroyed with the driver API; the runtime reuses a destroyed stream's
// address, and so does the driver.
int driver_stream_reuse_with(CUresult (*destroy_stream)(CUstream)) {
  const std::uint64_t before = real_sets();
  cudnnHandle_t h = must_create();
  CUstream first = nullptr, second = nullptr;
  if (g_api.cu_stream_create(&first, 0) != CUDA_SUCCESS) die("cuStreamCreate failed");
  set(h, first);
  set(h, first);
  print("destroy_status", destroy_stream(first));
  if (g_api.cu_stream_create(&second, 0) != CUDA_SUCCESS) die("cuStreamCreate failed");
  print("same_address", first == second);
  set(h, second);
  report(before);  // expected with the shim: 2 (the new stream must reach cuDNN)
  return 0;
}
int driver_stream_reuse() { return driver_stream_reuse_with(g_api.cu_stream_destroy_v2); }
int driver_stream_reuse_legacy() { return driver_stream_reuse_with(g_api.cu_stream_destroy_legacy); }

// A program linked to the CUDA runtime statically destroys its streams inside the runtime, through
// no name the shim can interpose (the stub driver's stand-in for that).
void (*g_destroy_unseen)(CUstream) = nullptr;
CUresult destroy_unseen(CUstream stream) {
  g_destroy_unseen(stream);
  return CUDA_SUCCESS;
}
int static_runtime_stream_reuse() {
  // The stub driver, wherever the load mode put it (RTLD_LOCAL behind the framework, say).
  void* driver = must_dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
  must_dlsym(g_destroy_unseen, driver, "stubcuda_destroy_unseen");
  return driver_stream_reuse_with(destroy_unseen);
}

// Verify mode while the program captures a CUDA graph on the handle's stream: the skips ask nothing
// of the driver that would spoil the capture (the stub driver, as the real one, invalidates a
// capture whose stream is asked its id).
int verify_during_capture() {
  void* driver = must_dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
  CUresult (*begin)(CUstream, CUstreamCaptureMode) = nullptr;
  CUresult (*end)(CUstream, CUgraph*) = nullptr;
  must_dlsym(begin, driver, "cuStreamBeginCapture_v2");
  must_dlsym(end, driver, "cuStreamEndCapture");
  const std::uint64_t before = real_sets();
  cudnnHandle_t h = must_create();
  CUstream stream = nullptr;
  if (g_api.cu_stream_create(&stream, 0) != CUDA_SUCCESS) die("cuStreamCreate failed");
  set(h, stream);
  if (begin(stream, CU_STREAM_CAPTURE_MODE_GLOBAL) != CUDA_SUCCESS) die("cuStreamBeginCapture failed");
  for (int i = 0; i < 3; ++i) set(h, stream);
  CUgraph graph = nullptr;
  print("end_capture", static_cast<int>(end(stream, &graph)));  // 0: the capture survived
  set(h, stream);
  report(before);  // expected with the shim: 1 (the first set; the others skipped)
  return 0;
}

// cudaStreamPerThread names another stream in each thread that uses it: a set of it must reach
// cuDNN every time. The null stream and cudaStreamLegacy are one stream for every thread.
int per_thread_stream() {
  cudnnHandle_t h = must_create();
  std::uint64_t before = real_sets();
  for (int t = 0; t < 2; ++t)
    std::thread([h] {
      for (int i = 0; i < 3; ++i) set(h, cudaStreamPerThread);
    }).join();
  print("per_thread_real", real_sets() - before);
  before = real_sets();
  for (int i = 0; i < 3; ++i) set(h, nullptr);
  print("null_real", real_sets() - before);
  before = real_sets();
  for (int i = 0; i < 3; ++i) set(h, cudaStreamLegacy);
  print("legacy_real", real_sets() - before);
  return 0;
}

}  // namespace scenario
