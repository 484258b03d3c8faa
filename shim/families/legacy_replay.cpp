// cuDNN's legacy ops under the shim: a steady call becomes one CUDA graph launch (the replay
// engine, replay_engine.h), its key written from the role of each argument that the table of
// entry_points.h names (CUDNN_FASTPATH_LEGACY_OP_ENTRY_POINTS):
//   H   the handle (the key's first word: its graphs are forgotten with it)
//   V   a number passed by value (an enum, epsilon, an averaging factor, a size): its bytes
//   S   a host scaling factor: the bytes at the pointer, read now, as cuDNN reads them (a double
//       when the output tensor is CUDNN_DATA_DOUBLE, a float otherwise)
//   T   a tensor descriptor; TO the output tensor (whose data type sizes the scaling factors); T0
//       one that may be null
//   F C A P O L   a filter, convolution, activation, pooling, op-tensor or LRN descriptor; A0 an
//       activation that may be null
//   D   a device pointer (data, workspace, reserve space): its value
// A descriptor enters the key as the record of what the program set it to (legacy_records.h),
// never as its address; one the shim did not see set makes the call run directly. The call runs
// on the handle's stream: the capture points the handle at the shim's stream and back.
#include <cudnn.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <tuple>
#include <type_traits>

#include "replay/seen_filter.h"
#include "shim/engine/replay_engine.h"
#include "shim/engine/replay_thread.h"
#include "shim/families/backend_replay.h"
#include "shim/families/legacy.h"
#include "shim/families/legacy_records.h"
#include "shim/libraries/callers.h"
#include "shim/libraries/dispatch.h"
#include "shim/libraries/mode.h"
#include "shim/process/counters.h"
#include "shim/streams/handle_stream.h"

namespace cudnn_fastpath::shim {
namespace {

enum class Role : std::uint8_t { H, V, S, T, TO, T0, F, C, A, A0, P, O, L, D };

namespace roles {
constexpr Role H = Role::H, V = Role::V, S = Role::S, T = Role::T, TO = Role::TO, T0 = Role::T0, F = Role::F,
               C = Role::C, A = Role::A, A0 = Role::A0, P = Role::P, O = Role::O, L = Role::L, D = Role::D;
}  // namespace roles

// The descriptor kind of each descriptor type, and which roles take it.
template <typename T>
struct DescriptorOf {
  static constexpr DescriptorKind kind = DescriptorKind{};
};
#define CUDNN_FASTPATH_DESCRIPTOR_OF(type, the_kind) \
  template <>                                                \
  struct DescriptorOf<type> {                                \
    static constexpr DescriptorKind kind = the_kind;         \
  };
CUDNN_FASTPATH_DESCRIPTOR_OF(cudnnTensorDescriptor_t, kTensor)
CUDNN_FASTPATH_DESCRIPTOR_OF(cudnnFilterDescriptor_t, kFilter)
CUDNN_FASTPATH_DESCRIPTOR_OF(cudnnConvolutionDescriptor_t, kConvolution)
CUDNN_FASTPATH_DESCRIPTOR_OF(cudnnActivationDescriptor_t, kActivation)
CUDNN_FASTPATH_DESCRIPTOR_OF(cudnnPoolingDescriptor_t, kPooling)
CUDNN_FASTPATH_DESCRIPTOR_OF(cudnnOpTensorDescriptor_t, kOpTensor)
CUDNN_FASTPATH_DESCRIPTOR_OF(cudnnLRNDescriptor_t, kLrn)
#undef CUDNN_FASTPATH_DESCRIPTOR_OF

// Whether `role` may describe an argument of type T: the table is checked against cuDNN's own
// declarations at compile time.
template <typename T>
constexpr bool fits(Role role) {
  using U = std::remove_cv_t<T>;
  constexpr DescriptorKind kind = DescriptorOf<U>::kind;
  switch (role) {
    case Role::H: return std::is_same_v<U, cudnnHandle_t>;
    case Role::V: return std::is_arithmetic_v<U> || std::is_enum_v<U>;
    case Role::S:
    case Role::D: return std::is_same_v<U, void*> || std::is_same_v<U, const void*>;
    case Role::T:
    case Role::TO:
    case Role::T0: return kind == kTensor;
    case Role::F: return kind == kFilter;
    case Role::C: return kind == kConvolution;
    case Role::A:
    case Role::A0: return kind == kActivation;
    case Role::P: return kind == kPooling;
    case Role::O: return kind == kOpTensor;
    case Role::L: return kind == kLrn;
  }
  return false;
}

// Writes a call's key, argument by argument; the scaling factors last, once the output tensor's
// data type is known.
struct KeyWriter {
  Key& key;
  std::uint32_t scale_words[4];
  const void* scales[4];
  int scale_count = 0;
  bool wide = false;  // the output tensor is CUDNN_DATA_DOUBLE

