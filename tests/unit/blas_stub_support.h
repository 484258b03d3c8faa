// What the tests of the cuBLAS and cuBLASLt stubs share: the attribute sizes cublasLt.h documents
// (written out here, not taken from the stub), a matmul and a GEMM with every argument in a field
// that a test can change one at a time, and a capture with the stub driver.
#pragma once

#include <cublasLt.h>
#include <cublas_api.h>

#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>

#include "tests/stub/stub_blas_control.h"
#include "tests/stub/stub_cuda.h"

namespace blastest {

struct AttrSpec {
  int attribute;
  std::size_t size;
};

// The sizes cublasLt.h gives each attribute (int32_t, uint32_t, enums: 4; pointers: 8; ...).
inline const AttrSpec kMatmulAttrs[] = {
    {CUBLASLT_MATMUL_DESC_COMPUTE_TYPE, 4}, {CUBLASLT_MATMUL_DESC_SCALE_TYPE, 4},
    {CUBLASLT_MATMUL_DESC_POINTER_MODE, 4}, {CUBLASLT_MATMUL_DESC_TRANSA, 4},
    {CUBLASLT_MATMUL_DESC_TRANSB, 4}, {CUBLASLT_MATMUL_DESC_TRANSC, 4},
    {CUBLASLT_MATMUL_DESC_FILL_MODE, 4}, {CUBLASLT_MATMUL_DESC_EPILOGUE, 4},
    {CUBLASLT_MATMUL_DESC_BIAS_POINTER, 8}, {CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE, 8},
    {CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, 8}, {CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, 8},
    {CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_BATCH_STRIDE, 8}, {CUBLASLT_MATMUL_DESC_ALPHA_VECTOR_BATCH_STRIDE, 8},
    {CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET, 4}, {CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, 8},
    {CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, 8}, {CUBLASLT_MATMUL_DESC_C_SCALE_POINTER, 8},
    {CUBLASLT_MATMUL_DESC_D_SCALE_POINTER, 8}, {CUBLASLT_MATMUL_DESC_AMAX_D_POINTER, 8},
    {CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_DATA_TYPE, 4}, {CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_SCALE_POINTER, 8},
    {CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_AMAX_POINTER, 8}, {CUBLASLT_MATMUL_DESC_FAST_ACCUM, 1},
    {CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, 4}, {CUBLASLT_MATMUL_DESC_A_SCALE_MODE, 4},
    {CUBLASLT_MATMUL_DESC_B_SCALE_MODE, 4}, {CUBLASLT_MATMUL_DESC_C_SCALE_MODE, 4},
    {CUBLASLT_MATMUL_DESC_D_SCALE_MODE, 4}, {CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_SCALE_MODE, 4},
    {CUBLASLT_MATMUL_DESC_D_OUT_SCALE_POINTER, 8}, {CUBLASLT_MATMUL_DESC_D_OUT_SCALE_MODE, 4},
    {CUBLASLT_MATMUL_DESC_EMULATION_DESCRIPTOR, 8},
};
inline const AttrSpec kLayoutAttrs[] = {
    {CUBLASLT_MATRIX_LAYOUT_TYPE, 4}, {CUBLASLT_MATRIX_LAYOUT_ORDER, 4}, {CUBLASLT_MATRIX_LAYOUT_ROWS, 8},
    {CUBLASLT_MATRIX_LAYOUT_COLS, 8}, {CUBLASLT_MATRIX_LAYOUT_LD, 8}, {CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, 4},
    {CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, 8}, {CUBLASLT_MATRIX_LAYOUT_PLANE_OFFSET, 8},
    {CUBLASLT_MATRIX_LAYOUT_BATCH_MODE, 4},
};
inline const AttrSpec kPreferenceAttrs[] = {
    {CUBLASLT_MATMUL_PREF_SEARCH_MODE, 4}, {CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, 8},
    {CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, 4}, {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, 4},
    {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, 4}, {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, 4},
    {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, 4}, {CUBLASLT_MATMUL_PREF_MAX_WAVES_COUNT, 4},
    {CUBLASLT_MATMUL_PREF_IMPL_MASK, 8},
};
inline const AttrSpec kEmulationAttrs[] = {
    {CUBLASLT_EMULATION_DESC_STRATEGY, 4}, {CUBLASLT_EMULATION_DESC_SPECIAL_VALUES_SUPPORT, 4},
    {CUBLASLT_EMULATION_DESC_FIXEDPOINT_MANTISSA_CONTROL, 4},
    {CUBLASLT_EMULATION_DESC_FIXEDPOINT_MAX_MANTISSA_BIT_COUNT, 4},
    {CUBLASLT_EMULATION_DESC_FIXEDPOINT_MANTISSA_BIT_OFFSET, 4},
    {CUBLASLT_EMULATION_DESC_FIXEDPOINT_MANTISSA_BIT_COUNT_POINTER, 8},
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
struct MatmulCall {
  cublasLtHandle_t handle;
  cublasLtMatmulDesc_t desc;
  const void* alpha;
  const void* a;
  cublasLtMatrixLayout_t a_desc;
  const void* b;
  cublasLtMatrixLayout_t b_desc;
  const void* beta;
  const void* c;
  cublasLtMatrixLayout_t c_desc;
  void* d;
  cublasLtMatrixLayout_t d_desc;
  const cublasLtMatmulAlgo_t* algo;
  void* workspace;
  std::size_t workspace_size;
  cudaStream_t stream;

  cublasStatus_t call() const {
    return cublasLtMatmul(handle, desc, alpha, a, a_desc, b, b_desc, beta, c, c_desc, d, d_desc, algo, workspace,
                          workspace_size, stream);
  }
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
struct GemmCall {
  cublasHandle_t handle;
  StubBlasGemmEntry entry;
  cublasOperation_t transa, transb;
  std::int64_t m, n, k;
  const void* alpha;
  const void* a;
  cudaDataType a_type;
  std::int64_t lda;
  long long stride_a;
  const void* b;
  cudaDataType b_type;
  std::int64_t ldb;
  long long stride_b;
  const void* beta;
  void* c;
  cudaDataType c_type;
  std::int64_t ldc;
  long long stride_c;
  std::int64_t batch_count;
  cublasComputeType_t compute_type;
  cublasGemmAlgo_t algo;

  cublasStatus_t call() const {
    const int m32 = static_cast<int>(m), n32 = static_cast<int>(n), k32 = static_cast<int>(k);
    switch (entry) {
      case STUBBLAS_GEMM_EX:
        return cublasGemmEx(handle, transa, transb, m32, n32, k32, alpha, a, a_type, static_cast<int>(lda), b,
                            b_type, static_cast<int>(ldb), beta, c, c_type, static_cast<int>(ldc), compute_type, algo);
      case STUBBLAS_GEMM_EX_64:
        return cublasGemmEx_64(handle, transa, transb, m, n, k, alpha, a, a_type, lda, b, b_type, ldb, beta, c,
                               c_type, ldc, compute_type, algo);
      case STUBBLAS_GEMM_STRIDED_BATCHED_EX:
        return cublasGemmStridedBatchedEx(handle, transa, transb, m32, n32, k32, alpha, a, a_type,
                                          static_cast<int>(lda), stride_a, b, b_type, static_cast<int>(ldb), stride_b,
                                          beta, c, c_type, static_cast<int>(ldc), stride_c,
                                          static_cast<int>(batch_count), compute_type, algo);
      default:
        return cublasGemmStridedBatchedEx_64(handle, transa, transb, m, n, k, alpha, a, a_type, lda, stride_a, b,
                                             b_type, ldb, stride_b, beta, c, c_type, ldc, stride_c, batch_count,
                                             compute_type, algo);
    }
  }
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
