// The stub libcublas.so.13: the handle's setters and getters, and the four GEMMs, whose C changes
// when any single argument or piece of the handle's state does; SetStream bringing back the
// default workspace pool; captures (and the allocation the real cuBLAS would make in one).
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>

#include "tests/unit/blas_stub_support.h"

using namespace blastest;

namespace {

struct Gemm {
  cublasHandle_t handle = nullptr;
  std::uint64_t a[2] = {0xA0, 0xA1}, b[2] = {0xB0, 0xB1}, c[2] = {0xC0, 0xC1};
  Scalar alpha{1.5f}, beta{0.5f};
  alignas(256) unsigned char workspace[1024] = {};

  Gemm() { REQUIRE(cublasCreate_v2(&handle) == CUBLAS_STATUS_SUCCESS); }
  ~Gemm() { cublasDestroy_v2(handle); }
  Gemm(const Gemm&) = delete;
  Gemm& operator=(const Gemm&) = delete;

  GemmCall call(StubBlasGemmEntry entry = STUBBLAS_GEMM_EX) {
    return {handle, entry, CUBLAS_OP_N, CUBLAS_OP_T, 64, 32, 16, &alpha, a, CUDA_R_16F, 64, 1024, b, CUDA_R_16F, 32,
            512, &beta, c, CUDA_R_32F, 64, 2048, 4, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT};
  }
};

template <typename F>
void check_changes(const GemmCall& call, std::uint64_t base, F change, bool changes = true) {
  GemmCall changed = call;
  change(changed);
  if (changes)
    CHECK(changed.run() != base);
  else
    CHECK(changed.run() == base);
  CHECK(call.run() == base);
}

// Whether flipping byte `index` of `scalar` changes C.
bool byte_matters(const GemmCall& call, Scalar& scalar, int index) {
  const std::uint64_t base = call.run();
  scalar.bytes[index] ^= 0x40;
  const std::uint64_t changed = call.run();
  scalar.bytes[index] ^= 0x40;
  return changed != base;
}

const StubBlasGemmEntry kEntries[] = {STUBBLAS_GEMM_EX, STUBBLAS_GEMM_EX_64, STUBBLAS_GEMM_STRIDED_BATCHED_EX,
                                      STUBBLAS_GEMM_STRIDED_BATCHED_EX_64};

}  // namespace

