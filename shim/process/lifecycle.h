// Functions the shim runs at the edges of a thread's or a process's life: at a thread's exit, and in
// the child after fork. The shim is never unmapped (-z nodelete), so they always exist.
#pragma once

#include <pthread.h>

#include <atomic>

namespace cudnn_fastpath::shim {

// A function run at the exit of each thread that asks for it: a pthread key made once, without a
// lock (pthread_key_create runs no loader code; a racing caller spins only while another thread's
// call to it returns).
class ThreadExitHook {
 public:
  explicit constexpr ThreadExitHook(void (*function)(void*)) noexcept : function_(function) {}

  // Makes the function run with `value` (non-null) when the calling thread exits. False if no key
  // could be made, or pthread_setspecific failed.
  bool arm(void* value) noexcept {
    int state = state_.load(std::memory_order_acquire);
    if (state == 0 && state_.compare_exchange_strong(state, 1, std::memory_order_acq_rel)) {
      state = pthread_key_create(&key_, function_) == 0 ? 2 : 3;
      // Release: the key's value is visible to whoever sees state 2.
      state_.store(state, std::memory_order_release);
    }
    while (state == 1) state = state_.load(std::memory_order_acquire);
    return state == 2 && pthread_setspecific(key_, value) == 0;
  }

 private:
  void (*function_)(void*);
  pthread_key_t key_{};
  std::atomic<int> state_{0};  // 0 no key, 1 being made, 2 made, 3 failed
};

// A part's reset in a forked child, where only the forking thread exists and nothing the parent
// learnt about cuDNN may be trusted. Registered at the part's first use, before it holds anything.
class ForkChildReset {
 public:
  explicit constexpr ForkChildReset(void (*function)()) noexcept : function_(function) {}

  void register_once() noexcept {
    // Relaxed: the flag only makes the registration happen once.
    if (!registered_.load(std::memory_order_relaxed) && !registered_.exchange(true, std::memory_order_relaxed))
      pthread_atfork(nullptr, nullptr, function_);
  }

 private:
  void (*function_)();
  std::atomic<bool> registered_{false};
};

}  // namespace cudnn_fastpath::shim
