// The backend descriptor API under the shim: variant packs as proxies over a cache of real ones.
//
// A CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR that a program creates (not cuDNN itself) is a proxy
// (packs/proxy_pool.h): creating it calls nothing, and its sets of UNIQUE_IDS, DATA_POINTERS and
// WORKSPACE are recorded. Its finalize looks the recorded contents up in the cache of finalized real
// packs (packs/pack_cache.h): a hit leases the cached pack; a miss builds one (create, set,
// finalize) and returns cuDNN's status, so an error surfaces at the same call as without the shim.
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
// access per cache line it touches. A thread keeps the proxy it destroyed for its next pack (no
// shared bitmap, no locked instruction), a proxy's header and a cache entry's are one line each,
// the set a finalize will search is fetched when the last array is set, and whatever a steady
// op does not run is kept out of line, in the cold text section.
#include "shim/variant_packs.h"

#include <cstdint>

#include "packs/pack_cache.h"
#include "packs/pack_contents.h"
#include "packs/proxy_pool.h"
#include "shim/clock.h"
#include "shim/code_layout.h"
#include "shim/graph_replay.h"
#include "shim/pack_op_samples.h"
#include "shim/process.h"
#include "shim/callers.h"
#include "shim/stats.h"

namespace cudnn_fastpath::shim {
namespace {

using packs::PackContents;
using Cache = packs::PackCache<16, 16>;  // 256 packs; a lookup compares at most 16 hashes

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
  // descriptor) and its reuse by the pool's or the thread block's acquire and release. Atomic so
  // that a program that uses a destroyed descriptor on another thread reads a defined value.
  std::atomic<State> state_word;
  bool private_pack;  // `pack` is this proxy's alone (destroyed with it)
  bool timed;         // statistics: this proxy's own calls are timed, create to destroy
  bool window;        // statistics: this proxy's op is timed, create to destroy (pack_op_samples.h)
  std::uint8_t timed_calls;        // timed: how many calls own_ticks holds (each read a clock pair)
  const Binding* library;          // the cuDNN the proxy was created through
  cudnnBackendDescriptor_t pack;   // the real pack, once there is one
  Cache::Lease lease;              // the cache entry it holds, if finalized from the cache
  std::uint64_t own_ticks;         // timed: the proxy's calls so far; window: its create's tick
  PackContents recorded;

  State state() const noexcept { return state_word.load(std::memory_order_relaxed); }
  void set_state(State s) noexcept { state_word.store(s, std::memory_order_relaxed); }
};
static_assert(sizeof(Proxy) == 512, "a proxy is a power of two: see above");

// 1024 proxies (about 640 KiB of zero pages until used): PyTorch holds one per thread at a time.
// When all are in use, new packs are real ones.
packs::ProxyPool<Proxy, 1024> g_proxies;
Cache g_cache;

// The live proxy `descriptor` names, or nullptr (a foreign descriptor, or a destroyed proxy: tell
// them apart with g_proxies.owns()).
Proxy* live_proxy(const void* descriptor) noexcept {
  Proxy* p = g_proxies.at(descriptor);
  return p != nullptr && p->state() != Proxy::State::kFree ? p : nullptr;
}

std::size_t pool_hint() {
  // The thread's own TLS address: distinct per thread, so threads start at different words.
  return static_cast<std::size_t>(reinterpret_cast<std::uintptr_t>(&t_block) >> 7);
}

// A free proxy: the thread's spare if it has one, else one from the pool; nullptr if none is left.
Proxy* take_proxy(ThreadBlock* block) noexcept {
  if (block != nullptr && block->spare_proxy != nullptr) {
    auto* p = static_cast<Proxy*>(block->spare_proxy);
    block->spare_proxy = nullptr;
    return p;
  }
  return g_proxies.allocate(pool_hint());
}

// A destroyed proxy: kept as the thread's spare if it has none, else back to the pool.
CUDNN_FASTPATH_HOT void give_back_proxy(Proxy* p) noexcept {
  p->set_state(Proxy::State::kFree);
  if (ThreadBlock* block = t_block; block != nullptr && block->spare_proxy == nullptr) {
    block->spare_proxy = p;
    return;
  }
  g_proxies.release(p);
}

namespace samples = pack_op_samples;

bool counting(std::uint32_t m) { return (m & mode::kCounting) != 0; }

// Times a proxy's call when the proxy is a timed one, in counter ticks (clock.h). The steady
// paths use it too, so that a timed proxy runs the code every other proxy runs, and it adds
// nothing but the two reads to what it measures: no call, no memory outside the proxy (the
// reads' own cost is taken off once, at the destroy).
class ProxyTimer {
 public:
  explicit ProxyTimer(const Proxy* proxy)
      : proxy_(proxy && __builtin_expect(proxy->timed, 0) ? const_cast<Proxy*>(proxy) : nullptr),
        start_(proxy_ ? ticks() : 0) {}
  ~ProxyTimer() {
    if (__builtin_expect(proxy_ != nullptr, 0)) {
      proxy_->own_ticks += ticks() - start_;
      if (proxy_->timed_calls < 255) ++proxy_->timed_calls;
    }
  }
  ProxyTimer(const ProxyTimer&) = delete;
  ProxyTimer& operator=(const ProxyTimer&) = delete;

