// The legacy ops' inner calls as an interposer sees them. This program defines the three functions
// the inner calls make, as a preloaded shim would, forwards each to the next definition (the stub
// libcudnn.so.9's) and records the object each call came from.
#include <cudnn.h>
#include <dlfcn.h>

#include <catch2/catch.hpp>
#include <string>

#include "tests/stub/stub_legacy_control.h"

namespace {

std::string g_callers;  // the file names of the objects the calls came from, one a line

void record(void* return_address) {
  Dl_info info{};
  const std::string name = dladdr(return_address, &info) != 0 && info.dli_fname ? info.dli_fname : "?";
  g_callers += name.substr(name.rfind('/') + 1) + "\n";
}

template <typename F>
F next(const char* name) {
  return reinterpret_cast<F>(dlsym(RTLD_NEXT, name));
}

}  // namespace

extern "C" {

cudnnStatus_t CUDNNWINAPI cudnnCreateTensorDescriptor(cudnnTensorDescriptor_t* tensorDesc) {
  record(__builtin_return_address(0));
  static const auto forward = next<decltype(&cudnnCreateTensorDescriptor)>("cudnnCreateTensorDescriptor");
  return forward(tensorDesc);
}

cudnnStatus_t CUDNNWINAPI cudnnSetTensor4dDescriptor(cudnnTensorDescriptor_t tensorDesc, cudnnTensorFormat_t format,
                                                     cudnnDataType_t dataType, int n, int c, int h, int w) {
  record(__builtin_return_address(0));
  static const auto forward = next<decltype(&cudnnSetTensor4dDescriptor)>("cudnnSetTensor4dDescriptor");
  return forward(tensorDesc, format, dataType, n, c, h, w);
}

cudnnStatus_t CUDNNWINAPI cudnnDestroyTensorDescriptor(cudnnTensorDescriptor_t tensorDesc) {
  record(__builtin_return_address(0));
  static const auto forward = next<decltype(&cudnnDestroyTensorDescriptor)>("cudnnDestroyTensorDescriptor");
  return forward(tensorDesc);
}

}  // extern "C"

TEST_CASE("legacy ops: an interposer sees each inner call come from inside the library that made it") {
  cudnnHandle_t handle = nullptr;
  REQUIRE(cudnnCreate(&handle) == CUDNN_STATUS_SUCCESS);
  cudnnTensorDescriptor_t desc = nullptr;
  REQUIRE(cudnnCreateTensorDescriptor(&desc) == CUDNN_STATUS_SUCCESS);
  REQUIRE(cudnnSetTensor4dDescriptor(desc, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, 1, 1, 2) == CUDNN_STATUS_SUCCESS);
  CHECK(g_callers.find("libcudnn") == std::string::npos);  // the program's own calls: from the program

  const float one = 1.0f;
  float a[2] = {1, 2}, c[2] = {};
  const auto ops_add =
      reinterpret_cast<decltype(&cudnnAddTensor)>(dlvsym(RTLD_DEFAULT, "cudnnAddTensor", "libcudnn_ops.so.9"));
  const auto ops_inner = reinterpret_cast<decltype(&stubcudnn_inner_calls)>(
      dlvsym(RTLD_DEFAULT, "stubcudnn_inner_calls", "libcudnn_ops.so.9"));
  REQUIRE(ops_add != nullptr);
  REQUIRE(ops_inner != nullptr);
  stubcudnn_inner_calls(1);
  ops_inner(1);
  for (const auto& [add, library] :
       {std::pair{&cudnnAddTensor, "libcudnn.so.9"}, std::pair{ops_add, "libcudnn_ops.so.9"}}) {
    INFO(library);
    g_callers.clear();
    CHECK(add(handle, &one, desc, a, &one, desc, c) == CUDNN_STATUS_SUCCESS);
    const std::string line = std::string(library) + "\n";
    CHECK(g_callers == line + line + line);
  }
  stubcudnn_inner_calls(0);
  ops_inner(0);
  cudnnDestroyTensorDescriptor(desc);
  cudnnDestroy(handle);
}
