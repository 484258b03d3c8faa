// A small network on cuDNN's legacy API, driven the way ONNX Runtime's CUDA execution provider
// drives it: each node creates its descriptors once and keeps them, and when its input's shape
// changes it sets them again in place (ORT compares the input's dims with the last ones it saw);
// the convolution algorithm is chosen once per shape and cached; everything runs on one stream.
// Two input shapes alternate from one iteration to the next, so every descriptor is set again at
// every op, with contents that go back and forth: what the shim's replay of legacy calls must get
// right (it records descriptor contents as the program sets them). legacy_network_test.cpp runs it
// without the shim, under it and in verify mode, and compares the bytes it writes.
//
//   legacy_network probe
//   legacy_network run --iters N --out FILE
//
// The network, fp32 NCHW: conv 3->16 (cudnnConvolutionForward), batch norm inference, ReLU
// (cudnnActivationForward), LRN, max pool 2x2, conv 16->32 with bias and ReLU
// (cudnnConvolutionBiasActivationForward), a per-channel scale (cudnnOpTensor), a per-channel bias
// (cudnnAddTensor), x0.5 (cudnnScaleTensor), global average pool, softmax over the channels, and an
// NHWC copy of the features (cudnnTransformTensor). Each iteration copies one of four inputs of its
// shape into the one input buffer first. Writes to FILE every iteration's softmax output, then the
// last iteration's features and their NHWC copy. Prints key=value lines (iterations, descriptor_sets,
// calls.<op>, output_bytes, failed_calls). Exit status: 0; 77 with "SKIPPED: no CUDA device"
// without a GPU; 1 when a call failed (each failure is printed).
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#pragma GCC diagnostic ignored "-Wdeprecated-declarations"  // the legacy API is deprecated in cuDNN 9

namespace {

constexpr int kNoDevice = 77;
constexpr int kInputSets = 4;
constexpr std::array<std::array<int, 4>, 2> kShapes = {{{1, 3, 32, 32}, {2, 3, 24, 24}}};  // N, C, H, W
constexpr int kMaxN = 2, kMaxH = 32, kMaxW = 32;
constexpr int kC1 = 16, kC2 = 32;
constexpr size_t kWorkspaceBytes = 64u << 20;

int g_failures = 0;
std::map<std::string, long long> g_calls;  // op -> calls made

void check(cudnnStatus_t status, const char* what) {
  if (status == CUDNN_STATUS_SUCCESS) return;
  if (g_failures++ < 10) std::printf("failed: %s: %s\n", what, cudnnGetErrorString(status));
}
void check(cudaError_t status, const char* what) {
  if (status == cudaSuccess) return;
  if (g_failures++ < 10) std::printf("failed: %s: %s\n", what, cudaGetErrorString(status));
}
// An op of the network: counted, then checked.
void op(cudnnStatus_t status, const char* name) {
  ++g_calls[name];
  check(status, name);
}

// Deterministic values in [-scale, scale): the same weights and inputs in every run.
std::vector<float> values(size_t count, std::uint32_t seed, float scale, float offset = 0.0f) {
  std::vector<float> v(count);
  std::uint32_t x = seed * 2654435761u + 12345u;
  for (float& f : v) {
    x = x * 1664525u + 1013904223u;
    f = offset + scale * (static_cast<float>(x >> 8) / 8388608.0f - 1.0f);
  }
  return v;
}

float* device_copy(const std::vector<float>& host) {
  void* p = nullptr;
  check(cudaMalloc(&p, host.size() * sizeof(float)), "cudaMalloc");
  check(cudaMemcpy(p, host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice), "cudaMemcpy");
  return static_cast<float*>(p);
}

float* device_buffer(size_t count) { return device_copy(std::vector<float>(count, 0.0f)); }

// A tensor descriptor a node keeps, set again only when its dims change (ORT's CudnnTensor::Set).
class TensorDesc {
 public:
  TensorDesc() { check(cudnnCreateTensorDescriptor(&desc_), "cudnnCreateTensorDescriptor"); }
  ~TensorDesc() { cudnnDestroyTensorDescriptor(desc_); }
  TensorDesc(const TensorDesc&) = delete;
  TensorDesc& operator=(const TensorDesc&) = delete;
  // NCHW, or NHWC strides when nhwc: set with cudnnSetTensorNdDescriptor, as ORT does.
  void set(int n, int c, int h, int w, bool nhwc = false) {
    const std::array<int, 4> dims = {n, c, h, w};
    if (dims == dims_) return;
    dims_ = dims;
    const std::array<int, 4> strides =
        nhwc ? std::array<int, 4>{h * w * c, 1, w * c, c} : std::array<int, 4>{c * h * w, h * w, w, 1};
    check(cudnnSetTensorNdDescriptor(desc_, CUDNN_DATA_FLOAT, 4, dims.data(), strides.data()),
          "cudnnSetTensorNdDescriptor");
    ++g_calls["descriptor_sets"];
  }
  // A per-channel tensor (1, c, 1, 1), set once with the 4d call.
  void set_channels(int c) {
    check(cudnnSetTensor4dDescriptor(desc_, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, c, 1, 1),
          "cudnnSetTensor4dDescriptor");
    dims_ = {1, c, 1, 1};
  }
  cudnnTensorDescriptor_t get() const { return desc_; }
  const std::array<int, 4>& dims() const { return dims_; }

