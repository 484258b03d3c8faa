// Relocation's rules on graphs made by hand (replay/graph_relocation.h), without a driver: what two
// captures cannot show, and what apply() and the alignment checks do with it.
#include "replay/graph_relocation.h"

#include <catch2/catch.hpp>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <new>

using cudnn_fastpath::replay::free_copy;
using cudnn_fastpath::replay::GraphCopy;
using cudnn_fastpath::replay::GraphDriver;
using cudnn_fastpath::replay::Relocation;

namespace {

// Addresses in the 4 GiB region at 0x7f12_0000_0000, as a GPU's might be.
constexpr std::uint64_t kRegion = 0x7f1200000000ull;

// A graph of one kernel node whose argument words are `words` (malloc'd, as read_graph's).
GraphCopy* graph_of(std::initializer_list<std::uint64_t> words) {
  auto* copy = new (std::calloc(1, sizeof(GraphCopy))) GraphCopy;
  copy->count = 1;
  auto& n = copy->nodes[0];
  n.type = CU_GRAPH_NODE_TYPE_KERNEL;
  n.kernel.func = reinterpret_cast<CUfunction>(std::uintptr_t{0x1000});
  n.size = static_cast<std::uint32_t>(8 * words.size());
  n.params = static_cast<std::uint16_t>(words.size());
  n.bytes = static_cast<unsigned char*>(std::calloc(words.size() + 1, 8));
  int i = 0;
  for (const std::uint64_t w : words) {
    n.offsets[i] = static_cast<std::uint16_t>(8 * i);
    std::memcpy(n.bytes + 8 * i++, &w, 8);
  }
  return copy;
}

// The proof of two one-kernel graphs over one tensor at `first`, then `second`: null when refused.
struct Proof {
  GraphCopy* first;
  Relocation* relocation = nullptr;
  bool ambiguous = false;
  const char* why = "";
  Proof(std::initializer_list<std::uint64_t> a, std::initializer_list<std::uint64_t> b, std::uint64_t t1,
        std::uint64_t t2)
      : first(graph_of(a)) {
    GraphCopy* second = graph_of(b);
    relocation = Relocation::prove(*first, &t1, second, &t2, 1, &why, &ambiguous);
    if (relocation == nullptr) free_copy(second);
  }
  ~Proof() {
    free_copy(first);
    Relocation::destroy(relocation);
  }
};

int g_updates = 0;
CUresult CUDAAPI counted_update(CUgraphExec, CUgraphNode, const CUDA_KERNEL_NODE_PARAMS*) {
  ++g_updates;
  return CUDA_SUCCESS;
}

}  // namespace

TEST_CASE("relocation: a moved tensor's page index that both captures agree on is refused as ambiguous", "[relocation]") {
  const std::uint64_t t1 = kRegion + 0x5000, t2 = kRegion + 0x5400;  // one page
  {
    const Proof p({t1, t1 >> 12, 7}, {t2, t2 >> 12, 7}, t1, t2);  // in a whole word
    CHECK(p.relocation == nullptr);
    CHECK(p.ambiguous);
  }
  {
    const Proof p({t1, (t1 >> 20) | 0x3f80000000000000ull}, {t2, (t2 >> 20) | 0x3f80000000000000ull}, t1, t2);
    CHECK(p.relocation == nullptr);  // a 1 MiB index in a word's low half
    CHECK(p.ambiguous);
  }
  // The same arguments with a constant where the index was: proven (the test can fail).
  const Proof control({t1, 0x1234, 7}, {t2, 0x1234, 7}, t1, t2);
  REQUIRE(control.relocation != nullptr);
  CHECK(control.relocation->proven(0));
  // Constants near an address's larger indices are no index: 0xFFFF beside a stack-like address.
  const std::uint64_t s1 = 0x7fff98ca5000ull, s2 = 0x7fff98ca1000ull;
  const Proof stack({s1, 0xFFFF, 0x100000002ull}, {s2, 0xFFFF, 0x100000002ull}, s1, s2);
  CHECK(stack.relocation != nullptr);
}

