// A replayed call whose key is written from the roles of its arguments, as the table of
// entry_points.h gives them (cuDNN's legacy ops, cuBLAS's GEMMs): the gate, the key, the engine.
//
// What differs from one library to the next is its adapter's (legacy_replay.cpp, cublas_replay.cpp):
//   Status, kLibrary, kGate, kLaunchFailed   its status type, its library, its gate (gate.h), and
//                                what a failed graph launch returns (its "execution failed")
//   State                        what a call reads of its handle besides its arguments
//   read_state(real, handle, m, state, refusal)   reads it; false: the call runs directly (counted
//                                as `refusal` when that is given)
//   stream(state)                where the call's work goes
//   add_state(key, state)        the handle state the key holds (after the handle and the op)
//   device_scales(state)         whether the handle reads the scaling factors from device memory
//   enter(real, handle, state, capture), leave(real, handle, state)   points the handle at the
//                                shim's capture stream and puts back exactly what the program had
// A call that is a pure function of those and of its arguments is one row of the table plus, for a
// new library, an adapter.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <tuple>
#include <type_traits>
#include <utility>

#include "shim/engine/replay_engine.h"
#include "shim/families/gate.h"
#include "shim/families/replay_call.h"
#include "shim/families/roles.h"
#include "shim/libraries/callers.h"
#include "shim/process/config.h"

namespace cudnn_fastpath::shim {

// The words each scaling factor of a row takes: two where one may be 16 bytes (a GEMM's complex
// double, by its compute type or its pointer's type: cublasZgemm's), else one.
template <typename... Args, std::size_t... I>
constexpr std::uint32_t scale_words(const Role* roles, bool compute, std::index_sequence<I...>) {
  std::uint32_t words = compute ? 2 : 1;
  ((words = roles[I] == Role::S && typed_scale_bytes<Args>() > 8 ? 2 : words), ...);
  return words;
}

// An argument into the call's sample hash (the engine's admit()): its tensors' addresses (role D)
// and its numbers (role V), what a key holds that changes from call to call without a look at any
// record.
template <typename T>
[[gnu::always_inline]] inline void add_to_sample(replay::SampleHash& sample, Role role, T value) noexcept {
  if constexpr (std::is_pointer_v<T>) {
    if (role == Role::D) sample.add(reinterpret_cast<std::uintptr_t>(value));
  } else if constexpr (std::is_integral_v<T> || std::is_enum_v<T>) {
    if (role == Role::V) sample.add(static_cast<std::uint64_t>(value));
  } else if constexpr (std::is_floating_point_v<T>) {
    if (role == Role::V) {
      std::uint64_t word = 0;
      std::memcpy(&word, &value, sizeof value < 8 ? sizeof value : 8);
      sample.add(word);
    }
  }
}

// A row's shape sample (admit()): its handle and its number, what a call's arguments tell of its
// shape without a look at them all (a declined call pays nothing more for it). The shapes of one
// row on one handle share a bit of the thread's `relocating` word.
template <typename Handle>
inline std::uint64_t shape_sample_of(Handle handle, int op) noexcept {
  replay::SampleHash hash;
  hash.add(reinterpret_cast<std::uintptr_t>(handle));
  hash.add(static_cast<std::uint64_t>(op));
  return hash.value();
}

// One call of a row (`op` its place in the table, `kRoles` its roles), over its library's adapter (`Api`): replay_call.h's adapter.
template <typename Api, Family kOf, auto kReal, const auto& kRoles, typename... Args>
struct TableCall : NoHostBytes {
  using Handle = std::tuple_element_t<0, std::tuple<Args...>>;
  using Indices = std::index_sequence_for<Args...>;
  static constexpr Family kFamily = kOf;
  static constexpr bool kPastGate = true;
  static constexpr int kLaunchFailed = Api::kLaunchFailed;

  const void* caller;
  const RealSymbols& real;
  int op;
  std::tuple<Args...> arguments;
  typename Api::State state{};

  Handle handle() const noexcept { return std::get<0>(arguments); }
  int direct() const noexcept { return std::apply(real.*kReal, arguments); }
  bool known(std::uint32_t m, Counter& refusal) noexcept {
    return Api::read_state(real, handle(), m, state, kFamily, refusal);
  }
  CUstream stream() const noexcept { return Api::stream(state); }
  // The handle holds the stream: a captured run goes where enter() pointed it.
  static int run(void* context, CUstream) { return static_cast<const TableCall*>(context)->direct(); }
  static std::uint64_t shape_sample(const void* context) {
    const auto& x = *static_cast<const TableCall*>(context);
    return shape_sample_of(x.handle(), x.op);
  }
  static int enter(void* context, CUstream capture) {
    const auto& x = *static_cast<const TableCall*>(context);
    return Api::enter(x.real, x.handle(), x.state, capture);
  }
  static void leave(void* context) {
    const auto& x = *static_cast<const TableCall*>(context);
    Api::leave(x.real, x.handle(), x.state);
  }
  [[gnu::always_inline]] void write_key(Key& key) const noexcept {
    key.add_pointer(handle());
    key.add(static_cast<std::uint64_t>(op));
    Api::add_state(key, state);
    constexpr std::uint32_t kScaleWords = scale_words<Args...>(kRoles, names_compute_type(kRoles), Indices{});
    KeyWriter writer{key, kScaleWords, Api::device_scales(state)};
    write_arguments(writer, Indices{});
    writer.finish();
  }

