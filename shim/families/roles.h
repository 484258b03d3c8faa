// The role of each argument of a replayed call whose key comes from the table of entry_points.h
// (cuDNN's legacy ops, cuBLAS's GEMMs), and the writer that turns the arguments into the call's key.
//
//   H        the handle (the key's first word already: its graphs are forgotten with it)
//   V        a number passed by value (an enum, epsilon, an averaging factor, a size): its bytes
//   S        a host scaling factor: the bytes at the pointer, read now, as the library reads them
//            (below), or the pointer itself when the handle reads its scaling factors from device
//            memory (cuBLAS's CUBLAS_POINTER_MODE_DEVICE)
//   D        a device pointer (data, workspace, reserve space): its value
//   T Tout Tnull   a tensor descriptor; the output tensor (whose data type sizes a legacy op's
//            scaling factors); one that may be null
//   F Conv Act Actnull Pool Op Lrn   a filter, convolution, activation (Actnull: may be null),
//            pooling, op-tensor or LRN descriptor
//   Compute  cuBLAS's compute type, and Ctype the type of C: together they size a GEMM's scaling
//            factors
// A descriptor enters the key as the record of what the program set it to (legacy_records.h), never
// as its address; one the shim did not see set leaves the key incomplete, and the call runs
// directly. How many bytes a scaling factor has: a typed pointer's pointee (cublasSgemm's float);
// else a double when the output tensor is CUDNN_DATA_DOUBLE and a float otherwise (cuDNN's rule); or,
// for a GEMM, the compute type's size, twice that for a complex C.
#pragma once

#include <cublas_api.h>
#include <cudnn.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "shim/engine/replay_engine.h"
#include "shim/families/legacy_records.h"
#include "shim/families/record_names.h"

