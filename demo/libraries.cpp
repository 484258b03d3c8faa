// The libraries the demo opens (the GPU's, or the test tree's stubs), its device memory, and how it
// reports trouble.
#include <dlfcn.h>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "demo/demo.h"

namespace demo {

namespace {

constexpr const char* kName = "cudnn_fastpath_demo";

template <typename F>
void load(void* library, const char* library_name, const char* name, F& pointer) {
  pointer = reinterpret_cast<F>(library_function(library, name));
  if (pointer == nullptr) fail("%s has no %s", library_name, name);
}

// `names` in order, the first that loads, RTLD_GLOBAL as a framework that links the library gets
// it (the shim then finds it with RTLD_NEXT); null, with every dlerror in `errors`, when none does.
void* open_first(std::initializer_list<const char*> names, const char*& opened, std::string& errors) {
  for (const char* candidate : names) {
    if (candidate == nullptr) continue;
    if (void* library = dlopen(candidate, RTLD_NOW | RTLD_GLOBAL)) {
      opened = candidate;
      return library;
    }
    errors += std::string(errors.empty() ? "" : "; ") + dlerror();
  }
  return nullptr;
}

// Fills the driver and returns true when there is a GPU to use; otherwise says why.
bool open_gpu(Libraries& libs) {
  void* library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    libs.why_no_gpu = "no CUDA driver: libcuda.so.1 cannot be loaded";
    return false;
  }
  Driver& d = libs.driver;
#define DEMO_LOAD(f) load(library, "libcuda.so.1", DEMO_EXPORTED_NAME(f), d.f);
  DEMO_DRIVER_FUNCTIONS(DEMO_LOAD)
  DEMO_GPU_DRIVER_FUNCTIONS(DEMO_LOAD)
#undef DEMO_LOAD
  int count = 0;
  const CUresult init = d.cuInit(0);
  if (init != CUDA_SUCCESS || d.cuDeviceGetCount(&count) != CUDA_SUCCESS || count == 0) {
    const char* text = nullptr;
    if (init == CUDA_SUCCESS || d.cuGetErrorString(init, &text) != CUDA_SUCCESS) text = "no device";
    libs.why_no_gpu = std::string("CUDA driver found, but no usable GPU: ") + text;
    libs.driver = Driver{};
    dlclose(library);  // so that the stub driver, by its path, is the libcuda.so.1 the shim finds
    return false;
  }
  // The primary context is the one the CUDA runtime (and so cuDNN and cuBLAS) uses too.
  CUcontext context = nullptr;
  auto check = [&](CUresult r, const char* what) {
    const char* text = "unknown error";
    if (r != CUDA_SUCCESS) d.cuGetErrorString(r, &text), fail("%s failed: %s (CUresult %d)", what, text, int(r));
  };
  check(d.cuDeviceGet(&libs.device, 0), "cuDeviceGet");
  check(d.cuDevicePrimaryCtxRetain(&context, libs.device), "cuDevicePrimaryCtxRetain");
  check(d.cuCtxSetCurrent(context), "cuCtxSetCurrent");
  return true;
}

void open_cudnn(Libraries& libs, std::initializer_list<const char*> names, const char* hint) {
  std::string errors;
  libs.cudnn_library = open_first(names, libs.cudnn_name, errors);
  if (libs.cudnn_library == nullptr) fail("cannot load libcudnn (%s)%s", errors.c_str(), hint);
#define DEMO_LOAD(f) load(libs.cudnn_library, libs.cudnn_name, DEMO_EXPORTED_NAME(f), libs.cudnn_itself.f);
  DEMO_CUDNN_FUNCTIONS(DEMO_LOAD)
#undef DEMO_LOAD
}

// cuBLASLt, then cuBLAS (which needs it); false, with why, when either cannot be loaded.
bool open_blas(Libraries& libs, const char* lt_name, const char* blas_name) {
  const char* opened = nullptr;
  std::string errors;
  if (open_first({lt_name}, opened, errors) == nullptr || open_first({blas_name}, opened, errors) == nullptr) {
    libs.blas_missing = errors;
    return false;
  }
  return true;
}

// The program's view of the functions: fails the demo for cuDNN, leaves cuBLAS out for a missing one.
void take_program_functions(Libraries& libs) {
#define DEMO_TAKE(f)                                                                             \
  libs.cudnn.f = reinterpret_cast<decltype(libs.cudnn.f)>(program_function(DEMO_EXPORTED_NAME(f))); \
  if (libs.cudnn.f == nullptr) fail("%s not found by dlsym(RTLD_DEFAULT)", DEMO_EXPORTED_NAME(f));
  DEMO_CUDNN_FUNCTIONS(DEMO_TAKE)
#undef DEMO_TAKE
  if (!libs.blas_loaded) return;
  Blas& b = libs.blas;
#define DEMO_TAKE(f)                                                                         \
  b.f = reinterpret_cast<decltype(b.f)>(program_function(DEMO_EXPORTED_NAME(f)));           \
  if (b.f == nullptr && libs.blas_loaded) libs.blas_loaded = false, libs.blas_missing = "no " DEMO_EXPORTED_NAME(f);
  DEMO_LT_FUNCTIONS(DEMO_TAKE)
  DEMO_CUBLAS_FUNCTIONS(DEMO_TAKE)
  DEMO_TAKE(cublasGemmEx)
#undef DEMO_TAKE
}

}  // namespace

