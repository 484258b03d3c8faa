// What the stub's legacy API (descriptors and ops: stub_legacy_*.cpp) records, and how a test
// steers it.
//
// Descriptors keep everything they were set to (the getters return it) and can be set again in
// place; a set that fails (BAD_PARAM, or NOT_SUPPORTED for NCHW_VECT_C, a real layout the stub does
// not model) leaves the descriptor as it was. An op checks its arguments, then builds a blob of everything that decides the GPU's work,
// read at call time: the op, the handle's serial, each descriptor's contents (copied), the by-value
// numbers and enums, the host scalars (a double when the output tensor is CUDNN_DATA_DOUBLE, a
// float otherwise) and every pointer. The blob travels as the argument bytes of the op's kernels
// (stub_styled_kernels.h: one kernel per op, the blob's fields its parameters, in the default
// style): on a capturing stream of the stub driver (stub_cuda.h) they are recorded into the capture
// as kernel nodes and the op returns; otherwise they run now. Running (now, or at each launch of a
// graph made from the capture) computes the digest of the kernel's arguments, the blob and the
// first 8 bytes read at run time from each input pointer (never the outputs) and writes it into
// the first 8 bytes of every non-null output pointer. Inputs and outputs must therefore be host
// buffers of at least 8 bytes.
//
// libcudnn.so.9, libcudnn.so.8 and libcudnn_ops.so.9 each hold their own copy of all of this: the
// functions below act on the library they are called in (reach a given one with dlvsym, or dlsym
// on its handle). A descriptor of one is valid in another (same layout), but each counts its own:
// destroy a descriptor through the library that made it, or live counts go wrong.
#pragma once

#include <cstdint>

#include "tests/stub/stub_kernel_style.h"

extern "C" {

// ---- descriptors -------------------------------------------------------------------------------

typedef enum {
  STUBCUDNN_TENSOR_DESCRIPTOR = 0,
  STUBCUDNN_FILTER_DESCRIPTOR = 1,
  STUBCUDNN_CONVOLUTION_DESCRIPTOR = 2,
  STUBCUDNN_ACTIVATION_DESCRIPTOR = 3,
  STUBCUDNN_POOLING_DESCRIPTOR = 4,
  STUBCUDNN_OP_TENSOR_DESCRIPTOR = 5,
  STUBCUDNN_LRN_DESCRIPTOR = 6,
  STUBCUDNN_TENSOR_TRANSFORM_DESCRIPTOR = 7,
  STUBCUDNN_DESCRIPTOR_KINDS = 8,
} StubCudnnDescriptorKind;

// Calls of one kind's functions that reached the stub since the process started, failed ones too.
struct StubCudnnDescriptorCounters {
  std::uint64_t created;    // create calls
  std::uint64_t set;        // set calls (every setter of the kind; cudnnDeriveBNTensorDescriptor: tensor)
  std::uint64_t destroyed;  // destroy calls
  std::uint64_t live;       // created and not yet destroyed, now
};
// A snapshot of `kind`'s counters (all zero for a kind out of range).
StubCudnnDescriptorCounters stubcudnn_descriptor_counters(StubCudnnDescriptorKind kind);

// ---- ops ---------------------------------------------------------------------------------------

typedef enum {
  STUBCUDNN_BATCHNORM_FORWARD_INFERENCE = 0,          // cudnnBatchNormalizationForwardInference
  STUBCUDNN_BATCHNORM_FORWARD_TRAINING_EX = 1,        // cudnnBatchNormalizationForwardTrainingEx
  STUBCUDNN_BATCHNORM_BACKWARD_EX = 2,                // cudnnBatchNormalizationBackwardEx
  STUBCUDNN_CONVOLUTION_FORWARD = 3,                  // cudnnConvolutionForward
  STUBCUDNN_CONVOLUTION_BIAS_ACTIVATION_FORWARD = 4,  // cudnnConvolutionBiasActivationForward
  STUBCUDNN_ACTIVATION_FORWARD = 5,                   // cudnnActivationForward
  STUBCUDNN_POOLING_FORWARD = 6,                      // cudnnPoolingForward
  STUBCUDNN_SOFTMAX_FORWARD = 7,                      // cudnnSoftmaxForward
  STUBCUDNN_ADD_TENSOR = 8,                           // cudnnAddTensor
  STUBCUDNN_OP_TENSOR = 9,                            // cudnnOpTensor
  STUBCUDNN_SCALE_TENSOR = 10,                        // cudnnScaleTensor
  STUBCUDNN_TRANSFORM_TENSOR = 11,                    // cudnnTransformTensor
  STUBCUDNN_LRN_CROSS_CHANNEL_FORWARD = 12,           // cudnnLRNCrossChannelForward
  STUBCUDNN_LEGACY_OPS = 13,
} StubCudnnLegacyOp;

// One op's calls since the process started; calls made in reference mode are in none of them.
struct StubCudnnOpCounters {
  std::uint64_t calls;        // that reached the stub, failed ones too
  std::uint64_t direct_runs;  // that passed the checks and ran at once
  std::uint64_t captured;     // that passed the checks and were recorded into a capture
  std::uint64_t replays;      // runs of a captured call by a graph launch
};
// A snapshot of `op`'s counters (all zero for an op out of range).
StubCudnnOpCounters stubcudnn_op_counters(StubCudnnLegacyOp op);
// The sums of every op's counters.
StubCudnnOpCounters stubcudnn_op_totals(void);

// On (nonzero), for the calling thread: legacy ops run at once even on a capturing stream, count
// nowhere and make no inner calls; the same arguments then give the digest a counted call would
// write, so a test computes its expected outputs this way. Off (0) is the default.
void stubcudnn_reference_calls(int on);

// On (nonzero), for the whole process: each op call that passes its checks first creates a tensor
// descriptor, sets it (cudnnSetTensor4dDescriptor) and destroys it, each a call through the
// library's PLT from inside it (an interposer sees callers in libcudnn), as cuDNN's sub-libraries
// do. Off (0) is the default.
void stubcudnn_inner_calls(int on);
// The inner calls made since the process started (three per op call that made them).
std::uint64_t stubcudnn_inner_call_count(void);

// How the ops lay their work out in kernels from now on, for the whole process (the library it is
// called in: each has its own): a StubKernelStyle (STUB_KERNEL_STYLE_PLAIN by default; see
// stub_styled_kernels.h). Returns the old style, or -1 (and changes nothing) for a value that is not one.
int stubcudnn_set_kernel_style(int style);

}  // extern "C"
