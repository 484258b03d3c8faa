// A program that never loads cuDNN but uses dlsym (as any plugin host does): under the shim its
// lookups must be glibc's, and the shim must say nothing.
#include <dlfcn.h>

#include <cstdio>
#include <cstring>

#include <cudnn.h>

#include "tests/support/glibc_dlsym.h"

// load-cudnn: also opens the stub libcudnn and never calls it (a PyTorch job whose model never
// reaches cuDNN); bypass: opens it and calls cudnnCreate, cudnnSetStream and cudnnDestroy through
// pointers taken with glibc's own dlsym, which no interposer sees.
int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "";
  if (std::strcmp(mode, "load-cudnn") == 0 || std::strcmp(mode, "bypass") == 0) {
    void* cudnn = dlopen(STUB_CUDNN_PATH, RTLD_NOW | RTLD_LOCAL);
    if (cudnn == nullptr) return 3;
    if (std::strcmp(mode, "bypass") == 0) {
      const auto create = reinterpret_cast<cudnnStatus_t (*)(cudnnHandle_t*)>(glibc_dlsym(cudnn, "cudnnCreate"));
      const auto set = reinterpret_cast<cudnnStatus_t (*)(cudnnHandle_t, cudaStream_t)>(glibc_dlsym(cudnn, "cudnnSetStream"));
      const auto destroy = reinterpret_cast<cudnnStatus_t (*)(cudnnHandle_t)>(glibc_dlsym(cudnn, "cudnnDestroy"));
      cudnnHandle_t handle = nullptr;
      const bool ok = create && set && destroy && create(&handle) == CUDNN_STATUS_SUCCESS &&
                      set(handle, nullptr) == CUDNN_STATUS_SUCCESS && destroy(handle) == CUDNN_STATUS_SUCCESS;
      std::printf("bypass_calls=%d\n", ok ? 3 : 0);
    }
  }
  using Dlsym = void* (*)(void*, const char*);
  auto glibc = reinterpret_cast<Dlsym>(dlvsym(RTLD_DEFAULT, "dlsym", "GLIBC_2.2.5"));
  void* libm = dlopen("libm.so.6", RTLD_NOW | RTLD_LOCAL);
  if (glibc == nullptr || libm == nullptr) return 3;
  std::printf("cos_same=%d\n", dlsym(libm, "cos") != nullptr && dlsym(libm, "cos") == glibc(libm, "cos"));
  std::printf("missing_null=%d\n", dlsym(libm, "cudnnSetStream") == nullptr);
  std::printf("next_same=%d\n", dlsym(RTLD_NEXT, "puts") == glibc(RTLD_NEXT, "puts"));
  return 0;
}
