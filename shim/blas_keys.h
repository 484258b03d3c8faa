// What the keys of cuBLASLt's and cuBLAS's replayed calls share (cublaslt_replay.cpp,
// cublas_replay.cpp): the bytes of a scaling factor as the library reads it, and a recorded
// object's record into a key.
#pragma once

#include <cublasLt.h>
#include <cublas_api.h>

#include <cstdint>
#include <cstring>

#include "shim/blas.h"
#include "shim/callers.h"
#include "shim/replay_engine.h"

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

// The record of `object` (of `kind`, its first `words`) into the key, after its kind; null adds a
// zero (a null layout, emulation descriptor...), which `nullable` allows. Returns the record's
// words (for the caller to read attributes from), or null.
inline const std::uint64_t* add_record(Key& key, BlasRegistry::Record& record, const void* object, BlasKind kind,
                                       std::uint32_t words, bool nullable = false) noexcept {
  if (object == nullptr) {
    if (!nullable) key.refuse();
    key.add(0);
    return nullptr;
  }
  if (!g_blas_objects.read(object, record) || record.kind != kind) {
    key.refuse();
    return nullptr;
  }
  key.add(kind);
  for (std::uint32_t i = 0; i < words; ++i) key.add(record.words[i]);
  return record.words;
}

// The value of attribute `id` of a descriptor record, or `otherwise` when the program left it at
// its default.
inline std::uint64_t attribute_of(const std::uint64_t* words, int id, std::uint64_t otherwise) noexcept {
  return ((words[0] >> id) & 1) ? words[1 + id] : otherwise;
}

// Whether a call from `caller` may be replayed or answered from a cache: not a library's own (cuDNN
// or cuBLAS calling cuBLASLt), not made inside a library call of the shim's, and not from a dlsym
// caller that holds a cuBLAS or cuBLASLt function of the library's own (an object it sets through
// that one would be replayed with stale contents).
inline bool replayable_caller(const void* caller) noexcept {
  if (inside_library_call()) return false;
  const Caller* c = known_caller(reinterpret_cast<std::uintptr_t>(caller));
  return c == nullptr || (!c->in_library.load(std::memory_order_relaxed) &&
                          !(c->dlsym_declined.load(std::memory_order_relaxed) & kDeclinedBlas));
}

// The CUDA context current on the calling thread (a cuBLASLt handle is tied to none), or null.
inline CUcontext current_context(const void* caller) noexcept {
  const Binding* driver = driver_for(caller);
  CUcontext context = nullptr;
  if (driver == nullptr || driver->real.cuCtxGetCurrent(&context) != CUDA_SUCCESS) return nullptr;
  return context;
}

}  // namespace cudnn_fastpath::shim
