// Descriptions of the operations a Graph can be built from. Plain values: no cuDNN call happens
// until a Graph made from one is built.
#pragma once

#include <cstdint>

namespace cudnn_fastpath {

// Element types of the tensors in memory. Arithmetic is always fp32 (see the descriptions).
enum class DataType { kFloat, kHalf, kBFloat16 };

// C[b] = relu(A[b] x B[b] + bias), the bias add and the ReLU each optional, accumulated in fp32.
//
//   A     [batch, m, k]  row-major, input_type
//   B     [batch, k, n]  row-major, input_type
//   bias  [n]            one value per output column, shared by every row and batch, output_type
//   C     [batch, m, n]  row-major, output_type
//
// Graph::execute takes the device pointers in this order: A, B, bias (only when add_bias), C.
struct MatmulDescription {
  std::int64_t batch = 1;
  std::int64_t m = 0;
  std::int64_t n = 0;
  std::int64_t k = 0;
  DataType input_type = DataType::kBFloat16;
  DataType output_type = DataType::kBFloat16;
  bool add_bias = false;
  bool relu = false;
  // With fp32 inputs, also accept engines that round the inputs to TF32 on tensor cores (faster,
  // about 1e-3 relative error). Off: fp32 in means fp32 arithmetic.
  bool allow_tf32 = false;
};

// Y = X (*) W, a 2-D cross-correlation (what deep-learning frameworks call convolution), NHWC,
// accumulated in fp32.
//
//   X  [n, h, w, c]  in memory (NHWC), data_type
//   W  [k, r, s, c]  in memory (KRSC), data_type
//   Y  [n, p, q, k]  in memory (NHWC), data_type, with p = output_h() and q = output_w()
//
// Graph::execute takes the device pointers in this order: X, W, Y.
struct ConvolutionDescription {
  std::int64_t n = 1;
  std::int64_t c = 0;
  std::int64_t h = 0;
  std::int64_t w = 0;
  std::int64_t k = 0;  // output channels
  std::int64_t r = 0;  // filter height
  std::int64_t s = 0;  // filter width
  std::int64_t pad_h = 0;
  std::int64_t pad_w = 0;
  std::int64_t stride_h = 1;
  std::int64_t stride_w = 1;
  std::int64_t dilation_h = 1;
  std::int64_t dilation_w = 1;
  DataType data_type = DataType::kBFloat16;
  bool allow_tf32 = false;  // as in MatmulDescription

  std::int64_t output_h() const noexcept {
    return (h + 2 * pad_h - dilation_h * (r - 1) - 1) / stride_h + 1;
  }
  std::int64_t output_w() const noexcept {
    return (w + 2 * pad_w - dilation_w * (s - 1) - 1) / stride_w + 1;
  }
};

}  // namespace cudnn_fastpath
