// What the shim records of cuBLASLt's descriptors (matmul descriptors, matrix layouts, matmul
// preferences, emulation descriptors) and of cuBLAS's handles (their state, as their setters left
// it), through the actions of recorded_calls.h, for the keys of the replayed matmuls and GEMMs and
// of the cached heuristic answers. A descriptor is usable as created (its create's arguments are its
// first attributes); an attribute the shim does not know (or longer than 8 bytes) leaves the record
// unknown, and the calls that use it reach cuBLASLt unchanged. Descriptors made in the caller's own
// memory (..._Init_internal) count as created there.
#include <cublasLt.h>
#include <cublas_api.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "shim/families/blas.h"
#include "shim/families/recorded_calls.h"

namespace cudnn_fastpath::shim {

BlasRegistry g_blas_objects;
BlasNames g_blas_names;

namespace {

using Words = replay::SlotWords;

// ---- cuBLASLt descriptors: a mask and the attributes' bytes ------------------------------------

// A descriptor's record is usable at this length (a key reads it by its mask: blas_keys.h).
constexpr std::uint32_t kUsable = 1;

// Inline, and the copy's size spelt out for the common ones, so that a set of a 4- or 8-byte
// attribute is a load and a few stores, not a call of memcpy.
// A value other than the one there makes the record another than it was made over: kKeptBit
// cleared, or kPointersKeptBit for one of `pointers`, which no name holds (blas.h).
[[gnu::always_inline]] inline bool put(Words w, std::uint64_t attributes, std::uint64_t pointers, int id,
                                       const void* bytes, std::size_t size) {
  if (id < 0 || id > 63 || !((attributes >> id) & 1) || bytes == nullptr || size == 0 || size > 8) return false;
  std::uint64_t value = 0;
  if (size == 8) {
    std::memcpy(&value, bytes, 8);
  } else if (size == 4) {
    std::memcpy(&value, bytes, 4);
  } else {  // byte by byte, not a call of memcpy (the fast path makes none: record_attribute)
    unsigned char b[8] = {};
#pragma GCC unroll 8
    for (std::size_t i = 0; i < 8; ++i)
      if (i < size) b[i] = static_cast<const unsigned char*>(bytes)[i];
    std::memcpy(&value, b, 8);
  }
  if (w[1 + id].load(std::memory_order_relaxed) != value) {
    const std::uint64_t lost = (pointers >> id) & 1 ? kPointersKeptBit : kKeptBit;
    w[kKeptWord].store(w[kKeptWord].load(std::memory_order_relaxed) & ~lost, std::memory_order_relaxed);
  }
  w[1 + id].store(value, std::memory_order_relaxed);
  w[0].store(w[0].load(std::memory_order_relaxed) | std::uint64_t{1} << id, std::memory_order_relaxed);
  return true;
}

// A set of an attribute the descriptor kind has keeps the record as usable as it was; one it does
// not have (or an odd size) makes it unknown until it is made again.
// Inline, with the recorders of the attributes' sets below: a set's fast path (recorded_calls.h)
// then makes no call but the library's.
template <std::uint64_t kAttributes>
[[gnu::always_inline]] inline std::uint32_t record_attribute(Words w, std::uint32_t length, int id, const void* buf,
                                                             std::size_t size) {
  constexpr std::uint64_t kPointers = kAttributes == kMatmulDescAttributes ? kMatmulDescPointers : 0;
  return put(w, kAttributes, kPointers, id, buf, size) ? length : 0;
}

// A fresh record: no attribute set but those of the create, made over the slot's last record (blas.h).
std::uint32_t no_attributes(Words w) {
  w[kKeptWord].store(w[0].load(std::memory_order_relaxed) | kKeptBit | kPointersKeptBit, std::memory_order_relaxed);
  w[0].store(0, std::memory_order_relaxed);
  return kUsable;
}

// A fresh record holding the create's attributes kIds (of a kind's kAttributes), `values` in that
// order, each as put() would store it: made over the slot's last record, and kept while every value
// is the one there (no_attributes() and a put() each). The ids are known here, so nothing is checked
// at run time and the mask is written once; inline, with the creates' defaults below, into the
// creates.
template <std::uint64_t kAttributes, int... kIds, typename... T>
[[gnu::always_inline]] inline std::uint32_t made_with(Words w, T... values) {
  static_assert(sizeof...(kIds) == sizeof...(T), "a value per attribute");
  static_assert((((kAttributes >> kIds) & 1) && ...), "attributes of the kind");
  static_assert(((sizeof(T) == 4 || sizeof(T) == 8) && ...), "put() sizes");
  const std::uint64_t last = w[0].load(std::memory_order_relaxed);
  std::uint64_t differ = 0;
  auto put_one = [&](int id, auto value) {
    std::uint64_t word = 0;
    std::memcpy(&word, &value, sizeof value);
    differ |= w[1 + id].load(std::memory_order_relaxed) ^ word;
    w[1 + id].store(word, std::memory_order_relaxed);
  };
  (put_one(kIds, values), ...);
  w[kKeptWord].store(differ == 0 ? last | kKeptBit | kPointersKeptBit : last, std::memory_order_relaxed);
  w[0].store(((std::uint64_t{1} << kIds) | ...), std::memory_order_relaxed);
  return kUsable;
}

[[gnu::always_inline]] inline std::uint32_t matmul_desc_defaults(Words w, cublasComputeType_t compute,
                                                                 cudaDataType_t scale) {
  return made_with<kMatmulDescAttributes, CUBLASLT_MATMUL_DESC_COMPUTE_TYPE, CUBLASLT_MATMUL_DESC_SCALE_TYPE>(
      w, static_cast<std::int32_t>(compute), static_cast<std::int32_t>(scale));
}
std::uint32_t record_matmul_desc_init(Words w, std::uint32_t, std::size_t, cublasComputeType_t compute,
                                      cudaDataType_t scale) {
  return matmul_desc_defaults(w, compute, scale);
}
[[gnu::always_inline]] inline std::uint32_t record_matmul_desc_attribute(Words w, std::uint32_t length,
                                                                         cublasLtMatmulDescAttributes_t id,
                                                                         const void* buf, std::size_t size) {
  return record_attribute<kMatmulDescAttributes>(w, length, id, buf, size);
}

[[gnu::always_inline]] inline std::uint32_t layout_defaults(Words w, cudaDataType type, std::uint64_t rows,
                                                            std::uint64_t cols, std::int64_t ld) {
  return made_with<kLayoutAttributes, CUBLASLT_MATRIX_LAYOUT_TYPE, CUBLASLT_MATRIX_LAYOUT_ROWS,
                   CUBLASLT_MATRIX_LAYOUT_COLS, CUBLASLT_MATRIX_LAYOUT_LD>(w, static_cast<std::uint32_t>(type), rows,
                                                                           cols, ld);
}
std::uint32_t record_layout_init(Words w, std::uint32_t, std::size_t, cudaDataType type, std::uint64_t rows,
                                 std::uint64_t cols, std::int64_t ld) {
  return layout_defaults(w, type, rows, cols, ld);
}
[[gnu::always_inline]] inline std::uint32_t record_layout_attribute(Words w, std::uint32_t length,
                                                                    cublasLtMatrixLayoutAttribute_t id, const void* buf,
                                                                    std::size_t size) {
  return record_attribute<kLayoutAttributes>(w, length, id, buf, size);
}

std::uint32_t preference_defaults(Words w) { return no_attributes(w); }
std::uint32_t record_preference_init(Words w, std::uint32_t, std::size_t) { return no_attributes(w); }
[[gnu::always_inline]] inline std::uint32_t record_preference_attribute(Words w, std::uint32_t length,
                                                                        cublasLtMatmulPreferenceAttributes_t id,
                                                                        const void* buf, std::size_t size) {
  return record_attribute<kPreferenceAttributes>(w, length, id, buf, size);
}

std::uint32_t emulation_defaults(Words w) { return no_attributes(w); }
std::uint32_t record_emulation_init(Words w, std::uint32_t, std::size_t) { return no_attributes(w); }
[[gnu::always_inline]] inline std::uint32_t record_emulation_attribute(Words w, std::uint32_t length,
                                                                       cublasLtEmulationDescAttributes_t id,
                                                                       const void* buf, std::size_t size) {
  return record_attribute<kEmulationAttributes>(w, length, id, buf, size);
}

// ---- cuBLAS handles ------------------------------------------------------------------------------

// A setter edits the words it changes, the set mask's and its field's, in place: not a load and a
// store of the record's ten, so that the common setters (stream, workspace, math and pointer modes,
// whose fields are in the record's first five words) write only the slot's first line, which its
// key's check has just read. A field is 4 or 8 bytes at its offset in BlasHandleRecord.
template <typename T>
void put_field(Words w, std::size_t offset, T value) {
  static_assert(sizeof(T) == 4 || sizeof(T) == 8, "a field of BlasHandleRecord");
  std::uint64_t word = w[offset / 8].load(std::memory_order_relaxed);
  std::memcpy(reinterpret_cast<unsigned char*>(&word) + offset % 8, &value, sizeof value);
  w[offset / 8].store(word, std::memory_order_relaxed);
}
void mark_set(Words w, std::uint64_t set, std::uint64_t cleared = 0) {
  static_assert(offsetof(BlasHandleRecord, set) == 0, "the mask is the record's first word");
  w[0].store((w[0].load(std::memory_order_relaxed) | set) & ~cleared, std::memory_order_relaxed);
}

std::uint32_t blas_handle_defaults(Words w) {
  // Every field as cuBLAS makes it; `set` says none was set.
  return replay::store_record(w, BlasHandleRecord{});
}
std::uint32_t record_stream(Words w, std::uint32_t length, cudaStream_t stream) {
  // cublasSetStream gives the handle cuBLAS's default workspace again, whatever the stream.
  put_field(w, offsetof(BlasHandleRecord, stream), reinterpret_cast<std::uint64_t>(stream));
  put_field(w, offsetof(BlasHandleRecord, workspace), std::uint64_t{0});
  put_field(w, offsetof(BlasHandleRecord, workspace_size), std::uint64_t{0});
  mark_set(w, BlasHandleRecord::kStream, BlasHandleRecord::kWorkspace);
  return length;
}
std::uint32_t record_workspace(Words w, std::uint32_t length, void* workspace, std::size_t size) {
  put_field(w, offsetof(BlasHandleRecord, workspace), reinterpret_cast<std::uint64_t>(workspace));
  put_field(w, offsetof(BlasHandleRecord, workspace_size), std::uint64_t{size});
  mark_set(w, BlasHandleRecord::kWorkspace);
  return length;
}
// The field at kOffset, of type Field, set to `value`.
template <std::size_t kOffset, typename Field, BlasHandleRecord::Field kBit, typename T>
std::uint32_t record_field(Words w, std::uint32_t length, T value) {
  put_field(w, kOffset, static_cast<Field>(value));
  mark_set(w, kBit);
  return length;
}
#define CUDNN_FASTPATH_HANDLE_FIELD(field) offsetof(BlasHandleRecord, field), decltype(BlasHandleRecord::field)
std::uint32_t record_pointer_mode(Words w, std::uint32_t length, cublasPointerMode_t mode) {
  return record_field<CUDNN_FASTPATH_HANDLE_FIELD(pointer_mode), BlasHandleRecord::kPointerMode>(w, length, mode);
}
std::uint32_t record_math_mode(Words w, std::uint32_t length, cublasMath_t mode) {
  return record_field<CUDNN_FASTPATH_HANDLE_FIELD(math_mode), BlasHandleRecord::kMathMode>(w, length, mode);
}
std::uint32_t record_atomics_mode(Words w, std::uint32_t length, cublasAtomicsMode_t mode) {
  return record_field<CUDNN_FASTPATH_HANDLE_FIELD(atomics), BlasHandleRecord::kAtomics>(w, length, mode);
}
std::uint32_t record_sm_count_target(Words w, std::uint32_t length, int count) {
  return record_field<CUDNN_FASTPATH_HANDLE_FIELD(sm_count), BlasHandleRecord::kSmCount>(w, length, count);
}
std::uint32_t record_emulation_strategy(Words w, std::uint32_t length, cublasEmulationStrategy_t strategy) {
  return record_field<CUDNN_FASTPATH_HANDLE_FIELD(strategy), BlasHandleRecord::kStrategy>(w, length, strategy);
}
std::uint32_t record_special_values_support(Words w, std::uint32_t length, cudaEmulationSpecialValuesSupport mask) {
  return record_field<CUDNN_FASTPATH_HANDLE_FIELD(special_values), BlasHandleRecord::kSpecialValues>(w, length, mask);
}
std::uint32_t record_mantissa_control(Words w, std::uint32_t length, cudaEmulationMantissaControl control) {
  return record_field<CUDNN_FASTPATH_HANDLE_FIELD(mantissa_control), BlasHandleRecord::kMantissaControl>(w, length, control);
}
std::uint32_t record_max_mantissa_bit_count(Words w, std::uint32_t length, int bits) {
  return record_field<CUDNN_FASTPATH_HANDLE_FIELD(max_mantissa_bits), BlasHandleRecord::kMaxMantissaBits>(w, length, bits);
}
std::uint32_t record_mantissa_bit_offset(Words w, std::uint32_t length, int offset) {
  return record_field<CUDNN_FASTPATH_HANDLE_FIELD(mantissa_offset), BlasHandleRecord::kMantissaOffset>(w, length, offset);
}
std::uint32_t record_mantissa_bit_count_pointer(Words w, std::uint32_t length, int* pointer) {
  return record_field<CUDNN_FASTPATH_HANDLE_FIELD(mantissa_bits_pointer), BlasHandleRecord::kMantissaBitsPointer>(
      w, length, reinterpret_cast<std::uintptr_t>(pointer));
}
#undef CUDNN_FASTPATH_HANDLE_FIELD
static_assert(replay::words_of<BlasHandleRecord>() <= BlasRegistry::kWords, "a handle's record fits the registry");

constexpr std::nullptr_t no_hook = nullptr;

// The caches whose keys read cuBLASLt's descriptors (a GEMM's reads only its handle's record) are
// those of Records::kBlas.

// cuBLAS's and cuBLASLt's handles are recorded from their creation, the feature on or off.
constexpr std::uint64_t kHandles = std::uint64_t{1} << kBlasHandle | std::uint64_t{1} << kLtHandle;

template <Library kLibrary>
using Calls =
    RecordedCalls<BlasRegistry, g_blas_objects, kLibrary, cublasStatus_t, CUBLAS_STATUS_NOT_INITIALIZED, Records::kBlas,
                  kHandles>;

}  // namespace

// The entries of each library, with its own actions (CUDNN_FASTPATH_RECORDED_CALL).
#define kCreate(library) Calls<Library::library>::created
#define kInit(library) Calls<Library::library>::initialized
#define kSet(library) Calls<Library::library>::set
#define kDestroy(library) Calls<Library::library>::destroyed
CUDNN_FASTPATH_BLAS_RECORD_ENTRY_POINTS(CUDNN_FASTPATH_RECORDED_CALL)

}  // namespace cudnn_fastpath::shim
