// Relocation of captured graphs (graph_relocation.h).
#include "replay/graph_relocation.h"

#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <new>

namespace cudnn_fastpath::replay {
namespace {

constexpr std::uint16_t kMemsetDestination = 0xFFFF;
// A word is a tensor's address plus an offset inside the tensor: at most this far from it (a pointer
// split into halves, or packed beside another field, lands 4 GiB or more away).
constexpr std::uint64_t kMaxOffset = std::uint64_t{1} << 32;

// An address's alignment: its trailing zero bits, every count a class of its own (0 has the largest,
// 63: nothing to choose by). Classes once stopped at 4 KiB, so that a call whose tensors are 64 KiB
// aligned was checked no more than one at 4 KiB; but one check that differs refuses its whole class,
// and on an H100 a legacy batch norm's fresh capture at a 64 MiB-aligned input differed (an argument
// word 0x7f0000000001 where the proof's graph had 0x1): its refusal sent every input of 4 KiB or more
// by pointer, three calls in four of a ring of 64 KiB inputs. Each class now answers for itself, at
// the price of a check for each new one (a few per tensor: widen_alignments() proves the range
// between two that matched).
int alignment_of(std::uint64_t address) noexcept { return address == 0 ? 63 : __builtin_ctzll(address); }

// Bits `from` to `to` of a word.
std::uint64_t bits(int from, int to) noexcept {
  return (to == 63 ? ~std::uint64_t{0} : (std::uint64_t{1} << (to + 1)) - 1) & ~((std::uint64_t{1} << from) - 1);
}

// Whether `value` is a granule index of the tensor at `address`: (address + offset) >> shift for a
// shift of 1 to 24 bits (granules up to 16 MiB) and an offset inside the tensor's first granule. A
// wider offset, or a larger shift, would take ordinary constants for indices (0xFFFF is the 2 GiB
// index of an address near the top of a stack), and refuse what needs no refusing.
bool shifted_address(std::uint64_t value, std::uint64_t address) noexcept {
  if (value == 0 || address == 0) return false;
  for (int shift = 1; shift <= 24; ++shift)
    if (value - (address >> shift) <= 1) return true;
  return false;
}

bool has_inspection(const GraphDriver& d) noexcept {
  return d.cuGraphGetNodes && d.cuGraphNodeGetType && d.cuGraphKernelNodeGetParams_v2 &&
         d.cuGraphExecKernelNodeSetParams_v2 && (d.cuFuncGetParamInfo || d.cuKernelGetParamInfo);
}

// The offset and size of argument `i` of the node's kernel; false past its last argument.
bool argument(const GraphDriver& d, const CUDA_KERNEL_NODE_PARAMS& k, std::size_t i, std::size_t& offset,
              std::size_t& size) noexcept {
  if (k.func != nullptr && d.cuFuncGetParamInfo != nullptr)
    return d.cuFuncGetParamInfo(k.func, i, &offset, &size) == CUDA_SUCCESS;
  if (k.func == nullptr && k.kern != nullptr && d.cuKernelGetParamInfo != nullptr)
    return d.cuKernelGetParamInfo(k.kern, i, &offset, &size) == CUDA_SUCCESS;
  return false;
}

// The packed argument buffer of `extra` ({BUFFER_POINTER, p, BUFFER_SIZE, &size, END}), or null.
const void* packed_buffer(void** extra, std::size_t& size) noexcept {
  const void* buffer = nullptr;
  const std::size_t* size_at = nullptr;
  for (int i = 0; extra[i] != CU_LAUNCH_PARAM_END && i < 16; i += 2) {
    if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER) buffer = extra[i + 1];
    else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE) size_at = static_cast<const std::size_t*>(extra[i + 1]);
    else return nullptr;  // another option: not understood
  }
  if (buffer == nullptr || size_at == nullptr) return nullptr;
  size = *size_at;
  return buffer;
}

