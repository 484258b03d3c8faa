// A variant-pack scenario program: builds a matmul execution plan on the stub libcudnn with raw
// backend calls, then makes variant packs the way PyTorch does for each op (create, set
// UNIQUE_IDS, set DATA_POINTERS, set WORKSPACE, finalize, execute, destroy) and prints what
// happened as key=value lines, for packs_test.cpp to judge. It runs with or without the shim.
//
//   pack_scenario_linked  CASE        the program links libcudnn (the stub) directly
//   pack_scenario_dlopen  MODE CASE   libcudnn is reached after a dlopen; MODE is one of
//       global    dlopen(libcudnn, RTLD_GLOBAL), calls through the global scope
//       local     dlopen(framework, RTLD_LOCAL), the framework links libcudnn (PyTorch's case)
//       local_lazy  the same with RTLD_LAZY instead of RTLD_NOW
//       deepbind  dlopen(framework, RTLD_LOCAL | RTLD_DEEPBIND): the framework binds to its own
//                 libcudnn first, so the shim never sees its calls
//
// Common keys: "real_packs" is how many variant packs the stub created during the case's loop,
// "failures" how many calls that should have succeeded did not. Keys "status.CASE.NN_STEP" are
// the statuses of individual calls, which the tests compare between runs with and without the
// shim. The cases live in pack_scenario_*.cpp, one file per topic; this file loads cuDNN, builds
// the plan and names the cases (main: tests/support/scenario_main.cpp).
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "tests/support/must_load.h"
#include "tests/packs/pack_scenario.h"

namespace pack_scenario {

PackApi g_api;
cudnnHandle_t g_handle = nullptr;
MatmulPlan g_matmul;

}  // namespace pack_scenario

namespace {

using namespace pack_scenario;

#ifdef PACK_SCENARIO_LINKED
const char* const kFixedMode = "linked";
void load_api(const char*) { g_api = linked_pack_api(); }
#else
const char* const kFixedMode = nullptr;  // the first argument
void load_api(const char* mode) {
  if (std::strcmp(mode, "global") == 0) {
    void* cudnn = must_dlopen(STUB_CUDNN_PATH, RTLD_NOW | RTLD_GLOBAL);
    const char* missing = nullptr;
    if (!pack_api_from(g_api, [](void* where, const char* name) { return dlsym(where, name); }, RTLD_DEFAULT, cudnn,
                       missing))
      die(missing);
  } else if (std::strcmp(mode, "local") == 0 || std::strcmp(mode, "local_lazy") == 0 ||
             std::strcmp(mode, "deepbind") == 0) {
    // local_lazy: calls bound at their first call, as without RTLD_NOW (shim_opened_later).
    int flags = (std::strcmp(mode, "local_lazy") == 0 ? RTLD_LAZY : RTLD_NOW) | RTLD_LOCAL;
    if (std::strcmp(mode, "deepbind") == 0) flags |= RTLD_DEEPBIND;
    g_api = framework_api<PackApi>(FRAMEWORK_PATH, "pack_framework_api", flags);
  } else {
    die("unknown mode");
  }
}
#endif

// The handle and the plan every case runs.
void set_up() {
  // Engine 0 (the plan's) needs a workspace, so that every execute checks the pack's.
  g_api.set_engine_workspace(0, 1 << 20);
  if (g_api.create_handle(&g_handle) != 0) die("cudnnCreate failed");
  const cudnnStatus_t built = g_matmul.build(g_api, g_handle, kUids);
  if (built != CUDNN_STATUS_SUCCESS) {
    char what[64];
    std::snprintf(what, sizeof what, "the plan failed to build: status %d", static_cast<int>(built));
    die(what);
  }
}

const scenario_main::Case kCases[] = {
    {"steady", steady},
    {"pointer_change", pointer_change},
    {"arrays_copied", arrays_copied},
    {"two_plans", two_plans},
    {"tensor_limit", tensor_limit},
    {"calls_reaching_cudnn", calls_reaching_cudnn},
    {"errors", errors},
    {"intermediates", intermediates},
    {"get_attribute", get_attribute},
    {"cuda_graph", cuda_graph},
    {"other_types", other_types},
    {"internal", internal},
    {"eviction", eviction},
    {"many_live", many_live},
    {"fork", fork_child},
    {"threads", threads},
    {"short_threads", short_threads},
    {"threads_in_turn", threads_in_turn},
    {"deferred", deferred},
    {"runtime_switch", runtime_switch},
    {"switch_every", switch_every},
    {"stats_api", stats_api},
    {"traced", traced},
#ifndef PACK_SCENARIO_LINKED
    {"two_shims", two_shims},
    {"shim_opened_later", shim_opened_later},
#endif
};

}  // namespace

const scenario_main::Program kScenarioProgram{
    .name = "pack scenario", .fixed_mode = kFixedMode, .load_api = load_api, .set_up = set_up, .cases = kCases};