namespace cudnn_fastpath::shim {

enum class Role : std::uint8_t { H, V, S, D, T, Tout, Tnull, F, Conv, Act, Actnull, Pool, Op, Lrn, Compute, Ctype };

// The names the table's roles use (`using namespace roles` where a list is expanded); from_type
// stands for a role the table leaves to the argument's type.
namespace roles {
constexpr Role H = Role::H, V = Role::V, S = Role::S, D = Role::D, T = Role::T, Tout = Role::Tout,
               Tnull = Role::Tnull, F = Role::F, Conv = Role::Conv, Act = Role::Act, Actnull = Role::Actnull,
               Pool = Role::Pool, Op = Role::Op, Lrn = Role::Lrn, Compute = Role::Compute, Ctype = Role::Ctype;
constexpr struct FromType {
} from_type;
}  // namespace roles

// The legacy descriptor kind of each descriptor type.
template <typename T>
struct DescriptorOf {
  static constexpr DescriptorKind kind = DescriptorKind{};
};
#define CUDNN_FASTPATH_DESCRIPTOR_OF(type, the_kind) \
  template <>                                        \
  struct DescriptorOf<type> {                        \
    static constexpr DescriptorKind kind = the_kind; \
  };
CUDNN_FASTPATH_DESCRIPTOR_OF(cudnnTensorDescriptor_t, kTensor)
CUDNN_FASTPATH_DESCRIPTOR_OF(cudnnFilterDescriptor_t, kFilter)
CUDNN_FASTPATH_DESCRIPTOR_OF(cudnnConvolutionDescriptor_t, kConvolution)
CUDNN_FASTPATH_DESCRIPTOR_OF(cudnnActivationDescriptor_t, kActivation)
CUDNN_FASTPATH_DESCRIPTOR_OF(cudnnPoolingDescriptor_t, kPooling)
CUDNN_FASTPATH_DESCRIPTOR_OF(cudnnOpTensorDescriptor_t, kOpTensor)
CUDNN_FASTPATH_DESCRIPTOR_OF(cudnnLRNDescriptor_t, kLrn)
#undef CUDNN_FASTPATH_DESCRIPTOR_OF

// Whether `role` may describe an argument of type T: each row of the table is checked against the
// library's own declaration at compile time.
template <typename T>
constexpr bool fits(Role role) {
  using U = std::remove_cv_t<T>;
  constexpr DescriptorKind kind = DescriptorOf<U>::kind;
  constexpr bool handle = std::is_same_v<U, cudnnHandle_t> || std::is_same_v<U, cublasHandle_t>;
  constexpr bool data = std::is_pointer_v<U> && kind == DescriptorKind{} && !handle;
  switch (role) {
    case Role::H: return handle;
    case Role::V: return std::is_arithmetic_v<U> || std::is_enum_v<U>;
    case Role::S:
    case Role::D: return data;
    case Role::T:
    case Role::Tout:
    case Role::Tnull: return kind == kTensor;
    case Role::F: return kind == kFilter;
    case Role::Conv: return kind == kConvolution;
    case Role::Act:
    case Role::Actnull: return kind == kActivation;
    case Role::Pool: return kind == kPooling;
    case Role::Op: return kind == kOpTensor;
    case Role::Lrn: return kind == kLrn;
    case Role::Compute: return std::is_same_v<U, cublasComputeType_t>;
    case Role::Ctype: return std::is_same_v<U, cudaDataType>;
  }
  return false;
}

// The role of an argument of type T that the table gives (entry_points.h), checked by fits() where
// the call is made (table_call.h).
template <typename T>
constexpr Role role_of(Role given) {
  return given;
}

// The role of an argument of type T that the table leaves to its type: a handle's, a descriptor's
// kind (T, F, Conv, Act, Pool, Op, Lrn), a compute type's, a number's (V), data written (D). A
// pointer to const may be a scaling factor (S) or data read (D): the table must say which.
template <typename T>
constexpr Role role_of(roles::FromType) {
  using U = std::remove_cv_t<T>;
  constexpr DescriptorKind kind = DescriptorOf<U>::kind;
  if constexpr (std::is_same_v<U, cudnnHandle_t> || std::is_same_v<U, cublasHandle_t>) return Role::H;
  else if constexpr (kind == kTensor) return Role::T;
  else if constexpr (kind == kFilter) return Role::F;
  else if constexpr (kind == kConvolution) return Role::Conv;
  else if constexpr (kind == kActivation) return Role::Act;
  else if constexpr (kind == kPooling) return Role::Pool;
  else if constexpr (kind == kOpTensor) return Role::Op;
  else if constexpr (kind == kLrn) return Role::Lrn;
  else if constexpr (std::is_same_v<U, cublasComputeType_t>) return Role::Compute;
  else if constexpr (std::is_arithmetic_v<U> || std::is_enum_v<U>) return Role::V;
  else {
    static_assert(std::is_pointer_v<U> && !std::is_const_v<std::remove_pointer_t<U>>,
                  "a pointer to const is S or D: entry_points.h must say which");
    return Role::D;
  }
}

// The bytes of the scaling factor a typed pointer T points at (cublasSgemm's float, cublasZgemm's
// complex double); 0 for a void pointer, whose size the call's other arguments say.
template <typename T>
constexpr std::uint32_t typed_scale_bytes() {
  using P = std::remove_cv_t<std::remove_pointer_t<T>>;
  if constexpr (std::is_arithmetic_v<P> || std::is_same_v<P, cuComplex> || std::is_same_v<P, cuDoubleComplex>)
    return sizeof(P);
  return 0;
}

// Whether a role list names a compute type (a GEMM's: its scaling factors may be 16 bytes).
template <std::size_t N>
constexpr bool names_compute_type(const Role (&roles)[N]) {
  for (Role r : roles)
    if (r == Role::Compute) return true;
  return false;
}

// The bytes of one scaling factor of a GEMM that computes in `compute`; 0 for one the shim does
// not know (the call then runs directly).
inline std::uint32_t compute_scale_bytes(std::int64_t compute) noexcept {
  switch (compute) {
    case CUBLAS_COMPUTE_16F:
    case CUBLAS_COMPUTE_16F_PEDANTIC: return 2;
    case CUBLAS_COMPUTE_32F:
    case CUBLAS_COMPUTE_32F_PEDANTIC:
    case CUBLAS_COMPUTE_32F_FAST_16F:
    case CUBLAS_COMPUTE_32F_FAST_16BF:
    case CUBLAS_COMPUTE_32F_FAST_TF32:
    case CUBLAS_COMPUTE_32F_EMULATED_16BFX9:
    case CUBLAS_COMPUTE_32I:
    case CUBLAS_COMPUTE_32I_PEDANTIC: return 4;
    case CUBLAS_COMPUTE_64F:
    case CUBLAS_COMPUTE_64F_PEDANTIC:
    case CUBLAS_COMPUTE_64F_EMULATED_FIXEDPOINT: return 8;
    default: return 0;
  }
}

inline bool complex_type(std::int64_t type) noexcept {
  switch (type) {
    case CUDA_C_16F:
    case CUDA_C_16BF:
    case CUDA_C_32F:
    case CUDA_C_64F:
    case CUDA_C_8I:
    case CUDA_C_32I: return true;
    default: return false;
  }
}

// Writes a call's key argument by argument; the scaling factors last, once what sizes them is
// known. `scale_words`: the words each scaling factor may need (1, or 2 for a GEMM's complex
// double); `device_scales`: the handle reads them from device memory (their pointers are the key's).
class KeyWriter {
 public:
  KeyWriter(Key& key, std::uint32_t scale_words, bool device_scales) noexcept
      : key_(key), scale_words_(scale_words), device_scales_(device_scales) {}

