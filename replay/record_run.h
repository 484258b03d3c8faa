// RecordRun: the words a thread's last key took for a run of recorded objects (the names of their
// records: shim/families/record_names.h), with the version of each record they were read from
// (descriptor_registry.h), so that the thread's next key over the same objects, none of them set,
// made again or destroyed since, takes the same words from here: a look at each record's sequence
// instead of a lookup, a read and a name for each. PyTorch's Linear reads one matmul descriptor and
// its layouts twice (its heuristic, then its matmul), and a program that keeps its descriptors
// reads them at every call.
//
// A thread's own (ReplayThread), so plain data. Exact: a name is given to one content only, and a
// record at an unchanged version has the contents its name was given for.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "replay/descriptor_registry.h"

namespace cudnn_fastpath::replay {

template <std::size_t Objects, std::size_t Words, std::size_t Facts>
struct RecordRun {
  bool valid;  // false: no run kept
  const void* objects[Objects];
  RecordVersion versions[Objects];  // written by the reads of the run being made (begin())
  std::uint32_t length;  // of `words`: the run's key took at most Words
  std::uint64_t words[Words];
  std::array<std::uint64_t, Facts> facts;  // what the caller read of the records besides their words

  // Whether `now` are the run's objects (of `kinds`), each record still the version it was read at,
  // or one made over it and kept (Registry::still(), `kept` as it asks; the run then follows it):
  // then `words` (`length` of them) and `facts` are what reading them again would give.
  template <typename Registry, typename Kept>
  bool holds(const void* const (&now)[Objects], const std::uint32_t (&kinds)[Objects], Kept&& kept) noexcept {
    std::uintptr_t differ = !valid;
#pragma GCC unroll 8
    for (std::size_t i = 0; i < Objects; ++i)
      differ |= reinterpret_cast<std::uintptr_t>(now[i]) ^ reinterpret_cast<std::uintptr_t>(objects[i]);
    if (differ != 0) return false;
#pragma GCC unroll 8
    for (std::size_t i = 0; i < Objects; ++i) {
      if (i > 0 && now[i] == now[i - 1] && kinds[i] == kinds[i - 1]) {
        versions[i] = versions[i - 1];  // an object passed again (PyTorch's C as D): looked at once
        continue;
      }
      if (!Registry::still(versions[i], now[i], kinds[i], kept)) return false;
    }
    return true;
  }

  // A run is being read: nothing is kept until finish(), and its reads write `versions`.
  void begin() noexcept { valid = false; }
  // The run of `now` (each read at `versions`) gave `from[0, n)` (n at most Words) and `known`.
  void finish(const void* const (&now)[Objects], const std::uint64_t* from, std::uint32_t n,
              const std::array<std::uint64_t, Facts>& known) noexcept {
    if (n > Words) return;
#pragma GCC unroll 8
    for (std::size_t i = 0; i < Objects; ++i) objects[i] = now[i];
    for (std::uint32_t i = 0; i < n; ++i) words[i] = from[i];
    length = n;
    facts = known;
    valid = true;
  }
};

}  // namespace cudnn_fastpath::replay
