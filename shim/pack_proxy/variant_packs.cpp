// The backend descriptor API under the shim: variant packs as proxies over a cache of real ones.
//
// A CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR that a program creates (not cuDNN itself) is a proxy
// (packs/proxy_pool.h): creating it calls nothing, and its sets of UNIQUE_IDS, DATA_POINTERS and
// WORKSPACE are recorded. Its finalize looks the recorded contents up in the cache of finalized real
// packs (packs/pack_cache.h): a hit leases the cached pack; a miss builds one (create, set,
// finalize) and returns cuDNN's status, so an error surfaces at the same call as without the shim;
// while graphs replay, a miss of a form cuDNN finalized before (the same uids and counts, other
// pointers) builds nothing until a call needs the pack (g_finalized_forms below).
// Execute and the CUDA-graph calls receive the real pack. Anything a proxy does not answer itself
// (another attribute, an odd type or count, a set after finalize, a second finalize, a get before
// finalize, an execute before it) turns it into a private real pack on the spot, replaying what it
// recorded, and the call is forwarded: cuDNN gives its own answer, and from then on every call on it
// is forwarded. One caveat: a set the proxy recorded (type and count checked as cuDNN checks them)
// but cuDNN would have refused could only fail at the finalize that replays it.
//
// A proxy is used by one thread at a time, like any cuDNN descriptor (a program that executes one
// pack from several threads only reads it); the cache itself is shared and lock-free.
//
// The steady state is what counts here: inside a framework, the program's own work between two
// ops pushes the shim's code and data out of the caches, so a proxied op costs roughly one memory
// access per cache line it touches. A thread keeps the proxy it destroyed for its next pack
// (proxy.h), a proxy's header and a cache entry's are one line each, the set a finalize will
// search is fetched when the last array is set, and whatever a steady op does not run is kept out
// of line, in the cold text section.
#include "shim/pack_proxy/variant_packs.h"

#include <atomic>
#include <cstdint>

#include "packs/pack_contents.h"
#include "shim/engine/replay_thread.h"
#include "shim/families/backend_replay.h"
#include "shim/libraries/callers.h"
#include "shim/libraries/mode.h"
#include "shim/pack_proxy/proxy.h"
#include "shim/process/code_layout.h"
#include "shim/process/counters.h"
#include "shim/process/lifecycle.h"

namespace cudnn_fastpath::shim {
namespace {

using packs::PackContents;
using Cache = PackCache;

Cache g_cache;
// In a forked child the cached packs belong to the parent's cuDNN state.
void forget_in_child() { g_cache.forget_in_child(); }
ForkChildReset g_fork_reset{forget_in_child};  // registered at the first proxy, before anything is cached

bool counting(std::uint32_t m) { return (m & mode::kCounting) != 0; }

// The calling thread's admission states (replay/admission.h), or null (a thread without a replay
// block: the cache is used as before).
Admissions* thread_admissions() noexcept {
  ReplayThread* t = t_replay;
  return t != nullptr ? &t->admissions : nullptr;
}

std::uintptr_t library_id(const Binding* library) { return reinterpret_cast<std::uintptr_t>(library); }

// Whether a set is one the proxy records: the attributes it understands, with the types and
// counts cuDNN accepts for them. Anything else goes to a real pack.
bool record(PackContents& contents, cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type,
            int64_t count, const void* elements) {
  if (elements == nullptr || count < 1 || count > PackContents::kMaxTensors) return false;
  switch (name) {
    case CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS:
      if (type != CUDNN_TYPE_INT64) return false;
      contents.set_uids(static_cast<const std::int64_t*>(elements), static_cast<std::int32_t>(count));
      return true;
    case CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS:
      if (type != CUDNN_TYPE_VOID_PTR) return false;
      contents.set_pointers(static_cast<void* const*>(elements), static_cast<std::int32_t>(count));
      return true;
    case CUDNN_ATTR_VARIANT_PACK_WORKSPACE:
      if (type != CUDNN_TYPE_VOID_PTR || count != 1) return false;
      contents.set_workspace(*static_cast<void* const*>(elements));
      return true;
    default:
      return false;
  }
}

// The recorded sets, replayed on a real pack in the order uids, pointers, workspace.
CUDNN_FASTPATH_COLD cudnnStatus_t replay(const RealSymbols& real, cudnnBackendDescriptor_t pack, const PackContents& c) {
  cudnnStatus_t status = CUDNN_STATUS_SUCCESS;
  std::int64_t uids[PackContents::kMaxTensors];
  void* pointers[PackContents::kMaxTensors];
  c.copy_uids(uids);
  c.copy_pointers(pointers);
  if (c.uid_count > 0)
    status = real.cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64,
                                           c.uid_count, uids);
  if (status == CUDNN_STATUS_SUCCESS && c.pointer_count > 0)
    status = real.cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR,
                                           c.pointer_count, pointers);
  if (status == CUDNN_STATUS_SUCCESS && c.has_workspace)
    status = real.cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1,
                                           &c.workspace);
  return status;
}

