// The stub's cublasLtMatmul: D's digest changes when any single thing that decides the GPU's work
// does (each attribute, each pointer, the algo, alpha and beta as each pointer mode reads them,
// the inputs' first bytes), and a captured matmul writes at each launch what it read at capture.
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>

#include "tests/unit/blas_stub_support.h"

using namespace blastest;

namespace {

// An LtObjects with buffers, scalars, an algo from the heuristic and a workspace.
struct Matmul : LtObjects {
  std::uint64_t a[2] = {0xA0, 0xA1}, b[2] = {0xB0, 0xB1}, c[2] = {0xC0, 0xC1}, d[2] = {0, 0};
  Scalar alpha{1.5f}, beta{0.25f};
  cublasLtMatmulAlgo_t algo{};
  alignas(256) unsigned char workspace[512] = {};

  Matmul() {
    cublasLtMatmulHeuristicResult_t results[4];
    int count = 0;
    REQUIRE(heuristic(results, &count) == CUBLAS_STATUS_SUCCESS);
    algo = results[0].algo;
  }
  MatmulCall call() {
    return {handle, desc, &alpha, a, layouts[0], b, layouts[1], &beta, c, layouts[2], d, layouts[3], &algo,
            workspace, sizeof workspace, nullptr};
  }
  void set_mode(cublasLtPointerMode_t mode) {
    const std::int32_t m = mode;
    REQUIRE(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_POINTER_MODE, &m, sizeof m) ==
            CUBLAS_STATUS_SUCCESS);
  }
  void set_scale_type(cudaDataType_t type) {
    const std::int32_t t = type;
    REQUIRE(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_SCALE_TYPE, &t, sizeof t) ==
            CUBLAS_STATUS_SUCCESS);
  }
};

// D with `change` applied to a copy of the call, which must differ from (or equal) `base`.
template <typename F>
void check_changes(const MatmulCall& call, std::uint64_t base, F change, bool changes = true) {
  MatmulCall changed = call;
  change(changed);
  if (changes)
    CHECK(changed.run() != base);
  else
    CHECK(changed.run() == base);
}

// Flips byte `index` of a scalar's storage, runs, flips it back: whether D changed.
bool byte_matters(Matmul& s, Scalar& scalar, int index) {
  const MatmulCall call = s.call();
  const std::uint64_t base = call.run();
  scalar.bytes[index] ^= 0x40;
  const std::uint64_t changed = call.run();
  scalar.bytes[index] ^= 0x40;
  REQUIRE(call.run() == base);
  return changed != base;
}

}  // namespace

TEST_CASE("cuBLASLt stub: a matmul's D changes with every attribute of its descriptor and of each layout", "[blas]") {
  Matmul s;
  const MatmulCall call = s.call();
  const std::uint64_t base = call.run();
  CHECK(base != 0xdead);
  CHECK(call.run() == base);
  for (const AttrSpec& spec : kMatmulAttrs) {
    INFO("matmul descriptor attribute " << spec.attribute);
    if (spec.attribute == CUBLASLT_MATMUL_DESC_EMULATION_DESCRIPTOR) continue;  // names a live one, below
    flip(s.desc, spec);
    CHECK(call.run() != base);
    flip(s.desc, spec);
    CHECK(call.run() == base);
  }
  for (const AttrSpec& spec : kEmulationAttrs) {
    INFO("emulation descriptor attribute " << spec.attribute);
    flip(s.emulation, spec);
    CHECK(call.run() != base);
    flip(s.emulation, spec);
    CHECK(call.run() == base);
  }
  const cublasLtEmulationDesc_t none = nullptr;
  REQUIRE(cublasLtMatmulDescSetAttribute(s.desc, CUBLASLT_MATMUL_DESC_EMULATION_DESCRIPTOR, &none, sizeof none) ==
          CUBLAS_STATUS_SUCCESS);
  CHECK(call.run() != base);
  REQUIRE(cublasLtMatmulDescSetAttribute(s.desc, CUBLASLT_MATMUL_DESC_EMULATION_DESCRIPTOR, &s.emulation,
                                         sizeof s.emulation) == CUBLAS_STATUS_SUCCESS);
  for (int layout = 0; layout < 4; ++layout)
    for (const AttrSpec& spec : kLayoutAttrs) {
      INFO("layout " << layout << " attribute " << spec.attribute);
      flip(s.layouts[layout], spec);
      CHECK(call.run() != base);
      flip(s.layouts[layout], spec);
      CHECK(call.run() == base);
    }
  // The preference is not the matmul's: it changes nothing.
  for (const AttrSpec& spec : kPreferenceAttrs) flip(s.preference, spec);
  CHECK(call.run() == base);
}