// Reads one kernel node's arguments into `n`.
bool read_kernel(const GraphDriver& d, NodeCopy& n, const char** why) noexcept {
  if (d.cuGraphKernelNodeGetParams_v2(n.node, &n.kernel) != CUDA_SUCCESS) return *why = "a kernel node unread", false;
  std::size_t size = 0;
  const void* packed = nullptr;
  if (n.kernel.extra != nullptr) {
    packed = packed_buffer(n.kernel.extra, size);
    if (packed == nullptr) return *why = "a kernel's packed arguments not understood", false;
    n.packed = true;
  } else {
    std::size_t offset = 0, length = 0;
    for (std::size_t i = 0; argument(d, n.kernel, i, offset, length); ++i) {
      if (i == kMaxArguments || offset > 0xFFFF) return *why = "a kernel with too many arguments", false;
      n.offsets[i] = static_cast<std::uint16_t>(offset);
      n.params = static_cast<std::uint16_t>(i + 1);
      if (offset + length > size) size = offset + length;
    }
    if (n.params != 0 && n.kernel.kernelParams == nullptr) return *why = "a kernel's arguments unread", false;
  }
  if (size > kMaxArgumentBytes) return *why = "a kernel with too many argument bytes", false;
  n.size = static_cast<std::uint32_t>(size);
  n.bytes = static_cast<unsigned char*>(std::calloc((size + 7) / 8 + 1, 8));
  if (n.bytes == nullptr) return *why = "no memory", false;
  if (packed != nullptr) {
    std::memcpy(n.bytes, packed, size);
  } else {
    for (int i = 0; i < n.params; ++i) {
      std::size_t offset = 0, length = 0;
      argument(d, n.kernel, static_cast<std::size_t>(i), offset, length);
      std::memcpy(n.bytes + offset, n.kernel.kernelParams[i], length);
    }
  }
  n.kernel.kernelParams = nullptr;  // the graph's: not ours to keep
  n.kernel.extra = nullptr;
  return true;
}

bool same_launch(const CUDA_KERNEL_NODE_PARAMS& a, const CUDA_KERNEL_NODE_PARAMS& b) noexcept {
  return a.func == b.func && a.kern == b.kern && a.ctx == b.ctx && a.gridDimX == b.gridDimX &&
         a.gridDimY == b.gridDimY && a.gridDimZ == b.gridDimZ && a.blockDimX == b.blockDimX &&
         a.blockDimY == b.blockDimY && a.blockDimZ == b.blockDimZ && a.sharedMemBytes == b.sharedMemBytes;
}

bool same_memset_but_destination(const CUDA_MEMSET_NODE_PARAMS& a, const CUDA_MEMSET_NODE_PARAMS& b) noexcept {
  return a.pitch == b.pitch && a.value == b.value && a.elementSize == b.elementSize && a.width == b.width &&
         a.height == b.height;
}

// Sets node `n` of `exec` to its arguments as they are in `n.bytes`.
bool set_node(const GraphDriver& d, CUgraphExec exec, const NodeCopy& n) noexcept {
  if (n.type == CU_GRAPH_NODE_TYPE_MEMSET)
    return d.cuGraphExecMemsetNodeSetParams != nullptr &&
           d.cuGraphExecMemsetNodeSetParams(exec, n.node, &n.memset, n.kernel.ctx) == CUDA_SUCCESS;
  CUDA_KERNEL_NODE_PARAMS k = n.kernel;
  void* arguments[kMaxArguments];
  std::size_t size = n.size;
  void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, n.bytes, CU_LAUNCH_PARAM_BUFFER_SIZE, &size, CU_LAUNCH_PARAM_END};
  if (n.packed) {
    k.extra = extra;
  } else {
    for (int i = 0; i < n.params; ++i) arguments[i] = n.bytes + n.offsets[i];
    k.kernelParams = arguments;
  }
  return d.cuGraphExecKernelNodeSetParams_v2(exec, n.node, &k) == CUDA_SUCCESS;
}

}  // namespace

