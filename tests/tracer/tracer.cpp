// A small tracer of the kind people preload to time or log cuDNN and cuBLAS calls: it wraps the
// functions its version script exports (CMakeLists.txt builds one tracer per set: the others stay
// local, so the tracer does not define them), counts each call, and forwards it to
// dlsym(RTLD_NEXT, name), or, when that finds nothing (a library behind one opened RTLD_LOCAL, as
// PyTorch's are), to dlsym on the library already loaded under its usual soname, found with
// RTLD_NOLOAD (libcudnn.so.9; libcublasLt.so.13 or .12; libcublas.so.13 or .12), as real tracers do.
// It links none of them. tracer_count(name) and tracer_ns(name) say how many calls of `name` it saw
// and how long they took (the forwarded call alone, as the program sees it: whatever the shim
// behind it does included); at exit it writes both to the JSON file CUDNN_TRACER_REPORT names, if
// set (gpu/pytorch/check.py and per_call.py read it).
//
// Nesting: the libraries call some of each other's exported functions through their own dynamic
// references (libcublas calls cublasLtMatmul, libcudnn_cnn calls cudnnSetTensor4dDescriptor), and
// an unversioned definition placed first takes those calls too. A call made while the same thread
// is inside another traced call is therefore counted apart ("nested_calls", "nested_ns"): "calls"
// and "ns" are the calls the program made itself, tracer_count and tracer_ns report those.
#include <cuda.h>
#include <cudnn.h>
#include <dlfcn.h>

#if __has_include(<cublasLt.h>) && !defined(TRACER_OWN_BLAS_DECLARATIONS)
#include <cublasLt.h>  // includes cublas_api.h: the compiler checks the table's signatures
#else
#include "tests/tracer/blas_declarations.h"
#endif

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>

#pragma GCC diagnostic ignored "-Wdeprecated-declarations"  // cudnnBackendInitialize, the legacy API

// One row per wrapped function: X(library, return type, name, parameters, arguments). The library
// says where the forwarded call goes when RTLD_NEXT finds nothing, and what a call returns when the
// function is nowhere (its "not initialized" status).
#define TRACER_HANDLE_FUNCTIONS(X)                                                                       \
  X(Cudnn, cudnnStatus_t, cudnnCreate, (cudnnHandle_t * h), (h))                                         \
  X(Cudnn, cudnnStatus_t, cudnnDestroy, (cudnnHandle_t h), (h))                                          \
  X(Cudnn, cudnnStatus_t, cudnnSetStream, (cudnnHandle_t h, cudaStream_t s), (h, s))                     \
  X(Cudnn, cudnnStatus_t, cudnnGetStream, (cudnnHandle_t h, cudaStream_t * s), (h, s))

#define TRACER_BACKEND_FUNCTIONS(X)                                                                      \
  X(Cudnn, cudnnStatus_t, cudnnBackendCreateDescriptor,                                                 \
    (cudnnBackendDescriptorType_t t, cudnnBackendDescriptor_t * d), (t, d))                              \
  X(Cudnn, cudnnStatus_t, cudnnBackendDestroyDescriptor, (cudnnBackendDescriptor_t d), (d))              \
  X(Cudnn, cudnnStatus_t, cudnnBackendInitialize, (cudnnBackendDescriptor_t d), (d))                     \
  X(Cudnn, cudnnStatus_t, cudnnBackendFinalize, (cudnnBackendDescriptor_t d), (d))                       \
  X(Cudnn, cudnnStatus_t, cudnnBackendSetAttribute,                                                     \
    (cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t n, cudnnBackendAttributeType_t t, int64_t c, \
     const void* e),                                                                                     \
    (d, n, t, c, e))                                                                                     \
  X(Cudnn, cudnnStatus_t, cudnnBackendGetAttribute,                                                     \
    (cudnnBackendDescriptor_t const d, cudnnBackendAttributeName_t n, cudnnBackendAttributeType_t t,     \
     int64_t r, int64_t* c, void* e),                                                                    \
    (d, n, t, r, c, e))                                                                                  \
  X(Cudnn, cudnnStatus_t, cudnnBackendExecute,                                                          \
    (cudnnHandle_t h, cudnnBackendDescriptor_t p, cudnnBackendDescriptor_t v), (h, p, v))                \
  X(Cudnn, cudnnStatus_t, cudnnBackendPopulateCudaGraph,                                                \
    (cudnnHandle_t h, cudnnBackendDescriptor_t p, cudnnBackendDescriptor_t v, cudaGraph_t g), (h, p, v, g)) \
  X(Cudnn, cudnnStatus_t, cudnnBackendUpdateCudaGraph,                                                  \
    (cudnnHandle_t h, cudnnBackendDescriptor_t p, cudnnBackendDescriptor_t v, cudaGraph_t g), (h, p, v, g))

