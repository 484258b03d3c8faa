// cuBLASLt and cuBLAS under the shim: what it records of their descriptors and handles
// (blas_records.cpp), the matmul it replays and the heuristic it answers from a cache
// (cublaslt_replay.cpp), and the GEMMs it replays (cublas_replay.cpp): one function per entry of
// entry_points.h's three lists.
#pragma once

#include <cublasLt.h>
#include <cublas_api.h>

#include <cstdint>
#include <cstring>

#include "replay/descriptor_registry.h"
#include "replay/record_ids.h"
#include "shim/libraries/dispatch.h"

namespace cudnn_fastpath::shim {

CUDNN_FASTPATH_BLAS_RECORD_ENTRY_POINTS(CUDNN_FASTPATH_DECLARE_SHIM_FUNCTION)
CUDNN_FASTPATH_CUBLASLT_CALL_ENTRY_POINTS(CUDNN_FASTPATH_DECLARE_SHIM_FUNCTION)
CUDNN_FASTPATH_CUBLAS_GEMM_ENTRY_POINTS(CUDNN_FASTPATH_DECLARE_SHIM_FUNCTION)
CUDNN_FASTPATH_CUBLAS_TYPED_GEMM_ENTRY_POINTS(CUDNN_FASTPATH_DECLARE_SHIM_FUNCTION)

// What the registry holds. A cuBLASLt descriptor's record is the mask of the attributes the program
// set (bit n: attribute n) in its first word, then word 1 + n each attribute's bytes (none is
// longer than 8), of which a key takes the mask and the set ones (blas_keys.h); a cuBLAS handle's
// is a BlasHandleRecord.
enum BlasKind : std::uint32_t { kMatmulDesc = 1, kLayout, kPreference, kEmulation, kBlasHandle, kLtHandle };

// A cuBLAS handle's state, as its setters left it; `set` says which setters the program called
// (bit per field below; the workspace's bit is cleared by a set of the stream, which gives the
// handle cuBLAS's own pool again).
struct BlasHandleRecord {
  enum Field : std::uint64_t {
    kStream = 1,
    kWorkspace = 2,
    kPointerMode = 4,
    kMathMode = 8,
    kAtomics = 16,
    kSmCount = 32,
    kStrategy = 64,
    kSpecialValues = 128,
    kMantissaControl = 256,
    kMaxMantissaBits = 512,
    kMantissaOffset = 1024,
    kMantissaBitsPointer = 2048,
  };
  std::uint64_t set;
  std::uint64_t stream, workspace, workspace_size;
  std::int32_t pointer_mode, math_mode, atomics, sm_count, strategy, special_values, mantissa_control,
      max_mantissa_bits, mantissa_offset, unused;
  std::uint64_t mantissa_bits_pointer;
};

// The attribute ids each kind of cuBLASLt descriptor has (cublasLt.h), one bit each, and how many
// words its record takes.
inline constexpr std::uint64_t kMatmulDescAttributes = 0x7F'87FE'FDFFull;  // 0-8, 10-15, 17-26, 31-38
inline constexpr std::uint64_t kLayoutAttributes = 0x1FF;                    // 0-8
inline constexpr std::uint64_t kPreferenceAttributes = 0x13EB;                // 0, 1, 3, 5-9, 12
inline constexpr std::uint64_t kEmulationAttributes = 0x3F;                   // 0-5
constexpr std::uint32_t record_words(std::uint64_t attributes) { return 65 - __builtin_clzll(attributes); }

// The matmul descriptor's attributes that are device addresses: the bias, the epilogue's auxiliary
// buffer, the scaling factors' and the amax's. A key holds their values apart, after the record's
// name, which names the rest (blas_keys.h): a network's Linears, alike but for their bias, then
// share one name, and a descriptor made over its twin's words stays kept (below) whatever its
// pointers. (The emulation descriptor, a host object with a record of its own, is no such pointer.)
constexpr std::uint64_t attribute_bit(int id) { return std::uint64_t{1} << id; }
inline constexpr std::uint64_t kMatmulDescPointers =
    attribute_bit(CUBLASLT_MATMUL_DESC_BIAS_POINTER) | attribute_bit(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER) |
    attribute_bit(CUBLASLT_MATMUL_DESC_A_SCALE_POINTER) | attribute_bit(CUBLASLT_MATMUL_DESC_B_SCALE_POINTER) |
    attribute_bit(CUBLASLT_MATMUL_DESC_C_SCALE_POINTER) | attribute_bit(CUBLASLT_MATMUL_DESC_D_SCALE_POINTER) |
    attribute_bit(CUBLASLT_MATMUL_DESC_AMAX_D_POINTER) | attribute_bit(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_SCALE_POINTER) |
    attribute_bit(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_AMAX_POINTER) |
    attribute_bit(CUBLASLT_MATMUL_DESC_D_OUT_SCALE_POINTER);
static_assert((kMatmulDescPointers & ~kMatmulDescAttributes) == 0, "pointers are attributes of the kind");
inline constexpr int kMaxMatmulDescPointers = __builtin_popcountll(kMatmulDescPointers);
static_assert(((kMatmulDescAttributes | kLayoutAttributes | kPreferenceAttributes | kEmulationAttributes) >> 56) == 0,
              "a key holds a record's kind above its mask (blas_keys.h)");

// Past its attributes, a cuBLASLt descriptor's record keeps whether it is the record it was made
// over (the slot's last: record_names.h): that record's mask, kKeptBit while every attribute
// written but the pointers of kMatmulDescPointers was the value already there, and
// kPointersKeptBit while every pointer written was. The record has its last one's name when its
// mask is that mask too and kKeptBit is set (blas_keys.h's kept_record), and is that record whole
// when kPointersKeptBit is set as well (kept_whole: a thread's last key's words hold for it).
inline constexpr std::uint32_t kKeptWord = record_words(kMatmulDescAttributes);
inline constexpr std::uint64_t kKeptBit = std::uint64_t{1} << 63;
inline constexpr std::uint64_t kPointersKeptBit = std::uint64_t{1} << 62;

// 2048 objects (PyTorch makes and destroys its descriptors around each call), 41 words each: a
// matmul descriptor's mask, attributes 0 to 38 and kKeptWord.
using BlasRegistry = replay::DescriptorRegistry<2048, kKeptWord + 1>;
extern BlasRegistry g_blas_objects __attribute__((visibility("hidden")));
// The names of their records' contents (record_names.h): 512 contents.
using BlasNames = replay::RecordIds<64, 8, record_words(kMatmulDescAttributes)>;
extern BlasNames g_blas_names __attribute__((visibility("hidden")));

// A handle went away (cublasDestroy_v2, cublasLtDestroy: PyTorch's cuBLASLt handle is a cuBLAS
// one, cast): its graphs and cached answers are forgotten.
void forget_blas_handle(const void* handle) noexcept;
// The feature was switched off: every cached answer is forgotten.
void forget_cublas_answers() noexcept;
}  // namespace cudnn_fastpath::shim