 private:
  Proxy* proxy_;
  std::uint64_t start_;
};

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
  p.window = false;  // statistics: not the steady op a timed proxy stands for
  p.set_state(Proxy::State::kMaterialized);
  if (counting(m)) count(Counter::kPacksMaterialized);
  return CUDNN_STATUS_SUCCESS;
}

// A finalize whose contents the cache does not hold: a real pack is built, and cached.
CUDNN_FASTPATH_COLD cudnnStatus_t finalize_miss(Proxy& p, std::uint32_t m) {
  const std::uintptr_t library = library_id(p.library);
  const RealSymbols& real = p.library->real;
  cudnnBackendDescriptor_t made = nullptr;
  const cudnnStatus_t status = build(real, p.recorded, true, made);
  if (status != CUDNN_STATUS_SUCCESS) {
    // cuDNN refused these contents: the proxy is that refused pack from now on.
    if (made) {
      p.pack = made;
      p.private_pack = true;
      p.set_state(Proxy::State::kMaterialized);
      if (counting(m)) count(Counter::kPacksMaterialized);
    }
    return status;
  }
  if (counting(m)) count(Counter::kPackMisses);
  p.window = false;  // statistics: not the steady op a timed proxy stands for
  Cache::Evicted evicted;
  p.lease = g_cache.insert(p.recorded, library, made, evicted);
  p.pack = made;
  p.private_pack = !p.lease;  // every entry of its set is leased: kept to itself
  p.set_state(Proxy::State::kFinalized);
  if (evicted.pack) {
    forget_graphs_of_pack(evicted.pack);  // before a new pack may take its address
    reinterpret_cast<const Binding*>(evicted.library)->real.cudnnBackendDestroyDescriptor(evicted.pack);
    if (counting(m)) count(Counter::kPackEvictions);
  }
  return CUDNN_STATUS_SUCCESS;
}

CUDNN_FASTPATH_HOT cudnnStatus_t finalize_proxy(Proxy& p, std::uint32_t m) {
  if (Cache::Lease lease = g_cache.acquire(p.recorded, library_id(p.library))) {
    p.lease = lease;
    p.pack = lease.pack;
    p.set_state(Proxy::State::kFinalized);
    if (counting(m)) count(Counter::kPackHits);
    return CUDNN_STATUS_SUCCESS;
  }
  return finalize_miss(p, m);
}

// The real pack a call should get for `descriptor`: a proxy's (materialized first if it has none
// yet, so that cuDNN answers for an unfinalized pack), or the descriptor itself.
cudnnStatus_t real_pack_of(Proxy& p, std::uint32_t m, cudnnBackendDescriptor_t& pack) {
  if (p.state() == Proxy::State::kRecording) {
    const cudnnStatus_t status = materialize(p, m);
    if (status != CUDNN_STATUS_SUCCESS) return status;
  }
  pack = p.pack;
  return CUDNN_STATUS_SUCCESS;
}

}  // namespace

