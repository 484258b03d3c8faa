// The descriptors of the stub libcublasLt.so.13: matmul descriptors, matrix layouts, matmul
// preferences and emulation descriptors, each with every attribute cublasLt.h defines for it, the
// exact size cuBLASLt requires (INVALID_VALUE otherwise) and the documented defaults.
//
// A descriptor's state lives inside its opaque bytes, as in the real library: one made by Create
// is an object of a pool (a destroyed one's address is handed out again), one made by
// Init_internal is the caller's memory, never registered, never destroyed.
#include <cublasLt.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <mutex>

#include "tests/stub/reusing_pool.h"
#include "tests/stub/stub_blas_control.h"
#include "tests/stub/stub_cublaslt_internal.h"

namespace {

constexpr std::uint32_t kCreated = 1;  // flags: made by Create (an object of the kind's pool)

// Where an attribute lives in a kind's values, and the size cuBLASLt requires of it.
struct Slot {
  int attribute;
  std::size_t offset;
  std::size_t size;
};
#define STUB_SLOT(attribute, Values, field) {attribute, offsetof(Values, field), sizeof(Values::field)}

using MatmulV = StubLtMatmulDescValues;
const Slot kMatmulSlots[] = {
    STUB_SLOT(CUBLASLT_MATMUL_DESC_COMPUTE_TYPE, MatmulV, compute_type),
    STUB_SLOT(CUBLASLT_MATMUL_DESC_SCALE_TYPE, MatmulV, scale_type),
    STUB_SLOT(CUBLASLT_MATMUL_DESC_POINTER_MODE, MatmulV, pointer_mode),
    STUB_SLOT(CUBLASLT_MATMUL_DESC_TRANSA, MatmulV, transa),
    STUB_SLOT(CUBLASLT_MATMUL_DESC_TRANSB, MatmulV, transb),
    STUB_SLOT(CUBLASLT_MATMUL_DESC_TRANSC, MatmulV, transc),
    STUB_SLOT(CUBLASLT_MATMUL_DESC_FILL_MODE, MatmulV, fill_mode),
    STUB_SLOT(CUBLASLT_MATMUL_DESC_EPILOGUE, MatmulV, epilogue),
    STUB_SLOT(CUBLASLT_MATMUL_DESC_BIAS_POINTER, MatmulV, bias_pointer),
    STUB_SLOT(CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE, MatmulV, bias_batch_stride),
    STUB_SLOT(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, MatmulV, epilogue_aux_pointer),
    STUB_SLOT(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, MatmulV, epilogue_aux_ld),
    STUB_SLOT(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_BATCH_STRIDE, MatmulV, epilogue_aux_batch_stride),
    STUB_SLOT(CUBLASLT_MATMUL_DESC_ALPHA_VECTOR_BATCH_STRIDE, MatmulV, alpha_vector_batch_stride),
    STUB_SLOT(CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET, MatmulV, sm_count_target),
    STUB_SLOT(CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, MatmulV, a_scale_pointer),
    STUB_SLOT(CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, MatmulV, b_scale_pointer),
    STUB_SLOT(CUBLASLT_MATMUL_DESC_C_SCALE_POINTER, MatmulV, c_scale_pointer),
    STUB_SLOT(CUBLASLT_MATMUL_DESC_D_SCALE_POINTER, MatmulV, d_scale_pointer),
    STUB_SLOT(CUBLASLT_MATMUL_DESC_AMAX_D_POINTER, MatmulV, amax_d_pointer),
    STUB_SLOT(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_DATA_TYPE, MatmulV, epilogue_aux_data_type),
    STUB_SLOT(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_SCALE_POINTER, MatmulV, epilogue_aux_scale_pointer),
    STUB_SLOT(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_AMAX_POINTER, MatmulV, epilogue_aux_amax_pointer),
    STUB_SLOT(CUBLASLT_MATMUL_DESC_FAST_ACCUM, MatmulV, fast_accum),
    STUB_SLOT(CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, MatmulV, bias_data_type),
    STUB_SLOT(CUBLASLT_MATMUL_DESC_A_SCALE_MODE, MatmulV, a_scale_mode),
    STUB_SLOT(CUBLASLT_MATMUL_DESC_B_SCALE_MODE, MatmulV, b_scale_mode),
    STUB_SLOT(CUBLASLT_MATMUL_DESC_C_SCALE_MODE, MatmulV, c_scale_mode),
    STUB_SLOT(CUBLASLT_MATMUL_DESC_D_SCALE_MODE, MatmulV, d_scale_mode),
    STUB_SLOT(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_SCALE_MODE, MatmulV, epilogue_aux_scale_mode),
    STUB_SLOT(CUBLASLT_MATMUL_DESC_D_OUT_SCALE_POINTER, MatmulV, d_out_scale_pointer),
    STUB_SLOT(CUBLASLT_MATMUL_DESC_D_OUT_SCALE_MODE, MatmulV, d_out_scale_mode),
    STUB_SLOT(CUBLASLT_MATMUL_DESC_EMULATION_DESCRIPTOR, MatmulV, emulation_descriptor),
};

using LayoutV = StubLtLayoutValues;
const Slot kLayoutSlots[] = {
    STUB_SLOT(CUBLASLT_MATRIX_LAYOUT_TYPE, LayoutV, type),
    STUB_SLOT(CUBLASLT_MATRIX_LAYOUT_ORDER, LayoutV, order),
    STUB_SLOT(CUBLASLT_MATRIX_LAYOUT_ROWS, LayoutV, rows),
    STUB_SLOT(CUBLASLT_MATRIX_LAYOUT_COLS, LayoutV, cols),
    STUB_SLOT(CUBLASLT_MATRIX_LAYOUT_LD, LayoutV, ld),
    STUB_SLOT(CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, LayoutV, batch_count),
    STUB_SLOT(CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, LayoutV, strided_batch_offset),
    STUB_SLOT(CUBLASLT_MATRIX_LAYOUT_PLANE_OFFSET, LayoutV, plane_offset),
    STUB_SLOT(CUBLASLT_MATRIX_LAYOUT_BATCH_MODE, LayoutV, batch_mode),
};

using PreferenceV = StubLtPreferenceValues;
const Slot kPreferenceSlots[] = {
    STUB_SLOT(CUBLASLT_MATMUL_PREF_SEARCH_MODE, PreferenceV, search_mode),
    STUB_SLOT(CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, PreferenceV, max_workspace_bytes),
    STUB_SLOT(CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, PreferenceV, reduction_scheme_mask),
    STUB_SLOT(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, PreferenceV, min_alignment_a),
    STUB_SLOT(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, PreferenceV, min_alignment_b),
    STUB_SLOT(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, PreferenceV, min_alignment_c),
    STUB_SLOT(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, PreferenceV, min_alignment_d),
    STUB_SLOT(CUBLASLT_MATMUL_PREF_MAX_WAVES_COUNT, PreferenceV, max_waves_count),
    STUB_SLOT(CUBLASLT_MATMUL_PREF_IMPL_MASK, PreferenceV, impl_mask),
};

using EmulationV = StubLtEmulationValues;
const Slot kEmulationSlots[] = {
    STUB_SLOT(CUBLASLT_EMULATION_DESC_STRATEGY, EmulationV, strategy),
    STUB_SLOT(CUBLASLT_EMULATION_DESC_SPECIAL_VALUES_SUPPORT, EmulationV, special_values_support),
    STUB_SLOT(CUBLASLT_EMULATION_DESC_FIXEDPOINT_MANTISSA_CONTROL, EmulationV, mantissa_control),
    STUB_SLOT(CUBLASLT_EMULATION_DESC_FIXEDPOINT_MAX_MANTISSA_BIT_COUNT, EmulationV, max_mantissa_bit_count),
    STUB_SLOT(CUBLASLT_EMULATION_DESC_FIXEDPOINT_MANTISSA_BIT_OFFSET, EmulationV, mantissa_bit_offset),
    STUB_SLOT(CUBLASLT_EMULATION_DESC_FIXEDPOINT_MANTISSA_BIT_COUNT_POINTER, EmulationV, mantissa_bit_count_pointer),
};
#undef STUB_SLOT

// The state inside a descriptor's opaque bytes: a magic number per kind (zeroed at destroy).
template <typename Values>
struct State {
  std::uint32_t magic;
  std::uint32_t flags;
  Values values;
};
static_assert(sizeof(State<MatmulV>) <= sizeof(cublasLtMatmulDescOpaque_t), "matmul state fits");
static_assert(sizeof(State<LayoutV>) <= sizeof(cublasLtMatrixLayoutOpaque_t), "layout state fits");
static_assert(sizeof(State<PreferenceV>) <= sizeof(cublasLtMatmulPreferenceOpaque_t), "preference fits");
static_assert(sizeof(State<EmulationV>) <= sizeof(cublasLtEmulationDescOpaque_t), "emulation fits");

std::mutex g_lock;  // every descriptor's bytes and every count below

template <typename Opaque, typename Values, std::size_t Capacity>
struct Kind {
  std::uint32_t magic;
  const Slot* slots;
  std::size_t slot_count;
  ReusingPool<Opaque, Capacity> pool;
  StubLtDescriptorCounts counts{};

