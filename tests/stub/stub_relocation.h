// For tests: moving a captured graph's tensors by hand, with nothing but the driver's API, the way
// a shim would: the same call captured twice with other tensors, every node's arguments read back
// (cuGraphGetNodes, cuGraphNodeGetType, cuGraphKernelNodeGetParams_v2 and cuFuncGetParamInfo, or
// the extra buffer; cuGraphMemsetNodeGetParams), each argument that differs explained by one
// tensor's move, and an exec of the first graph rewritten for a third set of tensors
// (cuGraphExecKernelNodeSetParams_v2, cuGraphExecMemsetNodeSetParams, cuTensorMapReplaceAddress).
// Options turn the rules that make it correct off one at a time, and a naive rule on, so that a
// test shows what each adversarial kernel style of the stubs (stub_kernel_style.h) does to a
// relocation that lacks it.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

namespace stubreloc {

// One tensor: where it is in the first capture, in the second, and in the call to replay.
struct Move {
  std::uintptr_t first, second, target;
};

struct Options {
  bool split_pairs = true;   // a pointer in two 4-byte parameters (both halves matched to a tensor)
  bool tensor_maps = true;   // 128-byte parameters that differ: tensor maps, moved by cuTensorMapReplaceAddress
  bool memsets = true;       // memset nodes' destinations
  bool every_tensor = true;  // refuse when a tensor moved but no argument did
  int only_kernel = -1;      // rewrite only this kernel node (counted among the kernel nodes; -1: all)
  // Naive: every differing 8-byte word moved by tensor `output`'s move, nothing proven.
  bool output_delta = false;
  int output = 0;
};

// A graph's node as the driver's API shows it.
struct Node {
  CUgraphNode handle = nullptr;
  CUgraphNodeType type = CU_GRAPH_NODE_TYPE_EMPTY;
  CUDA_KERNEL_NODE_PARAMS kernel{};
  std::vector<std::pair<std::size_t, std::size_t>> layout;  // (offset, size) of each parameter
  std::vector<unsigned char> args;
  CUDA_MEMSET_NODE_PARAMS memset{};
};

inline std::vector<Node> read(CUgraph graph) {
  std::size_t count = 0;
  cuGraphGetNodes(graph, nullptr, &count);
  std::vector<CUgraphNode> handles(count);
  cuGraphGetNodes(graph, handles.data(), &count);
  std::vector<Node> nodes(count);
  for (std::size_t i = 0; i < count; ++i) {
    Node& n = nodes[i];
    n.handle = handles[i];
    cuGraphNodeGetType(n.handle, &n.type);
    if (n.type == CU_GRAPH_NODE_TYPE_MEMSET) cuGraphMemsetNodeGetParams(n.handle, &n.memset);
    if (n.type != CU_GRAPH_NODE_TYPE_KERNEL || cuGraphKernelNodeGetParams_v2(n.handle, &n.kernel) != CUDA_SUCCESS)
      continue;
    for (std::size_t p = 0;; ++p) {
      std::size_t offset = 0, size = 0;
      const CUresult r = n.kernel.kern != nullptr ? cuKernelGetParamInfo(n.kernel.kern, p, &offset, &size)
                                                  : cuFuncGetParamInfo(n.kernel.func, p, &offset, &size);
      if (r != CUDA_SUCCESS) break;
      n.layout.emplace_back(offset, size);
    }
    if (n.kernel.extra != nullptr) {  // {BUFFER_POINTER, p, BUFFER_SIZE, &size, END}
      const auto* bytes = static_cast<const unsigned char*>(n.kernel.extra[1]);
      n.args.assign(bytes, bytes + *static_cast<const std::size_t*>(n.kernel.extra[3]));
    } else {
      for (std::size_t p = 0; p < n.layout.size(); ++p) {
        const auto [offset, size] = n.layout[p];
        if (n.args.size() < offset + size) n.args.resize(offset + size);
        std::memcpy(n.args.data() + offset, n.kernel.kernelParams[p], size);
      }
    }
  }
  return nodes;
}

namespace detail {

inline std::uint64_t load(const std::vector<unsigned char>& bytes, std::size_t offset, std::size_t size) {
  std::uint64_t value = 0;
  std::memcpy(&value, bytes.data() + offset, size);
  return value;
}

inline void store(std::vector<unsigned char>& bytes, std::size_t offset, std::size_t size, std::uint64_t value) {
  std::memcpy(bytes.data() + offset, &value, size);
}

// The one tensor whose move between the captures is `delta`, or -1.
inline int tensor_moved_by(const std::vector<Move>& moves, std::uint64_t delta) {
  int found = -1;
  for (std::size_t t = 0; t < moves.size(); ++t)
    if (delta != 0 && moves[t].second - moves[t].first == delta) {
      if (found != -1) return -1;  // two tensors share it: nothing is proven
      found = static_cast<int>(t);
    }
  return found;
}

}  // namespace detail

// Rewrites `exec` (instantiated from `first`) for the moves' targets: "" when done, else why it
// refused (and then nothing is rewritten).
inline std::string relocate(CUgraphExec exec, CUgraph first, CUgraph second, const std::vector<Move>& moves,
                            const Options& options = {}) {
  using detail::load;
  using detail::store;
  const std::vector<Node> a = read(first), b = read(second);
  if (a.size() != b.size()) return "the captures have different nodes";
  std::vector<bool> found(moves.size(), false);
  std::vector<std::pair<std::size_t, std::vector<unsigned char>>> kernel_updates;
  std::vector<std::pair<std::size_t, CUDA_MEMSET_NODE_PARAMS>> memset_updates;
  const auto output_move = moves[options.output].target - moves[options.output].first;
  int kernel_index = -1;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const std::string node = "node " + std::to_string(i) + ": ";
    if (a[i].type != b[i].type) return node + "another type";
    if (a[i].type == CU_GRAPH_NODE_TYPE_MEMSET) {
      if (!options.memsets) continue;
      CUDA_MEMSET_NODE_PARAMS m = a[i].memset;
      const std::uint64_t delta = b[i].memset.dst - m.dst;
      if (b[i].memset.value != m.value || b[i].memset.width != m.width || b[i].memset.elementSize != m.elementSize)
        return node + "another memset";
      if (delta == 0) continue;
      if (options.output_delta) {
        m.dst += output_move;
      } else {
        const int t = detail::tensor_moved_by(moves, delta);
        if (t < 0) return node + "a memset moved by no tensor's move";
        found[t] = true;
        m.dst += moves[t].target - moves[t].first;
      }
      memset_updates.emplace_back(i, m);
      continue;
    }
    if (a[i].type != CU_GRAPH_NODE_TYPE_KERNEL) return node + "neither a kernel nor a memset";
    ++kernel_index;
    if (a[i].kernel.func != b[i].kernel.func) return node + "another kernel";
    if (a[i].args.size() != b[i].args.size()) return node + "another argument size";
    if (options.only_kernel >= 0 && kernel_index != options.only_kernel) continue;
    std::vector<unsigned char> rewritten = a[i].args, seen = a[i].args;  // seen: b's bytes where explained
    const std::vector<unsigned char>& later = b[i].args;
    if (options.tensor_maps && !options.output_delta) {
      for (const auto [offset, size] : a[i].layout) {
        if (size != sizeof(CUtensorMap) || offset % 64 != 0 ||
            std::memcmp(&a[i].args[offset], &later[offset], size) == 0)
          continue;
        bool matched = false;
        for (std::size_t t = 0; t < moves.size() && !matched; ++t) {
          CUtensorMap map;
          std::memcpy(&map, &a[i].args[offset], sizeof map);
          if (cuTensorMapReplaceAddress(&map, reinterpret_cast<void*>(moves[t].second)) != CUDA_SUCCESS ||
              std::memcmp(&map, &later[offset], sizeof map) != 0)
            continue;
          if (cuTensorMapReplaceAddress(&map, reinterpret_cast<void*>(moves[t].target)) != CUDA_SUCCESS)
            return node + "a tensor map that cannot take the target's address";
          std::memcpy(&rewritten[offset], &map, sizeof map);
          std::memcpy(&seen[offset], &later[offset], size);
          found[t] = matched = true;
        }
        if (!matched) return node + "a tensor map moved to no tensor";
      }
    }
    if (options.split_pairs && !options.output_delta) {
      for (const auto [low, low_size] : a[i].layout)
        for (const auto [high, high_size] : a[i].layout) {
          if (low_size != 4 || high_size != 4 || low == high) continue;
          const std::uint64_t before = load(a[i].args, low, 4) | load(a[i].args, high, 4) << 32;
          const std::uint64_t after = load(later, low, 4) | load(later, high, 4) << 32;
          for (std::size_t t = 0; t < moves.size(); ++t) {
            // Both halves must make the tensor's very address, in both captures.
            if (before == after || before != moves[t].first || after != moves[t].second) continue;
            store(rewritten, low, 4, moves[t].target);
            store(rewritten, high, 4, moves[t].target >> 32);
            store(seen, low, 4, after);
            store(seen, high, 4, after >> 32);
            found[t] = true;
          }
        }
    }
    for (std::size_t w = 0; w + 8 <= seen.size(); w += 8) {
      const std::uint64_t before = load(seen, w, 8), after = load(later, w, 8);
      if (before == after) continue;
      if (options.output_delta) {
        store(rewritten, w, 8, load(rewritten, w, 8) + output_move);
        continue;
      }
      const int t = detail::tensor_moved_by(moves, after - before);
      if (t < 0) return node + "the word at " + std::to_string(w) + " moved by no tensor's move";
      found[t] = true;
      store(rewritten, w, 8, before + (moves[t].target - moves[t].first));
    }
    if (rewritten != a[i].args) kernel_updates.emplace_back(i, std::move(rewritten));
  }
  if (options.every_tensor && !options.output_delta)
    for (std::size_t t = 0; t < moves.size(); ++t)
      if (moves[t].second != moves[t].first && !found[t])
        return "tensor " + std::to_string(t) + " moved, and no argument with it";

  for (auto& [i, bytes] : kernel_updates) {
    CUDA_KERNEL_NODE_PARAMS p = a[i].kernel;
    std::size_t size = bytes.size();
    void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, bytes.data(), CU_LAUNCH_PARAM_BUFFER_SIZE, &size,
                     CU_LAUNCH_PARAM_END};
    std::vector<void*> params;
    for (const auto [offset, unused] : a[i].layout) params.push_back(bytes.data() + offset);
    p.extra = a[i].kernel.extra != nullptr ? extra : nullptr;
    p.kernelParams = a[i].kernel.extra != nullptr ? nullptr : params.data();
    if (cuGraphExecKernelNodeSetParams_v2(exec, a[i].handle, &p) != CUDA_SUCCESS) return "an update was refused";
  }
  CUcontext context = nullptr;  // the tests' graphs are captured in the thread's current context
  cuCtxGetCurrent(&context);
  for (const auto& [i, m] : memset_updates)
    if (cuGraphExecMemsetNodeSetParams(exec, a[i].handle, &m, context) != CUDA_SUCCESS)
      return "a memset update was refused";
  return "";
}

}  // namespace stubreloc
