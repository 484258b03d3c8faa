// The cuBLASLt and cuBLAS calls a blas scenario (blas_scenario.cpp) makes, as one table of function
// pointers that each load mode fills its own way, and the stubs' controls.
//
// The lists name every function the shim interposes that a scenario calls; a table's members are
// named as the functions are. Filled three ways: the program's own references (linked), the
// wrappers of a framework library that calls them through its own PLT (local, blas_framework.cpp),
// dlsym on the stub libraries' handles (dlsym: the shim's exported dlsym hands out its functions).
// A fourth table takes each with glibc's own dlsym on those handles: the stubs' own functions,
// around any interposer, for the reference calls and for objects made around the shim.
#pragma once

#include <cublasLt.h>
#include <cublas_api.h>

#define BLAS_API_LT_FUNCTIONS(X)                                                                             \
  X(cublasLtCreate) X(cublasLtDestroy) X(cublasLtMatmulDescCreate) X(cublasLtMatmulDescInit_internal)         \
  X(cublasLtMatmulDescSetAttribute) X(cublasLtMatmulDescDestroy) X(cublasLtMatrixLayoutCreate)               \
  X(cublasLtMatrixLayoutInit_internal) X(cublasLtMatrixLayoutSetAttribute) X(cublasLtMatrixLayoutDestroy)    \
  X(cublasLtMatmulPreferenceCreate) X(cublasLtMatmulPreferenceSetAttribute) X(cublasLtMatmulPreferenceDestroy) \
  X(cublasLtEmulationDescCreate) X(cublasLtEmulationDescSetAttribute) X(cublasLtEmulationDescDestroy)        \
  X(cublasLtMatmul) X(cublasLtMatmulAlgoGetHeuristic)

// The three cuBLAS names cublas_api.h also overloads in C++ (a compute type given as a
// cudaDataType, a cudaEmulationStrategy) come last: &name alone is ambiguous, so their members
// are declared with the C signatures.
#define BLAS_API_CUBLAS_PLAIN_FUNCTIONS(X)                                                                   \
  X(cublasCreate_v2) X(cublasDestroy_v2) X(cublasSetStream_v2) X(cublasSetWorkspace_v2)                      \
  X(cublasSetPointerMode_v2) X(cublasSetMathMode) X(cublasSetAtomicsMode) X(cublasSetSmCountTarget)          \
  X(cublasSetEmulationSpecialValuesSupport) X(cublasSetFixedPointEmulationMantissaControl)                   \
  X(cublasSetFixedPointEmulationMaxMantissaBitCount) X(cublasSetFixedPointEmulationMantissaBitOffset)        \
  X(cublasSetFixedPointEmulationMantissaBitCountPointer) X(cublasGemmEx_64) X(cublasGemmStridedBatchedEx_64)    \
  BLAS_API_TYPED_GEMM(X, S) BLAS_API_TYPED_GEMM(X, D) BLAS_API_TYPED_GEMM(X, C) BLAS_API_TYPED_GEMM(X, Z)
// cublas<t>gemm_v2, its _64 form, cublas<t>gemmStridedBatched and its _64 form.
#define BLAS_API_TYPED_GEMM(X, t) \
  X(cublas##t##gemm_v2) X(cublas##t##gemm_v2_64) X(cublas##t##gemmStridedBatched) X(cublas##t##gemmStridedBatched_64)
#define BLAS_API_CUBLAS_FUNCTIONS(X)                                                                         \
  BLAS_API_CUBLAS_PLAIN_FUNCTIONS(X) X(cublasSetEmulationStrategy) X(cublasGemmEx) X(cublasGemmStridedBatchedEx)

#define BLAS_API_FUNCTIONS(X) BLAS_API_LT_FUNCTIONS(X) BLAS_API_CUBLAS_FUNCTIONS(X)

struct BlasApi {
#define BLAS_API_MEMBER(name) decltype(&::name) name;
  BLAS_API_LT_FUNCTIONS(BLAS_API_MEMBER)
  BLAS_API_CUBLAS_PLAIN_FUNCTIONS(BLAS_API_MEMBER)
#undef BLAS_API_MEMBER
  cublasStatus_t (*cublasSetEmulationStrategy)(cublasHandle_t, cublasEmulationStrategy_t);
  cublasStatus_t (*cublasGemmEx)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const void*,
                                 const void*, cudaDataType, int, const void*, cudaDataType, int, const void*, void*,
                                 cudaDataType, int, cublasComputeType_t, cublasGemmAlgo_t);
  cublasStatus_t (*cublasGemmStridedBatchedEx)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                                               const void*, const void*, cudaDataType, int, long long, const void*,
                                               cudaDataType, int, long long, const void*, void*, cudaDataType, int,
                                               long long, int, cublasComputeType_t, cublasGemmAlgo_t);
};

// Exported by libblas_framework.so: the calls as a framework library that links libcublas and
// libcublasLt makes them, through its own PLT (PyTorch's libtorch_cuda).
extern "C" const BlasApi* blas_framework_api();
