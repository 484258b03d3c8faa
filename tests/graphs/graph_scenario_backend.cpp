// The graph-replay scenario's cases about the backend execute (graph_scenario.h).
#include "tests/graphs/graph_scenario.h"

namespace graph_scenario {


// 100 ops with the same contents on the handle's own stream.
int steady() {
  const Contents c = contents(1);
  const std::uint64_t streams_before = stubcuda_graph_counters().streams_created;
  const Snapshot before = Snapshot::now();
  Counts counts;
  long long launched_on_program_stream = 1;
  for (int i = 0; i < 100; ++i) {
    run_op(g_main.handle, g_matmul.plan(), c, counts);
    if (i >= 2 && stubcuda_graph_counters().launches > before.driver.launches &&
        stubcuda_last_launch_stream() != g_main.stream)
      launched_on_program_stream = 0;
  }
  print("ops", 100);
  print_counts(counts);
  print_since(before);
  print("launched_on_program_stream", launched_on_program_stream);
  // The stub's own view of the handle's stream after the capture: the program's again.
  cudaStream_t held = nullptr;
  if (g_get_stream(g_main.handle, &held) != 0) die("cudnnGetStream");
  print("handle_holds_program_stream", held == reinterpret_cast<cudaStream_t>(g_main.stream));
  print("private_streams", static_cast<long long>(stubcuda_graph_counters().streams_created - streams_before));
  // What reached cuDNN in the whole run: the statistics must not change it.
  print("real_packs", static_cast<long long>(g_api.created(kPack)));
  print("real_set_stream", static_cast<long long>(g_api.cudnn_counters().set_stream));
  return 0;
}

// The in-process A/B's blocks: every feature off for five ops, then on for five, three times. After
// each switch back on, an op runs directly twice and is captured at its third execute, so the
// fourth and fifth (the A/B's timed iterations) are plain launches.
int ab_blocks() {
  if (g_set_features == nullptr) die("ab_blocks runs under the shim");
  const Contents c = contents(1);
  Counts counts;
  for (int round = 0; round < 3; ++round) {
    g_set_features(0);
    for (int i = 0; i < 5; ++i) run_op(g_main.handle, g_matmul.plan(), c, counts);
    g_set_features(7u);
    char prefix[32];
    for (int i = 0; i < 5; ++i) {
      const Snapshot before = Snapshot::now();
      run_op(g_main.handle, g_matmul.plan(), c, counts);
      std::snprintf(prefix, sizeof prefix, "round%d.op%d.", round, i);
      print_since(before, prefix);
    }
  }
  print_counts(counts);
  return 0;
}

// The program captures its own CUDA graph on the handle's stream, after the shim made a graph.
int program_capture() {
  const Contents c = contents(2);
  Counts counts;
  for (int i = 0; i < 10; ++i) run_op(g_main.handle, g_matmul.plan(), c, counts);
  const Snapshot before = Snapshot::now();
  // One pack for the whole capture, alive until the program's graph ran (as a program keeps the
  // memory its graph reads).
  cudnnBackendDescriptor_t pack = nullptr;
  if (make_pack(g_api, c, &pack) != 0) die("pack");
  if (cuStreamBeginCapture_v2(g_main.stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL) != CUDA_SUCCESS) die("begin");
  for (int i = 0; i < 5; ++i)
    if (g_api.execute(g_main.handle, g_matmul.plan(), pack) != 0) ++counts.failures;
  CUgraph graph = nullptr;
  if (cuStreamEndCapture(g_main.stream, &graph) != CUDA_SUCCESS) die("end");
  print_since(before, "during.");
  CUgraphExec exec = nullptr;
  if (cuGraphInstantiateWithFlags(&exec, graph, 0) != CUDA_SUCCESS) die("instantiate");
  const Snapshot launched = Snapshot::now();
  if (cuGraphLaunch(exec, g_main.stream) != CUDA_SUCCESS) die("launch");
  print_since(launched, "program_launch.");
  if (!ran_as_made(g_matmul.plan(), c)) ++counts.mismatches;
  cuGraphExecDestroy(exec);
  cuGraphDestroy(graph);
  g_api.destroy(pack);
  print_counts(counts);
  return 0;
}

// A by-value scale: 10 ops at 1.5, 10 at 2.5, then 40 alternating.
int by_value() {
  ScaledMatmulPlan plan;
  plan.build(g_main.handle);
  static float scale = 1.5f;
  const Contents c = ScaledMatmulPlan::contents(3, &scale);
  const Snapshot before = Snapshot::now();
  Counts counts;
  for (int i = 0; i < 10; ++i) run_op(g_main.handle, plan.plan(), c, counts);
  scale = 2.5f;
  for (int i = 0; i < 10; ++i) run_op(g_main.handle, plan.plan(), c, counts);
  print_since(before, "steady.");
  for (int i = 0; i < 40; ++i) {
    scale = i % 2 ? 1.5f : 2.5f;
    run_op(g_main.handle, plan.plan(), c, counts);
  }
  print_since(before);
  print_counts(counts);
  return 0;
}

// A host pointer that is no by-value tensor: never captured.
int host_pointer() {
  static float host_b[16 * 32];
  Contents c = contents(4);
  c.pointers[1] = host_b;
  const Snapshot before = Snapshot::now();
  Counts counts;
  for (int i = 0; i < 20; ++i) run_op(g_main.handle, g_matmul.plan(), c, counts);
  print_since(before);
  print_counts(counts);
  return 0;
}

// The graphs of a destroyed handle, a destroyed plan, an evicted pack, and with the feature off.
int forget() {
  Counts counts;
  const Contents c = contents(5);
  {  // the handle: destroyed, then a new one (the stub hands out the same address)
    Handle h;
    h.open();
    for (int i = 0; i < 5; ++i) run_op(h.handle, g_matmul.plan(), c, counts);
    print("handle.graphs_before", static_cast<long long>(stubcuda_graph_counters().live_execs));
    const cudnnHandle_t old = h.handle;
    g_api.destroy_handle(h.handle);
    print("handle.graphs_after", static_cast<long long>(stubcuda_graph_counters().live_execs));
    if (g_api.create_handle(&h.handle) != 0) die("cudnnCreate");
    print("handle.same_address", h.handle == old);
    g_api.set_stream(h.handle, reinterpret_cast<cudaStream_t>(h.stream));
    const Snapshot before = Snapshot::now();
    for (int i = 0; i < 5; ++i) run_op(h.handle, g_matmul.plan(), c, counts);
    print_since(before, "handle.");
    g_api.destroy_handle(h.handle);
  }
  {  // the plan
    MatmulPlan plan;
    if (plan.build(g_api, g_main.handle, kOtherUids) != 0) die("plan");
    const Contents o = contents(6, kOtherUids);
    for (int i = 0; i < 5; ++i) run_op(g_main.handle, plan.plan(), o, counts);
    print("plan.graphs_before", static_cast<long long>(stubcuda_graph_counters().live_execs));
    plan.release();
    print("plan.graphs_after", static_cast<long long>(stubcuda_graph_counters().live_execs));
    const Snapshot before = Snapshot::now();
    if (plan.build(g_api, g_main.handle, kOtherUids) != 0) die("plan again");
    for (int i = 0; i < 5; ++i) run_op(g_main.handle, plan.plan(), o, counts);
    print_since(before, "plan.");
    plan.release();
  }
  {  // the pack: other packs, each finalized twice and never executed (used twice, none is a waste
     // that would make the cache back off: replay/admission.h), until the real pack behind `c` is
     // evicted; the next real pack made, `c`'s again, then takes its address (the allocator hands
     // out the chunk freed last), and must not meet its graph.
    for (int i = 0; i < 5; ++i) run_op(g_main.handle, g_matmul.plan(), c, counts);
    const cudnnBackendDescriptor_t evicted = g_thread_last().variant_pack;
    print("pack.graphs_before", static_cast<long long>(stubcuda_graph_counters().live_execs));
    for (int i = 0; g_is_live(evicted) && i < 20000; ++i) {
      cudnnBackendDescriptor_t pack = nullptr;
      if (make_pack(g_api, contents(100 + i / 2), &pack) != 0) ++counts.failures;
      g_api.destroy(pack);
    }
    print("pack.graphs_after", static_cast<long long>(stubcuda_graph_counters().live_execs));
    const Snapshot before = Snapshot::now();
    for (int i = 0; i < 5; ++i) {
      run_op(g_main.handle, g_matmul.plan(), c, counts);
      if (i == 0) print("pack.same_address", g_thread_last().variant_pack == evicted);
    }
    print_since(before, "pack.");
  }
  if (g_set_features != nullptr) {  // the switch
    print("switch.graphs_before", static_cast<long long>(stubcuda_graph_counters().live_execs));
    print("switch.features_off", g_set_features(GRAPHS_FEATURE_SET_STREAM | GRAPHS_FEATURE_VARIANT_PACKS));
    print("switch.graphs_after", static_cast<long long>(stubcuda_graph_counters().live_execs));
    Snapshot before = Snapshot::now();
    for (int i = 0; i < 5; ++i) run_op(g_main.handle, g_matmul.plan(), c, counts);
    print_since(before, "switch.off.");
    print("switch.features_on", g_set_features(7u));
    before = Snapshot::now();
    for (int i = 0; i < 5; ++i) run_op(g_main.handle, g_matmul.plan(), c, counts);
    print_since(before, "switch.on.");
    print("switch.graphs_only", g_set_features(GRAPHS_FEATURE_GRAPHS | GRAPHS_FEATURE_SET_STREAM));
    g_set_features(7u);
  }
  print_counts(counts);
  return 0;
}

// fork: the child has none of the parent's graphs.
int fork_child() {
  const Contents c = contents(7);
  Counts counts;
  for (int i = 0; i < 5; ++i) run_op(g_main.handle, g_matmul.plan(), c, counts);
  print("parent_graphs", static_cast<long long>(stubcuda_graph_counters().live_execs));
  std::fflush(stdout);
  const pid_t child = fork();
  if (child == 0) {
    // The stub libcudnn refuses the parent's handles in a child, as the real one does: a new one.
    Handle h;
    h.open();
    const Snapshot before = Snapshot::now();
    Counts child_counts;
    for (int i = 0; i < 5; ++i) run_op(h.handle, g_matmul.plan(), c, child_counts);
    print_since(before, "child.");
    // Graphs off: the shim destroys every graph it holds, none of which may be the parent's.
    if (g_set_features != nullptr) g_set_features(GRAPHS_FEATURE_SET_STREAM | GRAPHS_FEATURE_VARIANT_PACKS);
    print_since(before, "child_after_switch.");
    print("child.failures", child_counts.failures);
    print("child.mismatches", child_counts.mismatches);
    std::fflush(stdout);
    _exit(0);
  }
  int status = 0;
  waitpid(child, &status, 0);
  print("child_exit", WIFEXITED(status) ? WEXITSTATUS(status) : 99);
  print_counts(counts);
  return 0;
}

// A stream of another context, and one of a green context.
int other_context() {
  const Contents c = contents(8);
  Counts counts;
  for (int i = 0; i < 5; ++i) run_op(g_main.handle, g_matmul.plan(), c, counts);
  CUstream other = nullptr, green = nullptr;
  if (cuStreamCreate(&other, 0) != CUDA_SUCCESS || cuStreamCreate(&green, 0) != CUDA_SUCCESS) die("streams");
  stubcuda_set_stream_context(other, reinterpret_cast<CUcontext>(std::uintptr_t{0xC0D0000}), 0);
  g_api.set_stream(g_main.handle, reinterpret_cast<cudaStream_t>(other));
  Snapshot before = Snapshot::now();
  for (int i = 0; i < 5; ++i) run_op(g_main.handle, g_matmul.plan(), c, counts);
  print_since(before, "other.");
  g_api.set_stream(g_main.handle, reinterpret_cast<cudaStream_t>(g_main.stream));
  before = Snapshot::now();
  for (int i = 0; i < 5; ++i) run_op(g_main.handle, g_matmul.plan(), c, counts);
  print_since(before, "back.");
  Handle h;
  h.open();
  stubcuda_set_stream_context(h.stream, reinterpret_cast<CUcontext>(std::uintptr_t{0xC0E0000}), 1);
  before = Snapshot::now();
  for (int i = 0; i < 10; ++i) run_op(h.handle, g_matmul.plan(), c, counts);
  print_since(before, "green.");
  print_counts(counts);
  return 0;
}

// A failed capture, a failed instantiation, a failed launch.
int failures() {
  Counts counts;
  stubcuda_fail_captures(1);
  Snapshot before = Snapshot::now();
  for (int i = 0; i < 10; ++i) run_op(g_main.handle, g_matmul.plan(), contents(9), counts);
  print_since(before, "capture.");
  // A handle of its own: contents(10) on the main handle is contents(9)'s shape, which the shape
  // cache would capture (and fail) first, a key's own capture then succeeding.
  Handle own;
  own.open();
  stubcuda_fail_instantiations(1);
  before = Snapshot::now();
  for (int i = 0; i < 10; ++i) run_op(own.handle, g_matmul.plan(), contents(10), counts);
  print_since(before, "instantiate.");
  const Contents c = contents(11);
  for (int i = 0; i < 5; ++i) run_op(g_main.handle, g_matmul.plan(), c, counts);
  stubcuda_fail_launches(CUDA_ERROR_LAUNCH_FAILED);
  Counts failing;
  before = Snapshot::now();
  print("launch.status", run_op(g_main.handle, g_matmul.plan(), c, failing));
  stubcuda_fail_launches(CUDA_SUCCESS);
  print_since(before, "launch.");
  print_counts(counts);
  return 0;
}

// Threads with their own handles and streams, one plan; some share contents.
int threads() {
  constexpr int kThreads = 4, kOps = 200;
  Counts per_thread[kThreads];
  Handle handles[kThreads];
  for (Handle& h : handles) h.open();
  const Snapshot before = Snapshot::now();
  std::vector<std::thread> workers;
  for (int t = 0; t < kThreads; ++t)
    workers.emplace_back([t, &per_thread, &handles] {
      const Contents c = contents(20 + t % 2);
      for (int i = 0; i < kOps; ++i) run_op(handles[t].handle, g_matmul.plan(), c, per_thread[t]);
    });
  for (std::thread& w : workers) w.join();
  Counts total;
  for (const Counts& c : per_thread) {
    total.failures += c.failures;
    total.mismatches += c.mismatches;
  }
  print("ops", kThreads * kOps);
  print_since(before);
  print_counts(total);
  return 0;
}

}  // namespace graph_scenario