// The legacy ops (PyTorch's batch norm; ONNX Runtime's networks), then their descriptors.
#define TRACER_LEGACY_OPS(X)                                                                             \
  X(Cudnn, cudnnStatus_t, cudnnBatchNormalizationForwardInference,                                      \
    (cudnnHandle_t h, cudnnBatchNormMode_t m, const void* a, const void* b, const cudnnTensorDescriptor_t xd, \
     const void* x, const cudnnTensorDescriptor_t yd, void* y, const cudnnTensorDescriptor_t sd,         \
     const void* scale, const void* bias, const void* mean, const void* var, double eps),                 \
    (h, m, a, b, xd, x, yd, y, sd, scale, bias, mean, var, eps))                                         \
  X(Cudnn, cudnnStatus_t, cudnnBatchNormalizationForwardTrainingEx,                                     \
    (cudnnHandle_t h, cudnnBatchNormMode_t m, cudnnBatchNormOps_t o, const void* a, const void* b,       \
     const cudnnTensorDescriptor_t xd, const void* x, const cudnnTensorDescriptor_t zd, const void* z,   \
     const cudnnTensorDescriptor_t yd, void* y, const cudnnTensorDescriptor_t sd, const void* scale,     \
     const void* bias, double factor, void* run_mean, void* run_var, double eps, void* save_mean,        \
     void* save_inv_var, cudnnActivationDescriptor_t ad, void* ws, size_t ws_size, void* rs, size_t rs_size), \
    (h, m, o, a, b, xd, x, zd, z, yd, y, sd, scale, bias, factor, run_mean, run_var, eps, save_mean,     \
     save_inv_var, ad, ws, ws_size, rs, rs_size))                                                        \
  X(Cudnn, cudnnStatus_t, cudnnBatchNormalizationBackwardEx,                                            \
    (cudnnHandle_t h, cudnnBatchNormMode_t m, cudnnBatchNormOps_t o, const void* ad, const void* bd,     \
     const void* ap, const void* bp, const cudnnTensorDescriptor_t xd, const void* x,                    \
     const cudnnTensorDescriptor_t yd, const void* y, const cudnnTensorDescriptor_t dyd, const void* dy, \
     const cudnnTensorDescriptor_t dzd, void* dz, const cudnnTensorDescriptor_t dxd, void* dx,           \
     const cudnnTensorDescriptor_t sd, const void* scale, const void* bias, void* dscale, void* dbias,   \
     double eps, const void* save_mean, const void* save_inv_var, cudnnActivationDescriptor_t act,       \
     void* ws, size_t ws_size, void* rs, size_t rs_size),                                                \
    (h, m, o, ad, bd, ap, bp, xd, x, yd, y, dyd, dy, dzd, dz, dxd, dx, sd, scale, bias, dscale, dbias,   \
     eps, save_mean, save_inv_var, act, ws, ws_size, rs, rs_size))                                       \
  X(Cudnn, cudnnStatus_t, cudnnConvolutionForward,                                                      \
    (cudnnHandle_t h, const void* a, const cudnnTensorDescriptor_t xd, const void* x,                    \
     const cudnnFilterDescriptor_t wd, const void* w, const cudnnConvolutionDescriptor_t cd,             \
     cudnnConvolutionFwdAlgo_t algo, void* ws, size_t ws_size, const void* b,                            \
     const cudnnTensorDescriptor_t yd, void* y),                                                         \
    (h, a, xd, x, wd, w, cd, algo, ws, ws_size, b, yd, y))                                               \
  X(Cudnn, cudnnStatus_t, cudnnConvolutionBiasActivationForward,                                        \
    (cudnnHandle_t h, const void* a1, const cudnnTensorDescriptor_t xd, const void* x,                   \
     const cudnnFilterDescriptor_t wd, const void* w, const cudnnConvolutionDescriptor_t cd,             \
     cudnnConvolutionFwdAlgo_t algo, void* ws, size_t ws_size, const void* a2,                           \
     const cudnnTensorDescriptor_t zd, const void* z, const cudnnTensorDescriptor_t bd, const void* bias, \
     const cudnnActivationDescriptor_t ad, const cudnnTensorDescriptor_t yd, void* y),                   \
    (h, a1, xd, x, wd, w, cd, algo, ws, ws_size, a2, zd, z, bd, bias, ad, yd, y))                        \
  X(Cudnn, cudnnStatus_t, cudnnActivationForward,                                                       \
    (cudnnHandle_t h, cudnnActivationDescriptor_t ad, const void* a, const cudnnTensorDescriptor_t xd,   \
     const void* x, const void* b, const cudnnTensorDescriptor_t yd, void* y),                           \
    (h, ad, a, xd, x, b, yd, y))                                                                         \
  X(Cudnn, cudnnStatus_t, cudnnPoolingForward,                                                          \
    (cudnnHandle_t h, const cudnnPoolingDescriptor_t pd, const void* a, const cudnnTensorDescriptor_t xd, \
     const void* x, const void* b, const cudnnTensorDescriptor_t yd, void* y),                           \
    (h, pd, a, xd, x, b, yd, y))                                                                         \
  X(Cudnn, cudnnStatus_t, cudnnSoftmaxForward,                                                          \
    (cudnnHandle_t h, cudnnSoftmaxAlgorithm_t algo, cudnnSoftmaxMode_t m, const void* a,                 \
     const cudnnTensorDescriptor_t xd, const void* x, const void* b, const cudnnTensorDescriptor_t yd, void* y), \
    (h, algo, m, a, xd, x, b, yd, y))                                                                    \
  X(Cudnn, cudnnStatus_t, cudnnAddTensor,                                                               \
    (cudnnHandle_t h, const void* a, const cudnnTensorDescriptor_t ad, const void* A, const void* b,     \
     const cudnnTensorDescriptor_t cd, void* C),                                                         \
    (h, a, ad, A, b, cd, C))                                                                             \
  X(Cudnn, cudnnStatus_t, cudnnOpTensor,                                                                \
    (cudnnHandle_t h, const cudnnOpTensorDescriptor_t od, const void* a1, const cudnnTensorDescriptor_t ad, \
     const void* A, const void* a2, const cudnnTensorDescriptor_t bd, const void* B, const void* b,      \
     const cudnnTensorDescriptor_t cd, void* C),                                                         \
    (h, od, a1, ad, A, a2, bd, B, b, cd, C))                                                             \
  X(Cudnn, cudnnStatus_t, cudnnScaleTensor,                                                             \
    (cudnnHandle_t h, const cudnnTensorDescriptor_t yd, void* y, const void* a), (h, yd, y, a))          \
  X(Cudnn, cudnnStatus_t, cudnnTransformTensor,                                                         \
    (cudnnHandle_t h, const void* a, const cudnnTensorDescriptor_t xd, const void* x, const void* b,     \
     const cudnnTensorDescriptor_t yd, void* y),                                                         \
    (h, a, xd, x, b, yd, y))                                                                             \
  X(Cudnn, cudnnStatus_t, cudnnLRNCrossChannelForward,                                                  \
    (cudnnHandle_t h, cudnnLRNDescriptor_t nd, cudnnLRNMode_t m, const void* a,                          \
     const cudnnTensorDescriptor_t xd, const void* x, const void* b, const cudnnTensorDescriptor_t yd, void* y), \
    (h, nd, m, a, xd, x, b, yd, y))

