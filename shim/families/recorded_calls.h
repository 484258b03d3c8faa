// The calls that make, set and destroy what the shim records of a library's objects (legacy cuDNN
// descriptors: legacy_descriptors.cpp; cuBLASLt descriptors and cuBLAS handles: blas_records.cpp),
// one template per action over a DescriptorRegistry (replay/descriptor_registry.h).
//
// Every call reaches the library as it came; what the program's own creations made of the object
// is recorded. A creation by one of the libraries themselves (cuDNN's sub-libraries make
// descriptors of their own, cuBLAS makes cuBLASLt ones), or one made inside one of the shim's
// captures, is not recorded: the registry forgets the address instead, which may have been a
// program's. A set is recorded whoever makes it, without asking who: it edits a record only where
// the object has one, a program's object (or the stale record of one destroyed around the shim),
// and then the record follows what the set made of it (a library setting a program's descriptor
// included); an object of a library's own has none. A set
// the library refuses leaves the record unknown.
//
// While the feature that reads the records is off (legacy replay for cuDNN's descriptors, cuBLAS
// replay for the others), a create records nothing and forgets its address: the descriptors a
// program makes for each call (PyTorch) then cost the shim a lookup, not a record, and stay unknown
// once the feature is on again. Sets and destroys are recorded whatever the feature, so that an
// object made while it was on (ONNX Runtime's descriptors, made once; a cuBLAS handle) keeps a true
// record across the switch. Handles (kAlwaysRecorded) are recorded from their creation whatever the
// feature: a program makes a few, once, and every call on them needs their record.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "replay/descriptor_registry.h"
#include "shim/families/gate.h"
#include "shim/libraries/dispatch.h"
#include "shim/libraries/mode.h"
#include "shim/process/counters.h"

namespace cudnn_fastpath::shim {

// The type of the real function a member of RealSymbols holds.
template <auto kReal>
using RealOf = std::remove_reference_t<decltype(std::declval<RealSymbols&>().*kReal)>;

// The actions, over `registry` (a Registry) of the objects of `library`, whose calls return Status
// (`missing` for a library without the function). The entry tables name an action, a kind and a
// recorder: `std::uint32_t recorder(replay::SlotWords, std::uint32_t length, the call's other
// arguments...)` for a set or an init, which edits the record in place and returns its length after
// the call (0: not usable; `length` is what it was), `std::uint32_t defaults(replay::SlotWords, the
// create's other arguments...)` for a create (null: not usable until set), `void hook(object)` for
// a destroy (null: none), run before the real destroy.
template <typename Registry, Registry& registry, Library library, typename Status, Status missing,
          Records kRecords, std::uint64_t kAlwaysRecorded = 0>
struct RecordedCalls {
  static constexpr std::uint32_t kFeature = library == Library::kCudnn ? mode::kLegacy : mode::kCublas;

  // Whether an object of `kind` is recorded on this thread now: always a handle (a bit of
  // kAlwaysRecorded); another object while the caches whose keys read it (kRecords,
  // records_wanted()) may use its record: a thread whose calls never repeat records nothing, and a
  // set it does not record makes the object unknown.
  template <std::uint32_t kKind>
  static bool recorded_now() noexcept {
    return ((kAlwaysRecorded >> kKind) & 1) || records_wanted(kRecords);
  }

  // Whether a creation of a kind that is not a handle's may be recorded under mode word `m`: the
  // feature on and records wanted (the program's own call, asked last, decides: recording_creation).
  static bool recording_wanted(std::uint32_t m) noexcept { return (m & kFeature) && records_wanted(kRecords); }

  // Whether a creation of `kind` is recorded: the call is the program's own, and the feature is on
  // and records are wanted, or the kind is a handle's.
  template <std::uint32_t kKind>
  static bool recording_creation(std::uint32_t m, const void* caller, const Caller* known) noexcept {
    return (((m & kFeature) && recorded_now<kKind>()) || ((kAlwaysRecorded >> kKind) & 1)) &&
           programs_call(caller, 0, known);
  }

  // A creation of `kind` was recorded: counted, so that a thread whose caches never read them
  // stops recording them (note_recorded_creation in replay_thread.h). Handles are not.
  template <std::uint32_t kKind>
  static void note_recorded_creation() noexcept {
    if constexpr (!((kAlwaysRecorded >> kKind) & 1)) shim::note_recorded_creation(kRecords);
  }

  // The mode word as it is, set up or not (current_mode() sets it up). Acquire: as current_mode().
  [[gnu::always_inline]] static std::uint32_t mode_word() noexcept {
    return g_every_call.mode.load(std::memory_order_acquire);
  }