  const Slot* slot(int attribute) const {
    for (std::size_t i = 0; i < slot_count; ++i)
      if (slots[i].attribute == attribute) return &slots[i];
    return nullptr;
  }

  // The state of a live descriptor of this kind, or false (under g_lock).
  bool load(const void* d, State<Values>* state) {
    if (d == nullptr) return false;
    std::memcpy(state, d, sizeof *state);
    if (state->magic != magic) return false;
    return !(state->flags & kCreated) || pool.at(d) != nullptr;  // a copy of a created one is not
  }

  void init_locked(void* d, const Values& defaults, std::uint32_t flags) {
    std::memset(d, 0, sizeof(Opaque));  // padding included: blobs of these values get hashed
    State<Values> state;
    std::memset(&state, 0, sizeof state);
    state.magic = magic;
    state.flags = flags;
    state.values = defaults;
    std::memcpy(d, &state, sizeof state);
  }

  cublasStatus_t create(Opaque** out, const Values& defaults) {
    std::lock_guard<std::mutex> guard(g_lock);
    ++counts.created;
    if (out == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
    Opaque* d = pool.acquire();
    if (d == nullptr) return CUBLAS_STATUS_ALLOC_FAILED;
    init_locked(d, defaults, kCreated);
    ++counts.live;
    *out = d;
    return CUBLAS_STATUS_SUCCESS;
  }

  cublasStatus_t init(Opaque* d, std::size_t size, const Values& defaults) {
    std::lock_guard<std::mutex> guard(g_lock);
    ++counts.initialized;
    if (d == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
    if (size < sizeof(Opaque)) return CUBLAS_STATUS_ALLOC_FAILED;  // as the header documents
    init_locked(d, defaults, 0);
    return CUBLAS_STATUS_SUCCESS;
  }

  cublasStatus_t destroy(Opaque* d) {
    std::lock_guard<std::mutex> guard(g_lock);
    ++counts.destroyed;
    if (d == nullptr) return CUBLAS_STATUS_SUCCESS;  // like free(NULL)
    State<Values> state;
    if (!load(d, &state) || !(state.flags & kCreated)) return CUBLAS_STATUS_INVALID_VALUE;
    std::memset(d, 0, sizeof(Opaque));
    --counts.live;
    pool.release(d);
    return CUBLAS_STATUS_SUCCESS;
  }

  cublasStatus_t set(Opaque* d, int attribute, const void* buf, std::size_t size) {
    std::lock_guard<std::mutex> guard(g_lock);
    ++counts.sets;
    State<Values> state;
    if (!load(d, &state)) return CUBLAS_STATUS_INVALID_VALUE;
    const Slot* s = slot(attribute);
    if (s == nullptr || buf == nullptr || size != s->size) return CUBLAS_STATUS_INVALID_VALUE;
    std::memcpy(reinterpret_cast<unsigned char*>(&state.values) + s->offset, buf, size);
    std::memcpy(d, &state, sizeof state);
    return CUBLAS_STATUS_SUCCESS;
  }

  // The header's rules: sizeInBytes 0 asks for the size (sizeWritten required); otherwise buf is
  // required and sizeInBytes must be the attribute's size.
  cublasStatus_t get(Opaque* d, int attribute, void* buf, std::size_t size, std::size_t* written) {
    std::lock_guard<std::mutex> guard(g_lock);
    ++counts.gets;
    State<Values> state;
    if (!load(d, &state)) return CUBLAS_STATUS_INVALID_VALUE;
    const Slot* s = slot(attribute);
    if (s == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
    if (size == 0) {
      if (written == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
      *written = s->size;
      return CUBLAS_STATUS_SUCCESS;
    }
    if (buf == nullptr || size != s->size) return CUBLAS_STATUS_INVALID_VALUE;
    std::memcpy(buf, reinterpret_cast<const unsigned char*>(&state.values) + s->offset, size);
    if (written != nullptr) *written = size;
    return CUBLAS_STATUS_SUCCESS;
  }

  bool read(const void* d, Values* values) {
    std::lock_guard<std::mutex> guard(g_lock);
    State<Values> state;
    if (!load(d, &state)) return false;
    *values = state.values;
    return true;
  }
};

Kind<cublasLtMatmulDescOpaque_t, MatmulV, 4096> g_matmul{0x4D41544Du, kMatmulSlots,
                                                         sizeof kMatmulSlots / sizeof(Slot), {}};
Kind<cublasLtMatrixLayoutOpaque_t, LayoutV, 16384> g_layout{0x4C41594Fu, kLayoutSlots,
                                                            sizeof kLayoutSlots / sizeof(Slot), {}};
Kind<cublasLtMatmulPreferenceOpaque_t, PreferenceV, 4096> g_preference{
    0x50524546u, kPreferenceSlots, sizeof kPreferenceSlots / sizeof(Slot), {}};
Kind<cublasLtEmulationDescOpaque_t, EmulationV, 4096> g_emulation{
    0x454D554Cu, kEmulationSlots, sizeof kEmulationSlots / sizeof(Slot), {}};

MatmulV matmul_defaults(cublasComputeType_t compute, cudaDataType_t scale) {
  MatmulV v;
  std::memset(&v, 0, sizeof v);
  v.compute_type = compute;
  v.scale_type = scale;
  v.pointer_mode = CUBLASLT_POINTER_MODE_HOST;
  v.transa = v.transb = v.transc = CUBLAS_OP_N;
  v.fill_mode = CUBLAS_FILL_MODE_FULL;
  v.epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  v.epilogue_aux_data_type = -1;
  v.bias_data_type = -1;
  return v;
}

LayoutV layout_defaults(cudaDataType type, std::uint64_t rows, std::uint64_t cols, std::int64_t ld) {
  LayoutV v;
  std::memset(&v, 0, sizeof v);
  v.type = static_cast<std::uint32_t>(type);
  v.order = CUBLASLT_ORDER_COL;
  v.rows = rows;
  v.cols = cols;
  v.ld = ld;
  v.batch_count = 1;
  v.batch_mode = CUBLASLT_BATCH_MODE_STRIDED;
  return v;
}

PreferenceV preference_defaults() {
  PreferenceV v;
  std::memset(&v, 0, sizeof v);
  v.search_mode = CUBLASLT_SEARCH_BEST_FIT;
  v.reduction_scheme_mask = CUBLASLT_REDUCTION_SCHEME_MASK;
  v.min_alignment_a = v.min_alignment_b = v.min_alignment_c = v.min_alignment_d = 256;
  v.impl_mask = ~std::uint64_t{0};
  return v;
}

EmulationV emulation_defaults() {
  EmulationV v;
  std::memset(&v, 0, sizeof v);
  v.special_values_support = CUDA_EMULATION_SPECIAL_VALUES_SUPPORT_DEFAULT;
  return v;
}

}  // namespace

namespace stublt {

bool read_matmul_desc(cublasLtMatmulDesc_t d, StubLtMatmulDescValues* v) { return g_matmul.read(d, v); }
bool read_layout(cublasLtMatrixLayout_t d, StubLtLayoutValues* v) { return g_layout.read(d, v); }
bool read_preference(cublasLtMatmulPreference_t d, StubLtPreferenceValues* v) { return g_preference.read(d, v); }
bool read_emulation(cublasLtEmulationDesc_t d, StubLtEmulationValues* v) { return g_emulation.read(d, v); }

void descriptor_counts(StubBlasLtCounters* c) {
  std::lock_guard<std::mutex> guard(g_lock);
  c->matmul_desc = g_matmul.counts;
  c->layout = g_layout.counts;
  c->preference = g_preference.counts;
  c->emulation = g_emulation.counts;
}

}  // namespace stublt

extern "C" {

cublasStatus_t CUBLASWINAPI cublasLtMatmulDescCreate(cublasLtMatmulDesc_t* matmulDesc,
                                                     cublasComputeType_t computeType,
                                                     cudaDataType_t scaleType) {
  return g_matmul.create(matmulDesc, matmul_defaults(computeType, scaleType));
}

cublasStatus_t CUBLASWINAPI cublasLtMatmulDescInit_internal(cublasLtMatmulDesc_t matmulDesc, size_t size,
                                                            cublasComputeType_t computeType,
                                                            cudaDataType_t scaleType) {
  return g_matmul.init(matmulDesc, size, matmul_defaults(computeType, scaleType));
}

cublasStatus_t CUBLASWINAPI cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t matmulDesc) {
  return g_matmul.destroy(matmulDesc);
}

cublasStatus_t CUBLASWINAPI cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t matmulDesc,
                                                           cublasLtMatmulDescAttributes_t attr,
                                                           const void* buf, size_t sizeInBytes) {
  return g_matmul.set(matmulDesc, attr, buf, sizeInBytes);
}

cublasStatus_t CUBLASWINAPI cublasLtMatmulDescGetAttribute(cublasLtMatmulDesc_t matmulDesc,
                                                           cublasLtMatmulDescAttributes_t attr, void* buf,
                                                           size_t sizeInBytes, size_t* sizeWritten) {
  return g_matmul.get(matmulDesc, attr, buf, sizeInBytes, sizeWritten);
}

cublasStatus_t CUBLASWINAPI cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t* matLayout, cudaDataType type,
                                                       uint64_t rows, uint64_t cols, int64_t ld) {
  return g_layout.create(matLayout, layout_defaults(type, rows, cols, ld));
}

cublasStatus_t CUBLASWINAPI cublasLtMatrixLayoutInit_internal(cublasLtMatrixLayout_t matLayout, size_t size,
                                                              cudaDataType type, uint64_t rows,
                                                              uint64_t cols, int64_t ld) {
  return g_layout.init(matLayout, size, layout_defaults(type, rows, cols, ld));
}

cublasStatus_t CUBLASWINAPI cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t matLayout) {
  return g_layout.destroy(matLayout);
}

cublasStatus_t CUBLASWINAPI cublasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t matLayout,
                                                             cublasLtMatrixLayoutAttribute_t attr,
                                                             const void* buf, size_t sizeInBytes) {
  return g_layout.set(matLayout, attr, buf, sizeInBytes);
}