GraphCopy* read_graph(const GraphDriver& d, CUgraph graph, CUcontext context, const char** why) noexcept {
  if (!has_inspection(d)) return *why = "the driver cannot read or update graph nodes", nullptr;
  CUgraphNode nodes[kMaxNodes + 1];
  std::size_t count = kMaxNodes + 1;
  if (d.cuGraphGetNodes(graph, nodes, &count) != CUDA_SUCCESS) return *why = "the graph's nodes unread", nullptr;
  if (count == 0 || count > kMaxNodes) return *why = "no nodes, or too many", nullptr;
  void* memory = std::calloc(1, sizeof(GraphCopy));
  if (memory == nullptr) return *why = "no memory", nullptr;
  GraphCopy* copy = new (memory) GraphCopy;
  for (std::size_t i = 0; i < count; ++i) {
    NodeCopy& n = copy->nodes[copy->count++];
    n.node = nodes[i];
    if (d.cuGraphNodeGetType(n.node, &n.type) != CUDA_SUCCESS) {
      *why = "a node of unknown type";
      return free_copy(copy), nullptr;
    }
    if (n.type == CU_GRAPH_NODE_TYPE_KERNEL) {
      if (!read_kernel(d, n, why)) return free_copy(copy), nullptr;
    } else if (n.type == CU_GRAPH_NODE_TYPE_MEMSET && d.cuGraphMemsetNodeGetParams != nullptr &&
               d.cuGraphMemsetNodeGetParams(n.node, &n.memset) == CUDA_SUCCESS && n.memset.height == 1) {
      n.kernel.ctx = context;  // a memset is set again in the context it was captured in
    } else {
      *why = "a node that is neither a kernel nor a 1-D memset";
      return free_copy(copy), nullptr;
    }
  }
  return copy;
}

void free_copy(GraphCopy* copy) noexcept {
  if (copy == nullptr) return;
  for (int i = 0; i < copy->count; ++i) std::free(copy->nodes[i].bytes);
  std::free(copy);
}

std::uint64_t Relocation::word_at(const NodeCopy& n, std::uint16_t offset) noexcept {
  if (offset == kMemsetDestination) return n.memset.dst;
  std::uint64_t word;
  std::memcpy(&word, n.bytes + offset, 8);
  return word;
}

namespace {

// Whether two graphs have the same nodes, each of the same kind and kernel (launch, argument
// layout): what the proof requires, and what resolve() requires of a fresh capture.
bool same_structure(const GraphCopy& a, const GraphCopy& b) noexcept {
  if (a.count != b.count) return false;
  for (int k = 0; k < a.count; ++k) {
    const NodeCopy& x = a.nodes[k];
    const NodeCopy& y = b.nodes[k];
    if (x.type != y.type) return false;
    if (x.type == CU_GRAPH_NODE_TYPE_MEMSET) {
      if (!same_memset_but_destination(x.memset, y.memset)) return false;
      continue;
    }
    if (!same_launch(x.kernel, y.kernel) || x.size != y.size || x.packed != y.packed || x.params != y.params ||
        std::memcmp(x.offsets, y.offsets, sizeof x.offsets) != 0)
      return false;
  }
  return true;
}

}  // namespace