#define TRACER_LEGACY_DESCRIPTORS(X)                                                                     \
  X(Cudnn, cudnnStatus_t, cudnnCreateTensorDescriptor, (cudnnTensorDescriptor_t * d), (d))               \
  X(Cudnn, cudnnStatus_t, cudnnSetTensor4dDescriptor,                                                   \
    (cudnnTensorDescriptor_t d, cudnnTensorFormat_t f, cudnnDataType_t t, int n, int c, int h, int w),   \
    (d, f, t, n, c, h, w))                                                                               \
  X(Cudnn, cudnnStatus_t, cudnnSetTensor4dDescriptorEx,                                                 \
    (cudnnTensorDescriptor_t d, cudnnDataType_t t, int n, int c, int h, int w, int ns, int cs, int hs, int ws), \
    (d, t, n, c, h, w, ns, cs, hs, ws))                                                                  \
  X(Cudnn, cudnnStatus_t, cudnnSetTensorNdDescriptor,                                                   \
    (cudnnTensorDescriptor_t d, cudnnDataType_t t, int n, const int dims[], const int strides[]),         \
    (d, t, n, dims, strides))                                                                            \
  X(Cudnn, cudnnStatus_t, cudnnSetTensorNdDescriptorEx,                                                 \
    (cudnnTensorDescriptor_t d, cudnnTensorFormat_t f, cudnnDataType_t t, int n, const int dims[]),       \
    (d, f, t, n, dims))                                                                                  \
  X(Cudnn, cudnnStatus_t, cudnnDeriveBNTensorDescriptor,                                                \
    (cudnnTensorDescriptor_t d, const cudnnTensorDescriptor_t x, cudnnBatchNormMode_t m), (d, x, m))     \
  X(Cudnn, cudnnStatus_t, cudnnDestroyTensorDescriptor, (cudnnTensorDescriptor_t d), (d))                \
  X(Cudnn, cudnnStatus_t, cudnnCreateFilterDescriptor, (cudnnFilterDescriptor_t * d), (d))               \
  X(Cudnn, cudnnStatus_t, cudnnSetFilter4dDescriptor,                                                   \
    (cudnnFilterDescriptor_t d, cudnnDataType_t t, cudnnTensorFormat_t f, int k, int c, int h, int w),   \
    (d, t, f, k, c, h, w))                                                                               \
  X(Cudnn, cudnnStatus_t, cudnnSetFilterNdDescriptor,                                                   \
    (cudnnFilterDescriptor_t d, cudnnDataType_t t, cudnnTensorFormat_t f, int n, const int dims[]),       \
    (d, t, f, n, dims))                                                                                  \
  X(Cudnn, cudnnStatus_t, cudnnDestroyFilterDescriptor, (cudnnFilterDescriptor_t d), (d))                \
  X(Cudnn, cudnnStatus_t, cudnnCreateConvolutionDescriptor, (cudnnConvolutionDescriptor_t * d), (d))     \
  X(Cudnn, cudnnStatus_t, cudnnSetConvolution2dDescriptor,                                              \
    (cudnnConvolutionDescriptor_t d, int ph, int pw, int u, int v, int dh, int dw, cudnnConvolutionMode_t m, \
     cudnnDataType_t t),                                                                                 \
    (d, ph, pw, u, v, dh, dw, m, t))                                                                     \
  X(Cudnn, cudnnStatus_t, cudnnSetConvolutionNdDescriptor,                                              \
    (cudnnConvolutionDescriptor_t d, int n, const int pad[], const int stride[], const int dilation[],   \
     cudnnConvolutionMode_t m, cudnnDataType_t t),                                                       \
    (d, n, pad, stride, dilation, m, t))                                                                 \
  X(Cudnn, cudnnStatus_t, cudnnSetConvolutionMathType, (cudnnConvolutionDescriptor_t d, cudnnMathType_t m), (d, m)) \
  X(Cudnn, cudnnStatus_t, cudnnSetConvolutionGroupCount, (cudnnConvolutionDescriptor_t d, int g), (d, g)) \
  X(Cudnn, cudnnStatus_t, cudnnDestroyConvolutionDescriptor, (cudnnConvolutionDescriptor_t d), (d))      \
  X(Cudnn, cudnnStatus_t, cudnnCreateActivationDescriptor, (cudnnActivationDescriptor_t * d), (d))       \
  X(Cudnn, cudnnStatus_t, cudnnSetActivationDescriptor,                                                 \
    (cudnnActivationDescriptor_t d, cudnnActivationMode_t m, cudnnNanPropagation_t n, double coef), (d, m, n, coef)) \
  X(Cudnn, cudnnStatus_t, cudnnDestroyActivationDescriptor, (cudnnActivationDescriptor_t d), (d))        \
  X(Cudnn, cudnnStatus_t, cudnnCreatePoolingDescriptor, (cudnnPoolingDescriptor_t * d), (d))             \
  X(Cudnn, cudnnStatus_t, cudnnSetPooling2dDescriptor,                                                  \
    (cudnnPoolingDescriptor_t d, cudnnPoolingMode_t m, cudnnNanPropagation_t n, int wh, int ww, int ph,  \
     int pw, int sh, int sw),                                                                            \
    (d, m, n, wh, ww, ph, pw, sh, sw))                                                                   \
  X(Cudnn, cudnnStatus_t, cudnnSetPoolingNdDescriptor,                                                  \
    (cudnnPoolingDescriptor_t d, const cudnnPoolingMode_t m, const cudnnNanPropagation_t n, int nd,      \
     const int window[], const int padding[], const int stride[]),                                       \
    (d, m, n, nd, window, padding, stride))                                                              \
  X(Cudnn, cudnnStatus_t, cudnnDestroyPoolingDescriptor, (cudnnPoolingDescriptor_t d), (d))              \
  X(Cudnn, cudnnStatus_t, cudnnCreateLRNDescriptor, (cudnnLRNDescriptor_t * d), (d))                     \
  X(Cudnn, cudnnStatus_t, cudnnSetLRNDescriptor,                                                        \
    (cudnnLRNDescriptor_t d, unsigned n, double alpha, double beta, double k), (d, n, alpha, beta, k))   \
  X(Cudnn, cudnnStatus_t, cudnnDestroyLRNDescriptor, (cudnnLRNDescriptor_t d), (d))                      \
  X(Cudnn, cudnnStatus_t, cudnnCreateOpTensorDescriptor, (cudnnOpTensorDescriptor_t * d), (d))           \
  X(Cudnn, cudnnStatus_t, cudnnSetOpTensorDescriptor,                                                   \
    (cudnnOpTensorDescriptor_t d, cudnnOpTensorOp_t o, cudnnDataType_t t, cudnnNanPropagation_t n), (d, o, t, n)) \
  X(Cudnn, cudnnStatus_t, cudnnDestroyOpTensorDescriptor, (cudnnOpTensorDescriptor_t d), (d))

