// The arguments of cuBLASLt's and cuBLAS's calls as the tests of the stubs and of the shim make
// them: the attribute sizes cublasLt.h documents (written out here, taken neither from the stubs
// nor from the shim), and a matmul and a GEMM with every argument in a field a test can change one
// at a time, made through any table of the functions that has their names (the shim's, the
// stubs' own).
#pragma once

#include <cublasLt.h>
#include <cublas_api.h>

#include <cstddef>
#include <cstdint>

#include "tests/stub/stub_blas_control.h"

namespace blas_arguments {

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

// A cublasLtMatmul's arguments.
struct Matmul {
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

  // The call, through `api`'s cublasLtMatmul.
  template <typename Api>
  cublasStatus_t call(const Api& api) const {
    return api.cublasLtMatmul(handle, desc, alpha, a, a_desc, b, b_desc, beta, c, c_desc, d, d_desc, algo, workspace,
                              workspace_size, stream);
  }
};

// A GEMM's arguments, for any of the entry points: the four *Ex ones, and the typed ones
// (STUBBLAS_TYPED_GEMM + 4 * type + form, whose types are their letter's: a_type and the others
// are not passed).
struct Gemm {
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

  // The call of `entry`, through `api`'s functions.
  template <typename Api>
  cublasStatus_t call(const Api& api) const {
    const int m32 = static_cast<int>(m), n32 = static_cast<int>(n), k32 = static_cast<int>(k);
    switch (entry) {
      case STUBBLAS_GEMM_EX:
        return api.cublasGemmEx(handle, transa, transb, m32, n32, k32, alpha, a, a_type, static_cast<int>(lda), b,
                                b_type, static_cast<int>(ldb), beta, c, c_type, static_cast<int>(ldc), compute_type,
                                algo);
      case STUBBLAS_GEMM_EX_64:
        return api.cublasGemmEx_64(handle, transa, transb, m, n, k, alpha, a, a_type, lda, b, b_type, ldb, beta, c,
                                   c_type, ldc, compute_type, algo);
      case STUBBLAS_GEMM_STRIDED_BATCHED_EX:
        return api.cublasGemmStridedBatchedEx(handle, transa, transb, m32, n32, k32, alpha, a, a_type,
                                              static_cast<int>(lda), stride_a, b, b_type, static_cast<int>(ldb),
                                              stride_b, beta, c, c_type, static_cast<int>(ldc), stride_c,
                                              static_cast<int>(batch_count), compute_type, algo);
      case STUBBLAS_GEMM_STRIDED_BATCHED_EX_64:
        return api.cublasGemmStridedBatchedEx_64(handle, transa, transb, m, n, k, alpha, a, a_type, lda, stride_a, b,
                                                 b_type, ldb, stride_b, beta, c, c_type, ldc, stride_c, batch_count,
                                                 compute_type, algo);
      default:
        switch ((entry - STUBBLAS_TYPED_GEMM) / 4) {
          case 0: return typed<float>(api.cublasSgemm_v2, api.cublasSgemm_v2_64, api.cublasSgemmStridedBatched,
                                      api.cublasSgemmStridedBatched_64);
          case 1: return typed<double>(api.cublasDgemm_v2, api.cublasDgemm_v2_64, api.cublasDgemmStridedBatched,
                                       api.cublasDgemmStridedBatched_64);
          case 2: return typed<cuComplex>(api.cublasCgemm_v2, api.cublasCgemm_v2_64, api.cublasCgemmStridedBatched,
                                          api.cublasCgemmStridedBatched_64);
          default: return typed<cuDoubleComplex>(api.cublasZgemm_v2, api.cublasZgemm_v2_64,
                                                 api.cublasZgemmStridedBatched, api.cublasZgemmStridedBatched_64);
        }
    }
  }

  // A typed GEMM's call, in the form `entry` names.
  template <typename T, typename Gemm32, typename Gemm64, typename Batched32, typename Batched64>
  cublasStatus_t typed(Gemm32 gemm, Gemm64 gemm_64, Batched32 batched, Batched64 batched_64) const {
    const auto* al = static_cast<const T*>(alpha);
    const auto* be = static_cast<const T*>(beta);
    const auto* pa = static_cast<const T*>(a);
    const auto* pb = static_cast<const T*>(b);
    auto* pc = static_cast<T*>(c);
    const int m32 = static_cast<int>(m), n32 = static_cast<int>(n), k32 = static_cast<int>(k);
    switch ((entry - STUBBLAS_TYPED_GEMM) % 4) {
      case 0: return gemm(handle, transa, transb, m32, n32, k32, al, pa, static_cast<int>(lda), pb,
                          static_cast<int>(ldb), be, pc, static_cast<int>(ldc));
      case 1: return gemm_64(handle, transa, transb, m, n, k, al, pa, lda, pb, ldb, be, pc, ldc);
      case 2: return batched(handle, transa, transb, m32, n32, k32, al, pa, static_cast<int>(lda), stride_a, pb,
                             static_cast<int>(ldb), stride_b, be, pc, static_cast<int>(ldc), stride_c,
                             static_cast<int>(batch_count));
      default: return batched_64(handle, transa, transb, m, n, k, al, pa, lda, stride_a, pb, ldb, stride_b, be, pc,
                                 ldc, stride_c, batch_count);
    }
  }
};

}  // namespace blas_arguments