cublasStatus_t CUBLASWINAPI cublasLtMatrixLayoutGetAttribute(cublasLtMatrixLayout_t matLayout,
                                                             cublasLtMatrixLayoutAttribute_t attr, void* buf,
                                                             size_t sizeInBytes, size_t* sizeWritten) {
  return g_layout.get(matLayout, attr, buf, sizeInBytes, sizeWritten);
}

cublasStatus_t CUBLASWINAPI cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t* pref) {
  return g_preference.create(pref, preference_defaults());
}

cublasStatus_t CUBLASWINAPI cublasLtMatmulPreferenceInit_internal(cublasLtMatmulPreference_t pref, size_t size) {
  return g_preference.init(pref, size, preference_defaults());
}

cublasStatus_t CUBLASWINAPI cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t pref) {
  return g_preference.destroy(pref);
}

cublasStatus_t CUBLASWINAPI cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t pref,
                                                                 cublasLtMatmulPreferenceAttributes_t attr,
                                                                 const void* buf, size_t sizeInBytes) {
  return g_preference.set(pref, attr, buf, sizeInBytes);
}

cublasStatus_t CUBLASWINAPI cublasLtMatmulPreferenceGetAttribute(cublasLtMatmulPreference_t pref,
                                                                 cublasLtMatmulPreferenceAttributes_t attr,
                                                                 void* buf, size_t sizeInBytes,
                                                                 size_t* sizeWritten) {
  return g_preference.get(pref, attr, buf, sizeInBytes, sizeWritten);
}