  template <typename T>
  void add(Role role, T value) noexcept {
    using U = std::remove_cv_t<T>;
    if (role == Role::H) return;  // the key's first word already
    if constexpr (DescriptorOf<U>::kind != DescriptorKind{}) {
      add_descriptor(DescriptorOf<U>::kind, value, role);
    } else if constexpr (std::is_pointer_v<U>) {
      if (role == Role::S) {
        if (scale_count == 4 || value == nullptr) return key.refuse();
        scale_words[scale_count] = key.length;
        scales[scale_count++] = value;
        key.add(0);  // filled in by finish()
      } else {
        key.add_pointer(value);
      }
    } else {
      key.add_bytes(&value, sizeof value);
    }
  }

  // A descriptor's record, after a word of its kind and length (so that records of different
  // lengths never run into each other).
  void add_descriptor(DescriptorKind kind, const void* descriptor, Role role) noexcept {
    if (descriptor == nullptr) {
      if (role != Role::T0 && role != Role::A0) return key.refuse();
      return key.add(0);
    }
    const bool read = g_legacy_descriptors.read(descriptor, kind, [&](const std::atomic<std::uint64_t>* words,
                                                                       std::uint32_t length) {
      std::uint64_t* to = key.extend(1 + length);
      if (to == nullptr) return;
      to[0] = kind | std::uint64_t{length} << 32;
      for (std::uint32_t i = 0; i < length; ++i) to[1 + i] = words[i].load(std::memory_order_relaxed);
      if (role == Role::TO && length >= 2) wide = static_cast<std::int32_t>(to[2]) == CUDNN_DATA_DOUBLE;
    });
    if (!read) key.refuse();
  }

  void finish() noexcept {
    if (!key.complete) return;
    for (int i = 0; i < scale_count; ++i) {
      std::uint64_t word = 0;
      std::memcpy(&word, scales[i], wide ? 8 : 4);
      key.words[scale_words[i]] = word;
    }
  }
};

// One call, as the engine runs it.
template <auto kReal, typename... Args>
struct OpCall {
  const RealSymbols& cudnn;
  std::tuple<Args...> arguments;
  cudnnHandle_t handle;
  cudaStream_t program_stream;