#define TRACER_BLASLT_FUNCTIONS(X)                                                                       \
  X(CublasLt, cublasStatus_t, cublasLtMatmul,                                                           \
    (cublasLtHandle_t h, cublasLtMatmulDesc_t d, const void* alpha, const void* A, cublasLtMatrixLayout_t ad, \
     const void* B, cublasLtMatrixLayout_t bd, const void* beta, const void* C, cublasLtMatrixLayout_t cd, \
     void* D, cublasLtMatrixLayout_t dd, const cublasLtMatmulAlgo_t* algo, void* ws, size_t ws_size,     \
     cudaStream_t s),                                                                                    \
    (h, d, alpha, A, ad, B, bd, beta, C, cd, D, dd, algo, ws, ws_size, s))                               \
  X(CublasLt, cublasStatus_t, cublasLtMatmulAlgoGetHeuristic,                                           \
    (cublasLtHandle_t h, cublasLtMatmulDesc_t d, cublasLtMatrixLayout_t ad, cublasLtMatrixLayout_t bd,   \
     cublasLtMatrixLayout_t cd, cublasLtMatrixLayout_t dd, cublasLtMatmulPreference_t p, int asked,      \
     cublasLtMatmulHeuristicResult_t results[], int* returned),                                          \
    (h, d, ad, bd, cd, dd, p, asked, results, returned))                                                 \
  X(CublasLt, cublasStatus_t, cublasLtMatmulDescCreate,                                                 \
    (cublasLtMatmulDesc_t * d, cublasComputeType_t c, cudaDataType_t s), (d, c, s))                      \
  X(CublasLt, cublasStatus_t, cublasLtMatmulDescSetAttribute,                                           \
    (cublasLtMatmulDesc_t d, cublasLtMatmulDescAttributes_t a, const void* buf, size_t size), (d, a, buf, size)) \
  X(CublasLt, cublasStatus_t, cublasLtMatmulDescDestroy, (cublasLtMatmulDesc_t d), (d))                  \
  X(CublasLt, cublasStatus_t, cublasLtMatrixLayoutCreate,                                               \
    (cublasLtMatrixLayout_t * l, cudaDataType t, uint64_t rows, uint64_t cols, int64_t ld), (l, t, rows, cols, ld)) \
  X(CublasLt, cublasStatus_t, cublasLtMatrixLayoutSetAttribute,                                         \
    (cublasLtMatrixLayout_t l, cublasLtMatrixLayoutAttribute_t a, const void* buf, size_t size), (l, a, buf, size)) \
  X(CublasLt, cublasStatus_t, cublasLtMatrixLayoutDestroy, (cublasLtMatrixLayout_t l), (l))              \
  X(CublasLt, cublasStatus_t, cublasLtMatmulPreferenceCreate, (cublasLtMatmulPreference_t * p), (p))     \
  X(CublasLt, cublasStatus_t, cublasLtMatmulPreferenceSetAttribute,                                     \
    (cublasLtMatmulPreference_t p, cublasLtMatmulPreferenceAttributes_t a, const void* buf, size_t size), \
    (p, a, buf, size))                                                                                   \
  X(CublasLt, cublasStatus_t, cublasLtMatmulPreferenceDestroy, (cublasLtMatmulPreference_t p), (p))

