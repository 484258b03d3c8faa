// Cache lines a steady variant-pack op touches in the shim, for bench/shim/count-lines.
//
// Between two ops a framework runs enough of its own code and data to push the shim out of the
// caches, so what a proxied op costs there is roughly one memory access per cache line of code and
// data it touches (pack_bench's cold rows time it; on a shared VM they move by a third from run to
// run). This program makes the same op, create + 3 sets + finalize + destroy with the same
// contents every time, after 8 MiB of other reads and 2 MiB of other code, so that cachegrind's
// simulated caches are as cold as a framework leaves them; count-lines then sums the misses in the
// shim's own functions, per op. The counts are deterministic: a change to the shim's layout shows
// up as a whole number of lines.
#include <cudnn.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "bench/shim/other_code.h"

namespace {

const std::int64_t kUids[3] = {1, 2, 3};
void* const kPointers[3] = {reinterpret_cast<void*>(0x7f0000001000), reinterpret_cast<void*>(0x7f0000002000),
                            reinterpret_cast<void*>(0x7f0000003000)};
void* const kWorkspace = reinterpret_cast<void*>(0x7e0000100000);

bool pack_op() {
  cudnnBackendDescriptor_t pack = nullptr;
  cudnnStatus_t s = cudnnBackendCreateDescriptor(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, &pack);
  if (s == 0) s = cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, 3, kUids);
  if (s == 0) s = cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, 3, kPointers);
  if (s == 0) s = cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &kWorkspace);
  if (s == 0) s = cudnnBackendFinalize(pack);
  cudnnBackendDestroyDescriptor(pack);
  return s == CUDNN_STATUS_SUCCESS;
}

}  // namespace

// usage: pack_lines [OPS]   (default 300)
int main(int argc, char** argv) {
  const int ops = argc > 1 ? std::atoi(argv[1]) : 300;
  if (ops < 1) {
    std::fprintf(stderr, "pack_lines: OPS must be a positive number\n");
    return 2;
  }
  const cudnn_fastpath::bench::OtherCode other_code = cudnn_fastpath::bench::make_other_code();
  std::vector<std::uint64_t> other_data(std::size_t{1} << 20);
  std::uint64_t sink = 0;
  if (!pack_op()) {  // the first op fills the cache; the steady ones follow
    std::fprintf(stderr, "pack_lines: a variant pack failed to finalize\n");
    return 1;
  }
  for (int i = 0; i < ops; ++i) {
    for (std::size_t k = 0; k < other_data.size(); k += 8) sink += other_data[k]++;
    if (other_code) other_code();
    if (!pack_op()) return 1;
  }
  std::printf("ops %d (%s)\n", ops, sink == 0 ? "-" : "cold");
  return 0;
}
