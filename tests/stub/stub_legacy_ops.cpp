// The stub's legacy ops (see stub_legacy_control.h): each checks its arguments as cuDNN would on
// the obvious points, then builds the blob of everything that decides its work and launches
// kernels that carry it (stub_styled_kernels.h, in the style stubcudnn_set_kernel_style chose),
// which run at once or are recorded into the capture of its handle's stream. Running writes a
// digest of the blob and of the inputs' first bytes into every output, so a replay with any stale
// value writes another one.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <utility>

#include "tests/stub/stub_cuda.h"
#include "tests/stub/stub_legacy.h"
#include "tests/stub/stub_styled_kernels.h"

extern "C" cudaStream_t stubcudnn_handle_stream(cudnnHandle_t handle);
extern "C" std::uint64_t stubcudnn_handle_serial(cudnnHandle_t handle);

namespace {

// Everything that decides an op's work, read at call time, in the order the op's arguments come.
// Zeroed before it is filled: every byte hashed is a value or a zero.
struct Blob {
  std::uint64_t op;
  std::uint64_t handle_serial;
  std::uint64_t scalars[4];  // the bits of *alpha, *beta, ...: a double's 8 bytes or a float's 4
  double numbers[2];         // epsilon, exponential average factor
  std::int64_t choices[2];   // modes, batch norm ops, algorithms
  std::uint64_t sizes[2];    // of the workspace and the reserve space, in bytes
  const void* inputs[8];     // their first 8 bytes are read at run time
  void* outputs[6];          // the digest goes into their first 8 bytes
  const void* spaces[2];     // the workspace and the reserve space: neither read nor written
  cudnnTensorStruct tensors[6];
  cudnnFilterStruct filter;
  cudnnConvolutionStruct convolution;
  cudnnActivationStruct activation;
  cudnnPoolingStruct pooling;
  cudnnOpTensorStruct op_tensor;
  cudnnLRNStruct lrn;
};

struct OpCounters {
  std::atomic<std::uint64_t> calls{0}, direct_runs{0}, captured{0}, replays{0};
};
OpCounters g_ops[STUBCUDNN_LEGACY_OPS];
std::atomic<bool> g_inner_calls{false};
std::atomic<std::uint64_t> g_inner_call_count{0};
std::atomic<int> g_kernel_style{STUB_KERNEL_STYLE_PLAIN};
thread_local bool t_reference = false;
// The kernels' scratch memory when the op's workspace is too small for it.
alignas(256) unsigned char g_kernel_scratch[stubkernels::kScratchBytes];

// The op's work, in its kernels: each input's first 8 bytes now, and the digest into every output.
std::uint64_t read_inputs(const void* blob, std::uint64_t h) {
  for (const void* input : static_cast<const Blob*>(blob)->inputs) h = stubkernels::add_read(h, input);
  return h;
}

void write_outputs(const void* blob, std::uint64_t digest) {
  for (void* output : static_cast<const Blob*>(blob)->outputs) stubkernels::write_digest(output, digest);
}

// A run of the op's last kernel outside reference mode: a graph launch counts a replay (a run at
// the call is counted by the call).
void ran(const void* blob, std::uint64_t, bool replayed) {
  const std::uint64_t op = static_cast<const Blob*>(blob)->op;
  if (replayed && op < STUBCUDNN_LEGACY_OPS) g_ops[op].replays.fetch_add(1, std::memory_order_relaxed);
}

// Each op's kernels (one family per op, as each is its own kernel in cuDNN): each field of the
// blob a parameter, reported as kernelParams.
const stubkernels::Kernels& kernels(StubCudnnLegacyOp op) {
  static const char* const kNames[STUBCUDNN_LEGACY_OPS] = {
      "cudnn_bn_forward_inference", "cudnn_bn_forward_training", "cudnn_bn_backward", "cudnn_conv_forward",
      "cudnn_conv_bias_activation", "cudnn_activation_forward", "cudnn_pooling_forward", "cudnn_softmax_forward",
      "cudnn_add_tensor", "cudnn_op_tensor", "cudnn_scale_tensor", "cudnn_transform_tensor", "cudnn_lrn_forward"};
  static const stubkernels::Kernels* const* const all = [] {
    static_assert(sizeof(Blob) % 8 == 0, "a blob is whole 8-byte words");
    auto** made = new const stubkernels::Kernels*[STUBCUDNN_LEGACY_OPS];  // never freed: graphs may hold them
    for (int i = 0; i < STUBCUDNN_LEGACY_OPS; ++i) {
      stubkernels::Family family{kNames[i], sizeof(Blob), {}, offsetof(Blob, outputs), offsetof(Blob, inputs),
                                 offsetof(Blob, outputs), false, read_inputs, write_outputs, ran};
      family.blob_params = {STUBKERNELS_FIELD(Blob, op), STUBKERNELS_FIELD(Blob, handle_serial)};
      auto each = [&](std::size_t offset, std::size_t size, int count) {
        for (int j = 0; j < count; ++j)
          family.blob_params.push_back({static_cast<std::uint32_t>(offset + j * size), static_cast<std::uint32_t>(size)});
      };
      each(offsetof(Blob, scalars), 8, 4);
      each(offsetof(Blob, numbers), 8, 2);
      each(offsetof(Blob, choices), 8, 2);
      each(offsetof(Blob, sizes), 8, 2);
      each(offsetof(Blob, inputs), 8, 8);
      each(offsetof(Blob, outputs), 8, 6);
      each(offsetof(Blob, spaces), 8, 2);
      each(offsetof(Blob, tensors), sizeof(cudnnTensorStruct), 6);
      for (const StubKernelParam& p :
           {STUBKERNELS_FIELD(Blob, filter), STUBKERNELS_FIELD(Blob, convolution), STUBKERNELS_FIELD(Blob, activation),
            STUBKERNELS_FIELD(Blob, pooling), STUBKERNELS_FIELD(Blob, op_tensor), STUBKERNELS_FIELD(Blob, lrn)})
        family.blob_params.push_back(p);
      made[i] = new stubkernels::Kernels(std::move(family));
    }
    return made;
  }();
  return *all[op];
}

// One op call: each step checks an argument and adds it to the blob; finish() runs or records it.
class Call {
 public:
  Call(StubCudnnLegacyOp op, cudnnHandle_t handle) : op_(op), handle_(handle) {
    if (!t_reference) g_ops[op].calls.fetch_add(1, std::memory_order_relaxed);
    std::memset(&b_, 0, sizeof b_);
    b_.op = op;
    b_.handle_serial = stubcudnn_handle_serial(handle);  // 0: not a live handle
    ok_ = b_.handle_serial != 0;
  }

