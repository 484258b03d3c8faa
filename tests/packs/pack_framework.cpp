// libpack_framework.so: stands for a framework library (libtorch_cuda, say) that links libcudnn and
// is itself loaded with dlopen RTLD_LOCAL. Its calls leave through its own PLT, so a preloaded shim
// sees callers in this library, outside libcudnn.
#include "tests/packs/pack_api.h"

#pragma GCC diagnostic ignored "-Wdeprecated-declarations"  // cudnnBackendInitialize

namespace {
cudnnStatus_t create_handle(cudnnHandle_t* h) { return cudnnCreate(h); }
cudnnStatus_t destroy_handle(cudnnHandle_t h) { return cudnnDestroy(h); }
cudnnStatus_t set_stream(cudnnHandle_t h, cudaStream_t s) { return cudnnSetStream(h, s); }
cudnnStatus_t create(cudnnBackendDescriptorType_t t, cudnnBackendDescriptor_t* d) {
  return cudnnBackendCreateDescriptor(t, d);
}
cudnnStatus_t destroy(cudnnBackendDescriptor_t d) { return cudnnBackendDestroyDescriptor(d); }
cudnnStatus_t set(cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t n, cudnnBackendAttributeType_t t,
                  std::int64_t c, const void* e) {
  return cudnnBackendSetAttribute(d, n, t, c, e);
}
cudnnStatus_t get(cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t n, cudnnBackendAttributeType_t t,
                  std::int64_t r, std::int64_t* c, void* e) {
  return cudnnBackendGetAttribute(d, n, t, r, c, e);
}
cudnnStatus_t finalize(cudnnBackendDescriptor_t d) { return cudnnBackendFinalize(d); }
cudnnStatus_t initialize(cudnnBackendDescriptor_t d) { return cudnnBackendInitialize(d); }
cudnnStatus_t execute(cudnnHandle_t h, cudnnBackendDescriptor_t p, cudnnBackendDescriptor_t v) {
  return cudnnBackendExecute(h, p, v);
}
cudnnStatus_t populate(cudnnHandle_t h, cudnnBackendDescriptor_t p, cudnnBackendDescriptor_t v, cudaGraph_t g) {
  return cudnnBackendPopulateCudaGraph(h, p, v, g);
}
cudnnStatus_t update(cudnnHandle_t h, cudnnBackendDescriptor_t p, cudnnBackendDescriptor_t v, cudaGraph_t g) {
  return cudnnBackendUpdateCudaGraph(h, p, v, g);
}
}  // namespace

extern "C" __attribute__((visibility("default"))) const PackApi* pack_framework_api() {
  static const PackApi api = {create_handle, destroy_handle, set_stream, create, destroy, set, get,
                              finalize, initialize, execute, populate, update,
                              stubbackend_created, stubbackend_live, stubbackend_counters,
                              stubcudnn_counters, stubbackend_last_execution, stubbackend_last_call,
                              stubbackend_create_pack_internally, stubbackend_set_engine_workspace};
  return &api;
}
