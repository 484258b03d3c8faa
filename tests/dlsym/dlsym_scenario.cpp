// A dlsym scenario program: lookups the shim's exported dlsym must answer exactly as glibc does,
// checked against glibc's own dlsym (taken with dlvsym, which the shim does not export). It prints
// key=value lines for dlsym_test.cpp to judge, and runs with or without the shim.
//
//   dlsym_scenario next     RTLD_NEXT and RTLD_DEFAULT lookups from a library, three names
//   dlsym_scenario dlerror  dlerror() after a failed lookup, and after a handed-out one
//   dlsym_scenario self     libcudnn looking up its own functions
//   dlsym_scenario skip     1000 cudnnSetStream calls of one stream, through dlsym pointers
//   dlsym_scenario two      two cuDNNs loaded RTLD_LOCAL (9 and 8), cudnnSetStream from each
//   dlsym_scenario threads  8 threads at once take every name with dlsym and set streams, while
//                           the main thread opens a library whose constructor does the same
#include <cudnn.h>
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "tests/stub/stub_control.h"
#include "tests/support/must_load.h"
#include "tests/support/scenario_main.h"

extern "C" int dlsym_probe_agrees(void* where, const char* name, void** found);
extern "C" int dlsym_probe_symbol();
extern "C" int dlsym_probe_clean_lookup(void* handle, const char* name);

