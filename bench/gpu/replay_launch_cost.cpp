// replay_launch_cost: the driver calls graph replay makes per launch (shim/graph_replay.cpp), each
// timed on its own, in one process, on the GPU: what a replayed execute costs on top of the launch.
//
//   replay_launch_cost [--rounds N] [--calls N]
//
// For each stream kind (the legacy default stream, which PyTorch uses unless told otherwise, and a
// created non-blocking stream), rounds of `calls` calls of: cuStreamIsCapturing, cuStreamGetCtx,
// cuCtxGetCurrent, and cuGraphLaunch of a graph of one empty kernel (the GPU synchronised after
// each round, so the launch queue never fills). Prints the median ns per call of each, and the
// same for a direct cuLaunchKernel of the kernel (the floor a launch is compared with).
#include <cuda.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iterator>
#include <string>
#include <vector>

namespace {

// One empty kernel in PTX: loaded by the driver, no nvcc at build time.
constexpr char kPtx[] = R"(
.version 7.0
.target sm_70
.address_size 64
.visible .entry empty() { ret; }
)";

void check(CUresult r, const char* what) {
  if (r == CUDA_SUCCESS) return;
  const char* name = nullptr;
  cuGetErrorName(r, &name);
  std::fprintf(stderr, "replay_launch_cost: %s failed: %s\n", what, name ? name : "?");
  std::exit(1);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = 200, calls = 200;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--rounds") == 0) rounds = std::max(1, std::atoi(argv[i + 1]));
    else if (std::strcmp(argv[i], "--calls") == 0) calls = std::max(1, std::atoi(argv[i + 1]));
  }
  check(cuInit(0), "cuInit");
  CUdevice device;
  check(cuDeviceGet(&device, 0), "cuDeviceGet");
  CUcontext context;
  check(cuDevicePrimaryCtxRetain(&context, device), "cuDevicePrimaryCtxRetain");
  check(cuCtxSetCurrent(context), "cuCtxSetCurrent");
  CUmodule module;
  check(cuModuleLoadData(&module, kPtx), "cuModuleLoadData");
  CUfunction kernel;
  check(cuModuleGetFunction(&kernel, module, "empty"), "cuModuleGetFunction");

  CUstream created;
  check(cuStreamCreate(&created, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  CUstream capture;
  check(cuStreamCreate(&capture, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  check(cuStreamBeginCapture(capture, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL), "cuStreamBeginCapture");
  check(cuLaunchKernel(kernel, 1, 1, 1, 32, 1, 1, 0, capture, nullptr, nullptr), "cuLaunchKernel (capture)");
  CUgraph graph;
  check(cuStreamEndCapture(capture, &graph), "cuStreamEndCapture");
  CUgraphExec exec;
  check(cuGraphInstantiateWithFlags(&exec, graph, 0), "cuGraphInstantiate");

  struct StreamKind {
    const char* name;
    CUstream stream;
  };
  const StreamKind kinds[] = {{"legacy default stream", nullptr}, {"created non-blocking stream", created}};
  struct Call {
    const char* name;
    std::function<void(CUstream)> run;
  };
  CUstreamCaptureStatus status;
  CUcontext got;
  const Call probes[] = {
      {"cuStreamIsCapturing", [&](CUstream s) { check(cuStreamIsCapturing(s, &status), "cuStreamIsCapturing"); }},
      {"cuStreamGetCtx", [&](CUstream s) { check(cuStreamGetCtx(s, &got), "cuStreamGetCtx"); }},
      {"cuCtxGetCurrent", [&](CUstream) { check(cuCtxGetCurrent(&got), "cuCtxGetCurrent"); }},
      {"cuGraphLaunch (1 empty kernel)", [&](CUstream s) { check(cuGraphLaunch(exec, s), "cuGraphLaunch"); }},
      {"cuLaunchKernel (the same kernel)",
       [&](CUstream s) { check(cuLaunchKernel(kernel, 1, 1, 1, 32, 1, 1, 0, s, nullptr, nullptr), "cuLaunchKernel"); }},
  };
  std::printf("| stream | call | median ns per call |\n| --- | --- | ---: |\n");
  for (const StreamKind& kind : kinds) {
    std::vector<std::vector<double>> per_call(std::size(probes));
    for (int r = 0; r < rounds; ++r) {
      // The calls interleaved round by round: a drift of the host's speed touches all of them.
      for (std::size_t p = 0; p < std::size(probes); ++p) {
        const auto start = std::chrono::steady_clock::now();
        for (int i = 0; i < calls; ++i) probes[p].run(kind.stream);
        const auto stop = std::chrono::steady_clock::now();
        per_call[p].push_back(std::chrono::duration<double, std::nano>(stop - start).count() / calls);
        check(cuCtxSynchronize(), "cuCtxSynchronize");
      }
    }
    for (std::size_t p = 0; p < std::size(probes); ++p)
      std::printf("| %s | %s | %.0f |\n", kind.name, probes[p].name, median(per_call[p]));
  }
  return 0;
}
