// The hashing the cuBLAS and cuBLASLt stubs share (compiled into each; not exported): the heuristic's
// hash, and how alpha and beta are read at a call. Their kernels' digests: stub_styled_kernels.h.
#pragma once

#include <library_types.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "tests/stub/stub_blas_control.h"

namespace stubblas {

// FNV-1a over bytes, continued from `h`.
inline std::uint64_t fnv(const void* data, std::size_t size, std::uint64_t h = 14695981039346656037ull) {
  const auto* bytes = static_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < size; ++i) h = (h ^ bytes[i]) * 1099511628211ull;
  return h;
}

// A finalizer (splitmix64): a change anywhere in the input spreads over every output bit.
inline std::uint64_t mix(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// Bytes of one value of a scale type (alpha and beta); 0 for a type no scalar can have.
inline std::uint32_t scale_size(int type) {
  switch (type) {
    case CUDA_R_8I: case CUDA_R_8U: case CUDA_R_8F_E4M3: case CUDA_R_8F_E5M2: case CUDA_R_8F_UE8M0:
      return 1;
    case CUDA_R_16F: case CUDA_R_16BF: case CUDA_R_16I: case CUDA_R_16U: case CUDA_C_8I: case CUDA_C_8U:
      return 2;
    case CUDA_R_32F: case CUDA_R_32I: case CUDA_R_32U: case CUDA_C_16F: case CUDA_C_16BF:
    case CUDA_C_16I: case CUDA_C_16U:
      return 4;
    case CUDA_R_64F: case CUDA_R_64I: case CUDA_R_64U: case CUDA_C_32F: case CUDA_C_32I: case CUDA_C_32U:
      return 8;
    case CUDA_C_64F: case CUDA_C_64I: case CUDA_C_64U:
      return 16;
    default:
      return 0;
  }
}

// A scalar read at the call: its bytes (host) or its pointer (device).
inline StubBlasScalar host_scalar(const void* pointer, std::uint32_t size) {
  StubBlasScalar s;
  std::memset(&s, 0, sizeof s);
  s.kind = STUBBLAS_SCALAR_HOST;
  s.size = size;
  std::memcpy(s.bytes, pointer, size);
  return s;
}

inline StubBlasScalar device_scalar(const void* pointer, std::uint32_t size) {
  StubBlasScalar s;
  std::memset(&s, 0, sizeof s);
  s.kind = STUBBLAS_SCALAR_DEVICE;
  s.size = size;
  s.pointer = pointer;
  return s;
}

inline StubBlasScalar unread_scalar() {
  StubBlasScalar s;
  std::memset(&s, 0, sizeof s);
  return s;
}

}  // namespace stubblas
