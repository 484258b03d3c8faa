// For tests of the stub libraries' kernel styles (stub_kernel_style.h): a library call on a set of
// tensors, made directly, in reference mode, captured, and captured twice and moved by hand
// (stub_relocation.h) to a third set, each compared with the reference call's output.
#pragma once

#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <functional>
#include <vector>

#include "tests/stub/stub_cuda.h"
#include "tests/stub/stub_kernel_style.h"
#include "tests/stub/stub_relocation.h"

namespace stylecheck {

// Where the tensors are: in the first capture, the second, the call to replay, and a replay whose
// first tensor is only 16-byte aligned. Tensor i of each set is 0x1000 * (i + 1) bytes into an
// arena, moved by a multiple of 256 (different for each tensor between the two captures, as a
// relocation needs to tell them apart).
enum Place { kFirst, kSecond, kTarget, kTargetMisaligned };

constexpr std::uint64_t kOutputBefore = 0x0C0C0C0C0C0C0C0Cull;  // an output's bytes before a call
constexpr std::uint64_t kUntouched = 0x5E5E5E5E5E5E5E5Eull;    // an output no launch may write

inline unsigned char* arena() {
  alignas(4096) static unsigned char bytes[0x10000];
  return bytes;
}

inline std::vector<unsigned char*> tensors(Place place, int count) {
  std::vector<unsigned char*> set;
  for (int i = 0; i < count; ++i) {
    std::size_t offset = 0x1000 * static_cast<std::size_t>(i + 1);
    if (place == kSecond) offset += 0x100 * static_cast<std::size_t>(i + 1);
    if (place == kTarget || place == kTargetMisaligned) offset += 0x800 + 0x100 * static_cast<std::size_t>(i);
    if (place == kTargetMisaligned && i == 0) offset += 0x10;
    set.push_back(arena() + offset);
  }
  return set;
}

// One library call on `count` tensors, `output` the one it writes its digest into.
struct Library {
  int count;
  int output;
  CUstream stream;  // where the library's work goes: capturing it captures the call
  std::function<void(const std::vector<unsigned char*>&)> call;  // makes the call (REQUIREs success)
  std::function<void(bool)> reference;                           // the library's reference mode on or off
};

// Each input's own first bytes (the tensor and the place, so that a stale pointer reads another
// value), the output's kOutputBefore.
inline void fill(const Library& lib, const std::vector<unsigned char*>& set) {
  for (int i = 0; i < lib.count; ++i) {
    const std::uint64_t value =
        i == lib.output ? kOutputBefore : 0xDA7A000000000000ull | reinterpret_cast<std::uintptr_t>(set[i]);
    std::memcpy(set[i], &value, sizeof value);
  }
}

inline std::uint64_t output(const Library& lib, const std::vector<unsigned char*>& set) {
  std::uint64_t value;
  std::memcpy(&value, set[lib.output], sizeof value);
  return value;
}

inline std::uint64_t direct(const Library& lib, const std::vector<unsigned char*>& set) {
  fill(lib, set);
  lib.call(set);
  return output(lib, set);
}

inline std::uint64_t reference(const Library& lib, const std::vector<unsigned char*>& set) {
  lib.reference(true);
  const std::uint64_t expected = direct(lib, set);
  lib.reference(false);
  return expected;
}

// A graph captured from the call on `set`, and an exec of it.
struct Graph {
  CUgraph graph = nullptr;
  CUgraphExec exec = nullptr;
  Graph(const Library& lib, const std::vector<unsigned char*>& set) {
    REQUIRE(cuStreamBeginCapture_v2(lib.stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL) == CUDA_SUCCESS);
    lib.call(set);
    REQUIRE(cuStreamEndCapture(lib.stream, &graph) == CUDA_SUCCESS);
    REQUIRE(cuGraphInstantiateWithFlags(&exec, graph, 0) == CUDA_SUCCESS);
  }
  ~Graph() {
    cuGraphExecDestroy(exec);
    cuGraphDestroy(graph);
  }
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;
  std::vector<stubreloc::Node> nodes() const { return stubreloc::read(graph); }
};

// Launches `exec` with the inputs of `set` filled and returns its output; with `spared` (the set
// the graph was captured on), its output must stay as it was.
inline std::uint64_t launch(const Library& lib, CUgraphExec exec, const std::vector<unsigned char*>& set,
                            const std::vector<unsigned char*>* spared = nullptr) {
  fill(lib, set);
  if (spared != nullptr) std::memcpy((*spared)[lib.output], &kUntouched, sizeof kUntouched);
  REQUIRE(cuGraphLaunch(exec, lib.stream) == CUDA_SUCCESS);
  if (spared != nullptr) CHECK(output(lib, *spared) == kUntouched);
  return output(lib, set);
}

inline std::vector<stubreloc::Move> moves(const std::vector<unsigned char*>& first,
                                          const std::vector<unsigned char*>& second,
                                          const std::vector<unsigned char*>& target) {
  std::vector<stubreloc::Move> m;
  for (std::size_t i = 0; i < first.size(); ++i)
    m.push_back({reinterpret_cast<std::uintptr_t>(first[i]), reinterpret_cast<std::uintptr_t>(second[i]),
                 reinterpret_cast<std::uintptr_t>(target[i])});
  return m;
}

// The two captures and the target of a relocation, with the reference output for the target.
struct Relocation {
  const Library& lib;
  std::vector<unsigned char*> first, second, target;
  Graph first_graph, second_graph;
  std::uint64_t expected;
  Relocation(const Library& l, Place to = kTarget)
      : lib(l),
        first(tensors(kFirst, l.count)),
        second(tensors(kSecond, l.count)),
        target(tensors(to, l.count)),
        first_graph(l, first),
        second_graph(l, second),
        expected(reference(l, target)) {}
  // Rewrites a new exec of the first graph with `options`: "" when done, else why refused; and
  // the output of a launch of it on the target (when done), which must leave the first set's
  // output alone when `correct`.
  std::pair<std::string, std::uint64_t> run(const stubreloc::Options& options, bool correct = false) const {
    CUgraphExec exec = nullptr;
    REQUIRE(cuGraphInstantiateWithFlags(&exec, first_graph.graph, 0) == CUDA_SUCCESS);
    stubreloc::Options o = options;
    o.output = lib.output;
    const std::string refused = stubreloc::relocate(exec, first_graph.graph, second_graph.graph,
                                                    moves(first, second, target), o);
    const std::uint64_t out = refused.empty() ? launch(lib, exec, target, correct ? &first : nullptr) : 0;
    cuGraphExecDestroy(exec);
    return {refused, out};
  }
  // A launch of a new exec of the first graph, not rewritten at all.
  std::uint64_t unmoved() const {
    CUgraphExec exec = nullptr;
    REQUIRE(cuGraphInstantiateWithFlags(&exec, first_graph.graph, 0) == CUDA_SUCCESS);
    fill(lib, target);
    REQUIRE(cuGraphLaunch(exec, lib.stream) == CUDA_SUCCESS);
    cuGraphExecDestroy(exec);
    return output(lib, target);
  }
};

// What every style must give: a direct call, a capture and its launch, and (but for `indirect`,
// which holds no tensor pointer in its arguments) a graph captured on other tensors and moved
// correctly, all write the reference call's output.
inline void check_correct(const Library& lib, StubKernelStyle style) {
  const std::vector<unsigned char*> target = tensors(kTarget, lib.count);
  const std::uint64_t expected = reference(lib, target);
  CHECK(expected != kOutputBefore);
  CHECK(direct(lib, target) == expected);
  {
    fill(lib, target);
    Graph graph(lib, target);
    CHECK(output(lib, target) == kOutputBefore);  // recorded, not run
    CHECK(launch(lib, graph.exec, target) == expected);
  }
  const Relocation r(lib);
  CHECK(r.expected == expected);
  const StubCudaGraphCounters before = stubcuda_graph_counters();
  const auto [refused, out] = r.run({}, true);
  if (style == STUB_KERNEL_STYLE_INDIRECT) {
    CHECK_FALSE(refused.empty());  // every tensor moved, no argument did: nothing to prove
  } else if (style == STUB_KERNEL_STYLE_BY_PAGE_ALIGNMENT) {
    CHECK(refused.find("another kernel") != std::string::npos);  // the first set 4 KiB aligned, the second not
  } else {
    INFO(refused);
    REQUIRE(refused.empty());
    CHECK(out == expected);
    CHECK(stubcuda_graph_counters().kernel_node_updates > before.kernel_node_updates);
    CHECK(stubcuda_graph_counters().memset_node_updates ==
          before.memset_node_updates + (style == STUB_KERNEL_STYLE_MEMSET ? 1 : 0));
  }
}

}  // namespace stylecheck