void fail(const char* format, ...) {
  std::fflush(stdout);
  std::va_list args;
  va_start(args, format);
  std::fprintf(stderr, "%s: ", kName);
  std::vfprintf(stderr, format, args);
  std::fputc('\n', stderr);
  va_end(args);
  std::exit(1);
}

void say_failed(const char* format, ...) {
  std::va_list args;
  va_start(args, format);
  std::printf("  FAILED: ");
  std::vprintf(format, args);
  std::printf(" (the section stops here)\n");
  va_end(args);
}

// glibc's dlsym itself; plain dlsym on a glibc that has none of these versions (not seen).
void* library_function(void* library, const char* name) {
  using Dlsym = void* (*)(void*, const char*);
  static const auto glibc_dlsym = [] {
    for (const char* version : {"GLIBC_2.34", "GLIBC_2.2.5", "GLIBC_2.17"})
      if (void* found = dlvsym(RTLD_DEFAULT, "dlsym", version)) return reinterpret_cast<Dlsym>(found);
    return static_cast<Dlsym>(&dlsym);
  }();
  return glibc_dlsym(library, name);
}

void open_libraries(Libraries& libs, bool force_stub) {
  libs.why_no_gpu = "--stub was given";
  libs.gpu = !force_stub && open_gpu(libs);
  if (libs.gpu) {
    // The cuDNN CMake found next to the headers the demo was built with, else the one the system
    // finds (LD_LIBRARY_PATH, ld.so.cache): a machine can hold several.
    const char* built_against = nullptr;
#ifdef DEMO_CUDNN_BUILT_AGAINST
    built_against = DEMO_CUDNN_BUILT_AGAINST;
#endif
    open_cudnn(libs, {built_against, "libcudnn.so.9"},
               "; a GPU is there: put cuDNN's lib folder on LD_LIBRARY_PATH (pip wheel: site-packages/nvidia/cudnn/lib)");
    const char* opened = nullptr;
    std::string errors;
    void* runtime = open_first({"libcudart.so.13"}, opened, errors);
    if (runtime == nullptr) fail("cannot load the CUDA runtime (%s)", errors.c_str());
#define DEMO_LOAD(f) load(runtime, "libcudart.so.13", DEMO_EXPORTED_NAME(f), libs.runtime.f);
    DEMO_RUNTIME_FUNCTIONS(DEMO_LOAD)
#undef DEMO_LOAD
    libs.blas_loaded = open_blas(libs, "libcublasLt.so.13", "libcublas.so.13");
    char device_name[256] = "?";
    libs.driver.cuDeviceGetName(device_name, sizeof device_name, libs.device);
    Dl_info loaded{};
    const bool located =
        dladdr(reinterpret_cast<void*>(libs.cudnn_itself.cudnnSetStream), &loaded) != 0 && loaded.dli_fname;
    const std::size_t v = libs.cudnn_itself.cudnnGetVersion();
    std::printf("cudnn-fastpath demo: real cuDNN %zu.%zu.%zu (%s) on %s\n", v / 10000, v % 10000 / 100, v % 100,
                located ? loaded.dli_fname : libs.cudnn_name, device_name);
  } else {
#if defined(DEMO_STUB_CUDNN_PATH) && defined(DEMO_STUB_CUDA_PATH)
    std::printf("cudnn-fastpath demo: STUB libcudnn, cuBLAS and driver of the test tree, not a GPU (%s)\n"
                "  (the times are the stubs', the counts are the point)\n",
                libs.why_no_gpu.c_str());
    // The stub driver first, by its path: its soname is libcuda.so.1, the name the shim looks for.
    libs.stub_driver = dlopen(DEMO_STUB_CUDA_PATH, RTLD_NOW | RTLD_GLOBAL);
    if (libs.stub_driver == nullptr) fail("cannot load the stub driver (%s)", dlerror());
#define DEMO_LOAD(f) load(libs.stub_driver, DEMO_STUB_CUDA_PATH, DEMO_EXPORTED_NAME(f), libs.driver.f);
    DEMO_DRIVER_FUNCTIONS(DEMO_LOAD)
#undef DEMO_LOAD
    open_cudnn(libs, {DEMO_STUB_CUDNN_PATH}, "");
    libs.blas_loaded = open_blas(libs, DEMO_STUB_CUBLASLT_PATH, DEMO_STUB_CUBLAS_PATH);
    StubCounts& s = libs.stub;
    s.cudnn = reinterpret_cast<decltype(s.cudnn)>(library_function(libs.cudnn_library, "stubcudnn_counters"));
    s.backend = reinterpret_cast<decltype(s.backend)>(library_function(libs.cudnn_library, "stubbackend_counters"));
    s.legacy_op = reinterpret_cast<decltype(s.legacy_op)>(library_function(libs.cudnn_library, "stubcudnn_op_counters"));
    s.lt = reinterpret_cast<decltype(s.lt)>(library_function(RTLD_DEFAULT, "stubblaslt_counters"));
    s.blas = reinterpret_cast<decltype(s.blas)>(library_function(RTLD_DEFAULT, "stubblas_counters"));
    if (!s.backend || !s.legacy_op || (libs.blas_loaded && (!s.lt || !s.blas)))
      fail("the stub libraries lack their counters: not the test tree's stubs?");
#else
    fail("%s, and this build has no stub libcudnn to fall back on (configure with CUDNN_FASTPATH_BUILD_TESTS=ON)",
         libs.why_no_gpu.c_str());
#endif
  }
  const bool stub_cudnn = library_function(libs.cudnn_library, "stubcudnn_counters") != nullptr;
  if (libs.gpu == stub_cudnn) fail("%s is not the library it was meant to be", libs.cudnn_name);
  take_program_functions(libs);
}

