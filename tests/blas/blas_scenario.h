// A blas scenario program (blas_scenario.cpp; its cases in blas_scenario_*.cpp): cuBLASLt matmuls,
// heuristics and cuBLAS GEMMs on the stub libcublasLt.so.13 and libcublas.so.13, with the stub
// libcuda loaded (linked), so that the shim can capture steady calls and launch them as graphs. It
// prints key=value lines for blas_test.cpp to judge, and runs with or without the shim.
//
//   blas_scenario_linked  CASE        the program links libcublas and libcublasLt (the stubs)
//   blas_scenario_dlopen  MODE CASE   local: dlopen(framework, RTLD_LOCAL), a library that links
//                                     them and calls them through its own PLT (PyTorch's case);
//                                     dlsym: dlopen(each stub, RTLD_LOCAL) and every function
//                                     taken with dlsym on those handles (JAX's way)
//
// Every matmul's D and every GEMM's C is checked after the call against the stub's reference
// (stub_blas_control.h): the same call made again in reference mode, through the stub's own
// function (glibc's dlsym on the stub's handle, around the shim), which writes the digest the call
// should have written. Common keys: "failures" (calls that should have succeeded and did not),
// "mismatches" (outputs that were not the reference's: a stale replay), and the stubs' counters
// as deltas of a phase (print_since).
#pragma once

#include <cublasLt.h>
#include <cublas_api.h>
#include <dlfcn.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "shim/include/cudnn_fastpath/shim_control.h"
#include "tests/blas/blas_api.h"
#include "tests/stub/stub_blas_control.h"
#include "tests/stub/stub_cuda.h"
#include "tests/support/blas_arguments.h"
#include "tests/support/glibc_dlsym.h"
#include "tests/support/must_load.h"
#include "tests/support/scenario_main.h"

