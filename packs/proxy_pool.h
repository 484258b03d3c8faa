// ProxyPool: the proxy variant packs the shim hands out instead of real ones, in a fixed array.
//
// A proxy's address is what the program holds as its cudnnBackendDescriptor_t. Whether a
// descriptor is one of the pool's elements is decided from its address alone (inside the array, on
// an element boundary): no memory the shim did not hand out is ever read. Whether that element is
// a live proxy is the element's own business (its first line is read next anyway; the bitmap's
// line need not be). Allocation and release are one CAS on a bitmap word each; each thread starts
// its search at a word of its own, so threads rarely touch the same word.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace cudnn_fastpath::packs {

template <typename Proxy, std::size_t Capacity>
class ProxyPool {
  static_assert(Capacity % 64 == 0, "Capacity must be a multiple of 64");

 public:
  // A free proxy (its contents as the last user left them), or nullptr when all are in use.
  // `hint` spreads threads over the bitmap (any number; the caller's thread, say).
  Proxy* allocate(std::size_t hint) noexcept {
    for (std::size_t step = 0; step < kWords; ++step) {
      const std::size_t w = (hint + step) % kWords;
      std::uint64_t bits = used_[w].load(std::memory_order_relaxed);
      while (bits != ~std::uint64_t{0}) {
        const std::uint64_t bit = ~bits & (bits + 1);  // the lowest clear bit
        // Acquire: the proxy's previous user's writes (before its release) come before ours.
        if (used_[w].compare_exchange_weak(bits, bits | bit, std::memory_order_acquire, std::memory_order_relaxed))
          return &proxies_[w * 64 + static_cast<std::size_t>(__builtin_ctzll(bit))];
      }
    }
    return nullptr;
  }

  // Release: this user's writes come before the next user's (see allocate).
  void release(Proxy* proxy) noexcept {
    const std::size_t index = static_cast<std::size_t>(proxy - proxies_);
    used_[index / 64].fetch_and(~(std::uint64_t{1} << (index % 64)), std::memory_order_release);
  }

  // The element that `descriptor` names, allocated or not, or nullptr if it names none.
  Proxy* at(const void* descriptor) noexcept {
    const auto address = reinterpret_cast<std::uintptr_t>(descriptor);
    const auto begin = reinterpret_cast<std::uintptr_t>(proxies_);
    if (address < begin || address >= begin + sizeof proxies_ || (address - begin) % sizeof(Proxy) != 0)
      return nullptr;
    return &proxies_[(address - begin) / sizeof(Proxy)];
  }

  // Whether `descriptor` lies in the pool at all, allocated or not (a destroyed proxy, say).
  bool owns(const void* descriptor) const noexcept {
    const auto address = reinterpret_cast<std::uintptr_t>(descriptor);
    const auto begin = reinterpret_cast<std::uintptr_t>(proxies_);
    return address >= begin && address < begin + sizeof proxies_;
  }

  std::size_t in_use() const noexcept {
    std::size_t n = 0;
    for (const auto& word : used_) n += static_cast<std::size_t>(__builtin_popcountll(word.load(std::memory_order_relaxed)));
    return n;
  }

 private:
  static constexpr std::size_t kWords = Capacity / 64;
  std::atomic<std::uint64_t> used_[kWords]{};
  Proxy proxies_[Capacity]{};
};

}  // namespace cudnn_fastpath::packs
