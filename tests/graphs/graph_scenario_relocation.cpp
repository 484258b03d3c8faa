// Relocation of the backend execute (shim/engine/shape_cache.h): executes whose tensors move every
// call, launched as their shape's graph pointed at each call's tensors where that was proven
// right, with the stub's execute as kernels in the style GRAPH_SCENARIO_STYLE names
// (tests/support/moving_tensors.h; plain when unset).
#include <cstring>
#include <string>

#include "tests/graphs/graph_scenario.h"
#include "tests/support/moving_tensors.h"

namespace graph_scenario {
namespace {

// The stub's kernel switch and reference execute, from whichever libcudnn the api reaches.
struct StubKernels {
  int (*set_style)(int) = nullptr;
  cudnnStatus_t (*reference)(cudnnHandle_t, cudnnBackendDescriptor_t, std::int64_t, const std::int64_t*, void* const*,
                             void*) = nullptr;
  StubKernels() {
    void* cudnn = stub_library();
    must_dlsym(set_style, cudnn, "stubbackend_set_kernel_style");
    must_dlsym(reference, cudnn, "stubbackend_reference_execute");
  }
};

// Slots the stub driver takes for device memory (a host pointer in a pack is a by-value tensor's,
// or refused: shim/families/backend_replay.cpp).
struct DeviceSlots : moving::Slots {
  DeviceSlots(std::size_t count, std::uint64_t first) : moving::Slots(count, first) {
    stubcuda_add_device_memory(reinterpret_cast<std::uintptr_t>(at(0)), 256 * count);
  }
};

constexpr std::uint64_t kOutputBefore = 0x0C0C0C0C0C0C0C0Cull;

std::uint64_t word_at(void* p) {
  std::uint64_t w;
  std::memcpy(&w, p, sizeof w);
  return w;
}
void set_word(void* p, std::uint64_t w) { std::memcpy(p, &w, sizeof w); }

}  // namespace

// The matmul plan `calls` times on a handle of its own: A new every call, C (the stub's output: the
// pack's last tensor) new every call at twice A's step, with `two_alignments` 256-byte aligned for
// two calls, then 16-byte aligned (and no more) for two (another alignment is another shape); B
// and the workspace kept. Every output compared with the stub's reference execute of the same
// tensors. Prints PREFIX.* (the stub's counters and the driver's node updates), PREFIX.mismatches
// (outputs not as the reference says, and executes not recorded as made) and PREFIX.calls.
namespace {

// What a run executes: a plan, its uids, and the host float of its by-value uid (or none).
struct Executed {
  cudnnBackendDescriptor_t plan;
  int count;
  const std::int64_t* uids;
  std::int64_t by_value_uid = -1;
  float* by_value = nullptr;
};

int moving_executes(const char* prefix, const Executed& run, int calls, bool two_alignments) {
  const StubKernels stub;
  if (stub.set_style(moving::style_from_env("GRAPH_SCENARIO_STYLE")) < -1) die("stubbackend_set_kernel_style");
  DeviceSlots a(calls + 8, 0x3A000), c(2 * calls + 8, 0), kept(8, 0x4B000);  // kept: B, C, workspace
  Handle h;
  h.open();
  Counts counts;
  long long wrong_outputs = 0;
  const Snapshot before = Snapshot::now();
  const std::uint64_t updates_before = stubcuda_graph_counters().kernel_node_updates;
  for (int i = 0; i < calls; ++i) {
    Contents x;
    x.count = run.count;
    const int last = run.count - 1;
    for (int t = 0; t < run.count; ++t) {
      x.uids[t] = run.uids[t];
      x.pointers[t] = run.uids[t] == run.by_value_uid ? static_cast<void*>(run.by_value) : kept.at(t);
    }
    x.pointers[0] = a.at(i);
    x.pointers[last] = c.at(2 * i, two_alignments && i / 2 % 2 != 0 ? 16 : 0);
    x.workspace = kept.at(6);
    if (run.by_value != nullptr) *run.by_value = i / 10 % 2 == 0 ? 1.5f : 2.5f;
    set_word(x.pointers[last], kOutputBefore);
    if (stub.reference(h.handle, run.plan, x.count, x.uids, x.pointers, x.workspace) != 0) die("reference execute");
    const std::uint64_t expected = word_at(x.pointers[last]);
    set_word(x.pointers[last], kOutputBefore);
    run_op(h.handle, run.plan, x, counts);
    wrong_outputs += word_at(x.pointers[last]) != expected;
  }
  const std::string p = prefix;
  print_since(before, (p + ".").c_str());
  print(p + ".node_updates", static_cast<long long>(stubcuda_graph_counters().kernel_node_updates - updates_before));
  print(p + ".mismatches", counts.mismatches + wrong_outputs);
  print(p + ".failures", counts.failures);
  print(p + ".calls", calls);
  counts.mismatches += wrong_outputs;
  print_counts(counts);
  stub.set_style(STUBBACKEND_OPAQUE);
  return 0;
}

}  // namespace

int relocation() { return moving_executes("relocation", {g_matmul.plan(), 3, kUids}, 200, true); }

// Fresh activations: 1,500 executes, every pack new (the pack cache fills with packs never used
// again and backs off), one shape. Prints fresh.*.
int fresh_packs() { return moving_executes("fresh", {g_matmul.plan(), 3, kUids}, 1500, false); }

// The scaled matmul (its scale by value, a host float) with A and D new every call, the scale 1.5
// for ten calls, then 2.5 for ten, and so on: a shape's graph bakes one scale in, and a call with
// the other must not launch it. Prints by_value.*.
int relocation_by_value() {
  ScaledMatmulPlan plan;
  plan.build(g_main.handle);
  static float scale = 1.5f;
  return moving_executes("by_value", {plan.plan(), 5, ScaledMatmulPlan::kUids, ScaledMatmulPlan::kScaleUid, &scale},
                         200, false);
}

}  // namespace graph_scenario