namespace {

// A timed proxy's destroy: its time, create to destroy, the clock reads' own cost taken off, goes
// to the statistics.
CUDNN_FASTPATH_COLD void count_proxy_sample(const Proxy* p, std::uint64_t start) noexcept {
  const std::uint64_t raw = p->own_ticks + (ticks() - start);
  const std::uint64_t reads = (static_cast<std::uint64_t>(p->timed_calls) + 1) * tick_cost();
  count(Counter::kPackProxySamples);
  count(Counter::kPackProxyTicks, raw > reads ? raw - reads : 0);
}

// A proxy from the thread's spare or the pool, set up for recording; nullptr if none is left.
CUDNN_FASTPATH_HOT Proxy* make_proxy(const Binding& library, ThreadBlock* block) noexcept {
  Proxy* p = take_proxy(block);
  if (p == nullptr) return nullptr;
  p->private_pack = false;
  p->timed = false;
  p->window = false;
  p->library = &library;
  p->pack = nullptr;
  p->lease = {};
  p->recorded.clear();
  p->set_state(Proxy::State::kRecording);
  return p;
}

// Statistics: a variant pack in one of the sampled slots (pack_op_samples.h). A real one is what
// the program gets with the cache off; a timed proxy runs the steady paths like any other.
CUDNN_FASTPATH_COLD cudnnStatus_t create_sampled(const Binding& library, ThreadBlock& block, std::uint64_t n,
                                                 cudnnBackendDescriptor_t* descriptor) noexcept {
  const std::uint64_t start = ticks();
  const samples::Slot slot = samples::next_slot(block, n, start);
  const bool passed_through = slot == samples::Slot::kReal || slot == samples::Slot::kRealUntimed;
  const RealSymbols& real = library.real;
  Proxy* p = passed_through ? nullptr : make_proxy(library, &block);
  if (p == nullptr) {
    if (passed_through) count(Counter::kPackSamples);
    const cudnnStatus_t status = real.cudnnBackendCreateDescriptor(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, descriptor);
    if (slot == samples::Slot::kReal && status == CUDNN_STATUS_SUCCESS) samples::open_real(block, *descriptor, start);
    return status;
  }
  if (slot == samples::Slot::kProxyOwnCalls) {
    p->timed = true;
    p->own_ticks = ticks() - start;
    p->timed_calls = 1;
  } else if (slot == samples::Slot::kProxy) {
    p->window = true;
    p->own_ticks = start;
  }
  note_cudnn_call();
  count(Counter::kPacksProxied);
  *descriptor = p;
  return CUDNN_STATUS_SUCCESS;
}

}  // namespace

CUDNN_FASTPATH_HOT cudnnStatus_t backend_create_descriptor(const void* caller, cudnnBackendDescriptorType_t type,
                                                           cudnnBackendDescriptor_t* descriptor) noexcept {
  const std::uint32_t m = current_mode();
  if (__builtin_expect(m & mode::kFollower, 0)) return leader().backend_create_descriptor(caller, type, descriptor);
  bool from_cudnn = false;
  const Binding& library = binding_for(Library::kCudnn, caller, from_cudnn);
  const RealSymbols& real = library.real;
  if (real.cudnnBackendCreateDescriptor == nullptr) return CUDNN_STATUS_NOT_INITIALIZED;
  if (type != CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR || descriptor == nullptr || !(m & mode::kCaching) ||
      from_cudnn || real.cudnnBackendFinalize == nullptr)
    return real.cudnnBackendCreateDescriptor(type, descriptor);
  ThreadBlock* block = own_block();
  if (counting(m) && block != nullptr) {
    const std::uint64_t n = ++block->proxies;
    if (__builtin_expect(samples::sampled(*block, n), 0)) return create_sampled(library, *block, n, descriptor);
  }
  Proxy* p = make_proxy(library, block);
  if (p == nullptr) return real.cudnnBackendCreateDescriptor(type, descriptor);
  note_cudnn_call();
  if (counting(m)) count(Counter::kPacksProxied);
  *descriptor = p;
  return CUDNN_STATUS_SUCCESS;
}

