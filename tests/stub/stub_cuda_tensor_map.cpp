// The stub driver's cuTensorMapReplaceAddress, for tensor maps in the stub's encoding
// (stub_tensor_map.h), which the stub libraries pass to their "tma" kernels.
#include <cstdint>

#include "tests/stub/stub_cuda.h"
#include "tests/stub/stub_tensor_map.h"

extern "C" {

// As the driver requires: a map 64-byte aligned, made by an encode (here: the stub's), and a new
// address that keeps the 16-byte alignment.
CUresult CUDAAPI cuTensorMapReplaceAddress(CUtensorMap* tensorMap, void* globalAddress) {
  const auto address = reinterpret_cast<std::uintptr_t>(globalAddress);
  if (tensorMap == nullptr || reinterpret_cast<std::uintptr_t>(tensorMap) % 64 != 0 || address % 16 != 0)
    return CUDA_ERROR_INVALID_VALUE;
  if (!stubtma::is_map(tensorMap)) return CUDA_ERROR_INVALID_VALUE;
  stubtma::set_address(tensorMap, address);
  return CUDA_SUCCESS;
}

}  // extern "C"
