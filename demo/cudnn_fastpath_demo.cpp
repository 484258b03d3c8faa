// cudnn_fastpath_demo: the shim at work, one short section per feature, with the counts that show it.
//
//   1. cudnnSetStream before every op, as a framework calls it: skipped when the handle has the
//      stream; timed with and without the shim, alternating:
//        "with shim": cudnnSetStream as the program finds it, dlsym(RTLD_DEFAULT): the shim's when
//                     it is preloaded (run it under scripts/cudnn-fastpath);
//        "without":   the same function from the libcudnn handle with glibc's own dlsym (taken by
//                     version with dlvsym), which bypasses any preload.
//      Each column has a handle of its own: the shim must see every SetStream on a handle it tracks.
//   2. a backend variant pack built per op with the same contents: served from the shim's cache;
//   3. cudnnBackendExecute of those packs: replayed as CUDA graph launches;
//   4. legacy cudnnBatchNormalizationForwardInference, descriptors made per call: replayed;
//   5. a Linear layer through cuBLASLt (the heuristic answered from the cache, the matmul replayed)
//      and through cublasGemmEx (replayed).
// Each section prints the shim's counters for it (shim_control.h), or says no shim is loaded.
//
// With a usable GPU it loads the real libraries; without one the test tree's stubs (paths baked in
// at build time), and says so first. It links no CUDA library (demo.h).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "demo/demo.h"

namespace {

using namespace demo;

constexpr const char* kName = "cudnn_fastpath_demo";

void check(const Cudnn& cudnn, cudnnStatus_t status, const char* what);

// ---- One column's handle and the loop a framework runs. -------------------------------------------
struct Column {
  Column(const char* name_, decltype(&cudnnSetStream) set_stream_) : name(name_), set_stream(set_stream_) {}
  const char* name;
  decltype(&cudnnSetStream) set_stream;
  cudnnHandle_t handle = nullptr;
  std::vector<double> ns_set_stream, ns_with_op;  // per op, one entry per round
  unsigned long long calls_made = 0, calls_reached = 0;  // the stub's counts
};

struct Workload {
  const Cudnn* cudnn;
  cudaStream_t streams[2];
  cudnnTensorDescriptor_t desc;
  const void* a;
  void* c;
  int ops_per_round;
  int switch_every;  // every switch_every-th op goes to the other stream, as a framework's side stream

  cudaStream_t stream_for(int i) const { return streams[i % switch_every == switch_every - 1 ? 1 : 0]; }

  // Returns the time per op of one round, in nanoseconds.
  double round(const Column& column, bool with_op) const {
    static const float one = 1.0f;
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < ops_per_round; ++i) {
      const cudnnStatus_t set = column.set_stream(column.handle, stream_for(i));
      if (set != CUDNN_STATUS_SUCCESS) check(*cudnn, set, "cudnnSetStream");
      if (with_op) {
        const cudnnStatus_t op = cudnn->cudnnAddTensor(column.handle, &one, desc, a, &one, desc, c);
        if (op != CUDNN_STATUS_SUCCESS) check(*cudnn, op, "cudnnAddTensor");
      }
    }
    const auto stop = std::chrono::steady_clock::now();
    return std::chrono::duration<double, std::nano>(stop - start).count() / ops_per_round;
  }
};

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

int parse_count(const char* option, const char* text, int low, int high) {
  char* end = nullptr;
  const long value = text ? std::strtol(text, &end, 10) : 0;
  if (text == nullptr || *end != '\0' || value < low || value > high) {
    std::fprintf(stderr, "%s: %s takes a number from %d to %d\n", kName, option, low, high);
    std::exit(2);
  }
  return static_cast<int>(value);
}


void usage() {
  std::printf(
      "usage: %s [--stub] [--rounds N] [--ops N]\n"
      "Shows each feature of the shim at work, with its counts. Run it under the launcher:\n"
      "  scripts/cudnn-fastpath --stats build/demo/%s\n"
      "  --stub      use the test tree's stub libraries even when there is a GPU\n"
      "  --rounds N  section 1: rounds per column, alternated (default 31)\n"
      "  --ops N     section 1: ops per round (default 200: short enough to stay inside the GPU's launch queue)\n",
      kName, kName);
}

void check(const Cudnn& cudnn, cudnnStatus_t status, const char* what) {
  if (status != CUDNN_STATUS_SUCCESS)
    fail("%s failed: %s (status %d)", what, cudnn.error(status), static_cast<int>(status));
}

