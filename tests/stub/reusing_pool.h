// A fixed array of objects handed out by address, the last released first. The real cuDNN and CUDA
// runtime give a destroyed handle's or stream's address to the next one created (seen on the GPU
// machine); the stubs do it every time, so that the tests of address reuse are certain.
#pragma once

#include <cstddef>
#include <mutex>
#include <vector>

template <typename T, std::size_t Capacity>
class ReusingPool {
 public:
  // nullptr when all Capacity objects are out. `fresh`: an object never handed out before, while
  // there is one (a program that creates and destroys many handles at distinct addresses).
  T* acquire(bool fresh = false) {
    std::lock_guard<std::mutex> guard(lock_);
    if (fresh && next_unused_ < Capacity) return &items_[next_unused_++];
    if (!released_.empty()) {
      T* item = &items_[released_.back()];
      released_.pop_back();
      return item;
    }
    return next_unused_ < Capacity ? &items_[next_unused_++] : nullptr;
  }

  void release(T* item) {
    std::lock_guard<std::mutex> guard(lock_);
    released_.push_back(static_cast<std::size_t>(item - items_));
  }

  // The object at `address` if it is one of the pool's, else nullptr (whether or not it is out).
  T* at(const void* address) {
    auto* item = static_cast<T*>(const_cast<void*>(address));
    return item >= items_ && item < items_ + Capacity ? item : nullptr;
  }

  T* begin() { return items_; }
  T* end() { return items_ + Capacity; }

 private:
  T items_[Capacity];
  std::mutex lock_;
  std::size_t next_unused_ = 0;         // under lock_
  std::vector<std::size_t> released_;   // under lock_: indices, reused last in, first out
};
