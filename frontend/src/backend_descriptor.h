// Owning wrappers over cuDNN backend descriptors, and a builder that sets a descriptor's
// attributes and finalizes it, reporting the first call that failed.
#pragma once

#include <cudnn_graph.h>

#include <cstdint>
#include <string>
#include <vector>

#include "cudnn_fastpath/status.h"

namespace cudnn_fastpath::detail {

// One backend descriptor, destroyed with the object. Move-only.
class BackendDescriptor {
 public:
  BackendDescriptor() noexcept = default;
  BackendDescriptor(BackendDescriptor&& other) noexcept : raw_(other.release()) {}
  BackendDescriptor& operator=(BackendDescriptor&& other) noexcept {
    if (this != &other) reset(other.release());
    return *this;
  }
  BackendDescriptor(const BackendDescriptor&) = delete;
  BackendDescriptor& operator=(const BackendDescriptor&) = delete;
  ~BackendDescriptor() { reset(); }

  // Creates a descriptor of `type`; on failure *out is left empty.
  static Status create(cudnnBackendDescriptorType_t type, const std::string& what,
                       BackendDescriptor* out);

  cudnnBackendDescriptor_t get() const noexcept { return raw_; }
  explicit operator bool() const noexcept { return raw_ != nullptr; }

  cudnnBackendDescriptor_t release() noexcept {
    cudnnBackendDescriptor_t raw = raw_;
    raw_ = nullptr;
    return raw;
  }
  void reset(cudnnBackendDescriptor_t raw = nullptr) noexcept;

 private:
  cudnnBackendDescriptor_t raw_ = nullptr;
};

// The CUDNN_TYPE_* a C++ value is passed as. Pointers to data (CUDNN_TYPE_VOID_PTR) and to other
// descriptors (CUDNN_TYPE_BACKEND_DESCRIPTOR) are both void* and have setters of their own.
template <typename T>
struct BackendAttributeType;
template <>
struct BackendAttributeType<std::int64_t> {
  static constexpr cudnnBackendAttributeType_t value = CUDNN_TYPE_INT64;
};
template <>
struct BackendAttributeType<float> {
  static constexpr cudnnBackendAttributeType_t value = CUDNN_TYPE_FLOAT;
};
template <>
struct BackendAttributeType<bool> {
  static constexpr cudnnBackendAttributeType_t value = CUDNN_TYPE_BOOLEAN;
};
template <>
struct BackendAttributeType<cudnnDataType_t> {
  static constexpr cudnnBackendAttributeType_t value = CUDNN_TYPE_DATA_TYPE;
};
template <>
struct BackendAttributeType<cudnnHandle_t> {
  static constexpr cudnnBackendAttributeType_t value = CUDNN_TYPE_HANDLE;
};
template <>
struct BackendAttributeType<cudnnPointwiseMode_t> {
  static constexpr cudnnBackendAttributeType_t value = CUDNN_TYPE_POINTWISE_MODE;
};
template <>
struct BackendAttributeType<cudnnConvolutionMode_t> {
  static constexpr cudnnBackendAttributeType_t value = CUDNN_TYPE_CONVOLUTION_MODE;
};
template <>
struct BackendAttributeType<cudnnBackendHeurMode_t> {
  static constexpr cudnnBackendAttributeType_t value = CUDNN_TYPE_HEUR_MODE;
};

// Creates a descriptor, sets attributes on it and finalizes it:
//
//   BackendDescriptor tensor;
//   Status made = DescriptorBuilder(CUDNN_BACKEND_TENSOR_DESCRIPTOR, "tensor A")
//                     .set(CUDNN_ATTR_TENSOR_UNIQUE_ID, uid)
//                     ...
//                     .finalize(&tensor);
//
// After the first failing call the remaining ones are skipped, and finalize() reports that call.
class DescriptorBuilder {
 public:
  DescriptorBuilder(cudnnBackendDescriptorType_t type, std::string what);

  template <typename T>
  DescriptorBuilder& set(cudnnBackendAttributeName_t name, const T& value) {
    return set_raw(name, BackendAttributeType<T>::value, 1, &value);
  }
  template <typename T>
  DescriptorBuilder& set(cudnnBackendAttributeName_t name, const std::vector<T>& values) {
    return set_raw(name, BackendAttributeType<T>::value, static_cast<std::int64_t>(values.size()),
                   values.data());
  }
  DescriptorBuilder& set_descriptor(cudnnBackendAttributeName_t name,
                                    const BackendDescriptor& descriptor);
  DescriptorBuilder& set_descriptors(cudnnBackendAttributeName_t name,
                                     const std::vector<cudnnBackendDescriptor_t>& descriptors);
  DescriptorBuilder& set_data_pointers(cudnnBackendAttributeName_t name, void* const* pointers,
                                       std::int64_t count);

  // The finalized descriptor in *out, or the first failure (and *out left alone).
  Status finalize(BackendDescriptor* out);

 private:
  DescriptorBuilder& set_raw(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type,
                             std::int64_t count, const void* values);

  std::string what_;
  BackendDescriptor descriptor_;
  Status first_failure_;
};

}  // namespace cudnn_fastpath::detail
