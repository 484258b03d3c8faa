// The cuBLAS and cuBLASLt types the tracer's signatures name, for a build without cuBLAS's headers
// (cuDNN's pip wheel brings cudnn.h and the CUDA runtime's headers, not cublasLt.h). The tracer never
// looks inside any of them: handles and descriptors are opaque pointers, the enums are ints, as in
// cublas_api.h and cublasLt.h (CUDA 12 and 13), so the calls it forwards keep their ABI. With the
// real headers present tracer.cpp includes them instead, and the compiler checks every signature of
// its table against them.
#pragma once

#include <cstddef>
#include <cstdint>

#include <library_types.h>  // cudaDataType, from the CUDA runtime's headers cudnn.h needs anyway

extern "C" {

typedef enum { CUBLAS_STATUS_SUCCESS = 0, CUBLAS_STATUS_NOT_INITIALIZED = 1 } cublasStatus_t;
typedef enum { CUBLAS_OP_N = 0 } cublasOperation_t;
typedef enum { CUBLAS_COMPUTE_32F = 68 } cublasComputeType_t;
typedef enum { CUBLAS_GEMM_DEFAULT = -1 } cublasGemmAlgo_t;
typedef enum { CUBLAS_DEFAULT_MATH = 0 } cublasMath_t;
typedef enum { CUBLASLT_MATMUL_DESC_COMPUTE_TYPE = 0 } cublasLtMatmulDescAttributes_t;
typedef enum { CUBLASLT_MATRIX_LAYOUT_TYPE = 0 } cublasLtMatrixLayoutAttribute_t;
typedef enum { CUBLASLT_MATMUL_PREF_SEARCH_MODE = 0 } cublasLtMatmulPreferenceAttributes_t;

struct cublasContext;
typedef struct cublasContext* cublasHandle_t;
struct cublasLtContext;
typedef struct cublasLtContext* cublasLtHandle_t;
typedef struct { uint64_t data[32]; } cublasLtMatmulDescOpaque_t;
typedef cublasLtMatmulDescOpaque_t* cublasLtMatmulDesc_t;
typedef struct { uint64_t data[8]; } cublasLtMatrixLayoutOpaque_t;
typedef cublasLtMatrixLayoutOpaque_t* cublasLtMatrixLayout_t;
typedef struct { uint64_t data[8]; } cublasLtMatmulPreferenceOpaque_t;
typedef cublasLtMatmulPreferenceOpaque_t* cublasLtMatmulPreference_t;
typedef struct { uint64_t data[8]; } cublasLtMatmulAlgo_t;
typedef struct {
  cublasLtMatmulAlgo_t algo;
  size_t workspaceSize;
  cublasStatus_t state;
  float wavesCount;
  int reserved[4];
} cublasLtMatmulHeuristicResult_t;

}  // extern "C"
