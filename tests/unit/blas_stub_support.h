// What the tests of the cuBLAS and cuBLASLt stubs share: the attribute sizes and the matmul's and
// GEMM's arguments of tests/support/blas_arguments.h, made through the linked stubs, and a capture
// with the stub driver.
#pragma once

#include <cublasLt.h>
#include <cublas_api.h>

#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>

#include "tests/stub/stub_blas_control.h"
#include "tests/stub/stub_cuda.h"
#include "tests/blas/blas_api.h"
#include "tests/support/blas_arguments.h"

namespace blastest {

using blas_arguments::AttrSpec;
using blas_arguments::kEmulationAttrs;
using blas_arguments::kLayoutAttrs;
using blas_arguments::kMatmulAttrs;
using blas_arguments::kPreferenceAttrs;

// The stubs' own functions, linked, as the `api` of blas_arguments' calls (forwarding functions:
// cuBLAS's header overloads some of these names for C++).
struct Linked {
  template <typename... Args>
  static cublasStatus_t cublasLtMatmul(Args... args) { return ::cublasLtMatmul(args...); }
  template <typename... Args>
  static cublasStatus_t cublasGemmEx(Args... args) { return ::cublasGemmEx(args...); }
  template <typename... Args>
  static cublasStatus_t cublasGemmEx_64(Args... args) { return ::cublasGemmEx_64(args...); }
  template <typename... Args>
  static cublasStatus_t cublasGemmStridedBatchedEx(Args... args) { return ::cublasGemmStridedBatchedEx(args...); }
  template <typename... Args>
  static cublasStatus_t cublasGemmStridedBatchedEx_64(Args... args) {
    return ::cublasGemmStridedBatchedEx_64(args...);
  }
#define BLASTEST_LINKED_TYPED(name) static constexpr decltype(&::name) name = &::name;
  BLAS_API_TYPED_GEMM(BLASTEST_LINKED_TYPED, S)
  BLAS_API_TYPED_GEMM(BLASTEST_LINKED_TYPED, D)
  BLAS_API_TYPED_GEMM(BLASTEST_LINKED_TYPED, C)
  BLAS_API_TYPED_GEMM(BLASTEST_LINKED_TYPED, Z)
#undef BLASTEST_LINKED_TYPED
};

inline std::uint64_t first_word(const void* p) {
  std::uint64_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// Flips the lowest bit of an attribute through the stub's own getter and setter: twice restores it.
template <typename D, typename A, typename Get, typename Set>
void flip(D d, const AttrSpec& spec, Get get, Set set) {
  unsigned char bytes[16] = {};
  REQUIRE(get(d, static_cast<A>(spec.attribute), bytes, spec.size, nullptr) == CUBLAS_STATUS_SUCCESS);
  bytes[0] ^= 1;
  REQUIRE(set(d, static_cast<A>(spec.attribute), bytes, spec.size) == CUBLAS_STATUS_SUCCESS);
}
inline void flip(cublasLtMatmulDesc_t d, const AttrSpec& spec) {
  flip<cublasLtMatmulDesc_t, cublasLtMatmulDescAttributes_t>(d, spec, cublasLtMatmulDescGetAttribute,
                                                             cublasLtMatmulDescSetAttribute);
}
inline void flip(cublasLtMatrixLayout_t d, const AttrSpec& spec) {
  flip<cublasLtMatrixLayout_t, cublasLtMatrixLayoutAttribute_t>(d, spec, cublasLtMatrixLayoutGetAttribute,
                                                                cublasLtMatrixLayoutSetAttribute);
}
inline void flip(cublasLtMatmulPreference_t d, const AttrSpec& spec) {
  flip<cublasLtMatmulPreference_t, cublasLtMatmulPreferenceAttributes_t>(
      d, spec, cublasLtMatmulPreferenceGetAttribute, cublasLtMatmulPreferenceSetAttribute);
}
inline void flip(cublasLtEmulationDesc_t d, const AttrSpec& spec) {
  flip<cublasLtEmulationDesc_t, cublasLtEmulationDescAttributes_t>(d, spec, cublasLtEmulationDescGetAttribute,
                                                                   cublasLtEmulationDescSetAttribute);
}

// A scalar's storage: 16 bytes (a complex double), so that any scale type can read it.
struct alignas(16) Scalar {
  unsigned char bytes[16];
  template <typename T>
  explicit Scalar(T value) : bytes{} { std::memcpy(bytes, &value, sizeof value); }
};

// One set of attributes of each kind: a matmul descriptor (with an emulation descriptor), four
// layouts and a preference, all from Create, and an Lt handle.
struct LtObjects {
  cublasLtHandle_t handle = nullptr;
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtEmulationDesc_t emulation = nullptr;
  cublasLtMatrixLayout_t layouts[4] = {};
  cublasLtMatmulPreference_t preference = nullptr;

  LtObjects() {
    REQUIRE(cublasLtCreate(&handle) == CUBLAS_STATUS_SUCCESS);
    REQUIRE(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F) == CUBLAS_STATUS_SUCCESS);
    REQUIRE(cublasLtEmulationDescCreate(&emulation) == CUBLAS_STATUS_SUCCESS);
    REQUIRE(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EMULATION_DESCRIPTOR, &emulation,
                                           sizeof emulation) == CUBLAS_STATUS_SUCCESS);
    for (int i = 0; i < 4; ++i)
      REQUIRE(cublasLtMatrixLayoutCreate(&layouts[i], CUDA_R_32F, 16 + i, 32 + i, 16 + i) == CUBLAS_STATUS_SUCCESS);
    REQUIRE(cublasLtMatmulPreferenceCreate(&preference) == CUBLAS_STATUS_SUCCESS);
    const std::uint64_t workspace = 1 << 20;
    REQUIRE(cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace,
                                                 sizeof workspace) == CUBLAS_STATUS_SUCCESS);
  }
  ~LtObjects() {
    cublasLtMatmulPreferenceDestroy(preference);
    for (cublasLtMatrixLayout_t layout : layouts) cublasLtMatrixLayoutDestroy(layout);
    cublasLtMatmulDescDestroy(desc);
    cublasLtEmulationDescDestroy(emulation);
    cublasLtDestroy(handle);
  }
  LtObjects(const LtObjects&) = delete;
  LtObjects& operator=(const LtObjects&) = delete;

  // The heuristic's answer for these objects (three results asked, unless told otherwise).
  cublasStatus_t heuristic(cublasLtMatmulHeuristicResult_t (&results)[4], int* count, int requested = 3) const {
    std::memset(results, 0, sizeof results);
    return cublasLtMatmulAlgoGetHeuristic(handle, desc, layouts[0], layouts[1], layouts[2], layouts[3], preference,
                                          requested, results, count);
  }
};