// A real pack with these contents, finalized if asked. `made` is whatever pack was created (so
// that a failure leaves cuDNN's own half-built pack behind for the proxy), or null.
CUDNN_FASTPATH_COLD cudnnStatus_t build(const RealSymbols& real, const PackContents& c, bool finalize, cudnnBackendDescriptor_t& made) {
  made = nullptr;
  cudnnStatus_t status = real.cudnnBackendCreateDescriptor(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, &made);
  if (status != CUDNN_STATUS_SUCCESS) {
    made = nullptr;
    return status;
  }
  status = replay(real, made, c);
  if (status == CUDNN_STATUS_SUCCESS && finalize) status = real.cudnnBackendFinalize(made);
  return status;
}

// Gives back whatever real pack a finalized proxy holds.
CUDNN_FASTPATH_COLD void drop_pack(Proxy& p) {
  if (p.lease) g_cache.release(p.lease);
  else if (p.private_pack && p.pack) p.library->real.cudnnBackendDestroyDescriptor(p.pack);
  p.lease = {};
  p.pack = nullptr;
  p.private_pack = false;
}

// The proxy becomes a private real pack with its recorded contents (finalized if it was).
CUDNN_FASTPATH_COLD cudnnStatus_t materialize(Proxy& p, std::uint32_t m) {
  if (p.state() == Proxy::State::kMaterialized) return CUDNN_STATUS_SUCCESS;
  const bool finalized = p.state() == Proxy::State::kFinalized;
  cudnnBackendDescriptor_t made = nullptr;
  const cudnnStatus_t status = build(p.library->real, p.recorded, finalized, made);
  if (made == nullptr) return status;  // cuDNN could not even create one: its answer
  drop_pack(p);
  p.pack = made;
  p.private_pack = true;
  p.set_state(Proxy::State::kMaterialized);
  if (counting(m)) count(Counter::packs_materialized);
  return CUDNN_STATUS_SUCCESS;
}

// The forms of pack cuDNN has finalized (PackContents::form: everything a finalize can check but
// the pointers' values). While graphs replay, a finalize that misses the cache with contents of such
// a form builds nothing: the execute of fresh tensors is a launch of its shape's graph (or of a
// graph by pointer), which needs no real pack, and building one costs some 3 us (cuDNN's create,
// three sets, finalize, and the destroy of the pack it evicts). The first call that does run cuDNN's
// execute (direct, or captured) builds it then (build_deferred). Direct-mapped by the digest's top
// bits, a slot holding the last form stored there. Relaxed: a stale or overwritten slot only means a
// finalize builds its pack at once, as without the table.
constexpr int kForms = 64;
std::atomic<std::uint64_t> g_finalized_forms[kForms];
std::atomic<std::uint64_t>& form_slot(std::uint64_t form) { return g_finalized_forms[form >> 58]; }

