// The proxy variant packs the shim hands out in place of real ones: what a proxy holds, the pool
// they come from, and the one a thread keeps for its next pack.
#pragma once

#include <cudnn.h>

#include <atomic>
#include <cstdint>

#include "packs/pack_cache.h"
#include "packs/pack_contents.h"
#include "packs/proxy_pool.h"
#include "shim/libraries/real_symbols.h"

namespace cudnn_fastpath::shim {

using PackCache = packs::PackCache<16, 16>;  // 256 packs; a lookup compares at most 16 hashes

// 512 bytes, aligned: the header and the recorded counts fill the first line, up to four tensors
// the second, and finding a proxy from its address takes a mask, not a division.
struct alignas(64) Proxy {
  enum class State : std::uint8_t {
    kFree,          // not handed out (never used, destroyed, or kept as a thread's spare)
    kRecording,     // created, sets recorded; not finalized
    kFinalized,     // `pack` is a finalized real pack (leased from the cache, or private)
    kMaterialized,  // `pack` is this proxy's own real pack; every call is forwarded to it
  };
  // Relaxed: a proxy's uses are ordered by the program (one thread at a time, as for any
  // descriptor) and its reuse by the pool's acquire and release, or by its staying on one thread
  // as that thread's spare. Atomic so that a program that uses a destroyed descriptor on another
  // thread reads a defined value.
  std::atomic<State> state_word;
  bool private_pack;               // `pack` is this proxy's alone (destroyed with it)
  bool uncached;                   // made while the cache backed off: its finalize inserts nothing
  const Binding* library;          // the cuDNN the proxy was created through
  cudnnBackendDescriptor_t pack;   // the real pack, once there is one (finalized and null: deferred)
  PackCache::Lease lease;          // the cache entry it holds, if finalized from the cache
  packs::PackContents recorded;

  State state() const noexcept { return state_word.load(std::memory_order_relaxed); }
  void set_state(State s) noexcept { state_word.store(s, std::memory_order_relaxed); }
};
static_assert(sizeof(Proxy) == 512, "a proxy is a power of two: see above");

using ProxyPool = packs::ProxyPool<Proxy, 1024>;  // about 512 KiB of zero pages until used
extern ProxyPool g_proxies __attribute__((visibility("hidden")));

// The calling thread's spare proxy (a destroyed one kept for its next pack), and whether its exit
// hook is set, which returns the spare to the pool. __thread, initial-exec: see counters.h.
enum class SpareState : std::uint8_t { kNoHook, kHooked, kExited };
extern __thread Proxy* t_spare_proxy __attribute__((visibility("hidden"), tls_model("initial-exec")));
extern __thread SpareState t_spare_state __attribute__((visibility("hidden"), tls_model("initial-exec")));

// Sets the calling thread's exit hook; false once it has exited or if no hook can be set.
bool hook_thread_exit() noexcept;

// The live proxy `descriptor` names, or nullptr: a foreign descriptor, or a destroyed proxy (tell
// them apart with is_proxy_address()). Reads no memory the shim did not hand out.
inline Proxy* live_proxy(const void* descriptor) noexcept {
  Proxy* p = g_proxies.at(descriptor);
  return p != nullptr && p->state() != Proxy::State::kFree ? p : nullptr;
}

// Whether `descriptor` lies in the pool at all, live or not.
inline bool is_proxy_address(const void* descriptor) noexcept { return g_proxies.owns(descriptor); }

// A proxy set up for recording through `library`: the thread's spare if it has one, else one from
// the pool; nullptr when none is left (the pack is then a real one).
inline Proxy* make_proxy(const Binding& library) noexcept {
  Proxy* p = t_spare_proxy;
  if (p != nullptr) {
    t_spare_proxy = nullptr;
  } else {
    // The thread's own TLS address spreads threads over the pool's words.
    p = g_proxies.allocate(static_cast<std::size_t>(reinterpret_cast<std::uintptr_t>(&t_spare_proxy) >> 7));
    if (p == nullptr) return nullptr;
  }
  p->private_pack = false;
  p->uncached = false;
  p->library = &library;
  p->pack = nullptr;
  p->lease = {};
  p->recorded.clear();
  p->set_state(Proxy::State::kRecording);
  return p;
}

// A destroyed proxy (its pack already given back): kept as the thread's spare if it has none, else
// returned to the pool.
inline void give_back_proxy(Proxy* p) noexcept {
  p->set_state(Proxy::State::kFree);
  if (t_spare_proxy == nullptr && (t_spare_state == SpareState::kHooked || hook_thread_exit())) {
    t_spare_proxy = p;
    return;
  }
  g_proxies.release(p);
}

}  // namespace cudnn_fastpath::shim