  static int run(void* context, CUstream) {
    auto& x = *static_cast<OpCall*>(context);
    return std::apply(x.cudnn.*kReal, x.arguments);
  }
  static int enter(void* context, CUstream capture) {
    auto& x = *static_cast<OpCall*>(context);
    return point_handle_at(x.cudnn, x.handle, capture);
  }
  static void leave(void* context) {
    auto& x = *static_cast<OpCall*>(context);
    point_handle_back(x.cudnn, x.handle, x.program_stream);
  }
};

template <auto kReal, const Role* kRoles, std::size_t kOffset, auto kLeader, typename... Args, std::size_t... I>
cudnnStatus_t legacy_op(Family family, int op, std::index_sequence<I...>, const void* caller, Args... args) noexcept {
  static_assert((fits<Args>(kRoles[I]) && ...), "a role of the table does not fit its argument's type");
  static_assert(kRoles[0] == Role::H, "the handle comes first");
  const std::uint32_t m = current_mode();
  const Binding& cudnn = binding_for(Library::kCudnn, caller);
  const auto real = cudnn.real.*kReal;
  if (__builtin_expect(m & mode::kFollower, 0)) {
    const DispatchV1& lead = leader();
    if (leads(lead, kOffset)) return (lead.*kLeader)(caller, args...);
  }
  if (real == nullptr) return CUDNN_STATUS_NOT_INITIALIZED;
  const cudnnHandle_t handle = std::get<0>(std::forward_as_tuple(args...));
  const Caller* c = known_caller(reinterpret_cast<std::uintptr_t>(caller));
  // Not replayed: a library's own call (cuDNN calling itself), one inside the shim's capture, and
  // the calls of a dlsym caller that holds cuDNN's own function for a legacy name (a descriptor
  // it sets through that one would be replayed with stale contents).
  if (!(m & mode::kLegacy) || (m & mode::kFollower) || inside_library_call() ||
      (c != nullptr && (c->in_library.load(std::memory_order_relaxed) ||
                        (c->dlsym_declined.load(std::memory_order_relaxed) & kDeclinedLegacy)))) {
    const LibraryCall inside;
    return real(args...);
  }
  note_cudnn_call();
  cudaStream_t stream = nullptr;
  const bool known_stream = handle_stream(cudnn.real, handle, m, stream);
  OpCall<kReal, Args...> x{cudnn.real, {args...}, handle, stream};
  const ReplayCall call{family,        caller, reinterpret_cast<CUstream>(stream), CUDNN_STATUS_EXECUTION_FAILED_CUDA_DRIVER,
                        &x,            x.run,  x.enter,                            x.leave,
                        nullptr,       nullptr};
  if (!known_stream || cudnn.real.cudnnSetStream == nullptr) return static_cast<cudnnStatus_t>(run_direct(call, m));
  Key key;
  KeyWriter writer{key, {}, {}};
  key.add_pointer(handle);
  key.add(static_cast<std::uint64_t>(op));
  (writer.add(kRoles[I], args), ...);
  writer.finish();
  if (!key.complete) return static_cast<cudnnStatus_t>(run_direct(call, m, counter_of(family, Outcome::kUnknown)));
  return static_cast<cudnnStatus_t>(replay(key, call, m));
}

// The roles of each op, and its number in the key.
#define CUDNN_FASTPATH_OP_ROLES(exported, library, result, function, parameters, arguments, family, op_roles) \
  constexpr Role kRolesOf_##exported[] = {CUDNN_FASTPATH_EXPAND op_roles};
using namespace roles;
CUDNN_FASTPATH_LEGACY_OP_ENTRY_POINTS(CUDNN_FASTPATH_OP_ROLES)
#undef CUDNN_FASTPATH_OP_ROLES

enum OpNumber : int {
#define CUDNN_FASTPATH_OP_NUMBER(exported, ...) kOp_##exported,
  CUDNN_FASTPATH_LEGACY_OP_ENTRY_POINTS(CUDNN_FASTPATH_OP_NUMBER)
#undef CUDNN_FASTPATH_OP_NUMBER
};

}  // namespace

#define CUDNN_FASTPATH_DEFINE_OP(exported, library, result, function, parameters, arguments, family, op_roles)     \
  result function(const void* caller, CUDNN_FASTPATH_EXPAND parameters) noexcept {                                 \
    return legacy_op<&RealSymbols::exported, kRolesOf_##exported, offsetof(DispatchV1, function),                 \
                     &DispatchV1::function>(Family::family, kOp_##exported,                                        \
                                            std::make_index_sequence<sizeof kRolesOf_##exported / sizeof(Role)>{}, \
                                            caller, CUDNN_FASTPATH_EXPAND arguments);                              \
  }
CUDNN_FASTPATH_LEGACY_OP_ENTRY_POINTS(CUDNN_FASTPATH_DEFINE_OP)
#undef CUDNN_FASTPATH_DEFINE_OP

}  // namespace cudnn_fastpath::shim
