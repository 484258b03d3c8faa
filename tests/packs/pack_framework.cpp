// libpack_framework.so: stands for a framework library (libtorch_cuda, say) that links libcudnn and
// is itself loaded with dlopen RTLD_LOCAL. Its calls leave through its own PLT, so a preloaded shim
// sees callers in this library, outside libcudnn.
//
// Built with PACK_FRAMEWORK_DLSYM (libdlsym_framework.so), it stands for JAX's XLA instead: it
// links no libcudnn, opens the stub RTLD_LOCAL itself and takes every function with dlsym on that
// handle, then calls them through those pointers, from this library.
#include "tests/packs/pack_api.h"

#pragma GCC diagnostic ignored "-Wdeprecated-declarations"  // cudnnBackendInitialize

#ifdef PACK_FRAMEWORK_DLSYM
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>

#define PACK_FRAMEWORK_FUNCTIONS(X)                                                                      \
  X(cudnnCreate) X(cudnnDestroy) X(cudnnSetStream) X(cudnnBackendCreateDescriptor)                      \
  X(cudnnBackendDestroyDescriptor) X(cudnnBackendSetAttribute) X(cudnnBackendGetAttribute)               \
  X(cudnnBackendFinalize) X(cudnnBackendInitialize) X(cudnnBackendExecute) X(cudnnBackendPopulateCudaGraph) \
  X(cudnnBackendUpdateCudaGraph) X(stubbackend_created) X(stubbackend_live) X(stubbackend_counters)      \
  X(stubcudnn_counters) X(stubbackend_last_execution) X(stubbackend_last_call)                          \
  X(stubbackend_create_pack_internally) X(stubbackend_set_engine_workspace)

namespace {
struct Functions {
#define PACK_FRAMEWORK_POINTER(name) decltype(&::name) name;
  PACK_FRAMEWORK_FUNCTIONS(PACK_FRAMEWORK_POINTER)
#undef PACK_FRAMEWORK_POINTER
};

Functions take_functions() {
  void* cudnn = dlopen(STUB_CUDNN_PATH, RTLD_NOW | RTLD_LOCAL);
  if (cudnn == nullptr) {
    std::fprintf(stderr, "dlsym framework: %s\n", dlerror());
    std::exit(3);
  }
  Functions f{};
#define PACK_FRAMEWORK_TAKE(name)                                   \
  f.name = reinterpret_cast<decltype(f.name)>(dlsym(cudnn, #name)); \
  if (f.name == nullptr) std::exit(3);
  PACK_FRAMEWORK_FUNCTIONS(PACK_FRAMEWORK_TAKE)
#undef PACK_FRAMEWORK_TAKE
  return f;
}

const Functions& functions() {
  static const Functions f = take_functions();
  return f;
}
}  // namespace
#define CUDNN(name) functions().name
#else
#define CUDNN(name) ::name
#endif

namespace {
// The call before it is not a tail call: a jump would leave the program's return address on the
// stack, and the shim would take the program, not this library, for the caller.
cudnnStatus_t not_tail(cudnnStatus_t status) {
  asm volatile("" ::: "memory");
  return status;
}

cudnnStatus_t create_handle(cudnnHandle_t* h) { return not_tail(CUDNN(cudnnCreate)(h)); }
cudnnStatus_t destroy_handle(cudnnHandle_t h) { return not_tail(CUDNN(cudnnDestroy)(h)); }
cudnnStatus_t set_stream(cudnnHandle_t h, cudaStream_t s) { return not_tail(CUDNN(cudnnSetStream)(h, s)); }
cudnnStatus_t create(cudnnBackendDescriptorType_t t, cudnnBackendDescriptor_t* d) {
  return not_tail(CUDNN(cudnnBackendCreateDescriptor)(t, d));
}
cudnnStatus_t destroy(cudnnBackendDescriptor_t d) { return not_tail(CUDNN(cudnnBackendDestroyDescriptor)(d)); }
cudnnStatus_t set(cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t n, cudnnBackendAttributeType_t t,
                  std::int64_t c, const void* e) {
  return not_tail(CUDNN(cudnnBackendSetAttribute)(d, n, t, c, e));
}
cudnnStatus_t get(cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t n, cudnnBackendAttributeType_t t,
                  std::int64_t r, std::int64_t* c, void* e) {
  return not_tail(CUDNN(cudnnBackendGetAttribute)(d, n, t, r, c, e));
}
cudnnStatus_t finalize(cudnnBackendDescriptor_t d) { return not_tail(CUDNN(cudnnBackendFinalize)(d)); }
cudnnStatus_t initialize(cudnnBackendDescriptor_t d) { return not_tail(CUDNN(cudnnBackendInitialize)(d)); }
cudnnStatus_t execute(cudnnHandle_t h, cudnnBackendDescriptor_t p, cudnnBackendDescriptor_t v) {
  return not_tail(CUDNN(cudnnBackendExecute)(h, p, v));
}
cudnnStatus_t populate(cudnnHandle_t h, cudnnBackendDescriptor_t p, cudnnBackendDescriptor_t v, cudaGraph_t g) {
  return not_tail(CUDNN(cudnnBackendPopulateCudaGraph)(h, p, v, g));
}
cudnnStatus_t update(cudnnHandle_t h, cudnnBackendDescriptor_t p, cudnnBackendDescriptor_t v, cudaGraph_t g) {
  return not_tail(CUDNN(cudnnBackendUpdateCudaGraph)(h, p, v, g));
}
}  // namespace

extern "C" __attribute__((visibility("default"))) const PackApi* pack_framework_api() {
  static const PackApi api = {create_handle, destroy_handle, set_stream, create, destroy, set, get,
                              finalize, initialize, execute, populate, update,
                              CUDNN(stubbackend_created), CUDNN(stubbackend_live), CUDNN(stubbackend_counters),
                              CUDNN(stubcudnn_counters), CUDNN(stubbackend_last_execution),
                              CUDNN(stubbackend_last_call), CUDNN(stubbackend_create_pack_internally),
                              CUDNN(stubbackend_set_engine_workspace)};
  return &api;
}
