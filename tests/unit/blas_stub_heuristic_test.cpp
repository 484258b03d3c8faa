// The stub's cublasLtMatmulAlgoGetHeuristic: its answer is a hash of every input, so that a cache
// keyed on less than all of them hands out a wrong algo. Each input is changed alone here.
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>

#include "tests/unit/blas_stub_support.h"

using namespace blastest;

namespace {

struct Answer {
  cublasLtMatmulHeuristicResult_t results[4];
  int count = 0;
};

Answer ask(const LtObjects& o, int requested = 3) {
  Answer a;
  REQUIRE(o.heuristic(a.results, &a.count, requested) == CUBLAS_STATUS_SUCCESS);
  return a;
}

bool same_algo(const cublasLtMatmulHeuristicResult_t& x, const cublasLtMatmulHeuristicResult_t& y) {
  return std::memcmp(&x.algo, &y.algo, sizeof x.algo) == 0;
}

// The first result differs from `base`'s in its algo, its workspace and its waves.
void check_differs(const Answer& base, const Answer& now) {
  CHECK_FALSE(same_algo(now.results[0], base.results[0]));
  CHECK(now.results[0].workspaceSize != base.results[0].workspaceSize);
  CHECK(now.results[0].wavesCount != base.results[0].wavesCount);
}

void check_same(const Answer& base, const Answer& now) {
  REQUIRE(now.count == base.count);
  for (int i = 0; i < base.count; ++i) {
    CHECK(same_algo(now.results[i], base.results[i]));
    CHECK(now.results[i].workspaceSize == base.results[i].workspaceSize);
    CHECK(now.results[i].wavesCount == base.results[i].wavesCount);
  }
}

}  // namespace

TEST_CASE("cuBLASLt stub: the heuristic answers min(requested, 3) distinct successful algos, the same each time", "[blas]") {
  LtObjects o;
  const StubBlasLtCounters before = stubblaslt_counters();
  const Answer base = ask(o);
  REQUIRE(base.count == 3);
  for (int i = 0; i < 3; ++i) {
    CHECK(base.results[i].state == CUBLAS_STATUS_SUCCESS);
    CHECK(base.results[i].workspaceSize <= (1u << 20));  // the preference's maximum
    CHECK(base.results[i].wavesCount > 0.0f);
  }
  CHECK_FALSE(same_algo(base.results[0], base.results[1]));  // the index is an input too
  CHECK_FALSE(same_algo(base.results[1], base.results[2]));
  CHECK_FALSE(same_algo(base.results[0], base.results[2]));
  check_same(base, ask(o));
  CHECK(ask(o, 1).count == 1);
  CHECK(ask(o, 7).count == 3);
  Answer a;
  CHECK(o.heuristic(a.results, &a.count, 0) == CUBLAS_STATUS_INVALID_VALUE);
  CHECK(o.heuristic(a.results, &a.count, -1) == CUBLAS_STATUS_INVALID_VALUE);
  CHECK(stubblaslt_counters().heuristic_calls == before.heuristic_calls + 6);

  // The requested count is an input: asking for 4 (still 3 answers) or 1 gives other algos.
  check_differs(base, ask(o, 4));
  check_differs(base, ask(o, 1));
}

TEST_CASE("cuBLASLt stub: the heuristic's algo changes with every attribute of the matmul descriptor", "[blas]") {
  LtObjects o;
  const Answer base = ask(o);
  for (const AttrSpec& spec : kMatmulAttrs) {
    INFO("matmul descriptor attribute " << spec.attribute);
    if (spec.attribute == CUBLASLT_MATMUL_DESC_EMULATION_DESCRIPTOR) continue;  // below
    flip(o.desc, spec);
    check_differs(base, ask(o));
    flip(o.desc, spec);
    check_same(base, ask(o));
  }
  // Another emulation descriptor (with the same values), and each value of the one named.
  cublasLtEmulationDesc_t other = nullptr;
  REQUIRE(cublasLtEmulationDescCreate(&other) == CUBLAS_STATUS_SUCCESS);
  REQUIRE(cublasLtMatmulDescSetAttribute(o.desc, CUBLASLT_MATMUL_DESC_EMULATION_DESCRIPTOR, &other, sizeof other) ==
          CUBLAS_STATUS_SUCCESS);
  check_differs(base, ask(o));
  REQUIRE(cublasLtMatmulDescSetAttribute(o.desc, CUBLASLT_MATMUL_DESC_EMULATION_DESCRIPTOR, &o.emulation,
                                         sizeof o.emulation) == CUBLAS_STATUS_SUCCESS);
  check_same(base, ask(o));
  cublasLtEmulationDescDestroy(other);
  for (const AttrSpec& spec : kEmulationAttrs) {
    INFO("emulation descriptor attribute " << spec.attribute);
    flip(o.emulation, spec);
    check_differs(base, ask(o));
    flip(o.emulation, spec);
    check_same(base, ask(o));
  }
  // A descriptor naming a destroyed emulation descriptor is refused.
  cublasLtEmulationDesc_t gone = nullptr;
  REQUIRE(cublasLtEmulationDescCreate(&gone) == CUBLAS_STATUS_SUCCESS);
  REQUIRE(cublasLtEmulationDescDestroy(gone) == CUBLAS_STATUS_SUCCESS);
  REQUIRE(cublasLtMatmulDescSetAttribute(o.desc, CUBLASLT_MATMUL_DESC_EMULATION_DESCRIPTOR, &gone, sizeof gone) ==
          CUBLAS_STATUS_SUCCESS);
  Answer a;
  CHECK(o.heuristic(a.results, &a.count) == CUBLAS_STATUS_INVALID_VALUE);
}

