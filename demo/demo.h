// The demo's parts (cudnn_fastpath_demo.cpp runs them): the libraries it opens, the device memory
// and streams it uses, the shim's counters it reads, and its sections, one per feature.
//
// Every library is opened with dlopen, so the demo links no CUDA library: with a usable GPU the
// real ones (libcuda.so.1, libcudart.so.13, libcudnn.so.9, libcublasLt.so.13, libcublas.so.13),
// otherwise the test tree's stubs by the paths baked in at build time. The functions a framework
// calls are taken the way a program finds them, dlsym(RTLD_DEFAULT): the shim's where it is
// preloaded. What the stubs count is read from their own handles, around the shim.
#pragma once

#include <cublasLt.h>
#include <cublas_api.h>
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>
#include <dlfcn.h>

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "shim/include/cudnn_fastpath/shim_control.h"
#include "tests/stub/stub_backend_control.h"
#include "tests/stub/stub_blas_control.h"
#include "tests/stub/stub_control.h"
#include "tests/stub/stub_legacy_control.h"

#pragma GCC diagnostic ignored "-Wdeprecated-declarations"  // cuDNN's legacy batch norm

namespace demo {

[[noreturn]] __attribute__((format(printf, 1, 2))) void fail(const char* format, ...);
// One line on stdout for a call that failed inside a section (which then stops, the demo goes on).
__attribute__((format(printf, 1, 2))) void say_failed(const char* format, ...);

// The name a function is exported under: cuda.h maps some names to versioned ones
// (cuMemAlloc -> cuMemAlloc_v2), so the macro is expanded before it is turned into a string.
#define DEMO_EXPORTED_NAME(f) DEMO_STRING(f)
#define DEMO_STRING(f) #f

// glibc's own dlsym, which the shim (it exports dlsym, not dlvsym) does not answer.
void* library_function(void* library, const char* name);
// What the program's own lookup finds: the shim's function where it interposes.
inline void* program_function(const char* name) { return dlsym(RTLD_DEFAULT, name); }

// ---- the tables: one row per function, typed by the library's own header -----------------------

// The driver: in both modes (the stub exports these), and only from a real one.
#define DEMO_DRIVER_FUNCTIONS(X) X(cuStreamCreate) X(cuStreamDestroy) X(cuMemAlloc) X(cuMemFree)
#define DEMO_GPU_DRIVER_FUNCTIONS(X)                                                               \
  X(cuInit) X(cuGetErrorString) X(cuDeviceGetCount) X(cuDeviceGet) X(cuDeviceGetName)             \
  X(cuDevicePrimaryCtxRetain) X(cuDevicePrimaryCtxRelease) X(cuCtxSetCurrent) X(cuStreamSynchronize)
// The runtime, on a GPU only: its device memory.
#define DEMO_RUNTIME_FUNCTIONS(X) X(cudaMalloc) X(cudaFree) X(cudaMemset) X(cudaGetErrorString)
// cuDNN as the program calls it.
#define DEMO_CUDNN_FUNCTIONS(X)                                                                    \
  X(cudnnGetVersion) X(cudnnGetErrorString) X(cudnnCreate) X(cudnnDestroy) X(cudnnSetStream)      \
  X(cudnnCreateTensorDescriptor) X(cudnnSetTensor4dDescriptor) X(cudnnAddTensor)                  \
  X(cudnnDestroyTensorDescriptor) X(cudnnBatchNormalizationForwardInference)                      \
  X(cudnnBackendCreateDescriptor) X(cudnnBackendDestroyDescriptor) X(cudnnBackendSetAttribute)    \
  X(cudnnBackendGetAttribute) X(cudnnBackendFinalize) X(cudnnBackendExecute)
#define DEMO_LT_FUNCTIONS(X)                                                                       \
  X(cublasLtCreate) X(cublasLtDestroy) X(cublasLtMatmulDescCreate) X(cublasLtMatmulDescSetAttribute) \
  X(cublasLtMatmulDescDestroy) X(cublasLtMatrixLayoutCreate) X(cublasLtMatrixLayoutDestroy)       \
  X(cublasLtMatmulPreferenceCreate) X(cublasLtMatmulPreferenceSetAttribute)                       \
  X(cublasLtMatmulPreferenceDestroy) X(cublasLtMatmulAlgoGetHeuristic) X(cublasLtMatmul)
#define DEMO_CUBLAS_FUNCTIONS(X) \
  X(cublasCreate_v2) X(cublasDestroy_v2) X(cublasSetStream_v2) X(cublasSetWorkspace_v2)

#define DEMO_MEMBER(f) decltype(&::f) f = nullptr;
struct Driver {
  DEMO_DRIVER_FUNCTIONS(DEMO_MEMBER)
  DEMO_GPU_DRIVER_FUNCTIONS(DEMO_MEMBER)
};
struct Runtime {
  DEMO_RUNTIME_FUNCTIONS(DEMO_MEMBER)
};
struct Cudnn {
  DEMO_CUDNN_FUNCTIONS(DEMO_MEMBER)
  const char* error(cudnnStatus_t status) const { return cudnnGetErrorString(status); }
};
struct Blas {
  DEMO_LT_FUNCTIONS(DEMO_MEMBER)
  DEMO_CUBLAS_FUNCTIONS(DEMO_MEMBER)
  // cublas_api.h overloads it in C++ (a cudaDataType compute type): the exported one, spelt out.
  cublasStatus_t (*cublasGemmEx)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const void*,
                                 const void*, cudaDataType, int, const void*, cudaDataType, int, const void*, void*,
                                 cudaDataType, int, cublasComputeType_t, cublasGemmAlgo_t) = nullptr;
};
#undef DEMO_MEMBER