namespace {

using Dlsym = void* (*)(void*, const char*);

Dlsym glibc_dlsym() {
  auto found = reinterpret_cast<Dlsym>(dlvsym(RTLD_DEFAULT, "dlsym", "GLIBC_2.2.5"));
  if (found == nullptr) die("dlvsym(dlsym)");
  return found;
}

using scenario_main::print;

// The library a pointer lies in, by file name.
bool lies_in(void* pointer, const char* file_part) {
  Dl_info info{};
  return pointer != nullptr && dladdr(pointer, &info) != 0 && info.dli_fname != nullptr &&
         std::strstr(info.dli_fname, file_part) != nullptr;
}

int next() {
  // dlsym_probe_symbol: the next one after libdlsym_probe.so is libdlsym_probe_after.so's;
  // cudnnSetStream: an interposed name (the shim's own definition is in the global scope);
  // puts: neither.
  for (const char* name : {"dlsym_probe_symbol", "cudnnSetStream", "puts"}) {
    void* found = nullptr;
    const std::string n = name;
    print(("next_agrees." + n).c_str(), dlsym_probe_agrees(RTLD_NEXT, name, &found));
    if (n == "dlsym_probe_symbol") print("next_is_after", lies_in(found, "dlsym_probe_after"));
    print(("default_agrees." + n).c_str(), dlsym_probe_agrees(RTLD_DEFAULT, name, &found));
  }
  return 0;
}

int dlerror_case() {
  void* cudnn = must_dlopen(STUB_CUDNN_PATH, RTLD_NOW | RTLD_LOCAL);
  const Dlsym glibc = glibc_dlsym();
  dlerror();
  void* missing = dlsym(cudnn, "cudnnNoSuchFunction");
  const char* error = dlerror();
  const std::string through = error ? error : "";
  glibc(cudnn, "cudnnNoSuchFunction");
  error = dlerror();
  const std::string direct = error ? error : "";
  print("missing_is_null", missing == nullptr);
  print("message_same", !through.empty() && through == direct);
  print("second_read_null", dlerror() == nullptr);
  // An error pending, then a lookup the shim answers with its own function: glibc clears the
  // pending error at every call; the shim's answer must leave no error of its own either.
  dlsym(cudnn, "cudnnNoSuchFunction");
  void* execute = dlsym(cudnn, "cudnnBackendExecute");
  print("cleared_after_interposed", dlerror() == nullptr);
  glibc(cudnn, "cudnnNoSuchFunction");
  glibc(cudnn, "cudnnBackendExecute");
  print("cleared_by_glibc", dlerror() == nullptr);
  print("execute_handed_out", execute != nullptr && execute != glibc(cudnn, "cudnnBackendExecute"));
  print("execute_in_shim", lies_in(execute, "cudnn_fastpath"));
  // From a library: the shim's own checks then make a lookup that fails (whether the library
  // defines the name itself), which must leave no trace in dlerror().
  print("clean_from_library", dlsym_probe_clean_lookup(cudnn, "cudnnBackendFinalize"));
  // A name the shim does not interpose is glibc's answer.
  print("get_version_same", dlsym(cudnn, "cudnnGetVersion") == glibc(cudnn, "cudnnGetVersion"));
  return 0;
}

int self() {
  void* cudnn = must_dlopen(STUB_CUDNN_PATH, RTLD_NOW | RTLD_LOCAL);
  const Dlsym glibc = glibc_dlsym();
  void* (*lookup_own)(const char*) = nullptr;
  must_dlsym(lookup_own, cudnn, "stubcudnn_lookup_own");
  for (const char* name : {"cudnnBackendExecute", "cudnnSetStream"}) {
    const std::string key = std::string("own_lookup_real.") + name;
    print(key.c_str(), lookup_own(name) == glibc(cudnn, name) && lies_in(lookup_own(name), "libcudnn"));
  }
  return 0;
}

// XLA's way: every function from the handle; the stub counts what reached it.
int skip() {
  void* cudnn = must_dlopen(STUB_CUDNN_PATH, RTLD_NOW | RTLD_LOCAL);
  decltype(&cudnnCreate) create = nullptr;
  decltype(&cudnnSetStream) set_stream = nullptr;
  decltype(&stubcudnn_counters) counters = nullptr;
  must_dlsym(create, cudnn, "cudnnCreate");
  must_dlsym(set_stream, cudnn, "cudnnSetStream");
  must_dlsym(counters, cudnn, "stubcudnn_counters");
  cudnnHandle_t handle = nullptr;
  if (create(&handle) != CUDNN_STATUS_SUCCESS) die("cudnnCreate");
  static char stream_storage;
  const auto stream = reinterpret_cast<cudaStream_t>(&stream_storage);
  int failures = 0;
  for (int i = 0; i < 1000; ++i) failures += set_stream(handle, stream) != CUDNN_STATUS_SUCCESS;
  print("failures", failures);
  print("real_set_stream", static_cast<long long>(counters().set_stream));
  return 0;
}

// Two cuDNNs, each opened RTLD_LOCAL: only the one any other object would reach (the first under
// its usual name, libcudnn.so.9) is handed out; the other's lookup is glibc's answer.
int two() {
  void* nine = must_dlopen(STUB_CUDNN_PATH, RTLD_NOW | RTLD_LOCAL);
  void* eight = must_dlopen(STUB_CUDNN8_PATH, RTLD_NOW | RTLD_LOCAL);
  const Dlsym glibc = glibc_dlsym();
  void* from_nine = dlsym(nine, "cudnnSetStream");
  void* from_eight = dlsym(eight, "cudnnSetStream");
  print("nine_handed_out", from_nine != glibc(nine, "cudnnSetStream"));
  print("eight_handed_out", from_eight != glibc(eight, "cudnnSetStream"));
  print("eight_is_glibcs", from_eight == glibc(eight, "cudnnSetStream"));
  return 0;
}

// First lookups from several threads at once, and from a constructor under the loader lock.
int threads() {
  void* cudnn = must_dlopen(STUB_CUDNN_PATH, RTLD_NOW | RTLD_LOCAL);
  const Dlsym glibc = glibc_dlsym();
  constexpr int kThreads = 8;
  std::vector<void*> set_streams(kThreads), executes(kThreads);
  std::vector<int> failures(kThreads, 0);
  std::vector<std::thread> workers;
  for (int t = 0; t < kThreads; ++t)
    workers.emplace_back([&, t] {
      for (const char* name : {"cudnnCreate", "cudnnBackendCreateDescriptor", "cudnnBackendSetAttribute",
                               "cudnnBackendGetAttribute", "cudnnBackendFinalize", "cudnnBackendDestroyDescriptor"})
        failures[t] += dlsym(cudnn, name) == nullptr;
      set_streams[t] = dlsym(cudnn, "cudnnSetStream");
      executes[t] = dlsym(cudnn, "cudnnBackendExecute");
      auto create = reinterpret_cast<decltype(&cudnnCreate)>(dlsym(cudnn, "cudnnCreate"));
      auto set_stream = reinterpret_cast<decltype(&cudnnSetStream)>(set_streams[t]);
      cudnnHandle_t handle = nullptr;
      static char streams[kThreads];
      if (create == nullptr || set_stream == nullptr || create(&handle) != CUDNN_STATUS_SUCCESS) return void(++failures[t]);
      for (int i = 0; i < 100; ++i)
        failures[t] += set_stream(handle, reinterpret_cast<cudaStream_t>(&streams[t])) != CUDNN_STATUS_SUCCESS;
    });
  void* library = must_dlopen(DLSYM_CONSTRUCTOR_PATH, RTLD_NOW | RTLD_LOCAL);
  for (std::thread& w : workers) w.join();
  int (*constructor_result)() = nullptr;
  must_dlsym(constructor_result, library, "dlsym_constructor_result");
  decltype(&stubcudnn_counters) counters = nullptr;
  must_dlsym(counters, cudnn, "stubcudnn_counters");
  long long failed = 0, same = 1;
  for (int t = 0; t < kThreads; ++t) {
    failed += failures[t];
    same &= set_streams[t] == set_streams[0] && executes[t] == executes[0];
  }
  print("failures", failed);
  print("same_answers", same);
  print("handed_out", set_streams[0] != glibc(cudnn, "cudnnSetStream") && lies_in(set_streams[0], "cudnn_fastpath"));
  print("constructor_result", constructor_result());
  print("real_set_stream", static_cast<long long>(counters().set_stream));
  return 0;
}

// After every case: the program's own call of dlsym_probe_symbol, bound to the first library's.
void print_probe() { print("probe", dlsym_probe_symbol()); }

const scenario_main::Case kCases[] = {{"next", next}, {"dlerror", dlerror_case}, {"self", self},
                                      {"skip", skip}, {"two", two},             {"threads", threads}};

}  // namespace

const scenario_main::Program kScenarioProgram{
    .name = "dlsym scenario", .fixed_mode = "linked", .finish = print_probe, .cases = kCases};