  // A descriptor the op reads, which must be set; an `optional` one may be NULL (left zero).
  Call& descriptor(const cudnnTensorStruct* d, bool optional = false) {
    return copy(d, b_.tensors[tensors_++], optional);
  }
  Call& descriptor(const cudnnFilterStruct* d) { return copy(d, b_.filter, false); }
  Call& descriptor(const cudnnConvolutionStruct* d) { return copy(d, b_.convolution, false); }
  Call& descriptor(const cudnnActivationStruct* d, bool optional = false) { return copy(d, b_.activation, optional); }
  Call& descriptor(const cudnnPoolingStruct* d) { return copy(d, b_.pooling, false); }
  Call& descriptor(const cudnnOpTensorStruct* d) { return copy(d, b_.op_tensor, false); }
  Call& descriptor(const cudnnLRNStruct* d) { return copy(d, b_.lrn, false); }

  // A host scalar, read as cuDNN reads it: a double for a CUDNN_DATA_DOUBLE output, else a float.
  Call& scalar(const void* p, const cudnnTensorStruct* output) {
    ok_ = ok_ && p != nullptr;
    const bool wide = output != nullptr && output->set && output->type == CUDNN_DATA_DOUBLE;
    if (p != nullptr) std::memcpy(&b_.scalars[scalars_], p, wide ? sizeof(double) : sizeof(float));
    ++scalars_;
    return *this;
  }

