// libdlsym_interposer_a.so and _b.so: a dlsym interposer in the style of HAMi-core's libvgpu.so
// (GPU sharing on Kubernetes), which enforces a pod's GPU memory limit by handing out its own
// cuMemAlloc_v2 through dlsym. It exports dlsym, finds glibc's with
// dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5") as HAMi-core does, counts every lookup that reaches it
// (and those whose requester, by return address, is the program), and answers a lookup in a handle
// of cuMemAlloc_v2 (refusing more than DLSYM_INTERPOSER_LIMIT bytes, default 1024) and of
// cuStreamDestroy_v2 (counting its calls) with wrappers of its own. The program reads the counts
// through dlsym_interposer_counts_a / _b, which it looks up with glibc's own dlsym.
#include <cuda.h>
#include <dlfcn.h>
#include <link.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#define INTERPOSER_CONCAT2(a, b) a##b
#define INTERPOSER_CONCAT(a, b) INTERPOSER_CONCAT2(a, b)

struct DlsymInterposerCounts {
  std::uint64_t lookups;               // every dlsym call that reached this interposer
  std::uint64_t from_program;          // of those, made by the program itself (its return address)
  std::uint64_t allocations_refused;   // by the cuMemAlloc_v2 wrapper
  std::uint64_t allocations_passed;
  std::uint64_t stream_destroys;       // calls of the cuStreamDestroy_v2 wrapper
};

namespace {

using Dlsym = void* (*)(void*, const char*);

// Relaxed: tallies read by the program after its calls.
std::atomic<std::uint64_t> g_lookups{0}, g_from_program{0}, g_refused{0}, g_passed{0}, g_destroys{0};

// Lookups are counted from this library's constructor on: in a sanitized build the sanitizer's
// runtime, preloaded first, makes hundreds of lookups of its own while it starts.
std::atomic<bool> g_started{false};  // relaxed: set before main, on the thread that runs it
__attribute__((constructor)) void start_counting() { g_started.store(true, std::memory_order_relaxed); }

// No function-local static (its guard is a call TSan intercepts, and TSan's runtime calls this
// dlsym while it starts, before it can take one). Relaxed: every thread that looks finds the same
// value.
std::atomic<Dlsym> g_real_dlsym{nullptr};
Dlsym real_dlsym() {
  Dlsym real = g_real_dlsym.load(std::memory_order_relaxed);
  if (real == nullptr) {
    real = reinterpret_cast<Dlsym>(dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5"));
    g_real_dlsym.store(real, std::memory_order_relaxed);
  }
  return real;
}

std::uintptr_t program_base() {
  static const std::uintptr_t base = [] {
    std::uintptr_t first = 0;
    dl_iterate_phdr(
        [](dl_phdr_info* info, std::size_t, void* out) {
          *static_cast<std::uintptr_t*>(out) = info->dlpi_addr;
          return 1;  // the first object is the program
        },
        &first);
    return first;
  }();
  return base;
}

bool from_program(const void* requester) {
  Dl_info info{};
  return dladdr(requester, &info) != 0 && reinterpret_cast<std::uintptr_t>(info.dli_fbase) == program_base();
}

using MemAlloc = CUresult (*)(CUdeviceptr*, std::size_t);
using StreamDestroy = CUresult (*)(CUstream);
MemAlloc g_real_alloc = nullptr;
StreamDestroy g_real_destroy = nullptr;

CUresult limited_alloc(CUdeviceptr* pointer, std::size_t bytes) {
  const char* text = std::getenv("DLSYM_INTERPOSER_LIMIT");
  const std::size_t limit = text ? std::strtoull(text, nullptr, 10) : 1024;
  if (bytes > limit) {
    g_refused.fetch_add(1, std::memory_order_relaxed);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  g_passed.fetch_add(1, std::memory_order_relaxed);
  return g_real_alloc(pointer, bytes);
}

CUresult counted_destroy(CUstream stream) {
  g_destroys.fetch_add(1, std::memory_order_relaxed);
  return g_real_destroy(stream);
}

}  // namespace

extern "C" {

__attribute__((visibility("default"))) void* dlsym(void* handle, const char* name) {
  const void* requester = __builtin_return_address(0);
  if (g_started.load(std::memory_order_relaxed)) {
    g_lookups.fetch_add(1, std::memory_order_relaxed);
    if (from_program(requester)) g_from_program.fetch_add(1, std::memory_order_relaxed);
  }
  void* found = real_dlsym()(handle, name);
  if (found == nullptr || handle == RTLD_DEFAULT || handle == RTLD_NEXT) return found;
  if (std::strcmp(name, "cuMemAlloc_v2") == 0) {
    g_real_alloc = reinterpret_cast<MemAlloc>(found);
    return reinterpret_cast<void*>(&limited_alloc);
  }
  if (std::strcmp(name, "cuStreamDestroy_v2") == 0) {
    g_real_destroy = reinterpret_cast<StreamDestroy>(found);
    return reinterpret_cast<void*>(&counted_destroy);
  }
  return found;
}

__attribute__((visibility("default"))) DlsymInterposerCounts INTERPOSER_CONCAT(dlsym_interposer_counts_,
                                                                             DLSYM_INTERPOSER_NAME)() {
  return {g_lookups.load(), g_from_program.load(), g_refused.load(), g_passed.load(), g_destroys.load()};
}

}  // extern "C"
