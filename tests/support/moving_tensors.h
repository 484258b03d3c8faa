// For scenario programs whose calls' tensors move from call to call (the shim's relocation:
// shim/engine/shape_replay.h): memory for such tensors, and the stubs' kernel style a run asks for.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "tests/stub/stub_kernel_style.h"

[[noreturn]] void die(const char* what);

namespace moving {

// `count` slots of 256 bytes, each 256-byte aligned (a tensor's alignment is part of its call's
// shape: it must not follow the heap from run to run), every word of slot j holding `first + j`, so
// that a kernel reading an input through a stale pointer reads another value than the reference
// call. A tensor that moves every call takes slot i * step at call i: tensors of different steps
// never move alike (two tensors that moved by the same distance prove nothing).
class Slots {
 public:
  Slots(std::size_t count, std::uint64_t first) : slots_(count) {
    for (std::size_t j = 0; j < count; ++j)
      for (std::uint64_t& word : slots_[j].words) word = first + j;
  }
  // Slot j, `offset` bytes in (at most 248: 8 bytes are read or written there).
  void* at(std::size_t j, std::size_t offset = 0) {
    return reinterpret_cast<unsigned char*>(slots_.at(j).words) + offset;
  }

 private:
  struct alignas(256) Slot {
    std::uint64_t words[32];
  };
  std::vector<Slot> slots_;
};

// The kernel styles by name (stub_kernel_style.h), for the environment variable a test sets.
inline constexpr const char* kStyleNames[STUB_KERNEL_STYLES] = {"plain",  "by_alignment", "indirect", "split",
                                                                "memset", "two_kernels",  "tma"};

// The style `variable` names: plain when unset.
inline int style_from_env(const char* variable) {
  const char* name = std::getenv(variable);
  if (name == nullptr) return STUB_KERNEL_STYLE_PLAIN;
  for (int s = 0; s < STUB_KERNEL_STYLES; ++s)
    if (std::strcmp(name, kStyleNames[s]) == 0) return s;
  die("an unknown kernel style");
}

}  // namespace moving
