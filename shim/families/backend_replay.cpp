// Replay of cuDNN's backend execute (backend_replay.h): the key, the by-value tensors, and the
// rules for forgetting, over the replay engine (replay_engine.h).
//
// By-value tensors (CUDNN_ATTR_TENSOR_IS_BY_VALUE, such as SDPA's scale) are host pointers that
// cuDNN reads at execute, so a graph bakes in their bytes. Their uids and exact sizes are learnt
// from the tensor descriptors the program builds (note_tensor_attribute: uid, data type,
// dimensions); at capture the bytes at those pointers (host memory, by the driver's memory type; a
// device pointer is never read) are kept with the graph and compared at every launch (the engine
// re-captures on a change, at most three times). A host pointer that is not a known by-value tensor:
// direct for good. A graph and a shape are forgotten when their handle or plan is destroyed; the
// key names the pack by its contents, so a graph outlives the real pack it was captured with (it
// holds the pointers, never the pack) and serves the next pack of the same contents.
#include "shim/families/backend_replay.h"

#include <atomic>
#include <cstring>

#include "replay/seen_filter.h"
#include "shim/engine/replay_engine.h"
#include "shim/engine/replay_thread.h"
#include "shim/engine/shape_cache.h"
#include "shim/families/replay_call.h"
#include "shim/libraries/mode.h"
#include "shim/process/counters.h"
#include "shim/streams/handle_stream.h"
#include "shim/streams/handle_table.h"

namespace cudnn_fastpath::shim {
namespace {

using ByValue = GraphCache::ByValue;

// The handles, plans and packs that ever got an entry: a destroyed descriptor that never did (most
// of them) costs a load, not a pass over the cache.
replay::SeenFilter g_seen_plans;

// ---- by-value tensors --------------------------------------------------------------------------

// The bytes of one element of a cuDNN data type; 0 when it is not a whole number of bytes.
std::uint32_t element_bytes(std::int32_t type) noexcept {
  switch (type) {
    case CUDNN_DATA_HALF:
    case CUDNN_DATA_BFLOAT16: return 2;
    case CUDNN_DATA_FLOAT:
    case CUDNN_DATA_INT32:
    case CUDNN_DATA_INT8x4:
    case CUDNN_DATA_UINT8x4: return 4;
    case CUDNN_DATA_DOUBLE:
    case CUDNN_DATA_INT64: return 8;
    case CUDNN_DATA_INT8:
    case CUDNN_DATA_UINT8:
    case CUDNN_DATA_BOOLEAN:
    case CUDNN_DATA_FP8_E4M3:
    case CUDNN_DATA_FP8_E5M2: return 1;
    case CUDNN_DATA_INT8x32: return 32;
    default: return 0;
  }
}

// The by-value uids seen in the process, with their exact sizes: {uid, size} published by a
// claim word. A uid seen with two sizes is ambiguous (kAmbiguous): a host pointer of it is
// refused. Linear probing; full: a uid not noted is refused like any unknown host pointer.
constexpr int kByValueUids = 64;
constexpr std::uint32_t kAmbiguous = ~std::uint32_t{0};
struct ByValueUid {
  std::atomic<std::uint32_t> state{0};  // 0 empty, 1 being claimed, 2 ready
  std::atomic<std::int64_t> uid{0};
  std::atomic<std::uint32_t> size{0};
};
ByValueUid g_by_value[kByValueUids];
// Whether any by-value uid was ever noted: a program that never made one (convolutions) pays no
// lookup per tensor. Relaxed: a key written before another thread's first note marks that uid's
// host pointer as a tensor; its capture then reads the bytes (or refuses the pointer, learn_by_value)
// and every launch compares them, and a shape cannot move a tensor no kernel word follows (unproven:
// by pointer), so the key is only less useful, never wrong.
std::atomic<bool> g_any_by_value{false};

std::size_t uid_home(std::int64_t uid) noexcept {
  return static_cast<std::size_t>((static_cast<std::uint64_t>(uid) * 0x9e3779b97f4a7c15ull) >> 58) & (kByValueUids - 1);
}

void publish_by_value(std::int64_t uid, std::uint32_t size) noexcept {
  g_any_by_value.store(true, std::memory_order_relaxed);
  for (int step = 0; step < kByValueUids; ++step) {
    ByValueUid& slot = g_by_value[(uid_home(uid) + step) & (kByValueUids - 1)];
    // Acquire: pairs with the release below, so a ready slot's uid and size are read after it.
    std::uint32_t state = slot.state.load(std::memory_order_acquire);
    if (state == 0) {
      // acq_rel: the winner writes the slot, then publishes it with the release store.
      if (slot.state.compare_exchange_strong(state, 1, std::memory_order_acq_rel, std::memory_order_acquire)) {
        slot.uid.store(uid, std::memory_order_relaxed);
        slot.size.store(size, std::memory_order_relaxed);
        slot.state.store(2, std::memory_order_release);
        return;
      }
    }
    // Being claimed: two stores away from ready (no call in between).
    while (state == 1) state = slot.state.load(std::memory_order_acquire);
    if (slot.uid.load(std::memory_order_relaxed) != uid) continue;
    // Relaxed: sizes only ever move to kAmbiguous; a reader that misses it reads a size that was
    // right for one descriptor of this uid, and compares that many bytes.
    if (slot.size.load(std::memory_order_relaxed) != size) slot.size.store(kAmbiguous, std::memory_order_relaxed);
    return;
  }
}

// The size of by-value uid `uid`, or 0 when it is not known as one (or ambiguous).
std::uint32_t by_value_size(std::int64_t uid) noexcept {
  for (int step = 0; step < kByValueUids; ++step) {
    const ByValueUid& slot = g_by_value[(uid_home(uid) + step) & (kByValueUids - 1)];
    const std::uint32_t state = slot.state.load(std::memory_order_acquire);  // as in publish_by_value
    if (state == 0) return 0;
    if (state != 2 || slot.uid.load(std::memory_order_relaxed) != uid) continue;
    const std::uint32_t size = slot.size.load(std::memory_order_relaxed);
    return size == kAmbiguous ? 0 : size;
  }
  return 0;
}

// ---- one execute, as the engine runs it (replay_call.h's adapter) ------------------------------

bool learn_by_value(void* context, const RealSymbols& cuda, HostBytes& e);
bool same_by_value(void* context, const HostBytes& e);

// What the shape of an execute is besides its tensors: the handle, the plan and the uids (which
// tensor each pointer is). admit()'s shape sample.
std::uint64_t execute_shape_sample(cudnnHandle_t handle, cudnnBackendDescriptor_t plan,
                                   const packs::PackContents& contents) noexcept {
  replay::SampleHash h;
  h.add(reinterpret_cast<std::uintptr_t>(handle));
  h.add(reinterpret_cast<std::uintptr_t>(plan));
  for (std::int32_t i = 0; i < contents.uid_count; ++i) h.add(static_cast<std::uint64_t>(contents.uid(i)));
  return h.value();
}

struct Execute {
  static constexpr Family kFamily = Family::backend;
  static constexpr bool kPastGate = false;  // variant_packs.cpp's execute has no gate of the families'
  static constexpr int kLaunchFailed = CUDNN_STATUS_EXECUTION_FAILED_CUDA_DRIVER;
  static constexpr auto learn_host_bytes = learn_by_value;
  static constexpr auto same_host_bytes = same_by_value;

