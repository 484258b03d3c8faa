// A stub library's call as kernels of a style (see stub_styled_kernels.h and stub_kernel_style.h).
#include "tests/stub/stub_styled_kernels.h"

#include <cstring>
#include <memory>
#include <optional>
#include <utility>

#include "tests/stub/stub_device_memory.h"
#include "tests/stub/stub_tensor_map.h"

// The driver stub, when the process has one (weak references: the libraries do not need it).
extern "C" __attribute__((weak)) int stubcuda_capture_kernel(CUstream, CUfunction, const void*, std::size_t, int);
extern "C" __attribute__((weak)) CUresult CUDAAPI cuMemsetD8Async(CUdeviceptr, unsigned char, size_t, CUstream);

namespace stubkernels {

namespace {

// A kernel run at the call (not by a graph launch) on this thread, and whether in reference mode.
struct DirectRun {
  bool reference;
};
thread_local const DirectRun* t_direct = nullptr;

constexpr std::uint64_t kFault = 0xFA017FA017FA017Full;  // hashed where a kernel could not read
constexpr std::uint32_t kSplitTiles = 16, kSplitStages = 1;
constexpr std::uint64_t kSplitTile = 0x7117E;

const char* const kSuffixes[Kernels::kVariants] = {"_plain",      "_aligned256", "_indirect",   "_split",
                                                   "_accumulate", "_produce",    "_consume",    "_tma",
                                                   "_low_half",   "_high_half",  "_page_index", "_aligned4096"};
constexpr std::uint32_t kOneFloat = 0x3f800000;  // 1.0f, beside the low half

// A parameter buffer, 128-byte aligned and zeroed, as the driver's would be (over-allocated and
// aligned inside: see stub_cuda_graph.h's ArgumentBytes for why not aligned_alloc).
class Arguments {
 public:
  explicit Arguments(std::size_t size) : storage_(new unsigned char[size + 128]()) {
    const auto base = reinterpret_cast<std::uintptr_t>(storage_.get());
    aligned_ = storage_.get() + ((base + 127) / 128 * 128 - base);
  }
  unsigned char* data() const { return aligned_; }