  Call& input(const void* p, bool optional = false) {
    ok_ = ok_ && (p != nullptr || optional);
    b_.inputs[inputs_++] = p;
    return *this;
  }
  Call& output(void* p, bool optional = false) {
    ok_ = ok_ && (p != nullptr || optional);
    b_.outputs[outputs_++] = p;
    return *this;
  }
  // A workspace or reserve space: NULL only with a size of 0.
  Call& space(const void* p, std::size_t size) {
    ok_ = ok_ && (p != nullptr || size == 0);
    b_.spaces[spaces_] = p;
    b_.sizes[spaces_++] = size;
    return *this;
  }
  Call& number(double value) {
    b_.numbers[numbers_++] = value;
    return *this;
  }
  // An enum, which must be in [low, high].
  Call& choice(std::int64_t value, std::int64_t low, std::int64_t high) {
    ok_ = ok_ && value >= low && value <= high;
    b_.choices[choices_++] = value;
    return *this;
  }
  Call& require(bool condition) {
    ok_ = ok_ && condition;
    return *this;
  }

  cudnnStatus_t finish() {
    if (!ok_) return CUDNN_STATUS_BAD_PARAM;
    if (!t_reference && g_inner_calls.load(std::memory_order_relaxed)) {
      stublegacy::make_inner_calls();
      g_inner_call_count.fetch_add(3, std::memory_order_relaxed);
    }
    stubkernels::Call call{};
    call.blob = &b_;
    const auto inside = [](const void* tensor) {  // a pointer to the tensor's second tile
      return tensor == nullptr ? 0 : reinterpret_cast<std::uintptr_t>(tensor) + 256;
    };
    call.interior[0] = inside(b_.inputs[0]);
    call.interior[1] = inside(b_.outputs[0]);
    for (int i = 0; i < 8; ++i)
      if (b_.inputs[i] != nullptr) call.tensor_fields[call.tensor_count++] = offsetof(Blob, inputs) + 8 * i;
    for (int i = 0; i < 6; ++i)
      if (b_.outputs[i] != nullptr) call.tensor_fields[call.tensor_count++] = offsetof(Blob, outputs) + 8 * i;
    call.scratch = b_.sizes[0] >= stubkernels::kScratchBytes ? const_cast<void*>(b_.spaces[0]) : g_kernel_scratch;
    call.stream = reinterpret_cast<CUstream>(stubcudnn_handle_stream(handle_));
    call.reference = t_reference;
    const bool recorded = kernels(op_).launch(static_cast<StubKernelStyle>(g_kernel_style.load()), call);
    if (!t_reference) (recorded ? g_ops[op_].captured : g_ops[op_].direct_runs).fetch_add(1, std::memory_order_relaxed);
    return CUDNN_STATUS_SUCCESS;
  }

 private:
  template <typename T>
  Call& copy(const T* d, T& slot, bool optional) {
    ok_ = ok_ && (d != nullptr ? d->set != 0 : optional);
    if (d != nullptr) std::memcpy(&slot, d, sizeof slot);
    return *this;
  }

  StubCudnnLegacyOp op_;
  cudnnHandle_t handle_;
  Blob b_;
  bool ok_;
  int tensors_ = 0, scalars_ = 0, inputs_ = 0, outputs_ = 0, spaces_ = 0, numbers_ = 0, choices_ = 0;
};

constexpr std::int64_t kLastBatchNormMode = CUDNN_BATCHNORM_SPATIAL_PERSISTENT;
constexpr std::int64_t kLastBatchNormOps = CUDNN_BATCHNORM_OPS_BN_ADD_ACTIVATION;

}  // namespace

