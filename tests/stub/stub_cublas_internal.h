// What the files of the stub libcublas.so.13 share, hidden from other objects.
#pragma once

#include <cublasLt.h>

#include <cstdint>

#pragma GCC visibility push(hidden)

namespace stubcublas {

// A GEMM as cuBLASLt is asked to run it from inside cuBLAS (stub_cublas_inner.cpp).
struct InnerMatmul {
  cublasLtHandle_t handle;  // the cuBLAS handle itself, as the real cuBLAS and PyTorch pass it
  cudaStream_t stream;
  cublasComputeType_t compute_type;
  cudaDataType_t scale_type;
  std::int32_t pointer_mode;  // cublasPointerMode_t, which cuBLASLt's modes 0 and 1 match
  cublasOperation_t transa, transb;
  cudaDataType_t a_type, b_type, c_type;
  std::int64_t m, n, k, lda, ldb, ldc;
  std::int64_t stride_a, stride_b, stride_c, batch_count;
  const void* alpha;
  const void* beta;
  const void* a;
  const void* b;
  const void* c;
  void* d;
  void* workspace;
  std::uint64_t workspace_size;
};

// Runs `m` through cublasLtMatmul on descriptors made for it by cublasLtMatmulDescCreate and
// cublasLtMatrixLayoutCreate, all called through libcublas's PLT; what cublasLtMatmul returned
// (or the first failure before it).
cublasStatus_t inner_matmul(const InnerMatmul& m);

}  // namespace stubcublas

#pragma GCC visibility pop