TEST_CASE("cuBLASLt stub: a matmul's D changes with every pointer, the algo, the workspace and the handle", "[blas]") {
  Matmul s;
  const MatmulCall call = s.call();
  const std::uint64_t base = call.run();
  std::uint64_t a2[2] = {0xA0, 0xA1}, b2[2] = {0xB0, 0xB1}, c2[2] = {0xC0, 0xC1}, d2[2] = {};
  check_changes(call, base, [&](MatmulCall& m) { m.a = a2; });  // same contents, another pointer
  check_changes(call, base, [&](MatmulCall& m) { m.b = b2; });
  check_changes(call, base, [&](MatmulCall& m) { m.c = c2; });
  check_changes(call, base, [&](MatmulCall& m) { m.c = nullptr; });
  check_changes(call, base, [&](MatmulCall& m) { m.d = d2; });
  check_changes(call, base, [&](MatmulCall& m) { m.workspace = s.workspace + 256; });
  check_changes(call, base, [&](MatmulCall& m) { m.workspace_size = 256; });
  check_changes(call, base, [&](MatmulCall& m) { m.algo = nullptr; });
  for (int word = 0; word < 8; ++word) {
    INFO("algo word " << word);
    cublasLtMatmulAlgo_t other = s.algo;
    other.data[word] ^= 1;
    check_changes(call, base, [&](MatmulCall& m) { m.algo = &other; });
  }
  cublasLtHandle_t other_handle = nullptr;
  REQUIRE(cublasLtCreate(&other_handle) == CUBLAS_STATUS_SUCCESS);
  check_changes(call, base, [&](MatmulCall& m) { m.handle = other_handle; });
  cublasLtDestroy(other_handle);
  cublasHandle_t blas = nullptr;
  REQUIRE(cublasCreate_v2(&blas) == CUBLAS_STATUS_SUCCESS);
  check_changes(call, base, [&](MatmulCall& m) { m.handle = reinterpret_cast<cublasLtHandle_t>(blas); });
  cublasDestroy_v2(blas);
  // The stream decides where, not what: a shim may capture on a stream of its own.
  Capture elsewhere;
  check_changes(call, base, [&](MatmulCall& m) { m.stream = elsewhere.runtime_stream(); }, false);
  CHECK(stubblaslt_thread_last_matmul_stream() == elsewhere.runtime_stream());

  // The first 8 bytes of A, B and C are read when the matmul runs; nothing after them.
  for (std::uint64_t* input : {s.a, s.b, s.c}) {
    input[0] ^= 1;
    CHECK(call.run() != base);
    input[0] ^= 1;
    input[1] ^= 1;
    CHECK(call.run() == base);
    input[1] ^= 1;
  }
  const StubLtMatmulRun last = stubblaslt_thread_last_matmul();
  CHECK(last.valid == 1);
  CHECK(last.replayed == 0);
  CHECK(last.digest == base);
  CHECK(last.blob.a == s.a);
  CHECK(last.blob.d == s.d);
  CHECK(std::memcmp(&last.blob.algo, &s.algo, sizeof s.algo) == 0);
}

