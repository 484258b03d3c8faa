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

#include "shim/blas.h"
#include "shim/recorded_calls.h"

namespace cudnn_fastpath::shim {

BlasRegistry g_blas_objects;

namespace {

using Words = std::uint64_t[BlasRegistry::kWords];

// ---- cuBLASLt descriptors: a mask and the attributes' bytes ------------------------------------

bool put(Words& w, std::uint64_t attributes, int id, const void* bytes, std::size_t size) {
  if (id < 0 || id > 63 || !((attributes >> id) & 1) || bytes == nullptr || size == 0 || size > 8) return false;
  std::uint64_t value = 0;
  std::memcpy(&value, bytes, size);
  w[0] |= std::uint64_t{1} << id;
  w[1 + id] = value;
  return true;
}
template <typename T>
bool put_value(Words& w, std::uint64_t attributes, int id, T value) {
  return put(w, attributes, id, &value, sizeof value);
}

// A set of an attribute the descriptor kind has keeps the record as known as it was; one it does
// not have (or an odd size) makes it unknown until it is made again.
template <std::uint64_t kAttributes>
bool record_attribute(Words& w, bool known, int id, const void* buf, std::size_t size) {
  return put(w, kAttributes, id, buf, size) && known;
}

bool matmul_desc_defaults(Words& w, cublasComputeType_t compute, cudaDataType_t scale) {
  std::memset(w, 0, sizeof w);
  return put_value(w, kMatmulDescAttributes, CUBLASLT_MATMUL_DESC_COMPUTE_TYPE, static_cast<std::int32_t>(compute)) &&
         put_value(w, kMatmulDescAttributes, CUBLASLT_MATMUL_DESC_SCALE_TYPE, static_cast<std::int32_t>(scale));
}
bool record_matmul_desc_init(Words& w, bool, std::size_t, cublasComputeType_t compute, cudaDataType_t scale) {
  return matmul_desc_defaults(w, compute, scale);
}
bool record_matmul_desc_attribute(Words& w, bool known, cublasLtMatmulDescAttributes_t id, const void* buf,
                                  std::size_t size) {
  return record_attribute<kMatmulDescAttributes>(w, known, id, buf, size);
}

bool layout_defaults(Words& w, cudaDataType type, std::uint64_t rows, std::uint64_t cols, std::int64_t ld) {
  std::memset(w, 0, sizeof w);
  return put_value(w, kLayoutAttributes, CUBLASLT_MATRIX_LAYOUT_TYPE, static_cast<std::uint32_t>(type)) &&
         put_value(w, kLayoutAttributes, CUBLASLT_MATRIX_LAYOUT_ROWS, rows) &&
         put_value(w, kLayoutAttributes, CUBLASLT_MATRIX_LAYOUT_COLS, cols) &&
         put_value(w, kLayoutAttributes, CUBLASLT_MATRIX_LAYOUT_LD, ld);
}
bool record_layout_init(Words& w, bool, std::size_t, cudaDataType type, std::uint64_t rows, std::uint64_t cols,
                        std::int64_t ld) {
  return layout_defaults(w, type, rows, cols, ld);
}
bool record_layout_attribute(Words& w, bool known, cublasLtMatrixLayoutAttribute_t id, const void* buf,
                             std::size_t size) {
  return record_attribute<kLayoutAttributes>(w, known, id, buf, size);
}

bool preference_defaults(Words& w) {
  std::memset(w, 0, sizeof w);
  return true;
}
bool record_preference_init(Words& w, bool, std::size_t) { return preference_defaults(w); }
bool record_preference_attribute(Words& w, bool known, cublasLtMatmulPreferenceAttributes_t id, const void* buf,
                                 std::size_t size) {
  return record_attribute<kPreferenceAttributes>(w, known, id, buf, size);
}

bool emulation_defaults(Words& w) { return preference_defaults(w); }
bool record_emulation_init(Words& w, bool, std::size_t) { return preference_defaults(w); }
bool record_emulation_attribute(Words& w, bool known, cublasLtEmulationDescAttributes_t id, const void* buf,
                                std::size_t size) {
  return record_attribute<kEmulationAttributes>(w, known, id, buf, size);
}

// ---- cuBLAS handles ------------------------------------------------------------------------------

template <typename Edit>
bool edit_handle(Words& w, bool known, Edit&& edit) {
  BlasHandleRecord r;
  std::memcpy(&r, w, sizeof r);
  edit(r);
  std::memcpy(w, &r, sizeof r);
  return known;
}

bool blas_handle_defaults(Words& w) {
  std::memset(w, 0, sizeof w);
  return true;  // every field as cuBLAS makes it; `set` says none was set
}
bool record_stream(Words& w, bool known, cudaStream_t stream) {
  return edit_handle(w, known, [&](BlasHandleRecord& r) {
    r.stream = reinterpret_cast<std::uintptr_t>(stream);
    r.workspace = r.workspace_size = 0;
    r.set = (r.set | BlasHandleRecord::kStream) & ~std::uint64_t{BlasHandleRecord::kWorkspace};
  });
}
bool record_workspace(Words& w, bool known, void* workspace, std::size_t size) {
  return edit_handle(w, known, [&](BlasHandleRecord& r) {
    r.workspace = reinterpret_cast<std::uintptr_t>(workspace), r.workspace_size = size;
    r.set |= BlasHandleRecord::kWorkspace;
  });
}
template <auto kField, BlasHandleRecord::Field kBit, typename T>
bool record_field(Words& w, bool known, T value) {
  return edit_handle(w, known, [&](BlasHandleRecord& r) {
    r.*kField = static_cast<std::remove_reference_t<decltype(r.*kField)>>(value);
    r.set |= kBit;
  });
}
bool record_pointer_mode(Words& w, bool known, cublasPointerMode_t mode) {
  return record_field<&BlasHandleRecord::pointer_mode, BlasHandleRecord::kPointerMode>(w, known, mode);
}
bool record_math_mode(Words& w, bool known, cublasMath_t mode) {
  return record_field<&BlasHandleRecord::math_mode, BlasHandleRecord::kMathMode>(w, known, mode);
}
bool record_atomics_mode(Words& w, bool known, cublasAtomicsMode_t mode) {
  return record_field<&BlasHandleRecord::atomics, BlasHandleRecord::kAtomics>(w, known, mode);
}
bool record_sm_count_target(Words& w, bool known, int count) {
  return record_field<&BlasHandleRecord::sm_count, BlasHandleRecord::kSmCount>(w, known, count);
}
bool record_emulation_strategy(Words& w, bool known, cublasEmulationStrategy_t strategy) {
  return record_field<&BlasHandleRecord::strategy, BlasHandleRecord::kStrategy>(w, known, strategy);
}
bool record_special_values_support(Words& w, bool known, cudaEmulationSpecialValuesSupport mask) {
  return record_field<&BlasHandleRecord::special_values, BlasHandleRecord::kSpecialValues>(w, known, mask);
}
bool record_mantissa_control(Words& w, bool known, cudaEmulationMantissaControl control) {
  return record_field<&BlasHandleRecord::mantissa_control, BlasHandleRecord::kMantissaControl>(w, known, control);
}
bool record_max_mantissa_bit_count(Words& w, bool known, int bits) {
  return record_field<&BlasHandleRecord::max_mantissa_bits, BlasHandleRecord::kMaxMantissaBits>(w, known, bits);
}
bool record_mantissa_bit_offset(Words& w, bool known, int offset) {
  return record_field<&BlasHandleRecord::mantissa_offset, BlasHandleRecord::kMantissaOffset>(w, known, offset);
}
bool record_mantissa_bit_count_pointer(Words& w, bool known, int* pointer) {
  return edit_handle(w, known, [&](BlasHandleRecord& r) {
    r.mantissa_bits_pointer = reinterpret_cast<std::uintptr_t>(pointer);
    r.set |= BlasHandleRecord::kMantissaBitsPointer;
  });
}

constexpr std::nullptr_t no_hook = nullptr;

template <Library kLibrary>
using Calls = RecordedCalls<BlasRegistry, g_blas_objects, kLibrary, cublasStatus_t, CUBLAS_STATUS_NOT_INITIALIZED>;

}  // namespace

// The entries of each library, with its own actions.
#define kCreate(library) Calls<Library::library>::created
#define kInit(library) Calls<Library::library>::initialized
#define kSet(library) Calls<Library::library>::set
#define kDestroy(library) Calls<Library::library>::destroyed
#define CUDNN_FASTPATH_DEFINE_BLAS_CALL(exported, library, result, function, parameters, arguments, action, kind, \
                                        recorder)                                                              \
  result function(const void* caller, CUDNN_FASTPATH_EXPAND parameters) noexcept {                             \
    return action(library)<&RealSymbols::exported, offsetof(DispatchV1, function), &DispatchV1::function, kind, \
                           recorder>(                                                                          \
        caller, CUDNN_FASTPATH_EXPAND arguments);                                                               \
  }
CUDNN_FASTPATH_BLAS_RECORD_ENTRY_POINTS(CUDNN_FASTPATH_DEFINE_BLAS_CALL)
#undef CUDNN_FASTPATH_DEFINE_BLAS_CALL

}  // namespace cudnn_fastpath::shim