 private:
  template <std::size_t... I>
  [[gnu::always_inline]] void write_arguments(KeyWriter& writer, std::index_sequence<I...>) const noexcept {
    (writer.add(kRoles[I], std::get<I>(arguments)), ...);
  }
};

// Whether each scaling factor (S) of a row has a size: its pointee's, or that of the row's output
// tensor's data type (Tout) or compute type (Compute).
template <typename... Args, std::size_t... I>
constexpr bool scales_sized(const Role* roles, std::index_sequence<I...>) {
  const bool sizer = ((roles[I] == Role::Tout || roles[I] == Role::Compute) || ...);
  return ((roles[I] != Role::S || typed_scale_bytes<Args>() > 0 || sizer) && ...);
}

// How many arguments of a row have `role`.
template <std::size_t N>
constexpr int count_of(const Role (&roles)[N], Role role) {
  int n = 0;
  for (Role r : roles) n += r == role;
  return n;
}

// The shim's function for one row: its gate, then the one path of a replayed call (replay_call.h).
template <typename Api, Family kFamily, auto kReal, const auto& kRoles, auto kLeader, typename... Args,
          std::size_t... I>
typename Api::Status table_call(int op, std::index_sequence<I...>, const void* caller, Args... args) noexcept {
  static_assert(sizeof...(Args) == sizeof kRoles / sizeof kRoles[0], "one role per argument");
  static_assert((fits<Args>(kRoles[I]) && ...), "a role of the table does not fit its argument's type");
  static_assert(kRoles[0] == Role::H, "the handle comes first");
  static_assert(count_of(kRoles, Role::Compute) == count_of(kRoles, Role::Ctype), "a compute type comes with C's type");
  static_assert(count_of(kRoles, Role::Tout) <= 1 && count_of(kRoles, Role::Compute) <= 1,
                "one output, one compute type");
  static_assert(scales_sized<Args...>(kRoles, std::index_sequence<I...>{}), "a scaling factor of unknown size");
  using Status = typename Api::Status;
  const std::uint32_t m = current_mode();
  const Reach reach = reach_for(Api::kLibrary, caller);
  const auto real = reach.binding.real.*kReal;
  Status status;
  if (answered_at_gate<kLeader>(status, Api::kGate, m, caller, reach.caller, real, args...)) return status;
  using Call = TableCall<Api, kFamily, kReal, kRoles, Args...>;
  auto sample = [&] {
    replay::SampleHash hash;
    hash.add(reinterpret_cast<std::uintptr_t>(std::get<0>(std::forward_as_tuple(args...))));
    hash.add(static_cast<std::uint64_t>(op));
    (add_to_sample(hash, kRoles[I], args), ...);
    return hash.value();
  };
  const auto handle = std::get<0>(std::forward_as_tuple(args...));
  auto shape_sample = [handle, op] { return shape_sample_of(handle, op); };
  // The declined path calls the library with the arguments as they came, the tuple made after.
  return static_cast<Status>(replay_call<Call>(m, sample, shape_sample, [&] { return real(args...); },
                                               [&] { return Call{{}, caller, reach.binding.real, op, {args...}}; }));
}

// The shim's function of each row of a list of the table (CUDNN_FASTPATH_LEGACY_OP_ENTRY_POINTS,
// CUDNN_FASTPATH_CUBLAS_GEMM_ENTRY_POINTS), over `Adapter`: its roles, its number, its definition.
// Expanded in the adapter's file, inside namespace cudnn_fastpath::shim, with `using namespace roles`.
#define CUDNN_FASTPATH_TABLE_CALL_ROLES(exported, library, function, family, arguments) \
  constexpr Role kRolesOf_##exported[] = {CUDNN_FASTPATH_ROLES(arguments)};
#define CUDNN_FASTPATH_TABLE_CALL_NUMBER(exported, ...) kOp_##exported,
#define CUDNN_FASTPATH_TABLE_CALL_DEFINITION(Adapter, exported, library, function, family, arguments)              \
  CUDNN_FASTPATH_RESULT(library) function(const void* caller, CUDNN_FASTPATH_PARAMETERS(arguments)) noexcept {   \
    return table_call<Adapter, Family::family, &RealSymbols::exported, kRolesOf_##exported, &Dispatch::function>( \
        kOp_##exported, std::make_index_sequence<sizeof kRolesOf_##exported / sizeof(Role)>{}, caller,          \
        CUDNN_FASTPATH_ARGUMENTS(arguments));                                                                    \
  }

}  // namespace cudnn_fastpath::shim