TEST_CASE("cuBLASLt stub: alpha and beta are read as each pointer mode says, sized by the scale type", "[blas]") {
  Matmul s;
  Scalar alpha2{1.5f}, beta2{0.25f};  // the same values elsewhere
  SECTION("host: their bytes, as many as the scale type has") {
    const MatmulCall call = s.call();
    const std::uint64_t base = call.run();
    check_changes(call, base, [&](MatmulCall& m) { m.alpha = &alpha2; m.beta = &beta2; }, false);
    const struct { cudaDataType_t type; int size; } types[] = {
        {CUDA_R_32F, 4}, {CUDA_R_64F, 8}, {CUDA_R_16F, 2}, {CUDA_R_16BF, 2}, {CUDA_R_32I, 4}, {CUDA_R_8I, 1},
        {CUDA_C_32F, 8}, {CUDA_C_64F, 16}};
    for (const auto& t : types) {
      INFO("scale type " << t.type);
      s.set_scale_type(t.type);
      CHECK(byte_matters(s, s.alpha, t.size - 1));
      CHECK(byte_matters(s, s.beta, t.size - 1));
      if (t.size < 16) CHECK_FALSE(byte_matters(s, s.alpha, t.size));
      if (t.size < 16) CHECK_FALSE(byte_matters(s, s.beta, t.size));
    }
    s.set_scale_type(CUDA_R_4F_E2M1);  // no scalar has that type
    CHECK(s.call().call() == CUBLAS_STATUS_NOT_SUPPORTED);
  }
  SECTION("device and device vector: their pointers, and 8 bytes read at each run") {
    for (cublasLtPointerMode_t mode : {CUBLASLT_POINTER_MODE_DEVICE, CUBLASLT_POINTER_MODE_DEVICE_VECTOR}) {
      INFO("pointer mode " << mode);
      s.set_mode(mode);
      const MatmulCall call = s.call();
      const std::uint64_t base = call.run();
      check_changes(call, base, [&](MatmulCall& m) { m.alpha = &alpha2; });
      check_changes(call, base, [&](MatmulCall& m) { m.beta = &beta2; });
      s.set_scale_type(CUDA_R_16F);  // 2 bytes of scale type, yet 8 bytes read from the pointer
      CHECK(byte_matters(s, s.alpha, 7));
      CHECK(byte_matters(s, s.beta, 7));
      CHECK_FALSE(byte_matters(s, s.alpha, 8));
      CHECK_FALSE(byte_matters(s, s.beta, 8));
      s.set_scale_type(CUDA_R_32F);
    }
  }
  SECTION("alpha device vector, beta zero: alpha's pointer, beta not read at all") {
    s.set_mode(CUBLASLT_POINTER_MODE_ALPHA_DEVICE_VECTOR_BETA_ZERO);
    const MatmulCall call = s.call();
    const std::uint64_t base = call.run();
    check_changes(call, base, [&](MatmulCall& m) { m.alpha = &alpha2; });
    check_changes(call, base, [&](MatmulCall& m) { m.beta = &beta2; }, false);
    check_changes(call, base, [&](MatmulCall& m) { m.beta = nullptr; }, false);
    CHECK(byte_matters(s, s.alpha, 0));
    CHECK_FALSE(byte_matters(s, s.beta, 0));
  }
  SECTION("alpha device vector, beta host: alpha's pointer, beta's bytes") {
    s.set_mode(CUBLASLT_POINTER_MODE_ALPHA_DEVICE_VECTOR_BETA_HOST);
    const MatmulCall call = s.call();
    const std::uint64_t base = call.run();
    check_changes(call, base, [&](MatmulCall& m) { m.alpha = &alpha2; });
    check_changes(call, base, [&](MatmulCall& m) { m.beta = &beta2; }, false);
    CHECK(byte_matters(s, s.alpha, 0));
    CHECK(byte_matters(s, s.beta, 0));
    CHECK(byte_matters(s, s.alpha, 7));
    CHECK_FALSE(byte_matters(s, s.beta, 4));
  }
  SECTION("an unknown mode is refused") {
    s.set_mode(static_cast<cublasLtPointerMode_t>(5));
    CHECK(s.call().call() == CUBLAS_STATUS_INVALID_VALUE);
  }
}