namespace blas_scenario {

// The stubs' controls and getters (nothing interposes them), from the stubs' handles.
#define BLAS_STUB_LT_CONTROLS(X)                                                                       \
  X(stubblaslt_counters) X(stubblaslt_thread_last_matmul) X(stubblaslt_thread_last_matmul_stream)      \
  X(stubblaslt_handle_serial) X(stubblas_reference_calls) X(cublasLtMatmulDescGetAttribute)            \
  X(cublasLtMatrixLayoutGetAttribute) X(cublasLtMatmulPreferenceGetAttribute)                          \
  X(cublasLtEmulationDescGetAttribute) X(stubblas_set_kernel_style)
#define BLAS_STUB_CUBLAS_CONTROLS(X)                                                                   \
  X(stubblas_counters) X(stubblas_thread_last_gemm) X(stubblas_thread_last_gemm_stream)                \
  X(stubblas_handle_serial) X(stubblas_inner_lt_calls) X(cublasGetStream_v2) X(cublasGetPointerMode_v2)

struct StubControls {
#define BLAS_STUB_MEMBER(name) decltype(&::name) name;
  BLAS_STUB_LT_CONTROLS(BLAS_STUB_MEMBER) BLAS_STUB_CUBLAS_CONTROLS(BLAS_STUB_MEMBER)
#undef BLAS_STUB_MEMBER
};

extern BlasApi g_api;        // as the program calls them: the shim's, when it is preloaded
extern BlasApi g_real;       // the stubs' own functions, around any interposer
extern StubControls g_stub;
extern const char* g_mode;   // linked, local, dlsym
extern void* g_lt_library;   // the stub libraries' handles
extern void* g_blas_library;
// The shim's statistics and switch (null without a shim).
extern int (*g_shim_stats)(cudnn_fastpath_stats_t*, std::size_t);
extern unsigned (*g_set_features)(unsigned);
extern unsigned (*g_features)();

using scenario_main::print;

struct Counts {
  long long failures = 0;
  long long mismatches = 0;
  long long wrong_streams = 0;  // graph launches that went on another stream than the call's
  void add(const Counts& other) {
    failures += other.failures;
    mismatches += other.mismatches;
    wrong_streams += other.wrong_streams;
  }
};
// Whether checked() compares the stream of the driver's last launch with the call's (the driver
// keeps one for the process: not with threads).
extern bool g_check_launch_streams;
void print_counts(const Counts& counts);

// What the stubs, the driver and the shim counted, at one moment.
struct Snapshot {
  StubBlasLtCounters lt;
  StubBlasCounters blas;
  StubCudaGraphCounters cuda;
  bool shim = false;  // the shim's counts below are there (loaded, and counting)
  cudnn_fastpath_stats_t stats{};
  static Snapshot now();
};
// Prints what changed since `before`, each key after `prefix`: every counter of the stubs
// ("lt.calls", "lt.layout_sets", "blas.captured", ...), the driver's graph counters
// ("cuda.captures", ...; "cuda.live_execs" is the count now)
// and, under a counting shim, the shim's blas counters ("shim.lt_matmul_launches", ...).
void print_since(const Snapshot& before, const std::string& prefix = "");

// A scaling factor's storage: 16 bytes, room for any scale type.
struct alignas(16) Scalar {
  unsigned char bytes[16];
  Scalar() : bytes{} {}
  template <typename T>
  explicit Scalar(T value) : bytes{} {
    std::memcpy(bytes, &value, sizeof value);
  }
};

// An 8-byte-or-more buffer whose first word a run reads or writes; 4 KiB aligned, so that its
// alignment, which a call's shape holds and its relocation checks up to 4 KiB
// (shim/engine/shape_cache.h, replay/graph_relocation.h), is the same in every run.
struct alignas(4096) Buffer {
  std::uint64_t words[2];
  explicit Buffer(std::uint64_t first = 0) : words{first, ~first} {}
  void* get() { return words; }
  std::uint64_t first() const { return words[0]; }
};

// A cuBLASLt handle, a matmul descriptor naming an emulation descriptor, four layouts, a
// preference, and a stream of the stub driver: made through `api` (the shim's table, or the
// stubs' own for objects made around the shim).
struct LtObjects {
  cublasLtHandle_t handle = nullptr;
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtEmulationDesc_t emulation = nullptr;
  cublasLtMatrixLayout_t layouts[4] = {};
  cublasLtMatmulPreference_t preference = nullptr;
  CUstream stream = nullptr;
  void open(const BlasApi& api = g_api);
  void close(const BlasApi& api = g_api);
  cudaStream_t runtime_stream() const { return reinterpret_cast<cudaStream_t>(stream); }
};

// A cublasLtMatmul's arguments, and what it should write.
struct Matmul : blas_arguments::Matmul {
  // D's first word after the same call in reference mode: what the call should have written.
  std::uint64_t reference() const;
};

// The matmul of `o`'s objects on buffers a, b, c into d, alpha and beta given, on o's stream.
Matmul matmul_of(const LtObjects& o, const Scalar& alpha, const Scalar& beta, Buffer& a, Buffer& b, Buffer& c, Buffer& d);

// Makes `m` through g_api and checks D against the reference (a failure or a mismatch counted);
// the call's status.
cublasStatus_t checked(const Matmul& m, Counts& counts);

// A GEMM's arguments, and what it should write.
struct Gemm : blas_arguments::Gemm {
  // C's first word after the same call in reference mode, C's first word set to `c_before` first
  // (a GEMM reads C, then writes it).
  std::uint64_t reference(std::uint64_t c_before) const;
};

// A GEMM of `handle` on buffers a, b, c (fp32, 64 x 32 x 16, strided-batched entry points: 2):
// cublasGemmEx, or cublasSgemm_v2 when the environment has BLAS_SCENARIO_GEMM=typed.
Gemm gemm_of(cublasHandle_t handle, const Scalar& alpha, const Scalar& beta, Buffer& a, Buffer& b, Buffer& c);

// Makes `g` through g_api with C's first word `c_before`, checks C against the reference.
cublasStatus_t checked(const Gemm& g, Counts& counts, std::uint64_t c_before = 0x0C0C0C0C);

// A cuBLAS handle on a stream of its own, with a workspace of the program's (256-byte aligned)
// set after the stream, made through g_api.
struct BlasHandle {
  cublasHandle_t handle = nullptr;
  CUstream stream = nullptr;
  void* workspace = nullptr;
  static constexpr std::size_t kWorkspaceSize = 4096;
  void open(bool with_workspace = true);
  void close();
  cudaStream_t runtime_stream() const { return reinterpret_cast<cudaStream_t>(stream); }
};

// One change a case makes between calls: set(0) puts its base value back, set(1) its variant,
// set(-1) the value every other change starts from (the same as set(0) for most).
struct Change {
  std::string name;
  std::function<void(int)> set;
};

// For each change: 4 calls at its base (a graph exists after them), 4 at its variant, 2 at the base
// again (the base's graph must still be right), each call made by `call` (which checks it); prints
// "change.NAME.mismatches" and "change.NAME.failures", adds everything to `total`.
void run_changes(const std::vector<Change>& changes, const std::function<void(Counts&)>& call, Counts& total);

// Requires success of a setup call.
inline void must(cublasStatus_t status, const char* what) {
  if (status != CUBLAS_STATUS_SUCCESS) die(what);
}

// The cases, each in a file of its topic.
int steady();
int lt_changes();
int lt_pointer_modes();
int lt_around();
int lt_made_off();
int lt_init_internal();
int program_capture();
int other_context();
int failures();
int forget();
int heuristic();
int gemm_state();
int gemm_arguments();
int typed_gemm_arguments();
int gemm_stream();
int gemm_no_workspace();
int gemm_training();
int gemm_inner();
int gemm_inner_tracer();
int cudnn_inner();
int cudnn_sets_program_desc();
int threads();
int miss_heavy();
int mixed();
int capture_cost();
int records_back_off();
int made_again();
int made_again_bias();
int dlsym_setter();
int relocation();
int relocation_streams();
int relocation_capture();
int relocation_switch();
int relocation_far();
int relocation_derived();
int relocation_context();
int relocation_refused_shapes();
int relocation_admission();
int relocation_decode();
int relocation_bursts();
int relocation_capture_race();
int relocation_refused_keys();
int capture_streams();

}  // namespace blas_scenario