 private:
  cudnnTensorDescriptor_t desc_ = nullptr;
  std::array<int, 4> dims_ = {0, 0, 0, 0};
};

// A 3x3 convolution, padding 1, with its algorithm cached per input shape (ORT's benchmark cache).
class Conv {
 public:
  Conv(int in, int out, std::uint32_t seed) : in_(in), out_(out) {
    weights_ = device_copy(values(static_cast<size_t>(out) * in * 9, seed, 0.3f));
    check(cudnnCreateFilterDescriptor(&filter_), "cudnnCreateFilterDescriptor");
    const int filter_dims[4] = {out, in, 3, 3};
    check(cudnnSetFilterNdDescriptor(filter_, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, 4, filter_dims),
          "cudnnSetFilterNdDescriptor");
    check(cudnnCreateConvolutionDescriptor(&conv_), "cudnnCreateConvolutionDescriptor");
    const int pad[2] = {1, 1}, stride[2] = {1, 1}, dilation[2] = {1, 1};
    check(cudnnSetConvolutionNdDescriptor(conv_, 2, pad, stride, dilation, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
          "cudnnSetConvolutionNdDescriptor");
    check(cudnnSetConvolutionMathType(conv_, CUDNN_DEFAULT_MATH), "cudnnSetConvolutionMathType");
  }
  ~Conv() {
    cudnnDestroyFilterDescriptor(filter_);
    cudnnDestroyConvolutionDescriptor(conv_);
    cudaFree(weights_);
  }
  Conv(const Conv&) = delete;
  Conv& operator=(const Conv&) = delete;

  // Sets the descriptors for an input of n x in x h x w (only if it changed) and picks the algorithm.
  void reshape(cudnnHandle_t handle, int n, int h, int w, bool fixed_algorithm) {
    x_.set(n, in_, h, w);
    y_.set(n, out_, h, w);
    const auto key = x_.dims();
    auto it = algorithms_.find(key);
    if (it == algorithms_.end()) {
      cudnnConvolutionFwdAlgo_t algo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM;
      if (!fixed_algorithm) {
        // The heuristics' first deterministic choice that fits: the same one in every run.
        cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
        int returned = 0;
        check(cudnnGetConvolutionForwardAlgorithm_v7(handle, x_.get(), filter_, conv_, y_.get(),
                                                     CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &returned, perf),
              "cudnnGetConvolutionForwardAlgorithm_v7");
        for (int i = 0; i < returned; ++i) {
          if (perf[i].status == CUDNN_STATUS_SUCCESS && perf[i].determinism == CUDNN_DETERMINISTIC &&
              perf[i].memory <= kWorkspaceBytes) {
            algo = perf[i].algo;
            break;
          }
        }
      }
      size_t bytes = 0;
      check(cudnnGetConvolutionForwardWorkspaceSize(handle, x_.get(), filter_, conv_, y_.get(), algo, &bytes),
            "cudnnGetConvolutionForwardWorkspaceSize");
      it = algorithms_.emplace(key, std::make_pair(algo, bytes)).first;
    }
    algorithm_ = it->second;
  }

  void forward(cudnnHandle_t handle, const float* x, float* y, void* workspace) {
    const float one = 1.0f, zero = 0.0f;
    op(cudnnConvolutionForward(handle, &one, x_.get(), x, filter_, weights_, conv_, algorithm_.first, workspace,
                               algorithm_.second, &zero, y_.get(), y),
       "cudnnConvolutionForward");
  }

  // y = relu(conv(x) + bias), z = y with alpha2 = 0 (ORT's FusedConv without a residual input).
  void forward_bias_relu(cudnnHandle_t handle, const float* x, float* y, void* workspace, const TensorDesc& bias_desc,
                         const float* bias, cudnnActivationDescriptor_t relu) {
    const float one = 1.0f, zero = 0.0f;
    op(cudnnConvolutionBiasActivationForward(handle, &one, x_.get(), x, filter_, weights_, conv_, algorithm_.first,
                                             workspace, algorithm_.second, &zero, y_.get(), y, bias_desc.get(), bias,
                                             relu, y_.get(), y),
       "cudnnConvolutionBiasActivationForward");
  }

  const TensorDesc& output() const { return y_; }

 private:
  int in_, out_;
  float* weights_ = nullptr;
  cudnnFilterDescriptor_t filter_ = nullptr;
  cudnnConvolutionDescriptor_t conv_ = nullptr;
  TensorDesc x_, y_;
  std::map<std::array<int, 4>, std::pair<cudnnConvolutionFwdAlgo_t, size_t>> algorithms_;
  std::pair<cudnnConvolutionFwdAlgo_t, size_t> algorithm_{CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM, 0};
};

// Every node's descriptors and buffers (sized for the larger shape: one address per tensor, as an
// arena gives the same blocks back run after run), and the ops in order.
class Network {
 public:
  explicit Network(cudnnHandle_t handle) : handle_(handle), conv1_(3, kC1, 1), conv2_(kC1, kC2, 2) {
    const size_t plane = static_cast<size_t>(kMaxN) * kMaxH * kMaxW;
    for (int i = 0; i < kInputSets; ++i)
      for (int s = 0; s < 2; ++s) inputs_[s][i] = device_copy(values(plane * 3, 100 + 10 * s + i, 1.0f));
    input_ = device_buffer(plane * 3);
    conv1_out_ = device_buffer(plane * kC1);
    bn_out_ = device_buffer(plane * kC1);
    relu_out_ = device_buffer(plane * kC1);
    lrn_out_ = device_buffer(plane * kC1);
    pool_out_ = device_buffer(plane * kC1 / 4);
    features_ = device_buffer(plane * kC2 / 4);
    scaled_ = device_buffer(plane * kC2 / 4);
    nhwc_ = device_buffer(plane * kC2 / 4);
    pooled_ = device_buffer(kMaxN * kC2);
    probabilities_ = device_buffer(kMaxN * kC2);
    bn_scale_ = device_copy(values(kC1, 3, 0.5f, 1.0f));
    bn_bias_ = device_copy(values(kC1, 4, 0.2f));
    bn_mean_ = device_copy(values(kC1, 5, 0.1f));
    bn_var_ = device_copy(values(kC1, 6, 0.5f, 1.0f));
    conv2_bias_ = device_copy(values(kC2, 7, 0.1f));
    channel_scale_ = device_copy(values(kC2, 8, 0.5f, 1.0f));
    channel_bias_ = device_copy(values(kC2, 9, 0.2f));
    check(cudaMalloc(&workspace_, kWorkspaceBytes), "cudaMalloc (workspace)");
    channels2_.set_channels(kC2);
    check(cudnnCreateActivationDescriptor(&relu_), "cudnnCreateActivationDescriptor");
    check(cudnnSetActivationDescriptor(relu_, CUDNN_ACTIVATION_RELU, CUDNN_NOT_PROPAGATE_NAN, 0.0),
          "cudnnSetActivationDescriptor");
    check(cudnnCreateLRNDescriptor(&lrn_), "cudnnCreateLRNDescriptor");
    check(cudnnSetLRNDescriptor(lrn_, 5, 1e-4, 0.75, 2.0), "cudnnSetLRNDescriptor");
    check(cudnnCreatePoolingDescriptor(&max_pool_), "cudnnCreatePoolingDescriptor");
    check(cudnnSetPooling2dDescriptor(max_pool_, CUDNN_POOLING_MAX, CUDNN_NOT_PROPAGATE_NAN, 2, 2, 0, 0, 2, 2),
          "cudnnSetPooling2dDescriptor");
    check(cudnnCreatePoolingDescriptor(&average_pool_), "cudnnCreatePoolingDescriptor");
    check(cudnnCreateOpTensorDescriptor(&multiply_), "cudnnCreateOpTensorDescriptor");
    check(cudnnSetOpTensorDescriptor(multiply_, CUDNN_OP_TENSOR_MUL, CUDNN_DATA_FLOAT, CUDNN_NOT_PROPAGATE_NAN),
          "cudnnSetOpTensorDescriptor");
    check(cudnnCreateTensorDescriptor(&bn_params_), "cudnnCreateTensorDescriptor");
  }