// A real pack just built for `p`'s contents, into the cache unless `p` is kept out of it: the lease,
// or none (every entry of the set is leased, or uncached: the pack is then `p`'s own).
Cache::Lease cache_built(const Proxy& p, cudnnBackendDescriptor_t made, std::uint32_t m) {
  if (counting(m)) count(Counter::pack_misses);
  if (p.uncached) return {};
  Cache::Evicted evicted;
  Cache::Lease lease = g_cache.insert(p.recorded, library_id(p.library), made, evicted);
  if (evicted.pack) {
    reinterpret_cast<const Binding*>(evicted.library)->real.cudnnBackendDestroyDescriptor(evicted.pack);
    if (counting(m)) count(Counter::pack_evictions);
    if (Admissions* admissions = thread_admissions(); admissions && !evicted.used) admissions->waste(Admitted::kPacks);
  }
  return lease;
}

// A finalize whose contents the cache does not hold: deferred (above), or a real pack is built, and
// cached.
CUDNN_FASTPATH_COLD cudnnStatus_t finalize_miss(Proxy& p, std::uint32_t m) {
  const std::uint64_t form = p.recorded.form(library_id(p.library));
  if ((m & mode::kGraphs) && form_slot(form).load(std::memory_order_relaxed) == form) {
    p.set_state(Proxy::State::kFinalized);  // its pack null, no lease (make_proxy)
    if (counting(m)) count(Counter::packs_deferred);
    return CUDNN_STATUS_SUCCESS;
  }
  cudnnBackendDescriptor_t made = nullptr;
  const cudnnStatus_t status = build(p.library->real, p.recorded, true, made);
  if (status != CUDNN_STATUS_SUCCESS) {
    // cuDNN refused these contents: the proxy is that refused pack from now on.
    if (made) {
      p.pack = made;
      p.private_pack = true;
      p.set_state(Proxy::State::kMaterialized);
      if (counting(m)) count(Counter::packs_materialized);
    }
    return status;
  }
  form_slot(form).store(form, std::memory_order_relaxed);
  p.lease = cache_built(p, made, m);
  p.pack = made;
  p.private_pack = !p.lease;  // every entry of its set is leased: kept to itself
  p.set_state(Proxy::State::kFinalized);
  return CUDNN_STATUS_SUCCESS;
}

