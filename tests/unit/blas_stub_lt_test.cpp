// The stub libcublasLt.so.13 on its own: descriptors (every attribute, its size, its default, the
// counts), handles (address reuse, serials, cuBLAS handles accepted) and the heuristic, whose algo
// must change when any single input does.
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <vector>

#include "tests/unit/blas_stub_support.h"

using namespace blastest;

namespace {

// One descriptor kind's functions, with the void* a generic loop needs.
struct KindApi {
  const char* name;
  const AttrSpec* attrs;
  std::size_t count;
  std::vector<int> unknown;  // numbers cublasLt.h leaves out
  std::size_t opaque_size;
  cublasStatus_t (*create)(void**);
  cublasStatus_t (*init)(void*, std::size_t);
  cublasStatus_t (*destroy)(void*);
  cublasStatus_t (*set)(void*, int, const void*, std::size_t);
  cublasStatus_t (*get)(void*, int, void*, std::size_t, std::size_t*);
  StubLtDescriptorCounts (*counts)();
};

const KindApi kKinds[] = {
    {"matmul descriptor", kMatmulAttrs, std::size(kMatmulAttrs), {9, 16, 27, 28, 29, 30, 39, -1},
     sizeof(cublasLtMatmulDescOpaque_t),
     [](void** d) { return cublasLtMatmulDescCreate(reinterpret_cast<cublasLtMatmulDesc_t*>(d), CUBLAS_COMPUTE_32F, CUDA_R_32F); },
     [](void* d, std::size_t size) {
       return cublasLtMatmulDescInit_internal(static_cast<cublasLtMatmulDesc_t>(d), size, CUBLAS_COMPUTE_32F, CUDA_R_32F);
     },
     [](void* d) { return cublasLtMatmulDescDestroy(static_cast<cublasLtMatmulDesc_t>(d)); },
     [](void* d, int a, const void* buf, std::size_t size) {
       return cublasLtMatmulDescSetAttribute(static_cast<cublasLtMatmulDesc_t>(d),
                                             static_cast<cublasLtMatmulDescAttributes_t>(a), buf, size);
     },
     [](void* d, int a, void* buf, std::size_t size, std::size_t* written) {
       return cublasLtMatmulDescGetAttribute(static_cast<cublasLtMatmulDesc_t>(d),
                                             static_cast<cublasLtMatmulDescAttributes_t>(a), buf, size, written);
     },
     [] { return stubblaslt_counters().matmul_desc; }},
    {"matrix layout", kLayoutAttrs, std::size(kLayoutAttrs), {9, 10, -1}, sizeof(cublasLtMatrixLayoutOpaque_t),
     [](void** d) { return cublasLtMatrixLayoutCreate(reinterpret_cast<cublasLtMatrixLayout_t*>(d), CUDA_R_16F, 8, 8, 8); },
     [](void* d, std::size_t size) {
       return cublasLtMatrixLayoutInit_internal(static_cast<cublasLtMatrixLayout_t>(d), size, CUDA_R_16F, 8, 8, 8);
     },
     [](void* d) { return cublasLtMatrixLayoutDestroy(static_cast<cublasLtMatrixLayout_t>(d)); },
     [](void* d, int a, const void* buf, std::size_t size) {
       return cublasLtMatrixLayoutSetAttribute(static_cast<cublasLtMatrixLayout_t>(d),
                                               static_cast<cublasLtMatrixLayoutAttribute_t>(a), buf, size);
     },
     [](void* d, int a, void* buf, std::size_t size, std::size_t* written) {
       return cublasLtMatrixLayoutGetAttribute(static_cast<cublasLtMatrixLayout_t>(d),
                                               static_cast<cublasLtMatrixLayoutAttribute_t>(a), buf, size, written);
     },
     [] { return stubblaslt_counters().layout; }},
    {"matmul preference", kPreferenceAttrs, std::size(kPreferenceAttrs), {2, 4, 10, 11, 13, -1},
     sizeof(cublasLtMatmulPreferenceOpaque_t),
     [](void** d) { return cublasLtMatmulPreferenceCreate(reinterpret_cast<cublasLtMatmulPreference_t*>(d)); },
     [](void* d, std::size_t size) {
       return cublasLtMatmulPreferenceInit_internal(static_cast<cublasLtMatmulPreference_t>(d), size);
     },
     [](void* d) { return cublasLtMatmulPreferenceDestroy(static_cast<cublasLtMatmulPreference_t>(d)); },
     [](void* d, int a, const void* buf, std::size_t size) {
       return cublasLtMatmulPreferenceSetAttribute(static_cast<cublasLtMatmulPreference_t>(d),
                                                   static_cast<cublasLtMatmulPreferenceAttributes_t>(a), buf, size);
     },
     [](void* d, int a, void* buf, std::size_t size, std::size_t* written) {
       return cublasLtMatmulPreferenceGetAttribute(static_cast<cublasLtMatmulPreference_t>(d),
                                                   static_cast<cublasLtMatmulPreferenceAttributes_t>(a), buf, size,
                                                   written);
     },
     [] { return stubblaslt_counters().preference; }},
    {"emulation descriptor", kEmulationAttrs, std::size(kEmulationAttrs), {6, 7, -1},
     sizeof(cublasLtEmulationDescOpaque_t),
     [](void** d) { return cublasLtEmulationDescCreate(reinterpret_cast<cublasLtEmulationDesc_t*>(d)); },
     [](void* d, std::size_t size) {
       return cublasLtEmulationDescInit_internal(static_cast<cublasLtEmulationDesc_t>(d), size);
     },
     [](void* d) { return cublasLtEmulationDescDestroy(static_cast<cublasLtEmulationDesc_t>(d)); },
     [](void* d, int a, const void* buf, std::size_t size) {
       return cublasLtEmulationDescSetAttribute(static_cast<cublasLtEmulationDesc_t>(d),
                                                static_cast<cublasLtEmulationDescAttributes_t>(a), buf, size);
     },
     [](void* d, int a, void* buf, std::size_t size, std::size_t* written) {
       return cublasLtEmulationDescGetAttribute(static_cast<cublasLtEmulationDesc_t>(d),
                                                static_cast<cublasLtEmulationDescAttributes_t>(a), buf, size, written);
     },
     [] { return stubblaslt_counters().emulation; }},
};

// A value for attribute number `index`, distinct from every other attribute's and from 0.
void pattern(unsigned char* bytes, std::size_t size, std::size_t index) {
  for (std::size_t i = 0; i < size; ++i) bytes[i] = static_cast<unsigned char>(0x11 * (index + 1) + 3 * i + 1);
}

void check_attributes(const KindApi& kind, void* d) {
  for (std::size_t i = 0; i < kind.count; ++i) {
    const AttrSpec& spec = kind.attrs[i];
    INFO(kind.name << " attribute " << spec.attribute);
    std::size_t needed = 0;
    CHECK(kind.get(d, spec.attribute, nullptr, 0, &needed) == CUBLAS_STATUS_SUCCESS);
    CHECK(needed == spec.size);
    CHECK(kind.get(d, spec.attribute, nullptr, 0, nullptr) == CUBLAS_STATUS_INVALID_VALUE);
    unsigned char value[16], out[16] = {};
    pattern(value, spec.size, i);
    CHECK(kind.set(d, spec.attribute, value, spec.size + 1) == CUBLAS_STATUS_INVALID_VALUE);
    CHECK(kind.set(d, spec.attribute, value, spec.size - 1) == CUBLAS_STATUS_INVALID_VALUE);
    CHECK(kind.set(d, spec.attribute, nullptr, spec.size) == CUBLAS_STATUS_INVALID_VALUE);
    CHECK(kind.set(d, spec.attribute, value, spec.size) == CUBLAS_STATUS_SUCCESS);
    std::size_t written = 0;
    CHECK(kind.get(d, spec.attribute, out, spec.size + 1, &written) == CUBLAS_STATUS_INVALID_VALUE);
    CHECK(kind.get(d, spec.attribute, nullptr, spec.size, &written) == CUBLAS_STATUS_INVALID_VALUE);
    CHECK(kind.get(d, spec.attribute, out, spec.size, &written) == CUBLAS_STATUS_SUCCESS);
    CHECK(written == spec.size);
    CHECK(std::memcmp(out, value, spec.size) == 0);
  }
  // Each kept its own value: no two attributes share storage.
  for (std::size_t i = 0; i < kind.count; ++i) {
    const AttrSpec& spec = kind.attrs[i];
    INFO(kind.name << " attribute " << spec.attribute << " after all were set");
    unsigned char value[16], out[16] = {};
    pattern(value, spec.size, i);
    CHECK(kind.get(d, spec.attribute, out, spec.size, nullptr) == CUBLAS_STATUS_SUCCESS);
    CHECK(std::memcmp(out, value, spec.size) == 0);
  }
  for (int unknown : kind.unknown) {
    INFO(kind.name << " unknown attribute " << unknown);
    unsigned char value[8] = {1};
    std::size_t needed = 0;
    CHECK(kind.set(d, unknown, value, 4) == CUBLAS_STATUS_INVALID_VALUE);
    CHECK(kind.set(d, unknown, value, 8) == CUBLAS_STATUS_INVALID_VALUE);
    CHECK(kind.get(d, unknown, value, 4, nullptr) == CUBLAS_STATUS_INVALID_VALUE);
    CHECK(kind.get(d, unknown, nullptr, 0, &needed) == CUBLAS_STATUS_INVALID_VALUE);
  }
}

template <typename T>
T value_of(const KindApi& kind, void* d, int attribute) {
  T value{};
  REQUIRE(kind.get(d, attribute, &value, sizeof value, nullptr) == CUBLAS_STATUS_SUCCESS);
  return value;
}

}  // namespace

