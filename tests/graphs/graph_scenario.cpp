// The graph-replay scenario program (graph_scenario.h): how each load mode takes the API, what
// every case shares, the cases by name (main: tests/support/scenario_main.cpp).
#include "tests/graphs/graph_scenario.h"

namespace graph_scenario {

PackApi g_api;
StubBackendExecution (*g_thread_last)() = nullptr;
int (*g_is_live)(cudnnBackendDescriptor_t) = nullptr;
cudnnStatus_t (*g_get_stream)(cudnnHandle_t, cudaStream_t*) = nullptr;
unsigned (*g_set_features)(unsigned) = nullptr;
Handle g_main;
MatmulPlan g_matmul;

void* stub_library() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(g_api.counters), &info) == 0) die("dladdr");
  return must_dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD);
}

namespace {

#ifdef GRAPH_SCENARIO_LINKED
const char* const kFixedMode = "linked";
void load_api(const char*) { g_api = linked_pack_api(); }
#else
const char* const kFixedMode = nullptr;  // the first argument

// The calls from `functions` (RTLD_DEFAULT, or a handle of libcudnn), the stub's controls from
// `controls`; the one named `around` (if any) with glibc's own dlsym, a lookup no interposer of
// dlsym sees.
void take_api(void* functions, void* controls, const char* around = "") {
  const auto look_up = [around](void* where, const char* name) {
    return std::strcmp(name, around) == 0 ? glibc_dlsym(where, name) : dlsym(where, name);
  };
  const char* missing = nullptr;
  if (!pack_api_from(g_api, look_up, functions, controls, missing)) die(missing);
}

void load_api(const char* mode) {
  if (std::strcmp(mode, "global") == 0) {
    void* cudnn = must_dlopen(STUB_CUDNN_PATH, RTLD_NOW | RTLD_GLOBAL);
    take_api(RTLD_DEFAULT, cudnn);
  } else if (std::strcmp(mode, "dlsym") == 0 || std::strcmp(mode, "dlsym_around") == 0) {
    void* cudnn = must_dlopen(STUB_CUDNN_PATH, RTLD_NOW | RTLD_LOCAL);
    const char* around = std::getenv("GRAPH_SCENARIO_AROUND");
    take_api(cudnn, cudnn, std::strcmp(mode, "dlsym") == 0 ? "" : around ? around : "cudnnBackendExecute");
  } else if (std::strcmp(mode, "dlsym_library") == 0) {
    g_api = framework_api<PackApi>(DLSYM_FRAMEWORK_PATH, "pack_framework_api");
  } else if (std::strcmp(mode, "local") == 0) {
    g_api = framework_api<PackApi>(FRAMEWORK_PATH, "pack_framework_api");
  } else {
    die("unknown mode");
  }
}
#endif

// GRAPH_SCENARIO_DLSYM_STREAM_DESTROY=1: the driver's cuStreamDestroy_v2 taken with dlsym on
// libcuda's handle, as cuBLAS does, before the API is loaded.
void load_api_after_stream_destroy(const char* mode) {
  if (const char* take = std::getenv("GRAPH_SCENARIO_DLSYM_STREAM_DESTROY"); take && std::strcmp(take, "1") == 0) {
    void* driver = must_dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    CUresult (*destroy)(CUstream) = nullptr;
    must_dlsym(destroy, driver, "cuStreamDestroy_v2");
  }
  load_api(mode);
}

// The stub's own functions, from whichever libcudnn the api reaches; the shim's switch; the main
// handle and the plan every case runs.
void set_up() {
  void* cudnn = stub_library();
  must_dlsym(g_thread_last, cudnn, "stubbackend_thread_last_execution");
  must_dlsym(g_is_live, cudnn, "stubbackend_is_live");
  must_dlsym(g_get_stream, cudnn, "cudnnGetStream");
  g_set_features = reinterpret_cast<unsigned (*)(unsigned)>(dlsym(RTLD_DEFAULT, "cudnn_fastpath_set_features"));
  stubcuda_add_device_memory(kDevice, kDeviceBytes);
  stubcuda_add_device_memory(kWorkspaces, kDeviceBytes);
  g_main.open();
  if (g_matmul.build(g_api, g_main.handle, kUids) != 0) die("cannot build the plan");
}

const scenario_main::Case kCases[] = {
    {"steady", steady},         {"program_capture", program_capture}, {"by_value", by_value},
    {"host_pointer", host_pointer}, {"forget", forget},               {"fork", fork_child},
    {"other_context", other_context}, {"failures", failures},         {"threads", threads},
    {"ab_blocks", ab_blocks}, {"miss_heavy_fresh", miss_heavy_fresh}, {"miss_heavy_cycling", miss_heavy_cycling},
    {"relocation", relocation}, {"fresh_packs", fresh_packs},
    {"relocation_by_value", relocation_by_value},
};

}  // namespace
}  // namespace graph_scenario

const scenario_main::Program kScenarioProgram{.name = "graph scenario",
                                              .fixed_mode = graph_scenario::kFixedMode,
                                              .load_api = graph_scenario::load_api_after_stream_destroy,
                                              .set_up = graph_scenario::set_up,
                                              .cases = graph_scenario::kCases};
