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
#include "shim/families/roles.h"
#include "shim/libraries/callers.h"
#include "shim/process/config.h"

namespace cudnn_fastpath::shim {

// One call, as the engine runs it.
template <typename Adapter, auto kReal, typename Handle, typename... Args>
struct TableCall {
  const RealSymbols& real;
  std::tuple<Args...> arguments;
  Handle handle;
  const typename Adapter::State& state;

  static int run(void* context, CUstream) {
    auto& x = *static_cast<TableCall*>(context);
    return std::apply(x.real.*kReal, x.arguments);
  }
  static int enter(void* context, CUstream capture) {
    auto& x = *static_cast<TableCall*>(context);
    return Adapter::enter(x.real, x.handle, x.state, capture);
  }
  static void leave(void* context) {
    auto& x = *static_cast<TableCall*>(context);
    Adapter::leave(x.real, x.handle, x.state);
  }
};

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

// The shim's function for one row (`op` its place in the table, `family` its family's, `kRoles` its
// roles), over the adapter of its library.
template <typename Adapter, auto kReal, const auto& kRoles, std::size_t kOffset, auto kLeader, typename... Args,
          std::size_t... I>
typename Adapter::Status table_call(Family family, int op, std::index_sequence<I...> indices, const void* caller,
                                    Args... args) noexcept {
  static_assert(sizeof...(Args) == sizeof kRoles / sizeof kRoles[0], "one role per argument");
  static_assert((fits<Args>(kRoles[I]) && ...), "a role of the table does not fit its argument's type");
  static_assert(kRoles[0] == Role::H, "the handle comes first");
  constexpr std::uint32_t kScaleWords = scale_words<Args...>(kRoles, names_compute_type(kRoles), indices);
  using Status = typename Adapter::Status;
  const std::uint32_t m = current_mode();
  const Reach reach = reach_for(Adapter::kLibrary, caller);
  const Binding& library = reach.binding;
  const auto real = library.real.*kReal;
  Status status;
  if (answered_at_gate<kOffset, kLeader>(status, Adapter::kGate, m, caller, reach.caller, real, args...)) return status;
  const auto handle = std::get<0>(std::forward_as_tuple(args...));
  auto sample = [&] {
    replay::SampleHash hash;
    hash.add(reinterpret_cast<std::uintptr_t>(handle));
    hash.add(static_cast<std::uint64_t>(op));
    (add_to_sample(hash, kRoles[I], args), ...);
    return hash.value();
  };
  const Admitting admitting = (m & mode::kGraphReplay) ? admit<true>(family, sample) : Admitting::kDirect;
  if (admitting == Admitting::kDeclined) return run_declined(family, m, [&] { return real(args...); });
  typename Adapter::State state{};
  Counter refusal = Counter::kCount;
  const bool known = Adapter::read_state(library.real, handle, m, state, family, refusal);
  TableCall<Adapter, kReal, decltype(handle), Args...> x{library.real, {args...}, handle, state};
  const ReplayCall call{family, caller, Adapter::stream(state), Adapter::kLaunchFailed, &x, x.run, x.enter, x.leave,
                        nullptr, nullptr};
  if (!known || admitting == Admitting::kDirect) return static_cast<Status>(run_direct(call, m, refusal));
  Key key;
  key.add_pointer(handle);
  key.add(static_cast<std::uint64_t>(op));
  Adapter::add_state(key, state);
  KeyWriter writer{key, kScaleWords, Adapter::device_scales(state)};
  (writer.add(kRoles[I], args), ...);
  writer.finish();
  if (!key.complete) return static_cast<Status>(run_direct(call, m, counter_of(family, Outcome::kUnknown)));
  return static_cast<Status>(replay(key, call, m, admitting));
}

// The shim's function of each row of a list of the table (CUDNN_FASTPATH_LEGACY_OP_ENTRY_POINTS,
// CUDNN_FASTPATH_CUBLAS_GEMM_ENTRY_POINTS), over `Adapter`: its roles, its number, its definition.
// Expanded in the adapter's file, inside namespace cudnn_fastpath::shim.
#define CUDNN_FASTPATH_TABLE_CALL_ROLES(exported, library, result, function, parameters, arguments, family, role_list) \
  constexpr Role kRolesOf_##exported[] = {CUDNN_FASTPATH_EXPAND role_list};
#define CUDNN_FASTPATH_TABLE_CALL_NUMBER(exported, ...) kOp_##exported,
#define CUDNN_FASTPATH_TABLE_CALL_DEFINITION(Adapter, exported, library, result, function, parameters, arguments,  \
                                             family, role_list)                                                  \
  result function(const void* caller, CUDNN_FASTPATH_EXPAND parameters) noexcept {                               \
    return table_call<Adapter, &RealSymbols::exported, kRolesOf_##exported, offsetof(DispatchV1, function),      \
                      &DispatchV1::function>(Family::family, kOp_##exported,                                     \
                                             std::make_index_sequence<sizeof kRolesOf_##exported / sizeof(Role)>{}, \
                                             caller, CUDNN_FASTPATH_EXPAND arguments);                           \
  }

}  // namespace cudnn_fastpath::shim
