// cudnn_fastpath_demo: what a framework does with cuDNN, timed with and without the shim.
//
// A framework keeps one handle and, before every op, calls cudnnSetStream with the stream it is
// about to use: nearly always the same one, now and then another. This program does that in
// rounds and times each round two ways, alternating them:
//   "with shim": cudnnSetStream as the program would find it, dlsym(RTLD_DEFAULT): the shim's
//                when it is preloaded (run it under scripts/cudnn-fastpath);
//   "without":   the same function looked up in the libcudnn handle itself with glibc's own dlsym
//                (taken by version with dlvsym), which bypasses any preload: the shim answers
//                plain dlsym lookups of cuDNN's functions too.
// Each column has a handle of its own: the shim must see every SetStream on a handle it tracks,
// and calls made around it on the same handle would leave it believing a stale stream.
//
// With a usable GPU it loads the real libcudnn.so.9 and times the real thing. Without one it loads
// the stub libcudnn of the test tree (path baked in at build time), says so first, and shows how
// many cudnnSetStream calls reached the library in each column.
//
// It links no CUDA library: the driver and cuDNN are opened with dlopen, so it runs anywhere.
#include <cuda.h>
#include <cudnn.h>
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "tests/stub/stub_control.h"

namespace {

constexpr const char* kName = "cudnn_fastpath_demo";

[[noreturn]] __attribute__((format(printf, 1, 2))) void fail(const char* format, ...) {
  std::fflush(stdout);
  std::va_list args;
  va_start(args, format);
  std::fprintf(stderr, "%s: ", kName);
  std::vfprintf(stderr, format, args);
  std::fputc('\n', stderr);
  va_end(args);
  std::exit(1);
}

// The name a function is exported under: cuda.h maps some names to versioned ones
// (cuMemAlloc -> cuMemAlloc_v2), so the macro is expanded before it is turned into a string.
#define DEMO_EXPORTED_NAME(f) DEMO_STRING(f)
#define DEMO_STRING(f) #f

// glibc's dlsym itself, which the shim (it exports dlsym, not dlvsym) does not see; plain dlsym
// on a glibc that has neither version (not seen).
void* library_function(void* library, const char* name) {
  using Dlsym = void* (*)(void*, const char*);
  static const auto glibc_dlsym = [] {
    for (const char* version : {"GLIBC_2.34", "GLIBC_2.2.5", "GLIBC_2.17"})
      if (void* found = dlvsym(RTLD_DEFAULT, "dlsym", version)) return reinterpret_cast<Dlsym>(found);
    return static_cast<Dlsym>(&dlsym);
  }();
  return glibc_dlsym(library, name);
}

template <typename F>
void load(void* library, const char* library_name, const char* name, F& pointer) {
  pointer = reinterpret_cast<F>(library_function(library, name));
  if (pointer == nullptr) fail("%s has no %s", library_name, name);
}

// ---- The CUDA driver (libcuda.so.1): one row per function, typed by cuda.h. ----------------------
#define DEMO_DRIVER_FUNCTIONS(X)                                                                   \
  X(cuInit) X(cuGetErrorString) X(cuDeviceGetCount) X(cuDeviceGet) X(cuDeviceGetName)             \
  X(cuDevicePrimaryCtxRetain) X(cuDevicePrimaryCtxRelease) X(cuCtxSetCurrent) X(cuStreamCreate)   \
  X(cuStreamSynchronize) X(cuStreamDestroy) X(cuMemAlloc) X(cuMemFree) X(cuMemsetD32)

struct Driver {
#define DEMO_DECLARE(f) decltype(&f) f##_ = nullptr;
  DEMO_DRIVER_FUNCTIONS(DEMO_DECLARE)
#undef DEMO_DECLARE
  CUdevice device = 0;
  CUcontext context = nullptr;