cublasStatus_t CUBLASWINAPI cublasLtEmulationDescCreate(cublasLtEmulationDesc_t* emulationDesc) {
  return g_emulation.create(emulationDesc, emulation_defaults());
}

cublasStatus_t CUBLASWINAPI cublasLtEmulationDescInit_internal(cublasLtEmulationDesc_t emulationDesc, size_t size) {
  return g_emulation.init(emulationDesc, size, emulation_defaults());
}

cublasStatus_t CUBLASWINAPI cublasLtEmulationDescDestroy(cublasLtEmulationDesc_t emulationDesc) {
  return g_emulation.destroy(emulationDesc);
}

cublasStatus_t CUBLASWINAPI cublasLtEmulationDescSetAttribute(cublasLtEmulationDesc_t emulationDesc,
                                                              cublasLtEmulationDescAttributes_t attr,
                                                              const void* buf, size_t sizeInBytes) {
  return g_emulation.set(emulationDesc, attr, buf, sizeInBytes);
}

cublasStatus_t CUBLASWINAPI cublasLtEmulationDescGetAttribute(cublasLtEmulationDesc_t emulationDesc,
                                                              cublasLtEmulationDescAttributes_t attr,
                                                              void* buf, size_t sizeInBytes,
                                                              size_t* sizeWritten) {
  return g_emulation.get(emulationDesc, attr, buf, sizeInBytes, sizeWritten);
}

}  // extern "C"