TEST_CASE("cuBLASLt stub: every attribute of each descriptor kind round-trips at its exact size only", "[blas]") {
  for (const KindApi& kind : kKinds) {
    void* created = nullptr;
    REQUIRE(kind.create(&created) == CUBLAS_STATUS_SUCCESS);
    check_attributes(kind, created);
    CHECK(kind.destroy(created) == CUBLAS_STATUS_SUCCESS);
    alignas(16) unsigned char memory[256];
    REQUIRE(kind.opaque_size <= sizeof memory);
    REQUIRE(kind.init(memory, kind.opaque_size) == CUBLAS_STATUS_SUCCESS);
    check_attributes(kind, memory);
  }
}

TEST_CASE("cuBLASLt stub: descriptors start with the defaults cublasLt.h documents", "[blas]") {
  const KindApi &matmul = kKinds[0], &layout = kKinds[1], &preference = kKinds[2], &emulation = kKinds[3];
  alignas(16) unsigned char memory[256];
  cublasLtMatmulDesc_t desc = nullptr;
  REQUIRE(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F_FAST_TF32, CUDA_R_32F) == CUBLAS_STATUS_SUCCESS);
  REQUIRE(cublasLtMatmulDescInit_internal(reinterpret_cast<cublasLtMatmulDesc_t>(memory), sizeof(cublasLtMatmulDescOpaque_t),
                                          CUBLAS_COMPUTE_64F, CUDA_R_64F) == CUBLAS_STATUS_SUCCESS);
  CHECK(value_of<std::int32_t>(matmul, desc, CUBLASLT_MATMUL_DESC_COMPUTE_TYPE) == CUBLAS_COMPUTE_32F_FAST_TF32);
  CHECK(value_of<std::int32_t>(matmul, desc, CUBLASLT_MATMUL_DESC_SCALE_TYPE) == CUDA_R_32F);
  CHECK(value_of<std::int32_t>(matmul, memory, CUBLASLT_MATMUL_DESC_COMPUTE_TYPE) == CUBLAS_COMPUTE_64F);
  CHECK(value_of<std::int32_t>(matmul, memory, CUBLASLT_MATMUL_DESC_SCALE_TYPE) == CUDA_R_64F);
  for (void* d : {static_cast<void*>(desc), static_cast<void*>(memory)}) {
    CHECK(value_of<std::int32_t>(matmul, d, CUBLASLT_MATMUL_DESC_POINTER_MODE) == CUBLASLT_POINTER_MODE_HOST);
    CHECK(value_of<std::int32_t>(matmul, d, CUBLASLT_MATMUL_DESC_TRANSA) == CUBLAS_OP_N);
    CHECK(value_of<std::int32_t>(matmul, d, CUBLASLT_MATMUL_DESC_TRANSB) == CUBLAS_OP_N);
    CHECK(value_of<std::int32_t>(matmul, d, CUBLASLT_MATMUL_DESC_TRANSC) == CUBLAS_OP_N);
    CHECK(value_of<std::int32_t>(matmul, d, CUBLASLT_MATMUL_DESC_FILL_MODE) == CUBLAS_FILL_MODE_FULL);
    CHECK(value_of<std::uint32_t>(matmul, d, CUBLASLT_MATMUL_DESC_EPILOGUE) == CUBLASLT_EPILOGUE_DEFAULT);
    CHECK(value_of<std::int32_t>(matmul, d, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_DATA_TYPE) == -1);
    CHECK(value_of<std::int32_t>(matmul, d, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE) == -1);
    CHECK(value_of<std::int8_t>(matmul, d, CUBLASLT_MATMUL_DESC_FAST_ACCUM) == 0);
    CHECK(value_of<std::int32_t>(matmul, d, CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET) == 0);
    CHECK(value_of<void*>(matmul, d, CUBLASLT_MATMUL_DESC_BIAS_POINTER) == nullptr);
    CHECK(value_of<void*>(matmul, d, CUBLASLT_MATMUL_DESC_EMULATION_DESCRIPTOR) == nullptr);
    CHECK(value_of<std::int32_t>(matmul, d, CUBLASLT_MATMUL_DESC_D_OUT_SCALE_MODE) == 0);
  }
  cublasLtMatmulDescDestroy(desc);

  REQUIRE(layout.init(memory, sizeof(cublasLtMatrixLayoutOpaque_t)) == CUBLAS_STATUS_SUCCESS);  // 16F, 8 x 8, ld 8
  CHECK(value_of<std::uint32_t>(layout, memory, CUBLASLT_MATRIX_LAYOUT_TYPE) == CUDA_R_16F);
  CHECK(value_of<std::int32_t>(layout, memory, CUBLASLT_MATRIX_LAYOUT_ORDER) == CUBLASLT_ORDER_COL);
  CHECK(value_of<std::uint64_t>(layout, memory, CUBLASLT_MATRIX_LAYOUT_ROWS) == 8);
  CHECK(value_of<std::uint64_t>(layout, memory, CUBLASLT_MATRIX_LAYOUT_COLS) == 8);
  CHECK(value_of<std::int64_t>(layout, memory, CUBLASLT_MATRIX_LAYOUT_LD) == 8);
  CHECK(value_of<std::int32_t>(layout, memory, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT) == 1);
  CHECK(value_of<std::int64_t>(layout, memory, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET) == 0);
  CHECK(value_of<std::int64_t>(layout, memory, CUBLASLT_MATRIX_LAYOUT_PLANE_OFFSET) == 0);
  CHECK(value_of<std::uint32_t>(layout, memory, CUBLASLT_MATRIX_LAYOUT_BATCH_MODE) == CUBLASLT_BATCH_MODE_STRIDED);

  REQUIRE(preference.init(memory, sizeof(cublasLtMatmulPreferenceOpaque_t)) == CUBLAS_STATUS_SUCCESS);
  CHECK(value_of<std::uint32_t>(preference, memory, CUBLASLT_MATMUL_PREF_SEARCH_MODE) == CUBLASLT_SEARCH_BEST_FIT);
  CHECK(value_of<std::uint64_t>(preference, memory, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES) == 0);
  CHECK(value_of<std::uint32_t>(preference, memory, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK) ==
        CUBLASLT_REDUCTION_SCHEME_MASK);
  for (int a : {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES})
    CHECK(value_of<std::uint32_t>(preference, memory, a) == 256);
  CHECK(value_of<float>(preference, memory, CUBLASLT_MATMUL_PREF_MAX_WAVES_COUNT) == 0.0f);
  CHECK(value_of<std::uint64_t>(preference, memory, CUBLASLT_MATMUL_PREF_IMPL_MASK) == ~std::uint64_t{0});

  REQUIRE(emulation.init(memory, sizeof(cublasLtEmulationDescOpaque_t)) == CUBLAS_STATUS_SUCCESS);
  CHECK(value_of<std::int32_t>(emulation, memory, CUBLASLT_EMULATION_DESC_STRATEGY) == 0);
  CHECK(value_of<std::int32_t>(emulation, memory, CUBLASLT_EMULATION_DESC_SPECIAL_VALUES_SUPPORT) == 0xFFFF);
  CHECK(value_of<std::int32_t>(emulation, memory, CUBLASLT_EMULATION_DESC_FIXEDPOINT_MANTISSA_CONTROL) == 0);
  CHECK(value_of<std::int32_t>(emulation, memory, CUBLASLT_EMULATION_DESC_FIXEDPOINT_MAX_MANTISSA_BIT_COUNT) == 0);
  CHECK(value_of<std::int32_t>(emulation, memory, CUBLASLT_EMULATION_DESC_FIXEDPOINT_MANTISSA_BIT_OFFSET) == 0);
  CHECK(value_of<int*>(emulation, memory, CUBLASLT_EMULATION_DESC_FIXEDPOINT_MANTISSA_BIT_COUNT_POINTER) == nullptr);
}

