// Which object a call came from, and the bindings found for it: binding_for() and
// called_from_cudnn() of real_symbols.h.
//
// The objects seen calling are kept in a fixed array, each with its address range and one binding
// pointer per library, all published with atomics: a lookup is a scan of a few ranges, no loader
// call and no lock. A caller's object is pinned once resolved (resolve.cpp), so its range never
// comes to mean another object.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>

#include "shim/loaded_objects.h"
#include "shim/real_symbols.h"
#include "shim/resolve.h"

namespace cudnn_fastpath::shim {
namespace {

constexpr int kLibraryCount = static_cast<int>(Library::kCount);

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

constexpr int kMaxCallers = 128;
Caller g_callers[kMaxCallers];
std::atomic<int> g_caller_count{0};

// For callers that found no entry (code outside any object, or more objects than entries): the
// process-wide answer, resolved without a caller's scope.
std::atomic<const Binding*> g_anonymous[kLibraryCount]{};

constexpr std::uintptr_t kPage = 4096;

Caller* find(std::uintptr_t address) {
  const int count = std::min(g_caller_count.load(std::memory_order_acquire), kMaxCallers);
  for (int i = 0; i < count; ++i) {
    Caller& c = g_callers[i];
    if (!c.ready.load(std::memory_order_acquire)) continue;
    if (address >= c.begin.load(std::memory_order_relaxed) && address < c.end.load(std::memory_order_relaxed))
      return &c;
  }
  return nullptr;
}

// A new entry for the object containing `address` (or its page, outside any object). nullptr when
// the array is full. Two threads may add the same object: the first entry found wins lookups.
Caller* add(std::uintptr_t address) {
  LoadedObject object;
  const bool in_object = object_containing(address, object);
  if (!in_object) {
    object = LoadedObject{};
    object.begin = address & ~(kPage - 1);
    object.end = object.begin + kPage;
  }
  // The count stops growing once the array is full (only racing adds pass the bound, by one each).
  if (g_caller_count.load(std::memory_order_relaxed) >= kMaxCallers) return nullptr;
  const int index = g_caller_count.fetch_add(1, std::memory_order_relaxed);
  if (index >= kMaxCallers) return nullptr;
  Caller& c = g_callers[index];
  c.object = object;
  c.begin.store(object.begin, std::memory_order_relaxed);
  c.end.store(object.end, std::memory_order_relaxed);
  const char* name = base_name(object.path);
  c.in_cudnn.store(in_object && std::strncmp(name, "libcudnn", 8) == 0 && !object.is_shim,
                   std::memory_order_relaxed);
  c.ready.store(true, std::memory_order_release);
  return &c;
}

Caller* caller_entry(const void* caller) {
  const auto address = reinterpret_cast<std::uintptr_t>(caller);
  if (Caller* c = find(address)) return c;
  return add(address);
}

const Binding& bound(std::atomic<const Binding*>& slot, Library library, const LoadedObject* object) {
  // Acquire: pairs with the CAS below, so the binding's contents are visible with its pointer.
  if (const Binding* b = slot.load(std::memory_order_acquire)) return *b;
  const Binding* resolved = resolve(library, object);  // loader calls, no lock held
  const Binding* expected = nullptr;
  if (!slot.compare_exchange_strong(expected, resolved, std::memory_order_acq_rel, std::memory_order_acquire))
    return *expected;  // another thread resolved it first: the same answer
  return *resolved;
}

}  // namespace

const Binding& binding_for(Library library, const void* caller) noexcept {
  bool in_cudnn = false;
  return binding_for(library, caller, in_cudnn);
}

const Binding& binding_for(Library library, const void* caller, bool& caller_in_cudnn) noexcept {
  const int index = static_cast<int>(library);
  Caller* c = caller_entry(caller);
  caller_in_cudnn = c != nullptr && c->in_cudnn.load(std::memory_order_relaxed);
  // Outside any object, or no room left: nothing to learn from the caller's scope.
  if (c == nullptr || (!c->object.is_main && c->object.path[0] == '\0'))
    return bound(g_anonymous[index], library, nullptr);
  return bound(c->bindings[index], library, &c->object);
}

bool called_from_cudnn(const void* caller) noexcept {
  const Caller* c = caller_entry(caller);
  return c != nullptr && c->in_cudnn.load(std::memory_order_relaxed);
}

}  // namespace cudnn_fastpath::shim
