// Host-side tensors and double-precision references for the GPU tests.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "cudnn_fastpath/op_descriptions.h"

namespace cudnn_fastpath::test {

// bf16: the top half of an fp32, rounded to nearest even.
inline std::uint16_t to_bf16(float value) {
  std::uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  bits += 0x7FFFu + ((bits >> 16) & 1u);
  return static_cast<std::uint16_t>(bits >> 16);
}
inline float from_bf16(std::uint16_t half) {
  const std::uint32_t bits = static_cast<std::uint32_t>(half) << 16;
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

// IEEE fp16, for the values these tests make (|x| < 65504): rounded to nearest even, with
// subnormals.
inline std::uint16_t to_fp16(float value) {
  std::uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  const std::uint16_t sign = static_cast<std::uint16_t>((bits >> 16) & 0x8000u);
  const float magnitude = std::fabs(value);
  if (magnitude < 6.103515625e-05f) {  // below fp16's smallest normal: multiples of 2^-24
    const auto units = static_cast<std::uint16_t>(std::nearbyint(magnitude * 16777216.0f));
    return static_cast<std::uint16_t>(sign | units);
  }
  const int exponent = static_cast<int>((bits >> 23) & 0xFFu) - 127 + 15;
  std::uint32_t mantissa = bits & 0x7FFFFFu;
  std::uint32_t half = (static_cast<std::uint32_t>(exponent) << 10) | (mantissa >> 13);
  const std::uint32_t rest = mantissa & 0x1FFFu;
  if (rest > 0x1000u || (rest == 0x1000u && (half & 1u))) ++half;  // may carry into the exponent
  return static_cast<std::uint16_t>(sign | half);
}
inline float from_fp16(std::uint16_t half) {
  const float sign = (half & 0x8000u) ? -1.0f : 1.0f;
  const int exponent = (half >> 10) & 0x1F;
  const int mantissa = half & 0x3FF;
  if (exponent == 0) return sign * std::ldexp(static_cast<float>(mantissa), -24);
  if (exponent == 31) return mantissa ? std::numeric_limits<float>::quiet_NaN() : sign * INFINITY;
  return sign * std::ldexp(static_cast<float>(mantissa | 0x400), exponent - 25);
}

inline std::size_t element_bytes(DataType type) { return type == DataType::kFloat ? 4 : 2; }

// A tensor as the device stores it, and the exact values it holds.
struct HostTensor {
  DataType type = DataType::kFloat;
  std::vector<double> values;
  std::vector<unsigned char> bytes;
};

inline double decode(DataType type, const unsigned char* element) {
  if (type == DataType::kFloat) {
    float value;
    std::memcpy(&value, element, sizeof value);
    return value;
  }
  std::uint16_t half;
  std::memcpy(&half, element, sizeof half);
  return type == DataType::kBFloat16 ? from_bf16(half) : from_fp16(half);
}

inline std::vector<double> decode_all(DataType type, const std::vector<unsigned char>& bytes) {
  std::vector<double> values(bytes.size() / element_bytes(type));
  for (std::size_t i = 0; i < values.size(); ++i)
    values[i] = decode(type, bytes.data() + i * element_bytes(type));
  return values;
}

// Uniform in [low, high), then rounded to `type`; `values` hold what the device will read.
inline HostTensor random_tensor(DataType type, std::size_t count, std::mt19937_64& random,
                                double low, double high) {
  std::uniform_real_distribution<float> uniform(static_cast<float>(low), static_cast<float>(high));
  HostTensor t;
  t.type = type;
  t.bytes.resize(count * element_bytes(type));
  for (std::size_t i = 0; i < count; ++i) {
    const float value = uniform(random);
    unsigned char* element = t.bytes.data() + i * element_bytes(type);
    if (type == DataType::kFloat) {
      std::memcpy(element, &value, sizeof value);
    } else {
      const std::uint16_t half = type == DataType::kBFloat16 ? to_bf16(value) : to_fp16(value);
      std::memcpy(element, &half, sizeof half);
    }
  }
  t.values = decode_all(type, t.bytes);
  return t;
}

// C[b] = relu?(A[b] B[b] + bias), row-major, in double.
inline std::vector<double> reference_matmul(const MatmulDescription& d, const std::vector<double>& a,
                                            const std::vector<double>& b,
                                            const std::vector<double>* bias) {
  std::vector<double> c(static_cast<std::size_t>(d.batch * d.m * d.n));
  for (std::int64_t batch = 0; batch < d.batch; ++batch)
    for (std::int64_t i = 0; i < d.m; ++i)
      for (std::int64_t j = 0; j < d.n; ++j) {
        double sum = 0;
        for (std::int64_t k = 0; k < d.k; ++k)
          sum += a[(batch * d.m + i) * d.k + k] * b[(batch * d.k + k) * d.n + j];
        if (bias != nullptr) sum += (*bias)[j];
        if (d.relu) sum = std::max(sum, 0.0);
        c[(batch * d.m + i) * d.n + j] = sum;
      }
  return c;
}

// Y = X (*) W, cross-correlation, X NHWC, W KRSC, Y NHWC, in double.
inline std::vector<double> reference_convolution(const ConvolutionDescription& d,
                                                 const std::vector<double>& x,
                                                 const std::vector<double>& w) {
  const std::int64_t p = d.output_h(), q = d.output_w();
  std::vector<double> y(static_cast<std::size_t>(d.n * p * q * d.k));
  for (std::int64_t n = 0; n < d.n; ++n)
    for (std::int64_t oh = 0; oh < p; ++oh)
      for (std::int64_t ow = 0; ow < q; ++ow)
        for (std::int64_t k = 0; k < d.k; ++k) {
          double sum = 0;
          for (std::int64_t r = 0; r < d.r; ++r) {
            const std::int64_t ih = oh * d.stride_h - d.pad_h + r * d.dilation_h;
            if (ih < 0 || ih >= d.h) continue;
            for (std::int64_t s = 0; s < d.s; ++s) {
              const std::int64_t iw = ow * d.stride_w - d.pad_w + s * d.dilation_w;
              if (iw < 0 || iw >= d.w) continue;
              for (std::int64_t c = 0; c < d.c; ++c)
                sum += x[((n * d.h + ih) * d.w + iw) * d.c + c] * w[((k * d.r + r) * d.s + s) * d.c + c];
            }
          }
          y[((n * p + oh) * q + ow) * d.k + k] = sum;
        }
  return y;
}

// The largest relative error of `got` against `expected`. Each element's error is measured
// against its own magnitude, or against the RMS of all expected values when it is smaller than
// that: sums of random signed terms land near zero now and then, and relative to zero any
// rounding is infinite. A NaN (an element never written over the poison) is an infinite error.
inline double max_relative_error(const std::vector<double>& got, const std::vector<double>& expected) {
  double square_sum = 0;
  for (double e : expected) square_sum += e * e;
  const double rms = std::sqrt(square_sum / static_cast<double>(expected.size()));
  double worst = got.size() == expected.size() ? 0.0 : INFINITY;
  for (std::size_t i = 0; i < got.size() && i < expected.size(); ++i) {
    const double error = std::fabs(got[i] - expected[i]) / std::max(std::fabs(expected[i]), rms);
    if (!(error <= worst)) worst = std::isnan(error) ? INFINITY : error;
  }
  return worst;
}

}  // namespace cudnn_fastpath::test
