// The pool of proxies and each thread's spare one.
//
// A thread keeps the proxy it destroyed for its next pack: a steady op then touches no shared
// bitmap and runs no locked instruction. At thread exit the spare goes back to the pool, so
// short-lived threads never drain it.
#include "shim/proxy.h"

#include <pthread.h>

#include "shim/code_layout.h"

namespace cudnn_fastpath::shim {

ProxyPool g_proxies;
__thread Proxy* t_spare_proxy __attribute__((tls_model("initial-exec"))) = nullptr;
__thread SpareState t_spare_state __attribute__((tls_model("initial-exec"))) = SpareState::kNoHook;

namespace {

pthread_key_t g_exit_key;
std::atomic<int> g_key_state{0};  // 0 none, 1 being created, 2 ready, 3 failed

// Runs at thread exit (the shim is never unmapped: -z nodelete).
void return_spare(void*) {
  t_spare_state = SpareState::kExited;
  if (Proxy* p = t_spare_proxy) {
    t_spare_proxy = nullptr;
    g_proxies.release(p);
  }
}

// pthread_key_create runs no loader code; the spin only waits for another thread's call to it.
bool exit_key_ready() {
  int state = g_key_state.load(std::memory_order_acquire);
  if (state == 2) return true;
  if (state == 0 && g_key_state.compare_exchange_strong(state, 1, std::memory_order_acq_rel)) {
    const bool made = pthread_key_create(&g_exit_key, return_spare) == 0;
    // Release: the key's value is visible to whoever sees state 2.
    g_key_state.store(made ? 2 : 3, std::memory_order_release);
    return made;
  }
  while ((state = g_key_state.load(std::memory_order_acquire)) == 1) {
  }
  return state == 2;
}

}  // namespace

// Once per thread.
CUDNN_FASTPATH_COLD bool hook_thread_exit() noexcept {
  if (t_spare_state == SpareState::kExited || !exit_key_ready()) return false;
  // Any non-null value makes the destructor run; the spare itself is read from t_spare_proxy.
  if (pthread_setspecific(g_exit_key, &g_exit_key) != 0) return false;
  t_spare_state = SpareState::kHooked;
  return true;
}

}  // namespace cudnn_fastpath::shim
