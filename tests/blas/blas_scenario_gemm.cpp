// The blas scenario's cuBLAS GEMM cases (blas_scenario.h): the handle's state and the arguments
// changed in turn, the stream and the workspace, and cuBLAS's own cuBLASLt calls.
#include <vector>

#include "tests/blas/blas_scenario.h"

namespace blas_scenario {

namespace {

// The handle's stream and, through the next GEMM of a key the shim has not seen (run directly,
// recorded by the stub), its workspace: as the program set them?
struct HeldState {
  bool stream, workspace;
};
HeldState held_state(const BlasHandle& h, cudaStream_t stream, void* workspace, Counts& counts) {
  cudaStream_t held = nullptr;
  must(g_stub.cublasGetStream_v2(h.handle, &held), "cublasGetStream_v2");
  static Buffer probe_c[64];
  static int next = 0;
  Scalar alpha{1.0f}, beta{0.0f};
  Buffer a{0xA9}, b{0xB9};
  Gemm probe = gemm_of(h.handle, alpha, beta, a, b, probe_c[next++ % 64]);
  probe.m = 1000 + next;  // a key of its own
  checked(probe, counts);
  const StubBlasGemmRun run = g_stub.stubblas_thread_last_gemm();
  return {held == stream,
          run.valid && !run.replayed && run.blob.workspace == workspace && run.blob.default_pool == 0 &&
              run.blob.workspace_size == BlasHandle::kWorkspaceSize};
}

}  // namespace

// Each piece of the handle's state changed in turn between GEMMs, and device-mode scaling factors
// whose values change in memory before every call.
int gemm_state() {
  BlasHandle h;
  h.open();
  Scalar alpha{1.5f}, beta{0.25f};
  Buffer a{0xA0}, b{0xB0}, c{0xC0};
  const Gemm g = gemm_of(h.handle, alpha, beta, a, b, c);
  static int mantissa_bits = 0;
  const cublasHandle_t handle = h.handle;
  auto set = [](cublasStatus_t status) { must(status, "a handle setter"); };
  std::vector<Change> changes = {
      {"pointer_mode", [=](int w) { set(g_api.cublasSetPointerMode_v2(handle, w == 1 ? CUBLAS_POINTER_MODE_DEVICE : CUBLAS_POINTER_MODE_HOST)); }},
      {"math_mode", [=](int w) { set(g_api.cublasSetMathMode(handle, w == 1 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH)); }},
      {"atomics_mode", [=](int w) { set(g_api.cublasSetAtomicsMode(handle, w == 1 ? CUBLAS_ATOMICS_ALLOWED : CUBLAS_ATOMICS_NOT_ALLOWED)); }},
      {"sm_count_target", [=](int w) { set(g_api.cublasSetSmCountTarget(handle, w == 1 ? 32 : 0)); }},
      {"emulation_strategy", [=](int w) {
         set(g_api.cublasSetEmulationStrategy(handle, w == 1 ? CUBLAS_EMULATION_STRATEGY_EAGER : CUBLAS_EMULATION_STRATEGY_DEFAULT));
       }},
      {"special_values", [=](int w) {
         set(g_api.cublasSetEmulationSpecialValuesSupport(
             handle, w == 1 ? CUDA_EMULATION_SPECIAL_VALUES_SUPPORT_NAN : CUDA_EMULATION_SPECIAL_VALUES_SUPPORT_DEFAULT));
       }},
      {"mantissa_control", [=](int w) {
         set(g_api.cublasSetFixedPointEmulationMantissaControl(
             handle, w == 1 ? CUDA_EMULATION_MANTISSA_CONTROL_FIXED : CUDA_EMULATION_MANTISSA_CONTROL_DYNAMIC));
       }},
      {"max_mantissa_bits", [=](int w) { set(g_api.cublasSetFixedPointEmulationMaxMantissaBitCount(handle, w == 1 ? 40 : 0)); }},
      {"mantissa_bit_offset", [=](int w) { set(g_api.cublasSetFixedPointEmulationMantissaBitOffset(handle, w == 1 ? 3 : 0)); }},
      {"mantissa_bit_count_pointer", [=](int w) {
         set(g_api.cublasSetFixedPointEmulationMantissaBitCountPointer(handle, w == 1 ? &mantissa_bits : nullptr));
       }},
  };
  for (const Change& change : changes) change.set(0);  // every setter called once: the base
  Counts counts;
  Snapshot before = Snapshot::now();
  run_changes(changes, [&](Counts& c) { checked(g, c); }, counts);
  print_since(before);
  // Each change again, every other setter called after it with its base value: a setter that
  // recorded its value into another's field would see it undone in the key by that one's setter.
  for (const Change& change : changes) {
    Counts c;
    change.set(1);
    for (const Change& other : changes)
      if (&other != &change) other.set(0);
    for (int i = 0; i < 3; ++i) checked(g, c);
    change.set(0);
    print("change." + change.name + ".others_after.mismatches", c.mismatches);
    counts.add(c);
  }

  set(g_api.cublasSetPointerMode_v2(handle, CUBLAS_POINTER_MODE_DEVICE));
  Buffer c2{0xC2};
  Gemm device = g;
  device.c = c2.get();
  before = Snapshot::now();
  for (int i = 0; i < 10; ++i) {
    alpha = Scalar{1.0f + static_cast<float>(i)};
    beta = Scalar{0.125f * static_cast<float>(i)};
    checked(device, counts);
  }
  print_since(before, "device_values.");
  print_counts(counts);
  return 0;
}

// Each argument of a GEMM changed in turn, the entry point too; and the size of the scaling
// factors: a double's high half under a 64-bit compute type, a complex float's imaginary part.
int gemm_arguments() {
  BlasHandle h;
  h.open();
  Scalar alpha{1.5f}, beta{0.25f}, alpha2{2.5f}, beta2{0.75f};
  Scalar alpha64{1.5}, beta64{0.25}, alpha64_high{1.5};
  alpha64_high.bytes[5] ^= 0x40;
  Scalar alpha_complex{1.5f}, alpha_complex_imaginary{1.5f};
  alpha_complex_imaginary.bytes[6] = 0x3f;  // the second float
  Buffer a{0xA0}, b{0xB0}, c{0xC0}, a2{0xA2}, b2{0xB2}, c2{0xC2};
  Gemm g = gemm_of(h.handle, alpha, beta, a, b, c);
  g.entry = STUBBLAS_GEMM_STRIDED_BATCHED_EX;
  const Gemm base = g;
  std::vector<Change> changes;
  auto field = [&](const char* name, auto member, auto variant) {
    changes.push_back({name, [&g, &base, member, variant](int w) { g.*member = w == 1 ? variant : base.*member; }});
  };
  field("transa", &Gemm::transa, CUBLAS_OP_T);
  field("transb", &Gemm::transb, CUBLAS_OP_T);
  field("m", &Gemm::m, std::int64_t{65});
  field("n", &Gemm::n, std::int64_t{33});
  field("k", &Gemm::k, std::int64_t{17});
  // Host scaling factors change in the same memory: keyed by their bytes, not their address.
  changes.push_back({"alpha", [&](int w) { alpha = w == 1 ? alpha2 : Scalar{1.5f}; }});
  field("a", &Gemm::a, static_cast<const void*>(a2.get()));
  field("a_type", &Gemm::a_type, CUDA_R_16F);
  field("lda", &Gemm::lda, std::int64_t{65});
  field("stride_a", &Gemm::stride_a, 64LL * 16 + 1);
  field("b", &Gemm::b, static_cast<const void*>(b2.get()));
  field("b_type", &Gemm::b_type, CUDA_R_16F);
  field("ldb", &Gemm::ldb, std::int64_t{17});
  field("stride_b", &Gemm::stride_b, 16LL * 32 + 1);
  changes.push_back({"beta", [&](int w) { beta = w == 1 ? beta2 : Scalar{0.25f}; }});
  field("c", &Gemm::c, static_cast<void*>(c2.get()));
  field("c_type", &Gemm::c_type, CUDA_R_16F);
  field("ldc", &Gemm::ldc, std::int64_t{65});
  field("stride_c", &Gemm::stride_c, 64LL * 32 + 1);
  field("batch_count", &Gemm::batch_count, std::int64_t{3});
  field("compute_type", &Gemm::compute_type, CUBLAS_COMPUTE_32F_FAST_TF32);
  field("algo", &Gemm::algo, CUBLAS_GEMM_DEFAULT_TENSOR_OP);
  field("entry_ex", &Gemm::entry, STUBBLAS_GEMM_EX);
  field("entry_ex_64", &Gemm::entry, STUBBLAS_GEMM_EX_64);
  field("entry_strided_batched_ex_64", &Gemm::entry, STUBBLAS_GEMM_STRIDED_BATCHED_EX_64);
  changes.push_back({"scale_bytes_64f", [&](int w) {
                       g.compute_type = w == -1 ? base.compute_type : CUBLAS_COMPUTE_64F;
                       g.a_type = g.b_type = g.c_type = w == -1 ? base.c_type : CUDA_R_64F;
                       g.alpha = w == -1 ? base.alpha : w == 1 ? alpha64_high.bytes : alpha64.bytes;
                       g.beta = w == -1 ? base.beta : beta64.bytes;
                     }});
  changes.push_back({"scale_bytes_complex", [&](int w) {
                       g.c_type = w == -1 ? base.c_type : CUDA_C_32F;
                       g.alpha = w == -1 ? base.alpha : w == 1 ? alpha_complex_imaginary.bytes : alpha_complex.bytes;
                     }});
  Counts counts;
  const Snapshot before = Snapshot::now();
  run_changes(changes, [&](Counts& c) { checked(g, c); }, counts);
  print_since(before);
  print_counts(counts);
  return 0;
}

// cuBLAS's typed GEMMs (cublasSgemm_v2 and its kin, the typed_gemm family): each argument changed in
// turn, each of the sixteen entry points, and the size of their scaling factors, their pointee's:
// a double's high half (cublasDgemm_v2), a complex double's imaginary part (cublasZgemm_v2).
int typed_gemm_arguments() {
  BlasHandle h;
  h.open();
  Scalar alpha{1.5f}, beta{0.25f}, alpha2{2.5f}, beta2{0.75f};
  Scalar alpha64{1.5}, alpha64_high{1.5};
  alpha64_high.bytes[5] ^= 0x40;
  Scalar alpha_z{1.5}, alpha_z_imaginary{1.5};
  alpha_z_imaginary.bytes[14] = 0x3f;  // the second double
  Buffer a{0xA0}, b{0xB0}, c{0xC0}, a2{0xA2}, b2{0xB2}, c2{0xC2};
  Gemm g = gemm_of(h.handle, alpha, beta, a, b, c);
  g.entry = STUBBLAS_TYPED_GEMM;  // cublasSgemm_v2
  const Gemm base = g;
  std::vector<Change> changes;
  auto field = [&](const char* name, auto member, auto variant) {
    changes.push_back({name, [&g, &base, member, variant](int w) { g.*member = w == 1 ? variant : base.*member; }});
  };
  field("transa", &Gemm::transa, CUBLAS_OP_T);
  field("transb", &Gemm::transb, CUBLAS_OP_T);
  field("m", &Gemm::m, std::int64_t{65});
  field("n", &Gemm::n, std::int64_t{33});
  field("k", &Gemm::k, std::int64_t{17});
  changes.push_back({"alpha", [&](int w) { alpha = w == 1 ? alpha2 : Scalar{1.5f}; }});
  changes.push_back({"beta", [&](int w) { beta = w == 1 ? beta2 : Scalar{0.25f}; }});
  field("a", &Gemm::a, static_cast<const void*>(a2.get()));
  field("lda", &Gemm::lda, std::int64_t{65});
  field("b", &Gemm::b, static_cast<const void*>(b2.get()));
  field("ldb", &Gemm::ldb, std::int64_t{17});
  field("c", &Gemm::c, static_cast<void*>(c2.get()));
  field("ldc", &Gemm::ldc, std::int64_t{65});
  static const char* const kEntries[] = {"S", "S_64", "S_strided", "S_strided_64", "D", "D_64", "D_strided",
                                         "D_strided_64", "C", "C_64", "C_strided", "C_strided_64", "Z", "Z_64",
                                         "Z_strided", "Z_strided_64"};
  for (int e = 1; e < 16; ++e)
    field(kEntries[e], &Gemm::entry, static_cast<StubBlasGemmEntry>(STUBBLAS_TYPED_GEMM + e));
  // With the strided form: its strides and batch count.
  changes.push_back({"stride_a", [&](int w) {
                       g.entry = w == -1 ? base.entry : static_cast<StubBlasGemmEntry>(STUBBLAS_TYPED_GEMM + 2);
                       g.stride_a = w == 1 ? 64LL * 16 + 1 : base.stride_a;
                     }});
  changes.push_back({"batch_count", [&](int w) {
                       g.entry = w == -1 ? base.entry : static_cast<StubBlasGemmEntry>(STUBBLAS_TYPED_GEMM + 2);
                       g.batch_count = w == 1 ? 3 : base.batch_count;
                     }});
  changes.push_back({"scale_bytes_d", [&](int w) {
                       g.entry = w == -1 ? base.entry : static_cast<StubBlasGemmEntry>(STUBBLAS_TYPED_GEMM + 4);
                       g.alpha = w == -1 ? base.alpha : w == 1 ? alpha64_high.bytes : alpha64.bytes;
                     }});
  changes.push_back({"scale_bytes_z", [&](int w) {
                       g.entry = w == -1 ? base.entry : static_cast<StubBlasGemmEntry>(STUBBLAS_TYPED_GEMM + 12);
                       g.alpha = w == -1 ? base.alpha : w == 1 ? alpha_z_imaginary.bytes : alpha_z.bytes;
                     }});
  Counts counts;
  const Snapshot before = Snapshot::now();
  run_changes(changes, [&](Counts& c) { checked(g, c); }, counts);
  print_since(before);
  print_counts(counts);
  return 0;
}

// The stream changed (and the workspace set again after it): the graph is launched on the new
// stream. The workspace moved: another key. After every capture the handle holds exactly what the
// program set.
int gemm_stream() {
  BlasHandle h;
  h.open();
  Scalar alpha{1.5f}, beta{0.25f};
  Buffer a{0xA0}, b{0xB0}, c{0xC0};
  const Gemm g = gemm_of(h.handle, alpha, beta, a, b, c);
  Counts counts;
  Snapshot before = Snapshot::now();
  for (int i = 0; i < 5; ++i) checked(g, counts);
  print_since(before, "first.");
  HeldState held = held_state(h, h.runtime_stream(), h.workspace, counts);
  print("first.stream_kept", held.stream);
  print("first.workspace_kept", held.workspace);

  CUstream second = nullptr;
  if (cuStreamCreate(&second, 0) != CUDA_SUCCESS) die("cuStreamCreate");
  const auto second_stream = reinterpret_cast<cudaStream_t>(second);
  must(g_api.cublasSetStream_v2(h.handle, second_stream), "cublasSetStream_v2");
  must(g_api.cublasSetWorkspace_v2(h.handle, h.workspace, BlasHandle::kWorkspaceSize), "cublasSetWorkspace_v2");
  before = Snapshot::now();
  for (int i = 0; i < 5; ++i) checked(g, counts);
  print_since(before, "second_stream.");
  held = held_state(h, second_stream, h.workspace, counts);
  print("second_stream.stream_kept", held.stream);
  print("second_stream.workspace_kept", held.workspace);

  void* moved = std::aligned_alloc(256, BlasHandle::kWorkspaceSize);
  must(g_api.cublasSetWorkspace_v2(h.handle, moved, BlasHandle::kWorkspaceSize), "cublasSetWorkspace_v2");
  before = Snapshot::now();
  for (int i = 0; i < 5; ++i) checked(g, counts);
  print_since(before, "moved_workspace.");
  held = held_state(h, second_stream, moved, counts);
  print("moved_workspace.stream_kept", held.stream);
  print("moved_workspace.workspace_kept", held.workspace);
  print_counts(counts);
  return 0;
}

// A handle without a workspace of the program's (none set, or dropped by a later cublasSetStream):
// never captured, where cuBLAS would allocate inside the graph.
int gemm_no_workspace() {
  BlasHandle h;
  h.open(false);
  Scalar alpha{1.5f}, beta{0.25f};
  Buffer a{0xA0}, b{0xB0}, c{0xC0};
  const Gemm g = gemm_of(h.handle, alpha, beta, a, b, c);
  Counts counts;
  Snapshot before = Snapshot::now();
  for (int i = 0; i < 10; ++i) checked(g, counts);
  print_since(before, "none.");
  must(g_api.cublasSetWorkspace_v2(h.handle, h.workspace, BlasHandle::kWorkspaceSize), "cublasSetWorkspace_v2");
  must(g_api.cublasSetStream_v2(h.handle, h.runtime_stream()), "cublasSetStream_v2");  // drops the workspace
  before = Snapshot::now();
  for (int i = 0; i < 10; ++i) checked(g, counts);
  print_since(before, "dropped.");
  must(g_api.cublasSetWorkspace_v2(h.handle, h.workspace, BlasHandle::kWorkspaceSize), "cublasSetWorkspace_v2");
  before = Snapshot::now();
  for (int i = 0; i < 10; ++i) checked(g, counts);
  print_since(before, "set.");
  print_counts(counts);
  return 0;
}

// cuBLAS's own cuBLASLt matmul inside every GEMM (stubblas_inner_lt_calls), called from libcublas
// through its PLT: for GEMMs through the shim (captured with the GEMM) and GEMMs around it (the
// stub's own cublasGemmEx: the inner matmul reaches the shim from libcublas, inside no call of the
// shim's).
int gemm_inner() {
  g_stub.stubblas_inner_lt_calls(1);
  BlasHandle h;
  h.open();
  Scalar alpha{1.5f}, beta{0.25f};
  Buffer a{0xA0}, b{0xB0}, c{0xC0};
  const Gemm g = gemm_of(h.handle, alpha, beta, a, b, c);
  Counts counts;
  Snapshot before = Snapshot::now();
  for (int i = 0; i < 10; ++i) checked(g, counts);
  print_since(before, "through.");
  before = Snapshot::now();
  for (int i = 0; i < 10; ++i) {
    std::memcpy(g.c, "\x0C\x0C\x0C\x0C\0\0\0\0", 8);
    if (g.call(g_real) != CUBLAS_STATUS_SUCCESS) ++counts.failures;
    const std::uint64_t written = c.first();
    if (written != g.reference(0x0C0C0C0C)) ++counts.mismatches;
  }
  print_since(before, "around.");
  g_stub.stubblas_inner_lt_calls(0);
  print_counts(counts);
  return 0;
}

// cuBLAS's own Lt matmul through a tracer preloaded before the shim (blas_tracer.cpp): it reaches
// the shim from the tracer, and only the shim's being inside the GEMM says it is cuBLAS's. The
// expected C is taken before the phase, inner calls off (the GEMM's digest does not depend on
// them): a reference GEMM made inside it would reach the shim through the tracer as well.
int gemm_inner_tracer() {
  const auto tracer_calls = reinterpret_cast<std::uint64_t (*)()>(dlsym(RTLD_DEFAULT, "blas_tracer_calls"));
  if (tracer_calls == nullptr) die("runs with the tracer preloaded");
  BlasHandle h;
  h.open();
  Scalar alpha{1.5f}, beta{0.25f};
  Buffer a{0xA0}, b{0xB0}, c{0xC0};
  const Gemm g = gemm_of(h.handle, alpha, beta, a, b, c);
  const std::uint64_t expected = g.reference(0x0C0C0C0C);
  g_stub.stubblas_inner_lt_calls(1);
  Counts counts;
  const std::uint64_t traced = tracer_calls();
  const Snapshot before = Snapshot::now();
  for (int i = 0; i < 10; ++i) {
    std::memcpy(g.c, "\x0C\x0C\x0C\x0C\0\0\0\0", 8);
    if (g.call(g_api) != CUBLAS_STATUS_SUCCESS) ++counts.failures;
    if (c.first() != expected) ++counts.mismatches;
  }
  print_since(before, "through.");
  print("through.traced", static_cast<long long>(tracer_calls() - traced));
  g_stub.stubblas_inner_lt_calls(0);
  print_counts(counts);
  return 0;
}

}  // namespace blas_scenario