void close_libraries(Libraries& libs) {
  if (libs.gpu) libs.driver.cuDevicePrimaryCtxRelease(libs.device);
}

DeviceMemory::DeviceMemory(Libraries& libs, std::size_t bytes) : libs_(libs), size_(bytes) {
  if (libs.gpu) {
    void* memory = nullptr;
    const cudaError_t e = libs.runtime.cudaMalloc(&memory, bytes);
    if (e != cudaSuccess) fail("cudaMalloc of %zu bytes failed: %s", bytes, libs.runtime.cudaGetErrorString(e));
    base_ = static_cast<char*>(memory);
    if (libs.runtime.cudaMemset(base_, 0, bytes) != cudaSuccess) fail("cudaMemset failed");
    return;
  }
  // The stub driver's cuMemAlloc is malloc; it is told the range is device memory, as a real
  // driver would know (the stubs read and write their 8-byte digests there).
  CUdeviceptr memory = 0;
  if (libs.driver.cuMemAlloc(&memory, bytes + 256) != CUDA_SUCCESS) fail("the stub's cuMemAlloc failed");
  base_ = reinterpret_cast<char*>(memory);
  std::memset(base_, 0, bytes + 256);
  // stub_cuda.h's stubcuda_add_device_memory (that header undoes cuda.h's cuStreamDestroy macro).
  auto add = reinterpret_cast<void (*)(std::uintptr_t, std::size_t)>(
      library_function(libs.stub_driver, "stubcuda_add_device_memory"));
  if (add == nullptr) fail("the stub driver has no stubcuda_add_device_memory");
  add(memory, bytes + 256);
}

DeviceMemory::~DeviceMemory() {
  if (libs_.gpu) libs_.runtime.cudaFree(base_);
  else libs_.driver.cuMemFree(reinterpret_cast<CUdeviceptr>(base_));
}

void* DeviceMemory::take(std::size_t bytes) {
  const std::uintptr_t start = (reinterpret_cast<std::uintptr_t>(base_) + used_ + 255) & ~std::uintptr_t{255};
  const std::size_t offset = start - reinterpret_cast<std::uintptr_t>(base_);
  if (offset + bytes > size_) fail("the demo's %zu bytes of device memory ran out", size_);
  used_ = offset + bytes;
  return base_ + offset;
}

void synchronize(const Libraries& libs, cudaStream_t stream) {
  if (!libs.gpu) return;
  const CUresult r = libs.driver.cuStreamSynchronize(reinterpret_cast<CUstream>(stream));
  const char* text = "unknown error";
  if (r != CUDA_SUCCESS) libs.driver.cuGetErrorString(r, &text), say_failed("cuStreamSynchronize: %s", text);
}

}  // namespace demo
