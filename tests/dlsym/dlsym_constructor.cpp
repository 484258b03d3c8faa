// libdlsym_constructor.so: a library whose constructor, while dlopen holds the loader lock, opens
// the stub libcudnn itself and calls it through dlsym pointers (the shim's dlsym calls the loader
// from inside that lookup). dlsym_constructor_result() says what it saw.
#include <cudnn.h>
#include <dlfcn.h>

namespace {
int g_result = -1;  // 1: every call succeeded through the shim's functions; 0: something failed

__attribute__((constructor)) void call_cudnn_while_loading() {
  void* cudnn = dlopen(STUB_CUDNN_PATH, RTLD_NOW | RTLD_LOCAL);
  if (cudnn == nullptr) return void(g_result = 0);
  auto create = reinterpret_cast<decltype(&cudnnCreate)>(dlsym(cudnn, "cudnnCreate"));
  auto set_stream = reinterpret_cast<decltype(&cudnnSetStream)>(dlsym(cudnn, "cudnnSetStream"));
  cudnnHandle_t handle = nullptr;
  static char stream;
  bool ok = create != nullptr && set_stream != nullptr && create(&handle) == CUDNN_STATUS_SUCCESS;
  for (int i = 0; ok && i < 10; ++i) ok = set_stream(handle, reinterpret_cast<cudaStream_t>(&stream)) == CUDNN_STATUS_SUCCESS;
  g_result = ok ? 1 : 0;
}
}  // namespace

extern "C" __attribute__((visibility("default"))) int dlsym_constructor_result() { return g_result; }
