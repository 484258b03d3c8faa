// Scenario cases of hostile_test.cpp (the defects a hostile review found) and of how the shim
// finds cuDNN: concurrent first calls, the loader's lock, thread exit, dlclose, several libcudnn,
// two copies of the shim (scenario.h).
#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "tests/support/must_load.h"
#include "tests/interpose/scenario.h"

namespace scenario {

#ifndef SCENARIO_LINKED
// Nothing loaded: whoever defines cudnnSetStream globally (the shim, if preloaded) gets the call.
int no_cudnn() {
  if (std::strcmp(g_mode, "none") != 0) die("no_cudnn runs in mode none");
  using SetStream = cudnnStatus_t (*)(cudnnHandle_t, cudaStream_t);
  auto set_stream = reinterpret_cast<SetStream>(dlsym(RTLD_DEFAULT, "cudnnSetStream"));
  if (set_stream == nullptr) {
    std::printf("defined=0\n");
    return 0;
  }
  std::printf("defined=1\n");
  print("first_status", set_stream(reinterpret_cast<cudnnHandle_t>(0x1000), nullptr));
  print("second_status", set_stream(reinterpret_cast<cudnnHandle_t>(0x1000), nullptr));
  return 0;
}
#endif

// ---- the hostile cases (hostile_test.cpp) -------------------------------------------------------

// Two threads released together: the process's first cuDNN calls against its first CUDA runtime
// call. Each library's real functions are resolved on first use; neither resolution may undo the
// other's. "losses" counts whatever went wrong.
int concurrent_first_calls() {
  // Before the barrier, and not interposed: the stub's own cudaStreamCreate.
  cudaStream_t s0 = must_create_stream();
  cudaStream_t s = must_create_stream();
  const std::uint64_t sets_before = real_sets();
  const std::uint64_t destroys_before = g_api.cudart_counters().stream_destroy;
  std::atomic<int> arrived{0};
  const auto barrier = [&] {
    arrived.fetch_add(1);
    while (arrived.load() < 2) {
    }
  };
  cudnnStatus_t create_status = CUDNN_STATUS_INTERNAL_ERROR, set_status = CUDNN_STATUS_INTERNAL_ERROR;
  cudaError_t destroy_status = cudaErrorUnknown;
  std::thread cudnn_thread([&] {
    barrier();
    cudnnHandle_t h = nullptr;
    create_status = g_api.create(&h);
    set_status = g_api.set_stream(h, s);
  });
  std::thread cudart_thread([&] {
    barrier();
    destroy_status = g_api.stream_destroy(s0);
  });
  cudnn_thread.join();
  cudart_thread.join();
  const bool set_reached = real_sets() - sets_before >= 1;
  const bool destroy_reached = g_api.cudart_counters().stream_destroy > destroys_before;
  print("create_status", create_status);
  print("set_status", set_status);
  print("set_reached", set_reached);
  print("destroy_status", destroy_status);
  print("destroy_reached", destroy_reached);
  print("losses", (create_status != CUDNN_STATUS_SUCCESS) + (set_status != CUDNN_STATUS_SUCCESS) + !set_reached +
                      (destroy_status != cudaSuccess) + !destroy_reached);
  return 0;
}

#ifndef SCENARIO_LINKED
void on_alarm(int) {
  static const char kLine[] = "deadlock=1\n";
  const ssize_t ignored = write(STDOUT_FILENO, kLine, sizeof kLine - 1);
  (void)ignored;
  _exit(4);
}

// A library's constructor calls cuDNN (holding the loader's lock, inside dlopen) while thread B
// makes the process's first cuDNN call, whose lazy resolution of the real symbols needs that lock.
int loader_lock() {
  signal(SIGALRM, on_alarm);
  alarm(10);
  LoaderLockFlags& flags = scenario_loader_lock_flags;
  cudnnStatus_t b_status = CUDNN_STATUS_INTERNAL_ERROR;
  std::thread b([&] {
    while (flags.entered.load() == 0) sched_yield();
    flags.b_started.store(1);
    cudnnHandle_t h = nullptr;
    b_status = g_api.create(&h);  // the process's first cuDNN call
  });
  void* library = must_dlopen(CONSTRUCTOR_LIBRARY_PATH, RTLD_NOW | RTLD_LOCAL);
  b.join();
  int (*constructor_status)() = nullptr;
  must_dlsym(constructor_status, library, "constructor_library_create_status");
  print("b_create_status", b_status);
  std::printf("constructor_create_status=%d\n", constructor_status());
  print("deadlock", 0);
  return 0;
}
#endif

// A thread's key destructor that calls cudnnSetStream, on a key created after the shim's own:
// it runs after the shim's destructor for that thread.
cudnnHandle_t g_exit_handle = nullptr;
cudaStream_t g_exit_streams[2] = {};

void set_at_thread_exit(void*) {
  for (int i = 0; i < 5; ++i) set(g_exit_handle, g_exit_streams[0]);
  set(g_exit_handle, g_exit_streams[1]);
}

int thread_exit_counts() {
  g_exit_handle = must_create();
  g_exit_streams[0] = must_create_stream();
  g_exit_streams[1] = must_create_stream();
  std::thread worker([] {
    for (int i = 0; i < 10; ++i) set(g_exit_handle, g_exit_streams[0]);
    pthread_key_t key;
    if (pthread_key_create(&key, set_at_thread_exit) != 0) die("pthread_key_create");
    pthread_setspecific(key, g_exit_handle);
  });
  worker.join();
  print("calls", g_calls);  // the statistics report must count them all
  return 0;
}

#ifndef SCENARIO_LINKED
// Mode explicit: the program unloads the shim while a thread that counted calls is still alive.
int dlclose_shim() {
  if (g_shim_library == nullptr) die("dlclose_shim runs in mode explicit");
  cudnnHandle_t h = must_create();
  cudaStream_t s = must_create_stream();
  std::atomic<int> stage{0};
  std::thread worker([&] {
    for (int i = 0; i < 5; ++i) g_api.set_stream(h, s);
    stage.store(1);
    while (stage.load() != 2) sched_yield();
  });
  while (stage.load() != 1) sched_yield();
  print("dlclose_status", dlclose(g_shim_library));
  std::fflush(stdout);
  stage.store(2);
  worker.join();  // the worker has exited: its thread-exit work ran
  print("joined", 1);
  return 0;
}
#endif

// ---- two libcudnn in one process: the frameworks built against cuDNN 9 and cuDNN 8 stubs ----
#if !defined(SCENARIO_LINKED) || defined(FRAMEWORK8_PATH)

const ScenarioApi& open_framework(const char* path, void*& library) {
  library = must_dlopen(path, RTLD_NOW | RTLD_LOCAL);
  const ScenarioApi* (*api)() = nullptr;
  must_dlsym(api, library, "scenario_framework_api");
  return *api();
}

// Everything through the framework: create, a stream, two sets, the framework's own
// cudnnGetStream (not interposed), the stream's destroy (interposed), the handle's destroy.
void use_framework(const char* prefix, const ScenarioApi& api) {
  const std::string p = prefix;
  const std::uint64_t sets_before = api.counters().set_stream;
  const std::uint64_t destroys_before = api.cudart_counters().stream_destroy;
  cudnnHandle_t h = nullptr;
  print((p + "_create_status").c_str(), api.create(&h));
  cudaStream_t s = nullptr;
  if (api.stream_create(&s) != cudaSuccess) die("cudaStreamCreate failed");
  const cudnnStatus_t first = api.set_stream(h, s);
  const cudnnStatus_t second = api.set_stream(h, s);
  print((p + "_set_status").c_str(), first != CUDNN_STATUS_SUCCESS ? first : second);
  cudaStream_t held = nullptr;
  const cudnnStatus_t get_status = api.get_stream(h, &held);
  print((p + "_get_status").c_str(), get_status);
  print((p + "_get_agrees").c_str(), get_status == CUDNN_STATUS_SUCCESS && held == s);
  print((p + "_real_set_stream").c_str(), api.counters().set_stream - sets_before);
  print((p + "_stream_destroy_status").c_str(), api.stream_destroy(s));
  print((p + "_stub_stream_destroys").c_str(), api.cudart_counters().stream_destroy - destroys_before);
  print((p + "_destroy_status").c_str(), api.destroy(h));
}

const char* object_of(const void* address) {
  Dl_info info{};
  return dladdr(address, &info) != 0 && info.dli_fname != nullptr ? info.dli_fname : "?";
}
#endif

#ifndef SCENARIO_LINKED

int two_cudnns() {
  void* library9 = nullptr;
  void* library8 = nullptr;
  const ScenarioApi& v9 = open_framework(FRAMEWORK_PATH, library9);
  const ScenarioApi& v8 = open_framework(FRAMEWORK8_PATH, library8);
  // The premise: two distinct libcudnn (and libcudart) objects are loaded.
  const std::string cudnn9 = object_of(reinterpret_cast<const void*>(v9.counters));
  const std::string cudnn8 = object_of(reinterpret_cast<const void*>(v8.counters));
  const std::string cudart9 = object_of(reinterpret_cast<const void*>(v9.cudart_counters));
  const std::string cudart8 = object_of(reinterpret_cast<const void*>(v8.cudart_counters));
  std::printf("v9_cudnn=%s\nv8_cudnn=%s\n", cudnn9.c_str(), cudnn8.c_str());
  print("distinct_cudnns", cudnn9 != cudnn8 && cudnn9.find("libcudnn.so.9") != std::string::npos &&
                               cudnn8.find("libcudnn.so.8") != std::string::npos);
  print("distinct_cudarts", cudart9 != cudart8);
  use_framework("v9", v9);
  use_framework("v8", v8);
  return 0;
}

// One libcudnn after another: the first framework (and the cuDNN it brought) is unloaded before
// the second, with another cuDNN, is loaded.
int cudnn_replaced() {
  void* library9 = nullptr;
  use_framework("v9", open_framework(FRAMEWORK_PATH, library9));
  print("v9_dlclose_status", dlclose(library9));
  void* library8 = nullptr;
  use_framework("v8", open_framework(FRAMEWORK8_PATH, library8));
  return 0;
}

// Whether /proc/self/maps shows a file whose name contains `name`.
bool mapped(const char* name) {
  FILE* maps = std::fopen("/proc/self/maps", "r");
  if (maps == nullptr) die("cannot read /proc/self/maps");
  char line[4096];
  bool found = false;
  while (!found && std::fgets(line, sizeof line, maps)) found = std::strstr(line, name) != nullptr;
  std::fclose(maps);
  return found;
}

// A framework opened RTLD_GLOBAL (its libcudnn is then in the global scope, found next after the
// shim), used, and closed: what stays mapped. Without the shim both go.
int bound_then_closed() {
  void* library = must_dlopen(FRAMEWORK_PATH, RTLD_NOW | RTLD_GLOBAL);
  const ScenarioApi* (*api)() = nullptr;
  must_dlsym(api, library, "scenario_framework_api");
  use_framework("framework", *api());
  dlclose(library);
  print("framework_mapped", mapped("libscenario_framework.so"));
  print("cudnn_mapped", mapped("libcudnn.so.9"));
  print("cudart_mapped", mapped("libcudart.so.13"));
  return 0;
}
#endif

#if defined(FRAMEWORK8_PATH)
// The program has cuDNN 9 and runtime 13 in the global scope (linked, or opened RTLD_GLOBAL), and
// opens a framework RTLD_LOCAL that links cuDNN 8 and runtime 12, whose symbols carry those
// versions: the framework's references name them, and the global definitions do not match.
int versioned_scopes() {
  void* library8 = nullptr;
  const ScenarioApi& v8 = open_framework(FRAMEWORK8_PATH, library8);
  print("distinct_cudnns", object_of(reinterpret_cast<const void*>(v8.counters)) !=
                               std::string(object_of(reinterpret_cast<const void*>(g_api.counters))));
  use_framework("v8", v8);
  use_framework("v9", g_api);
  return 0;
}
#endif

#ifndef SCENARIO_LINKED

// Mode global. Two copies of the shim from different files: A, the preloaded one (or, with
// SCENARIO_SHIM_A=dlopen, SHIM_PATH opened RTLD_LOCAL by the program), and B, the copy named by
// SCENARIO_SHIM_COPY, opened RTLD_LOCAL. A set through B must not leave A's cache stale.
int two_shims() {
  const char* copy = std::getenv("SCENARIO_SHIM_COPY");
  if (copy == nullptr || *copy == '\0') die("two_shims needs SCENARIO_SHIM_COPY");
  using SetStream = cudnnStatus_t (*)(cudnnHandle_t, cudaStream_t);
  SetStream a = g_api.set_stream;
  const char* a_from = std::getenv("SCENARIO_SHIM_A");
  if (a_from != nullptr && std::strcmp(a_from, "dlopen") == 0)
    must_dlsym(a, must_dlopen(SHIM_PATH, RTLD_NOW | RTLD_LOCAL), "cudnnSetStream");
  SetStream b = nullptr;
  must_dlsym(b, must_dlopen(copy, RTLD_NOW | RTLD_LOCAL), "cudnnSetStream");
  print("distinct_shims", object_of(reinterpret_cast<const void*>(a)) != std::string(object_of(reinterpret_cast<const void*>(b))));
  const std::uint64_t before = real_sets();
  cudnnHandle_t h = must_create();
  cudaStream_t sa = must_create_stream(), sb = must_create_stream();
  a(h, sa);
  b(h, sb);
  a(h, sa);
  print("get_agrees", holds(h, sa));
  print("real_set_stream", real_sets() - before);
  return 0;
}
#endif

}  // namespace scenario
