// A small tracer of the kind people preload to time or log cuDNN calls: it wraps the functions its
// version script exports (CMakeLists.txt builds one tracer per set: the others stay local, so the
// tracer does not define them), counts each call, and forwards it to
// dlsym(RTLD_NEXT, name), or, when that finds nothing (cuDNN behind a library opened RTLD_LOCAL),
// to dlsym on the loaded libcudnn.so.9 found with RTLD_NOLOAD, as real tracers do. It does not
// link cuDNN. tracer_count(name) says how many calls of `name` it saw.
#include <cudnn.h>
#include <dlfcn.h>

#include <atomic>
#include <cstdint>
#include <cstring>

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

std::atomic<std::uint64_t> g_counts[13];  // relaxed: counts read after the calls, in one thread

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
    return real == nullptr ? CUDNN_STATUS_NOT_INITIALIZED : real args;              \
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