Relocation* Relocation::prove(const GraphCopy& first, const std::uint64_t* first_tensors, GraphCopy* second,
                              const std::uint64_t* second_tensors, int count, const char** why,
                              bool* ambiguous) noexcept {
  *ambiguous = false;
  if (count < 1 || count > kMaxTensors) return *why = "too many tensors", nullptr;
  if (!same_structure(first, *second)) return *why = "captures of another shape (nodes or kernels)", nullptr;
  std::uint64_t move[kMaxTensors];
  std::uint32_t moved = 0;
  for (int i = 0; i < count; ++i) {
    move[i] = second_tensors[i] - first_tensors[i];
    if (move[i] != 0) moved |= std::uint32_t{1} << i;
  }

  void* memory = std::calloc(1, sizeof(Relocation));
  if (memory == nullptr) return *why = "no memory", nullptr;
  Relocation* r = new (memory) Relocation;
  r->count_ = count;
  auto refuse = [&](const char* reason) {
    *why = reason;
    destroy(r);
    return nullptr;
  };
  // A differing word: the tensors it may follow (moved by exactly its move, the word at or above
  // each one's address and less than kMaxOffset from it), a bit each.
  auto candidates = [&](std::uint64_t a, std::uint64_t b) {
    std::uint32_t who = 0;
    for (int i = 0; i < count; ++i)
      if (((moved >> i) & 1) && b - a == move[i] && a - first_tensors[i] < kMaxOffset) who |= std::uint32_t{1} << i;
    return who;
  };
  // A word both captures agree on that is a moved tensor's address shifted right (in the whole word
  // or in either half): it would not follow the tensor (graph_relocation.h).
  auto derived = [&](std::uint64_t word) {
    for (int i = 0; i < count; ++i) {
      if (!((moved >> i) & 1)) continue;
      for (const std::uint64_t value : {word, word & 0xFFFFFFFFu, word >> 32})
        if (shifted_address(value, first_tensors[i]) && shifted_address(value, second_tensors[i])) return true;
    }
    return false;
  };
  auto note = [&](int node, std::uint32_t who, std::uint16_t offset, std::uint64_t word) {
    if (r->patches_ == kMaxPatches) return false;
    r->patch_[r->patches_++] = {static_cast<std::uint8_t>(node), static_cast<std::uint16_t>(who), offset, word};
    return true;
  };
  for (int k = 0; k < first.count; ++k) {
    const NodeCopy& a = first.nodes[k];
    const NodeCopy& b = second->nodes[k];
    if (a.type == CU_GRAPH_NODE_TYPE_MEMSET) {
      if (a.memset.dst == b.memset.dst) continue;
      const std::uint32_t who = candidates(a.memset.dst, b.memset.dst);
      if (who == 0) return refuse("a memset no tensor's move explains");
      if (!note(k, who, kMemsetDestination, b.memset.dst)) return refuse("too many pointer words");
      continue;
    }
    // Word by word: 8-byte words at 8-byte offsets; a tail shorter than a word must not differ.
    std::uint32_t offset = 0;
    for (; offset + 8 <= a.size; offset += 8) {
      const std::uint64_t wa = word_at(a, static_cast<std::uint16_t>(offset));
      const std::uint64_t wb = word_at(b, static_cast<std::uint16_t>(offset));
      if (wa == wb) {
        if (derived(wa)) return *ambiguous = true, refuse("a tensor's address shifted right, the same in both captures");
        continue;
      }
      const std::uint32_t who = candidates(wa, wb);
      if (who == 0) return refuse("an argument no tensor's move explains");
      if (!note(k, who, static_cast<std::uint16_t>(offset), wb)) return refuse("too many pointer words");
    }
    if (std::memcmp(a.bytes + offset, b.bytes + offset, a.size - offset) != 0)
      return refuse("an argument no tensor's move explains");
    std::uint64_t tail = 0;
    std::memcpy(&tail, a.bytes + offset, a.size - offset);
    if (derived(tail)) return *ambiguous = true, refuse("a tensor's address shifted right, the same in both captures");
  }
  r->graph_ = second;
  r->moved_ = moved;
  for (int i = 0; i < count; ++i) {
    r->base_[i] = second_tensors[i];
    r->twin_[i] = std::uint32_t{1} << i;
    for (int j = 0; j < count; ++j)  // a tensor named twice is found through its twin
      if (first_tensors[j] == first_tensors[i] && second_tensors[j] == second_tensors[i]) r->twin_[i] |= std::uint32_t{1} << j;
    const int a = alignment_of(first_tensors[i]), b = alignment_of(second_tensors[i]);
    r->aligned_[i] = bits(a < b ? a : b, a < b ? b : a);
  }
  if (!r->every_moved_tensor_followed()) {
    r->graph_ = nullptr;  // the caller's still
    return refuse("a tensor that moved while no argument did (read through device memory)");
  }
  r->proven_ = moved;
  return r;
}