TEST_CASE("cuBLAS stub: a GEMM's C changes with each of its arguments, through each entry point", "[blas]") {
  Gemm s;
  for (StubBlasGemmEntry entry : kEntries) {
    INFO("entry point " << entry);
    const GemmCall call = s.call(entry);
    const std::uint64_t base = call.run();
    CHECK(base != 0x0C0C0C0C);
    CHECK(call.run() == base);
    std::uint64_t a2[2] = {0xA0, 0xA1}, b2[2] = {0xB0, 0xB1}, c2[2] = {};
    Scalar alpha2{1.5f}, beta2{0.5f};
    check_changes(call, base, [](GemmCall& g) { g.transa = CUBLAS_OP_T; });
    check_changes(call, base, [](GemmCall& g) { g.transb = CUBLAS_OP_N; });
    check_changes(call, base, [](GemmCall& g) { g.m = 65; });
    check_changes(call, base, [](GemmCall& g) { g.n = 33; });
    check_changes(call, base, [](GemmCall& g) { g.k = 17; });
    check_changes(call, base, [&](GemmCall& g) { g.a = a2; });
    check_changes(call, base, [](GemmCall& g) { g.a_type = CUDA_R_16BF; });
    check_changes(call, base, [](GemmCall& g) { g.lda = 65; });
    check_changes(call, base, [&](GemmCall& g) { g.b = b2; });
    check_changes(call, base, [](GemmCall& g) { g.b_type = CUDA_R_16BF; });
    check_changes(call, base, [](GemmCall& g) { g.ldb = 33; });
    check_changes(call, base, [&](GemmCall& g) { g.c = c2; });
    check_changes(call, base, [](GemmCall& g) { g.c_type = CUDA_R_16F; });
    check_changes(call, base, [](GemmCall& g) { g.ldc = 65; });
    check_changes(call, base, [](GemmCall& g) { g.compute_type = CUBLAS_COMPUTE_32F_FAST_TF32; });
    check_changes(call, base, [](GemmCall& g) { g.algo = CUBLAS_GEMM_DEFAULT_TENSOR_OP; });
    check_changes(call, base, [](GemmCall& g) { g.algo = CUBLAS_GEMM_ALGO3; });
    check_changes(call, base, [&](GemmCall& g) { g.alpha = &alpha2; }, false);  // host mode: the bytes only
    check_changes(call, base, [&](GemmCall& g) { g.beta = &beta2; }, false);
    CHECK(byte_matters(call, s.alpha, 0));
    CHECK(byte_matters(call, s.beta, 3));
    const bool strided = entry == STUBBLAS_GEMM_STRIDED_BATCHED_EX || entry == STUBBLAS_GEMM_STRIDED_BATCHED_EX_64;
    check_changes(call, base, [](GemmCall& g) { g.stride_a = 1025; }, strided);
    check_changes(call, base, [](GemmCall& g) { g.stride_b = 513; }, strided);
    check_changes(call, base, [](GemmCall& g) { g.stride_c = 2049; }, strided);
    check_changes(call, base, [](GemmCall& g) { g.batch_count = 5; }, strided);
    // A, B and C: their first 8 bytes, read when the GEMM runs (C before it is overwritten).
    for (std::uint64_t* input : {s.a, s.b}) {
      input[0] ^= 1;
      CHECK(call.run() != base);
      input[0] ^= 1;
      input[1] ^= 1;
      CHECK(call.run() == base);
      input[1] ^= 1;
    }
    CHECK(call.run(0x0C0C0C0D) != base);
    // The entry point is part of what was called.
    CHECK(GemmCall(s.call(entry == STUBBLAS_GEMM_EX ? STUBBLAS_GEMM_EX_64 : STUBBLAS_GEMM_EX)).run() != base);
  }
  const StubBlasGemmRun last = stubblas_thread_last_gemm();
  CHECK(last.valid == 1);
  CHECK(last.replayed == 0);
  CHECK(last.blob.handle_serial == stubblas_handle_serial(s.handle));
}

TEST_CASE("cuBLAS stub: a GEMM's C changes with each piece of the handle's state", "[blas]") {
  Gemm s;
  const GemmCall call = s.call(STUBBLAS_GEMM_STRIDED_BATCHED_EX);
  const std::uint64_t base = call.run();
  int bits = 0;
  auto varies = [&](auto set, auto value, auto back) {
    REQUIRE(set(s.handle, value) == CUBLAS_STATUS_SUCCESS);
    CHECK(call.run() != base);
    REQUIRE(set(s.handle, back) == CUBLAS_STATUS_SUCCESS);
    CHECK(call.run() == base);
  };
  varies(cublasSetPointerMode_v2, CUBLAS_POINTER_MODE_DEVICE, CUBLAS_POINTER_MODE_HOST);
  varies(cublasSetMathMode, CUBLAS_TF32_TENSOR_OP_MATH, CUBLAS_DEFAULT_MATH);
  varies(cublasSetMathMode, CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION, CUBLAS_DEFAULT_MATH);
  varies(cublasSetAtomicsMode, CUBLAS_ATOMICS_ALLOWED, CUBLAS_ATOMICS_NOT_ALLOWED);
  varies(cublasSetSmCountTarget, 10, 0);
  auto strategy = [](cublasHandle_t h, cublasEmulationStrategy_t v) { return cublasSetEmulationStrategy(h, v); };
  varies(strategy, CUBLAS_EMULATION_STRATEGY_EAGER, CUBLAS_EMULATION_STRATEGY_DEFAULT);
  varies(cublasSetEmulationSpecialValuesSupport, CUDA_EMULATION_SPECIAL_VALUES_SUPPORT_NONE,
         CUDA_EMULATION_SPECIAL_VALUES_SUPPORT_DEFAULT);
  varies(cublasSetFixedPointEmulationMantissaControl, CUDA_EMULATION_MANTISSA_CONTROL_FIXED,
         CUDA_EMULATION_MANTISSA_CONTROL_DYNAMIC);
  varies(cublasSetFixedPointEmulationMaxMantissaBitCount, 40, 0);
  varies(cublasSetFixedPointEmulationMantissaBitOffset, -3, 0);
  varies(cublasSetFixedPointEmulationMantissaBitCountPointer, &bits, static_cast<int*>(nullptr));
  // A user workspace: its pointer and size; a SetStream brings the default pool back.
  REQUIRE(cublasSetWorkspace_v2(s.handle, s.workspace, 1024) == CUBLAS_STATUS_SUCCESS);
  const std::uint64_t with_workspace = call.run();
  CHECK(with_workspace != base);
  REQUIRE(cublasSetWorkspace_v2(s.handle, s.workspace, 512) == CUBLAS_STATUS_SUCCESS);
  CHECK(call.run() != with_workspace);
  REQUIRE(cublasSetWorkspace_v2(s.handle, s.workspace + 256, 1024) == CUBLAS_STATUS_SUCCESS);
  CHECK(call.run() != with_workspace);
  REQUIRE(cublasSetWorkspace_v2(s.handle, nullptr, 0) == CUBLAS_STATUS_SUCCESS);  // no workspace at all
  CHECK(call.run() != base);
  REQUIRE(cublasSetStream_v2(s.handle, nullptr) == CUBLAS_STATUS_SUCCESS);
  CHECK(call.run() == base);
  // The stream decides where, not what.
  Capture elsewhere;
  REQUIRE(cublasSetStream_v2(s.handle, elsewhere.runtime_stream()) == CUBLAS_STATUS_SUCCESS);
  CHECK(call.run() == base);
  CHECK(stubblas_thread_last_gemm_stream() == elsewhere.runtime_stream());
}