static CUDNN_FASTPATH_COLD cudnnStatus_t backend_destroy_descriptor_general(const void* caller,
                                                                         cudnnBackendDescriptor_t descriptor) noexcept {
  const std::uint32_t m = current_mode();
  if (m & mode::kFollower) return leader().backend_destroy_descriptor(caller, descriptor);
  Proxy* p = live_proxy(descriptor);
  if (p == nullptr) {
    if (g_proxies.owns(descriptor)) return CUDNN_STATUS_BAD_PARAM;  // a proxy destroyed already
    const RealSymbols& real = binding_for(Library::kCudnn, caller).real;
    if (real.cudnnBackendDestroyDescriptor == nullptr) return CUDNN_STATUS_NOT_INITIALIZED;
    const cudnnStatus_t status = real.cudnnBackendDestroyDescriptor(descriptor);
    // A plan's graphs go with it, before its address can be handed out again.
    if (!(m & mode::kDisabled)) forget_graphs_of_plan(descriptor);
    if (counting(m)) samples::close_real_if_timed(descriptor);
    return status;
  }
  const std::uint64_t start = p->timed ? ticks() : 0;
  cudnnStatus_t status = CUDNN_STATUS_SUCCESS;
  if (p->lease) g_cache.release(p->lease);
  else if (p->private_pack && p->pack) status = p->library->real.cudnnBackendDestroyDescriptor(p->pack);
  if (p->timed && counting(m)) count_proxy_sample(p, start);
  p->lease = {};
  p->pack = nullptr;
  p->private_pack = false;
  give_back_proxy(p);
  return status;
}

cudnnStatus_t backend_initialize(const void* caller, cudnnBackendDescriptor_t descriptor) noexcept {
  const std::uint32_t m = current_mode();
  if (m & mode::kFollower) return leader().backend_initialize(caller, descriptor);
  if (Proxy* p = live_proxy(descriptor)) {
    const cudnnStatus_t status = materialize(*p, m);
    if (status != CUDNN_STATUS_SUCCESS) return status;
    return p->library->real.cudnnBackendInitialize(p->pack);
  }
  if (g_proxies.owns(descriptor)) return CUDNN_STATUS_BAD_PARAM;
  const RealSymbols& real = binding_for(Library::kCudnn, caller).real;
  if (real.cudnnBackendInitialize == nullptr) return CUDNN_STATUS_NOT_INITIALIZED;
  return real.cudnnBackendInitialize(descriptor);
}

static CUDNN_FASTPATH_COLD cudnnStatus_t backend_finalize_general(const void* caller,
                                                               cudnnBackendDescriptor_t descriptor) noexcept {
  const std::uint32_t m = current_mode();
  if (m & mode::kFollower) return leader().backend_finalize(caller, descriptor);
  Proxy* p = live_proxy(descriptor);
  if (p == nullptr) {
    if (g_proxies.owns(descriptor)) return CUDNN_STATUS_BAD_PARAM;
    const RealSymbols& real = binding_for(Library::kCudnn, caller).real;
    if (real.cudnnBackendFinalize == nullptr) return CUDNN_STATUS_NOT_INITIALIZED;
    return real.cudnnBackendFinalize(descriptor);
  }
  const ProxyTimer timer(p);
  if (p->state() == Proxy::State::kRecording && p->recorded.complete()) return finalize_proxy(*p, m);
  // Finalized twice, or not all set: cuDNN's own answer, from a real pack in the same state.
  const cudnnStatus_t status = materialize(*p, m);
  if (status != CUDNN_STATUS_SUCCESS) return status;
  return p->library->real.cudnnBackendFinalize(p->pack);
}

static CUDNN_FASTPATH_COLD cudnnStatus_t backend_set_attribute_general(const void* caller,
                                                                    cudnnBackendDescriptor_t descriptor,
                                                                    cudnnBackendAttributeName_t name,
                                                                    cudnnBackendAttributeType_t type,
                                                                    int64_t count, const void* elements) noexcept {
  const std::uint32_t m = current_mode();
  if (m & mode::kFollower) return leader().backend_set_attribute(caller, descriptor, name, type, count, elements);
  Proxy* p = live_proxy(descriptor);
  if (p == nullptr) {
    if (g_proxies.owns(descriptor)) return CUDNN_STATUS_BAD_PARAM;
    const RealSymbols& real = binding_for(Library::kCudnn, caller).real;
    if (real.cudnnBackendSetAttribute == nullptr) return CUDNN_STATUS_NOT_INITIALIZED;
    const cudnnStatus_t status = real.cudnnBackendSetAttribute(descriptor, name, type, count, elements);
    if (status == CUDNN_STATUS_SUCCESS && is_noted_tensor_attribute(name) && !(m & mode::kDisabled))
      note_tensor_attribute(descriptor, name, type, count, elements);
    return status;
  }
  const ProxyTimer timer(p);
  if (p->state() == Proxy::State::kRecording && record(p->recorded, name, type, count, elements))
    return CUDNN_STATUS_SUCCESS;
  const cudnnStatus_t status = materialize(*p, m);
  if (status != CUDNN_STATUS_SUCCESS) return status;
  return p->library->real.cudnnBackendSetAttribute(p->pack, name, type, count, elements);
}