#define TRACER_BLAS_FUNCTIONS(X)                                                                         \
  X(Cublas, cublasStatus_t, cublasGemmEx,                                                               \
    (cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, const void* alpha, \
     const void* A, cudaDataType at, int lda, const void* B, cudaDataType bt, int ldb, const void* beta, \
     void* C, cudaDataType ct, int ldc, cublasComputeType_t c, cublasGemmAlgo_t algo),                   \
    (h, ta, tb, m, n, k, alpha, A, at, lda, B, bt, ldb, beta, C, ct, ldc, c, algo))                      \
  X(Cublas, cublasStatus_t, cublasGemmEx_64,                                                            \
    (cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int64_t m, int64_t n, int64_t k,      \
     const void* alpha, const void* A, cudaDataType at, int64_t lda, const void* B, cudaDataType bt,     \
     int64_t ldb, const void* beta, void* C, cudaDataType ct, int64_t ldc, cublasComputeType_t c,        \
     cublasGemmAlgo_t algo),                                                                             \
    (h, ta, tb, m, n, k, alpha, A, at, lda, B, bt, ldb, beta, C, ct, ldc, c, algo))                      \
  X(Cublas, cublasStatus_t, cublasGemmStridedBatchedEx,                                                 \
    (cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, const void* alpha, \
     const void* A, cudaDataType at, int lda, long long int sa, const void* B, cudaDataType bt, int ldb, \
     long long int sb, const void* beta, void* C, cudaDataType ct, int ldc, long long int sc, int count, \
     cublasComputeType_t c, cublasGemmAlgo_t algo),                                                      \
    (h, ta, tb, m, n, k, alpha, A, at, lda, sa, B, bt, ldb, sb, beta, C, ct, ldc, sc, count, c, algo))   \
  X(Cublas, cublasStatus_t, cublasGemmStridedBatchedEx_64,                                              \
    (cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int64_t m, int64_t n, int64_t k,      \
     const void* alpha, const void* A, cudaDataType at, int64_t lda, long long int sa, const void* B,    \
     cudaDataType bt, int64_t ldb, long long int sb, const void* beta, void* C, cudaDataType ct,         \
     int64_t ldc, long long int sc, int64_t count, cublasComputeType_t c, cublasGemmAlgo_t algo),        \
    (h, ta, tb, m, n, k, alpha, A, at, lda, sa, B, bt, ldb, sb, beta, C, ct, ldc, sc, count, c, algo))   \
  X(Cublas, cublasStatus_t, cublasSgemm_v2,                                                             \
    (cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, const float* alpha, \
     const float* A, int lda, const float* B, int ldb, const float* beta, float* C, int ldc),           \
    (h, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc))                                           \
  X(Cublas, cublasStatus_t, cublasSgemmStridedBatched,                                                  \
    (cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, const float* alpha, \
     const float* A, int lda, long long int sa, const float* B, int ldb, long long int sb,               \
     const float* beta, float* C, int ldc, long long int sc, int count),                                \
    (h, ta, tb, m, n, k, alpha, A, lda, sa, B, ldb, sb, beta, C, ldc, sc, count))                        \
  X(Cublas, cublasStatus_t, cublasSetStream_v2, (cublasHandle_t h, cudaStream_t s), (h, s))              \
  X(Cublas, cublasStatus_t, cublasSetWorkspace_v2, (cublasHandle_t h, void* ws, size_t size), (h, ws, size)) \
  X(Cublas, cublasStatus_t, cublasSetMathMode, (cublasHandle_t h, cublasMath_t m), (h, m))