TEST_CASE("cuBLAS stub: alpha and beta are read as the pointer mode and the compute type say", "[blas]") {
  Gemm s;
  GemmCall call = s.call();
  const struct { cublasComputeType_t compute; int size; } types[] = {
      {CUBLAS_COMPUTE_32F, 4}, {CUBLAS_COMPUTE_32F_PEDANTIC, 4}, {CUBLAS_COMPUTE_32F_FAST_16F, 4},
      {CUBLAS_COMPUTE_32F_FAST_16BF, 4}, {CUBLAS_COMPUTE_32F_FAST_TF32, 4}, {CUBLAS_COMPUTE_32F_EMULATED_16BFX9, 4},
      {CUBLAS_COMPUTE_64F, 8}, {CUBLAS_COMPUTE_64F_PEDANTIC, 8}, {CUBLAS_COMPUTE_64F_EMULATED_FIXEDPOINT, 8},
      {CUBLAS_COMPUTE_16F, 2}, {CUBLAS_COMPUTE_16F_PEDANTIC, 2}, {CUBLAS_COMPUTE_32I, 4},
      {CUBLAS_COMPUTE_32I_PEDANTIC, 4}};
  for (const auto& t : types) {
    INFO("compute type " << t.compute);
    call.compute_type = t.compute;
    CHECK(byte_matters(call, s.alpha, t.size - 1));
    CHECK(byte_matters(call, s.beta, t.size - 1));
    CHECK_FALSE(byte_matters(call, s.alpha, t.size));
    CHECK_FALSE(byte_matters(call, s.beta, t.size));
  }
  call.compute_type = CUBLAS_COMPUTE_32F;
  call.c_type = CUDA_C_32F;  // a complex C: complex scalars, twice the bytes
  CHECK(byte_matters(call, s.alpha, 7));
  CHECK_FALSE(byte_matters(call, s.alpha, 8));
  call.c_type = CUDA_R_32F;
  call.compute_type = static_cast<cublasComputeType_t>(99);
  CHECK(call.call() == CUBLAS_STATUS_INVALID_VALUE);
  call.compute_type = CUBLAS_COMPUTE_16F;

  REQUIRE(cublasSetPointerMode_v2(s.handle, CUBLAS_POINTER_MODE_DEVICE) == CUBLAS_STATUS_SUCCESS);
  const std::uint64_t base = call.run();
  Scalar alpha2{1.5f}, beta2{0.5f};
  check_changes(call, base, [&](GemmCall& g) { g.alpha = &alpha2; });
  check_changes(call, base, [&](GemmCall& g) { g.beta = &beta2; });
  CHECK(byte_matters(call, s.alpha, 7));  // 8 bytes read at run time, whatever the type
  CHECK(byte_matters(call, s.beta, 7));
  CHECK_FALSE(byte_matters(call, s.alpha, 8));
  const StubBlasGemmRun last = stubblas_thread_last_gemm();
  CHECK(last.blob.alpha.kind == STUBBLAS_SCALAR_DEVICE);
  CHECK(last.blob.alpha.pointer == &s.alpha);
}