namespace blas_scenario {

// A training loop's GEMMs as PyTorch's caching allocator places them: kPerStep GEMMs a step, the
// first kWarmup steps at addresses of their own (the allocator still settling: optimizer state,
// gradients made for the first time), then two sets of addresses in turn (a tensor the loop keeps
// into the next step, its loss or its output, moves the others every other step). kPerStep * 4 is
// more than a family's graph cache holds, kPerStep * 2 is not.
int gemm_training() {
  constexpr int kPerStep = 141, kWarmup = 2, kSteps = 120, kLast = 10;
  BlasHandle h;
  h.open();
  Scalar alpha{1.0f}, beta{0.0f};
  Buffer a{0xA0}, b{0xB0};
  std::vector<Buffer> outputs((kWarmup + 2) * kPerStep);
  Gemm g = gemm_of(h.handle, alpha, beta, a, b, outputs[0]);
  Counts counts;
  Snapshot last = Snapshot::now();
  for (int step = 0; step < kSteps; ++step) {
    if (step == kSteps - kLast) last = Snapshot::now();
    const int set = step < kWarmup ? step : kWarmup + step % 2;
    for (int i = 0; i < kPerStep; ++i) {
      g.c = outputs[set * kPerStep + i].get();
      checked(g, counts);
    }
  }
  print("last_calls", kLast * kPerStep);
  print_since(last, "last.");
  print_counts(counts);
  return 0;
}

}  // namespace blas_scenario