// Section 1: the SetStream loop, timed with and without the shim.
void set_stream_section(const Libraries& libs, const ShimCounters& shim, DeviceMemory& memory, Streams streams,
                        int rounds, int ops) {
  const Cudnn& cudnn = libs.cudnn_itself;
  Column with{"with shim", libs.cudnn.cudnnSetStream};
  Column without{"without", cudnn.cudnnSetStream};
  Workload work{&cudnn, {streams.main, streams.side}, nullptr, nullptr, nullptr, ops, 50};
  std::printf("1. cudnnSetStream before every op, as a framework calls it (every %dth op on a second stream),\n"
              "   timed with the shim and without it (the same function taken around it)\n",
              work.switch_every);
  const bool shim_there = with.set_stream != without.set_stream;
  check(cudnn, libs.cudnn.cudnnCreate(&with.handle), "cudnnCreate");
  check(cudnn, cudnn.cudnnCreate(&without.handle), "cudnnCreate");
  constexpr int kElements = 256;
  work.a = memory.take(kElements * sizeof(float));
  work.c = memory.take(kElements * sizeof(float));
  check(cudnn, cudnn.cudnnCreateTensorDescriptor(&work.desc), "cudnnCreateTensorDescriptor");
  check(cudnn, cudnn.cudnnSetTensor4dDescriptor(work.desc, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, 1, 1, kElements),
        "cudnnSetTensor4dDescriptor");

  // Everything queued on the GPU is finished between rounds, so no round waits for another's work.
  const auto stub_set_stream = libs.stub.cudnn;
  auto run = [&](Column& column, bool with_op, bool record) {
    const unsigned long long before = stub_set_stream ? stub_set_stream().set_stream : 0;
    const double ns = work.round(column, with_op);
    for (cudaStream_t s : work.streams) synchronize(libs, s);
    if (!record) return;
    (with_op ? column.ns_with_op : column.ns_set_stream).push_back(ns);
    column.calls_made += static_cast<unsigned long long>(ops);
    if (stub_set_stream) column.calls_reached += stub_set_stream().set_stream - before;
  };
  // A warm-up round each (symbol resolution, cuDNN's lazily loaded sub-libraries), then rounds
  // that alternate which column goes first.
  for (Column* column : {&with, &without}) run(*column, true, false);
  const ShimCounters::Snapshot before = shim.now();
  for (int r = 0; r < rounds; ++r) {
    Column* order[2] = {&with, &without};
    if (r % 2) std::swap(order[0], order[1]);
    for (bool with_op : {false, true})
      for (Column* column : order) run(*column, with_op, true);
  }
  char label[64];
  std::snprintf(label, sizeof label, "per op, median of %d rounds of %d ops:", rounds, ops);
  std::printf("  %-34s %12s %12s %14s\n", label, "with shim", "without", "without/with");
  const double set_with = median(with.ns_set_stream), set_without = median(without.ns_set_stream);
  const double op_with = median(with.ns_with_op), op_without = median(without.ns_with_op);
  std::printf("  %-34s %9.1f ns %9.1f ns %13.2fx\n", "cudnnSetStream", set_with, set_without,
              set_without / set_with);
  std::printf("  %-34s %9.1f ns %9.1f ns %13.2fx\n", "cudnnSetStream + cudnnAddTensor", op_with, op_without,
              op_without / op_with);
  if (stub_set_stream) {
    std::printf("  stub libcudnn, cudnnSetStream calls made and calls that reached it:\n");
    for (const Column* column : {&with, &without})
      std::printf("  %-10s %llu made, %llu reached\n", (std::string(column->name) + ":").c_str(), column->calls_made,
                  column->calls_reached);
  }
  shim.print_since(before, {"skipped", "forwarded"});
  if (!shim_there)
    std::printf("  (no shim: the two columns differ by noise only)\n");
  else if (!libs.gpu)
    std::printf("  (the stub's cudnnSetStream does no work, so here the shim can only add its lookup; cuDNN's\n"
                "   does several driver queries per call: 167 to 222 ns for the same stream again on an H200)\n");
  check(cudnn, cudnn.cudnnDestroyTensorDescriptor(work.desc), "cudnnDestroyTensorDescriptor");
  check(cudnn, libs.cudnn.cudnnDestroy(with.handle), "cudnnDestroy");
  check(cudnn, cudnn.cudnnDestroy(without.handle), "cudnnDestroy");
}

}  // namespace

int main(int argc, char** argv) {
  bool force_stub = false;
  int rounds = 31, ops = 200;
  for (int i = 1; i < argc; ++i) {
    const char* next = i + 1 < argc ? argv[i + 1] : nullptr;
    if (std::strcmp(argv[i], "--stub") == 0) force_stub = true;
    else if (std::strcmp(argv[i], "--rounds") == 0) rounds = parse_count("--rounds", next, 1, 100000), ++i;
    else if (std::strcmp(argv[i], "--ops") == 0) ops = parse_count("--ops", next, 1, 1000), ++i;
    else if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) return usage(), 0;
    else {
      std::fprintf(stderr, "%s: unknown argument '%s' (try --help)\n", kName, argv[i]);
      return 2;
    }
  }
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // the sections' lines in order with the shim's on stderr

  Libraries libs;
  open_libraries(libs, force_stub);
  Dl_info where{};
  const bool shim = libs.cudnn.cudnnSetStream != libs.cudnn_itself.cudnnSetStream;
  if (shim && dladdr(reinterpret_cast<void*>(libs.cudnn.cudnnSetStream), &where) != 0 && where.dli_fname)
    std::printf("shim: preloaded (%s)\n", where.dli_fname);
  else if (shim)
    std::printf("shim: cudnnSetStream is interposed by an unknown object\n");
  else
    std::printf("shim: NOT preloaded, every call goes to the libraries (run it under scripts/cudnn-fastpath --stats)\n");
  const ShimCounters counters;
  {
    // The tensors take under 1 MiB; on a GPU, the backend matmul's plan may ask for a workspace of
    // tens of MiB (cuDNN 9.19 on an H200 picks a cuBLASLt engine wanting 32 MiB).
    DeviceMemory memory(libs, libs.gpu ? std::size_t{256} << 20 : std::size_t{4} << 20);
    Streams streams{};
    for (cudaStream_t* s : {&streams.main, &streams.side})
      if (libs.driver.cuStreamCreate(reinterpret_cast<CUstream*>(s), CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS)
        fail("cuStreamCreate failed");
    set_stream_section(libs, counters, memory, streams, rounds, ops);
    backend_section(libs, counters, memory, streams);
    batch_norm_section(libs, counters, memory, streams);
    linear_section(libs, counters, memory, streams);
    for (cudaStream_t s : {streams.main, streams.side}) libs.driver.cuStreamDestroy(reinterpret_cast<CUstream>(s));
  }
  close_libraries(libs);
  return 0;
}