cudnnStatus_t backend_get_attribute(const void* caller, cudnnBackendDescriptor_t descriptor,
                                    cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type,
                                    int64_t requested, int64_t* count, void* elements) noexcept {
  const std::uint32_t m = current_mode();
  if (m & mode::kFollower)
    return leader().backend_get_attribute(caller, descriptor, name, type, requested, count, elements);
  Proxy* p = live_proxy(descriptor);
  if (p == nullptr) {
    if (g_proxies.owns(descriptor)) return CUDNN_STATUS_BAD_PARAM;
    const RealSymbols& real = binding_for(Library::kCudnn, caller).real;
    if (real.cudnnBackendGetAttribute == nullptr) return CUDNN_STATUS_NOT_INITIALIZED;
    return real.cudnnBackendGetAttribute(descriptor, name, type, requested, count, elements);
  }
  const ProxyTimer timer(p);
  cudnnBackendDescriptor_t pack = nullptr;
  const cudnnStatus_t status = real_pack_of(*p, m, pack);
  if (status != CUDNN_STATUS_SUCCESS) return status;
  return p->library->real.cudnnBackendGetAttribute(pack, name, type, requested, count, elements);
}

namespace {

// Execute and the CUDA-graph calls: the real pack in place of a proxy, the rest unchanged.
template <typename Call>
cudnnStatus_t with_real_pack(const void* caller, cudnnBackendDescriptor_t pack, std::uint32_t m, Call&& call) {
  Proxy* p = live_proxy(pack);
  if (p == nullptr) {
    if (g_proxies.owns(pack)) return CUDNN_STATUS_BAD_PARAM;
    return call(binding_for(Library::kCudnn, caller).real, pack);
  }
  // Not timed: the proxy's share of this call is one lookup; the rest is cuDNN's own work.
  cudnnBackendDescriptor_t real_pack = nullptr;
  const cudnnStatus_t status = real_pack_of(*p, m, real_pack);
  if (status != CUDNN_STATUS_SUCCESS) return status;
  return call(p->library->real, real_pack);
}

}  // namespace

static CUDNN_FASTPATH_COLD cudnnStatus_t backend_execute_general(const void* caller, cudnnHandle_t handle,
                                                              cudnnBackendDescriptor_t plan,
                                                              cudnnBackendDescriptor_t pack) noexcept {
  const std::uint32_t m = current_mode();
  if (m & mode::kFollower) return leader().backend_execute(caller, handle, plan, pack);
  return with_real_pack(caller, pack, m, [&](const RealSymbols& real, cudnnBackendDescriptor_t real_pack) {
    return real.cudnnBackendExecute ? real.cudnnBackendExecute(handle, plan, real_pack) : CUDNN_STATUS_NOT_INITIALIZED;
  });
}

cudnnStatus_t backend_populate_cuda_graph(const void* caller, cudnnHandle_t handle, cudnnBackendDescriptor_t plan,
                                          cudnnBackendDescriptor_t pack, cudaGraph_t graph) noexcept {
  const std::uint32_t m = current_mode();
  if (m & mode::kFollower) return leader().backend_populate_cuda_graph(caller, handle, plan, pack, graph);
  return with_real_pack(caller, pack, m, [&](const RealSymbols& real, cudnnBackendDescriptor_t real_pack) {
    return real.cudnnBackendPopulateCudaGraph ? real.cudnnBackendPopulateCudaGraph(handle, plan, real_pack, graph)
                                              : CUDNN_STATUS_NOT_SUPPORTED;
  });
}

cudnnStatus_t backend_update_cuda_graph(const void* caller, cudnnHandle_t handle, cudnnBackendDescriptor_t plan,
                                        cudnnBackendDescriptor_t pack, cudaGraph_t graph) noexcept {
  const std::uint32_t m = current_mode();
  if (m & mode::kFollower) return leader().backend_update_cuda_graph(caller, handle, plan, pack, graph);
  return with_real_pack(caller, pack, m, [&](const RealSymbols& real, cudnnBackendDescriptor_t real_pack) {
    return real.cudnnBackendUpdateCudaGraph ? real.cudnnBackendUpdateCudaGraph(handle, plan, real_pack, graph)
                                            : CUDNN_STATUS_NOT_SUPPORTED;
  });
}