  // The library's function for a steady call, told without a call of the shim's own, so that the
  // fast paths below need no frame of their own: the mode set up, this copy leading and not
  // disabled, the caller in the object the thread's last call came from (whose binding is
  // published), the library has the function. Null otherwise: the call takes the general path
  // (forwarded(), and the rest).
  template <auto kReal>
  [[gnu::always_inline]] static RealOf<kReal> steady_real(const void* caller) noexcept {
    return steady_real<kReal>(caller, mode_word());
  }
  // The same under mode word `m` (mode_word()).
  template <auto kReal>
  [[gnu::always_inline]] static RealOf<kReal> steady_real(const void* caller, std::uint32_t m) noexcept {
    if ((m & (mode::kReady | mode::kFollower | mode::kDisabled)) != mode::kReady) return nullptr;
    const Caller* c = t_last_caller;
    if (c == nullptr || !contains(*c, reinterpret_cast<std::uintptr_t>(caller))) return nullptr;
    // Acquire: as reach_for().
    const Binding* b = c->bindings[static_cast<int>(library)].load(std::memory_order_acquire);
    return b != nullptr ? b->real.*kReal : nullptr;
  }

  // What every call does first: passed on as every family's call is (gate.h's passed_on), or, with
  // the shim disabled, made as it came. Returns whether the call is done, with its status; `known`
  // is the caller's entry that gave `real` (reach_for), for programs_call.
  template <auto kReal, auto kLeader, typename... Args>
  static bool forwarded(Status& status, std::uint32_t m, const void* caller, RealOf<kReal>& real, const Caller*& known,
                        Args... args) {
    const Reach reach = reach_for(library, caller);
    real = reach.binding.real.*kReal;
    known = reach.caller;
    if (passed_on<kLeader>(status, missing, m, caller, real, args...)) return true;
    if (m & mode::kDisabled) {
      status = real(args...);
      return true;
    }
    return false;
  }

  // A creation. Its fast path (a steady call that records nothing: the feature off, or no cache of
  // the thread reading the kind's records) makes the object and forgets its address, as the
  // general path does, in a few instructions around the library's call: PyTorch makes a Linear's
  // five descriptors around every call, whether the shim replays anything or not, and the general
  // path's code (some 1,300 bytes a create, its record inlined) cost a create several cold lines.
  template <auto kReal, auto kLeader, std::uint32_t kKind, auto kDefaults, typename Object, typename... Rest>
  static Status created(const void* caller, Object* object, Rest... rest) noexcept {
    if constexpr (!((kAlwaysRecorded >> kKind) & 1)) {
      // Whether it may be recorded is asked first: a creation that is goes to the general path in
      // a few instructions.
      if (const std::uint32_t m = mode_word(); !recording_wanted(m)) {
        if (const RealOf<kReal> real = steady_real<kReal>(caller, m)) {
          const Status status = real(object, rest...);
          if (status == 0 && object != nullptr) registry.forget(*object);
          return status;
        }
      }
    }
    return created_in_general<kReal, kLeader, kKind, kDefaults>(caller, object, rest...);
  }
  template <auto kReal, auto kLeader, std::uint32_t kKind, auto kDefaults, typename Object, typename... Rest>
  [[gnu::noinline]] static Status created_in_general(const void* caller, Object* object, Rest... rest) noexcept {
    const std::uint32_t m = current_mode();
    Status status;
    RealOf<kReal> real;
    const Caller* known;
    if (forwarded<kReal, kLeader>(status, m, caller, real, known, object, rest...)) return status;
    status = real(object, rest...);
    if (status != 0 || object == nullptr) return status;
    if (!recording_creation<kKind>(m, caller, known)) {
      registry.forget(*object);
    } else {
      // Noted only when recorded (a load fewer for the rest): a descriptor is made to be used, and
      // the call that uses it is noted at its gate; a process whose only calls are creations the
      // shim did not record has nothing for the report at exit to show.
      note_cudnn_call();
      note_recorded_creation<kKind>();
      // No room: unknown, as if made around the shim.
      registry.created(*object, kKind, [&](replay::SlotWords words) -> std::uint32_t {
        if constexpr (!std::is_null_pointer_v<decltype(kDefaults)>) return kDefaults(words, rest...);
        else return (void)words, 0;
      });
    }
    return status;
  }

  // An object made in the caller's own memory (cuBLASLt's ..._Init_internal): a create at that
  // address, recorded as the recorder says.
  template <auto kReal, auto kLeader, std::uint32_t kKind, auto kRecord, typename Object, typename... Rest>
  static Status initialized(const void* caller, Object object, Rest... rest) noexcept {
    const std::uint32_t m = current_mode();
    Status status;
    RealOf<kReal> real;
    const Caller* known;
    if (forwarded<kReal, kLeader>(status, m, caller, real, known, object, rest...)) return status;
    status = real(object, rest...);
    if (!recording_creation<kKind>(m, caller, known) || status != 0) {
      registry.forget(object);
      return status;
    }
    note_cudnn_call();  // as in created()
    note_recorded_creation<kKind>();
    registry.created(object, kKind, [&](replay::SlotWords words) { return kRecord(words, 0, rest...); });
    return status;
  }

