// A scenario program: makes one sequence of cuDNN calls and prints what happened as key=value
// lines, for interpose_test.cpp to judge. It runs with or without the shim preloaded.
//
//   scenario_linked  CASE             the program links libcudnn (the stub) directly
//   scenario_dlopen  MODE CASE        libcudnn is reached after a dlopen; MODE is one of
//       global    dlopen(libcudnn, RTLD_GLOBAL), calls through the global scope
//       local     dlopen(framework, RTLD_LOCAL), the framework links libcudnn (PyTorch's case)
//       deepbind  dlopen(framework, RTLD_LOCAL | RTLD_DEEPBIND): the framework binds to its own
//                 libcudnn first, so the shim never sees its calls
//       none      nothing loaded: the calls go wherever dlsym(RTLD_DEFAULT) leads
//       explicit  the program dlopens the shim itself and calls it through its handle
//       self      nothing is loaded before the case runs: the case loads what it needs itself
//
// "real_set_stream" is how many cudnnSetStream calls reached the stub; "set_stream_calls" how
// many the program made.
#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "tests/support/must_load.h"
#include "tests/interpose/loader_lock.h"
#include "tests/interpose/scenario_api.h"

#ifndef SCENARIO_LINKED
// The loader_lock case's flags, exported (scenario_dlopen.dynlist) for the constructor library.
extern "C" __attribute__((visibility("default"))) LoaderLockFlags scenario_loader_lock_flags;
LoaderLockFlags scenario_loader_lock_flags;
#endif

[[noreturn]] void die(const char* what) {
  std::fprintf(stderr, "scenario: %s\n", what);
  std::exit(3);
}

