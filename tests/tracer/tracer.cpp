// A small tracer of the kind people preload to time or log cuDNN calls: it wraps the functions its
// version script exports (CMakeLists.txt builds one tracer per set: the others stay local, so the
// tracer does not define them), counts each call, and forwards it to
// dlsym(RTLD_NEXT, name), or, when that finds nothing (cuDNN behind a library opened RTLD_LOCAL),
// to dlsym on the loaded libcudnn.so.9 found with RTLD_NOLOAD, as real tracers do. It does not
// link cuDNN. tracer_count(name) says how many calls of `name` it saw; it also times each call
// (the forwarded call alone), and at exit writes both to the JSON file CUDNN_TRACER_REPORT names,
// if set (gpu/pytorch/check.py reads it).
#include <cudnn.h>
#include <dlfcn.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>

#pragma GCC diagnostic ignored "-Wdeprecated-declarations"  // cudnnBackendInitialize

#define TRACER_FUNCTIONS(X)                                                                              \
  X(0, cudnnCreate, (cudnnHandle_t * h), (h))                                                            \
  X(1, cudnnDestroy, (cudnnHandle_t h), (h))                                                             \
  X(2, cudnnSetStream, (cudnnHandle_t h, cudaStream_t s), (h, s))                                        \
  X(3, cudnnGetStream, (cudnnHandle_t h, cudaStream_t * s), (h, s))                                      \
  X(4, cudnnBackendCreateDescriptor, (cudnnBackendDescriptorType_t t, cudnnBackendDescriptor_t * d), (t, d)) \
  X(5, cudnnBackendDestroyDescriptor, (cudnnBackendDescriptor_t d), (d))                                 \
  X(6, cudnnBackendInitialize, (cudnnBackendDescriptor_t d), (d))                                        \
  X(7, cudnnBackendFinalize, (cudnnBackendDescriptor_t d), (d))                                          \
  X(8, cudnnBackendSetAttribute,                                                                         \
    (cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t n, cudnnBackendAttributeType_t t, int64_t c, \
     const void* e),                                                                                     \
    (d, n, t, c, e))                                                                                     \
  X(9, cudnnBackendGetAttribute,                                                                         \
    (cudnnBackendDescriptor_t const d, cudnnBackendAttributeName_t n, cudnnBackendAttributeType_t t,     \
     int64_t r, int64_t* c, void* e),                                                                    \
    (d, n, t, r, c, e))                                                                                  \
  X(10, cudnnBackendExecute, (cudnnHandle_t h, cudnnBackendDescriptor_t p, cudnnBackendDescriptor_t v), \
    (h, p, v))                                                                                           \
  X(11, cudnnBackendPopulateCudaGraph,                                                                   \
    (cudnnHandle_t h, cudnnBackendDescriptor_t p, cudnnBackendDescriptor_t v, cudaGraph_t g), (h, p, v, g)) \
  X(12, cudnnBackendUpdateCudaGraph,                                                                     \
    (cudnnHandle_t h, cudnnBackendDescriptor_t p, cudnnBackendDescriptor_t v, cudaGraph_t g), (h, p, v, g))

namespace {

constexpr int kFunctions = 13;
// Relaxed: each is a tally read after the calls (at exit, or by the thread that made them).
std::atomic<std::uint64_t> g_counts[kFunctions];
std::atomic<std::uint64_t> g_nanoseconds[kFunctions];

std::uint64_t now_ns() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<std::uint64_t>(t.tv_sec) * 1000000000u + static_cast<std::uint64_t>(t.tv_nsec);
}

void* real_function(const char* name) {
  if (void* next = dlsym(RTLD_NEXT, name)) return next;
  void* library = dlopen("libcudnn.so.9", RTLD_NOLOAD | RTLD_LAZY);
  return library == nullptr ? nullptr : dlsym(library, name);
}

}  // namespace

#define TRACER_WRAP(bit, name, params, args)                                      \
  extern "C" __attribute__((visibility("default"))) cudnnStatus_t name params {     \
    g_counts[bit].fetch_add(1, std::memory_order_relaxed);                          \
    static auto real = reinterpret_cast<decltype(&::name)>(real_function(#name));   \
    if (real == nullptr) return CUDNN_STATUS_NOT_INITIALIZED;                       \
    const std::uint64_t start = now_ns();                                           \
    const cudnnStatus_t status = real args;                                         \
    g_nanoseconds[bit].fetch_add(now_ns() - start, std::memory_order_relaxed);      \
    return status;                                                                  \
  }
TRACER_FUNCTIONS(TRACER_WRAP)
#undef TRACER_WRAP

extern "C" __attribute__((visibility("default"))) std::uint64_t tracer_count(const char* name) {
#define TRACER_COUNT(bit, function, params, args) \
  if (std::strcmp(name, #function) == 0) return g_counts[bit].load(std::memory_order_relaxed);
  TRACER_FUNCTIONS(TRACER_COUNT)
#undef TRACER_COUNT
  return 0;
}

// {"cudnnSetStream": {"calls": N, "ns": T}, ...}: every function called at least once (those it
// does not export never are).
__attribute__((destructor)) static void write_report() {
  const char* path = std::getenv("CUDNN_TRACER_REPORT");
  if (path == nullptr || *path == '\0') return;
  FILE* out = std::fopen(path, "w");
  if (out == nullptr) return;
  const char* separator = "";
  std::fputs("{", out);
#define TRACER_REPORT(bit, function, params, args)                                                      \
  if (g_counts[bit].load(std::memory_order_relaxed) != 0) {                                             \
    std::fprintf(out, "%s\"%s\": {\"calls\": %llu, \"ns\": %llu}", separator, #function,                \
                 static_cast<unsigned long long>(g_counts[bit].load(std::memory_order_relaxed)),        \
                 static_cast<unsigned long long>(g_nanoseconds[bit].load(std::memory_order_relaxed)));  \
    separator = ", ";                                                                                   \
  }
  TRACER_FUNCTIONS(TRACER_REPORT)
#undef TRACER_REPORT
  std::fputs("}\n", out);
  std::fclose(out);
}
