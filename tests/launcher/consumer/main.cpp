// Compiles the installed frontend headers (when the package has the frontend) and links its library.
#include <cstdio>

#ifdef WITH_FRONTEND
#include "frontend_headers.h"
#endif

int main() {
#ifdef WITH_FRONTEND
  // A reference the linker cannot drop, so the program needs (and loads) the installed library.
  void (*volatile forget)(cudnnHandle_t) noexcept = &cudnn_fastpath::forget_handle;
  if (forget == nullptr) return 1;
  std::printf("frontend linked\n");
#endif
  std::printf("consumer: ok (launcher %s)\n", LAUNCHER);
  return 0;
}