TEST_CASE("cuBLAS stub: the handle's setters and getters, the defaults of a new handle, address reuse", "[blas]") {
  const StubBlasCounters before = stubblas_counters();
  Gemm s;
  const cublasHandle_t h = s.handle;
  cudaStream_t stream = reinterpret_cast<cudaStream_t>(1);
  cublasPointerMode_t pointer = CUBLAS_POINTER_MODE_DEVICE;
  cublasMath_t math = CUBLAS_TENSOR_OP_MATH;
  cublasAtomicsMode_t atomics = CUBLAS_ATOMICS_ALLOWED;
  cublasEmulationStrategy_t strategy = CUBLAS_EMULATION_STRATEGY_EAGER;
  cudaEmulationSpecialValuesSupport special = CUDA_EMULATION_SPECIAL_VALUES_SUPPORT_NONE;
  cudaEmulationMantissaControl control = CUDA_EMULATION_MANTISSA_CONTROL_FIXED;
  int sm = 1, max_bits = 1, offset = 1, bits = 0;
  int* bits_pointer = &bits;
  CHECK(cublasGetStream_v2(h, &stream) == CUBLAS_STATUS_SUCCESS);
  CHECK(stream == nullptr);
  CHECK((cublasGetPointerMode_v2(h, &pointer) == CUBLAS_STATUS_SUCCESS && pointer == CUBLAS_POINTER_MODE_HOST));
  CHECK((cublasGetMathMode(h, &math) == CUBLAS_STATUS_SUCCESS && math == CUBLAS_DEFAULT_MATH));
  CHECK((cublasGetAtomicsMode(h, &atomics) == CUBLAS_STATUS_SUCCESS && atomics == CUBLAS_ATOMICS_NOT_ALLOWED));
  CHECK((cublasGetSmCountTarget(h, &sm) == CUBLAS_STATUS_SUCCESS && sm == 0));
  CHECK((cublasGetEmulationStrategy(h, &strategy) == CUBLAS_STATUS_SUCCESS &&
         strategy == CUBLAS_EMULATION_STRATEGY_DEFAULT));
  CHECK((cublasGetEmulationSpecialValuesSupport(h, &special) == CUBLAS_STATUS_SUCCESS &&
         special == CUDA_EMULATION_SPECIAL_VALUES_SUPPORT_DEFAULT));
  CHECK((cublasGetFixedPointEmulationMantissaControl(h, &control) == CUBLAS_STATUS_SUCCESS &&
         control == CUDA_EMULATION_MANTISSA_CONTROL_DYNAMIC));
  CHECK((cublasGetFixedPointEmulationMaxMantissaBitCount(h, &max_bits) == CUBLAS_STATUS_SUCCESS && max_bits == 0));
  CHECK((cublasGetFixedPointEmulationMantissaBitOffset(h, &offset) == CUBLAS_STATUS_SUCCESS && offset == 0));
  CHECK((cublasGetFixedPointEmulationMantissaBitCountPointer(h, &bits_pointer) == CUBLAS_STATUS_SUCCESS &&
         bits_pointer == nullptr));

  CHECK(cublasSetSmCountTarget(h, 20) == CUBLAS_STATUS_SUCCESS);
  CHECK((cublasGetSmCountTarget(h, &sm) == CUBLAS_STATUS_SUCCESS && sm == 20));
  CHECK(cublasSetFixedPointEmulationMantissaBitCountPointer(h, &bits) == CUBLAS_STATUS_SUCCESS);
  CHECK((cublasGetFixedPointEmulationMantissaBitCountPointer(h, &bits_pointer) == CUBLAS_STATUS_SUCCESS &&
         bits_pointer == &bits));
  CHECK(cublasSetFixedPointEmulationMantissaBitOffset(h, -7) == CUBLAS_STATUS_SUCCESS);
  CHECK((cublasGetFixedPointEmulationMantissaBitOffset(h, &offset) == CUBLAS_STATUS_SUCCESS && offset == -7));
  // What the real cuBLAS refuses.
  CHECK(cublasSetPointerMode_v2(h, static_cast<cublasPointerMode_t>(2)) == CUBLAS_STATUS_INVALID_VALUE);
  CHECK(cublasSetAtomicsMode(h, static_cast<cublasAtomicsMode_t>(2)) == CUBLAS_STATUS_INVALID_VALUE);
  CHECK(cublasSetMathMode(h, static_cast<cublasMath_t>(5)) == CUBLAS_STATUS_INVALID_VALUE);
  CHECK(cublasSetSmCountTarget(h, -1) == CUBLAS_STATUS_INVALID_VALUE);
  CHECK(cublasSetEmulationStrategy(h, static_cast<cublasEmulationStrategy_t>(3)) == CUBLAS_STATUS_INVALID_VALUE);
  CHECK(cublasSetFixedPointEmulationMantissaControl(h, static_cast<cudaEmulationMantissaControl>(2)) ==
        CUBLAS_STATUS_INVALID_VALUE);
  CHECK(cublasSetFixedPointEmulationMaxMantissaBitCount(h, -1) == CUBLAS_STATUS_INVALID_VALUE);
  CHECK(cublasSetWorkspace_v2(h, s.workspace + 8, 64) == CUBLAS_STATUS_INVALID_VALUE);  // not 256-aligned
  CHECK(cublasGetMathMode(h, nullptr) == CUBLAS_STATUS_INVALID_VALUE);
  CHECK(cublasGetStream_v2(h, nullptr) == CUBLAS_STATUS_INVALID_VALUE);

  cublasHandle_t second = nullptr, reused = nullptr;
  REQUIRE(cublasCreate_v2(&second) == CUBLAS_STATUS_SUCCESS);
  const std::uint64_t serial = stubblas_handle_serial(second);
  CHECK(serial != stubblas_handle_serial(h));
  CHECK(stubblas_counters().live_handles == before.live_handles + 2);
  REQUIRE(cublasDestroy_v2(second) == CUBLAS_STATUS_SUCCESS);
  CHECK(cublasDestroy_v2(second) == CUBLAS_STATUS_NOT_INITIALIZED);
  CHECK(cublasSetStream_v2(second, nullptr) == CUBLAS_STATUS_NOT_INITIALIZED);
  CHECK(cublasGetMathMode(second, &math) == CUBLAS_STATUS_NOT_INITIALIZED);
  CHECK(GemmCall{s.call()}.call() == CUBLAS_STATUS_SUCCESS);
  GemmCall gone = s.call();
  gone.handle = second;
  CHECK(gone.call() == CUBLAS_STATUS_NOT_INITIALIZED);
  REQUIRE(cublasCreate_v2(&reused) == CUBLAS_STATUS_SUCCESS);
  CHECK(reused == second);
  CHECK(stubblas_handle_serial(reused) > serial);
  CHECK((cublasGetSmCountTarget(reused, &sm) == CUBLAS_STATUS_SUCCESS && sm == 0));  // a fresh state
  cublasDestroy_v2(reused);
  const StubBlasCounters after = stubblas_counters();
  CHECK(after.handles_created == before.handles_created + 3);
  CHECK(after.handles_destroyed == before.handles_destroyed + 2);
}