  ~Network() {
    cudnnDestroyActivationDescriptor(relu_);
    cudnnDestroyLRNDescriptor(lrn_);
    cudnnDestroyPoolingDescriptor(max_pool_);
    cudnnDestroyPoolingDescriptor(average_pool_);
    cudnnDestroyOpTensorDescriptor(multiply_);
    cudnnDestroyTensorDescriptor(bn_params_);
    // The buffers go with the process.
  }
  Network(const Network&) = delete;
  Network& operator=(const Network&) = delete;

  // One iteration on input set `set` of shape `shape`; the softmax output is copied to `result`.
  void run(int shape, int set, cudaStream_t stream, float* result) {
    const auto& [n, c, h, w] = kShapes[shape];
    const size_t input_bytes = static_cast<size_t>(n) * c * h * w * sizeof(float);
    check(cudaMemcpyAsync(input_, inputs_[shape][set], input_bytes, cudaMemcpyDeviceToDevice, stream), "input copy");
    if (shape != last_shape_) {
      // ORT's nodes compare the input's dims with the last ones and set their descriptors again.
      conv1_.reshape(handle_, n, h, w, false);
      check(cudnnDeriveBNTensorDescriptor(bn_params_, conv1_.output().get(), CUDNN_BATCHNORM_SPATIAL),
            "cudnnDeriveBNTensorDescriptor");
      full_.set(n, kC1, h, w);
      half_.set(n, kC1, h / 2, w / 2);
      conv2_.reshape(handle_, n, h / 2, w / 2, true);  // the fused op's algorithm
      features_nhwc_.set(n, kC2, h / 2, w / 2, true);
      pooled_desc_.set(n, kC2, 1, 1);
      check(cudnnSetPooling2dDescriptor(average_pool_, CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING,
                                        CUDNN_NOT_PROPAGATE_NAN, h / 2, w / 2, 0, 0, h / 2, w / 2),
            "cudnnSetPooling2dDescriptor");
      last_shape_ = shape;
    }
    const float one = 1.0f, zero = 0.0f, half = 0.5f;
    conv1_.forward(handle_, input_, conv1_out_, workspace_);
    op(cudnnBatchNormalizationForwardInference(handle_, CUDNN_BATCHNORM_SPATIAL, &one, &zero, full_.get(), conv1_out_,
                                               full_.get(), bn_out_, bn_params_, bn_scale_, bn_bias_, bn_mean_,
                                               bn_var_, 1e-5),
       "cudnnBatchNormalizationForwardInference");
    op(cudnnActivationForward(handle_, relu_, &one, full_.get(), bn_out_, &zero, full_.get(), relu_out_),
       "cudnnActivationForward");
    op(cudnnLRNCrossChannelForward(handle_, lrn_, CUDNN_LRN_CROSS_CHANNEL_DIM1, &one, full_.get(), relu_out_, &zero,
                                   full_.get(), lrn_out_),
       "cudnnLRNCrossChannelForward");
    op(cudnnPoolingForward(handle_, max_pool_, &one, full_.get(), lrn_out_, &zero, half_.get(), pool_out_),
       "cudnnPoolingForward");
    conv2_.forward_bias_relu(handle_, pool_out_, features_, workspace_, channels2_, conv2_bias_, relu_);
    const TensorDesc& features = conv2_.output();
    op(cudnnOpTensor(handle_, multiply_, &one, features.get(), features_, &one, channels2_.get(), channel_scale_, &zero,
                     features.get(), scaled_),
       "cudnnOpTensor");
    op(cudnnAddTensor(handle_, &one, channels2_.get(), channel_bias_, &one, features.get(), scaled_), "cudnnAddTensor");
    op(cudnnScaleTensor(handle_, features.get(), scaled_, &half), "cudnnScaleTensor");
    op(cudnnTransformTensor(handle_, &one, features.get(), scaled_, &zero, features_nhwc_.get(), nhwc_),
       "cudnnTransformTensor");
    op(cudnnPoolingForward(handle_, average_pool_, &one, features.get(), scaled_, &zero, pooled_desc_.get(), pooled_),
       "cudnnPoolingForward");
    op(cudnnSoftmaxForward(handle_, CUDNN_SOFTMAX_ACCURATE, CUDNN_SOFTMAX_MODE_CHANNEL, &one, pooled_desc_.get(),
                           pooled_, &zero, pooled_desc_.get(), probabilities_),
       "cudnnSoftmaxForward");
    check(cudaMemcpyAsync(result, probabilities_, static_cast<size_t>(n) * kC2 * sizeof(float),
                          cudaMemcpyDeviceToDevice, stream),
          "result copy");
  }

