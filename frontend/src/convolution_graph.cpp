// The operation graph of a ConvolutionDescription: one convolution-forward operation over NHWC
// tensors. cuDNN always takes dimensions in N, C, H, W order; the strides say the memory is
// channels-last.
#include <string>
#include <utility>
#include <vector>

#include "data_type.h"
#include "operation_graph.h"

namespace cudnn_fastpath::detail {

namespace {

constexpr std::int64_t kUidX = 1;
constexpr std::int64_t kUidW = 2;
constexpr std::int64_t kUidY = 3;

Status check_shape(const ConvolutionDescription& d, const std::string& summary) {
  const bool positive = d.n > 0 && d.c > 0 && d.h > 0 && d.w > 0 && d.k > 0 && d.r > 0 &&
                        d.s > 0 && d.stride_h > 0 && d.stride_w > 0 && d.dilation_h > 0 &&
                        d.dilation_w > 0 && d.pad_h >= 0 && d.pad_w >= 0;
  if (!positive)
    return Status(CUDNN_STATUS_BAD_PARAM,
                  summary + ": sizes, strides and dilations must be positive, paddings not negative");
  if (d.output_h() <= 0 || d.output_w() <= 0)
    return Status(CUDNN_STATUS_BAD_PARAM, summary + ": the filter is larger than the padded input");
  return Status();
}

// The strides of a channels-last tensor whose dimensions cuDNN takes as {n, c, h, w}.
std::vector<std::int64_t> nhwc_strides(std::int64_t c, std::int64_t h, std::int64_t w) {
  return {h * w * c, 1, w * c, c};
}

}  // namespace

std::string describe(const ConvolutionDescription& d) {
  auto pair = [](std::int64_t a, std::int64_t b) {
    return std::to_string(a) + "x" + std::to_string(b);
  };
  return "convolution NHWC [n=" + std::to_string(d.n) + " h=" + std::to_string(d.h) +
         " w=" + std::to_string(d.w) + " c=" + std::to_string(d.c) + "] * [k=" +
         std::to_string(d.k) + " r=" + std::to_string(d.r) + " s=" + std::to_string(d.s) +
         "] pad " + pair(d.pad_h, d.pad_w) + " stride " + pair(d.stride_h, d.stride_w) +
         " dilation " + pair(d.dilation_h, d.dilation_w) + " " + name_of(d.data_type);
}

Status build_operation_graph(const ConvolutionDescription& d, cudnnHandle_t handle,
                             OperationGraph* out) {
  out->summary = describe(d);
  if (Status shape = check_shape(d, out->summary); !shape.ok()) return shape;

  const cudnnDataType_t type = to_cudnn(d.data_type);
  const std::int64_t p = d.output_h();
  const std::int64_t q = d.output_w();

  BackendDescriptor x, w, y, convolution, operation;
  Status made = make_tensor({"X", kUidX, type, {d.n, d.c, d.h, d.w}, nhwc_strides(d.c, d.h, d.w)}, &x);
  if (made.ok())
    made = make_tensor({"W", kUidW, type, {d.k, d.c, d.r, d.s}, nhwc_strides(d.c, d.r, d.s)}, &w);
  if (made.ok())
    made = make_tensor({"Y", kUidY, type, {d.n, d.k, p, q}, nhwc_strides(d.k, p, q)}, &y);
  if (made.ok())
    made = DescriptorBuilder(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR, "convolution")
               .set(CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_DATA_FLOAT)
               .set(CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_CROSS_CORRELATION)
               .set(CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, std::int64_t{2})
               .set(CUDNN_ATTR_CONVOLUTION_DILATIONS, std::vector<std::int64_t>{d.dilation_h, d.dilation_w})
               .set(CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, std::vector<std::int64_t>{d.stride_h, d.stride_w})
               .set(CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, std::vector<std::int64_t>{d.pad_h, d.pad_w})
               .set(CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, std::vector<std::int64_t>{d.pad_h, d.pad_w})
               .finalize(&convolution);
  if (made.ok())
    made = DescriptorBuilder(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR,
                             "convolution forward operation")
               .set_descriptor(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, x)
               .set_descriptor(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, w)
               .set_descriptor(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, y)
               .set_descriptor(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, convolution)
               // Y = 1 * conv(X, W) + 0 * Y: fp32 scalars, as the compute type is fp32.
               .set(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, 1.0f)
               .set(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, 0.0f)
               .finalize(&operation);
  if (made.ok()) made = finalize_operation_graph(handle, {operation.get()}, out);
  if (!made.ok()) return made;

  out->tensor_uids = {kUidX, kUidW, kUidY};
  out->requirements.forbid_tf32 = d.data_type == DataType::kFloat && !d.allow_tf32;
  for (BackendDescriptor* part : {&x, &w, &y, &convolution, &operation})
    out->parts.push_back(std::move(*part));
  return Status();
}

}  // namespace cudnn_fastpath::detail
