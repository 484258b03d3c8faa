// For scenario programs whose calls' tensors move from call to call (the shim's relocation:
// shim/engine/shape_cache.h): memory for such tensors, and the stubs' kernel style a run asks for.
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <set>
#include <vector>

#include "tests/stub/stub_kernel_style.h"

[[noreturn]] void die(const char* what);

namespace moving {

// `count` slots of 256 bytes (at most 4096), the first at a 1 MiB boundary, so that slot j's
// address has the trailing zeros of 256 * j whatever the heap does from run to run (a tensor's
// alignment decides its call's shape and what its relocation checks), every word of slot j holding
// `first + j`, so that a kernel reading an input through a stale pointer reads another value than
// the reference call. A tensor that moves every call takes slot i * step at call i: tensors of
// different steps never move alike (two tensors that moved by the same distance prove nothing).
class Slots {
 public:
  static constexpr std::size_t kAlignment = std::size_t{1} << 20;
  Slots(std::size_t count, std::uint64_t first)
      : count_(count), slots_(static_cast<Slot*>(std::aligned_alloc(kAlignment, round_up(count * sizeof(Slot))))) {
    if (slots_ == nullptr || count > kAlignment / sizeof(Slot)) die("moving::Slots");
    for (std::size_t j = 0; j < count; ++j)
      for (std::uint64_t& word : slots_[j].words) word = first + j;
  }
  ~Slots() { std::free(slots_); }
  Slots(const Slots&) = delete;
  Slots& operator=(const Slots&) = delete;
  // Slot j, `offset` bytes in (at most 248: 8 bytes are read or written there).
  void* at(std::size_t j, std::size_t offset = 0) {
    if (j >= count_) die("moving::Slots::at");
    return reinterpret_cast<unsigned char*>(slots_[j].words) + offset;
  }

 private:
  struct alignas(256) Slot {
    std::uint64_t words[32];
  };
  static std::size_t round_up(std::size_t n) { return (n + kAlignment - 1) / kAlignment * kAlignment; }
  std::size_t count_;
  Slot* slots_;
};

// Pages around a 4 GiB boundary and 4 GiB past it, for tensors whose addresses' high 32 bits differ
// (a relocation must never carry a graph across such a boundary: graph_relocation.h). 12 GiB of
// address space reserved, never backed; a page is made readable and writable at its first use, every
// word of its 256-byte slot k holding `tag + 16 * page + k`. The reservation is asked for at the same
// address every run (kHint, when free), so that the tensors' addresses shifted right, which a proof
// looks for among the arguments (a page index), do not meet a constant of the call's by chance in
// one run of a few hundred (0x7f80'0000'0000 >> 17 is 1.5f's bits, the scenarios' alpha).
class Regions {
 public:
  static constexpr std::uint64_t kRegion = std::uint64_t{1} << 32, kPage = 4096;
  static constexpr std::uintptr_t kHint = 0x5a5a00000000;
  Regions() {
    void* reserved = mmap(reinterpret_cast<void*>(kHint), 3 * kRegion, PROT_NONE,
                          MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (reserved == MAP_FAILED) die("mmap");
    base_ = reinterpret_cast<std::uintptr_t>(reserved);
    boundary_ = (base_ + kRegion - 1) / kRegion * kRegion;
    if (boundary_ - base_ < 1024 * kPage) boundary_ += kRegion;
  }
  // `offset` bytes into page `page` counted from the boundary (page -1 ends at it), `tag` filling
  // it at its first use.
  void* at(std::int64_t page, std::size_t offset = 0, std::uint64_t tag = 0xF00000) {
    const std::uintptr_t start = boundary_ + static_cast<std::uint64_t>(page) * kPage;
    if (start < base_ || start + kPage > base_ + 3 * kRegion || offset + 8 > kPage) die("moving::Regions::at");
    auto* bytes = reinterpret_cast<std::uint64_t*>(start);
    if (usable_.insert(page).second) {
      if (mprotect(bytes, kPage, PROT_READ | PROT_WRITE) != 0) die("mprotect");
      for (std::size_t w = 0; w < kPage / 8; ++w) bytes[w] = tag + 16 * static_cast<std::uint64_t>(page) + w / 32;
    }
    return reinterpret_cast<unsigned char*>(start) + offset;
  }

 private:
  std::uintptr_t base_ = 0, boundary_ = 0;
  std::set<std::int64_t> usable_;
};

// The kernel styles by name (stub_kernel_style.h), for the environment variable a test sets.
inline constexpr const char* kStyleNames[STUB_KERNEL_STYLES] = {
    "plain", "by_alignment", "indirect",  "split",      "memset",            "two_kernels",
    "tma",   "low_half",     "high_half", "page_index", "by_page_alignment", "by_large_alignment"};

// The style `variable` names: plain when unset.
inline int style_from_env(const char* variable) {
  const char* name = std::getenv(variable);
  if (name == nullptr) return STUB_KERNEL_STYLE_PLAIN;
  for (int s = 0; s < STUB_KERNEL_STYLES; ++s)
    if (std::strcmp(name, kStyleNames[s]) == 0) return s;
  die("an unknown kernel style");
}

}  // namespace moving