TEST_CASE("relocation: apply() rewrites no word whose high half its tensor's move would change", "[relocation]") {
  const std::uint64_t t1 = kRegion + 0xFFFF0000ull, t2 = kRegion + 0xFFFF1000ull;
  // A pointer 0x20000 into the tensor: at t2 it lies 4 KiB under the region's end.
  const Proof p({t1 + 0xE000, 7}, {t2 + 0xE000, 7}, t1, t2);
  REQUIRE(p.relocation != nullptr);
  GraphDriver driver;
  driver.cuGraphExecKernelNodeSetParams_v2 = counted_update;
  g_updates = 0;
  const std::uint64_t inside = t2 - 0x1000, across = t2 + 0x2000;
  CHECK(p.relocation->apply(driver, nullptr, &inside) == Relocation::Applied::kApplied);
  CHECK(g_updates == 1);
  CHECK(p.relocation->apply(driver, nullptr, &across) == Relocation::Applied::kDeclined);
  CHECK(g_updates == 1);  // nothing set
  CHECK(p.relocation->apply(driver, nullptr, &t2) == Relocation::Applied::kApplied);
  CHECK(g_updates == 2);  // back at the graph's own tensor
}

TEST_CASE("relocation: alignments outside the proof's are checked, then widened to or refused", "[relocation]") {
  const std::uint64_t t1 = kRegion + 0x1000, t2 = kRegion + 0x2000;  // 4 KiB and 8 KiB aligned: both proven
  const Proof p({t1, 7}, {t2, 7}, t1, t2);
  REQUIRE(p.relocation != nullptr);
  Relocation& r = *p.relocation;
  std::uint32_t refused = 0;
  const std::uint64_t page = kRegion + 0x7000, quarter = kRegion + 0x7400, half = kRegion + 0x7800;
  const std::uint64_t eighth = kRegion + 0x7200, big = kRegion + 0x100000;
  CHECK(r.unproven_alignments(&page, &refused) == 0);
  CHECK(r.unproven_alignments(&big, &refused) == 1);  // 1 MiB aligned: a class of its own, checked first
  CHECK(refused == 0);
  CHECK(r.unproven_alignments(&quarter, &refused) == 1);
  CHECK(refused == 0);
  r.widen_alignments(&eighth);  // 512 bytes matched: 512 to 4 KiB proven
  CHECK(r.unproven_alignments(&quarter, &refused) == 0);
  CHECK(r.unproven_alignments(&half, &refused) == 0);
  const std::uint64_t small = kRegion + 0x7100;  // 256 bytes
  CHECK(r.unproven_alignments(&small, &refused) == 1);
  r.refuse_alignments(&small, 1);
  CHECK(r.unproven_alignments(&small, &refused) == 1);
  CHECK(refused == 1);
}

// What an H100's legacy batch norm showed: the proof made at 64 KiB-aligned inputs, a check at a 64
// MiB-aligned one differed. Its refusal is of that alignment alone: the ring's other inputs, 64 KiB
// to 1 MiB aligned, are checked once each and relocate. Watched failing with classes that stopped
// at 4 KiB (every input of 4 KiB or more refused with it).
TEST_CASE("relocation: a large alignment refused leaves the other large ones to their own checks", "[relocation]") {
  const std::uint64_t t1 = kRegion + 0x10000, t2 = kRegion + 0x30000;  // 64 KiB aligned, both
  const Proof p({t1, 7}, {t2, 7}, t1, t2);
  REQUIRE(p.relocation != nullptr);
  Relocation& r = *p.relocation;
  std::uint32_t refused = 0;
  const std::uint64_t huge = kRegion + 0x4000000, wide = kRegion + 0x20000, megabyte = kRegion + 0x100000;
  CHECK(r.unproven_alignments(&huge, &refused) == 1);
  r.refuse_alignments(&huge, 1);
  CHECK(r.unproven_alignments(&huge, &refused) == 1);
  CHECK(refused == 1);
  CHECK(r.unproven_alignments(&t2, &refused) == 0);  // proven, as before the refusal
  CHECK(r.unproven_alignments(&wide, &refused) == 1);  // 128 KiB: not refused, to be checked
  CHECK(refused == 0);
  r.widen_alignments(&megabyte);  // matched at 1 MiB: 64 KiB to 1 MiB proven
  CHECK(r.unproven_alignments(&wide, &refused) == 0);
  CHECK(r.unproven_alignments(&huge, &refused) == 1);
  CHECK(refused == 1);  // still refused
}
