#include "backend_descriptor.h"

#include <utility>

#include "failure.h"

namespace cudnn_fastpath::detail {

Status BackendDescriptor::create(cudnnBackendDescriptorType_t type, const std::string& what,
                                 BackendDescriptor* out) {
  cudnnBackendDescriptor_t raw = nullptr;
  const cudnnStatus_t status = cudnnBackendCreateDescriptor(type, &raw);
  if (status != CUDNN_STATUS_SUCCESS)
    return cudnn_failure(status, "cudnnBackendCreateDescriptor(" + what + ")");
  out->reset(raw);
  return Status();
}

void BackendDescriptor::reset(cudnnBackendDescriptor_t raw) noexcept {
  // Nothing useful can be done about a failed destroy; the descriptor is gone either way.
  if (raw_ != nullptr) cudnnBackendDestroyDescriptor(raw_);
  raw_ = raw;
}

DescriptorBuilder::DescriptorBuilder(cudnnBackendDescriptorType_t type, std::string what)
    : what_(std::move(what)) {
  first_failure_ = BackendDescriptor::create(type, what_, &descriptor_);
}

DescriptorBuilder& DescriptorBuilder::set_raw(cudnnBackendAttributeName_t name,
                                              cudnnBackendAttributeType_t type,
                                              std::int64_t count, const void* values) {
  if (!first_failure_.ok()) return *this;
  const cudnnStatus_t status =
      cudnnBackendSetAttribute(descriptor_.get(), name, type, count, values);
  if (status != CUDNN_STATUS_SUCCESS)
    first_failure_ = cudnn_failure(
        status, "cudnnBackendSetAttribute(" + what_ + ", attribute " + std::to_string(name) + ")");
  return *this;
}

DescriptorBuilder& DescriptorBuilder::set_descriptor(cudnnBackendAttributeName_t name,
                                                     const BackendDescriptor& descriptor) {
  const cudnnBackendDescriptor_t raw = descriptor.get();
  return set_raw(name, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &raw);
}

DescriptorBuilder& DescriptorBuilder::set_descriptors(
    cudnnBackendAttributeName_t name, const std::vector<cudnnBackendDescriptor_t>& descriptors) {
  return set_raw(name, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                 static_cast<std::int64_t>(descriptors.size()), descriptors.data());
}

DescriptorBuilder& DescriptorBuilder::set_data_pointers(cudnnBackendAttributeName_t name,
                                                        void* const* pointers, std::int64_t count) {
  return set_raw(name, CUDNN_TYPE_VOID_PTR, count, pointers);
}

Status DescriptorBuilder::finalize(BackendDescriptor* out) {
  if (!first_failure_.ok()) return std::move(first_failure_);
  const cudnnStatus_t status = cudnnBackendFinalize(descriptor_.get());
  if (status != CUDNN_STATUS_SUCCESS)
    return cudnn_failure(status, "cudnnBackendFinalize(" + what_ + ")");
  *out = std::move(descriptor_);
  return Status();
}

}  // namespace cudnn_fastpath::detail