bool Relocation::every_moved_tensor_followed() const noexcept {
  std::uint32_t followed = 0;
  for (int p = 0; p < patches_; ++p) followed |= patch_[p].candidates;
  for (int i = 0; i < count_; ++i)
    if (((moved_ >> i) & 1) && !(followed & twin_[i])) return false;
  return true;
}

bool Relocation::unresolved(const std::uint64_t* tensors) const noexcept {
  std::uint64_t move;
  for (int p = 0; p < patches_; ++p)
    if ((patch_[p].candidates & (patch_[p].candidates - 1)) != 0 && !move_of(patch_[p], tensors, move)) return true;
  return false;
}

bool Relocation::resolve(const GraphCopy& fresh, const std::uint64_t* tensors) noexcept {
  if (!same_structure(*graph_, fresh)) return true;  // another kernel: no verdict on the words
  for (int p = 0; p < patches_; ++p) {
    Patch& patch = patch_[p];
    if ((patch.candidates & (patch.candidates - 1)) == 0) continue;
    const std::uint64_t seen = word_at(fresh.nodes[patch.node], patch.offset);
    std::uint32_t agree = 0;
    for (std::uint32_t left = patch.candidates; left != 0; left &= left - 1) {
      const int i = __builtin_ctz(left);
      if (patch.word + (tensors[i] - base_[i]) == seen) agree |= std::uint32_t{1} << i;
    }
    if (agree == 0) return false;
    patch.candidates = static_cast<std::uint16_t>(agree);
  }
  return every_moved_tensor_followed();
}

std::uint32_t Relocation::unproven_alignments(const std::uint64_t* tensors, std::uint32_t* refused) const noexcept {
  std::uint32_t outside = 0, known_bad = 0;
  for (int i = 0; i < count_; ++i) {
    const std::uint64_t bit = std::uint64_t{1} << alignment_of(tensors[i]);
    if (aligned_[i] & bit) continue;
    outside |= std::uint32_t{1} << i;
    if (misaligned_[i] & bit) known_bad |= std::uint32_t{1} << i;
  }
  *refused = known_bad;
  return outside;
}

void Relocation::widen_alignments(const std::uint64_t* tensors) noexcept {
  // A library chooses by thresholds of alignment: the kernel being the same at both ends, it is the
  // same in between, but for an alignment a check refused.
  for (int i = 0; i < count_; ++i) {
    const int z = alignment_of(tensors[i]);
    const int low = __builtin_ctzll(aligned_[i]), high = 63 - __builtin_clzll(aligned_[i]);
    aligned_[i] = bits(z < low ? z : low, z > high ? z : high) & ~misaligned_[i];
  }
}

void Relocation::refuse_alignments(const std::uint64_t* tensors, std::uint32_t mask) noexcept {
  for (int i = 0; i < count_; ++i)
    if ((mask >> i) & 1) misaligned_[i] |= std::uint64_t{1} << alignment_of(tensors[i]);
}

void Relocation::destroy(Relocation* relocation) noexcept {
  if (relocation == nullptr) return;
  free_copy(relocation->graph_);
  relocation->~Relocation();
  std::free(relocation);
}

