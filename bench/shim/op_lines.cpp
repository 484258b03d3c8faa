// Instructions and cache lines one op spends in the shim, for bench/shim/count-lines.
//
// Between two ops a framework runs enough of its own code and data to push the shim out of the
// caches, so what an op costs there is roughly one memory access per cache line of code and data
// it touches (pack_bench's cold rows time it; on a shared VM they move by a third from run to
// run). This program makes OPS ops of one kind, each after 8 MiB of other reads and 2 MiB of other
// code ("cold", as a framework leaves the caches) or right after the last one ("warm"), so that
// cachegrind's simulated caches see what the shim touches; count-lines sums the shim's own
// functions and takes the difference of two runs of different lengths, so that what the set-up
// and the warm-up cost cancels. The counts are deterministic: a change to the shim's layout shows
// up as a whole number of lines, and a change to its work as instructions.
//
// Kinds (the op; "_off" after it: the same op with the shim's features switched off, the A/B's
// "off", which is what the shim costs when it has nothing to do):
//   pack     a variant pack made as PyTorch makes it: create, 3 sets, finalize, destroy (the same
//            contents every time)
//   execute  the same pack executed on a handle with its own stream: a steady op, replayed as a
//            CUDA graph launch after the first three (the stub driver models capture and launch)
//   miss     as execute, but every op's pointers are new: nothing can be cached or replayed
#include <cudnn.h>
#include <dlfcn.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bench/shim/other_code.h"
#include "tests/packs/pack_api.h"
#include "tests/stub/stub_cuda.h"

namespace {

constexpr std::uintptr_t kDevice = 0x7f0000000000;
const std::int64_t kUids[3] = {1, 2, 3};
void* const kWorkspace = reinterpret_cast<void*>(0x7e0000100000);

PackApi g_api = linked_pack_api();
cudnnHandle_t g_handle = nullptr;
MatmulPlan g_plan;

bool pack_op(std::uintptr_t base, bool execute) {
  void* const pointers[3] = {reinterpret_cast<void*>(kDevice + base * 0x3000), reinterpret_cast<void*>(kDevice + base * 0x3000 + 0x1000),
                             reinterpret_cast<void*>(kDevice + base * 0x3000 + 0x2000)};
  cudnnBackendDescriptor_t pack = nullptr;
  cudnnStatus_t s = cudnnBackendCreateDescriptor(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, &pack);
  if (s == 0) s = cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, 3, kUids);
  if (s == 0) s = cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, 3, pointers);
  if (s == 0) s = cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &kWorkspace);
  if (s == 0) s = cudnnBackendFinalize(pack);
  if (s == 0 && execute) s = cudnnBackendExecute(g_handle, g_plan.plan(), pack);
  cudnnBackendDestroyDescriptor(pack);
  return s == CUDNN_STATUS_SUCCESS;
}

// An op, and the ops it needs before it is in its steady state (caches filled, graphs captured,
// or, for a load that never repeats, the caches backed off).
struct Kind {
  const char* name;
  bool (*op)(int i);
  int warmup;
};
const Kind kKinds[] = {
    {"pack", [](int) { return pack_op(1, false); }, 4},
    {"execute", [](int) { return pack_op(1, true); }, 4},
    {"miss", [](int i) { return pack_op(static_cast<std::uintptr_t>(i) + 1000000, true); }, 3000},
};

}  // namespace

// usage: op_lines OPS KIND[_off] cold|warm
int main(int argc, char** argv) {
  const int ops = argc > 1 ? std::atoi(argv[1]) : 300;
  std::string kind = argc > 2 ? argv[2] : "pack";
  const bool cold = argc <= 3 || std::strcmp(argv[3], "warm") != 0;
  const bool off = kind.size() > 4 && kind.compare(kind.size() - 4, 4, "_off") == 0;
  if (off) kind.resize(kind.size() - 4);
  const Kind* chosen = nullptr;
  for (const Kind& k : kKinds)
    if (kind == k.name) chosen = &k;
  if (ops < 1 || chosen == nullptr) {
    std::fprintf(stderr, "usage: op_lines OPS pack|execute|miss[_off] [cold|warm]\n");
    return 2;
  }
  stubcuda_add_device_memory(kDevice, std::size_t{1} << 40);
  CUstream stream = nullptr;
  if (cudnnCreate(&g_handle) != 0 || cuStreamCreate(&stream, 0) != CUDA_SUCCESS ||
      cudnnSetStream(g_handle, reinterpret_cast<cudaStream_t>(stream)) != 0 ||
      g_plan.build(g_api, g_handle, kUids) != 0) {
    std::fprintf(stderr, "op_lines: cannot set up a handle and a plan\n");
    return 1;
  }
  if (off) {
    const auto set_features = reinterpret_cast<unsigned (*)(unsigned)>(dlsym(RTLD_DEFAULT, "cudnn_fastpath_set_features"));
    if (set_features == nullptr || set_features(0) != 0) {
      std::fprintf(stderr, "op_lines: cannot switch the shim's features off\n");
      return 1;
    }
  }
  const cudnn_fastpath::bench::OtherCode other_code = cold ? cudnn_fastpath::bench::make_other_code() : nullptr;
  std::vector<std::uint64_t> other_data(cold ? std::size_t{1} << 20 : 0);
  std::uint64_t sink = 0;
  for (int i = 0; i < chosen->warmup; ++i)
    if (!chosen->op(-1 - i)) {
      std::fprintf(stderr, "op_lines: an op failed\n");
      return 1;
    }
  for (int i = 0; i < ops; ++i) {
    for (std::size_t k = 0; k < other_data.size(); k += 8) sink += other_data[k]++;
    if (other_code) other_code();
    if (!chosen->op(i)) return 1;
  }
  std::printf("ops %d (%s%s)\n", ops, cold ? "cold" : "warm", sink == 0 ? "" : "");
  return 0;
}
