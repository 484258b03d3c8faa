// What the shim records of cuDNN's legacy descriptors (legacy_descriptors.cpp) and reads back into
// the keys of the legacy calls (legacy_replay.cpp): one record layout per kind, in the registry of
// replay/descriptor_registry.h.
//
// A record is what the calls on a program's descriptor made of it, field by field as they passed
// them (which setter, and its arguments): two descriptors with the same record describe the same
// tensor, filter or operation, so a call that uses them does the same work. A record is known once
// the descriptor's defining setter ran (tensor, filter, convolution, activation, pooling, op tensor,
// tensor transform), or from its creation (LRN: cuDNN's defaults); the partial setters
// (convolution math type, group count and reorder type; activation swish beta) edit a record
// without making it known.
#pragma once

#include <cstddef>
#include <cstdint>

#include "replay/descriptor_registry.h"
#include "replay/record_ids.h"

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
// around each call. A record is at most 18 words (a pooling record of eight dimensions).
using LegacyRegistry = replay::DescriptorRegistry<4096, 18>;
extern LegacyRegistry g_legacy_descriptors __attribute__((visibility("hidden")));
// The names of their records' contents (record_names.h): 512 contents.
using LegacyNames = replay::RecordIds<64, 8, 18>;
extern LegacyNames g_legacy_names __attribute__((visibility("hidden")));

inline constexpr int kMaxDims = 8;  // CUDNN_DIM_MAX

// Which setter made a record (a tensor set four ways describes the same tensor only when the
// same way: the key holds what the program said, not what cuDNN made of it).
enum Setter : std::int32_t { kUnset = 0, kFourD, kFourDEx, kNd, kNdEx, kDerivedBn, kTwoD };

// A record's words that a key needs are its first ones: a tensor, filter or pooling record keeps its
// per-dimension fields together, so one of N dimensions is its header and N entries (the length
// its setter stores: record_words below), not the eight dimensions cuDNN allows.
struct TensorRecord {
  std::int32_t setter, format, type, nb_dims;
  struct Dimension {
    std::int32_t size, stride;
  } dims[kMaxDims];
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
  struct Dimension {
    std::int32_t window, padding, stride, unused;
  } dims[kMaxDims];
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

// The words of a record of `nb` dimensions: its header (two words) and its first `nb` entries.
template <typename Record>
constexpr std::uint32_t record_words(int nb) noexcept {
  return static_cast<std::uint32_t>((16 + nb * sizeof Record::dims[0] + 7) / 8);
}
static_assert(replay::words_of<TensorRecord>() <= LegacyRegistry::kWords &&
                  replay::words_of<PoolingRecord>() <= LegacyRegistry::kWords &&
                  replay::words_of<ConvolutionRecord>() <= LegacyRegistry::kWords &&
                  replay::words_of<TensorTransformRecord>() <= LegacyRegistry::kWords,
              "a record fits the registry's words");
// The data type a tensor record's second word holds in its low half (the scaling factors' size).
static_assert(offsetof(TensorRecord, type) == 8, "a tensor record's type opens its second word");

}  // namespace cudnn_fastpath::shim
