// A scenario program: makes one sequence of cuDNN calls and prints what happened as key=value
// lines, for interpose_test.cpp (and stress_test.cpp, hostile_test.cpp) to judge. It runs with or
// without the shim preloaded.
//
//   scenario_linked  CASE             the program links libcudnn (the stub) directly
//   scenario_dlopen  MODE CASE        libcudnn is reached after a dlopen; MODE is one of
//       global    dlopen(libcudnn, RTLD_GLOBAL), calls through the global scope
//       local     dlopen(framework, RTLD_LOCAL), the framework links libcudnn (PyTorch's case)
//       deepbind  dlopen(framework, RTLD_LOCAL | RTLD_DEEPBIND): the framework binds to its own
//                 libcudnn first, so the shim never sees its calls
//       none      nothing loaded: the calls go wherever dlsym(RTLD_DEFAULT) leads (no_cudnn)
//       explicit  the program dlopens the shim itself and calls it through its handle
//       self      nothing is loaded before the case runs: the case loads what it needs itself
//
// The cases live in scenario_*.cpp, one file per topic (scenario.h); this file loads cuDNN and
// names the cases (main: tests/support/scenario_main.cpp).
#include <dlfcn.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <type_traits>

#include "tests/support/must_load.h"
#include "tests/interpose/scenario.h"

#ifndef SCENARIO_LINKED
LoaderLockFlags scenario_loader_lock_flags;
#endif

namespace scenario {

ScenarioApi g_api;
std::uint64_t g_calls = 0;
const char* g_mode = "linked";
#ifndef SCENARIO_LINKED
void* g_shim_library = nullptr;
#endif

}  // namespace scenario

namespace {

using namespace scenario;

#ifdef SCENARIO_LINKED
const char* const kFixedMode = "linked";
void load_api(const char*) {
  g_api = {cudnnCreate,        cudnnDestroy,        cudnnSetStream,     cudnnGetStream,
           cudaStreamCreate,   cudaStreamDestroy,   stubcudnn_counters, stubcudart_counters,
           cuStreamCreate,     cuStreamDestroy_v2,  cuStreamDestroy,    stubcuda_counters};
}
#else
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

const char* const kFixedMode = nullptr;  // the first argument

void load_api(const char* mode) {
  g_mode = mode;
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
    g_api = framework_api<ScenarioApi>(FRAMEWORK_PATH, "scenario_framework_api", flags);
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
  } else if (std::strcmp(mode, "self") == 0 || std::strcmp(mode, "none") == 0) {
    // The case loads what it needs, or nothing at all.
  } else {
    die("unknown mode");
  }
}
#endif

const scenario_main::Case kCases[] = {
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
    {"static_runtime_stream_reuse", static_runtime_stream_reuse},
    {"verify_during_capture", verify_during_capture},
    {"per_thread_stream", per_thread_stream},
#ifndef SCENARIO_LINKED
    {"no_cudnn", no_cudnn},
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

const scenario_main::Program kScenarioProgram{
    .name = "scenario", .fixed_mode = kFixedMode, .load_api = load_api, .cases = kCases};
