#include "shim/streams/stream_destroy.h"

#include <cstdint>

#include "shim/libraries/callers.h"
#include "shim/libraries/mode.h"
#include "shim/process/counters.h"
#include "shim/streams/handle_table.h"

namespace cudnn_fastpath::shim {
namespace {

// The real destroy, with every slot that holds the stream forgotten before it (so that a new
// stream at this address is never skipped) and again after it (in case a set on the dying stream
// slipped in between). Only slots that hold a handle are visited.
template <typename Result, typename RealDestroy>
Result forget_around(std::uint32_t m, cudaStream_t stream, RealDestroy&& destroy) {
  if (m & mode::kDisabled) return destroy();
  const auto key = reinterpret_cast<std::uintptr_t>(stream);
  HandleTable& table = handle_table();
  std::size_t forgotten = table.forget_stream(key);
  const Result status = destroy();
  forgotten += table.forget_stream(key);
  if ((m & mode::kCounting) && forgotten) count(Counter::streams_forgotten, forgotten);
  return status;
}

}  // namespace

cudaError_t cuda_stream_destroy(const void* caller, cudaStream_t stream) noexcept {
  const std::uint32_t m = current_mode();
  if (m & mode::kFollower) return leader().cuda_stream_destroy(caller, stream);
  const RealSymbols& real = binding_for(Library::kCudart, caller).real;
  if (real.cudaStreamDestroy == nullptr) return cudaErrorInitializationError;
  return forget_around<cudaError_t>(m, stream, [&] { return real.cudaStreamDestroy(stream); });
}

CUresult cu_stream_destroy_v2(const void* caller, CUstream stream) noexcept {
  const std::uint32_t m = current_mode();
  if (m & mode::kFollower) return leader().cu_stream_destroy_v2(caller, stream);
  const RealSymbols& real = binding_for(Library::kCuda, caller).real;
  if (real.cuStreamDestroy_v2 == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  return forget_around<CUresult>(m, stream, [&] { return real.cuStreamDestroy_v2(stream); });
}

CUresult cu_stream_destroy(const void* caller, CUstream stream) noexcept {
  const std::uint32_t m = current_mode();
  if (m & mode::kFollower) return leader().cu_stream_destroy(caller, stream);
  const RealSymbols& real = binding_for(Library::kCuda, caller).real;
  // A driver old enough to lack the _v2 name is not one this shim meets; without the old name,
  // the _v2 one does the same.
  const auto destroy = real.cuStreamDestroy ? real.cuStreamDestroy : real.cuStreamDestroy_v2;
  if (destroy == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  return forget_around<CUresult>(m, stream, [&] { return destroy(stream); });
}

}  // namespace cudnn_fastpath::shim
