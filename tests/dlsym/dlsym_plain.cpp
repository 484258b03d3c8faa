// A program that never loads cuDNN but uses dlsym (as any plugin host does): under the shim its
// lookups must be glibc's, and the shim must say nothing.
#include <dlfcn.h>

#include <cstdio>

int main() {
  using Dlsym = void* (*)(void*, const char*);
  auto glibc = reinterpret_cast<Dlsym>(dlvsym(RTLD_DEFAULT, "dlsym", "GLIBC_2.2.5"));
  void* libm = dlopen("libm.so.6", RTLD_NOW | RTLD_LOCAL);
  if (glibc == nullptr || libm == nullptr) return 3;
  std::printf("cos_same=%d\n", dlsym(libm, "cos") != nullptr && dlsym(libm, "cos") == glibc(libm, "cos"));
  std::printf("missing_null=%d\n", dlsym(libm, "cudnnSetStream") == nullptr);
  std::printf("next_same=%d\n", dlsym(RTLD_NEXT, "puts") == glibc(RTLD_NEXT, "puts"));
  return 0;
}
