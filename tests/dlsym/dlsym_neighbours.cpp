// The program of the dlsym neighbours cases (dlsym_test.cpp): HAMi-core's way to the driver. It
// opens the stub libcuda RTLD_LOCAL and takes cuMemAlloc_v2, cuMemFree_v2, cuStreamCreate and
// cuStreamDestroy_v2 with dlsym on that handle, and "puts" with dlsym(RTLD_DEFAULT) (five lookups),
// then allocates 1 MiB and 16 bytes and makes and destroys a stream through those pointers. It
// prints what each dlsym interposer loaded (libdlsym_interposer_a/_b, see there) saw, read through
// glibc's own dlsym so that no interposer counts the reading.
#include <cuda.h>
#include <dlfcn.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "tests/support/glibc_dlsym.h"

struct DlsymInterposerCounts {
  std::uint64_t lookups, from_program, allocations_refused, allocations_passed, stream_destroys;
};

namespace {

void print(const char* key, long long value) { std::printf("%s=%lld\n", key, value); }

template <typename T>
T take(void* handle, const char* name) {
  void* found = dlsym(handle, name);
  asm volatile("" ::: "memory");  // a call from the program, not a jump
  if (found == nullptr) {
    std::fprintf(stderr, "dlsym_neighbours: %s not found\n", name);
    std::exit(3);
  }
  return reinterpret_cast<T>(found);
}

}  // namespace

int main() {
  void* driver = dlopen(STUB_CUDA_PATH, RTLD_NOW | RTLD_LOCAL);
  if (driver == nullptr) return 3;
  const auto alloc = take<CUresult (*)(CUdeviceptr*, std::size_t)>(driver, "cuMemAlloc_v2");
  const auto release = take<CUresult (*)(CUdeviceptr)>(driver, "cuMemFree_v2");
  const auto create = take<CUresult (*)(CUstream*, unsigned)>(driver, "cuStreamCreate");
  const auto destroy = take<CUresult (*)(CUstream)>(driver, "cuStreamDestroy_v2");
  take<int (*)(const char*)>(RTLD_DEFAULT, "puts");

  CUdeviceptr big = 0, small = 0;
  print("big_allocated", alloc(&big, std::size_t{1} << 20) == CUDA_SUCCESS);
  print("small_allocated", alloc(&small, 16) == CUDA_SUCCESS);
  if (small) release(small);
  if (big) release(big);
  CUstream stream = nullptr;
  print("stream_made", create(&stream, 0) == CUDA_SUCCESS);
  print("stream_destroyed", destroy(stream) == CUDA_SUCCESS);
  Dl_info info{};
  print("destroy_in_shim", dladdr(reinterpret_cast<void*>(destroy), &info) != 0 && info.dli_fname &&
                               std::strstr(info.dli_fname, "libcudnn_fastpath") != nullptr);

  for (const char* name : {"a", "b"}) {
    char symbol[64];
    std::snprintf(symbol, sizeof symbol, "dlsym_interposer_counts_%s", name);
    const auto counts = reinterpret_cast<DlsymInterposerCounts (*)()>(glibc_dlsym(RTLD_DEFAULT, symbol));
    print((std::string(name) + ".loaded").c_str(), counts != nullptr);
    if (counts == nullptr) continue;
    const DlsymInterposerCounts c = counts();
    print((std::string(name) + ".lookups").c_str(), static_cast<long long>(c.lookups));
    print((std::string(name) + ".from_program").c_str(), static_cast<long long>(c.from_program));
    print((std::string(name) + ".refused").c_str(), static_cast<long long>(c.allocations_refused));
    print((std::string(name) + ".passed").c_str(), static_cast<long long>(c.allocations_passed));
    print((std::string(name) + ".stream_destroys").c_str(), static_cast<long long>(c.stream_destroys));
  }
  return 0;
}
