// What the keys of cuBLASLt's and cuBLAS's replayed calls share (cublaslt_replay.cpp,
// cublas_replay.cpp): the bytes of a scaling factor as the library reads it, and a recorded
// object's record into a key.
#pragma once

#include <cublasLt.h>
#include <cublas_api.h>

#include <atomic>
#include <cstdint>
#include <cstring>

#include "shim/engine/replay_engine.h"
#include "shim/families/blas.h"

namespace cudnn_fastpath::shim {

// The bytes of one scaling factor of `type` (a cudaDataType); 0 for a type the shim does not know
// (the call then runs directly).
inline std::uint32_t scale_bytes(std::int64_t type) noexcept {
  switch (type) {
    case CUDA_R_16F:
    case CUDA_R_16BF: return 2;
    case CUDA_R_32F:
    case CUDA_R_32I: return 4;
    case CUDA_R_64F:
    case CUDA_C_32F: return 8;
    case CUDA_C_64F: return 16;
    case CUDA_R_8I: return 1;
    default: return 0;
  }
}

// The bytes at a host scaling factor `pointer`, `size` of them, into the key.
inline void add_host_scale(Key& key, const void* pointer, std::uint32_t size) noexcept {
  if (pointer == nullptr || size == 0) return key.refuse();
  key.add_bytes(pointer, size);
}

// The set bits of `mask` (a few: a loop, not a popcount instruction the target may lack).
inline std::uint32_t bits_in(std::uint64_t mask) noexcept {
  std::uint32_t n = 0;
  for (; mask != 0; mask &= mask - 1) ++n;
  return n;
}

// The record of the cuBLASLt descriptor `object` (of `kind`) into the key: one word of the kind
// (bits 56 up) and the mask of the attributes the program set (no kind has an attribute past 38),
// then their values in the mask's order, so a descriptor costs the key what was set of it. Null
// adds a zero (a null layout, emulation descriptor...), which `nullable` allows. Returns where the
// record starts in the key, for attribute_of(), or null.
inline const std::uint64_t* add_record(Key& key, const void* object, BlasKind kind, bool nullable = false) noexcept {
  if (object == nullptr) {
    if (!nullable) key.refuse();
    key.add(0);
    return nullptr;
  }
  const std::uint32_t start = key.length;
  const bool read = g_blas_objects.read(object, kind, [&](const std::atomic<std::uint64_t>* words, std::uint32_t) {
    const std::uint64_t mask = words[0].load(std::memory_order_relaxed);
    std::uint64_t* to = key.extend(1 + bits_in(mask));
    if (to == nullptr) return;
    *to++ = mask | std::uint64_t{kind} << 56;
    for (std::uint64_t left = mask; left != 0; left &= left - 1)
      *to++ = words[1 + __builtin_ctzll(left)].load(std::memory_order_relaxed);
  });
  if (!read || !key.complete) {
    key.refuse();
    return nullptr;
  }
  return &key.words[start];
}

// The value of attribute `id` of a descriptor's record in a key (add_record's words), or
// `otherwise` when the program left it at its default.
inline std::uint64_t attribute_of(const std::uint64_t* record, int id, std::uint64_t otherwise) noexcept {
  const std::uint64_t mask = record[0] & ((std::uint64_t{1} << 56) - 1);
  if (!((mask >> id) & 1)) return otherwise;
  return record[1 + bits_in(mask & ((std::uint64_t{1} << id) - 1))];
}

// The CUDA context current on the calling thread (a cuBLASLt handle is tied to none), or null.
inline CUcontext current_context(const void* caller) noexcept {
  const Binding* driver = driver_for(caller);
  CUcontext context = nullptr;
  if (driver == nullptr || driver->real.cuCtxGetCurrent(&context) != CUDA_SUCCESS) return nullptr;
  return context;
}

}  // namespace cudnn_fastpath::shim
