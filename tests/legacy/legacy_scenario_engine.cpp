// The legacy-replay scenario's cases about when the replay engine must step aside
// (legacy_scenario.h): the program's own capture, another context, failures of the driver, calls
// from inside libcudnn, graphs forgotten with their handle and the feature, threads, fork, and a
// dlsym caller that holds cuDNN's own function for a legacy name.
#include <dlfcn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <thread>

#include "tests/legacy/legacy_scenario.h"

namespace legacy_scenario {

namespace {

void must(cudnnStatus_t s, const char* what) {
  if (s != CUDNN_STATUS_SUCCESS) die(what);
}

void check_all(std::vector<World*>& all, int n) {
  for (auto& w : all) check_times(*w, n);
}

}  // namespace

// The program captures its own CUDA graph on the handle's stream: every op, once its graph is made
// (ready), and again with a new key whose third call (the shim's capture) falls in the program's
// capture. Each call goes to cuDNN, which records it into the program's capture, as without the
// shim; nothing is launched; the program's graph, launched, runs them all.
int program_capture() {
  auto ready = worlds(g_main.handle);
  check_all(ready, 10);
  auto fresh = worlds(g_main.handle);
  check_all(fresh, 2);
  const Snapshot before = Snapshot::now();
  if (cuStreamBeginCapture_v2(g_main.stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL) != CUDA_SUCCESS) die("begin");
  std::vector<std::uint64_t> expected;
  long long written = 0;  // outputs written during the capture (the stub ran the op instead of recording it)
  for (auto* set : {&ready, &fresh})
    for (auto& w : *set) {
      w->clear_outputs();
      if (w->op.call(g_api, *w) != CUDNN_STATUS_SUCCESS) g_failures.fetch_add(1);
      for (int i = 0; i < w->op.outputs; ++i) written += w->output(i) != 0;
      expected.push_back(reference_digest(*w));  // runs at once, even on a capturing stream
    }
  CUgraph graph = nullptr;
  if (cuStreamEndCapture(g_main.stream, &graph) != CUDA_SUCCESS) die("end");
  print_since(before, "during.");
  print("during.written", written);
  CUgraphExec exec = nullptr;
  if (cuGraphInstantiateWithFlags(&exec, graph, 0) != CUDA_SUCCESS) die("instantiate");
  const Snapshot launched = Snapshot::now();
  if (cuGraphLaunch(exec, g_main.stream) != CUDA_SUCCESS) die("launch");
  print_since(launched, "program_launch.");
  std::size_t k = 0;
  long long right = 0;
  for (auto* set : {&ready, &fresh})
    for (auto& w : *set) right += outputs_hold(*w, expected[k++]);
  print("program_launch.right", right);
  cuGraphExecDestroy(exec);
  cuGraphDestroy(graph);
  // After the program's capture: the ready graphs are launched again, the fresh keys captured.
  const Snapshot after = Snapshot::now();
  check_all(ready, 2);
  check_all(fresh, 2);
  print_since(after, "after.");
  return 0;
}

// The handle's stream moved to another context after its graphs were made, then back; and a
// handle on a green context's stream.
int other_context() {
  auto all = worlds(g_main.handle);
  check_all(all, 4);
  stubcuda_set_stream_context(g_main.stream, reinterpret_cast<CUcontext>(std::uintptr_t{0xC0D0000}), 0);
  Snapshot before = Snapshot::now();
  check_all(all, 4);
  print_since(before, "other.");
  stubcuda_set_stream_context(g_main.stream, STUBCUDA_PRIMARY_CONTEXT, 0);
  before = Snapshot::now();
  check_all(all, 4);
  print_since(before, "back.");
  Handle green;
  green.open();
  stubcuda_set_stream_context(green.stream, reinterpret_cast<CUcontext>(std::uintptr_t{0xC0E0000}), 1);
  auto on_green = worlds(green.handle);
  before = Snapshot::now();
  check_all(on_green, 10);
  print_since(before, "green.");
  return 0;
}

// Every op's key: a capture that fails (invalidated), then, for new keys, an instantiation that
// fails: each runs directly for good. Then a launch that fails: the op returns cuDNN's "execution
// failed in the CUDA driver", and writes nothing.
int failures() {
  auto captured = worlds(g_main.handle);
  Snapshot before = Snapshot::now();
  for (auto& w : captured) {
    stubcuda_fail_captures(1);
    check_times(*w, 10);
  }
  stubcuda_fail_captures(0);
  print_since(before, "capture.");
  auto instantiated = worlds(g_main.handle);
  before = Snapshot::now();
  for (auto& w : instantiated) {
    stubcuda_fail_instantiations(1);
    check_times(*w, 10);
  }
  stubcuda_fail_instantiations(0);
  print_since(before, "instantiate.");
  auto launched = worlds(g_main.handle);
  check_all(launched, 4);
  before = Snapshot::now();
  stubcuda_fail_launches(CUDA_ERROR_LAUNCH_FAILED);
  long long failed = 0, written = 0;
  for (auto& w : launched) {
    w->clear_outputs();
    failed += w->op.call(g_api, *w) == CUDNN_STATUS_EXECUTION_FAILED_CUDA_DRIVER;
    for (int i = 0; i < w->op.outputs; ++i) written += w->output(i) != 0;
  }
  stubcuda_fail_launches(CUDA_SUCCESS);
  print_since(before, "launch.");
  print("launch.execution_failed", failed);
  print("launch.written", written);
  before = Snapshot::now();
  check_all(launched, 2);  // launches work again: the graphs are good
  print_since(before, "relaunch.");
  return 0;
}

// libcudnn's own descriptor calls during every op (stubcudnn_inner_calls), the shim's captures
// included: each op is replayed as without them. The program's descriptors sit where the inner
// ones were: one destroyed around the shim (its record stale) whose address an inner create takes,
// then the program's next descriptor, made and set around the shim at that address (it must be
// unknown: the inner create made the shim forget the address); and one made through the shim right
// after an op (at the inner one's address), which must be recorded and replayed.
int inner() {
  g_api.stubcudnn_inner_calls(1);
  auto all = worlds(g_main.handle);
  Snapshot before = Snapshot::now();
  check_all(all, 10);
  print_since(before, "inner.steady.");

  World& w = make_world(ops()[STUBCUDNN_ADD_TENSOR], g_main.handle);
  World& other = make_world(ops()[STUBCUDNN_SCALE_TENSOR], g_main.handle);
  check_times(w, 4);  // a graph of w's tensor 0 as it is
  const void* old = w.t[0];
  must(g_ref.cudnnDestroyTensorDescriptor(w.t[0]), "destroy around");  // the shim keeps its record
  check(other);  // its inner create takes the freed address
  must(g_ref.cudnnCreateTensorDescriptor(&w.t[0]), "create around");
  print("inner.around.same_address", w.t[0] == old);
  must(g_ref.cudnnSetTensor4dDescriptor(w.t[0], CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 2, 3, 4, 55), "set around");
  before = Snapshot::now();
  check_times(w, 4);
  print_since(before, "inner.around.");

  World& u = make_world(ops()[STUBCUDNN_ADD_TENSOR], g_main.handle);
  const void* freed = u.t[0];
  must(g_api.cudnnDestroyTensorDescriptor(u.t[0]), "destroy");
  check(other);  // its inner create takes the freed address, and frees it again
  must(g_api.cudnnCreateTensorDescriptor(&u.t[0]), "create");
  u.set_tensor(0, 33);
  before = Snapshot::now();
  check_times(u, 10);
  print_since(before, "inner.after.");
  print("inner.after.same_address", freed == u.t[0]);
  g_api.stubcudnn_inner_calls(0);
  return 0;
}

// Graphs forgotten: a handle destroyed, and a new one at its address (whose calls count from the
// start again); the feature switched off (every legacy graph destroyed, every op direct) and on.
int forget() {
  {
    Handle h;
    h.open();
    auto all = worlds(h.handle);
    check_all(all, 4);
    print("handle.graphs_before", static_cast<long long>(stubcuda_graph_counters().live_execs));
    const cudnnHandle_t old = h.handle;
    must(g_api.cudnnDestroy(h.handle), "cudnnDestroy");
    print("handle.graphs_after", static_cast<long long>(stubcuda_graph_counters().live_execs));
    must(g_api.cudnnCreate(&h.handle), "cudnnCreate");
    print("handle.same_address", h.handle == old);
    must(g_api.cudnnSetStream(h.handle, reinterpret_cast<cudaStream_t>(h.stream)), "cudnnSetStream");
    const Snapshot before = Snapshot::now();
    check_all(all, 10);
    print_since(before, "handle.");
    must(g_api.cudnnDestroy(h.handle), "cudnnDestroy");
  }
  auto all = worlds(g_main.handle);
  check_all(all, 4);
  print("switch.graphs_before", static_cast<long long>(stubcuda_graph_counters().live_execs));
  if (g_set_features == nullptr) return 0;
  const unsigned features = g_features();
  print("switch.features", features);
  print("switch.features_off", g_set_features(features & ~kFeatureLegacy));
  print("switch.graphs_after", static_cast<long long>(stubcuda_graph_counters().live_execs));
  Snapshot before = Snapshot::now();
  check_all(all, 5);
  print_since(before, "switch.off.");
  print("switch.features_on", g_set_features(features));
  before = Snapshot::now();
  check_all(all, 10);
  print_since(before, "switch.on.");
  // Every tensor set again while the feature is off, and descriptors made then: the sets are
  // recorded all the same (a descriptor made while the feature was on keeps a true record), the
  // new descriptors are not (unknown: their calls run directly once it is on again).
  g_set_features(features & ~kFeatureLegacy);
  for (World* w : all)
    for (int i = 0; i < w->op.tensors; ++i) w->set_tensor(i, 30 + i);
  auto made_while_off = worlds(g_main.handle);
  g_set_features(features);
  before = Snapshot::now();
  check_all(all, 10);
  print_since(before, "switch.set_while_off.");
  // Back to the contents from before the switch: a record that had missed the sets while off
  // would have keyed the graphs just captured (of the new contents) as the old ones, and launch
  // them now.
  for (World* w : all)
    for (int i = 0; i < w->op.tensors; ++i) w->set_tensor(i, 5 + i);
  before = Snapshot::now();
  check_all(all, 10);
  print_since(before, "switch.set_back.");
  before = Snapshot::now();
  check_all(made_while_off, 10);
  print_since(before, "switch.made_while_off.");
  return 0;
}

// Four threads, each with its own handle and stream, the 13 ops 10 times at once.
int threads() {
  constexpr int kThreads = 4;
  Handle handles[kThreads];
  for (Handle& h : handles) h.open();
  const Snapshot before = Snapshot::now();
  std::atomic<int> restored{0}, ready{0}, done{0};
  const auto wait_for = [](std::atomic<int>& count) {
    count.fetch_add(1);
    while (count.load() < kThreads) std::this_thread::yield();
  };
  std::vector<std::thread> workers;
  for (int t = 0; t < kThreads; ++t)
    workers.emplace_back([&h = handles[t], &restored, &ready, &done, &wait_for] {
      auto all = worlds(h.handle);
      wait_for(ready);  // all at once
      for (int round = 0; round < 10; ++round) check_all(all, 1);
      if (h.holds_own_stream()) restored.fetch_add(1);
      wait_for(done);  // and all alive until each is done: no thread's replay state passes to another
    });
  for (std::thread& w : workers) w.join();
  print("threads.threads", kThreads);
  print("threads.restored", restored.load());
  print_since(before, "threads.");
  return 0;
}

// A child forked after the graphs exist: its calls on an inherited handle (which the stub runs, as
// the parent's graph would) and on a handle of its own are right, it launches none of the parent's
// graphs, captures on no stream of the parent's, and switching the feature off destroys only its own.
int fork_child() {
  auto all = worlds(g_main.handle);
  check_all(all, 4);
  print("parent_graphs", static_cast<long long>(stubcuda_graph_counters().live_execs));
  std::fflush(stdout);
  const pid_t child = fork();
  if (child == 0) {
    Snapshot before = Snapshot::now();
    check_all(all, 1);
    print_since(before, "child.inherited.");
    Handle h;
    h.open();
    auto own = worlds(h.handle);
    before = Snapshot::now();
    check_all(own, 10);
    print_since(before, "child.");
    if (g_set_features != nullptr) g_set_features(g_features() & ~kFeatureLegacy);
    print_since(before, "child_after_switch.");
    print("child.checks", g_checks.load());
    print("child.mismatches", g_mismatches.load());
    print("child.failures", g_failures.load());
    std::fflush(stdout);
    _exit(0);
  }
  int status = 0;
  waitpid(child, &status, 0);
  print("child_exit", WIFEXITED(status) ? WEXITSTATUS(status) : 99);
  return 0;
}

// The program (linked) takes cudnnSetTensor4dDescriptor with dlsym on a handle: of the library it
// links (LEGACY_SCENARIO_FROM unset: the shim's dlsym hands out its own function, unless
// CUDNN_FASTPATH_DLSYM=0 leaves it cuDNN's own), or of libcudnn_ops.so.9 (LEGACY_SCENARIO_FROM=ops:
// another library than the one the program's calls reach, so cuDNN's own too), and sets a tensor
// of every op through it between calls. Holding cuDNN's own function for a legacy name, the
// program gets no legacy replay: a set through it never reaches the shim's records.
int declined() {
  const char* from = std::getenv("LEGACY_SCENARIO_FROM");
  void* library = g_library;
  if (from != nullptr && std::strcmp(from, "ops") == 0) library = must_dlopen(STUB_CUDNN_OPS_PATH, RTLD_NOW | RTLD_LOCAL);
  decltype(&cudnnSetTensor4dDescriptor) set = nullptr;
  must_dlsym(set, library, "cudnnSetTensor4dDescriptor");
  print("declined.own_function", reinterpret_cast<void*>(set) == glibc_dlsym(library, "cudnnSetTensor4dDescriptor"));
  auto all = worlds(g_main.handle);
  const Snapshot before = Snapshot::now();
  for (auto& w : all) {
    check_times(*w, 4);
    must(set(w->t[0], CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 2, 3, 4, 50), "set through dlsym");
    check_times(*w, 4);
  }
  print_since(before, "declined.");
  return 0;
}

// A thread that makes and sets many tensor descriptors and never calls an op that reads them (an
// LSTM under PyTorch: cuDNN's RNN API is not replayed) stops recording them: a World made after
// 5000 of them has descriptors the shim did not record, and its calls run directly (unknown). Its
// first call puts the thread's batch-norm cache in use, and the thread records again: a World made
// after it is replayed.
int idle_records() {
  constexpr int kIdle = 5000;
  for (int i = 0; i < kIdle; ++i) {
    cudnnTensorDescriptor_t t = nullptr;
    must(g_api.cudnnCreateTensorDescriptor(&t), "create");
    must(g_api.cudnnSetTensor4dDescriptor(t, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, 2, 3, 4 + i % 7), "set");
    must(g_api.cudnnDestroyTensorDescriptor(t), "destroy");
  }
  const Op* bn = nullptr;
  for (const Op& op : ops())
    if (op.family == kBn && bn == nullptr) bn = &op;
  Snapshot before = Snapshot::now();
  World& made_idle = make_world(*bn, g_main.handle);
  check_times(made_idle, 8);
  print_since(before, "idle.");
  before = Snapshot::now();
  World& made_after = make_world(*bn, g_main.handle);
  check_times(made_after, 8);
  print_since(before, "after.");
  return 0;
}

}  // namespace legacy_scenario