// The driver's graph calls the shim makes (a tracer placed after the shim times them: what of a
// replayed call's time is the driver's).
#define TRACER_DRIVER_FUNCTIONS(X)                                                                       \
  X(Cuda, CUresult, cuGraphLaunch, (CUgraphExec e, CUstream s), (e, s))                                  \
  X(Cuda, CUresult, cuGraphExecKernelNodeSetParams_v2,                                                   \
    (CUgraphExec e, CUgraphNode n, const CUDA_KERNEL_NODE_PARAMS* p), (e, n, p))                         \
  X(Cuda, CUresult, cuGraphExecMemsetNodeSetParams,                                                      \
    (CUgraphExec e, CUgraphNode n, const CUDA_MEMSET_NODE_PARAMS* p, CUcontext c), (e, n, p, c))         \
  X(Cuda, CUresult, cuStreamIsCapturing, (CUstream s, CUstreamCaptureStatus* c), (s, c))                 \
  X(Cuda, CUresult, cuStreamGetCtx, (CUstream s, CUcontext* c), (s, c))                                  \
  X(Cuda, CUresult, cuCtxGetCurrent, (CUcontext* c), (c))                                                \
  X(Cuda, CUresult, cuPointerGetAttribute, (void* d, CUpointer_attribute a, CUdeviceptr p), (d, a, p))   \
  X(Cuda, CUresult, cuStreamBeginCapture_v2, (CUstream s, CUstreamCaptureMode m), (s, m))                \
  X(Cuda, CUresult, cuStreamEndCapture, (CUstream s, CUgraph* g), (s, g))                                \
  X(Cuda, CUresult, cuGraphInstantiateWithFlags, (CUgraphExec* e, CUgraph g, unsigned long long f), (e, g, f)) \
  X(Cuda, CUresult, cuGraphExecDestroy, (CUgraphExec e), (e))                                            \
  X(Cuda, CUresult, cuGraphDestroy, (CUgraph g), (g))                                                    \
  X(Cuda, CUresult, cuGraphGetNodes, (CUgraph g, CUgraphNode* n, size_t* c), (g, n, c))                  \
  X(Cuda, CUresult, cuGraphKernelNodeGetParams_v2, (CUgraphNode n, CUDA_KERNEL_NODE_PARAMS* p), (n, p))