TEST_CASE("cuBLASLt stub: a matmul refuses what cuBLASLt refuses, and counts every call", "[blas]") {
  Matmul s;
  const MatmulCall call = s.call();
  const StubBlasLtCounters before = stubblaslt_counters();
  auto refused = [&](auto change, cublasStatus_t status) {
    MatmulCall m = call;
    change(m);
    CHECK(m.call() == status);
  };
  refused([](MatmulCall& m) { m.a = nullptr; }, CUBLAS_STATUS_INVALID_VALUE);
  refused([](MatmulCall& m) { m.b = nullptr; }, CUBLAS_STATUS_INVALID_VALUE);
  refused([](MatmulCall& m) { m.d = nullptr; }, CUBLAS_STATUS_INVALID_VALUE);
  refused([](MatmulCall& m) { m.alpha = nullptr; }, CUBLAS_STATUS_INVALID_VALUE);
  refused([](MatmulCall& m) { m.c_desc = nullptr; }, CUBLAS_STATUS_INVALID_VALUE);
  refused([](MatmulCall& m) { m.desc = nullptr; }, CUBLAS_STATUS_INVALID_VALUE);
  refused([](MatmulCall& m) { m.handle = nullptr; }, CUBLAS_STATUS_NOT_INITIALIZED);
  cublasLtMatrixLayout_t gone = nullptr;
  REQUIRE(cublasLtMatrixLayoutCreate(&gone, CUDA_R_32F, 1, 1, 1) == CUBLAS_STATUS_SUCCESS);
  REQUIRE(cublasLtMatrixLayoutDestroy(gone) == CUBLAS_STATUS_SUCCESS);
  refused([&](MatmulCall& m) { m.b_desc = gone; }, CUBLAS_STATUS_INVALID_VALUE);
  const StubBlasLtCounters after = stubblaslt_counters();
  CHECK(after.matmul_calls == before.matmul_calls + 8);
  CHECK(after.matmul_direct == before.matmul_direct);
  CHECK(call.run() != 0xdead);
  CHECK(stubblaslt_counters().matmul_direct == before.matmul_direct + 1);
}

TEST_CASE("cuBLASLt stub: a captured matmul writes at each launch the digest of what it read at the capture", "[blas]") {
  Matmul s;
  Capture capture;
  MatmulCall call = s.call();
  call.stream = capture.runtime_stream();
  const StubBlasLtCounters before = stubblaslt_counters();
  capture.begin();
  const std::uint64_t poison = 0xdead;
  std::memcpy(s.d, &poison, sizeof poison);
  REQUIRE(call.call() == CUBLAS_STATUS_SUCCESS);
  CHECK(call.output() == 0xdead);  // recorded, not run
  CHECK(stubblaslt_thread_last_matmul_stream() == capture.runtime_stream());
  capture.end();
  StubBlasLtCounters now = stubblaslt_counters();
  CHECK(now.matmul_calls == before.matmul_calls + 1);
  CHECK(now.matmul_captured == before.matmul_captured + 1);
  CHECK(now.matmul_direct == before.matmul_direct);

  // Everything read at the call changes after it: the launch must not see any of it.
  const AttrSpec transa{CUBLASLT_MATMUL_DESC_TRANSA, 4}, rows{CUBLASLT_MATRIX_LAYOUT_ROWS, 8};
  auto mutate = [&] {
    s.alpha.bytes[0] ^= 1;
    s.beta.bytes[1] ^= 1;
    s.algo.data[3] ^= 1;
    flip(s.desc, transa);
    flip(s.layouts[2], rows);
  };
  mutate();
  capture.launch();
  const std::uint64_t launched = call.output();
  now = stubblaslt_counters();
  CHECK(now.matmul_replays == before.matmul_replays + 1);
  const StubLtMatmulRun last = stubblaslt_thread_last_matmul();
  CHECK(last.replayed == 1);
  CHECK(last.digest == launched);
  CHECK(call.reference() != launched);  // with the changed state: another digest
  mutate();                              // back to the state at capture
  CHECK(call.reference() == launched);

  // What a run reads from memory is read at each launch.
  s.a[0] ^= 1;
  capture.launch();
  const std::uint64_t relaunched = call.output();
  CHECK(relaunched != launched);
  CHECK(call.reference() == relaunched);
  CHECK(stubblaslt_counters().matmul_replays == before.matmul_replays + 2);
}
