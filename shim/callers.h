// The objects seen calling the shim, each with the bindings found for it (callers.cpp), and
// binding_for(): which library a call reaches.
//
// The objects are kept in a fixed array, each with its address range and one binding pointer per
// library, all published with atomics: the lookup on every forwarding call is a scan of a few
// ranges, inline, with no loader call and no lock.
#pragma once

#include <atomic>
#include <cstdint>

#include "shim/loaded_objects.h"
#include "shim/real_symbols.h"

namespace cudnn_fastpath::shim {

inline constexpr int kLibraryCount = static_cast<int>(Library::kCount);

struct Caller {
  // Written once before `ready` is published (release), read after it (acquire). Atomics so that
  // a scan racing a new entry's fill is well defined; relaxed, the flag orders them.
  std::atomic<std::uintptr_t> begin{0}, end{0};
  std::atomic<bool> ready{false};
  std::atomic<bool> in_cudnn{false};
  // Published with a CAS from null, each library on its own: a first call needing cuDNN and
  // another needing the runtime never overwrite each other's result.
  std::atomic<const Binding*> bindings[kLibraryCount]{};
  LoadedObject object;  // what resolve() needs; written before `ready`
};

inline constexpr int kMaxCallers = 128;
extern Caller g_callers[kMaxCallers] __attribute__((visibility("hidden")));
extern std::atomic<int> g_caller_count __attribute__((visibility("hidden")));

// The entry the calling thread found last: most calls come from the object the previous one came
// from, and cuDNN's own libraries (which call the backend API too) would otherwise sit in front of
// it in the scan. __thread, initial-exec: one %fs-relative load (see counters.h's t_counters).
extern __thread Caller* t_last_caller __attribute__((visibility("hidden"), tls_model("initial-exec")));

inline bool contains(const Caller& c, std::uintptr_t address) noexcept {
  return address >= c.begin.load(std::memory_order_relaxed) && address < c.end.load(std::memory_order_relaxed);
}

// The entry whose object contains `address`, if that object was seen calling before.
inline Caller* known_caller(std::uintptr_t address) noexcept {
  // An entry is never changed once ready, so the thread's last one needs no second look at `ready`.
  if (Caller* last = t_last_caller; last != nullptr && contains(*last, address)) return last;
  // Acquire, and acquire on `ready`: an entry's fields are read after its publication.
  const int count = g_caller_count.load(std::memory_order_acquire);
  for (int i = 0; i < count && i < kMaxCallers; ++i) {
    Caller& c = g_callers[i];
    if (contains(c, address) && c.ready.load(std::memory_order_acquire)) return t_last_caller = &c;
  }
  return nullptr;
}

// Everything but a known caller whose binding is already published.
const Binding& binding_for_new_caller(Library library, const void* caller, bool& caller_in_cudnn) noexcept;

// The library `caller` (a return address) reaches for `library`, and whether `caller` lies inside
// cuDNN itself (a libcudnn* object, whose own calls are passed through untouched). Never fails: a
// library that cannot be found gives a binding whose pointers are null (and one message, once).
inline const Binding& binding_for(Library library, const void* caller, bool& caller_in_cudnn) noexcept {
  if (Caller* c = known_caller(reinterpret_cast<std::uintptr_t>(caller))) {
    // Acquire: pairs with the CAS that published the binding, so its contents come with it.
    if (const Binding* b = c->bindings[static_cast<int>(library)].load(std::memory_order_acquire)) {
      caller_in_cudnn = c->in_cudnn.load(std::memory_order_relaxed);
      return *b;
    }
  }
  return binding_for_new_caller(library, caller, caller_in_cudnn);
}

inline const Binding& binding_for(Library library, const void* caller) noexcept {
  bool in_cudnn = false;
  return binding_for(library, caller, in_cudnn);
}

}  // namespace cudnn_fastpath::shim