  // A set. Its fast path (a steady call, steady_real()), where the object is at its home in the
  // registry, records the set before the library makes it: nothing reads a descriptor being set
  // (the libraries' rule), and only the object then lives across the call, for a refusal, which
  // leaves the record unknown. The set of an object surely not held (no record to edit or forget)
  // is handed straight on.
  template <auto kReal, auto kLeader, std::uint32_t kKind, auto kRecord, typename Object, typename... Rest>
  static Status set(const void* caller, Object object, Rest... rest) noexcept {
    if (const RealOf<kReal> real = steady_real<kReal>(caller)) {
      auto record = [&](replay::SlotWords words, std::uint32_t length) { return kRecord(words, length, rest...); };
      if (recorded_now<kKind>() && registry.write_at_home(object, kKind, record)) {
        const Status status = real(object, rest...);
        if (__builtin_expect(status != 0, 0)) registry.unknown(object);
        return status;
      }
      if (registry.surely_not_held(object)) return real(object, rest...);
    }
    return set_in_general<kReal, kLeader, kKind, kRecord>(caller, object, rest...);
  }
  template <auto kReal, auto kLeader, std::uint32_t kKind, auto kRecord, typename Object, typename... Rest>
  [[gnu::noinline]] static Status set_in_general(const void* caller, Object object, Rest... rest) noexcept {
    const std::uint32_t m = current_mode();
    Status status;
    RealOf<kReal> real;
    const Caller* known;
    if (forwarded<kReal, kLeader>(status, m, caller, real, known, object, rest...)) return status;
    if (!recorded_now<kKind>()) {
      // Unknown from this set on, made so before it (nothing reads a descriptor being set: the
      // libraries' rule), so that the set is the call's last act, as it came.
      registry.forget(object);
      return real(object, rest...);
    }
    status = real(object, rest...);
    if (status != 0) {
      registry.unknown(object);
    } else {
      registry.write(object, kKind, [&](replay::SlotWords words, std::uint32_t length) {
        return kRecord(words, length, rest...);
      });
    }
    return status;
  }

  // A destroy. Its fast path (a steady call, its object at its home in the registry or surely not
  // held, no hook) forgets the object and hands the call on, as the general path does.
  template <auto kReal, auto kLeader, std::uint32_t kKind, auto kHook, typename Object>
  [[gnu::always_inline]] static Status destroyed(const void* caller, Object object) noexcept {
    if constexpr (std::is_null_pointer_v<decltype(kHook)>) {
      const RealOf<kReal> real = steady_real<kReal>(caller);
      if (real != nullptr && registry.forget_at_home(object)) return real(object);
    }
    return destroyed_in_general<kReal, kLeader, kKind, kHook>(caller, object);
  }
  template <auto kReal, auto kLeader, std::uint32_t, auto kHook, typename Object>
  [[gnu::noinline]] static Status destroyed_in_general(const void* caller, Object object) noexcept {
    const std::uint32_t m = current_mode();
    Status status;
    RealOf<kReal> real;
    const Caller* known;
    if (forwarded<kReal, kLeader>(status, m, caller, real, known, object)) return status;
    registry.forget(object);  // before the address can come back
    // By type, not value: `function != nullptr` of a function another file defines is no constant
    // expression under -fsanitize=undefined (GCC), and the ASan+UBSan build would not compile.
    if constexpr (!std::is_null_pointer_v<decltype(kHook)>) kHook(object);
    return real(object);
  }
};

// The shim's function of a recorded entry of the table, whose `how` is (action, kind, recorder):
// the including file defines each action as a macro of the entry's library that names its member
// of RecordedCalls. Expanded in that file, inside namespace cudnn_fastpath::shim.
#define CUDNN_FASTPATH_RECORDED_CALL(exported, library, function, how, arguments)                                 \
  CUDNN_FASTPATH_RESULT(library) function(const void* caller, CUDNN_FASTPATH_PARAMETERS(arguments)) noexcept {   \
    return CUDNN_FASTPATH_RECORDED_ACTION(exported, library, function, CUDNN_FASTPATH_EXPAND how)(              \
        caller, CUDNN_FASTPATH_ARGUMENTS(arguments));                                                            \
  }
#define CUDNN_FASTPATH_RECORDED_ACTION(...) CUDNN_FASTPATH_RECORDED_ACTION_(__VA_ARGS__)
#define CUDNN_FASTPATH_RECORDED_ACTION_(exported, library, function, action, kind, recorder) \
  action(library)<&RealSymbols::exported, &Dispatch::function, kind, recorder>

}  // namespace cudnn_fastpath::shim
