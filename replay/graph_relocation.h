// Relocation: one captured graph of a library call, pointed at the tensors of another call of the
// same shape by rewriting the pointers in its nodes' arguments (cuGraphExecKernelNodeSetParams on the
// instantiated graph: no capture, no instantiation), only where that is proven right.
//
// The proof. The same call shape is captured twice, with tensors that moved between the two, and
// every node's arguments are read back. The graphs must have the same nodes, each a kernel (the same
// function, launch dimensions and argument layout) or a 1-D memset. Every 8-byte argument word (and
// memset destination) that differs between the two must follow a tensor: word2 - word1 is that
// tensor's move, and the word is its address plus the same offset in both (at or above the address,
// less than 4 GiB away: a pointer split into halves, or packed with another field, is not a pointer
// word). Nothing else may differ. Tensors that moved alike (a fresh input and a fresh output that
// the allocator placed one after the other, call after call) may each explain a word: the word keeps
// them all as its candidates. A call in which a word's candidates moved alike again is relocated
// whichever it follows; one in which they moved apart is checked against a fresh capture, which
// tells which the word follows (resolve()). Every tensor that moved must be a candidate of at least
// one word: a tensor that moved while no word changed is read through device memory, and a graph
// that does that is never relocated. A tensor that did not move is unproven: the graph is good for
// calls whose unproven tensors are where they were (the caller keeps them in the key). A tensor
// named twice (C == D) is one tensor.
//
// What two captures cannot show. A value derived from a tensor's address that both captures agree
// on looks like a constant: the high half of an address that stayed inside one 4 GiB region, the
// low half of one that moved by a multiple of 4 GiB, a page index of one that moved inside its page.
// So the caller keeps each tensor's high 32 bits in the call's shape (a relocation never leaves the
// 4 GiB region the proof saw, and no tensor's move can then leave its low half unchanged); a word
// the two captures agree on that is a moved tensor's granule index (its address shifted right by 1
// to 24 bits, a page index say, in a whole word or in either 4-byte half of one) is refused as
// ambiguous (another pair of captures may move the tensor further); and apply() rewrites no word
// whose high 32 bits its tensor's move would change (a 32-bit field beside another would take the
// carry): that call goes by pointer. A library may choose its kernel by a tensor's alignment (its
// trailing zero bits, each count a class): the proof holds for the alignments its
// captures had (each tensor's from the lower to the higher, the kernel being the same at both), and
// a call of another alignment is checked against a fresh capture before the range widens to it
// (widen_alignments(), refuse_alignments()).
//
// What cannot be proven is refused, with a reason; the caller then keeps replaying by pointer (or
// runs the call directly). TMA tensor maps (128-byte opaque arguments) are never rewritten: a map
// whose bytes differ is a difference no tensor's move explains, so its graph is refused.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstdint>

#include "replay/graph_driver.h"

namespace cudnn_fastpath::replay {

// The most tensors a call may name for relocation, the most nodes of a graph, and the most arguments
// and argument bytes of a kernel.
inline constexpr int kMaxTensors = 16;
inline constexpr int kMaxNodes = 8;
inline constexpr int kMaxArguments = 64;
inline constexpr std::size_t kMaxArgumentBytes = 4096;

// One node of a captured graph, as read back.
struct NodeCopy {
  CUgraphNode node = nullptr;
  CUgraphNodeType type = CU_GRAPH_NODE_TYPE_EMPTY;
  CUDA_KERNEL_NODE_PARAMS kernel{};  // a kernel's, its argument pointers cleared (the bytes are below)
  CUDA_MEMSET_NODE_PARAMS memset{};  // a memset's
  bool packed = false;               // its arguments came as one packed buffer (`extra`), not one pointer each
  std::uint32_t size = 0;            // argument bytes
  std::uint16_t params = 0;          // arguments (0 when packed)
  std::uint16_t offsets[kMaxArguments] = {};  // each argument's offset in `bytes`
  unsigned char* bytes = nullptr;    // `size` of them (malloc), 8-byte aligned
};

// A captured graph's nodes (malloc, as their bytes).
struct GraphCopy {
  int count = 0;
  NodeCopy nodes[kMaxNodes];
};

// Reads `graph`'s nodes into a new GraphCopy (free it with free_copy()); null, with `why`, when a
// node is of another type than kernel or 1-D memset, or cannot be read, or the driver lacks the calls.
// `context`: the one the graph was captured in (a memset node is set again in it).
GraphCopy* read_graph(const GraphDriver& driver, CUgraph graph, CUcontext context, const char** why) noexcept;
void free_copy(GraphCopy* copy) noexcept;

// Which words of a graph follow which tensor: proven from two captures (prove()), applied to the
// graph of the second (apply()).
class Relocation {
 public:
  // The tensors' addresses as the call names them (`count` of them, up to kMaxTensors), for both
  // captures: `first` and `second` (the graph kept, whose copy becomes the relocation's own: the
  // caller gives it up). Null, with `why`, when the rules above refuse it; `ambiguous` when another
  // pair of captures may prove it (a moved tensor's granule index the two agreed on).
  static Relocation* prove(const GraphCopy& first, const std::uint64_t* first_tensors, GraphCopy* second,
                           const std::uint64_t* second_tensors, int count, const char** why,
                           bool* ambiguous) noexcept;
  static void destroy(Relocation* relocation) noexcept;

