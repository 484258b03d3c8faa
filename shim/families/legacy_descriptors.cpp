// cuDNN's legacy descriptors under the shim: what the calls on each of the program's descriptors
// made of it is recorded (legacy_records.h, through the actions of recorded_calls.h), for the keys
// of the legacy calls that use it (legacy_replay.cpp).
#include <cudnn.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <type_traits>
#include <utility>

#include "shim/families/legacy.h"
#include "shim/families/legacy_records.h"
#include "shim/families/recorded_calls.h"
#include "shim/libraries/callers.h"
#include "shim/libraries/dispatch.h"
#include "shim/libraries/mode.h"
#include "shim/process/counters.h"

namespace cudnn_fastpath::shim {

LegacyRegistry g_legacy_descriptors;
LegacyNames g_legacy_names;

namespace {

using Words = replay::SlotWords;
using replay::load_record;
using replay::store_record;

// ---- what each setter makes of a record: its length after it (0: not usable) --------------------

bool dims_fit(int count, int most) { return count >= 1 && count <= most; }

std::uint32_t record_tensor_4d(Words w, std::uint32_t, cudnnTensorFormat_t format, cudnnDataType_t type, int n, int c,
                               int h, int wd) {
  // The strides cuDNN derives from the format are its business: the record holds what was said.
  return store_record(w, TensorRecord{kFourD, format, type, 4, {{n, 0}, {c, 0}, {h, 0}, {wd, 0}}},
                      record_words<TensorRecord>(4));
}
std::uint32_t record_tensor_4d_ex(Words w, std::uint32_t, cudnnDataType_t type, int n, int c, int h, int wd, int ns,
                                  int cs, int hs, int ws) {
  return store_record(w, TensorRecord{kFourDEx, 0, type, 4, {{n, ns}, {c, cs}, {h, hs}, {wd, ws}}},
                      record_words<TensorRecord>(4));
}
std::uint32_t record_tensor_nd(Words w, std::uint32_t, cudnnDataType_t type, int nb, const int* dims,
                               const int* strides) {
  if (!dims_fit(nb, kMaxDims) || dims == nullptr || strides == nullptr) return 0;
  TensorRecord r{kNd, 0, type, nb, {}};
  for (int i = 0; i < nb; ++i) r.dims[i] = {dims[i], strides[i]};
  return store_record(w, r, record_words<TensorRecord>(nb));
}
std::uint32_t record_tensor_nd_ex(Words w, std::uint32_t, cudnnTensorFormat_t format, cudnnDataType_t type, int nb,
                                  const int* dims) {
  if (!dims_fit(nb, kMaxDims) || dims == nullptr) return 0;
  TensorRecord r{kNdEx, format, type, nb, {}};
  for (int i = 0; i < nb; ++i) r.dims[i] = {dims[i], 0};
  return store_record(w, r, record_words<TensorRecord>(nb));
}
// The derived descriptor is a function of x's contents and the mode: its record is x's, marked.
std::uint32_t record_derived_bn(Words w, std::uint32_t, const cudnnTensorDescriptor_t x, cudnnBatchNormMode_t mode) {
  std::uint64_t from[replay::words_of<TensorRecord>()] = {};
  std::uint32_t length = 0;
  const bool read = g_legacy_descriptors.read(x, kTensor, [&](const std::atomic<std::uint64_t>* words, std::uint32_t n) {
    length = n <= std::size(from) ? n : 0;
    for (std::uint32_t i = 0; i < length; ++i) from[i] = words[i].load(std::memory_order_relaxed);
  });
  if (!read || length == 0) return 0;
  TensorRecord r;
  std::memcpy(&r, from, sizeof r);
  r.setter = kDerivedBn | (r.setter << 8) | (static_cast<std::int32_t>(mode) << 16);
  return store_record(w, r, length);
}

std::uint32_t record_filter_4d(Words w, std::uint32_t, cudnnDataType_t type, cudnnTensorFormat_t format, int k, int c,
                               int h, int wd) {
  return store_record(w, FilterRecord{kFourD, type, format, 4, {k, c, h, wd}}, record_words<FilterRecord>(4));
}
std::uint32_t record_filter_nd(Words w, std::uint32_t, cudnnDataType_t type, cudnnTensorFormat_t format, int nb,
                               const int* dims) {
  if (!dims_fit(nb, kMaxDims) || dims == nullptr) return 0;
  FilterRecord r{kNd, type, format, nb, {}};
  for (int i = 0; i < nb; ++i) r.dims[i] = dims[i];
  return store_record(w, r, record_words<FilterRecord>(nb));
}

// A convolution descriptor's math type, group count and reorder type keep their values across a
// set of its geometry, and have defaults from its creation.
std::uint32_t convolution_defaults(Words w) {
  store_record(w, ConvolutionRecord{kUnset, 0, 0, 0, CUDNN_DEFAULT_MATH, 1, CUDNN_DEFAULT_REORDER, 0, {}, {}, {}});
  return 0;  // usable once its geometry is set
}
// `edit(record)` changes a convolution record; `usable` says whether that makes it usable (a set
// of its geometry) or leaves it as it was (the other setters).
template <typename Edit>
std::uint32_t edit_convolution(Words w, std::uint32_t length, bool usable, Edit&& edit) {
  ConvolutionRecord r = load_record<ConvolutionRecord>(w);
  edit(r);
  const std::uint32_t stored = store_record(w, r);
  return usable ? stored : length;
}
std::uint32_t record_convolution_2d(Words w, std::uint32_t length, int pad_h, int pad_w, int u, int v, int dilation_h,
                                    int dilation_w, cudnnConvolutionMode_t mode, cudnnDataType_t compute) {
  return edit_convolution(w, length, true, [&](ConvolutionRecord& r) {
    r.setter = kTwoD, r.array_length = 2, r.mode = mode, r.compute_type = compute;
    for (int i = 0; i < kMaxDims - 2; ++i) r.pad[i] = r.stride[i] = r.dilation[i] = 0;
    r.pad[0] = pad_h, r.pad[1] = pad_w, r.stride[0] = u, r.stride[1] = v, r.dilation[0] = dilation_h,
    r.dilation[1] = dilation_w;
  });
}
std::uint32_t record_convolution_nd(Words w, std::uint32_t length, int array_length, const int* pad, const int* stride,
                                    const int* dilation, cudnnConvolutionMode_t mode, cudnnDataType_t compute) {
  if (!dims_fit(array_length, kMaxDims - 2) || pad == nullptr || stride == nullptr || dilation == nullptr) return 0;
  return edit_convolution(w, length, true, [&](ConvolutionRecord& r) {
    r.setter = kNd, r.array_length = array_length, r.mode = mode, r.compute_type = compute;
    for (int i = 0; i < kMaxDims - 2; ++i)
      r.pad[i] = i < array_length ? pad[i] : 0, r.stride[i] = i < array_length ? stride[i] : 0,
      r.dilation[i] = i < array_length ? dilation[i] : 0;
  });
}
std::uint32_t record_math_type(Words w, std::uint32_t length, cudnnMathType_t math) {
  return edit_convolution(w, length, false, [&](ConvolutionRecord& r) { r.math_type = math; });
}
std::uint32_t record_group_count(Words w, std::uint32_t length, int groups) {
  return edit_convolution(w, length, false, [&](ConvolutionRecord& r) { r.group_count = groups; });
}
std::uint32_t record_reorder_type(Words w, std::uint32_t length, cudnnReorderType_t reorder) {
  return edit_convolution(w, length, false, [&](ConvolutionRecord& r) { r.reorder_type = reorder; });
}

std::uint32_t activation_defaults(Words w) {
  store_record(w, ActivationRecord{0, 0, 0, 0, 0.0, 0.0});
  return 0;  // usable once set
}
std::uint32_t record_activation(Words w, std::uint32_t, cudnnActivationMode_t mode, cudnnNanPropagation_t nan,
                                double coef) {
  ActivationRecord r = load_record<ActivationRecord>(w);  // the swish beta stays
  r.set = 1, r.mode = mode, r.nan = nan, r.coef = coef;
  return store_record(w, r);
}
std::uint32_t record_swish_beta(Words w, std::uint32_t length, double beta) {
  ActivationRecord r = load_record<ActivationRecord>(w);
  r.swish_set = 1, r.swish_beta = beta;
  store_record(w, r);
  return length;
}

std::uint32_t record_pooling_2d(Words w, std::uint32_t, cudnnPoolingMode_t mode, cudnnNanPropagation_t nan,
                                int window_h, int window_w, int pad_v, int pad_h, int stride_v, int stride_h) {
  return store_record(w, PoolingRecord{kTwoD, mode, nan, 2, {{window_h, pad_v, stride_v, 0}, {window_w, pad_h, stride_h, 0}}},
                      record_words<PoolingRecord>(2));
}
std::uint32_t record_pooling_nd(Words w, std::uint32_t, const cudnnPoolingMode_t mode, const cudnnNanPropagation_t nan,
                                int nb, const int* window, const int* padding, const int* stride) {
  if (!dims_fit(nb, kMaxDims) || window == nullptr || padding == nullptr || stride == nullptr) return 0;
  PoolingRecord r{kNd, mode, nan, nb, {}};
  for (int i = 0; i < nb; ++i) r.dims[i] = {window[i], padding[i], stride[i], 0};
  return store_record(w, r, record_words<PoolingRecord>(nb));
}

std::uint32_t record_op_tensor(Words w, std::uint32_t, cudnnOpTensorOp_t op, cudnnDataType_t compute,
                               cudnnNanPropagation_t nan) {
  return store_record(w, OpTensorRecord{op, compute, nan, 0});
}

// cuDNN's defaults (cudnn_ops.h): an LRN descriptor is usable as created.
std::uint32_t lrn_defaults(Words w) { return store_record(w, LrnRecord{5, 0, 1e-4, 0.75, 2.0}); }
std::uint32_t record_lrn(Words w, std::uint32_t, unsigned n, double alpha, double beta, double k) {
  return store_record(w, LrnRecord{n, 0, alpha, beta, k});
}

std::uint32_t record_tensor_transform(Words w, std::uint32_t, const std::uint32_t nb, const cudnnTensorFormat_t format,
                                      const std::int32_t* before, const std::int32_t* after, const std::uint32_t* fold,
                                      const cudnnFoldingDirection_t direction) {
  if (nb < 1 || nb > kMaxDims) return 0;
  TensorTransformRecord r{nb, static_cast<std::uint32_t>(format), static_cast<std::uint32_t>(direction), 0, {}, {}, {}};
  for (std::uint32_t i = 0; i < nb; ++i) {
    r.pad_before[i] = before ? before[i] : 0;
    r.pad_after[i] = after ? after[i] : 0;
    r.fold[i] = fold ? fold[i] : 0;
  }
  return store_record(w, r);
}

constexpr std::nullptr_t no_record = nullptr;

using Calls = RecordedCalls<LegacyRegistry, g_legacy_descriptors, Library::kCudnn, cudnnStatus_t,
                            CUDNN_STATUS_NOT_INITIALIZED, Records::kLegacy>;

// The action of each entry: kCreate, kSet, kDestroy (CUDNN_FASTPATH_RECORDED_CALL).
#define kCreate(library) Calls::created
#define kSet(library) Calls::set
#define kDestroy(library) Calls::destroyed

}  // namespace

CUDNN_FASTPATH_LEGACY_DESCRIPTOR_ENTRY_POINTS(CUDNN_FASTPATH_RECORDED_CALL)

}  // namespace cudnn_fastpath::shim