  void check(CUresult result, const char* what) const {
    if (result == CUDA_SUCCESS) return;
    const char* text = nullptr;
    if (cuGetErrorString_ == nullptr || cuGetErrorString_(result, &text) != CUDA_SUCCESS) text = "unknown error";
    fail("%s failed: %s (CUresult %d)", what, text, static_cast<int>(result));
  }
};

// Fills `driver` and returns true when there is a GPU to use; otherwise says why in `reason`.
bool open_gpu(Driver& driver, std::string& reason) {
  void* library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    reason = "no CUDA driver: libcuda.so.1 cannot be loaded";
    return false;
  }
#define DEMO_LOAD(f) load(library, "libcuda.so.1", DEMO_EXPORTED_NAME(f), driver.f##_);
  DEMO_DRIVER_FUNCTIONS(DEMO_LOAD)
#undef DEMO_LOAD
  int count = 0;
  const CUresult init = driver.cuInit_(0);
  if (init != CUDA_SUCCESS || driver.cuDeviceGetCount_(&count) != CUDA_SUCCESS || count == 0) {
    const char* text = nullptr;
    if (init == CUDA_SUCCESS || driver.cuGetErrorString_(init, &text) != CUDA_SUCCESS) text = "no device";
    reason = std::string("CUDA driver found, but no usable GPU: ") + text;
    return false;
  }
  // The primary context is the one the CUDA runtime inside cuDNN uses too.
  driver.check(driver.cuDeviceGet_(&driver.device, 0), "cuDeviceGet");
  driver.check(driver.cuDevicePrimaryCtxRetain_(&driver.context, driver.device), "cuDevicePrimaryCtxRetain");
  driver.check(driver.cuCtxSetCurrent_(driver.context), "cuCtxSetCurrent");
  return true;
}

// ---- cuDNN, from the library handle (never the shim). ---------------------------------------------
#define DEMO_CUDNN_FUNCTIONS(X)                                                                    \
  X(cudnnGetVersion) X(cudnnGetErrorString) X(cudnnCreate) X(cudnnDestroy) X(cudnnSetStream)      \
  X(cudnnCreateTensorDescriptor) X(cudnnSetTensor4dDescriptor) X(cudnnAddTensor)                  \
  X(cudnnDestroyTensorDescriptor)

struct Cudnn {
#define DEMO_DECLARE(f) decltype(&f) f##_ = nullptr;
  DEMO_CUDNN_FUNCTIONS(DEMO_DECLARE)
#undef DEMO_DECLARE
  void* library = nullptr;
  const char* library_name = nullptr;

  void check(cudnnStatus_t status, const char* what) const {
    if (status != CUDNN_STATUS_SUCCESS)
      fail("%s failed: %s (status %d)", what, cudnnGetErrorString_(status), static_cast<int>(status));
  }
};

// `names` in order, the first that loads. RTLD_GLOBAL, as a framework that links cuDNN gets it:
// the shim then finds it with RTLD_NEXT.
void open_cudnn(Cudnn& cudnn, std::vector<const char*> names, const char* hint) {
  std::string errors;
  for (const char* candidate : names) {
    cudnn.library = dlopen(candidate, RTLD_NOW | RTLD_GLOBAL);
    if (cudnn.library != nullptr) {
      cudnn.library_name = candidate;
      break;
    }
    errors += std::string(errors.empty() ? "" : "; ") + dlerror();
  }
  if (cudnn.library == nullptr) fail("cannot load libcudnn (%s)%s", errors.c_str(), hint);
  const char* name = cudnn.library_name;
#define DEMO_LOAD(f) load(cudnn.library, name, DEMO_EXPORTED_NAME(f), cudnn.f##_);
  DEMO_CUDNN_FUNCTIONS(DEMO_LOAD)
#undef DEMO_LOAD
}

// ---- One column's handle and the loop a framework runs. -------------------------------------------
struct Column {
  Column(const char* name_, decltype(&cudnnSetStream) set_stream_) : name(name_), set_stream(set_stream_) {}
  const char* name;
  decltype(&cudnnSetStream) set_stream;
  cudnnHandle_t handle = nullptr;
  std::vector<double> ns_set_stream, ns_with_op;  // per op, one entry per round
  unsigned long long calls_made = 0, calls_reached = 0;  // the stub's counts
};