  // Whether tensor `i` was proven (moved in a word); an unproven one must be where it was.
  bool proven(int i) const noexcept { return (proven_ >> i) & 1; }
  std::uint32_t proven_mask() const noexcept { return proven_; }
  const std::uint64_t* base() const noexcept { return base_; }
  // The kept graph's nodes as `exec` holds them now, and the tensors they are for (the proof's
  // second, then those of the last apply(), read back from the words: nothing kept per call):
  // together, a capture of the call at those tensors, the first of a new proof when an unproven
  // tensor moves.
  const GraphCopy& graph() const noexcept { return *graph_; }
  void applied(std::uint64_t* tensors) const noexcept;

  // The tensors (a bit each) whose alignment (trailing zero bits of the address) is outside what the
  // proof and the checks since saw: a library may have chosen its kernel by it. Those of a mask
  // `refused` would be (a check found another graph for that alignment).
  std::uint32_t unproven_alignments(const std::uint64_t* tensors, std::uint32_t* refused) const noexcept;
  // A fresh capture at `tensors` matched the relocation: their alignments are proven too.
  void widen_alignments(const std::uint64_t* tensors) noexcept;
  // A fresh capture at `tensors` did not: the alignments of the tensors in `mask` are refused.
  void refuse_alignments(const std::uint64_t* tensors, std::uint32_t mask) noexcept;

  // Whether a call at `tensors` needs a fresh capture to tell which of a word's candidates it
  // follows (they moved apart): resolve() first.
  bool unresolved(const std::uint64_t* tensors) const noexcept;
  // Narrows each word's candidates to those a fresh capture of the call at `tensors` agrees with.
  // False when that leaves a word with none, or a tensor that moved in the proof in no word's: the
  // relocation is wrong (the caller gives the shape up). A fresh graph of other nodes or kernels
  // (chosen by an alignment) resolves nothing and is no verdict: true, and matches() says.
  bool resolve(const GraphCopy& fresh, const std::uint64_t* tensors) noexcept;

  // Points `exec` (instantiated from the second capture's graph) at `tensors`: the argument words of
  // every node that changes from what `exec` holds now are rewritten, and the node set again.
  // kDeclined, nothing changed: a word's high 32 bits would change, or its candidates moved apart
  // and are unresolved (the call goes by pointer). kFailed: the driver refused an update; `exec` is
  // then in an unknown state (destroy it).
  enum class Applied { kApplied, kDeclined, kFailed };
  Applied apply(const GraphDriver& driver, CUgraphExec exec, const std::uint64_t* tensors) noexcept;

  // Where a fresh capture differs from what apply() would make of the kept graph: the node, the
  // argument's byte offset (kMemsetDestination: a memset's destination; kLaunch: the function, the
  // launch dimensions or the node count), and the word each holds there.
  struct Difference {
    static constexpr std::uint16_t kLaunch = 0xFFFE;
    int node = -1;
    std::uint16_t offset = 0;
    std::uint64_t expected = 0, fresh = 0;
    bool patched = false;  // a word the relocation rewrites
  };

  // Whether a fresh capture of the call with `tensors` (`fresh`) is what apply() would make of the
  // kept graph: verify mode's check. Where it is not, `difference` (if given) says where.
  bool matches(const GraphCopy& fresh, const std::uint64_t* tensors, Difference* difference = nullptr) const noexcept;

  // How many node updates apply() has made (for the tests).
  std::uint64_t updates() const noexcept { return updates_; }

 private:
  struct Patch {
    std::uint8_t node;
    std::uint16_t candidates;  // the tensors the word may follow, a bit each (one, once resolved)
    std::uint16_t offset;      // in the node's argument bytes; memset: 0xFFFF, its destination
    std::uint64_t word;        // at the base tensors
  };
  static_assert(kMaxTensors <= 16, "a patch's candidates are 16 bits");
  static constexpr int kMaxPatches = 64;

  GraphCopy* graph_ = nullptr;                 // the kept graph's nodes, as they are in `exec` now
  std::uint64_t base_[kMaxTensors] = {};       // the tensors the patches' words are for
  std::uint32_t twin_[kMaxTensors] = {};       // each tensor with those named at its address in both captures
  std::uint64_t aligned_[kMaxTensors] = {};    // each tensor's proven alignments: bit z for z trailing zeros
  std::uint64_t misaligned_[kMaxTensors] = {};  // and those a check refused
  int count_ = 0;
  std::uint32_t moved_ = 0;  // the tensors that moved between the proof's captures
  std::uint32_t proven_ = 0;
  int patches_ = 0;
  Patch patch_[kMaxPatches];
  std::uint64_t updates_ = 0;

  static std::uint64_t word_at(const NodeCopy& n, std::uint16_t offset) noexcept;
  bool every_moved_tensor_followed() const noexcept;
  // A patch's word at `tensors`, by its first candidate (verify mode's expectation).
  std::uint64_t relocated(const Patch& p, const std::uint64_t* tensors) const noexcept {
    const int i = __builtin_ctz(p.candidates);
    return p.word + (tensors[i] - base_[i]);
  }
  // The move of a patch's candidates from the base tensors to `tensors`; false when they moved apart.
  bool move_of(const Patch& p, const std::uint64_t* tensors, std::uint64_t& move) const noexcept {
    std::uint32_t left = p.candidates;
    const int first = __builtin_ctz(left);
    move = tensors[first] - base_[first];
    for (left &= left - 1; left != 0; left &= left - 1) {
      const int i = __builtin_ctz(left);
      if (tensors[i] - base_[i] != move) return false;
    }
    return true;
  }
};

}  // namespace cudnn_fastpath::replay