TEST_CASE("cuBLAS stub: SetStream brings back the default workspace pool, which a capture would allocate from", "[blas]") {
  Gemm s;
  Capture capture;
  const GemmCall call = s.call(STUBBLAS_GEMM_EX_64);
  REQUIRE(cublasSetWorkspace_v2(s.handle, s.workspace, sizeof s.workspace) == CUBLAS_STATUS_SUCCESS);
  call.run();
  StubBlasGemmRun last = stubblas_thread_last_gemm();
  CHECK(last.blob.default_pool == 0);
  CHECK(last.blob.workspace == s.workspace);
  CHECK(last.blob.workspace_size == sizeof s.workspace);
  REQUIRE(cublasSetStream_v2(s.handle, capture.runtime_stream()) == CUBLAS_STATUS_SUCCESS);
  call.run();
  last = stubblas_thread_last_gemm();
  CHECK(last.blob.default_pool == 1);
  CHECK(last.blob.workspace == nullptr);
  CHECK(last.blob.workspace_size == 0);

  StubBlasCounters before = stubblas_counters();
  capture.begin();
  REQUIRE(call.call() == CUBLAS_STATUS_SUCCESS);  // no user workspace: cuBLAS allocates in the capture
  capture.end();
  StubBlasCounters now = stubblas_counters();
  CHECK(now.gemm_captured == before.gemm_captured + 1);
  CHECK(now.allocations_in_capture == before.allocations_in_capture + 1);

  Capture second;
  REQUIRE(cublasSetStream_v2(s.handle, second.runtime_stream()) == CUBLAS_STATUS_SUCCESS);
  REQUIRE(cublasSetWorkspace_v2(s.handle, s.workspace, sizeof s.workspace) == CUBLAS_STATUS_SUCCESS);
  before = stubblas_counters();
  second.begin();
  REQUIRE(call.call() == CUBLAS_STATUS_SUCCESS);
  second.end();
  now = stubblas_counters();
  CHECK(now.gemm_captured == before.gemm_captured + 1);
  CHECK(now.allocations_in_capture == before.allocations_in_capture);
}