// The real pack of a deferred proxy, for the first call that runs cuDNN with it: leased from the
// cache if another proxy's contents put it there since, else built (and cached) as its finalize
// would have. cuDNN refusing it now (it accepted the form before) is that call's answer, and the
// proxy stays deferred. The program may execute one pack from several threads at once (reading it
// only): the pack is published by a CAS on the proxy's word (acq_rel, of which the release is what
// counts: the pack's making is seen by whoever takes it; acquire on failure: the loser reads the
// winner's pack), a thread that loses
// gives its own back, and only the winner caches what it built and keeps the lease (read only when
// the proxy is destroyed, after every call on it).
CUDNN_FASTPATH_COLD cudnnStatus_t build_deferred(Proxy& p, cudnnBackendDescriptor_t* out) noexcept {
  Cache::Lease lease = g_cache.acquire(p.recorded, library_id(p.library));
  cudnnBackendDescriptor_t made = lease ? lease.pack : nullptr;
  if (!lease) {
    const cudnnStatus_t status = build(p.library->real, p.recorded, true, made);
    if (status != CUDNN_STATUS_SUCCESS) {
      if (made) p.library->real.cudnnBackendDestroyDescriptor(made);
      return status;
    }
  }
  cudnnBackendDescriptor_t expected = nullptr;
  if (!__atomic_compare_exchange_n(&p.pack, &expected, made, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
    if (lease) g_cache.release(lease);
    else p.library->real.cudnnBackendDestroyDescriptor(made);
    *out = expected;
    return CUDNN_STATUS_SUCCESS;
  }
  if (!lease) lease = cache_built(p, made, current_mode());
  p.lease = lease;
  p.private_pack = !lease;
  *out = made;
  return CUDNN_STATUS_SUCCESS;
}

CUDNN_FASTPATH_HOT cudnnStatus_t finalize_proxy(Proxy& p, std::uint32_t m) {
  if (Cache::Lease lease = g_cache.acquire(p.recorded, library_id(p.library))) {
    p.lease = lease;
    p.pack = lease.pack;
    p.set_state(Proxy::State::kFinalized);
    if (counting(m)) count(Counter::pack_hits);
    if (Admissions* admissions = thread_admissions()) admissions->hit(Admitted::kPacks);
    return CUDNN_STATUS_SUCCESS;
  }
  return finalize_miss(p, m);
}

// The real pack of a finalized proxy (backend_replay.h's RealPackOf), built now if its finalize
// deferred it.
cudnnStatus_t finalized_real_pack(void* proxy, cudnnBackendDescriptor_t* pack) noexcept {
  Proxy& p = *static_cast<Proxy*>(proxy);
  // Acquire: a pack another thread's call built for a deferred proxy (build_deferred's CAS).
  *pack = __atomic_load_n(&p.pack, __ATOMIC_ACQUIRE);
  return *pack != nullptr ? CUDNN_STATUS_SUCCESS : build_deferred(p, pack);
}

// The real pack a call should get for `descriptor`: a proxy's (materialized first if it has none
// yet, so that cuDNN answers for an unfinalized pack), or the descriptor itself.
cudnnStatus_t real_pack_of(Proxy& p, std::uint32_t m, cudnnBackendDescriptor_t& pack) {
  if (p.state() == Proxy::State::kRecording) {
    const cudnnStatus_t status = materialize(p, m);
    if (status != CUDNN_STATUS_SUCCESS) return status;
  }
  if (p.state() == Proxy::State::kFinalized) return finalized_real_pack(&p, &pack);
  pack = p.pack;
  return CUDNN_STATUS_SUCCESS;
}

// What every general path below does first. A follower passes the call to the leading copy; a
// descriptor that is not a live proxy goes to cuDNN, and one that was a proxy gets BAD_PARAM (what
// cuDNN answers for a destroyed descriptor). Returns the live proxy the call is about, or nullptr
// with `status` set to the call's answer.
template <auto kLeaderCall, auto kRealCall, typename... Args>
Proxy* proxy_or_forward(cudnnStatus_t& status, std::uint32_t m, const void* caller,
                        cudnnBackendDescriptor_t descriptor, Args... args) noexcept {
  if (m & mode::kFollower) {
    status = (leader().*kLeaderCall)(caller, descriptor, args...);
    return nullptr;
  }
  if (Proxy* p = live_proxy(descriptor)) return p;
  if (is_proxy_address(descriptor)) {
    status = CUDNN_STATUS_BAD_PARAM;
    return nullptr;
  }
  const auto real = binding_for(Library::kCudnn, caller).real.*kRealCall;
  status = real ? real(descriptor, args...) : CUDNN_STATUS_NOT_INITIALIZED;
  return nullptr;
}

}  // namespace

