// The pool of proxies and each thread's spare one.
//
// A thread keeps the proxy it destroyed for its next pack: a steady op then touches no shared
// bitmap and runs no locked instruction. At thread exit the spare goes back to the pool, so
// short-lived threads never drain it.
#include "shim/pack_proxy/proxy.h"

#include "shim/process/code_layout.h"
#include "shim/process/lifecycle.h"

namespace cudnn_fastpath::shim {

ProxyPool g_proxies;
__thread Proxy* t_spare_proxy __attribute__((tls_model("initial-exec"))) = nullptr;
__thread SpareState t_spare_state __attribute__((tls_model("initial-exec"))) = SpareState::kNoHook;

namespace {

// Runs at thread exit (the shim is never unmapped: -z nodelete).
void return_spare(void*) {
  t_spare_state = SpareState::kExited;
  if (Proxy* p = t_spare_proxy) {
    t_spare_proxy = nullptr;
    g_proxies.release(p);
  }
}

ThreadExitHook g_exit_hook{return_spare};

}  // namespace

// Once per thread.
CUDNN_FASTPATH_COLD bool hook_thread_exit() noexcept {
  // Any non-null value makes the hook run; the spare itself is read from t_spare_proxy.
  if (t_spare_state == SpareState::kExited || !g_exit_hook.arm(&g_exit_hook)) return false;
  t_spare_state = SpareState::kHooked;
  return true;
}

}  // namespace cudnn_fastpath::shim
