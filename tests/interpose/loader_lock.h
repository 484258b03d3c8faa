// Shared by scenario_dlopen's loader_lock case and libconstructor_library.so: the flags with which
// the library's constructor (running inside dlopen, under the loader's lock) and a thread of the
// program take turns. The program defines the object and exports it (scenario_dlopen.dynlist);
// the constructor finds it with dlsym.
#pragma once

#include <atomic>

struct LoaderLockFlags {
  std::atomic<int> entered{0};    // set by the constructor once it runs
  std::atomic<int> b_started{0};  // set by the program's thread B just before its first cuDNN call
};

#define LOADER_LOCK_FLAGS_SYMBOL "scenario_loader_lock_flags"