CUDNN_FASTPATH_HOT cudnnStatus_t backend_create_descriptor(const void* caller, cudnnBackendDescriptorType_t type,
                                                           cudnnBackendDescriptor_t* descriptor) noexcept {
  const std::uint32_t m = current_mode();
  if (__builtin_expect(m & mode::kFollower, 0)) return leader().backend_create_descriptor(caller, type, descriptor);
  bool proxies = false;
  const Binding& library = binding_for(Library::kCudnn, caller, &proxies);
  const RealSymbols& real = library.real;
  if (real.cudnnBackendCreateDescriptor == nullptr) return CUDNN_STATUS_NOT_INITIALIZED;
  if (type != CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR || descriptor == nullptr || !(m & mode::kCaching) ||
      !proxies || real.cudnnBackendFinalize == nullptr)
    return real.cudnnBackendCreateDescriptor(type, descriptor);
  // The cache backing off (its packs were evicted before they were used again): a real pack, as
  // with the cache switched off, but for a probe now and then; still a proxy, kept out of the cache,
  // while the thread relocates executes (fresh activations: every pack new, its execute a launch of
  // its shape's graph, which needs the contents a proxy records).
  bool uncached = false;
  if (ReplayThread* t = replay_thread();
      t != nullptr && !t->admissions.admit(Admitted::kPacks)) {
    if (counting(m)) count(Counter::packs_declined);
    if (!(m & mode::kGraphs) || t->relocating[static_cast<int>(Admitted::backend)] == 0)
      return real.cudnnBackendCreateDescriptor(type, descriptor);
    uncached = true;
  }
  Proxy* p = make_proxy(library);
  if (p == nullptr) return real.cudnnBackendCreateDescriptor(type, descriptor);
  p->uncached = uncached;
  note_cudnn_call();
  g_fork_reset.register_once();
  if (counting(m)) count(Counter::packs_proxied);
  *descriptor = p;
  return CUDNN_STATUS_SUCCESS;
}

// Gives back whatever a destroyed proxy holds, and the proxy itself.
static cudnnStatus_t destroy_proxy(Proxy& p) noexcept {
  cudnnStatus_t status = CUDNN_STATUS_SUCCESS;
  if (p.lease) g_cache.release(p.lease);
  else if (p.private_pack && p.pack) status = p.library->real.cudnnBackendDestroyDescriptor(p.pack);
  p.lease = {};
  p.pack = nullptr;
  p.private_pack = false;
  give_back_proxy(&p);
  return status;
}

static CUDNN_FASTPATH_COLD cudnnStatus_t backend_destroy_descriptor_general(const void* caller,
                                                                         cudnnBackendDescriptor_t descriptor) noexcept {
  const std::uint32_t m = current_mode();
  // A plan's graphs go before it does: a new plan at its address must never meet them.
  if (!(m & (mode::kFollower | mode::kDisabled)) && live_proxy(descriptor) == nullptr) forget_graphs_of_plan(descriptor);
  cudnnStatus_t status;
  Proxy* p = proxy_or_forward<&Dispatch::backend_destroy_descriptor, &RealSymbols::cudnnBackendDestroyDescriptor>(
      status, m, caller, descriptor);
  return p ? destroy_proxy(*p) : status;
}

cudnnStatus_t backend_initialize(const void* caller, cudnnBackendDescriptor_t descriptor) noexcept {
  const std::uint32_t m = current_mode();
  cudnnStatus_t status;
  Proxy* p = proxy_or_forward<&Dispatch::backend_initialize, &RealSymbols::cudnnBackendInitialize>(status, m, caller,
                                                                                                      descriptor);
  if (p == nullptr) return status;
  status = materialize(*p, m);
  if (status != CUDNN_STATUS_SUCCESS) return status;
  return p->library->real.cudnnBackendInitialize(p->pack);
}

static CUDNN_FASTPATH_COLD cudnnStatus_t backend_finalize_general(const void* caller,
                                                               cudnnBackendDescriptor_t descriptor) noexcept {
  const std::uint32_t m = current_mode();
  cudnnStatus_t status;
  Proxy* p = proxy_or_forward<&Dispatch::backend_finalize, &RealSymbols::cudnnBackendFinalize>(status, m, caller,
                                                                                                  descriptor);
  if (p == nullptr) return status;
  if (p->state() == Proxy::State::kRecording && p->recorded.complete()) return finalize_proxy(*p, m);
  // Finalized twice, or not all set: cuDNN's own answer, from a real pack in the same state.
  status = materialize(*p, m);
  if (status != CUDNN_STATUS_SUCCESS) return status;
  return p->library->real.cudnnBackendFinalize(p->pack);
}

