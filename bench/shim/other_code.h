// Other code for the cold benchmarks to run between two ops: 2 MiB of straight-line no-ops and a
// return, so that the instruction caches are as cold as a framework leaves them between two ops
// (the data caches are pushed out by reading other memory). Shared by pack_bench and op_lines.
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <cstring>

namespace cudnn_fastpath::bench {

using OtherCode = void (*)();

// Made once per call; nullptr where there is no executable memory, or off x86-64 (where the
// caller should say so, or rely on the reads alone).
inline OtherCode make_other_code() {
#if defined(__x86_64__)
  constexpr std::size_t kBytes = std::size_t{2} << 20;
  void* region = mmap(nullptr, kBytes + 1, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (region == MAP_FAILED) return nullptr;
  auto* bytes = static_cast<unsigned char*>(region);
  std::memset(bytes, 0x90, kBytes);  // nop
  bytes[kBytes] = 0xc3;              // ret
  if (mprotect(region, kBytes + 1, PROT_READ | PROT_EXEC) != 0) {
    munmap(region, kBytes + 1);
    return nullptr;
  }
  return reinterpret_cast<OtherCode>(region);
#else
  return nullptr;
#endif
}

}  // namespace cudnn_fastpath::bench