// The one table: every function any tracer can wrap.
#define TRACER_FUNCTIONS(X)  \
  TRACER_HANDLE_FUNCTIONS(X) \
  TRACER_BACKEND_FUNCTIONS(X) \
  TRACER_LEGACY_OPS(X)       \
  TRACER_LEGACY_DESCRIPTORS(X) \
  TRACER_BLASLT_FUNCTIONS(X) \
  TRACER_BLAS_FUNCTIONS(X)   \
  TRACER_DRIVER_FUNCTIONS(X)

namespace {

#define TRACER_INDEX(library, type, name, params, args) k_##name,
enum Function : int { TRACER_FUNCTIONS(TRACER_INDEX) kFunctions };
#undef TRACER_INDEX

// Where each library's functions are when RTLD_NEXT has none, and what a call returns when the
// function is found nowhere.
struct Library {
  const char* sonames[3];
  int not_initialized;
};
constexpr Library kCudnn = {{"libcudnn.so.9", nullptr, nullptr}, CUDNN_STATUS_NOT_INITIALIZED};
constexpr Library kCublasLt = {{"libcublasLt.so.13", "libcublasLt.so.12", nullptr}, CUBLAS_STATUS_NOT_INITIALIZED};
constexpr Library kCublas = {{"libcublas.so.13", "libcublas.so.12", nullptr}, CUBLAS_STATUS_NOT_INITIALIZED};
constexpr Library kCuda = {{"libcuda.so.1", nullptr, nullptr}, CUDA_ERROR_NOT_INITIALIZED};

// Relaxed: each is a tally read after the calls (at exit, or by the thread that made them).
std::atomic<std::uint64_t> g_counts[kFunctions];
std::atomic<std::uint64_t> g_nanoseconds[kFunctions];
std::atomic<std::uint64_t> g_nested_counts[kFunctions];
std::atomic<std::uint64_t> g_nested_nanoseconds[kFunctions];
// Traced calls this thread is inside (initial-exec: a preloaded library, no allocation on first use).
__thread int g_depth __attribute__((tls_model("initial-exec")));

std::uint64_t now_ns() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<std::uint64_t>(t.tv_sec) * 1000000000u + static_cast<std::uint64_t>(t.tv_nsec);
}

void* real_function(const Library& library, const char* name) {
  if (void* next = dlsym(RTLD_NEXT, name)) return next;
  for (const char* soname : library.sonames) {
    if (soname == nullptr) break;
    if (void* loaded = dlopen(soname, RTLD_NOLOAD | RTLD_LAZY)) {
      if (void* found = dlsym(loaded, name)) return found;
    }
  }
  return nullptr;
}

