// The objects seen calling the shim, each with the bindings found for it (callers.cpp), and
// binding_for(): which library a call reaches.
//
// The objects are kept in a fixed array, each with its address range and one binding pointer per
// library, all published with atomics: the lookup on every forwarding call is a scan of a few
// ranges, inline, with no loader call and no lock.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "shim/libraries/dispatch.h"
#include "shim/process/code_layout.h"
#include "shim/libraries/loaded_objects.h"
#include "shim/libraries/real_symbols.h"

namespace cudnn_fastpath::shim {

inline constexpr int kLibraryCount = static_cast<int>(Library::kCount);
inline constexpr int kEntryWords = (static_cast<int>(EntryPoint::kCount) + 63) / 64;

// What every forwarded call reads of its caller's entry (the range, the library's binding) comes
// first and fills one cache line with the flags: entries are line-aligned, so that a call reads one
// line of it wherever the entry stands in the array (with 632-byte entries, the range and the
// bindings of most entries spanned two or three lines; inside a framework each is a miss per call).
struct alignas(64) Caller {
  // Written once before `ready` is published (release), read after it (acquire). Atomics so that
  // a scan racing a new entry's fill is well defined; relaxed, the flag orders them.
  std::atomic<std::uintptr_t> begin{0}, end{0};
  // Published with a CAS from null, each library on its own: a first call needing cuDNN and
  // another needing the runtime never overwrite each other's result.
  std::atomic<const Binding*> bindings[kLibraryCount]{};
  std::atomic<bool> ready{false};
  std::atomic<bool> in_cudnn{false};
  // One of the libraries the shim interposes (cuDNN, cuBLAS, cuBLASLt, the runtime, the driver):
  // its calls of interposed functions are its own business, never the program's.
  std::atomic<bool> in_library{false};
  // The interposed names this object took through dlsym from the shim, one bit per EntryPoint
  // (dispatch.h), and, in `dlsym_declined`, the kinds of names it was answered the library's own
  // function for instead (dlsym_reach.cpp). Bits are only ever set (fetch_or, relaxed: each bit is
  // a fact on its own, read by one load that needs no other memory).
  std::atomic<std::uint32_t> dlsym_declined{0};
  std::atomic<std::uint64_t> dlsym_names_taken[kEntryWords]{};
  LoadedObject object;  // what resolve() needs; written before `ready`
};
// The line every forwarded call reads: the range and the bindings (and the flags, which fit).
static_assert(offsetof(Caller, dlsym_declined) + sizeof(std::uint32_t) <= 64, "a caller's hot words in one line");

// What a name answered with the library's own function was: one that can receive a variant pack
// (the caller may hold cuDNN's own function for it: no proxies), or one that writes what the shim
// records of a descriptor or reads it in a replayed call (no replay of that library's calls for
// the caller: a descriptor it sets around the shim would be replayed with stale contents).
inline constexpr std::uint32_t kDeclinedPacks = 1u << 0;
inline constexpr std::uint32_t kDeclinedLegacy = 1u << 1;
inline constexpr std::uint32_t kDeclinedBlas = 1u << 2;

// The variant-pack calls of a caller that takes cuDNN's functions with dlsym reach the shim only
// through the names it looked up there: such a caller gets proxies once every name that can
// receive a variant pack came from the shim (the CUDA-graph calls, which few programs use, and the
// deprecated cudnnBackendInitialize excepted: taken through dlsym, they are the shim's too), and
// never again once one of those was answered with cuDNN's own function. The bit comes too late for
// proxies made before it: a caller that takes a pack-taking call around the shim after it made
// proxies is beyond this rule (docs/design.md).
// A caller that took none of cuDNN's names through dlsym binds through its own references, which
// the shim interposes.
// Only cudnnSetStream and the names of the handles and the backend API matter (all in the first
// word: a shift past it would not compile); a library that took a stream destroy this way (cuBLAS
// does), or a legacy name, is otherwise a caller like any other.
inline bool dlsym_allows_proxies(std::uint64_t first_word, std::uint32_t declined) noexcept {
  constexpr auto bit = [](EntryPoint e) { return std::uint64_t{1} << static_cast<int>(e); };
  constexpr std::uint64_t kPackTaking =
      bit(EntryPoint::cudnnBackendSetAttribute) | bit(EntryPoint::cudnnBackendGetAttribute) |
      bit(EntryPoint::cudnnBackendFinalize) | bit(EntryPoint::cudnnBackendDestroyDescriptor) |
      bit(EntryPoint::cudnnBackendExecute);
#define CUDNN_FASTPATH_BIT(exported, ...) | bit(EntryPoint::exported)
  constexpr std::uint64_t kCudnnNames = bit(EntryPoint::cudnnSetStream)
      CUDNN_FASTPATH_HANDLE_ENTRY_POINTS(CUDNN_FASTPATH_BIT) CUDNN_FASTPATH_BACKEND_ENTRY_POINTS(CUDNN_FASTPATH_BIT);
#undef CUDNN_FASTPATH_BIT
  if (declined & kDeclinedPacks) return false;
  const std::uint64_t cudnn_names = first_word & kCudnnNames;
  return cudnn_names == 0 || (cudnn_names & kPackTaking) == kPackTaking;
}

inline constexpr int kMaxCallers = 128;
extern Caller g_callers[kMaxCallers] __attribute__((visibility("hidden")));
extern std::atomic<int> g_caller_count __attribute__((visibility("hidden")));

// The entry the calling thread found last: most calls come from the object the previous one came
// from, and cuDNN's own libraries (which call the backend API too) would otherwise sit in front of
// it in the scan. __thread, initial-exec: one %fs-relative load (see counters.h's t_counters).
extern __thread Caller* t_last_caller __attribute__((visibility("hidden"), tls_model("initial-exec")));

// One unsigned compare (an address below begin wraps to a large offset): one branch on every
// entry point's steady path, where two let the compiler put the second out of line.
inline bool contains(const Caller& c, std::uintptr_t address) noexcept {
  const std::uintptr_t begin = c.begin.load(std::memory_order_relaxed);
  return address - begin < c.end.load(std::memory_order_relaxed) - begin;
}

// The entry whose object contains `address`, if that object was seen calling before. The thread's
// last entry is the expected answer, so that the compiler keeps each entry point's steady path one
// straight run with the scan after it (inline still: a library's calls inside the program's, cuBLAS
// running its cuBLASLt matmul, alternate the two entries, and a call to the scan costs them more).
inline Caller* known_caller(std::uintptr_t address) noexcept {
  // An entry is never changed once ready, so the thread's last one needs no second look at `ready`.
  if (Caller* last = t_last_caller; __builtin_expect(last != nullptr && contains(*last, address), 1)) return last;
  // Acquire, and acquire on `ready`: an entry's fields are read after its publication.
  const int count = g_caller_count.load(std::memory_order_acquire);
  for (int i = 0; i < count && i < kMaxCallers; ++i) {
    Caller& c = g_callers[i];
    if (contains(c, address) && c.ready.load(std::memory_order_acquire)) return t_last_caller = &c;
  }
  return nullptr;
}

// Whether a call from `c` may be handed a proxy variant pack: not from cuDNN itself (a libcudnn*
// object, whose own calls are passed through untouched), and not from a dlsym caller that may
// hold a pack-taking function of cuDNN's own.
inline bool proxies_for(const Caller& c) noexcept {
  return !c.in_cudnn.load(std::memory_order_relaxed) &&
         dlsym_allows_proxies(c.dlsym_names_taken[0].load(std::memory_order_relaxed),
                              c.dlsym_declined.load(std::memory_order_relaxed));
}

// Everything but a known caller whose binding is already published.
CUDNN_FASTPATH_COLD const Binding& binding_for_new_caller(Library library, const void* caller, bool* proxies) noexcept;

// The library `caller` (a return address) reaches for `library`, and the entry of `caller`'s
// object that gave it (null for a caller not yet known, whose binding was made now: a gated call
// asks the entry again, programs_call, without a second lookup); when `proxies` is given, whether
// `caller` may be handed proxy variant packs (proxies_for: asked only by the creation of a
// descriptor, not by every forwarded call). Never fails: a library that cannot be found gives a
// binding whose pointers are null (and one message, once).
struct Reach {
  const Binding& binding;
  const Caller* caller;
};
// Inline wherever it is called (every entry's first act): out of line, which GCC chooses as the file
// around it grows, it costs a call and its register saves (count-process gemm_grow +37).
[[gnu::always_inline]] inline Reach reach_for(Library library, const void* caller, bool* proxies = nullptr) noexcept {
  if (Caller* c = known_caller(reinterpret_cast<std::uintptr_t>(caller))) {
    // Acquire: pairs with the CAS that published the binding, so its contents come with it.
    if (const Binding* b = c->bindings[static_cast<int>(library)].load(std::memory_order_acquire)) {
      if (proxies != nullptr) *proxies = proxies_for(*c);
      return {*b, c};
    }
  }
  return {binding_for_new_caller(library, caller, proxies), nullptr};
}
// reach_for()'s binding alone.
inline const Binding& binding_for(Library library, const void* caller, bool* proxies = nullptr) noexcept {
  return reach_for(library, caller, proxies).binding;
}

// The entry of the object containing `caller`, made if need be (pinning the object); nullptr
// outside any object or when the array is full. Calls the loader the first time.
Caller* caller_entry(const void* caller) noexcept;

// Makes `binding` the one `c` reaches for `library`, unless it already has one. Returns the one
// it has now.
const Binding* adopt_binding(Caller& c, Library library, const Binding* binding) noexcept;

// Makes `replacement` the binding `c` reaches for `library` if it is still `expected` (bindings are
// immutable and never freed: a reader of the old one reads a valid binding). Returns the one `c`
// has now.
const Binding* replace_binding(Caller& c, Library library, const Binding* expected, const Binding* replacement) noexcept;

}  // namespace cudnn_fastpath::shim
