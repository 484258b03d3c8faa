// The cuBLASLt calls the stub libcublas.so.13 makes from inside itself, as the real cuBLAS runs its
// own Lt matmul inside cublasGemmEx (stubblas_inner_lt_calls).
//
// In a file of its own, as in stub_hooks.cpp: every cublasLt* function called here is defined in
// libcublasLt, so each call goes through libcublas's PLT, which the dynamic linker binds to the
// first definition in the global scope (a preloaded interposer's, if any); none is a tail call (an
// interposer that asks where its caller is must see libcublas, not the test program).
#include <cublasLt.h>

#include "tests/stub/stub_cublas_internal.h"

namespace stubcublas {

namespace {

// A layout of rows x cols (before any transpose) with the batch attributes of a strided GEMM.
cublasStatus_t make_layout(cublasLtMatrixLayout_t* layout, cudaDataType_t type, std::int64_t rows,
                           std::int64_t cols, std::int64_t ld, std::int64_t batch, std::int64_t stride) {
  cublasStatus_t status = cublasLtMatrixLayoutCreate(layout, type, static_cast<std::uint64_t>(rows),
                                                     static_cast<std::uint64_t>(cols), ld);
  if (status != CUBLAS_STATUS_SUCCESS || batch == 1) return status;
  const auto count = static_cast<std::int32_t>(batch);
  status = cublasLtMatrixLayoutSetAttribute(*layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count);
  if (status == CUBLAS_STATUS_SUCCESS)
    status = cublasLtMatrixLayoutSetAttribute(*layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride,
                                              sizeof stride);
  asm volatile("" ::: "memory");
  return status;
}

}  // namespace

cublasStatus_t inner_matmul(const InnerMatmul& m) {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t layouts[4] = {};
  cublasStatus_t status = cublasLtMatmulDescCreate(&desc, m.compute_type, m.scale_type);
  const std::int32_t transa = m.transa, transb = m.transb, mode = m.pointer_mode;
  if (status == CUBLAS_STATUS_SUCCESS)
    status = cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &transa, sizeof transa);
  if (status == CUBLAS_STATUS_SUCCESS)
    status = cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &transb, sizeof transb);
  if (status == CUBLAS_STATUS_SUCCESS)
    status = cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_POINTER_MODE, &mode, sizeof mode);
  const bool ta = m.transa != CUBLAS_OP_N, tb = m.transb != CUBLAS_OP_N;
  if (status == CUBLAS_STATUS_SUCCESS)
    status = make_layout(&layouts[0], m.a_type, ta ? m.k : m.m, ta ? m.m : m.k, m.lda, m.batch_count, m.stride_a);
  if (status == CUBLAS_STATUS_SUCCESS)
    status = make_layout(&layouts[1], m.b_type, tb ? m.n : m.k, tb ? m.k : m.n, m.ldb, m.batch_count, m.stride_b);
  if (status == CUBLAS_STATUS_SUCCESS)
    status = make_layout(&layouts[2], m.c_type, m.m, m.n, m.ldc, m.batch_count, m.stride_c);
  if (status == CUBLAS_STATUS_SUCCESS)
    status = make_layout(&layouts[3], m.c_type, m.m, m.n, m.ldc, m.batch_count, m.stride_c);
  if (status == CUBLAS_STATUS_SUCCESS)
    status = cublasLtMatmul(m.handle, desc, m.alpha, m.a, layouts[0], m.b, layouts[1], m.beta, m.c, layouts[2],
                            m.d, layouts[3], nullptr, m.workspace, m.workspace_size, m.stream);
  asm volatile("" ::: "memory");  // the matmul above is a call from here, not a jump
  for (cublasLtMatrixLayout_t layout : layouts)
    if (layout != nullptr) cublasLtMatrixLayoutDestroy(layout);
  if (desc != nullptr) cublasLtMatmulDescDestroy(desc);
  asm volatile("" ::: "memory");
  return status;
}

}  // namespace stubcublas
