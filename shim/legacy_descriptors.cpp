// cuDNN's legacy descriptors under the shim: what the program's own calls made of each descriptor
// is recorded (legacy_records.h, through the actions of recorded_calls.h), for the keys of the
// legacy calls that use it (legacy_replay.cpp).
#include <cudnn.h>

#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "shim/callers.h"
#include "shim/counters.h"
#include "shim/dispatch.h"
#include "shim/legacy.h"
#include "shim/legacy_records.h"
#include "shim/process.h"
#include "shim/recorded_calls.h"

namespace cudnn_fastpath::shim {

LegacyRegistry g_legacy_descriptors;

namespace {

using Words = std::uint64_t[LegacyRegistry::kWords];

// ---- what each setter makes of a record: whether the record is known after it -------------------

bool dims_fit(int count, int most) { return count >= 1 && count <= most; }

template <typename Record>
bool replace(Words& words, const Record& r) {
  words_from(r, words);
  return true;
}

bool record_tensor_4d(Words& w, bool, cudnnTensorFormat_t format, cudnnDataType_t type, int n, int c, int h, int wd) {
  return replace(w, TensorRecord{kFourD, format, type, 4, {n, c, h, wd}, {}});
}
bool record_tensor_4d_ex(Words& w, bool, cudnnDataType_t type, int n, int c, int h, int wd, int ns, int cs, int hs,
                         int ws) {
  return replace(w, TensorRecord{kFourDEx, 0, type, 4, {n, c, h, wd}, {ns, cs, hs, ws}});
}
bool record_tensor_nd(Words& w, bool, cudnnDataType_t type, int nb, const int* dims, const int* strides) {
  if (!dims_fit(nb, kMaxDims) || dims == nullptr || strides == nullptr) return false;
  TensorRecord r{kNd, 0, type, nb, {}, {}};
  for (int i = 0; i < nb; ++i) r.dims[i] = dims[i], r.strides[i] = strides[i];
  return replace(w, r);
}
bool record_tensor_nd_ex(Words& w, bool, cudnnTensorFormat_t format, cudnnDataType_t type, int nb, const int* dims) {
  if (!dims_fit(nb, kMaxDims) || dims == nullptr) return false;
  TensorRecord r{kNdEx, format, type, nb, {}, {}};
  for (int i = 0; i < nb; ++i) r.dims[i] = dims[i];
  return replace(w, r);
}
// The derived descriptor is a function of x's contents and the mode: its record is x's, marked.
bool record_derived_bn(Words& w, bool, const cudnnTensorDescriptor_t x, cudnnBatchNormMode_t mode) {
  LegacyRegistry::Record from;
  if (!g_legacy_descriptors.read(x, from) || from.kind != kTensor) return false;
  TensorRecord r = record_from<TensorRecord>(from.words);
  r.setter = kDerivedBn | (r.setter << 8) | (static_cast<std::int32_t>(mode) << 16);
  return replace(w, r);
}

bool record_filter_4d(Words& w, bool, cudnnDataType_t type, cudnnTensorFormat_t format, int k, int c, int h, int wd) {
  return replace(w, FilterRecord{kFourD, type, format, 4, {k, c, h, wd}});
}
bool record_filter_nd(Words& w, bool, cudnnDataType_t type, cudnnTensorFormat_t format, int nb, const int* dims) {
  if (!dims_fit(nb, kMaxDims) || dims == nullptr) return false;
  FilterRecord r{kNd, type, format, nb, {}};
  for (int i = 0; i < nb; ++i) r.dims[i] = dims[i];
  return replace(w, r);
}

// A convolution descriptor's math type, group count and reorder type keep their values across a
// set of its geometry, and have defaults from its creation.
bool convolution_defaults(Words& w) {
  replace(w, ConvolutionRecord{kUnset, 0, 0, 0, CUDNN_DEFAULT_MATH, 1, CUDNN_DEFAULT_REORDER, 0, {}, {}, {}});
  return false;  // known once its geometry is set
}
template <typename Edit>
bool edit_convolution(Words& w, bool known, Edit&& edit) {
  ConvolutionRecord r = record_from<ConvolutionRecord>(w);
  const bool now = edit(r, known);
  words_from(r, w);
  return now;
}
bool record_convolution_2d(Words& w, bool known, int pad_h, int pad_w, int u, int v, int dilation_h, int dilation_w,
                           cudnnConvolutionMode_t mode, cudnnDataType_t compute) {
  return edit_convolution(w, known, [&](ConvolutionRecord& r, bool) {
    r.setter = kTwoD, r.array_length = 2, r.mode = mode, r.compute_type = compute;
    for (int i = 0; i < kMaxDims - 2; ++i) r.pad[i] = r.stride[i] = r.dilation[i] = 0;
    r.pad[0] = pad_h, r.pad[1] = pad_w, r.stride[0] = u, r.stride[1] = v, r.dilation[0] = dilation_h,
    r.dilation[1] = dilation_w;
    return true;
  });
}
bool record_convolution_nd(Words& w, bool known, int length, const int* pad, const int* stride, const int* dilation,
                           cudnnConvolutionMode_t mode, cudnnDataType_t compute) {
  if (!dims_fit(length, kMaxDims - 2) || pad == nullptr || stride == nullptr || dilation == nullptr) return false;
  return edit_convolution(w, known, [&](ConvolutionRecord& r, bool) {
    r.setter = kNd, r.array_length = length, r.mode = mode, r.compute_type = compute;
    for (int i = 0; i < kMaxDims - 2; ++i)
      r.pad[i] = i < length ? pad[i] : 0, r.stride[i] = i < length ? stride[i] : 0,
      r.dilation[i] = i < length ? dilation[i] : 0;
    return true;
  });
}
bool record_math_type(Words& w, bool known, cudnnMathType_t math) {
  return edit_convolution(w, known, [&](ConvolutionRecord& r, bool was) { return r.math_type = math, was; });
}
bool record_group_count(Words& w, bool known, int groups) {
  return edit_convolution(w, known, [&](ConvolutionRecord& r, bool was) { return r.group_count = groups, was; });
}
bool record_reorder_type(Words& w, bool known, cudnnReorderType_t reorder) {
  return edit_convolution(w, known, [&](ConvolutionRecord& r, bool was) { return r.reorder_type = reorder, was; });
}

bool activation_defaults(Words& w) {
  replace(w, ActivationRecord{0, 0, 0, 0, 0.0, 0.0});
  return false;  // known once set
}
bool record_activation(Words& w, bool, cudnnActivationMode_t mode, cudnnNanPropagation_t nan, double coef) {
  ActivationRecord r = record_from<ActivationRecord>(w);  // the swish beta stays
  r.set = 1, r.mode = mode, r.nan = nan, r.coef = coef;
  return replace(w, r);
}
bool record_swish_beta(Words& w, bool known, double beta) {
  ActivationRecord r = record_from<ActivationRecord>(w);
  r.swish_set = 1, r.swish_beta = beta;
  replace(w, r);
  return known;
}

bool record_pooling_2d(Words& w, bool, cudnnPoolingMode_t mode, cudnnNanPropagation_t nan, int window_h, int window_w,
                       int pad_v, int pad_h, int stride_v, int stride_h) {
  return replace(w, PoolingRecord{kTwoD, mode, nan, 2, {window_h, window_w}, {pad_v, pad_h}, {stride_v, stride_h}});
}
bool record_pooling_nd(Words& w, bool, const cudnnPoolingMode_t mode, const cudnnNanPropagation_t nan, int nb,
                       const int* window, const int* padding, const int* stride) {
  if (!dims_fit(nb, kMaxDims) || window == nullptr || padding == nullptr || stride == nullptr) return false;
  PoolingRecord r{kNd, mode, nan, nb, {}, {}, {}};
  for (int i = 0; i < nb; ++i) r.window[i] = window[i], r.padding[i] = padding[i], r.stride[i] = stride[i];
  return replace(w, r);
}

bool record_op_tensor(Words& w, bool, cudnnOpTensorOp_t op, cudnnDataType_t compute, cudnnNanPropagation_t nan) {
  return replace(w, OpTensorRecord{op, compute, nan, 0});
}

// cuDNN's defaults (cudnn_ops.h): an LRN descriptor is usable as created.
bool lrn_defaults(Words& w) { return replace(w, LrnRecord{5, 0, 1e-4, 0.75, 2.0}); }
bool record_lrn(Words& w, bool, unsigned n, double alpha, double beta, double k) {
  return replace(w, LrnRecord{n, 0, alpha, beta, k});
}

bool record_tensor_transform(Words& w, bool, const std::uint32_t nb, const cudnnTensorFormat_t format,
                             const std::int32_t* before, const std::int32_t* after, const std::uint32_t* fold,
                             const cudnnFoldingDirection_t direction) {
  if (nb < 1 || nb > kMaxDims) return false;
  TensorTransformRecord r{nb, static_cast<std::uint32_t>(format), static_cast<std::uint32_t>(direction), 0, {}, {}, {}};
  for (std::uint32_t i = 0; i < nb; ++i) {
    r.pad_before[i] = before ? before[i] : 0;
    r.pad_after[i] = after ? after[i] : 0;
    r.fold[i] = fold ? fold[i] : 0;
  }
  return replace(w, r);
}

constexpr std::nullptr_t no_record = nullptr;

using Calls = RecordedCalls<LegacyRegistry, g_legacy_descriptors, Library::kCudnn, cudnnStatus_t,
                            CUDNN_STATUS_NOT_INITIALIZED>;

// The action of each entry: kCreate, kSet, kDestroy.
#define kCreate Calls::created
#define kSet Calls::set
#define kDestroy Calls::destroyed

}  // namespace

#define CUDNN_FASTPATH_DEFINE_DESCRIPTOR_CALL(exported, library, result, function, parameters, arguments, action, kind, \
                                              recorder)                                                              \
  result function(const void* caller, CUDNN_FASTPATH_EXPAND parameters) noexcept {                                   \
    return action<&RealSymbols::exported, offsetof(DispatchV1, function), &DispatchV1::function, kind, recorder>(      \
        caller, CUDNN_FASTPATH_EXPAND arguments);                                                                     \
  }
CUDNN_FASTPATH_LEGACY_DESCRIPTOR_ENTRY_POINTS(CUDNN_FASTPATH_DEFINE_DESCRIPTOR_CALL)
#undef CUDNN_FASTPATH_DEFINE_DESCRIPTOR_CALL

}  // namespace cudnn_fastpath::shim