// What the stubs count, from their own handles (null on the real libraries).
struct StubCounts {
  decltype(&stubcudnn_counters) cudnn = nullptr;
  decltype(&stubbackend_counters) backend = nullptr;
  decltype(&stubcudnn_op_counters) legacy_op = nullptr;
  decltype(&stubblaslt_counters) lt = nullptr;
  decltype(&stubblas_counters) blas = nullptr;
  bool present() const { return cudnn != nullptr; }
};

// Everything the demo opened.
struct Libraries {
  bool gpu = false;
  std::string why_no_gpu;  // when !gpu
  Driver driver;
  Runtime runtime;             // on a GPU only
  void* cudnn_library = nullptr;
  const char* cudnn_name = nullptr;
  Cudnn cudnn;                 // as the program calls it (the shim's where it interposes)
  Cudnn cudnn_itself;          // from the library handle, around the shim
  bool blas_loaded = false;    // cuBLASLt and cuBLAS (section 5 says why not when false)
  std::string blas_missing;
  Blas blas;
  StubCounts stub;
  CUdevice device = 0;
  void* stub_driver = nullptr; // the stub libcuda's handle (for its controls)
};

// Opens them all (the GPU's, or the stubs with force_stub or no GPU) and prints the first line.
void open_libraries(Libraries& libs, bool force_stub);
void close_libraries(Libraries& libs);

// Device memory for the sections: cudaMalloc on a GPU; on the stubs, host memory the stub driver
// is told is device memory (graph replay keeps away from host pointers).
class DeviceMemory {
 public:
  DeviceMemory(Libraries& libs, std::size_t bytes);
  ~DeviceMemory();
  // `bytes` of it, 256-byte aligned, zeroed; fails the demo when it runs out.
  void* take(std::size_t bytes);

 private:
  Libraries& libs_;
  char* base_ = nullptr;
  std::size_t size_ = 0, used_ = 0;
};

// Waits for the stream's work on a GPU (nothing to wait for on the stubs).
void synchronize(const Libraries& libs, cudaStream_t stream);

// ---- the shim's counters, by the names its public control API gives them ----------------------
class ShimCounters {
 public:
  using Snapshot = std::vector<std::uint64_t>;
  ShimCounters();
  Snapshot now() const;
  // "  shim: a=1 b=2", each the change since `before`; or why there are no counts.
  void print_since(const Snapshot& before, std::initializer_list<const char*> names) const;

 private:
  int (*stats_)(cudnn_fastpath_stats_t*, std::size_t) = nullptr;
  std::vector<std::string> names_;  // of the uint64_t members, in order
};

// ---- the sections (each prints a heading, what it did and the counters that show it) ------------

struct Streams {
  cudaStream_t main, side;
};
constexpr int kOps = 20;  // ops per section 2 to 5

void backend_section(const Libraries& libs, const ShimCounters& shim, DeviceMemory& memory, Streams streams);
void batch_norm_section(const Libraries& libs, const ShimCounters& shim, DeviceMemory& memory, Streams streams);
void linear_section(const Libraries& libs, const ShimCounters& shim, DeviceMemory& memory, Streams streams);

}  // namespace demo
