// Temporary: every backend call passes through (the pack cache comes next).
#include "shim/variant_packs.h"

#include "shim/process.h"
#include "shim/real_symbols.h"

namespace cudnn_fastpath::shim {
namespace {
const RealSymbols& real_for(const void* caller) { return binding_for(Library::kCudnn, caller).real; }
}  // namespace

#define PASS(name, member, ...)                                                     \
  const std::uint32_t m = current_mode();                                           \
  if (m & mode::kFollower) return leader().name(caller, __VA_ARGS__);               \
  const RealSymbols& real = real_for(caller);                                       \
  if (real.member == nullptr) return CUDNN_STATUS_NOT_INITIALIZED;                  \
  return real.member(__VA_ARGS__);

cudnnStatus_t backend_create_descriptor(const void* caller, cudnnBackendDescriptorType_t type,
                                        cudnnBackendDescriptor_t* descriptor) noexcept {
  PASS(backend_create_descriptor, cudnnBackendCreateDescriptor, type, descriptor)
}
cudnnStatus_t backend_destroy_descriptor(const void* caller, cudnnBackendDescriptor_t d) noexcept {
  PASS(backend_destroy_descriptor, cudnnBackendDestroyDescriptor, d)
}
cudnnStatus_t backend_initialize(const void* caller, cudnnBackendDescriptor_t d) noexcept {
  PASS(backend_initialize, cudnnBackendInitialize, d)
}
cudnnStatus_t backend_finalize(const void* caller, cudnnBackendDescriptor_t d) noexcept {
  PASS(backend_finalize, cudnnBackendFinalize, d)
}
cudnnStatus_t backend_set_attribute(const void* caller, cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t n,
                                    cudnnBackendAttributeType_t t, int64_t c, const void* e) noexcept {
  PASS(backend_set_attribute, cudnnBackendSetAttribute, d, n, t, c, e)
}
cudnnStatus_t backend_get_attribute(const void* caller, cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t n,
                                    cudnnBackendAttributeType_t t, int64_t r, int64_t* c, void* e) noexcept {
  PASS(backend_get_attribute, cudnnBackendGetAttribute, d, n, t, r, c, e)
}
cudnnStatus_t backend_execute(const void* caller, cudnnHandle_t h, cudnnBackendDescriptor_t p,
                              cudnnBackendDescriptor_t v) noexcept {
  PASS(backend_execute, cudnnBackendExecute, h, p, v)
}
cudnnStatus_t backend_populate_cuda_graph(const void* caller, cudnnHandle_t h, cudnnBackendDescriptor_t p,
                                          cudnnBackendDescriptor_t v, cudaGraph_t g) noexcept {
  PASS(backend_populate_cuda_graph, cudnnBackendPopulateCudaGraph, h, p, v, g)
}
cudnnStatus_t backend_update_cuda_graph(const void* caller, cudnnHandle_t h, cudnnBackendDescriptor_t p,
                                        cudnnBackendDescriptor_t v, cudaGraph_t g) noexcept {
  PASS(backend_update_cuda_graph, cudnnBackendUpdateCudaGraph, h, p, v, g)
}
void forget_packs_in_child() noexcept {}
}  // namespace cudnn_fastpath::shim