TEST_CASE("cuBLASLt stub: the heuristic's algo changes with every attribute of each of the four layouts", "[blas]") {
  LtObjects o;
  const Answer base = ask(o);
  for (int layout = 0; layout < 4; ++layout)
    for (const AttrSpec& spec : kLayoutAttrs) {
      INFO("layout " << layout << " attribute " << spec.attribute);
      flip(o.layouts[layout], spec);
      check_differs(base, ask(o));
      flip(o.layouts[layout], spec);
      check_same(base, ask(o));
    }
  // A and B swapped (same attributes, other roles) give another answer too.
  std::swap(o.layouts[0], o.layouts[1]);
  check_differs(base, ask(o));
  std::swap(o.layouts[0], o.layouts[1]);
}

TEST_CASE("cuBLASLt stub: the heuristic's algo changes with every preference attribute", "[blas]") {
  LtObjects o;
  const Answer base = ask(o);
  for (const AttrSpec& spec : kPreferenceAttrs) {
    INFO("preference attribute " << spec.attribute);
    flip(o.preference, spec);
    const Answer now = ask(o);
    CHECK_FALSE(same_algo(now.results[0], base.results[0]));
    CHECK(now.results[0].wavesCount != base.results[0].wavesCount);
    flip(o.preference, spec);
    check_same(base, ask(o));
  }
}

TEST_CASE("cuBLASLt stub: the heuristic refuses what cuBLASLt refuses", "[blas]") {
  LtObjects o;
  Answer a;
  int count = 0;
  CHECK(cublasLtMatmulAlgoGetHeuristic(o.handle, o.desc, o.layouts[0], nullptr, o.layouts[2], o.layouts[3],
                                       o.preference, 1, a.results, &count) == CUBLAS_STATUS_INVALID_VALUE);
  CHECK(cublasLtMatmulAlgoGetHeuristic(o.handle, o.desc, o.layouts[0], o.layouts[1], o.layouts[2], o.layouts[3],
                                       nullptr, 1, a.results, &count) == CUBLAS_STATUS_INVALID_VALUE);
  CHECK(cublasLtMatmulAlgoGetHeuristic(o.handle, nullptr, o.layouts[0], o.layouts[1], o.layouts[2], o.layouts[3],
                                       o.preference, 1, a.results, &count) == CUBLAS_STATUS_INVALID_VALUE);
  CHECK(cublasLtMatmulAlgoGetHeuristic(o.handle, o.desc, o.layouts[0], o.layouts[1], o.layouts[2], o.layouts[3],
                                       o.preference, 1, nullptr, &count) == CUBLAS_STATUS_INVALID_VALUE);
  CHECK(cublasLtMatmulAlgoGetHeuristic(nullptr, o.desc, o.layouts[0], o.layouts[1], o.layouts[2], o.layouts[3],
                                       o.preference, 1, a.results, &count) == CUBLAS_STATUS_NOT_INITIALIZED);
  // Descriptors made by Init_internal in the caller's memory work as well as created ones.
  cublasLtMatmulPreferenceOpaque_t memory;
  REQUIRE(cublasLtMatmulPreferenceInit_internal(&memory, sizeof memory) == CUBLAS_STATUS_SUCCESS);
  CHECK(cublasLtMatmulAlgoGetHeuristic(o.handle, o.desc, o.layouts[0], o.layouts[1], o.layouts[2], o.layouts[3],
                                       &memory, 1, a.results, &count) == CUBLAS_STATUS_SUCCESS);
  CHECK(count == 1);
}
