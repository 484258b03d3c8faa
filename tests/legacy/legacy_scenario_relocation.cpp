// Relocation (shim/engine/shape_cache.h) of the batch norms: calls whose tensors move every call,
// launched as their shape's graph pointed at each call's tensors where that was proven right, in
// the stub's kernel style LEGACY_SCENARIO_STYLE names (tests/support/moving_tensors.h; plain when
// unset).
#include <thread>

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

}  // namespace legacy_scenario