static CUDNN_FASTPATH_COLD cudnnStatus_t backend_set_attribute_general(const void* caller,
                                                                    cudnnBackendDescriptor_t descriptor,
                                                                    cudnnBackendAttributeName_t name,
                                                                    cudnnBackendAttributeType_t type,
                                                                    int64_t count, const void* elements) noexcept {
  const std::uint32_t m = current_mode();
  cudnnStatus_t status;
  Proxy* p = proxy_or_forward<&Dispatch::backend_set_attribute, &RealSymbols::cudnnBackendSetAttribute>(
      status, m, caller, descriptor, name, type, count, elements);
  if (p == nullptr) {
    // A tensor's uid, type, dimensions and by-value flag, for graph replay (backend_replay.h).
    if (status == CUDNN_STATUS_SUCCESS && is_noted_tensor_attribute(name) && !(m & (mode::kFollower | mode::kDisabled)))
      note_tensor_attribute(descriptor, name, type, count, elements);
    return status;
  }
  if (p->state() == Proxy::State::kRecording && record(p->recorded, name, type, count, elements))
    return CUDNN_STATUS_SUCCESS;
  status = materialize(*p, m);
  if (status != CUDNN_STATUS_SUCCESS) return status;
  return p->library->real.cudnnBackendSetAttribute(p->pack, name, type, count, elements);
}

cudnnStatus_t backend_get_attribute(const void* caller, cudnnBackendDescriptor_t descriptor,
                                    cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type,
                                    int64_t requested, int64_t* count, void* elements) noexcept {
  const std::uint32_t m = current_mode();
  cudnnStatus_t status;
  Proxy* p = proxy_or_forward<&Dispatch::backend_get_attribute, &RealSymbols::cudnnBackendGetAttribute>(
      status, m, caller, descriptor, name, type, requested, count, elements);
  if (p == nullptr) return status;
  cudnnBackendDescriptor_t pack = nullptr;
  status = real_pack_of(*p, m, pack);
  if (status != CUDNN_STATUS_SUCCESS) return status;
  return p->library->real.cudnnBackendGetAttribute(pack, name, type, requested, count, elements);
}

namespace {

// Execute and the CUDA-graph calls: a follower passes the call on; otherwise the real pack goes in
// place of a proxy, the rest unchanged. `missing` is the answer of a cuDNN without the function.
template <auto kLeaderCall, auto kRealCall, typename... Args>
cudnnStatus_t with_real_pack(cudnnStatus_t missing, const void* caller, cudnnHandle_t handle,
                             cudnnBackendDescriptor_t plan, cudnnBackendDescriptor_t pack, Args... args) noexcept {
  const std::uint32_t m = current_mode();
  if (m & mode::kFollower) return (leader().*kLeaderCall)(caller, handle, plan, pack, args...);
  const RealSymbols* real = nullptr;
  if (Proxy* p = live_proxy(pack)) {
    const cudnnStatus_t status = real_pack_of(*p, m, pack);
    if (status != CUDNN_STATUS_SUCCESS) return status;
    real = &p->library->real;
  } else if (is_proxy_address(pack)) {
    return CUDNN_STATUS_BAD_PARAM;
  } else {
    real = &binding_for(Library::kCudnn, caller).real;
  }
  const auto function = real->*kRealCall;
  return function ? function(handle, plan, pack, args...) : missing;
}

}  // namespace

static CUDNN_FASTPATH_COLD cudnnStatus_t backend_execute_general(const void* caller, cudnnHandle_t handle,
                                                              cudnnBackendDescriptor_t plan,
                                                              cudnnBackendDescriptor_t pack) noexcept {
  return with_real_pack<&Dispatch::backend_execute, &RealSymbols::cudnnBackendExecute>(
      CUDNN_STATUS_NOT_INITIALIZED, caller, handle, plan, pack);
}

cudnnStatus_t backend_populate_cuda_graph(const void* caller, cudnnHandle_t handle, cudnnBackendDescriptor_t plan,
                                          cudnnBackendDescriptor_t pack, cudaGraph_t graph) noexcept {
  return with_real_pack<&Dispatch::backend_populate_cuda_graph, &RealSymbols::cudnnBackendPopulateCudaGraph>(
      CUDNN_STATUS_NOT_SUPPORTED, caller, handle, plan, pack, graph);
}