// Counts one call (top level, or nested in another traced call of this thread) and its time.
class Tally {
 public:
  explicit Tally(Function f) : f_(f), nested_(g_depth++ > 0), start_(now_ns()) {}
  ~Tally() {
    const std::uint64_t took = now_ns() - start_;
    --g_depth;
    (nested_ ? g_nested_counts : g_counts)[f_].fetch_add(1, std::memory_order_relaxed);
    (nested_ ? g_nested_nanoseconds : g_nanoseconds)[f_].fetch_add(took, std::memory_order_relaxed);
  }
  Tally(const Tally&) = delete;
  Tally& operator=(const Tally&) = delete;

 private:
  Function f_;
  bool nested_;
  std::uint64_t start_;
};

}  // namespace

// The real function's pointer has the wrapper's own type: cublas_api.h overloads some names for C++
// (an inline cublasGemmEx taking the compute type as a cudaDataType), so &::name can be ambiguous.
#define TRACER_WRAP(library, type, name, params, args)                                        \
  extern "C" __attribute__((visibility("default"))) type name params {                        \
    static const auto real = reinterpret_cast<type(*) params>(real_function(k##library, #name)); \
    if (real == nullptr) {                                                                    \
      g_counts[k_##name].fetch_add(1, std::memory_order_relaxed);                             \
      return static_cast<type>(k##library.not_initialized);                                   \
    }                                                                                         \
    const Tally tally(k_##name);                                                              \
    return real args;                                                                         \
  }
TRACER_FUNCTIONS(TRACER_WRAP)
#undef TRACER_WRAP

namespace {

// The index of `name` in the table, or kFunctions.
int index_of(const char* name) {
  static const char* const kNames[] = {
#define TRACER_NAME(library, type, function, params, args) #function,
      TRACER_FUNCTIONS(TRACER_NAME)
#undef TRACER_NAME
  };
  for (int i = 0; i < kFunctions; ++i)
    if (std::strcmp(name, kNames[i]) == 0) return i;
  return kFunctions;
}

}  // namespace

// Calls of `name` the program made (not those nested in another traced call), and their time.
extern "C" __attribute__((visibility("default"))) std::uint64_t tracer_count(const char* name) {
  const int i = index_of(name);
  return i == kFunctions ? 0 : g_counts[i].load(std::memory_order_relaxed);
}

extern "C" __attribute__((visibility("default"))) std::uint64_t tracer_ns(const char* name) {
  const int i = index_of(name);
  return i == kFunctions ? 0 : g_nanoseconds[i].load(std::memory_order_relaxed);
}

// {"cudnnSetStream": {"calls": N, "ns": T}, ...}: every function called at least once (those it
// does not export never are), with "nested_calls" and "nested_ns" when some calls were nested.
// The variable naming the report: another for a second tracer in the same process (the driver's).
#ifndef TRACER_REPORT_VARIABLE
#define TRACER_REPORT_VARIABLE "CUDNN_TRACER_REPORT"
#endif
__attribute__((destructor)) static void write_report() {
  const char* path = std::getenv(TRACER_REPORT_VARIABLE);
  if (path == nullptr || *path == '\0') return;
  FILE* out = std::fopen(path, "w");
  if (out == nullptr) return;
  const char* separator = "";
  std::fputs("{", out);
  const auto value = [](const std::atomic<std::uint64_t>& v) {
    return static_cast<unsigned long long>(v.load(std::memory_order_relaxed));
  };
#define TRACER_REPORT(library, type, function, params, args)                                            \
  if (value(g_counts[k_##function]) != 0 || value(g_nested_counts[k_##function]) != 0) {                \
    std::fprintf(out, "%s\"%s\": {\"calls\": %llu, \"ns\": %llu", separator, #function,                 \
                 value(g_counts[k_##function]), value(g_nanoseconds[k_##function]));                    \
    if (value(g_nested_counts[k_##function]) != 0)                                                      \
      std::fprintf(out, ", \"nested_calls\": %llu, \"nested_ns\": %llu",                                \
                   value(g_nested_counts[k_##function]), value(g_nested_nanoseconds[k_##function]));    \
    std::fputs("}", out);                                                                               \
    separator = ", ";                                                                                   \
  }
  TRACER_FUNCTIONS(TRACER_REPORT)
#undef TRACER_REPORT
  std::fputs("}\n", out);
  std::fclose(out);
}