TEST_CASE("cuBLASLt stub: descriptors are counted per kind, reused by address, and refused once destroyed", "[blas]") {
  for (const KindApi& kind : kKinds) {
    INFO(kind.name);
    const StubLtDescriptorCounts before = kind.counts();
    void* d = nullptr;
    REQUIRE(kind.create(&d) == CUBLAS_STATUS_SUCCESS);
    std::uint32_t value = 0;
    const int attribute = kind.attrs[0].attribute;  // 4 bytes in every kind
    CHECK(kind.set(d, attribute, &value, 4) == CUBLAS_STATUS_SUCCESS);
    CHECK(kind.get(d, attribute, &value, 4, nullptr) == CUBLAS_STATUS_SUCCESS);
    StubLtDescriptorCounts now = kind.counts();
    CHECK(now.created == before.created + 1);
    CHECK(now.live == before.live + 1);
    CHECK(now.sets == before.sets + 1);
    CHECK(now.gets == before.gets + 1);
    CHECK(kind.destroy(d) == CUBLAS_STATUS_SUCCESS);
    now = kind.counts();
    CHECK(now.destroyed == before.destroyed + 1);
    CHECK(now.live == before.live);
    CHECK(kind.set(d, attribute, &value, 4) == CUBLAS_STATUS_INVALID_VALUE);
    CHECK(kind.get(d, attribute, &value, 4, nullptr) == CUBLAS_STATUS_INVALID_VALUE);
    CHECK(kind.destroy(d) == CUBLAS_STATUS_INVALID_VALUE);
    void* again = nullptr;
    REQUIRE(kind.create(&again) == CUBLAS_STATUS_SUCCESS);
    CHECK(again == d);  // the destroyed one's address, as the real allocator hands it out
    CHECK(kind.destroy(again) == CUBLAS_STATUS_SUCCESS);

    alignas(16) unsigned char memory[256];
    CHECK(kind.init(memory, kind.opaque_size - 1) == CUBLAS_STATUS_ALLOC_FAILED);
    CHECK(kind.init(memory, kind.opaque_size) == CUBLAS_STATUS_SUCCESS);
    CHECK(kind.counts().initialized == before.initialized + 2);
    CHECK(kind.counts().live == before.live);
    CHECK(kind.destroy(memory) == CUBLAS_STATUS_INVALID_VALUE);  // not the stub's to free
    CHECK(kind.create(nullptr) == CUBLAS_STATUS_INVALID_VALUE);
  }
}

