// Which object a call came from, and the bindings found for it: the slow half of binding_for()
// (callers.h).
//
// A caller's object is pinned when it gets an entry, so its range never comes to mean another
// object: an entry, and the bindings found for it, are never taken back.
#include "shim/libraries/callers.h"

#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>

#include "shim/libraries/loaded_objects.h"
#include "shim/libraries/real_symbols.h"
#include "shim/libraries/resolve.h"

namespace cudnn_fastpath::shim {

Caller g_callers[kMaxCallers];
std::atomic<int> g_caller_count{0};
__thread Caller* t_last_caller __attribute__((tls_model("initial-exec"))) = nullptr;

namespace {

// For callers that found no entry (code outside any object, or more objects than entries): the
// process-wide answer, resolved without a caller's scope.
std::atomic<const Binding*> g_anonymous[kLibraryCount]{};

constexpr std::uintptr_t kPage = 4096;

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
  // The program and copies of the shim are never unloaded; a library is kept loaded from now on.
  if (in_object && !object.is_main && !object.is_shim && object.path[0] != '\0')
    if (void* handle = dlopen(object.path, RTLD_NOLOAD | RTLD_LAZY | RTLD_NODELETE)) dlclose(handle);
  const int index = g_caller_count.fetch_add(1, std::memory_order_relaxed);
  if (index >= kMaxCallers) return nullptr;
  Caller& c = g_callers[index];
  c.object = object;
  c.begin.store(object.begin, std::memory_order_relaxed);
  c.end.store(object.end, std::memory_order_relaxed);
  const char* name = base_name(object.path);
  c.in_cudnn.store(in_object && std::strncmp(name, "libcudnn", 8) == 0 && !object.is_shim,
                   std::memory_order_relaxed);
  bool library = false;
  for (int l = 0; l < kLibraryCount; ++l)
    library = library || (in_object && !object.is_shim && is_library_file(static_cast<Library>(l), object.path));
  c.in_library.store(library, std::memory_order_relaxed);
  c.ready.store(true, std::memory_order_release);
  return &c;
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

Caller* caller_entry(const void* caller) noexcept {
  const auto address = reinterpret_cast<std::uintptr_t>(caller);
  if (Caller* c = known_caller(address)) return c;
  return add(address);
}

const Binding* adopt_binding(Caller& c, Library library, const Binding* binding) noexcept {
  std::atomic<const Binding*>& slot = c.bindings[static_cast<int>(library)];
  const Binding* expected = nullptr;
  // acq_rel as in bound(): the winner publishes its binding, a loser reads the one there.
  if (slot.compare_exchange_strong(expected, binding, std::memory_order_acq_rel, std::memory_order_acquire))
    return binding;
  return expected;
}

const Binding* replace_binding(Caller& c, Library library, const Binding* expected, const Binding* replacement) noexcept {
  // acq_rel as in bound(): readers that load the new pointer see its contents.
  c.bindings[static_cast<int>(library)].compare_exchange_strong(expected, replacement, std::memory_order_acq_rel,
                                                                std::memory_order_acquire);
  return c.bindings[static_cast<int>(library)].load(std::memory_order_acquire);
}

const Binding& binding_for_new_caller(Library library, const void* caller, bool* proxies) noexcept {
  const int index = static_cast<int>(library);
  Caller* c = caller_entry(caller);
  if (proxies != nullptr) *proxies = c == nullptr || proxies_for(*c);
  // Outside any object, or no room left: nothing to learn from the caller's scope.
  if (c == nullptr || (!c->object.is_main && c->object.path[0] == '\0'))
    return bound(g_anonymous[index], library, nullptr);
  return bound(c->bindings[index], library, &c->object);
}

}  // namespace cudnn_fastpath::shim