Relocation::Applied Relocation::apply(const GraphDriver& driver, CUgraphExec exec,
                                      const std::uint64_t* tensors) noexcept {
  // A word whose high half would change is no plain pointer's for certain (a 32-bit field beside
  // another would take the carry), and a word whose candidates moved apart follows one of them, not
  // known which: nothing is changed, the call goes by pointer.
  std::uint64_t words[kMaxPatches];
  for (int p = 0; p < patches_; ++p) {
    std::uint64_t move;
    if (!move_of(patch_[p], tensors, move)) return Applied::kDeclined;
    words[p] = patch_[p].word + move;
    if ((words[p] ^ patch_[p].word) >> 32 != 0) return Applied::kDeclined;
  }
  bool dirty[kMaxNodes] = {};
  for (int p = 0; p < patches_; ++p) {
    const Patch& patch = patch_[p];
    NodeCopy& n = graph_->nodes[patch.node];
    const std::uint64_t word = words[p];
    if (word == (patch.offset == kMemsetDestination ? n.memset.dst : word_at(n, patch.offset))) continue;
    if (patch.offset == kMemsetDestination) n.memset.dst = word;
    else std::memcpy(n.bytes + patch.offset, &word, 8);
    dirty[patch.node] = true;
  }
  for (int k = 0; k < graph_->count; ++k) {
    if (!dirty[k]) continue;
    if (!set_node(driver, exec, graph_->nodes[k])) return Applied::kFailed;
    ++updates_;
  }
  return Applied::kApplied;
}

void Relocation::applied(std::uint64_t* tensors) const noexcept {
  // apply() moved every candidate of a word by one move (or changed nothing), and a tensor's twins
  // with it; an unproven tensor is where the proof saw it.
  for (int i = 0; i < count_; ++i) tensors[i] = base_[i];
  for (int p = 0; p < patches_; ++p) {
    const Patch& patch = patch_[p];
    const NodeCopy& n = graph_->nodes[patch.node];
    const std::uint64_t move = (patch.offset == kMemsetDestination ? n.memset.dst : word_at(n, patch.offset)) - patch.word;
    for (std::uint32_t left = patch.candidates; left != 0; left &= left - 1)
      for (std::uint32_t twins = twin_[__builtin_ctz(left)]; twins != 0; twins &= twins - 1)
        tensors[__builtin_ctz(twins)] = base_[__builtin_ctz(twins)] + move;
  }
}

bool Relocation::matches(const GraphCopy& fresh, const std::uint64_t* tensors, Difference* difference) const noexcept {
  Difference found;
  auto differ = [&](int node, std::uint16_t offset, std::uint64_t expected, std::uint64_t got, bool patched) {
    found = {node, offset, expected, got, patched};
    if (difference != nullptr) *difference = found;
    return false;
  };
  if (fresh.count != graph_->count) return differ(-1, Difference::kLaunch, graph_->count, fresh.count, false);
  for (int k = 0; k < fresh.count; ++k) {
    const NodeCopy& a = graph_->nodes[k];
    const NodeCopy& b = fresh.nodes[k];
    if (a.type != b.type) return differ(k, Difference::kLaunch, a.type, b.type, false);
    if (a.type == CU_GRAPH_NODE_TYPE_MEMSET) {
      std::uint64_t dst = a.memset.dst;
      bool patched = false;
      for (int p = 0; p < patches_; ++p)
        if (patch_[p].node == k && patch_[p].offset == kMemsetDestination)
          dst = relocated(patch_[p], tensors), patched = true;
      if (dst != b.memset.dst || !same_memset_but_destination(a.memset, b.memset))
        return differ(k, kMemsetDestination, dst, b.memset.dst, patched);
      continue;
    }
    if (!same_launch(a.kernel, b.kernel) || a.size != b.size)
      return differ(k, Difference::kLaunch, reinterpret_cast<std::uintptr_t>(a.kernel.func),
                    reinterpret_cast<std::uintptr_t>(b.kernel.func), false);
    for (std::uint32_t offset = 0; offset < a.size; offset += 8) {
      const std::uint32_t length = a.size - offset < 8 ? a.size - offset : 8;
      std::uint64_t want = 0, got = 0;
      std::memcpy(&want, a.bytes + offset, length);
      std::memcpy(&got, b.bytes + offset, length);
      bool patched = false;
      for (int p = 0; p < patches_; ++p)
        if (patch_[p].node == k && patch_[p].offset == offset) want = relocated(patch_[p], tensors), patched = true;
      if (want != got) return differ(k, static_cast<std::uint16_t>(offset), want, got, patched);
    }
  }
  return true;
}

}  // namespace cudnn_fastpath::replay