struct Workload {
  const Cudnn* cudnn;
  cudaStream_t streams[2];
  cudnnTensorDescriptor_t desc;
  const void* a;
  void* c;
  int ops_per_round;
  int switch_every;  // every switch_every-th op goes to the other stream, as a framework's side stream

  cudaStream_t stream_for(int i) const { return streams[i % switch_every == switch_every - 1 ? 1 : 0]; }

  // Returns the time per op of one round, in nanoseconds.
  double round(const Column& column, bool with_op) const {
    static const float one = 1.0f;
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < ops_per_round; ++i) {
      const cudnnStatus_t set = column.set_stream(column.handle, stream_for(i));
      if (set != CUDNN_STATUS_SUCCESS) cudnn->check(set, "cudnnSetStream");
      if (with_op) {
        const cudnnStatus_t op = cudnn->cudnnAddTensor_(column.handle, &one, desc, a, &one, desc, c);
        if (op != CUDNN_STATUS_SUCCESS) cudnn->check(op, "cudnnAddTensor");
      }
    }
    const auto stop = std::chrono::steady_clock::now();
    return std::chrono::duration<double, std::nano>(stop - start).count() / ops_per_round;
  }
};

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

int parse_count(const char* option, const char* text, int low, int high) {
  char* end = nullptr;
  const long value = text ? std::strtol(text, &end, 10) : 0;
  if (text == nullptr || *end != '\0' || value < low || value > high) {
    std::fprintf(stderr, "%s: %s takes a number from %d to %d\n", kName, option, low, high);
    std::exit(2);
  }
  return static_cast<int>(value);
}

void usage() {
  std::printf(
      "usage: %s [--stub] [--rounds N] [--ops N]\n"
      "Times cudnnSetStream (+ cudnnAddTensor) on one handle, the way a framework calls it, with and\n"
      "without the shim. Run it under the launcher to see the difference:\n"
      "  scripts/cudnn-fastpath --stats build/demo/%s\n"
      "  --stub      use the test tree's stub libcudnn even when there is a GPU\n"
      "  --rounds N  rounds per column, alternated (default 31)\n"
      "  --ops N     ops per round (default 200: short enough to stay inside the GPU's launch queue)\n",
      kName, kName);
}

}  // namespace