// A cublasLtMatmul's arguments; call() makes it, output() reads D's first 8 bytes.
struct MatmulCall : blas_arguments::Matmul {
  cublasStatus_t call() const { return Matmul::call(Linked{}); }
  std::uint64_t output() const { return first_word(d); }
  // Makes the call and returns D (0xdead first: a call that writes nothing is seen).
  std::uint64_t run() const {
    const std::uint64_t poison = 0xdead;
    std::memcpy(d, &poison, sizeof poison);
    REQUIRE(call() == CUBLAS_STATUS_SUCCESS);
    return output();
  }
  // The same call in reference mode: the D the call should have produced.
  std::uint64_t reference() const {
    stubblas_reference_calls(1);
    const std::uint64_t expected = run();
    stubblas_reference_calls(0);
    return expected;
  }
};

// A GEMM's arguments, for any of the four entry points.
struct GemmCall : blas_arguments::Gemm {
  cublasStatus_t call() const { return Gemm::call(Linked{}); }
  // Makes the call with C's first 8 bytes set to `c_before` (C is read, then written) and returns C.
  std::uint64_t run(std::uint64_t c_before = 0x0C0C0C0C) const {
    std::memcpy(c, &c_before, sizeof c_before);
    REQUIRE(call() == CUBLAS_STATUS_SUCCESS);
    return first_word(c);
  }
  std::uint64_t reference(std::uint64_t c_before = 0x0C0C0C0C) const {
    stubblas_reference_calls(1);
    const std::uint64_t expected = run(c_before);
    stubblas_reference_calls(0);
    return expected;
  }
};

// A stream of the stub driver, capturing between begin() and end(); end() instantiates the graph.
struct Capture {
  CUstream stream = nullptr;
  CUgraph graph = nullptr;
  CUgraphExec exec = nullptr;
  Capture() { REQUIRE(cuStreamCreate(&stream, 0) == CUDA_SUCCESS); }
  ~Capture() {
    if (exec != nullptr) cuGraphExecDestroy(exec);
    if (graph != nullptr) cuGraphDestroy(graph);
    cuStreamDestroy_v2(stream);
  }
  Capture(const Capture&) = delete;
  Capture& operator=(const Capture&) = delete;
  cudaStream_t runtime_stream() const { return reinterpret_cast<cudaStream_t>(stream); }
  void begin() { REQUIRE(cuStreamBeginCapture_v2(stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL) == CUDA_SUCCESS); }
  void end() {
    REQUIRE(cuStreamEndCapture(stream, &graph) == CUDA_SUCCESS);
    REQUIRE(cuGraphInstantiateWithFlags(&exec, graph, 0) == CUDA_SUCCESS);
  }
  void launch() { REQUIRE(cuGraphLaunch(exec, stream) == CUDA_SUCCESS); }
};

}  // namespace blastest