 private:
  std::unique_ptr<unsigned char[]> storage_;
  unsigned char* aligned_;
};

std::uintptr_t word_at(const void* bytes, std::size_t offset) {
  std::uintptr_t value;
  std::memcpy(&value, static_cast<const unsigned char*>(bytes) + offset, sizeof value);
  return value;
}

void put_word(void* bytes, std::size_t offset, std::uint64_t value) {
  std::memcpy(static_cast<unsigned char*>(bytes) + offset, &value, sizeof value);
}

void put_half(void* bytes, std::size_t offset, std::uint32_t value) {
  std::memcpy(static_cast<unsigned char*>(bytes) + offset, &value, sizeof value);
}

std::uint32_t half_at(const void* bytes, std::size_t offset) {
  std::uint32_t value;
  std::memcpy(&value, static_cast<const unsigned char*>(bytes) + offset, sizeof value);
  return value;
}

// The scratch memory's indirect table: a tag (the family's), a count, then (offset, pointer) pairs.
struct TableHeader {
  std::uint64_t tag;
  std::uint64_t count;
};
static_assert(sizeof(TableHeader) + kMaxTensors * 16 <= kScratchBytes, "the table does not fit the scratch memory");

}  // namespace

std::uint64_t add_read(std::uint64_t h, const void* pointer) {
  const stubmem::Read read = stubmem::read_first_bytes(pointer);
  return fnv(&read, sizeof read, h);
}

void write_digest(void* output, std::uint64_t digest) {
  if (output != nullptr) stubmem::write(output, &digest, sizeof digest);
}

Kernels::Kernels(Family family) : family_(std::move(family)) {
  const std::uint32_t b = family_.blob_size;
  map_offset_ = (b + 63) / 64 * 64;
  for (int v = 0; v < kVariants; ++v) {
    VariantKernel& k = kernels_[v];
    k.variant = static_cast<Variant>(v);
    k.owner = this;
    k.name = family_.name + kSuffixes[v];
    k.params = family_.blob_params;
    std::uint32_t size = b;
    auto add = [&](std::uint32_t offset, std::uint32_t bytes) {
      k.params.push_back({offset, bytes});
      if (offset + bytes > size) size = offset + bytes;
    };
    switch (k.variant) {
      case kPlain: case kAligned: case kAccumulate: case kPageAligned:
        add(b, 8);
        add(b + 8, 8);
        break;
      case kLowHalf: case kHighHalf:
        add(b, 8);
        add(b + 8, 8);
        add(b + 16, 4);
        add(b + 20, 4);
        break;
      case kPageIndex:
        add(b, 8);
        add(b + 8, 8);
        add(b + 16, 8);
        break;
      case kProducer: case kConsumer:
        add(b, 8);
        add(b + 8, 8);
        add(b + 16, 8);
        break;
      case kIndirect:
        add(b, 8);
        break;
      case kSplit:
        add(b, 4);
        add(b + 4, 4);
        add(b + 8, 8);
        add(b + 16, 4);
        add(b + 20, 4);
        break;
      case kTma:
        add(map_offset_, stubtma::kBytes);
        break;
      case kVariants:
        break;
    }
    k.kernel = StubKernel{STUB_KERNEL_MAGIC, k.name.c_str(), &Kernels::run_kernel, k.params.data(),
                          static_cast<std::uint32_t>(k.params.size()), size, &k};
  }
}

void Kernels::run_kernel(const StubKernel* self, const unsigned char* args) {
  const auto* k = static_cast<const VariantKernel*>(self->context);
  k->owner->run(k->variant, args);
}

// The kernel's work: see stub_styled_kernels.h.
void Kernels::run(Variant variant, const unsigned char* args) const {
  const std::uint32_t b = family_.blob_size;
  std::vector<std::uint64_t> storage(b / 8);
  unsigned char* blob = reinterpret_cast<unsigned char*>(storage.data());
  std::memcpy(blob, args, b);
  const VariantKernel& self = kernels_[variant];
  std::uint64_t h = fnv(self.name.data(), self.name.size());
  h = fnv(args, self.kernel.args_size, h);
  switch (variant) {
    case kIndirect: {  // the tensor pointers, from the table the host wrote at the call
      const void* scratch = reinterpret_cast<const void*>(word_at(args, b));
      TableHeader header{};
      if (!stubmem::read(scratch, &header, sizeof header) || header.tag != fnv(family_.name.data(), family_.name.size()) ||
          header.count > kMaxTensors) {
        h = fnv(&kFault, sizeof kFault, h);
        break;
      }
      std::uint64_t entries[2 * kMaxTensors] = {};
      if (!stubmem::read(static_cast<const unsigned char*>(scratch) + sizeof header, entries, 16 * header.count)) {
        h = fnv(&kFault, sizeof kFault, h);
        break;
      }
      for (std::uint64_t i = 0; i < header.count; ++i)
        if (entries[2 * i] % 8 == 0 && entries[2 * i] + 8 <= b) put_word(blob, entries[2 * i], entries[2 * i + 1]);
      break;
    }
    case kSplit:
      put_word(blob, family_.split_field,
               static_cast<std::uint64_t>(half_at(args, b + 4)) | static_cast<std::uint64_t>(half_at(args, b + 16)) << 32);
      break;
    case kTma:
      put_word(blob, family_.tma_field, stubtma::address(args + map_offset_));
      break;
    default:
      break;
  }
  h = fnv(blob, b, h);
  if (variant == kConsumer) {  // the producer's intermediate, not the inputs
    h = add_read(h, reinterpret_cast<const void*>(word_at(args, b + 16)));
  } else {
    h = family_.read_inputs(blob, h);
    if (variant == kAccumulate) h = add_read(h, reinterpret_cast<const void*>(word_at(blob, family_.memset_field)));
  }
  const std::uint64_t digest = mix(h);
  if (variant == kProducer) {
    write_digest(reinterpret_cast<void*>(word_at(args, b + 16)), digest);
    return;
  }
  family_.write_outputs(blob, digest);
  if (t_direct == nullptr)
    family_.ran(blob, digest, true);
  else if (!t_direct->reference)
    family_.ran(blob, digest, false);
}

bool Kernels::launch(StubKernelStyle style, const Call& call) const {
  const std::uint32_t b = family_.blob_size;
  const void* blob = call.blob;
  Variant first = kPlain, second = kVariants;
  bool zero_output = false;
  switch (style) {
    case STUB_KERNEL_STYLE_BY_ALIGNMENT: {
      bool aligned = true;
      for (int i = 0; i < call.tensor_count; ++i) aligned = aligned && word_at(blob, call.tensor_fields[i]) % 256 == 0;
      first = aligned ? kAligned : kPlain;
      break;
    }
    case STUB_KERNEL_STYLE_INDIRECT:
      if (call.scratch != nullptr) first = kIndirect;
      break;
    case STUB_KERNEL_STYLE_SPLIT:
      first = kSplit;
      break;
    case STUB_KERNEL_STYLE_MEMSET:
      if (word_at(blob, family_.memset_field) != 0) {
        first = kAccumulate;
        zero_output = true;
      }
      break;
    case STUB_KERNEL_STYLE_TWO_KERNELS:
      if (call.scratch != nullptr) {
        first = kProducer;
        second = kConsumer;
      }
      break;
    case STUB_KERNEL_STYLE_TMA: {
      const std::uintptr_t pointer = word_at(blob, family_.tma_field);
      if (pointer != 0 && pointer % 16 == 0) first = kTma;  // TMA wants 16-byte aligned tensors
      break;
    }
    case STUB_KERNEL_STYLE_LOW_HALF:
      first = kLowHalf;
      break;
    case STUB_KERNEL_STYLE_HIGH_HALF:
      first = kHighHalf;
      break;
    case STUB_KERNEL_STYLE_PAGE_INDEX:
      first = kPageIndex;
      break;
    case STUB_KERNEL_STYLE_BY_PAGE_ALIGNMENT:
    case STUB_KERNEL_STYLE_BY_LARGE_ALIGNMENT: {
      const std::uint64_t alignment = style == STUB_KERNEL_STYLE_BY_PAGE_ALIGNMENT ? 4096 : std::uint64_t{1} << 20;
      bool aligned = true;
      for (int i = 0; i < call.tensor_count; ++i)
        aligned = aligned && word_at(blob, call.tensor_fields[i]) % alignment == 0;
      first = aligned ? kPageAligned : kPlain;
      break;
    }
    default:
      break;
  }

  // Each kernel's argument bytes.
  auto arguments = [&](Variant variant) {
    const VariantKernel& k = kernels_[variant];
    Arguments a(k.kernel.args_size);
    unsigned char* p = a.data();
    std::memcpy(p, blob, b);
    const std::uint64_t derived_from = word_at(blob, family_.split_field);
    switch (variant) {
      case kPlain: case kAligned: case kAccumulate: case kProducer: case kConsumer: case kPageAligned:
        put_word(p, b, call.interior[0]);
        put_word(p, b + 8, call.interior[1]);
        if (variant == kProducer || variant == kConsumer) put_word(p, b + 16, reinterpret_cast<std::uintptr_t>(call.scratch));
        break;
      case kLowHalf: case kHighHalf: case kPageIndex:
        put_word(p, b, call.interior[0]);
        put_word(p, b + 8, call.interior[1]);
        if (variant == kPageIndex) {
          put_word(p, b + 16, derived_from >> 12);
        } else {
          put_half(p, b + 16, static_cast<std::uint32_t>(variant == kLowHalf ? derived_from : derived_from >> 32));
          put_half(p, b + 20, variant == kLowHalf ? kOneFloat : 1);
        }
        break;
      case kIndirect:
        for (int i = 0; i < call.tensor_count; ++i) put_word(p, call.tensor_fields[i], 0);
        put_word(p, b, reinterpret_cast<std::uintptr_t>(call.scratch));
        break;
      case kSplit: {
        const std::uint64_t pointer = word_at(blob, family_.split_field);
        put_word(p, family_.split_field, 0);
        put_half(p, b, kSplitTiles);
        put_half(p, b + 4, static_cast<std::uint32_t>(pointer));
        put_word(p, b + 8, kSplitTile);
        put_half(p, b + 16, static_cast<std::uint32_t>(pointer >> 32));
        put_half(p, b + 20, kSplitStages);
        break;
      }
      case kTma:
        put_word(p, family_.tma_field, 0);
        stubtma::encode(p + map_offset_, word_at(blob, family_.tma_field), 64, 32, 256);
        break;
      case kVariants:
        break;
    }
    return a;
  };
  const Arguments first_args = arguments(first);
  std::optional<Arguments> second_args;
  if (second != kVariants) second_args.emplace(arguments(second));

  // A reference call leaves the scratch memory as it found it (a table, an intermediate).
  unsigned char saved[kScratchBytes];
  const bool restore = call.reference && (first == kIndirect || first == kProducer) &&
                       stubmem::read(call.scratch, saved, sizeof saved);
  if (first == kIndirect) {  // host writes, at the call: no capture sees them
    std::uint64_t table[2 + 2 * kMaxTensors] = {fnv(family_.name.data(), family_.name.size()),
                                                static_cast<std::uint64_t>(call.tensor_count)};
    for (int i = 0; i < call.tensor_count; ++i) {
      table[2 + 2 * i] = call.tensor_fields[i];
      table[3 + 2 * i] = word_at(blob, call.tensor_fields[i]);
    }
    stubmem::write(call.scratch, table, sizeof table);
  }

  auto function = [&](Variant variant) {
    return reinterpret_cast<CUfunction>(const_cast<StubKernel*>(&kernels_[variant].kernel));
  };
  auto extra = [&](Variant variant) { return (variant == kProducer) != family_.use_extra ? 1 : 0; };
  void* const output = reinterpret_cast<void*>(word_at(blob, family_.memset_field));
  const unsigned char zeros[4] = {};
  bool recorded = false, zeroed = false;
  if (!call.reference && stubcuda_capture_kernel != nullptr) {
    // The memset first: recorded into the capture, or done now, as the kernel will be.
    if (zero_output && cuMemsetD8Async != nullptr)
      zeroed = cuMemsetD8Async(reinterpret_cast<CUdeviceptr>(output), 0, sizeof zeros, call.stream) == CUDA_SUCCESS;
    if (stubcuda_capture_kernel(call.stream, function(first), first_args.data(), kernels_[first].kernel.args_size,
                                extra(first)) == 1) {
      if (second != kVariants)
        stubcuda_capture_kernel(call.stream, function(second), second_args->data(), kernels_[second].kernel.args_size,
                                extra(second));
      recorded = true;
    }
  }
  if (!recorded) {
    if (zero_output && !zeroed) stubmem::write(output, zeros, sizeof zeros);
    const DirectRun direct{call.reference};
    const DirectRun* outer = t_direct;
    t_direct = &direct;
    run(first, first_args.data());
    if (second != kVariants) run(second, second_args->data());
    t_direct = outer;
  }
  if (restore) stubmem::write(call.scratch, saved, sizeof saved);
  return recorded;
}

}  // namespace stubkernels