TEST_CASE("cuBLASLt stub: handles reuse addresses under new serials, and cuBLAS handles are accepted", "[blas]") {
  const StubBlasLtCounters before = stubblaslt_counters();
  LtObjects o;  // its own handle, descriptors and preference
  cublasLtHandle_t first = nullptr, second = nullptr;
  REQUIRE(cublasLtCreate(&first) == CUBLAS_STATUS_SUCCESS);
  REQUIRE(cublasLtCreate(&second) == CUBLAS_STATUS_SUCCESS);
  const std::uint64_t serial = stubblaslt_handle_serial(first);
  CHECK(serial != 0);
  CHECK(stubblaslt_handle_serial(second) != serial);
  CHECK(stubblaslt_counters().live_handles == before.live_handles + 3);
  REQUIRE(cublasLtDestroy(first) == CUBLAS_STATUS_SUCCESS);
  CHECK(stubblaslt_handle_serial(first) == 0);
  CHECK(cublasLtDestroy(first) == CUBLAS_STATUS_NOT_INITIALIZED);
  cublasLtMatmulHeuristicResult_t results[4];
  int count = 0;
  CHECK(cublasLtMatmulAlgoGetHeuristic(first, o.desc, o.layouts[0], o.layouts[1], o.layouts[2], o.layouts[3],
                                       o.preference, 1, results, &count) == CUBLAS_STATUS_NOT_INITIALIZED);
  cublasLtHandle_t reused = nullptr;
  REQUIRE(cublasLtCreate(&reused) == CUBLAS_STATUS_SUCCESS);
  CHECK(reused == first);
  CHECK(stubblaslt_handle_serial(reused) > serial);
  cublasLtDestroy(reused);
  cublasLtDestroy(second);
  const StubBlasLtCounters after = stubblaslt_counters();
  CHECK(after.handles_created == before.handles_created + 4);
  CHECK(after.handles_destroyed == before.handles_destroyed + 3);

  cublasHandle_t blas = nullptr;
  REQUIRE(cublasCreate_v2(&blas) == CUBLAS_STATUS_SUCCESS);
  const auto as_lt = reinterpret_cast<cublasLtHandle_t>(blas);  // as PyTorch passes it
  CHECK(stubblaslt_handle_serial(as_lt) != 0);
  CHECK(stubblaslt_handle_serial(as_lt) == stubblas_handle_serial(blas));
  CHECK(cublasLtMatmulAlgoGetHeuristic(as_lt, o.desc, o.layouts[0], o.layouts[1], o.layouts[2], o.layouts[3],
                                       o.preference, 1, results, &count) == CUBLAS_STATUS_SUCCESS);
  REQUIRE(cublasDestroy_v2(blas) == CUBLAS_STATUS_SUCCESS);
  CHECK(stubblaslt_handle_serial(as_lt) == 0);
  CHECK(cublasLtMatmulAlgoGetHeuristic(as_lt, o.desc, o.layouts[0], o.layouts[1], o.layouts[2], o.layouts[3],
                                       o.preference, 1, results, &count) == CUBLAS_STATUS_NOT_INITIALIZED);
}