cudnnStatus_t backend_update_cuda_graph(const void* caller, cudnnHandle_t handle, cudnnBackendDescriptor_t plan,
                                        cudnnBackendDescriptor_t pack, cudaGraph_t graph) noexcept {
  return with_real_pack<&Dispatch::backend_update_cuda_graph, &RealSymbols::cudnnBackendUpdateCudaGraph>(
      CUDNN_STATUS_NOT_SUPPORTED, caller, handle, plan, pack, graph);
}

// The steady state, each call on a proxy in the state a steady op finds it in; everything else
// takes the general paths above, which give the same answers for these too.

CUDNN_FASTPATH_HOT cudnnStatus_t backend_set_attribute(const void* caller, cudnnBackendDescriptor_t descriptor,
                                                       cudnnBackendAttributeName_t name,
                                                       cudnnBackendAttributeType_t type, int64_t count,
                                                       const void* elements) noexcept {
  const std::uint32_t m = current_mode();
  Proxy* p = (m & mode::kFollower) ? nullptr : live_proxy(descriptor);
  if (__builtin_expect(p != nullptr && p->state() == Proxy::State::kRecording, 1) &&
      record(p->recorded, name, type, count, elements)) {
    if (name != CUDNN_ATTR_VARIANT_PACK_WORKSPACE && p->recorded.complete())
      g_cache.prefetch(p->recorded, library_id(p->library));  // the finalize comes next
    return CUDNN_STATUS_SUCCESS;
  }
  return backend_set_attribute_general(caller, descriptor, name, type, count, elements);
}

CUDNN_FASTPATH_HOT cudnnStatus_t backend_finalize(const void* caller, cudnnBackendDescriptor_t descriptor) noexcept {
  const std::uint32_t m = current_mode();
  Proxy* p = (m & mode::kFollower) ? nullptr : live_proxy(descriptor);
  if (__builtin_expect(p != nullptr && p->state() == Proxy::State::kRecording, 1) && p->recorded.complete())
    return finalize_proxy(*p, m);
  return backend_finalize_general(caller, descriptor);
}

CUDNN_FASTPATH_HOT cudnnStatus_t backend_destroy_descriptor(const void* caller,
                                                            cudnnBackendDescriptor_t descriptor) noexcept {
  const std::uint32_t m = current_mode();
  Proxy* p = (m & mode::kFollower) ? nullptr : live_proxy(descriptor);
  if (__builtin_expect(p != nullptr && !p->private_pack, 1)) {
    if (p->lease) g_cache.release(p->lease);
    p->lease = {};
    p->pack = nullptr;
    give_back_proxy(p);
    return CUDNN_STATUS_SUCCESS;
  }
  return backend_destroy_descriptor_general(caller, descriptor);
}

CUDNN_FASTPATH_HOT cudnnStatus_t backend_execute(const void* caller, cudnnHandle_t handle,
                                                 cudnnBackendDescriptor_t plan,
                                                 cudnnBackendDescriptor_t pack) noexcept {
  const std::uint32_t m = current_mode();
  Proxy* p = (m & mode::kFollower) ? nullptr : live_proxy(pack);
  if (__builtin_expect(p != nullptr && p->state() == Proxy::State::kFinalized, 1) &&
      p->library->real.cudnnBackendExecute != nullptr) {
    // The proxy knows the pack's contents, which are what the execute's key holds.
    if (m & mode::kGraphs)
      return execute_with_graphs(caller, *p->library, handle, plan, p, finalized_real_pack, p->recorded, m);
    cudnnBackendDescriptor_t real = nullptr;
    const cudnnStatus_t status = finalized_real_pack(p, &real);
    return status == CUDNN_STATUS_SUCCESS ? p->library->real.cudnnBackendExecute(handle, plan, real) : status;
  }
  return backend_execute_general(caller, handle, plan, pack);
}

}  // namespace cudnn_fastpath::shim
