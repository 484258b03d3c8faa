// The cuBLASLt matmul the stub libcudnn (libcudnn.so.9, and the .so.8 built from the same sources)
// makes from inside its own cudnnBackendExecute when a test asks (stub_cudnn_blas.cpp), as the
// real cuDNN calls cuBLASLt inside its own calls (its RNNs, some matmul engines).
#pragma once

#include <cublasLt.h>

#include <cstddef>
#include <cstdint>

extern "C" {

// The matmul's arguments, but the stream: it runs on the stream the cuDNN handle holds (the shim's
// own while the shim captures the execute), with no algo.
struct StubCudnnInnerMatmul {
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
  void* workspace;
  std::size_t workspace_size;
};

// From now on every cudnnBackendExecute first runs `matmul` (copied) with cublasLtMatmul, called
// through libcudnn's PLT from inside it (not a tail call: an interposer that asks where its caller
// is finds libcudnn); NULL: no more (the default).
void stubcudnn_inner_lt_matmul(const StubCudnnInnerMatmul* matmul);

// At the next cudnnBackendExecute only, before anything else, set the epilogue of `desc` (a
// program's matmul descriptor) to `epilogue` with cublasLtMatmulDescSetAttribute, called through
// libcudnn's PLT from inside it: a library setting a program's descriptor.
void stubcudnn_inner_lt_epilogue(cublasLtMatmulDesc_t desc, uint32_t epilogue);

struct StubCudnnInnerMatmulCounts {
  std::uint64_t calls;     // inner matmuls made
  std::uint64_t failures;  // of those, the ones that did not return CUBLAS_STATUS_SUCCESS
};
StubCudnnInnerMatmulCounts stubcudnn_inner_lt_matmul_counts(void);

}  // extern "C"
