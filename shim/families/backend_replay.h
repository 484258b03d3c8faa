// Replay of cuDNN's backend execute: a steady execute of a proxied variant pack becomes one CUDA
// graph launch (the replay engine, replay_engine.h), and one whose tensors moved a launch of its
// shape's graph pointed at them (shape_cache.h).
//
// An execute is a pure function of its handle, its plan, the pack's contents (uids, pointers,
// workspace), the handle's stream, and the by-value tensors it reads from host memory: the first
// three are the key (the pack's pointers and workspace its tensors), the by-value bytes are the
// host bytes the engine compares at each launch.
#pragma once

#include <cudnn.h>

#include <cstdint>

#include "packs/pack_contents.h"
#include "shim/libraries/real_symbols.h"

namespace cudnn_fastpath::shim {

// How an execute gets its real pack from the proxy the program passed: `real_pack(proxy, &pack)`,
// asked only by a call that runs cuDNN's execute (a finalized proxy's pack may be built only then:
// shim/pack_proxy/variant_packs.cpp); cuDNN's refusal of the pack is that call's answer.
using RealPackOf = cudnnStatus_t (*)(void* proxy, cudnnBackendDescriptor_t* pack) noexcept;

// cudnnBackendExecute of `plan` with finalized proxy `proxy`, which recorded `contents` and was made
// by `cudnn`; the graphs feature is on (mode `m`). Returns what the program gets.
cudnnStatus_t execute_with_graphs(const void* caller, const Binding& cudnn, cudnnHandle_t handle,
                                  cudnnBackendDescriptor_t plan, void* proxy, RealPackOf real_pack,
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

// The graphs of a plan descriptor (destroyed: a new plan at the same address must never meet an old
// graph) are forgotten: destroyed once no execute is using them. A handle's go with it
// (forget_graphs_of_handle, replay_engine.h).
void forget_graphs_of_plan(cudnnBackendDescriptor_t plan) noexcept;

}  // namespace cudnn_fastpath::shim