  // The last iteration's features (after scale, bias and x0.5) and their NHWC copy, on the host.
  std::vector<float> last_tensors(int shape) const {
    const auto& [n, c, h, w] = kShapes[shape];
    const size_t count = static_cast<size_t>(n) * kC2 * (h / 2) * (w / 2);
    std::vector<float> host(2 * count);
    check(cudaMemcpy(host.data(), scaled_, count * sizeof(float), cudaMemcpyDeviceToHost), "cudaMemcpy");
    check(cudaMemcpy(host.data() + count, nhwc_, count * sizeof(float), cudaMemcpyDeviceToHost), "cudaMemcpy");
    return host;
  }

 private:
  cudnnHandle_t handle_;
  Conv conv1_, conv2_;
  TensorDesc full_, half_, channels2_, features_nhwc_, pooled_desc_;
  cudnnTensorDescriptor_t bn_params_ = nullptr;
  cudnnActivationDescriptor_t relu_ = nullptr;
  cudnnLRNDescriptor_t lrn_ = nullptr;
  cudnnPoolingDescriptor_t max_pool_ = nullptr, average_pool_ = nullptr;
  cudnnOpTensorDescriptor_t multiply_ = nullptr;
  float* inputs_[2][kInputSets] = {};
  float *input_, *conv1_out_, *bn_out_, *relu_out_, *lrn_out_, *pool_out_, *features_, *scaled_, *nhwc_;
  float *pooled_, *probabilities_;
  float *bn_scale_, *bn_bias_, *bn_mean_, *bn_var_, *conv2_bias_, *channel_scale_, *channel_bias_;
  void* workspace_ = nullptr;
  int last_shape_ = -1;
};

int run(int iterations, const char* out_path) {
  cudaStream_t stream = nullptr;
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
  cudnnHandle_t handle = nullptr;
  check(cudnnCreate(&handle), "cudnnCreate");
  if (g_failures != 0) return 1;
  long long result_floats = 0;
  for (int i = 0; i < iterations; ++i) result_floats += static_cast<long long>(kShapes[i % 2][0]) * kC2;
  float* results = device_buffer(static_cast<size_t>(result_floats));
  {
    Network network(handle);
    long long offset = 0;
    for (int i = 0; i < iterations; ++i) {
      // One cudnnSetStream per run of the graph, as ORT's execution provider does.
      check(cudnnSetStream(handle, stream), "cudnnSetStream");
      const int shape = i % 2;
      network.run(shape, (i / 2) % kInputSets, stream, results + offset);
      offset += static_cast<long long>(kShapes[shape][0]) * kC2;
    }
    check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    std::vector<float> host(static_cast<size_t>(result_floats));
    check(cudaMemcpy(host.data(), results, host.size() * sizeof(float), cudaMemcpyDeviceToHost), "cudaMemcpy");
    const std::vector<float> last = network.last_tensors((iterations - 1) % 2);
    host.insert(host.end(), last.begin(), last.end());
    FILE* out = std::fopen(out_path, "wb");
    if (out == nullptr || std::fwrite(host.data(), sizeof(float), host.size(), out) != host.size()) {
      std::printf("failed: writing %s\n", out_path);
      ++g_failures;
    }
    if (out != nullptr) std::fclose(out);
    std::printf("output_bytes=%zu\n", host.size() * sizeof(float));
  }
  cudaFree(results);
  cudnnDestroy(handle);
  cudaStreamDestroy(stream);
  std::printf("iterations=%d\n", iterations);
  for (const auto& [name, count] : g_calls) std::printf("calls.%s=%lld\n", name.c_str(), count);
  std::printf("failed_calls=%d\n", g_failures);
  return g_failures == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("SKIPPED: no CUDA device\n");
    return kNoDevice;
  }
  if (argc >= 2 && std::strcmp(argv[1], "probe") == 0) {
    std::printf("cudnn_version=%zu\n", cudnnGetVersion());
    return 0;
  }
  int iterations = 200;
  const char* out_path = nullptr;
  for (int i = 2; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--iters") == 0) iterations = std::max(2, std::atoi(argv[i + 1]));
    else if (std::strcmp(argv[i], "--out") == 0) out_path = argv[i + 1];
  }
  if (argc < 2 || std::strcmp(argv[1], "run") != 0 || out_path == nullptr) {
    std::fprintf(stderr, "usage: legacy_network probe | run --iters N --out FILE\n");
    return 2;
  }
  return run(iterations, out_path);
}
