// What the shim records of cuDNN's legacy descriptors (legacy_descriptors.cpp) and reads back into
// the keys of the legacy calls (legacy_replay.cpp): one record layout per kind, in the registry of
// replay/descriptor_registry.h.
//
// A record is what the program's own calls made of the descriptor, field by field as it passed
// them (which setter, and its arguments): two descriptors with the same record describe the same
// tensor, filter or operation, so a call that uses them does the same work. A record is known once
// the descriptor's defining setter ran (tensor, filter, convolution, activation, pooling, op tensor,
// tensor transform), or from its creation (LRN: cuDNN's defaults); the partial setters
// (convolution math type, group count and reorder type; activation swish beta) edit a record
// without making it known.
#pragma once

#include <cstdint>
#include <cstring>

#include "replay/descriptor_registry.h"

namespace cudnn_fastpath::shim {

enum DescriptorKind : std::uint32_t {
  kTensor = 1,
  kFilter,
  kConvolution,
  kActivation,
  kPooling,
  kOpTensor,
  kLrn,
  kTensorTransform,
};

// 4096 live descriptors: ONNX Runtime keeps a few per node; PyTorch makes and destroys its own
// around each call. A record is at most 16 words.
using LegacyRegistry = replay::DescriptorRegistry<4096, 16>;
extern LegacyRegistry g_legacy_descriptors __attribute__((visibility("hidden")));

inline constexpr int kMaxDims = 8;  // CUDNN_DIM_MAX

// Which setter made a record (a tensor set four ways describes the same tensor only when the
// same way: the key holds what the program said, not what cuDNN made of it).
enum Setter : std::int32_t { kUnset = 0, kFourD, kFourDEx, kNd, kNdEx, kDerivedBn, kTwoD };

struct TensorRecord {
  std::int32_t setter, format, type, nb_dims;
  std::int32_t dims[kMaxDims], strides[kMaxDims];
};
struct FilterRecord {
  std::int32_t setter, type, format, nb_dims;
  std::int32_t dims[kMaxDims];
};
struct ConvolutionRecord {
  std::int32_t setter, array_length, mode, compute_type, math_type, group_count, reorder_type, unused;
  std::int32_t pad[kMaxDims - 2], stride[kMaxDims - 2], dilation[kMaxDims - 2];
};
struct ActivationRecord {
  std::int32_t set, mode, nan, swish_set;
  double coef, swish_beta;
};
struct PoolingRecord {
  std::int32_t setter, mode, nan, nb_dims;
  std::int32_t window[kMaxDims], padding[kMaxDims], stride[kMaxDims];
};
struct OpTensorRecord {
  std::int32_t op, compute_type, nan, unused;
};
struct LrnRecord {
  std::uint32_t n, unused;
  double alpha, beta, k;
};
struct TensorTransformRecord {
  std::uint32_t nb_dims, dest_format, direction, unused;
  std::int32_t pad_before[kMaxDims], pad_after[kMaxDims];
  std::uint32_t fold[kMaxDims];
};

// The registry's words as a record and back (a record is plain data, zero-padded to the words).
template <typename Record>
Record record_from(const std::uint64_t* words) noexcept {
  static_assert(sizeof(Record) <= LegacyRegistry::kWords * 8, "a record fits the registry's words");
  Record r;
  std::memcpy(&r, words, sizeof r);
  return r;
}
template <typename Record>
void words_from(const Record& r, std::uint64_t (&words)[LegacyRegistry::kWords]) noexcept {
  std::memset(words, 0, sizeof words);
  std::memcpy(words, &r, sizeof r);
}

}  // namespace cudnn_fastpath::shim
