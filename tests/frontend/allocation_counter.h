// Counts the calls to operator new made by the current thread while a CountAllocations is alive.
// The test program replaces the global operator new (allocation_counter.cpp); being the program,
// its definition wins over libstdc++'s for every library loaded, the frontend included.
#pragma once

#include <cstdint>

namespace cudnn_fastpath::test {

class CountAllocations {
 public:
  CountAllocations();
  ~CountAllocations();
  CountAllocations(const CountAllocations&) = delete;
  CountAllocations& operator=(const CountAllocations&) = delete;

  std::uint64_t count() const;

 private:
  std::uint64_t start_;
};

}  // namespace cudnn_fastpath::test
