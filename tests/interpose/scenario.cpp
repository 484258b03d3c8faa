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

#include "tests/interpose/scenario_api.h"

namespace {

ScenarioApi g_api;
std::uint64_t g_calls = 0;  // set_stream calls made by the main thread
const char* g_self = nullptr;
const char* g_mode = "linked";

[[noreturn]] void die(const char* what) {
  std::fprintf(stderr, "scenario: %s\n", what);
  std::exit(3);
}

void* must_dlopen(const char* path, int flags) {
  void* handle = dlopen(path, flags);
  if (handle == nullptr) die(dlerror());
  return handle;
}

template <typename T>
void must_dlsym(T& out, void* where, const char* name) {
  void* symbol = dlsym(where, name);
  if (symbol == nullptr) die(name);
  out = reinterpret_cast<T>(symbol);
}

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
    {"table_full", table_full},
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