TEST_CASE("cuBLAS stub: a captured GEMM writes at each launch the digest of what it read at the capture", "[blas]") {
  Gemm s;
  Capture capture;
  const GemmCall call = s.call(STUBBLAS_GEMM_STRIDED_BATCHED_EX_64);
  REQUIRE(cublasSetStream_v2(s.handle, capture.runtime_stream()) == CUBLAS_STATUS_SUCCESS);
  REQUIRE(cublasSetWorkspace_v2(s.handle, s.workspace, 512) == CUBLAS_STATUS_SUCCESS);
  const StubBlasCounters before = stubblas_counters();
  capture.begin();
  s.c[0] = 0x77;
  REQUIRE(call.call() == CUBLAS_STATUS_SUCCESS);
  CHECK(s.c[0] == 0x77);  // recorded, not run
  capture.end();
  CHECK(stubblas_counters().gemm_captured == before.gemm_captured + 1);
  CHECK(stubblas_counters().gemm_direct == before.gemm_direct);

  auto mutate = [&](bool on) {
    s.alpha.bytes[0] ^= 1;
    REQUIRE(cublasSetMathMode(s.handle, on ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH) == CUBLAS_STATUS_SUCCESS);
    REQUIRE(cublasSetAtomicsMode(s.handle, on ? CUBLAS_ATOMICS_ALLOWED : CUBLAS_ATOMICS_NOT_ALLOWED) ==
            CUBLAS_STATUS_SUCCESS);
    REQUIRE(cublasSetWorkspace_v2(s.handle, s.workspace, on ? 256 : 512) == CUBLAS_STATUS_SUCCESS);
  };
  mutate(true);
  s.c[0] = 0x99;
  capture.launch();
  const std::uint64_t launched = s.c[0];
  CHECK(launched != 0x99);
  CHECK(stubblas_counters().gemm_replays == before.gemm_replays + 1);
  CHECK(stubblas_thread_last_gemm().replayed == 1);
  CHECK(stubblas_thread_last_gemm().digest == launched);
  CHECK(call.reference(0x99) != launched);  // the changed state gives another digest
  mutate(false);
  CHECK(call.reference(0x99) == launched);
  // C, A and B are read at each launch.
  s.c[0] = 0x98;
  capture.launch();
  CHECK(s.c[0] != launched);
  CHECK(s.c[0] == call.reference(0x98));
}