  const void* caller;
  const RealSymbols& cudnn;
  cudnnHandle_t handle;
  cudnnBackendDescriptor_t plan;
  void* proxy;  // the pack, a finalized proxy: its real pack is built only for a call that runs cuDNN
  RealPackOf real_pack;
  const packs::PackContents& contents;
  cudaStream_t program_stream = nullptr;

  cudnnStatus_t direct() const noexcept {
    cudnnBackendDescriptor_t pack = nullptr;
    const cudnnStatus_t status = real_pack(proxy, &pack);  // a deferred build fails as its finalize would have
    return status == CUDNN_STATUS_SUCCESS ? cudnn.cudnnBackendExecute(handle, plan, pack) : status;
  }
  bool known(std::uint32_t m, Counter&) noexcept {
    g_seen_plans.note(plan);  // before any entry of the plan can exist
    return handle_stream(cudnn, handle, m, program_stream) && cudnn.cudnnSetStream != nullptr;
  }
  CUstream stream() const noexcept { return reinterpret_cast<CUstream>(program_stream); }
  // The handle, the plan, then the pack's contents (never its address): its counts, its uids, its
  // pointers (each a tensor the shape cache may move, but a by-value one: a host pointer, whose
  // bytes the entry compares), and its workspace, a tensor too. The real pack is not in it: a
  // graph does what the contents say whichever pack of them was executed.
  // Written in one piece: one look at the room left, then each word in place, in one pass over the
  // pack's tensors (a uid beside its pointer), the tensors' marks kept in a local and stored once (a
  // mark is a byte store, which may alias any word of the key).
  void write_key(Key& key) const noexcept {
    const std::int32_t n = contents.uid_count, pointers = contents.pointer_count;
    const std::uint32_t start = key.length;
    std::uint64_t* const w = key.extend(static_cast<std::uint32_t>(4 + n + pointers));
    if (w == nullptr) return;
    w[0] = reinterpret_cast<std::uintptr_t>(handle);
    w[1] = reinterpret_cast<std::uintptr_t>(plan);
    w[2] = static_cast<std::uint64_t>(static_cast<std::uint16_t>(n)) |
           static_cast<std::uint64_t>(static_cast<std::uint16_t>(pointers)) << 16 |
           std::uint64_t{contents.has_workspace} << 32;
    w[3 + n + pointers] = reinterpret_cast<std::uintptr_t>(contents.workspace);
    const std::uint32_t first = start + 3 + static_cast<std::uint32_t>(n);  // the first pointer's word
    if (__builtin_expect(n != pointers || key.tensor_count + pointers + 1 > Key::kMaxTensors ||
                             g_any_by_value.load(std::memory_order_relaxed),
                         0))
      return write_tensors_one_by_one(key, w, first);
    std::uint8_t marked = key.tensor_count;
    for (std::int32_t i = 0; i < n; ++i) {
      w[3 + i] = static_cast<std::uint64_t>(contents.uid(i));
      w[3 + n + i] = reinterpret_cast<std::uintptr_t>(contents.pointer(i));
      key.tensor_at[marked++] = static_cast<std::uint16_t>(first + i);
    }
    if (contents.workspace != nullptr) key.tensor_at[marked++] = static_cast<std::uint16_t>(first + pointers);
    key.tensor_count = marked;
  }
  // The same, where the counts differ, the marks would not fit, or a pointer may be a by-value
  // tensor's (a plain word).
  [[gnu::noinline]] void write_tensors_one_by_one(Key& key, std::uint64_t* w, std::uint32_t first) const noexcept {
    const std::int32_t n = contents.uid_count, pointers = contents.pointer_count;
    for (std::int32_t i = 0; i < n; ++i) w[3 + i] = static_cast<std::uint64_t>(contents.uid(i));
    for (std::int32_t i = 0; i < pointers; ++i) {
      w[3 + n + i] = reinterpret_cast<std::uintptr_t>(contents.pointer(i));
      if (!(i < n && by_value_size(contents.uid(i)) != 0)) key.mark_tensor(first + static_cast<std::uint32_t>(i));
    }
    if (contents.workspace != nullptr) key.mark_tensor(first + static_cast<std::uint32_t>(pointers));
  }
  static int run(void* context, CUstream) { return static_cast<const Execute*>(context)->direct(); }
  static std::uint64_t shape_sample(const void* context) {
    const Execute& x = *static_cast<const Execute*>(context);
    return execute_shape_sample(x.handle, x.plan, x.contents);
  }
  static int enter(void* context, CUstream capture) {
    const Execute& x = *static_cast<const Execute*>(context);
    return point_handle_at(x.cudnn, x.handle, capture);
  }
  static void leave(void* context) {
    const Execute& x = *static_cast<const Execute*>(context);
    point_handle_back(x.cudnn, x.handle, x.program_stream);
  }
};

// The by-value layout of the pack into the entry, with its bytes; false (a refusal) when a host
// pointer is not a known by-value tensor, or they do not fit.
bool learn_by_value(void* context, const RealSymbols& cuda, HostBytes& e) {
  const packs::PackContents& contents = static_cast<const Execute*>(context)->contents;
  unsigned char bytes[GraphCache::kByValueBytes] = {};
  int n = 0;
  std::uint32_t offset = 0;
  for (std::int32_t i = 0; i < contents.pointer_count; ++i) {
    void* pointer = contents.pointer(i);
    if (pointer == nullptr) continue;
    CUmemorytype type = CU_MEMORYTYPE_HOST;
    if (cuda.cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, reinterpret_cast<CUdeviceptr>(pointer)) ==
            CUDA_SUCCESS &&
        type == CU_MEMORYTYPE_DEVICE)
      continue;
    // Host memory (or memory the driver does not know): only a known by-value tensor is read.
    const std::uint32_t size = i < contents.uid_count ? by_value_size(contents.uid(i)) : 0;
    if (size == 0 || n == GraphCache::kMaxByValue || offset + size > GraphCache::kByValueBytes) return false;
    std::memcpy(bytes + offset, pointer, size);
    e.set_by_value(n++, ByValue{static_cast<std::uint8_t>(i), static_cast<std::uint8_t>(offset),
                                static_cast<std::uint8_t>(size)});
    offset += size;
  }
  e.by_value_count.store(static_cast<std::uint8_t>(n), std::memory_order_relaxed);
  e.store_bytes(bytes);
  return true;
}

// Whether the by-value bytes at the pack's pointers are still the ones the graph baked in.
bool same_by_value(void* context, const HostBytes& e) {
  const int n = e.by_value_count.load(std::memory_order_relaxed);
  if (n == 0) return true;
  const packs::PackContents& contents = static_cast<const Execute*>(context)->contents;
  unsigned char baked[GraphCache::kByValueBytes];
  e.load_bytes(baked);
  for (int k = 0; k < n; ++k) {
    const ByValue b = e.by_value_at(k);
    if (std::memcmp(contents.pointer(b.tensor), baked + b.offset, b.size) != 0) return false;
  }
  return true;
}

// A key word of each descriptor the triple names, for the forget rules.
enum KeyWord : std::uint32_t { kHandleWord, kPlanWord };  // the handle is the engine's

template <typename Value>
void forget_word(const replay::SeenFilter& seen, KeyWord word, const Value* value) noexcept {
  if (!seen.maybe(value)) return;
  const auto v = reinterpret_cast<std::uintptr_t>(value);
  forget_graphs_where(Family::backend,
                      [word, v](const GraphCache::StoredKey& k) { return k.length() > word && k[word] == v; });
  forget_shapes_with_word(Family::backend, word, v);  // a shape's key keeps the handle and plan words
}

}  // namespace

