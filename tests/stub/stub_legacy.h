// The stub's legacy descriptors as its sources share them (stub_legacy_*.cpp): the layouts behind
// cuDNN's opaque descriptor types, and the descriptor counters.
//
// Every layout is free of padding (checked below): an op copies a descriptor's bytes into the blob
// it hashes (stub_legacy_ops.cpp), so every byte must be a value the setters wrote.
#pragma once

#include <cudnn.h>

#include <cstdint>
#include <mutex>
#include <new>
#include <vector>

#include "tests/stub/stub_legacy_control.h"

// Hidden: each library built from these sources keeps its own; nothing here may bind to another's.
#pragma GCC visibility push(hidden)

struct cudnnTensorStruct {
  std::int32_t set;  // a setter succeeded
  cudnnDataType_t type;
  std::int32_t nb_dims;
  std::int32_t dims[CUDNN_DIM_MAX];
  std::int32_t strides[CUDNN_DIM_MAX];
};

struct cudnnFilterStruct {
  std::int32_t set;
  cudnnDataType_t type;
  cudnnTensorFormat_t format;
  std::int32_t nb_dims;
  std::int32_t dims[CUDNN_DIM_MAX];
};

constexpr int kMaxSpatial = CUDNN_DIM_MAX - 2;  // convolution and pooling: the dims after N and C

struct cudnnConvolutionStruct {
  std::int32_t set;  // by cudnnSetConvolution2dDescriptor or cudnnSetConvolutionNdDescriptor
  std::int32_t spatial;
  std::int32_t pad[kMaxSpatial], stride[kMaxSpatial], dilation[kMaxSpatial];
  cudnnConvolutionMode_t mode;
  cudnnDataType_t compute_type;
  cudnnMathType_t math_type;  // these three have their defaults from the create
  std::int32_t group_count;
  cudnnReorderType_t reorder_type;
  std::int32_t zero;  // makes the size a multiple of 8 without padding
};

struct cudnnActivationStruct {
  std::int32_t set;  // by cudnnSetActivationDescriptor
  cudnnActivationMode_t mode;
  cudnnNanPropagation_t nan;
  std::int32_t zero;  // aligns the doubles without padding
  double coef;
  double swish_beta;  // 1.0 from the create
};

struct cudnnPoolingStruct {
  std::int32_t set;
  cudnnPoolingMode_t mode;
  cudnnNanPropagation_t nan;
  std::int32_t nb_dims;
  std::int32_t window[kMaxSpatial], padding[kMaxSpatial], stride[kMaxSpatial];
};

struct cudnnOpTensorStruct {
  std::int32_t set;
  cudnnOpTensorOp_t op;
  cudnnDataType_t compute_type;
  cudnnNanPropagation_t nan;
};

struct cudnnLRNStruct {
  std::int32_t set;  // already by the create, which gives cuDNN's defaults
  std::uint32_t n;
  double alpha, beta, k;
};

struct cudnnTensorTransformStruct {
  std::int32_t set;
  std::uint32_t nb_dims;
  cudnnTensorFormat_t format;
  cudnnFoldingDirection_t direction;
  std::int32_t pad_before[CUDNN_DIM_MAX], pad_after[CUDNN_DIM_MAX];
  std::uint32_t fold[CUDNN_DIM_MAX];
};

static_assert(sizeof(cudnnTensorStruct) == 4 * (3 + 2 * CUDNN_DIM_MAX), "padding in the tensor layout");
static_assert(sizeof(cudnnFilterStruct) == 4 * (4 + CUDNN_DIM_MAX), "padding in the filter layout");
static_assert(sizeof(cudnnConvolutionStruct) == 4 * (8 + 3 * kMaxSpatial), "padding in the convolution layout");
static_assert(sizeof(cudnnActivationStruct) == 32, "padding in the activation layout");
static_assert(sizeof(cudnnPoolingStruct) == 4 * (4 + 3 * kMaxSpatial), "padding in the pooling layout");
static_assert(sizeof(cudnnOpTensorStruct) == 16, "padding in the op tensor layout");
static_assert(sizeof(cudnnLRNStruct) == 32, "padding in the LRN layout");
static_assert(sizeof(cudnnTensorTransformStruct) == 4 * (4 + 3 * CUDNN_DIM_MAX), "padding in the transform layout");

namespace stublegacy {

enum Event { kCreated, kSet, kDestroyed };
// Counts one call of `kind`'s functions (stub_legacy_descriptors.cpp).
void count(StubCudnnDescriptorKind kind, Event event);
// Moves `kind`'s live count by `change`.
void count_live(StubCudnnDescriptorKind kind, int change);

// A kind's destroyed descriptors, the last one destroyed handed out first by the next create (as
// glibc's malloc usually does, but whatever else the process allocated and freed in between: the
// tests of the shim's descriptor records rely on a new descriptor coming back at the address of
// the one just destroyed). Never freed.
template <typename T>
struct Destroyed {
  std::mutex lock;
  std::vector<T*> descriptors;
  static Destroyed& of_kind() {
    static Destroyed* destroyed = new Destroyed;
    return *destroyed;
  }
};

// Every create: a zeroed descriptor (value-initialized: padding-free layouts are all zero bytes).
template <typename T>
cudnnStatus_t create(StubCudnnDescriptorKind kind, T** descriptor) {
  count(kind, kCreated);
  if (descriptor == nullptr) return CUDNN_STATUS_BAD_PARAM;
  T* made = nullptr;
  {
    Destroyed<T>& destroyed = Destroyed<T>::of_kind();
    std::lock_guard<std::mutex> guard(destroyed.lock);
    if (!destroyed.descriptors.empty()) {
      made = destroyed.descriptors.back();
      destroyed.descriptors.pop_back();
      *made = T();
    }
  }
  if (made == nullptr) made = new (std::nothrow) T();
  *descriptor = made;
  if (made == nullptr) return CUDNN_STATUS_ALLOC_FAILED;
  count_live(kind, +1);
  return CUDNN_STATUS_SUCCESS;
}

// Every destroy: NULL is accepted and does nothing, as in cuDNN.
template <typename T>
cudnnStatus_t destroy(StubCudnnDescriptorKind kind, T* descriptor) {
  count(kind, kDestroyed);
  if (descriptor == nullptr) return CUDNN_STATUS_SUCCESS;
  count_live(kind, -1);
  Destroyed<T>& destroyed = Destroyed<T>::of_kind();
  std::lock_guard<std::mutex> guard(destroyed.lock);
  destroyed.descriptors.push_back(descriptor);
  return CUDNN_STATUS_SUCCESS;
}

// Creates, sets and destroys a tensor descriptor, each through the PLT (stub_legacy_hooks.cpp).
void make_inner_calls();

// The enum checks cuDNN makes cheaply: a value among the header's.
inline bool known_type(cudnnDataType_t type) { return type >= CUDNN_DATA_FLOAT && type <= CUDNN_DATA_COMPLEX_FP64; }
inline bool known_nan(cudnnNanPropagation_t nan) {
  return nan == CUDNN_NOT_PROPAGATE_NAN || nan == CUDNN_PROPAGATE_NAN;
}

}  // namespace stublegacy

#pragma GCC visibility pop
