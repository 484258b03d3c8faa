// libconstructor_library.so: a library whose constructor calls cuDNN, as some do (a plugin that
// sets itself up in its constructor). It runs inside the dlopen that loads it, with the loader's
// lock held, while another thread of the program is making the process's first cuDNN call: see
// the loader_lock case in scenario.cpp.
#include <cudnn.h>
#include <dlfcn.h>
#include <sched.h>
#include <unistd.h>

#include <atomic>

#include "tests/interpose/loader_lock.h"

namespace {

// -1: the constructor did not get as far as cudnnCreate; else its status.
std::atomic<int> g_create_status{-1};

__attribute__((constructor)) void create_a_handle_while_loading() {
  auto* flags = static_cast<LoaderLockFlags*>(dlsym(RTLD_DEFAULT, LOADER_LOCK_FLAGS_SYMBOL));
  if (flags == nullptr) return;  // not loaded by the loader_lock case: nothing to do
  flags->entered.store(1);
  while (flags->b_started.load() == 0) sched_yield();
  usleep(100 * 1000);  // thread B is now inside its first cuDNN call, waiting for the loader lock
  cudnnHandle_t handle = nullptr;
  g_create_status.store(cudnnCreate(&handle));  // through this library's own PLT
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int constructor_library_create_status() {
  return g_create_status.load();
}