namespace {

ScenarioApi g_api;
std::uint64_t g_calls = 0;  // set_stream calls made by the main thread
const char* g_self = nullptr;
const char* g_mode = "linked";


// The stub's own function, reached through the library's handle as XLA does: the shim is not on
// that path. Used to change a handle behind the shim's back.
template <typename Function>
Function around_shim(const char* name) {
  void* library = dlopen("libcudnn.so.9", RTLD_NOLOAD | RTLD_LAZY);
  if (library == nullptr) die("libcudnn.so.9 is not loaded");
  Function real = nullptr;
  must_dlsym(real, library, name);
  return real;
}

cudnnStatus_t set_stream_around_shim(cudnnHandle_t h, cudaStream_t s) {
  return around_shim<decltype(&cudnnSetStream)>("cudnnSetStream")(h, s);
}

#ifdef SCENARIO_LINKED
void load_api(const char*) {
  g_api = {cudnnCreate,        cudnnDestroy,        cudnnSetStream,     cudnnGetStream,
           cudaStreamCreate,   cudaStreamDestroy,   stubcudnn_counters, stubcudart_counters,
           cuStreamCreate,     cuStreamDestroy_v2,  cuStreamDestroy,    stubcuda_counters};
}
#else
void* g_shim_library = nullptr;  // mode explicit: the shim's handle

// The driver's functions: from `first` if it defines them (the shim may), else from the stub.
void load_driver_api(void* first) {
  void* cuda = must_dlopen(STUB_CUDA_PATH, RTLD_NOW | RTLD_GLOBAL);
  const auto take = [&](auto& out, const char* name) {
    void* symbol = first == nullptr ? nullptr : dlsym(first, name);
    if (symbol != nullptr) out = reinterpret_cast<std::remove_reference_t<decltype(out)>>(symbol);
    else must_dlsym(out, RTLD_DEFAULT, name);
  };
  take(g_api.cu_stream_create, "cuStreamCreate");
  take(g_api.cu_stream_destroy_v2, "cuStreamDestroy_v2");
  take(g_api.cu_stream_destroy_legacy, "cuStreamDestroy");
  must_dlsym(g_api.cuda_counters, cuda, "stubcuda_counters");
}

void load_api(const char* mode) {
  if (std::strcmp(mode, "global") == 0) {
    void* cudnn = must_dlopen(STUB_CUDNN_PATH, RTLD_NOW | RTLD_GLOBAL);
    void* cudart = must_dlopen(STUB_CUDART_PATH, RTLD_NOW | RTLD_GLOBAL);
    must_dlsym(g_api.create, RTLD_DEFAULT, "cudnnCreate");
    must_dlsym(g_api.destroy, RTLD_DEFAULT, "cudnnDestroy");
    must_dlsym(g_api.set_stream, RTLD_DEFAULT, "cudnnSetStream");
    must_dlsym(g_api.get_stream, RTLD_DEFAULT, "cudnnGetStream");
    must_dlsym(g_api.stream_create, RTLD_DEFAULT, "cudaStreamCreate");
    must_dlsym(g_api.stream_destroy, RTLD_DEFAULT, "cudaStreamDestroy");
    must_dlsym(g_api.counters, cudnn, "stubcudnn_counters");
    must_dlsym(g_api.cudart_counters, cudart, "stubcudart_counters");
    load_driver_api(nullptr);
  } else if (std::strcmp(mode, "local") == 0 || std::strcmp(mode, "deepbind") == 0) {
    int flags = RTLD_NOW | RTLD_LOCAL;
    if (std::strcmp(mode, "deepbind") == 0) flags |= RTLD_DEEPBIND;
    void* framework = must_dlopen(FRAMEWORK_PATH, flags);
    const ScenarioApi* (*api)() = nullptr;
    must_dlsym(api, framework, "scenario_framework_api");
    g_api = *api();
  } else if (std::strcmp(mode, "explicit") == 0) {
    // The shim opened by the program itself, as a secure-execution process must (the loader
    // ignores LD_PRELOAD paths there): its functions are reached through its own handle.
    void* cudnn = must_dlopen(STUB_CUDNN_PATH, RTLD_NOW | RTLD_GLOBAL);
    void* cudart = must_dlopen(STUB_CUDART_PATH, RTLD_NOW | RTLD_GLOBAL);
    void* shim = must_dlopen(SHIM_PATH, RTLD_NOW | RTLD_LOCAL);
    g_shim_library = shim;
    must_dlsym(g_api.create, shim, "cudnnCreate");
    must_dlsym(g_api.destroy, shim, "cudnnDestroy");
    must_dlsym(g_api.set_stream, shim, "cudnnSetStream");
    must_dlsym(g_api.get_stream, cudnn, "cudnnGetStream");
    must_dlsym(g_api.stream_create, cudnn == nullptr ? nullptr : RTLD_DEFAULT, "cudaStreamCreate");
    must_dlsym(g_api.stream_destroy, shim, "cudaStreamDestroy");
    must_dlsym(g_api.counters, cudnn, "stubcudnn_counters");
    must_dlsym(g_api.cudart_counters, cudart, "stubcudart_counters");
    load_driver_api(shim);
  } else if (std::strcmp(mode, "self") == 0) {
    // The case loads what it needs.
  } else {
    die("unknown mode");
  }
}
#endif

cudnnHandle_t must_create() {
  cudnnHandle_t h = nullptr;
  if (g_api.create(&h) != CUDNN_STATUS_SUCCESS) die("cudnnCreate failed");
  return h;
}

cudaStream_t must_create_stream() {
  cudaStream_t s = nullptr;
  if (g_api.stream_create(&s) != cudaSuccess) die("cudaStreamCreate failed");
  return s;
}

cudnnStatus_t set(cudnnHandle_t h, cudaStream_t s) {
  ++g_calls;
  return g_api.set_stream(h, s);
}

bool holds(cudnnHandle_t h, cudaStream_t s) {
  cudaStream_t held = nullptr;
  return g_api.get_stream(h, &held) == CUDNN_STATUS_SUCCESS && held == s;
}

std::uint64_t real_sets() { return g_api.counters().set_stream; }

void print(const char* key, unsigned long long value) { std::printf("%s=%llu\n", key, value); }

void report(std::uint64_t real_before) {
  print("set_stream_calls", g_calls);
  print("real_set_stream", real_sets() - real_before);
}

cudaStream_t fake_stream(std::uintptr_t n) { return reinterpret_cast<cudaStream_t>(0x10000 * n); }

// ---- the cases --------------------------------------------------------------------------------

int same_stream() {
  const std::uint64_t before = real_sets();
  cudnnHandle_t h = must_create();
  cudaStream_t s = must_create_stream();
  int failures = 0;
  for (int i = 0; i < 1000; ++i) failures += set(h, s) != CUDNN_STATUS_SUCCESS;
  print("failures", failures);
  print("get_agrees", holds(h, s));
  report(before);
  return 0;
}

int alternate() {
  const std::uint64_t before = real_sets();
  cudnnHandle_t h = must_create();
  cudaStream_t s[2] = {must_create_stream(), must_create_stream()};
  int disagreements = 0;
  for (int i = 0; i < 1000; ++i) {
    set(h, s[i % 2]);
    disagreements += !holds(h, s[i % 2]);
  }
  print("disagreements", disagreements);
  report(before);
  return 0;
}

int null_after_stream() {
  const std::uint64_t before = real_sets();
  cudnnHandle_t h = must_create();
  cudaStream_t s = must_create_stream();
  set(h, s);
  set(h, s);
  set(h, nullptr);
  print("null_agrees", holds(h, nullptr));
  set(h, nullptr);
  set(h, s);
  print("get_agrees", holds(h, s));
  report(before);  // expected with the shim: 3 (s, NULL, s)
  return 0;
}

int recreate() {
  const std::uint64_t before = real_sets();
  cudaStream_t s = must_create_stream();
  cudnnHandle_t first = must_create();
  set(first, s);
  set(first, s);
  g_api.destroy(first);
  cudnnHandle_t second = must_create();
  print("same_address", first == second);
  set(second, s);
  set(second, s);
  print("get_agrees", holds(second, s));
  report(before);  // expected with the shim: 2 (one per handle)
  return 0;
}

// As recreate, but one of the two calls goes around the shim, so that the other one alone must
// void the slot: "destroy" sees the destroy only, "create" the create only.
int recreate_half_seen(bool shim_sees_destroy) {
  const std::uint64_t before = real_sets();
  cudaStream_t s = must_create_stream();
  cudnnHandle_t first = must_create();
  set(first, s);
  if (shim_sees_destroy) g_api.destroy(first);
  else around_shim<decltype(&cudnnDestroy)>("cudnnDestroy")(first);
  cudnnHandle_t second = nullptr;
  if (shim_sees_destroy) around_shim<decltype(&cudnnCreate)>("cudnnCreate")(&second);
  else g_api.create(&second);
  print("same_address", first == second);
  set(second, s);
  report(before);  // expected with the shim: 2
  return 0;
}
int recreate_shim_sees_destroy() { return recreate_half_seen(true); }
int recreate_shim_sees_create() { return recreate_half_seen(false); }

int failed_set() {
  const std::uint64_t before = real_sets();
  cudnnHandle_t h = must_create();
  int rejected = 0;
  rejected += set(h, STUBCUDNN_REJECTED_STREAM) == CUDNN_STATUS_BAD_PARAM;
  rejected += set(h, STUBCUDNN_REJECTED_STREAM) == CUDNN_STATUS_BAD_PARAM;
  print("rejected", rejected);
  report(before);  // expected with the shim: 2 (a failure is never cached)
  return 0;
}

// Random sets over three handles and four streams (the null one included), each checked against
// cudnnGetStream; "expected_real" is what an exact cache forwards: first set on a handle, and
// every change.
int get_agrees() {
  const std::uint64_t before = real_sets();
  cudnnHandle_t h[3] = {must_create(), must_create(), must_create()};
  cudaStream_t s[4] = {nullptr, must_create_stream(), must_create_stream(), must_create_stream()};
  cudaStream_t last[3] = {};
  bool known[3] = {};
  std::uint64_t expected = 0, disagreements = 0, state = 12345;
  for (int i = 0; i < 3000; ++i) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    const int hi = static_cast<int>((state >> 33) % 3);
    // Mostly the same stream again, as frameworks do; sometimes another.
    const int si = ((state >> 40) % 8 == 0) ? static_cast<int>((state >> 20) % 4) : -1;
    cudaStream_t stream = si < 0 ? (known[hi] ? last[hi] : s[1]) : s[si];
    if (!known[hi] || last[hi] != stream) ++expected;
    known[hi] = true;
    last[hi] = stream;
    set(h[hi], stream);
    disagreements += !holds(h[hi], stream);
  }
  print("disagreements", disagreements);
  print("expected_real", expected);
  report(before);
  return 0;
}