extern "C" {

StubCudnnOpCounters stubcudnn_op_counters(StubCudnnLegacyOp op) {
  if (op < 0 || op >= STUBCUDNN_LEGACY_OPS) return {};
  const OpCounters& c = g_ops[op];
  return {c.calls.load(), c.direct_runs.load(), c.captured.load(), c.replays.load()};
}

StubCudnnOpCounters stubcudnn_op_totals(void) {
  StubCudnnOpCounters total{};
  for (const OpCounters& c : g_ops) {
    total.calls += c.calls.load();
    total.direct_runs += c.direct_runs.load();
    total.captured += c.captured.load();
    total.replays += c.replays.load();
  }
  return total;
}

void stubcudnn_reference_calls(int on) { t_reference = on != 0; }

void stubcudnn_inner_calls(int on) { g_inner_calls.store(on != 0, std::memory_order_relaxed); }

std::uint64_t stubcudnn_inner_call_count(void) { return g_inner_call_count.load(); }

int stubcudnn_set_kernel_style(int style) {
  if (style < 0 || style >= STUB_KERNEL_STYLES) return -1;
  return g_kernel_style.exchange(style);
}

cudnnStatus_t CUDNNWINAPI cudnnBatchNormalizationForwardInference(
    cudnnHandle_t handle, cudnnBatchNormMode_t mode, const void* alpha, const void* beta,
    const cudnnTensorDescriptor_t xDesc, const void* x, const cudnnTensorDescriptor_t yDesc, void* y,
    const cudnnTensorDescriptor_t bnScaleBiasMeanVarDesc, const void* bnScale, const void* bnBias,
    const void* estimatedMean, const void* estimatedVariance, double epsilon) {
  return Call(STUBCUDNN_BATCHNORM_FORWARD_INFERENCE, handle)
      .choice(mode, 0, kLastBatchNormMode)
      .scalar(alpha, yDesc)
      .scalar(beta, yDesc)
      .descriptor(xDesc)
      .input(x)
      .descriptor(yDesc)
      .output(y)
      .descriptor(bnScaleBiasMeanVarDesc)
      .input(bnScale)
      .input(bnBias)
      .input(estimatedMean)
      .input(estimatedVariance)
      .number(epsilon)
      .require(epsilon >= CUDNN_BN_MIN_EPSILON)
      .finish();
}

// z is needed with CUDNN_BATCHNORM_OPS_BN_ADD_ACTIVATION, the activation with any activation;
// the running mean and variance, and the saved mean and inverse variance, come in pairs or not.
cudnnStatus_t CUDNNWINAPI cudnnBatchNormalizationForwardTrainingEx(
    cudnnHandle_t handle, cudnnBatchNormMode_t mode, cudnnBatchNormOps_t bnOps, const void* alpha, const void* beta,
    const cudnnTensorDescriptor_t xDesc, const void* xData, const cudnnTensorDescriptor_t zDesc, const void* zData,
    const cudnnTensorDescriptor_t yDesc, void* yData, const cudnnTensorDescriptor_t bnScaleBiasMeanVarDesc,
    const void* bnScale, const void* bnBias, double exponentialAverageFactor, void* resultRunningMean,
    void* resultRunningVariance, double epsilon, void* resultSaveMean, void* resultSaveInvVariance,
    cudnnActivationDescriptor_t activationDesc, void* workspace, size_t workSpaceSizeInBytes, void* reserveSpace,
    size_t reserveSpaceSizeInBytes) {
  const bool no_activation = bnOps == CUDNN_BATCHNORM_OPS_BN;
  const bool no_add = bnOps != CUDNN_BATCHNORM_OPS_BN_ADD_ACTIVATION;
  return Call(STUBCUDNN_BATCHNORM_FORWARD_TRAINING_EX, handle)
      .choice(mode, 0, kLastBatchNormMode)
      .choice(bnOps, 0, kLastBatchNormOps)
      .scalar(alpha, yDesc)
      .scalar(beta, yDesc)
      .descriptor(xDesc)
      .input(xData)
      .descriptor(zDesc, no_add)
      .input(zData, no_add)
      .descriptor(yDesc)
      .output(yData)
      .descriptor(bnScaleBiasMeanVarDesc)
      .input(bnScale)
      .input(bnBias)
      .number(exponentialAverageFactor)
      .output(resultRunningMean, true)
      .output(resultRunningVariance, true)
      .require((resultRunningMean == nullptr) == (resultRunningVariance == nullptr))
      .number(epsilon)
      .require(epsilon >= CUDNN_BN_MIN_EPSILON)
      .output(resultSaveMean, true)
      .output(resultSaveInvVariance, true)
      .require((resultSaveMean == nullptr) == (resultSaveInvVariance == nullptr))
      .descriptor(activationDesc, no_activation)
      .space(workspace, workSpaceSizeInBytes)
      .space(reserveSpace, reserveSpaceSizeInBytes)
      .finish();
}

// y and the bias are needed with an activation, dz with CUDNN_BATCHNORM_OPS_BN_ADD_ACTIVATION; the
// saved mean and inverse variance come as a pair or not at all. The scalars are read by dx's type.
cudnnStatus_t CUDNNWINAPI cudnnBatchNormalizationBackwardEx(
    cudnnHandle_t handle, cudnnBatchNormMode_t mode, cudnnBatchNormOps_t bnOps, const void* alphaDataDiff,
    const void* betaDataDiff, const void* alphaParamDiff, const void* betaParamDiff,
    const cudnnTensorDescriptor_t xDesc, const void* xData, const cudnnTensorDescriptor_t yDesc, const void* yData,
    const cudnnTensorDescriptor_t dyDesc, const void* dyData, const cudnnTensorDescriptor_t dzDesc, void* dzData,
    const cudnnTensorDescriptor_t dxDesc, void* dxData, const cudnnTensorDescriptor_t dBnScaleBiasDesc,
    const void* bnScaleData, const void* bnBiasData, void* dBnScaleData, void* dBnBiasData, double epsilon,
    const void* savedMean, const void* savedInvVariance, cudnnActivationDescriptor_t activationDesc,
    void* workSpace, size_t workSpaceSizeInBytes, void* reserveSpace, size_t reserveSpaceSizeInBytes) {
  const bool no_activation = bnOps == CUDNN_BATCHNORM_OPS_BN;
  const bool no_add = bnOps != CUDNN_BATCHNORM_OPS_BN_ADD_ACTIVATION;
  return Call(STUBCUDNN_BATCHNORM_BACKWARD_EX, handle)
      .choice(mode, 0, kLastBatchNormMode)
      .choice(bnOps, 0, kLastBatchNormOps)
      .scalar(alphaDataDiff, dxDesc)
      .scalar(betaDataDiff, dxDesc)
      .scalar(alphaParamDiff, dxDesc)
      .scalar(betaParamDiff, dxDesc)
      .descriptor(xDesc)
      .input(xData)
      .descriptor(yDesc, no_activation)
      .input(yData, no_activation)
      .descriptor(dyDesc)
      .input(dyData)
      .descriptor(dzDesc, no_add)
      .output(dzData, no_add)
      .descriptor(dxDesc)
      .output(dxData)
      .descriptor(dBnScaleBiasDesc)
      .input(bnScaleData)
      .input(bnBiasData, no_activation)
      .output(dBnScaleData)
      .output(dBnBiasData)
      .number(epsilon)
      .require(epsilon >= CUDNN_BN_MIN_EPSILON)
      .input(savedMean, true)
      .input(savedInvVariance, true)
      .require((savedMean == nullptr) == (savedInvVariance == nullptr))
      .descriptor(activationDesc, no_activation)
      .space(workSpace, workSpaceSizeInBytes)
      .space(reserveSpace, reserveSpaceSizeInBytes)
      .finish();
}

cudnnStatus_t CUDNNWINAPI cudnnConvolutionForward(cudnnHandle_t handle, const void* alpha,
                                                  const cudnnTensorDescriptor_t xDesc, const void* x,
                                                  const cudnnFilterDescriptor_t wDesc, const void* w,
                                                  const cudnnConvolutionDescriptor_t convDesc,
                                                  cudnnConvolutionFwdAlgo_t algo, void* workSpace,
                                                  size_t workSpaceSizeInBytes, const void* beta,
                                                  const cudnnTensorDescriptor_t yDesc, void* y) {
  return Call(STUBCUDNN_CONVOLUTION_FORWARD, handle)
      .scalar(alpha, yDesc)
      .descriptor(xDesc)
      .input(x)
      .descriptor(wDesc)
      .input(w)
      .descriptor(convDesc)
      .choice(algo, 0, CUDNN_CONVOLUTION_FWD_ALGO_COUNT - 1)
      .space(workSpace, workSpaceSizeInBytes)
      .scalar(beta, yDesc)
      .descriptor(yDesc)
      .output(y)
      .finish();
}

// Every descriptor and pointer is needed (z may be y itself, as cuDNN allows).
cudnnStatus_t CUDNNWINAPI cudnnConvolutionBiasActivationForward(
    cudnnHandle_t handle, const void* alpha1, const cudnnTensorDescriptor_t xDesc, const void* x,
    const cudnnFilterDescriptor_t wDesc, const void* w, const cudnnConvolutionDescriptor_t convDesc,
    cudnnConvolutionFwdAlgo_t algo, void* workSpace, size_t workSpaceSizeInBytes, const void* alpha2,
    const cudnnTensorDescriptor_t zDesc, const void* z, const cudnnTensorDescriptor_t biasDesc, const void* bias,
    const cudnnActivationDescriptor_t activationDesc, const cudnnTensorDescriptor_t yDesc, void* y) {
  return Call(STUBCUDNN_CONVOLUTION_BIAS_ACTIVATION_FORWARD, handle)
      .scalar(alpha1, yDesc)
      .descriptor(xDesc)
      .input(x)
      .descriptor(wDesc)
      .input(w)
      .descriptor(convDesc)
      .choice(algo, 0, CUDNN_CONVOLUTION_FWD_ALGO_COUNT - 1)
      .space(workSpace, workSpaceSizeInBytes)
      .scalar(alpha2, yDesc)
      .descriptor(zDesc)
      .input(z)
      .descriptor(biasDesc)
      .input(bias)
      .descriptor(activationDesc)
      .descriptor(yDesc)
      .output(y)
      .finish();
}

cudnnStatus_t CUDNNWINAPI cudnnActivationForward(cudnnHandle_t handle, cudnnActivationDescriptor_t activationDesc,
                                                 const void* alpha, const cudnnTensorDescriptor_t xDesc,
                                                 const void* x, const void* beta,
                                                 const cudnnTensorDescriptor_t yDesc, void* y) {
  return Call(STUBCUDNN_ACTIVATION_FORWARD, handle)
      .descriptor(activationDesc)
      .scalar(alpha, yDesc)
      .descriptor(xDesc)
      .input(x)
      .scalar(beta, yDesc)
      .descriptor(yDesc)
      .output(y)
      .finish();
}

cudnnStatus_t CUDNNWINAPI cudnnPoolingForward(cudnnHandle_t handle, const cudnnPoolingDescriptor_t poolingDesc,
                                              const void* alpha, const cudnnTensorDescriptor_t xDesc, const void* x,
                                              const void* beta, const cudnnTensorDescriptor_t yDesc, void* y) {
  return Call(STUBCUDNN_POOLING_FORWARD, handle)
      .descriptor(poolingDesc)
      .scalar(alpha, yDesc)
      .descriptor(xDesc)
      .input(x)
      .scalar(beta, yDesc)
      .descriptor(yDesc)
      .output(y)
      .finish();
}

cudnnStatus_t CUDNNWINAPI cudnnSoftmaxForward(cudnnHandle_t handle, cudnnSoftmaxAlgorithm_t algo,
                                              cudnnSoftmaxMode_t mode, const void* alpha,
                                              const cudnnTensorDescriptor_t xDesc, const void* x, const void* beta,
                                              const cudnnTensorDescriptor_t yDesc, void* y) {
  return Call(STUBCUDNN_SOFTMAX_FORWARD, handle)
      .choice(algo, CUDNN_SOFTMAX_FAST, CUDNN_SOFTMAX_LOG)
      .choice(mode, CUDNN_SOFTMAX_MODE_INSTANCE, CUDNN_SOFTMAX_MODE_CHANNEL)
      .scalar(alpha, yDesc)
      .descriptor(xDesc)
      .input(x)
      .scalar(beta, yDesc)
      .descriptor(yDesc)
      .output(y)
      .finish();
}

cudnnStatus_t CUDNNWINAPI cudnnAddTensor(cudnnHandle_t handle, const void* alpha, const cudnnTensorDescriptor_t aDesc,
                                         const void* A, const void* beta, const cudnnTensorDescriptor_t cDesc,
                                         void* C) {
  return Call(STUBCUDNN_ADD_TENSOR, handle)
      .scalar(alpha, cDesc)
      .descriptor(aDesc)
      .input(A)
      .scalar(beta, cDesc)
      .descriptor(cDesc)
      .output(C)
      .finish();
}

// B and its descriptor may be NULL for CUDNN_OP_TENSOR_SQRT and CUDNN_OP_TENSOR_NOT, which ignore it.
cudnnStatus_t CUDNNWINAPI cudnnOpTensor(cudnnHandle_t handle, const cudnnOpTensorDescriptor_t opTensorDesc,
                                        const void* alpha1, const cudnnTensorDescriptor_t aDesc, const void* A,
                                        const void* alpha2, const cudnnTensorDescriptor_t bDesc, const void* B,
                                        const void* beta, const cudnnTensorDescriptor_t cDesc, void* C) {
  const bool unary = opTensorDesc != nullptr && opTensorDesc->set &&
                     (opTensorDesc->op == CUDNN_OP_TENSOR_SQRT || opTensorDesc->op == CUDNN_OP_TENSOR_NOT);
  return Call(STUBCUDNN_OP_TENSOR, handle)
      .descriptor(opTensorDesc)
      .scalar(alpha1, cDesc)
      .descriptor(aDesc)
      .input(A)
      .scalar(alpha2, cDesc)
      .descriptor(bDesc, unary)
      .input(B, unary)
      .scalar(beta, cDesc)
      .descriptor(cDesc)
      .output(C)
      .finish();
}

// y is read and written in place; as an output only, it adds nothing to the digest.
cudnnStatus_t CUDNNWINAPI cudnnScaleTensor(cudnnHandle_t handle, const cudnnTensorDescriptor_t yDesc, void* y,
                                           const void* alpha) {
  return Call(STUBCUDNN_SCALE_TENSOR, handle)
      .descriptor(yDesc)
      .output(y)
      .scalar(alpha, yDesc)
      .finish();
}

cudnnStatus_t CUDNNWINAPI cudnnTransformTensor(cudnnHandle_t handle, const void* alpha,
                                               const cudnnTensorDescriptor_t xDesc, const void* x, const void* beta,
                                               const cudnnTensorDescriptor_t yDesc, void* y) {
  return Call(STUBCUDNN_TRANSFORM_TENSOR, handle)
      .scalar(alpha, yDesc)
      .descriptor(xDesc)
      .input(x)
      .scalar(beta, yDesc)
      .descriptor(yDesc)
      .output(y)
      .finish();
}

cudnnStatus_t CUDNNWINAPI cudnnLRNCrossChannelForward(cudnnHandle_t handle, cudnnLRNDescriptor_t normDesc,
                                                      cudnnLRNMode_t lrnMode, const void* alpha,
                                                      const cudnnTensorDescriptor_t xDesc, const void* x,
                                                      const void* beta, const cudnnTensorDescriptor_t yDesc, void* y) {
  return Call(STUBCUDNN_LRN_CROSS_CHANNEL_FORWARD, handle)
      .descriptor(normDesc)
      .choice(lrnMode, CUDNN_LRN_CROSS_CHANNEL_DIM1, CUDNN_LRN_CROSS_CHANNEL_DIM1)
      .scalar(alpha, yDesc)
      .descriptor(xDesc)
      .input(x)
      .scalar(beta, yDesc)
      .descriptor(yDesc)
      .output(y)
      .finish();
}

}  // extern "C"
