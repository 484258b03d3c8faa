// Graph replay: a steady execute of a cached variant pack becomes one CUDA graph launch.
//
// The executes of a (handle, plan, real pack) triple whose pack came from the pack cache are run
// directly the first times, then one is captured (on a private stream of the shim's, with the
// handle's stream set to it and restored), and every later execute of the triple launches the
// graph on the handle's stream. graphs/graph_cache.h keeps the graphs; graph_replay.cpp says
// when an execute may be replayed and when it must not.
#pragma once

#include <cudnn.h>

#include <cstdint>

#include "packs/pack_contents.h"
#include "shim/real_symbols.h"

namespace cudnn_fastpath::shim {

// cudnnBackendExecute of `plan` with `pack`, a cached finalized pack holding `contents`, made by
// `cudnn`; the graphs feature is on (mode `m`). Returns what the program gets.
cudnnStatus_t execute_with_graphs(const void* caller, const Binding& cudnn, cudnnHandle_t handle,
                                  cudnnBackendDescriptor_t plan, cudnnBackendDescriptor_t pack,
                                  const packs::PackContents& contents, std::uint32_t m) noexcept;

// A successful cudnnBackendSetAttribute on a descriptor that is not a proxy: the tensor
// attributes that say which uids are by-value, and their sizes, are noted (by-value tensors are
// passed as host pointers that cuDNN reads at execute; a replay must compare their bytes).
void note_tensor_attribute(cudnnBackendDescriptor_t descriptor, cudnnBackendAttributeName_t name,
                           cudnnBackendAttributeType_t type, std::int64_t count, const void* elements) noexcept;

// Whether `name` is one note_tensor_attribute() wants (so that the caller calls it only then).
inline bool is_noted_tensor_attribute(cudnnBackendAttributeName_t name) noexcept {
  return name == CUDNN_ATTR_TENSOR_UNIQUE_ID || name == CUDNN_ATTR_TENSOR_DATA_TYPE ||
         name == CUDNN_ATTR_TENSOR_DIMENSIONS || name == CUDNN_ATTR_TENSOR_IS_BY_VALUE;
}

// The graphs of a handle (destroyed, or a new one at its address), of a plan descriptor (destroyed:
// a new plan at the same address must never meet an old graph) or of a real pack (evicted from
// the pack cache) are forgotten: destroyed once no execute is using them.
void forget_graphs_of_handle(cudnnHandle_t handle) noexcept;
void forget_graphs_of_plan(cudnnBackendDescriptor_t plan) noexcept;
void forget_graphs_of_pack(cudnnBackendDescriptor_t pack) noexcept;
// The feature was switched off.
void forget_all_graphs() noexcept;

}  // namespace cudnn_fastpath::shim
