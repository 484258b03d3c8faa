// Relocation (shim/engine/shape_cache.h) of the batch norms: calls whose tensors move every call,
// launched as their shape's graph pointed at each call's tensors where that was proven right, in
// the stub's kernel style LEGACY_SCENARIO_STYLE names (tests/support/moving_tensors.h; plain when
// unset).
#include <cstring>
#include <thread>
#include <vector>

#include "tests/legacy/legacy_scenario.h"
#include "tests/support/moving_tensors.h"

namespace legacy_scenario {

// Each batch norm (inference, training forward, backward) kCalls times on a World of its own, its
// first input new every call and its first output too, that output 256-byte aligned for two calls,
// then 16-byte aligned (and no more) for two (another alignment is another shape: a library may
// choose another kernel by it); every other input and output in a 256-byte-aligned slot of its own,
// which stays. Each op's calls on a thread of their own (the admission rule's state is the thread's:
// an op whose shapes are refused wastes their captures, and must not back the next one's family off).
// Prints relocation.OP.* and relocation.OP.mismatches for each, and "calls".
int relocation() {
  constexpr int kCalls = 200;
  if (g_ref.stubcudnn_set_kernel_style(moving::style_from_env("LEGACY_SCENARIO_STYLE")) < 0)
    die("stubcudnn_set_kernel_style");
  static moving::Slots inputs(kCalls + 8, 0x1A000), outputs(2 * kCalls + 6, 0);
  for (const StubCudnnLegacyOp op :
       {STUBCUDNN_BATCHNORM_FORWARD_INFERENCE, STUBCUDNN_BATCHNORM_FORWARD_TRAINING_EX, STUBCUDNN_BATCHNORM_BACKWARD_EX}) {
    World& w = make_world(ops()[op], g_main.handle);
    // The World's other buffers are 16 bytes apart: the stub's by_alignment kernel would never be
    // chosen. The slots past the moving ones stay.
    for (int i = 1; i < w.op.inputs; ++i) w.in[i] = inputs.at(kCalls + i);
    for (int i = 1; i < w.op.outputs; ++i) w.out[i] = outputs.at(2 * kCalls + i);
    // Not zero: the memset style's kernel reads its output after the memset zeroed it, and a memset
    // left at another output would leave this.
    w.output_before = 0x0C0C0C0C0C0C0C0Cull;
    const long long mismatches = g_mismatches.load();
    const Snapshot before = Snapshot::now();
    std::thread([&] {
      for (int i = 0; i < kCalls; ++i) {
        w.in[0] = inputs.at(i);
        w.out[0] = outputs.at(2 * i, i / 2 % 2 == 0 ? 0 : 16);
        check(w);
      }
    }).join();
    const std::string prefix = std::string("relocation.") + w.op.name + ".";
    print_since(before, prefix);
    print(prefix + "mismatches", g_mismatches.load() - mismatches);
  }
  print("calls", kCalls);
  return 0;
}

// Each batch norm with its first input and output new every call and moved alike (slot i of two
// pools, call after call, as an allocator places a fresh input and a fresh output): a word of the
// graph may follow either, so it keeps both as candidates and is relocated whichever it follows
// (graph_relocation.h). In the loads `apart` and `apart_swapped` the output takes every other slot
// from the kCalls / 2-th call on: the candidates moved apart, and a fresh capture tells which each
// word follows. `apart_swapped` takes the input from the pool `apart` takes the output from and the
// other way round, so that the word both may follow is the input's in one and the output's in the
// other (whichever lies higher): no fixed choice between them is right in both. Every output checked
// against the reference. Prints LOAD.OP.* and LOAD.OP.mismatches, and "calls".
int relocation_alike() {
  constexpr int kCalls = 200;
  static moving::Slots first(2 * kCalls + 8, 0x2A000), second(2 * kCalls + 8, 0);
  struct Load {
    const char* name;
    bool apart, swapped;
  };
  static std::vector<Handle> handles(9);  // a shape of its own for each load and op; never destroyed
  int next_handle = 0;
  for (const Load load : {Load{"alike", false, false}, Load{"apart", true, false}, Load{"apart_swapped", true, true}})
    for (const StubCudnnLegacyOp op : {STUBCUDNN_BATCHNORM_FORWARD_INFERENCE, STUBCUDNN_BATCHNORM_FORWARD_TRAINING_EX,
                                       STUBCUDNN_BATCHNORM_BACKWARD_EX}) {
      moving::Slots& inputs = load.swapped ? second : first;
      moving::Slots& outputs = load.swapped ? first : second;
      Handle& h = handles[next_handle++];
      h.open();
      World& w = make_world(ops()[op], h.handle);
      for (int i = 1; i < w.op.inputs; ++i) w.in[i] = inputs.at(2 * kCalls + i);
      for (int i = 1; i < w.op.outputs; ++i) w.out[i] = outputs.at(2 * kCalls + 1 + i);
      w.output_before = 0x0C0C0C0C0C0C0C0Cull;
      const long long mismatches = g_mismatches.load();
      const Snapshot before = Snapshot::now();
      std::thread([&] {
        for (int i = 0; i < kCalls; ++i) {
          w.in[0] = inputs.at(i);
          w.out[0] = outputs.at(load.apart && i >= kCalls / 2 ? 2 * i : i);
          check(w);
        }
      }).join();
      const std::string prefix = std::string(load.name) + "." + w.op.name + ".";
      print_since(before, prefix);
      print(prefix + "mismatches", g_mismatches.load() - mismatches);
    }
  print("calls", kCalls);
  return 0;
}

// The inference batch norm kCalls times with its input and output in one of two places in turn (two
// sets of tensors, as a program that alternates two buffers): every relocated call after the proof
// points the graph at the other set, so each updates a node. Prints pairs.* and pairs.mismatches,
// and "calls".
int relocation_pairs() {
  constexpr int kCalls = 40;
  static moving::Slots inputs(8, 0x3A000), outputs(8, 0);
  World& w = make_world(ops()[STUBCUDNN_BATCHNORM_FORWARD_INFERENCE], g_main.handle);
  for (int i = 1; i < w.op.inputs; ++i) w.in[i] = inputs.at(2 + i);
  for (int i = 1; i < w.op.outputs; ++i) w.out[i] = outputs.at(4 + i);
  w.output_before = 0x0C0C0C0C0C0C0C0Cull;
  const long long mismatches = g_mismatches.load();
  const Snapshot before = Snapshot::now();
  for (int i = 0; i < kCalls; ++i) {
    w.in[0] = inputs.at(i % 2);
    w.out[0] = outputs.at(2 * (i % 2));  // moved by another amount than the input
    check(w);
  }
  print_since(before, "pairs.");
  print("pairs.mismatches", g_mismatches.load() - mismatches);
  print("calls", kCalls);
  return 0;
}

}  // namespace legacy_scenario
