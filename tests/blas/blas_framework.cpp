// libblas_framework.so: stands for a framework library (libtorch_cuda, say) that links libcublas
// and libcublasLt and is itself opened with dlopen RTLD_LOCAL. Each function of the table is a
// wrapper that calls the library's function through this library's PLT: the shim, preloaded, sees
// this library as the caller (built -fno-optimize-sibling-calls, and with work after the call, so
// that no wrapper becomes a jump that would leave the program as the caller).
#include "tests/blas/blas_api.h"

namespace {

template <auto F>
struct Through;
template <typename R, typename... A, R (*F)(A...)>
struct Through<F> {
  static R call(A... a) {
    const R result = F(a...);
    asm volatile("" ::: "memory");
    return result;
  }
};

}  // namespace

extern "C" __attribute__((visibility("default"))) const BlasApi* blas_framework_api() {
  static const BlasApi api = [] {
    BlasApi a;
    // The member's type picks the C function where C++ overloads the name.
#define BLAS_FRAMEWORK_WRAPPER(name) a.name = Through<static_cast<decltype(a.name)>(&::name)>::call;
    BLAS_API_FUNCTIONS(BLAS_FRAMEWORK_WRAPPER)
#undef BLAS_FRAMEWORK_WRAPPER
    return a;
  }();
  return &api;
}
