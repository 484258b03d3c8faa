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
#include "shim/families/record_names.h"

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

// The attributes of a matmul descriptor a key needs besides its record's name: how the matmul
// reads alpha and beta, and the emulation descriptor it names (each as the program set it, or its
// default); and the values of its pointers (blas.h's kMatmulDescPointers) that are set, in the
// order of their ids, which the key holds after the name.
struct MatmulDescAttributes {
  std::uint64_t pointer_mode = CUBLASLT_POINTER_MODE_HOST;
  std::uint64_t scale_type = CUDA_R_32F;
  std::uint64_t emulation = 0;
  std::uint32_t pointer_count = 0;
  std::uint64_t pointers[kMaxMatmulDescPointers];
};

// The set pointers of a matmul descriptor's record `words` into `into` (kMaxMatmulDescPointers
// words at most), in the order of their ids; how many.
inline std::uint32_t matmul_desc_pointers(const std::atomic<std::uint64_t>* words, std::uint64_t* into) noexcept {
  std::uint32_t n = 0;
  for (std::uint64_t left = words[0].load(std::memory_order_relaxed) & kMatmulDescPointers; left != 0; left &= left - 1)
    into[n++] = words[1 + __builtin_ctzll(left)].load(std::memory_order_relaxed);
  return n;
}

// Whether a cuBLASLt object's record has the name of the one it was made over (blas.h's kKeptWord:
// its pointers aside); and whether it is that record whole, its pointers too.
inline bool kept_record(const std::atomic<std::uint64_t>* words, std::uint32_t) noexcept {
  return (words[kKeptWord].load(std::memory_order_relaxed) & ~kPointersKeptBit) ==
         (words[0].load(std::memory_order_relaxed) | kKeptBit);
}
inline bool kept_whole(const std::atomic<std::uint64_t>* words, std::uint32_t) noexcept {
  return words[kKeptWord].load(std::memory_order_relaxed) ==
         (words[0].load(std::memory_order_relaxed) | kKeptBit | kPointersKeptBit);
}

// The record of the cuBLASLt object `object` (of `kind`) into the key: one word, its kind above its
// record's name (record_names.h), and for a matmul descriptor the values of its pointers after it
// (blas.h). A record names the mask of the attributes the program set (no kind has an attribute
// past 38) and their values but the pointers', in the mask's order. Null adds a zero (a null
// layout, emulation descriptor...), which `nullable` allows. A matmul descriptor's attributes the
// key needs go into `*desc`, which it must be given, and the version of the record the words are
// for into `*seen`. False when the record is unknown (the key is refused).
[[gnu::always_inline]] inline bool add_record(Key& key, const void* object, BlasKind kind, bool nullable = false,
                                              MatmulDescAttributes* desc = nullptr,
                                              BlasRegistry::Version* seen = nullptr) noexcept {
  if (object == nullptr || (kind == kMatmulDesc && desc == nullptr)) {
    if (object != nullptr || !nullable) key.refuse();
    key.add(0);
    return false;
  }
  const std::uint64_t pointers = kind == kMatmulDesc ? kMatmulDescPointers : 0;
  auto compact = [pointers](const std::atomic<std::uint64_t>* words, std::uint32_t, std::uint64_t* into) {
    const std::uint64_t mask = words[0].load(std::memory_order_relaxed);
    std::uint32_t n = 0;
    into[n++] = mask;
    for (std::uint64_t left = mask & ~pointers; left != 0; left &= left - 1)
      into[n++] = words[1 + __builtin_ctzll(left)].load(std::memory_order_relaxed);
    return n;
  };
  auto peek = [desc](const std::atomic<std::uint64_t>* words, std::uint32_t) {
    if (desc == nullptr) return;
    const std::uint64_t mask = words[0].load(std::memory_order_relaxed);
    auto attribute = [&](int id, std::uint64_t& out) {
      if ((mask >> id) & 1) out = words[1 + id].load(std::memory_order_relaxed);
    };
    attribute(CUBLASLT_MATMUL_DESC_POINTER_MODE, desc->pointer_mode);
    attribute(CUBLASLT_MATMUL_DESC_SCALE_TYPE, desc->scale_type);
    attribute(CUBLASLT_MATMUL_DESC_EMULATION_DESCRIPTOR, desc->emulation);
    desc->pointer_count = matmul_desc_pointers(words, desc->pointers);
  };
  const std::uint64_t name = record_name(g_blas_objects, g_blas_names, object, kind, compact, peek, kept_record, seen);
  if (name == 0) {
    key.refuse();
    return false;
  }
  key.add(named_record(kind, name));
  if (kind == kMatmulDesc)
    for (std::uint32_t i = 0; i < desc->pointer_count; ++i) key.add(desc->pointers[i]);
  return true;
}

// The CUDA context current on the calling thread (a cuBLASLt handle is tied to none), or null;
// `known`: the caller's entry (reach_for), or null.
inline CUcontext current_context(const void* caller, const Caller* known) noexcept {
  const Binding* driver = driver_for(caller, known);
  CUcontext context = nullptr;
  if (driver == nullptr || driver->real.cuCtxGetCurrent(&context) != CUDA_SUCCESS) return nullptr;
  return context;
}

}  // namespace cudnn_fastpath::shim
