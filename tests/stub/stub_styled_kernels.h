// A stub library's call as kernels (compiled into each stub library, hidden: each library has its
// own kernels, its own CUfunctions): the library reads everything that decides the call's work
// into a blob, as before; the kernels of a style carry that blob as (part of) their arguments and
// run on their argument bytes alone (stub_kernel.h). Launched on a capturing stream they become
// kernel (and memset) nodes of the stub driver (stubcuda_capture_kernel); otherwise they run at
// once, the same function on the same bytes.
//
// What a kernel computes: a digest (FNV-1a 64, then splitmix64) of its name, its whole argument
// bytes, the blob as the kernel sees it (the pointers it gets some other way put back in their
// fields) and what it reads at run time through the pointers in it (the family's inputs; the
// first 8 bytes of each, or a fault: stub_device_memory.h), written into the family's outputs.
// So a replay with any stale or wrongly moved argument writes another digest than the reference
// call, and a correct rewrite of the pointers gives exactly the reference call's digest.
//
// The argument layouts, B being the blob's size (a multiple of 8) and every pointer 8 bytes:
//   plain, by_alignment (both kernels), memset's kernel: [blob][interior 0][interior 1]
//   indirect: [blob, its tensor pointers zeroed][scratch]; at the call the host writes into the
//     scratch memory {tag, count, then (offset in the blob, pointer) per tensor}
//   split: [blob, the split pointer zeroed][u32 16][u32 low half][u64 tile][u32 high half][u32 1]
//   two_kernels (both): [blob][interior 0][interior 1][scratch]
//   tma: [blob, the tma pointer zeroed][zeros up to a multiple of 64][tensor map, 128 bytes]
//   low_half: [blob][interior 0][interior 1][u32 the split pointer's low half][u32 1.0f]
//   high_half: [blob][interior 0][interior 1][u32 the split pointer's high half][u32 1]
//   page_index: [blob][interior 0][interior 1][u64 the split pointer >> 12]
//   by_page_alignment, by_large_alignment (both kernels of each): plain's
// The blob is one parameter per field as the family lists them, or one parameter for all of it.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "tests/stub/stub_kernel.h"
#include "tests/stub/stub_kernel_style.h"

#pragma GCC visibility push(hidden)

namespace stubkernels {

// FNV-1a over bytes, continued from `h`.
inline std::uint64_t fnv(const void* data, std::size_t size, std::uint64_t h = 14695981039346656037ull) {
  const auto* bytes = static_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < size; ++i) h = (h ^ bytes[i]) * 1099511628211ull;
  return h;
}

// A finalizer (splitmix64): a change anywhere in the input spreads over every output bit.
inline std::uint64_t mix(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// Adds what a kernel reads at `pointer` to a hash: whether there was a pointer (0: NULL, 1: read,
// 2: a fault) and the first 8 bytes there.
std::uint64_t add_read(std::uint64_t h, const void* pointer);
// Writes a digest into an output's first 8 bytes (lost, not a crash, where nothing is mapped).
void write_digest(void* output, std::uint64_t digest);

// A field of a blob struct as a kernel parameter.
#define STUBKERNELS_FIELD(Type, field) \
  StubKernelParam { static_cast<std::uint32_t>(offsetof(Type, field)), static_cast<std::uint32_t>(sizeof(Type::field)) }

constexpr int kInteriorPointers = 2;
constexpr int kMaxTensors = 14;
constexpr std::size_t kScratchBytes = 256;  // of the scratch memory a call must give its kernels

// How a library's call looks to its kernels.
struct Family {
  std::string name;                        // the kernels' names start with it
  std::uint32_t blob_size;                 // a multiple of 8
  std::vector<StubKernelParam> blob_params;  // the blob's fields as parameters, in order
  std::uint32_t split_field;               // the blob's pointer that `split` passes in halves
  std::uint32_t tma_field;                 // the one `tma` passes in a tensor map
  std::uint32_t memset_field;              // the output `memset` zeroes first and accumulates into
  bool use_extra;                          // how its nodes report their arguments (two_kernels:
                                           // the first kernel the other way)
  std::uint64_t (*read_inputs)(const void* blob, std::uint64_t h);  // add_read of each input
  void (*write_outputs)(const void* blob, std::uint64_t digest);    // write_digest to each output
  // A run outside reference mode: `replayed` by a graph launch, or at the call.
  void (*ran)(const void* blob, std::uint64_t digest, bool replayed);
};

// One call, as its library made it.
struct Call {
  const void* blob;
  std::uintptr_t interior[kInteriorPointers];  // pointers inside the call's tensors
  std::uint32_t tensor_fields[kMaxTensors];    // offsets in the blob of its (non-NULL) tensor pointers
  int tensor_count;
  void* scratch;                               // kScratchBytes of memory the library may use
  CUstream stream;
  // Run at once even on a capturing stream, ran() not called, the scratch memory left as found.
  bool reference;
};

// The kernels of every style for one family; made once per family, never destroyed (a graph may
// hold its kernels until the process ends).
class Kernels {
 public:
  explicit Kernels(Family family);
  Kernels(const Kernels&) = delete;
  Kernels& operator=(const Kernels&) = delete;

  // Runs `call` in `style` (plain where the style does not apply to it), or records it into its
  // stream's capture: true when recorded.
  bool launch(StubKernelStyle style, const Call& call) const;

  enum Variant {
    kPlain, kAligned, kIndirect, kSplit, kAccumulate, kProducer, kConsumer, kTma,
    kLowHalf, kHighHalf, kPageIndex, kPageAligned, kVariants
  };
  struct VariantKernel {
    StubKernel kernel;  // its address is the CUfunction
    Variant variant;
    const Kernels* owner;
    std::string name;
    std::vector<StubKernelParam> params;
  };

 private:
  void run(Variant variant, const unsigned char* args) const;
  static void run_kernel(const StubKernel* self, const unsigned char* args);

  Family family_;
  VariantKernel kernels_[kVariants];
  std::uint32_t map_offset_;  // tma: where the tensor map is
};

}  // namespace stubkernels

#pragma GCC visibility pop
