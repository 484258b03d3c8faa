// Snapshots of everything the stub libcudnn counts (its backend API and its handle calls), so a
// test can say exactly which cuDNN calls a piece of code made.
#pragma once

#include <cstdint>

#include "tests/stub/stub_backend_control.h"
#include "tests/stub/stub_control.h"

namespace cudnn_fastpath::test {

struct StubCalls {
  StubBackendCounters backend{};
  StubCudnnCounters cudnn{};

  static StubCalls now() { return {stubbackend_counters(), stubcudnn_counters()}; }

  // Every call into the stub that either counter set saw.
  std::uint64_t total() const {
    return backend.create_descriptor + backend.destroy_descriptor + backend.set_attribute +
           backend.get_attribute + backend.finalize + backend.execute +
           backend.get_last_error_string + cudnn.set_stream + cudnn.get_stream + cudnn.create +
           cudnn.destroy;
  }
};

// What happened between two snapshots (live_descriptors: the change, which may be negative).
inline StubCalls operator-(const StubCalls& later, const StubCalls& earlier) {
  StubCalls d;
  d.backend.create_descriptor = later.backend.create_descriptor - earlier.backend.create_descriptor;
  d.backend.destroy_descriptor = later.backend.destroy_descriptor - earlier.backend.destroy_descriptor;
  d.backend.set_attribute = later.backend.set_attribute - earlier.backend.set_attribute;
  d.backend.get_attribute = later.backend.get_attribute - earlier.backend.get_attribute;
  d.backend.finalize = later.backend.finalize - earlier.backend.finalize;
  d.backend.execute = later.backend.execute - earlier.backend.execute;
  d.backend.get_last_error_string =
      later.backend.get_last_error_string - earlier.backend.get_last_error_string;
  d.backend.live_descriptors = later.backend.live_descriptors - earlier.backend.live_descriptors;
  d.cudnn.set_stream = later.cudnn.set_stream - earlier.cudnn.set_stream;
  d.cudnn.get_stream = later.cudnn.get_stream - earlier.cudnn.get_stream;
  d.cudnn.create = later.cudnn.create - earlier.cudnn.create;
  d.cudnn.destroy = later.cudnn.destroy - earlier.cudnn.destroy;
  return d;
}

// Descriptors of one type created since a snapshot.
class CreatedSince {
 public:
  explicit CreatedSince(cudnnBackendDescriptorType_t type) : type_(type), start_(stubbackend_created(type)) {}
  std::uint64_t count() const { return stubbackend_created(type_) - start_; }

 private:
  cudnnBackendDescriptorType_t type_;
  std::uint64_t start_;
};

}  // namespace cudnn_fastpath::test