int stream_reuse() {
  const std::uint64_t before = real_sets();
  cudnnHandle_t h = must_create();
  cudaStream_t first = must_create_stream();
  set(h, first);
  set(h, first);
  g_api.stream_destroy(first);
  cudaStream_t second = must_create_stream();
  print("same_address", first == second);
  set(h, second);
  report(before);  // expected with the shim: 2 (the new stream must reach cuDNN)
  return 0;
}

int verify() {
  const std::uint64_t before = real_sets();
  cudnnHandle_t h = must_create();
  cudaStream_t a = must_create_stream(), b = must_create_stream();
  set(h, a);
  set_stream_around_shim(h, b);
  set(h, a);  // the table says a; cuDNN holds b
  print("get_agrees", holds(h, a));
  report(before);
  return 0;
}

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
#ifdef SCENARIO_LINKED
  execl(g_self, g_self, "same_stream", static_cast<char*>(nullptr));
#else
  execl(g_self, g_self, g_mode, "same_stream", static_cast<char*>(nullptr));
#endif
  die("exec failed");
}

// Threads on their own handles, each setting its own stream again and again.
int threads() {
  const std::uint64_t before = real_sets();
  constexpr int kThreads = 8, kSets = 10000;
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
  constexpr int kThreads = 4, kRounds = 150, kSetsPerRound = 200;
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
  constexpr int kHandles = 70000;
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
  constexpr int kThreads = 4, kRounds = 2000;
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

#ifndef SCENARIO_LINKED
// Nothing loaded: whoever defines cudnnSetStream globally (the shim, if preloaded) gets the call.
int no_cudnn() {
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

struct Case {
  const char* name;
  int (*run)();
};

const Case kCases[] = {
    {"same_stream", same_stream}, {"alternate", alternate},       {"null_after_stream", null_after_stream},
    {"recreate", recreate},       {"failed_set", failed_set},
    {"recreate_shim_sees_destroy", recreate_shim_sees_destroy},
    {"recreate_shim_sees_create", recreate_shim_sees_create},     {"get_agrees", get_agrees},
    {"stream_reuse", stream_reuse}, {"verify", verify},           {"fork", fork_child},
    {"exec", exec_child},         {"threads", threads},           {"race", race},
    {"table_full", table_full},   {"churn", churn},               {"live_4097", live_4097},
    {"churn_race", churn_race},
    {"concurrent_first_calls", concurrent_first_calls},
    {"thread_exit_counts", thread_exit_counts},
    {"fork_report", fork_report},
    {"fork_report_child_calls", fork_report_child_calls},
    {"driver_stream_reuse", driver_stream_reuse},
    {"driver_stream_reuse_legacy", driver_stream_reuse_legacy},
    {"per_thread_stream", per_thread_stream},
#ifndef SCENARIO_LINKED
    {"loader_lock", loader_lock},
    {"dlclose_shim", dlclose_shim},
    {"two_cudnns", two_cudnns},
    {"cudnn_replaced", cudnn_replaced},
    {"two_shims", two_shims},
    {"bound_then_closed", bound_then_closed},
#endif
#if defined(FRAMEWORK8_PATH)
    {"versioned_scopes", versioned_scopes},
#endif
};

}  // namespace

int main(int argc, char** argv) {
  g_self = argv[0];
#ifdef SCENARIO_LINKED
  if (argc != 2) die("usage: scenario_linked CASE");
  const char* name = argv[1];
#else
  if (argc != 3) die("usage: scenario_dlopen MODE CASE");
  g_mode = argv[1];
  const char* name = argv[2];
  if (std::strcmp(g_mode, "none") == 0) return std::strcmp(name, "no_cudnn") == 0 ? no_cudnn() : 3;
#endif
  load_api(g_mode);
  for (const Case& c : kCases)
    if (std::strcmp(c.name, name) == 0) return c.run();
  die("unknown case");
}