int main(int argc, char** argv) {
  bool force_stub = false;
  int rounds = 31, ops = 200;
  for (int i = 1; i < argc; ++i) {
    const char* next = i + 1 < argc ? argv[i + 1] : nullptr;
    if (std::strcmp(argv[i], "--stub") == 0) force_stub = true;
    else if (std::strcmp(argv[i], "--rounds") == 0) rounds = parse_count("--rounds", next, 1, 100000), ++i;
    else if (std::strcmp(argv[i], "--ops") == 0) ops = parse_count("--ops", next, 1, 1000), ++i;
    else if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) return usage(), 0;
    else {
      std::fprintf(stderr, "%s: unknown argument '%s' (try --help)\n", kName, argv[i]);
      return 2;
    }
  }

  // The backend: the real cuDNN on a GPU, else the stub.
  Driver driver;
  std::string no_gpu = "--stub was given";
  const bool gpu = !force_stub && open_gpu(driver, no_gpu);
  Cudnn cudnn;
  if (gpu) {
    // The one CMake found next to the headers the demo was built with, else the one the system
    // finds (LD_LIBRARY_PATH, ld.so.cache): a machine can hold several cuDNNs.
    std::vector<const char*> names;
#ifdef DEMO_CUDNN_BUILT_AGAINST
    names.push_back(DEMO_CUDNN_BUILT_AGAINST);
#endif
    names.push_back("libcudnn.so.9");
    open_cudnn(cudnn, names,
               "; a GPU is there: put cuDNN's lib folder on LD_LIBRARY_PATH (pip wheel: site-packages/nvidia/cudnn/lib)");
    char device_name[256] = "?";
    driver.check(driver.cuDeviceGetName_(device_name, sizeof device_name, driver.device), "cuDeviceGetName");
    Dl_info loaded{};
    const bool located = dladdr(reinterpret_cast<void*>(cudnn.cudnnSetStream_), &loaded) != 0 && loaded.dli_fname;
    const std::size_t v = cudnn.cudnnGetVersion_();
    std::printf("cudnn-fastpath demo: real cuDNN %zu.%zu.%zu (%s) on %s\n", v / 10000, v % 10000 / 100, v % 100,
                located ? loaded.dli_fname : cudnn.library_name, device_name);
  } else {
#ifdef DEMO_STUB_CUDNN_PATH
    std::printf("cudnn-fastpath demo: STUB libcudnn, not a GPU (%s): the times are the stub's, the counts are "
                "the point\n", no_gpu.c_str());
    open_cudnn(cudnn, {DEMO_STUB_CUDNN_PATH}, "");
#else
    fail("%s, and this build has no stub libcudnn to fall back on (configure with CUDNN_FASTPATH_BUILD_TESTS=ON)",
         no_gpu.c_str());
#endif
  }
  auto stub_counters = reinterpret_cast<decltype(&stubcudnn_counters)>(dlsym(cudnn.library, "stubcudnn_counters"));
  if (gpu == (stub_counters != nullptr)) fail("%s is not the library it was meant to be", cudnn.library_name);

  // The program's view of cudnnSetStream and cudnnCreate: the shim's, when it is preloaded.
  auto set_stream_default = reinterpret_cast<decltype(&cudnnSetStream)>(dlsym(RTLD_DEFAULT, "cudnnSetStream"));
  auto create_default = reinterpret_cast<decltype(&cudnnCreate)>(dlsym(RTLD_DEFAULT, "cudnnCreate"));
  auto destroy_default = reinterpret_cast<decltype(&cudnnDestroy)>(dlsym(RTLD_DEFAULT, "cudnnDestroy"));
  if (!set_stream_default || !create_default || !destroy_default) fail("cudnnSetStream/Create/Destroy not found by RTLD_DEFAULT");
  Dl_info where{};
  const bool shim = set_stream_default != cudnn.cudnnSetStream_;
  if (shim && dladdr(reinterpret_cast<void*>(set_stream_default), &where) != 0 && where.dli_fname)
    std::printf("shim: preloaded (%s)\n", where.dli_fname);
  else if (shim)
    std::printf("shim: cudnnSetStream is interposed by an unknown object\n");
  else
    std::printf("shim: NOT preloaded, both columns call cuDNN directly (run it under scripts/cudnn-fastpath)\n");

  Column with{"with shim", set_stream_default};
  Column without{"without", cudnn.cudnnSetStream_};
  cudnn.check(create_default(&with.handle), "cudnnCreate");
  cudnn.check(cudnn.cudnnCreate_(&without.handle), "cudnnCreate");

  // Two streams and two tiny tensors. On the stub, any distinct addresses do for streams and data.
  constexpr int kElements = 256;
  static float host_a[kElements], host_c[kElements];
  static char fake_streams[2];
  Workload work{&cudnn, {}, nullptr, host_a, host_c, ops, 50};
  CUdeviceptr device_a = 0, device_c = 0;
  if (gpu) {
    for (cudaStream_t& s : work.streams) driver.check(driver.cuStreamCreate_(&s, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
    driver.check(driver.cuMemAlloc_(&device_a, kElements * sizeof(float)), "cuMemAlloc");
    driver.check(driver.cuMemAlloc_(&device_c, kElements * sizeof(float)), "cuMemAlloc");
    driver.check(driver.cuMemsetD32_(device_a, 0, kElements), "cuMemsetD32");
    driver.check(driver.cuMemsetD32_(device_c, 0, kElements), "cuMemsetD32");
    work.a = reinterpret_cast<const void*>(device_a);
    work.c = reinterpret_cast<void*>(device_c);
  } else {
    work.streams[0] = reinterpret_cast<cudaStream_t>(&fake_streams[0]);
    work.streams[1] = reinterpret_cast<cudaStream_t>(&fake_streams[1]);
  }
  cudnn.check(cudnn.cudnnCreateTensorDescriptor_(&work.desc), "cudnnCreateTensorDescriptor");
  cudnn.check(cudnn.cudnnSetTensor4dDescriptor_(work.desc, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, 1, 1, kElements),
              "cudnnSetTensor4dDescriptor");

  // Everything queued on the GPU is finished between rounds, so no round waits for another's work.
  auto drain = [&] {
    if (gpu)
      for (cudaStream_t s : work.streams) driver.check(driver.cuStreamSynchronize_(s), "cuStreamSynchronize");
  };
  auto run = [&](Column& column, bool with_op, bool record) {
    const unsigned long long before = stub_counters ? stub_counters().set_stream : 0;
    const double ns = work.round(column, with_op);
    drain();
    if (!record) return;
    (with_op ? column.ns_with_op : column.ns_set_stream).push_back(ns);
    column.calls_made += static_cast<unsigned long long>(ops);
    if (stub_counters) column.calls_reached += stub_counters().set_stream - before;
  };

  // A warm-up round each (symbol resolution, cuDNN's lazily loaded sub-libraries), then rounds
  // that alternate which column goes first.
  for (Column* column : {&with, &without}) run(*column, true, false);
  for (int r = 0; r < rounds; ++r) {
    Column* order[2] = {&with, &without};
    if (r % 2) std::swap(order[0], order[1]);
    for (bool with_op : {false, true})
      for (Column* column : order) run(*column, with_op, true);
  }

  std::printf("per op, median of %d rounds of %d ops (every %dth op on a second stream), columns alternated:\n",
              rounds, ops, work.switch_every);
  std::printf("  %-34s %12s %12s %14s\n", "", "with shim", "without", "without/with");
  const double set_with = median(with.ns_set_stream), set_without = median(without.ns_set_stream);
  const double op_with = median(with.ns_with_op), op_without = median(without.ns_with_op);
  std::printf("  %-34s %9.1f ns %9.1f ns %13.2fx\n", "cudnnSetStream", set_with, set_without, set_without / set_with);
  std::printf("  %-34s %9.1f ns %9.1f ns %13.2fx\n", "cudnnSetStream + cudnnAddTensor", op_with, op_without,
              op_without / op_with);
  if (stub_counters) {
    std::printf("stub libcudnn, cudnnSetStream calls made and calls that reached the library:\n");
    for (const Column* column : {&with, &without})
      std::printf("  %-10s %llu made, %llu reached\n", (std::string(column->name) + ":").c_str(), column->calls_made,
                  column->calls_reached);
  }
  if (!shim) std::printf("(no shim: the two columns differ by noise only)\n");
  else if (!gpu)
    std::printf("(the stub's cudnnSetStream does no work, so here the shim can only add its lookup; cuDNN's\n"
                " does several driver queries per call: 167 to 222 ns for the same stream again on an H200)\n");

  cudnn.check(cudnn.cudnnDestroyTensorDescriptor_(work.desc), "cudnnDestroyTensorDescriptor");
  cudnn.check(destroy_default(with.handle), "cudnnDestroy");
  cudnn.check(cudnn.cudnnDestroy_(without.handle), "cudnnDestroy");
  if (gpu) {
    for (cudaStream_t s : work.streams) driver.check(driver.cuStreamDestroy_(s), "cuStreamDestroy");
    driver.check(driver.cuMemFree_(device_a), "cuMemFree");
    driver.check(driver.cuMemFree_(device_c), "cuMemFree");
    driver.check(driver.cuDevicePrimaryCtxRelease_(driver.device), "cuDevicePrimaryCtxRelease");
  }
  return 0;
}
