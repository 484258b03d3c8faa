// The blas scenario program (blas_scenario.h): how each load mode takes the API, what the cases
// share, the cases by name (main: tests/support/scenario_main.cpp).
#include "tests/blas/blas_scenario.h"

#include <cstdlib>

namespace blas_scenario {

BlasApi g_api;
BlasApi g_real;
StubControls g_stub;
const char* g_mode = "";
void* g_lt_library = nullptr;
void* g_blas_library = nullptr;
int (*g_shim_stats)(cudnn_fastpath_stats_t*, std::size_t) = nullptr;
unsigned (*g_set_features)(unsigned) = nullptr;
unsigned (*g_features)() = nullptr;
bool g_check_launch_streams = true;

namespace {

#ifdef BLAS_SCENARIO_LINKED
const char* const kFixedMode = "linked";
void load_api(const char* mode) {
  g_mode = mode;
#define BLAS_SCENARIO_LINKED_MEMBER(name) g_api.name = &::name;  // the member's type picks an overload
  BLAS_API_FUNCTIONS(BLAS_SCENARIO_LINKED_MEMBER)
#undef BLAS_SCENARIO_LINKED_MEMBER
  g_lt_library = must_dlopen("libcublasLt.so.13", RTLD_NOW | RTLD_NOLOAD);
  g_blas_library = must_dlopen("libcublas.so.13", RTLD_NOW | RTLD_NOLOAD);
}
#else
const char* const kFixedMode = nullptr;  // the first argument
void load_api(const char* mode) {
  g_mode = mode;
  if (std::strcmp(mode, "local") == 0) {
    g_api = framework_api<BlasApi>(BLAS_FRAMEWORK_PATH, "blas_framework_api");
    // The framework's dependencies, by the names its DT_NEEDED entries gave them.
    g_lt_library = must_dlopen("libcublasLt.so.13", RTLD_NOW | RTLD_NOLOAD);
    g_blas_library = must_dlopen("libcublas.so.13", RTLD_NOW | RTLD_NOLOAD);
  } else if (std::strcmp(mode, "dlsym") == 0) {
    g_blas_library = must_dlopen(STUB_CUBLAS_PATH, RTLD_NOW | RTLD_LOCAL);
    g_lt_library = must_dlopen(STUB_CUBLASLT_PATH, RTLD_NOW | RTLD_LOCAL);
    // The program's own lookups (inline here): the shim's dlsym sees the program as their caller.
#define BLAS_SCENARIO_DLSYM_LT(name) must_dlsym(g_api.name, g_lt_library, #name);
#define BLAS_SCENARIO_DLSYM_CUBLAS(name) must_dlsym(g_api.name, g_blas_library, #name);
    BLAS_API_LT_FUNCTIONS(BLAS_SCENARIO_DLSYM_LT)
    BLAS_API_CUBLAS_FUNCTIONS(BLAS_SCENARIO_DLSYM_CUBLAS)
#undef BLAS_SCENARIO_DLSYM_LT
#undef BLAS_SCENARIO_DLSYM_CUBLAS
  } else {
    die("unknown mode");
  }
}
#endif

// `name` from `library` with glibc's own dlsym: the stub's definition, whatever interposes it.
template <typename T>
void take_own(T& out, void* library, const char* name) {
  out = reinterpret_cast<T>(glibc_dlsym(library, name));
  if (out == nullptr) die(name);
}

// The stubs' own functions and controls, and the shim's statistics and switch (null without it).
void set_up() {
#define BLAS_SCENARIO_OWN_LT(name) take_own(g_real.name, g_lt_library, #name);
#define BLAS_SCENARIO_OWN_CUBLAS(name) take_own(g_real.name, g_blas_library, #name);
  BLAS_API_LT_FUNCTIONS(BLAS_SCENARIO_OWN_LT)
  BLAS_API_CUBLAS_FUNCTIONS(BLAS_SCENARIO_OWN_CUBLAS)
#undef BLAS_SCENARIO_OWN_LT
#undef BLAS_SCENARIO_OWN_CUBLAS
#define BLAS_SCENARIO_CONTROL_LT(name) take_own(g_stub.name, g_lt_library, #name);
#define BLAS_SCENARIO_CONTROL_CUBLAS(name) take_own(g_stub.name, g_blas_library, #name);
  BLAS_STUB_LT_CONTROLS(BLAS_SCENARIO_CONTROL_LT)
  BLAS_STUB_CUBLAS_CONTROLS(BLAS_SCENARIO_CONTROL_CUBLAS)
#undef BLAS_SCENARIO_CONTROL_LT
#undef BLAS_SCENARIO_CONTROL_CUBLAS
  g_shim_stats =
      reinterpret_cast<int (*)(cudnn_fastpath_stats_t*, std::size_t)>(dlsym(RTLD_DEFAULT, "cudnn_fastpath_stats"));
  g_set_features = reinterpret_cast<unsigned (*)(unsigned)>(dlsym(RTLD_DEFAULT, "cudnn_fastpath_set_features"));
  g_features = reinterpret_cast<unsigned (*)()>(dlsym(RTLD_DEFAULT, "cudnn_fastpath_features"));
}

const scenario_main::Case kCases[] = {
    {"steady", steady},
    {"lt_changes", lt_changes},
    {"lt_pointer_modes", lt_pointer_modes},
    {"lt_around", lt_around},
    {"lt_made_off", lt_made_off},
    {"lt_init_internal", lt_init_internal},
    {"program_capture", program_capture},
    {"other_context", other_context},
    {"failures", failures},
    {"forget", forget},
    {"heuristic", heuristic},
    {"gemm_state", gemm_state},
    {"gemm_arguments", gemm_arguments},
    {"typed_gemm_arguments", typed_gemm_arguments},
    {"gemm_stream", gemm_stream},
    {"gemm_no_workspace", gemm_no_workspace},
    {"gemm_training", gemm_training},
    {"gemm_inner", gemm_inner},
    {"gemm_inner_tracer", gemm_inner_tracer},
    {"cudnn_inner", cudnn_inner},
    {"cudnn_sets_program_desc", cudnn_sets_program_desc},
    {"threads", threads},
    {"miss_heavy", miss_heavy},
    {"mixed", mixed},
    {"capture_cost", capture_cost},
    {"records_back_off", records_back_off},
    {"made_again", made_again},
    {"made_again_bias", made_again_bias},
    {"dlsym_setter", dlsym_setter},
    {"relocation", relocation},
    {"relocation_streams", relocation_streams},
    {"relocation_capture", relocation_capture},
    {"relocation_capture_race", relocation_capture_race},
    {"relocation_switch", relocation_switch},
    {"relocation_far", relocation_far},
    {"relocation_derived", relocation_derived},
    {"relocation_context", relocation_context},
    {"relocation_refused_shapes", relocation_refused_shapes},
    {"relocation_admission", relocation_admission},
    {"relocation_decode", relocation_decode},
    {"relocation_bursts", relocation_bursts},
    {"relocation_refused_keys", relocation_refused_keys},
    {"capture_streams", capture_streams},
};

}  // namespace

void print_counts(const Counts& counts) {
  print("failures", counts.failures);
  print("mismatches", counts.mismatches);
  print("wrong_streams", counts.wrong_streams);
}

void run_changes(const std::vector<Change>& changes, const std::function<void(Counts&)>& call, Counts& total) {
  for (const Change& change : changes) {
    Counts counts;
    change.set(0);
    for (int i = 0; i < 4; ++i) call(counts);
    change.set(1);
    for (int i = 0; i < 4; ++i) call(counts);
    change.set(0);
    for (int i = 0; i < 2; ++i) call(counts);
    change.set(-1);
    print("change." + change.name + ".mismatches", counts.mismatches);
    print("change." + change.name + ".failures", counts.failures);
    total.add(counts);
  }
  print("changes", static_cast<long long>(changes.size()));
}

namespace {

// Whether a launch made since `launches` (the driver's count before the call) went on `stream`.
void check_launch_stream(std::uint64_t launches, cudaStream_t stream, Counts& counts) {
  if (!g_check_launch_streams || stubcuda_graph_counters().launches == launches) return;
  if (stubcuda_last_launch_stream() != reinterpret_cast<CUstream>(stream)) ++counts.wrong_streams;
}

}  // namespace

Snapshot Snapshot::now() {
  Snapshot s;
  s.lt = g_stub.stubblaslt_counters();
  s.blas = g_stub.stubblas_counters();
  s.cuda = stubcuda_graph_counters();
  s.shim = g_shim_stats != nullptr && g_shim_stats(&s.stats, sizeof s.stats) == 0 && s.stats.counting == 1;
  return s;
}

void print_since(const Snapshot& before, const std::string& prefix) {
  const Snapshot after = Snapshot::now();
  auto put = [&](const char* name, std::uint64_t now, std::uint64_t then) {
    print(prefix + name, static_cast<long long>(now - then));
  };
  put("lt.calls", after.lt.matmul_calls, before.lt.matmul_calls);
  put("lt.direct", after.lt.matmul_direct, before.lt.matmul_direct);
  put("lt.captured", after.lt.matmul_captured, before.lt.matmul_captured);
  put("lt.replays", after.lt.matmul_replays, before.lt.matmul_replays);
  put("lt.heuristics", after.lt.heuristic_calls, before.lt.heuristic_calls);
  put("lt.handles_created", after.lt.handles_created, before.lt.handles_created);
  put("lt.handles_destroyed", after.lt.handles_destroyed, before.lt.handles_destroyed);
  const struct {
    const char* name;
    StubLtDescriptorCounts StubBlasLtCounters::*kind;
  } kKinds[] = {{"desc", &StubBlasLtCounters::matmul_desc},
                {"layout", &StubBlasLtCounters::layout},
                {"preference", &StubBlasLtCounters::preference},
                {"emulation", &StubBlasLtCounters::emulation}};
  for (const auto& k : kKinds) {
    const StubLtDescriptorCounts& now = after.lt.*k.kind;
    const StubLtDescriptorCounts& then = before.lt.*k.kind;
    const std::string p = std::string("lt.") + k.name;
    put((p + "_created").c_str(), now.created, then.created);
    put((p + "_initialized").c_str(), now.initialized, then.initialized);
    put((p + "_sets").c_str(), now.sets, then.sets);
    put((p + "_gets").c_str(), now.gets, then.gets);
    put((p + "_destroyed").c_str(), now.destroyed, then.destroyed);
  }
  put("blas.calls", after.blas.gemm_calls, before.blas.gemm_calls);
  put("blas.direct", after.blas.gemm_direct, before.blas.gemm_direct);
  put("blas.captured", after.blas.gemm_captured, before.blas.gemm_captured);
  put("blas.replays", after.blas.gemm_replays, before.blas.gemm_replays);
  put("blas.allocations_in_capture", after.blas.allocations_in_capture, before.blas.allocations_in_capture);
  put("blas.inner_lt_calls", after.blas.inner_lt_calls, before.blas.inner_lt_calls);
  put("blas.inner_lt_failures", after.blas.inner_lt_failures, before.blas.inner_lt_failures);
  put("blas.handles_created", after.blas.handles_created, before.blas.handles_created);
  put("blas.handles_destroyed", after.blas.handles_destroyed, before.blas.handles_destroyed);
  put("blas.set_stream", after.blas.set_stream, before.blas.set_stream);
  put("blas.set_workspace", after.blas.set_workspace, before.blas.set_workspace);
  put("cuda.captures", after.cuda.captures_begun, before.cuda.captures_begun);
  put("cuda.global_captures", after.cuda.global_mode_captures, before.cuda.global_mode_captures);
  put("cuda.captures_ended", after.cuda.captures_ended, before.cuda.captures_ended);
  put("cuda.instantiated", after.cuda.instantiated, before.cuda.instantiated);
  put("cuda.streams_created", after.cuda.streams_created, before.cuda.streams_created);
  put("cuda.launches", after.cuda.launches, before.cuda.launches);
  put("cuda.launches_into_capture", after.cuda.launches_into_capture, before.cuda.launches_into_capture);
  put("cuda.bad_launches", after.cuda.bad_launches, before.cuda.bad_launches);
  put("cuda.kernel_node_updates", after.cuda.kernel_node_updates, before.cuda.kernel_node_updates);
  put("cuda.memset_node_updates", after.cuda.memset_node_updates, before.cuda.memset_node_updates);
  put("cuda.capture_queries", after.cuda.capture_queries, before.cuda.capture_queries);
  print(prefix + "cuda.live_execs", static_cast<long long>(after.cuda.live_execs));
  if (!after.shim || !before.shim) return;
  // The shim's counters of the cuBLAS families, of the heuristic cache, of relocation and of the
  // calls that were not the program's own.
#define BLAS_SCENARIO_SHIM_COUNTER(name, group, label, what)                                          \
  if (std::strncmp(#name, "lt_matmul_", 10) == 0 || std::strncmp(#name, "gemm_", 5) == 0 ||           \
      std::strncmp(#name, "typed_gemm_", 11) == 0 || std::strncmp(#name, "heuristic_", 10) == 0 ||    \
      std::strncmp(#name, "reloc", 5) == 0 || std::strcmp(#name, "library_calls") == 0)                  \
    put("shim." #name, after.stats.name, before.stats.name);
  CUDNN_FASTPATH_COUNTERS(BLAS_SCENARIO_SHIM_COUNTER)
#undef BLAS_SCENARIO_SHIM_COUNTER
}

void LtObjects::open(const BlasApi& api) {
  must(api.cublasLtCreate(&handle), "cublasLtCreate");
  must(api.cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F), "cublasLtMatmulDescCreate");
  must(api.cublasLtEmulationDescCreate(&emulation), "cublasLtEmulationDescCreate");
  must(api.cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EMULATION_DESCRIPTOR, &emulation,
                                          sizeof emulation),
       "the emulation descriptor");
  const std::uint64_t rows[4] = {64, 16, 64, 64}, cols[4] = {16, 32, 32, 32};
  for (int i = 0; i < 4; ++i)
    must(api.cublasLtMatrixLayoutCreate(&layouts[i], CUDA_R_32F, rows[i], cols[i], static_cast<std::int64_t>(rows[i])),
         "cublasLtMatrixLayoutCreate");
  must(api.cublasLtMatmulPreferenceCreate(&preference), "cublasLtMatmulPreferenceCreate");
  const std::uint64_t workspace = 1 << 20;
  must(api.cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace,
                                                sizeof workspace),
       "the preference's workspace");
  if (cuStreamCreate(&stream, 0) != CUDA_SUCCESS) die("cuStreamCreate");
}

void LtObjects::close(const BlasApi& api) {
  api.cublasLtMatmulPreferenceDestroy(preference);
  for (cublasLtMatrixLayout_t layout : layouts) api.cublasLtMatrixLayoutDestroy(layout);
  api.cublasLtMatmulDescDestroy(desc);
  api.cublasLtEmulationDescDestroy(emulation);
  api.cublasLtDestroy(handle);
  cuStreamDestroy_v2(stream);
  *this = LtObjects{};
}

std::uint64_t Matmul::reference() const {
  g_stub.stubblas_reference_calls(1);
  const cublasStatus_t status = call(g_real);
  g_stub.stubblas_reference_calls(0);
  if (status != CUBLAS_STATUS_SUCCESS) die("a reference matmul failed");
  std::uint64_t written = 0;
  std::memcpy(&written, d, sizeof written);
  return written;
}

Matmul matmul_of(const LtObjects& o, const Scalar& alpha, const Scalar& beta, Buffer& a, Buffer& b, Buffer& c,
                 Buffer& d) {
  return {o.handle, o.desc,     alpha.bytes, a.get(), o.layouts[0], b.get(),  o.layouts[1],       beta.bytes,
          c.get(),  o.layouts[2], d.get(),   o.layouts[3], nullptr, nullptr, 0, o.runtime_stream()};
}

cublasStatus_t checked(const Matmul& m, Counts& counts) {
  const std::uint64_t poison = 0xdead;
  std::memcpy(m.d, &poison, sizeof poison);
  const std::uint64_t launches = g_check_launch_streams ? stubcuda_graph_counters().launches : 0;
  const cublasStatus_t status = m.call(g_api);
  check_launch_stream(launches, m.stream, counts);
  if (status != CUBLAS_STATUS_SUCCESS) {
    ++counts.failures;
    return status;
  }
  std::uint64_t written = 0;
  std::memcpy(&written, m.d, sizeof written);
  // The reference sees D as the call did: C may be D, and a kernel may read D (the memset style's
  // accumulates into it).
  std::memcpy(m.d, &poison, sizeof poison);
  if (written == poison || written != m.reference()) ++counts.mismatches;
  return status;
}

std::uint64_t Gemm::reference(std::uint64_t c_before) const {
  std::memcpy(c, &c_before, sizeof c_before);
  g_stub.stubblas_reference_calls(1);
  const cublasStatus_t status = call(g_real);
  g_stub.stubblas_reference_calls(0);
  if (status != CUBLAS_STATUS_SUCCESS) die("a reference GEMM failed");
  std::uint64_t written = 0;
  std::memcpy(&written, c, sizeof written);
  return written;
}

Gemm gemm_of(cublasHandle_t handle, const Scalar& alpha, const Scalar& beta, Buffer& a, Buffer& b, Buffer& c) {
  // BLAS_SCENARIO_GEMM=typed: the cases' GEMMs are cublasSgemm_v2 (the typed_gemm family) instead.
  const char* entry = std::getenv("BLAS_SCENARIO_GEMM");
  const StubBlasGemmEntry first = entry != nullptr && std::strcmp(entry, "typed") == 0 ? STUBBLAS_TYPED_GEMM : STUBBLAS_GEMM_EX;
  return {handle,      first,            CUBLAS_OP_N, CUBLAS_OP_N, 64,         32,         16,
          alpha.bytes, a.get(),          CUDA_R_32F,  64,          64 * 16,    b.get(),    CUDA_R_32F,
          16,          16 * 32,          beta.bytes,  c.get(),     CUDA_R_32F, 64,         64 * 32,
          2,           CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT};
}

cublasStatus_t checked(const Gemm& g, Counts& counts, std::uint64_t c_before) {
  std::memcpy(g.c, &c_before, sizeof c_before);
  const std::uint64_t launches = g_check_launch_streams ? stubcuda_graph_counters().launches : 0;
  const cublasStatus_t status = g.call(g_api);
  cudaStream_t stream = nullptr;  // the stream the program set, as the stub holds it after the call
  if (g_stub.cublasGetStream_v2(g.handle, &stream) != CUBLAS_STATUS_SUCCESS) ++counts.failures;
  check_launch_stream(launches, stream, counts);
  if (status != CUBLAS_STATUS_SUCCESS) {
    ++counts.failures;
    return status;
  }
  std::uint64_t written = 0;
  std::memcpy(&written, g.c, sizeof written);
  if (written == c_before || written != g.reference(c_before)) ++counts.mismatches;
  return status;
}

void BlasHandle::open(bool with_workspace) {
  must(g_api.cublasCreate_v2(&handle), "cublasCreate_v2");
  if (cuStreamCreate(&stream, 0) != CUDA_SUCCESS) die("cuStreamCreate");
  must(g_api.cublasSetStream_v2(handle, runtime_stream()), "cublasSetStream_v2");
  workspace = std::aligned_alloc(256, kWorkspaceSize);
  if (with_workspace) must(g_api.cublasSetWorkspace_v2(handle, workspace, kWorkspaceSize), "cublasSetWorkspace_v2");
}

void BlasHandle::close() {
  g_api.cublasDestroy_v2(handle);
  cuStreamDestroy_v2(stream);
  std::free(workspace);
  *this = BlasHandle{};
}

}  // namespace blas_scenario

const scenario_main::Program kScenarioProgram{.name = "blas scenario",
                                              .fixed_mode = blas_scenario::kFixedMode,
                                              .load_api = blas_scenario::load_api,
                                              .set_up = blas_scenario::set_up,
                                              .cases = blas_scenario::kCases};