// The steady state, each call on a proxy in the state a steady op finds it in; everything else
// takes the general paths above, which give the same answers for these too.

CUDNN_FASTPATH_HOT cudnnStatus_t backend_set_attribute(const void* caller, cudnnBackendDescriptor_t descriptor,
                                                       cudnnBackendAttributeName_t name,
                                                       cudnnBackendAttributeType_t type, int64_t count,
                                                       const void* elements) noexcept {
  const std::uint32_t m = current_mode();
  Proxy* p = (m & mode::kFollower) ? nullptr : live_proxy(descriptor);
  if (__builtin_expect(p != nullptr && p->state() == Proxy::State::kRecording, 1)) {
    const ProxyTimer timer(p);
    if (record(p->recorded, name, type, count, elements)) {
      if (name != CUDNN_ATTR_VARIANT_PACK_WORKSPACE && p->recorded.complete())
        g_cache.prefetch(p->recorded, library_id(p->library));  // the finalize comes next
      return CUDNN_STATUS_SUCCESS;
    }
  }
  return backend_set_attribute_general(caller, descriptor, name, type, count, elements);
}

CUDNN_FASTPATH_HOT cudnnStatus_t backend_finalize(const void* caller, cudnnBackendDescriptor_t descriptor) noexcept {
  const std::uint32_t m = current_mode();
  Proxy* p = (m & mode::kFollower) ? nullptr : live_proxy(descriptor);
  if (__builtin_expect(p != nullptr && p->state() == Proxy::State::kRecording, 1) && p->recorded.complete()) {
    const ProxyTimer timer(p);
    return finalize_proxy(*p, m);
  }
  return backend_finalize_general(caller, descriptor);
}

CUDNN_FASTPATH_HOT cudnnStatus_t backend_destroy_descriptor(const void* caller,
                                                            cudnnBackendDescriptor_t descriptor) noexcept {
  const std::uint32_t m = current_mode();
  Proxy* p = (m & mode::kFollower) ? nullptr : live_proxy(descriptor);
  if (__builtin_expect(p != nullptr && !p->private_pack, 1)) {
    const std::uint64_t start = __builtin_expect(p->timed, 0) ? ticks() : 0;
    const bool window = p->window;
    const std::uint64_t window_start = p->own_ticks;  // read before the proxy is handed on
    if (p->lease) g_cache.release(p->lease);
    if (__builtin_expect(p->timed, 0) && counting(m)) count_proxy_sample(p, start);
    p->lease = {};
    p->pack = nullptr;
    give_back_proxy(p);
    if (__builtin_expect(window, 0) && counting(m)) {
      const std::uint64_t end = ticks();
      samples::close_proxy(end - window_start, end);
    }
    return CUDNN_STATUS_SUCCESS;
  }
  return backend_destroy_descriptor_general(caller, descriptor);
}

CUDNN_FASTPATH_HOT cudnnStatus_t backend_execute(const void* caller, cudnnHandle_t handle,
                                                 cudnnBackendDescriptor_t plan,
                                                 cudnnBackendDescriptor_t pack) noexcept {
  const std::uint32_t m = current_mode();
  const Proxy* p = (m & mode::kFollower) ? nullptr : live_proxy(pack);
  if (__builtin_expect(p != nullptr && p->state() == Proxy::State::kFinalized, 1) &&
      p->library->real.cudnnBackendExecute != nullptr) {
    // A pack from the cache is stable from one op to the next: its executes may be replayed.
    if ((m & mode::kGraphs) && p->lease)
      return execute_with_graphs(caller, *p->library, handle, plan, p->pack, p->recorded, m);
    return p->library->real.cudnnBackendExecute(handle, plan, p->pack);
  }
  return backend_execute_general(caller, handle, plan, pack);
}

void forget_packs_in_child() noexcept {
  g_cache.forget_in_child();  // graph_replay.cpp forgets the graphs of these packs itself
  samples::forget_in_child();
}

}  // namespace cudnn_fastpath::shim