  template <typename T>
  [[gnu::always_inline]] void add(Role role, T value) noexcept {
    using U = std::remove_cv_t<T>;
    if (role == Role::H) return;
    if constexpr (DescriptorOf<U>::kind != DescriptorKind{}) {
      add_descriptor(DescriptorOf<U>::kind, value, role);
    } else if constexpr (std::is_pointer_v<U>) {
      if (role == Role::D) return key_.add_tensor(value);
      if (device_scales_) return key_.add_pointer(value);
      add_scale(value, typed_scale_bytes<U>());
    } else {
      if (role == Role::Compute) compute_ = static_cast<std::int64_t>(value);
      if (role == Role::Ctype) c_type_ = static_cast<std::int64_t>(value);
      key_.add_bytes(&value, sizeof value);
    }
  }

  // Fills in the scaling factors. The key is complete when every part of it could be written.
  void finish() noexcept {
    for (int i = 0; i < scale_count_ && key_.complete; ++i) {
      std::uint32_t size = scales_[i].typed_size;
      if (size == 0 && compute_ >= 0) size = compute_scale_bytes(compute_) * (complex_type(c_type_) ? 2 : 1);
      else if (size == 0) size = wide_ ? 8 : 4;
      if (size == 0 || size > 8 * scale_words_) return key_.refuse();
      std::uint64_t words[2] = {0, 0};
      if (size == 4) std::memcpy(words, scales_[i].at, 4);  // fp32: the common size, as a constant (no memcpy call)
      else std::memcpy(words, scales_[i].at, size);
      for (std::uint32_t w = 0; w < scale_words_; ++w) key_.words[scales_[i].word + w] = words[w];
    }
  }

 private:
  struct Scale {
    const void* at;
    std::uint32_t word;        // its place in the key
    std::uint32_t typed_size;  // the pointee's size, 0 for a void pointer
  };

  [[gnu::always_inline]] void add_scale(const void* at, std::uint32_t typed_size) noexcept {
    if (scale_count_ == kMaxScales || at == nullptr) return key_.refuse();
    scales_[scale_count_++] = {at, key_.length, typed_size};
    for (std::uint32_t w = 0; w < scale_words_; ++w) key_.add(0);  // filled in by finish()
  }

  // A descriptor's record, by its name (record_names.h: its kind above it).
  void add_descriptor(DescriptorKind kind, const void* descriptor, Role role) noexcept {
    if (descriptor == nullptr) {
      if (role != Role::Tnull && role != Role::Actnull) return key_.refuse();
      return key_.add(0);
    }
    auto copy = [](const std::atomic<std::uint64_t>* words, std::uint32_t length, std::uint64_t* into) {
      for (std::uint32_t i = 0; i < length; ++i) into[i] = words[i].load(std::memory_order_relaxed);
      return length;
    };
    bool wide = false;  // a tensor record's second word is its data type
    auto peek = [&](const std::atomic<std::uint64_t>* words, std::uint32_t length) {
      if (role == Role::Tout && length >= 2)
        wide = static_cast<std::int32_t>(words[1].load(std::memory_order_relaxed)) == CUDNN_DATA_DOUBLE;
    };
    const std::uint64_t name = record_name(g_legacy_descriptors, g_legacy_names, descriptor, kind, copy, peek);
    if (name == 0) return key_.refuse();
    if (role == Role::Tout) wide_ = wide;
    key_.add(named_record(kind, name));
  }

  static constexpr int kMaxScales = 4;  // batch-norm backward's four
  Key& key_;
  const std::uint32_t scale_words_;
  const bool device_scales_;
  Scale scales_[kMaxScales];
  int scale_count_ = 0;
  bool wide_ = false;  // the output tensor is CUDNN_DATA_DOUBLE
  std::int64_t compute_ = -1, c_type_ = -1;
};

}  // namespace cudnn_fastpath::shim