cudnnStatus_t execute_with_graphs(const void* caller, const Binding& cudnn, cudnnHandle_t handle,
                                  cudnnBackendDescriptor_t plan, void* proxy, RealPackOf real_pack,
                                  const packs::PackContents& contents, std::uint32_t m) noexcept {
  const Execute call{caller, cudnn.real, handle, plan, proxy, real_pack, contents};
  auto sample = [&] {  // the key's hash: a sampled key is the same whatever comes between its calls
    Key key;
    call.write_key(key);
    return key.hash();
  };
  return static_cast<cudnnStatus_t>(
      replay_call<Execute>(m, sample, [&] { return execute_shape_sample(handle, plan, contents); },
                           [&] { return call.direct(); }, [&] { return call; }));
}

void note_tensor_attribute(cudnnBackendDescriptor_t descriptor, cudnnBackendAttributeName_t name,
                           cudnnBackendAttributeType_t type, std::int64_t count, const void* elements) noexcept {
  if (elements == nullptr || count < 1) return;
  ReplayThread* t = replay_thread();
  if (t == nullptr) return;  // not noted: a by-value host pointer of this uid is refused, never misread
  TensorNote* note = nullptr;
  for (TensorNote& n : t->notes)
    if (n.descriptor == descriptor) note = &n;
  if (note == nullptr) {
    note = &t->notes[t->next_note++ % ReplayThread::kNotes];
    *note = TensorNote{descriptor, 0, 0, 0, false, false, false, false};
  }
  switch (name) {
    case CUDNN_ATTR_TENSOR_UNIQUE_ID:
      if (type != CUDNN_TYPE_INT64) return;
      note->uid = *static_cast<const std::int64_t*>(elements);
      note->has_uid = true;
      break;
    case CUDNN_ATTR_TENSOR_DATA_TYPE:
      if (type != CUDNN_TYPE_DATA_TYPE) return;
      note->type = *static_cast<const std::int32_t*>(elements);
      note->has_type = true;
      break;
    case CUDNN_ATTR_TENSOR_DIMENSIONS: {
      if (type != CUDNN_TYPE_INT64) return;
      std::int64_t product = 1;
      for (std::int64_t i = 0; i < count && product > 0 && product <= GraphCache::kByValueBytes; ++i)
        product *= static_cast<const std::int64_t*>(elements)[i];
      note->elements = product;
      note->has_dims = true;
      break;
    }
    case CUDNN_ATTR_TENSOR_IS_BY_VALUE:
      if (type != CUDNN_TYPE_BOOLEAN) return;
      note->by_value = *static_cast<const bool*>(elements);
      break;
    default:
      return;
  }
  if (note->by_value && note->has_uid && note->has_type && note->has_dims) {
    const std::uint64_t bytes = static_cast<std::uint64_t>(note->elements) * element_bytes(note->type);
    const bool exact = note->elements > 0 && bytes > 0 && bytes <= GraphCache::kByValueBytes;
    publish_by_value(note->uid, exact ? static_cast<std::uint32_t>(bytes) : kAmbiguous);
  }
}

void forget_graphs_of_plan(cudnnBackendDescriptor_t plan) noexcept { forget_word(g_seen_plans, kPlanWord, plan); }

}  // namespace cudnn_fastpath::shim
