// The cuDNN backend descriptor API under the shim. Variant packs that a program creates become
// proxies whose finalized contents come from a cache of real packs (packs/); every other
// descriptor, and every call the proxy does not answer itself, reaches cuDNN unchanged.
#pragma once

#include <cudnn.h>

namespace cudnn_fastpath::shim {

cudnnStatus_t backend_create_descriptor(const void* caller, cudnnBackendDescriptorType_t type,
                                        cudnnBackendDescriptor_t* descriptor) noexcept;
cudnnStatus_t backend_destroy_descriptor(const void* caller, cudnnBackendDescriptor_t descriptor) noexcept;
cudnnStatus_t backend_initialize(const void* caller, cudnnBackendDescriptor_t descriptor) noexcept;
cudnnStatus_t backend_finalize(const void* caller, cudnnBackendDescriptor_t descriptor) noexcept;
cudnnStatus_t backend_set_attribute(const void* caller, cudnnBackendDescriptor_t descriptor,
                                    cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type,
                                    int64_t count, const void* elements) noexcept;
cudnnStatus_t backend_get_attribute(const void* caller, cudnnBackendDescriptor_t descriptor,
                                    cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type,
                                    int64_t requested, int64_t* count, void* elements) noexcept;
cudnnStatus_t backend_execute(const void* caller, cudnnHandle_t handle, cudnnBackendDescriptor_t plan,
                              cudnnBackendDescriptor_t pack) noexcept;
cudnnStatus_t backend_populate_cuda_graph(const void* caller, cudnnHandle_t handle,
                                          cudnnBackendDescriptor_t plan, cudnnBackendDescriptor_t pack,
                                          cudaGraph_t graph) noexcept;
cudnnStatus_t backend_update_cuda_graph(const void* caller, cudnnHandle_t handle,
                                        cudnnBackendDescriptor_t plan, cudnnBackendDescriptor_t pack,
                                        cudaGraph_t graph) noexcept;

}  // namespace cudnn_fastpath::shim
