// liblegacy_framework.so: stands for a framework library (PyTorch's libtorch_cuda) that links
// libcudnn and is itself opened with dlopen RTLD_LOCAL. Its table holds wrappers, one per function,
// each calling the function it was linked to through this library's PLT: a preloaded shim sees
// every call come from this library. Built with -fno-optimize-sibling-calls (CMakeLists.txt): a
// wrapper's call must not become a jump, or the caller the shim sees would be the program.
#include "tests/legacy/legacy_api.h"

namespace {

template <auto F>
struct Through;
template <typename R, typename... A, R (*F)(A...)>
struct Through<F> {
  static R call(A... a) { return F(a...); }
};

}  // namespace

extern "C" __attribute__((visibility("default"))) const LegacyApi* legacy_framework_api() {
  static const LegacyApi api = {
#define LEGACY_FRAMEWORK_WRAPPER(name) &Through<&::name>::call,
      LEGACY_HANDLE_FUNCTIONS(LEGACY_FRAMEWORK_WRAPPER) LEGACY_DESCRIPTOR_FUNCTIONS(LEGACY_FRAMEWORK_WRAPPER)
          LEGACY_OP_FUNCTIONS(LEGACY_FRAMEWORK_WRAPPER)
#undef LEGACY_FRAMEWORK_WRAPPER
#define LEGACY_FRAMEWORK_CONTROL(name) &::name,
              LEGACY_STUB_FUNCTIONS(LEGACY_FRAMEWORK_CONTROL)
#undef LEGACY_FRAMEWORK_CONTROL
  };
  return &api;
}
