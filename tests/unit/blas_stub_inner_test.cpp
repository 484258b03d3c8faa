// Reference mode (calls neither counted, recorded nor captured), and the cuBLASLt matmul a GEMM
// runs from inside libcublas with stubblas_inner_lt_calls on.
//
// This program interposes cublasLtMatmul, cublasLtMatmulDescCreate and cublasLtMatrixLayoutCreate
// (its definitions come first in the global scope, as a preloaded shim's would) and forwards each
// to the stub with RTLD_NEXT, noting the object its caller's return address lies in: a call that
// reached the stub through libcublas's PLT, and not as a tail call, is seen from libcublas.so.13.
#include <dlfcn.h>

#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <string>

#include "tests/unit/blas_stub_support.h"

using namespace blastest;

namespace {

struct Callers {
  int from_cublas = 0;   // calls whose caller lies in libcublas.so.13
  int from_elsewhere = 0;
};
thread_local Callers t_matmul, t_desc_create, t_layout_create;

void note(Callers& callers, void* return_address) {
  Dl_info info{};
  const bool found = dladdr(return_address, &info) != 0 && info.dli_fname != nullptr;
  const std::string name = found ? info.dli_fname : "";
  const bool cublas = name.size() >= 15 && name.compare(name.size() - 15, 15, "libcublas.so.13") == 0;
  ++(cublas ? callers.from_cublas : callers.from_elsewhere);
}

template <typename F>
F next(const char* name) {
  void* f = dlsym(RTLD_NEXT, name);
  REQUIRE(f != nullptr);
  return reinterpret_cast<F>(f);
}

// Turns inner calls on for a scope.
struct InnerCalls {
  InnerCalls() { stubblas_inner_lt_calls(1); }
  ~InnerCalls() { stubblas_inner_lt_calls(0); }
};

}  // namespace

extern "C" {

cublasStatus_t CUBLASWINAPI cublasLtMatmul(cublasLtHandle_t lightHandle, cublasLtMatmulDesc_t computeDesc,
                                           const void* alpha, const void* A, cublasLtMatrixLayout_t Adesc,
                                           const void* B, cublasLtMatrixLayout_t Bdesc, const void* beta,
                                           const void* C, cublasLtMatrixLayout_t Cdesc, void* D,
                                           cublasLtMatrixLayout_t Ddesc, const cublasLtMatmulAlgo_t* algo,
                                           void* workspace, size_t workspaceSizeInBytes, cudaStream_t stream) {
  note(t_matmul, __builtin_return_address(0));
  static const auto real = next<decltype(&cublasLtMatmul)>("cublasLtMatmul");
  return real(lightHandle, computeDesc, alpha, A, Adesc, B, Bdesc, beta, C, Cdesc, D, Ddesc, algo, workspace,
              workspaceSizeInBytes, stream);
}

cublasStatus_t CUBLASWINAPI cublasLtMatmulDescCreate(cublasLtMatmulDesc_t* matmulDesc, cublasComputeType_t computeType,
                                                     cudaDataType_t scaleType) {
  note(t_desc_create, __builtin_return_address(0));
  static const auto real = next<decltype(&cublasLtMatmulDescCreate)>("cublasLtMatmulDescCreate");
  return real(matmulDesc, computeType, scaleType);
}

cublasStatus_t CUBLASWINAPI cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t* matLayout, cudaDataType type,
                                                       uint64_t rows, uint64_t cols, int64_t ld) {
  note(t_layout_create, __builtin_return_address(0));
  static const auto real = next<decltype(&cublasLtMatrixLayoutCreate)>("cublasLtMatrixLayoutCreate");
  return real(matLayout, type, rows, cols, ld);
}

}  // extern "C"

TEST_CASE("cuBLAS stub: with inner calls on, a GEMM runs cublasLtMatmul from inside libcublas, through its PLT", "[blas]") {
  cublasHandle_t handle = nullptr;
  REQUIRE(cublasCreate_v2(&handle) == CUBLAS_STATUS_SUCCESS);
  std::uint64_t a[2] = {0xA0, 0xA1}, b[2] = {0xB0, 0xB1}, c[2] = {0xC0, 0xC1};
  Scalar alpha{2.0f}, beta{0.0f};
  const GemmCall call{handle, STUBBLAS_GEMM_STRIDED_BATCHED_EX, CUBLAS_OP_T, CUBLAS_OP_N, 64, 32, 16, &alpha, a,
                      CUDA_R_16BF, 16, 1024, b, CUDA_R_16BF, 16, 512, &beta, c, CUDA_R_32F, 64, 2048, 3,
                      CUBLAS_COMPUTE_32F_FAST_16BF, CUBLAS_GEMM_DEFAULT};
  t_matmul = t_desc_create = t_layout_create = Callers{};

  // Off (the default): the GEMM alone.
  StubBlasCounters blas = stubblas_counters();
  StubBlasLtCounters lt = stubblaslt_counters();
  const std::uint64_t alone = call.run();
  CHECK(stubblas_counters().inner_lt_calls == blas.inner_lt_calls);
  CHECK(stubblaslt_counters().matmul_calls == lt.matmul_calls);
  CHECK(t_matmul.from_cublas == 0);

  InnerCalls on;
  blas = stubblas_counters();
  lt = stubblaslt_counters();
  CHECK(call.run() == alone);  // C is the GEMM's own digest still
  StubBlasCounters blas_now = stubblas_counters();
  StubBlasLtCounters lt_now = stubblaslt_counters();
  CHECK(blas_now.inner_lt_calls == blas.inner_lt_calls + 1);
  CHECK(blas_now.inner_lt_failures == blas.inner_lt_failures);
  CHECK(lt_now.matmul_calls == lt.matmul_calls + 1);
  CHECK(lt_now.matmul_direct == lt.matmul_direct + 1);
  CHECK(lt_now.matmul_desc.created == lt.matmul_desc.created + 1);
  CHECK(lt_now.matmul_desc.destroyed == lt.matmul_desc.destroyed + 1);
  CHECK(lt_now.matmul_desc.live == lt.matmul_desc.live);
  CHECK(lt_now.layout.created == lt.layout.created + 4);
  CHECK(lt_now.layout.live == lt.layout.live);
  CHECK(t_matmul.from_cublas == 1);
  CHECK(t_matmul.from_elsewhere == 0);
  CHECK(t_desc_create.from_cublas == 1);
  CHECK(t_layout_create.from_cublas == 4);

  // What cuBLASLt was asked: the GEMM itself, on the cuBLAS handle.
  const StubLtMatmulRun inner = stubblaslt_thread_last_matmul();
  CHECK(inner.blob.handle_serial == stubblas_handle_serial(handle));
  CHECK(inner.blob.desc.compute_type == CUBLAS_COMPUTE_32F_FAST_16BF);
  CHECK(inner.blob.desc.scale_type == CUDA_R_32F);
  CHECK(inner.blob.desc.transa == CUBLAS_OP_T);
  CHECK(inner.blob.desc.transb == CUBLAS_OP_N);
  CHECK(inner.blob.layouts[0].type == CUDA_R_16BF);
  CHECK(inner.blob.layouts[0].rows == 16);  // A transposed: k x m
  CHECK(inner.blob.layouts[0].cols == 64);
  CHECK(inner.blob.layouts[1].rows == 16);
  CHECK(inner.blob.layouts[1].cols == 32);
  CHECK(inner.blob.layouts[2].batch_count == 3);
  CHECK(inner.blob.layouts[2].strided_batch_offset == 2048);
  CHECK(inner.blob.a == a);
  CHECK(inner.blob.c == c);
  CHECK(inner.blob.d != c);  // a scratch buffer of the handle's
  CHECK(inner.blob.alpha.kind == STUBBLAS_SCALAR_HOST);
  CHECK(std::memcmp(inner.blob.alpha.bytes, alpha.bytes, 4) == 0);

  // The test's own call is seen from here, not from libcublas.
  LtObjects o;
  std::uint64_t d[2] = {};
  const MatmulCall own{o.handle, o.desc, &alpha, a, o.layouts[0], b, o.layouts[1], &beta, c, o.layouts[2], d,
                       o.layouts[3], nullptr, nullptr, 0, nullptr};
  REQUIRE(own.call() == CUBLAS_STATUS_SUCCESS);
  CHECK(t_matmul.from_elsewhere == 1);
  CHECK(t_matmul.from_cublas == 1);

  // Captured with the GEMM, replayed with it; in reference mode, not counted.
  Capture capture;
  REQUIRE(cublasSetStream_v2(handle, capture.runtime_stream()) == CUBLAS_STATUS_SUCCESS);
  lt = stubblaslt_counters();
  blas = stubblas_counters();
  capture.begin();
  REQUIRE(call.call() == CUBLAS_STATUS_SUCCESS);
  capture.end();
  capture.launch();
  lt_now = stubblaslt_counters();
  blas_now = stubblas_counters();
  CHECK(lt_now.matmul_captured == lt.matmul_captured + 1);
  CHECK(lt_now.matmul_replays == lt.matmul_replays + 1);
  CHECK(blas_now.gemm_replays == blas.gemm_replays + 1);
  call.reference();
  CHECK(stubblas_counters().inner_lt_calls == blas_now.inner_lt_calls);
  CHECK(stubblaslt_counters().matmul_calls == lt_now.matmul_calls);
  CHECK(t_matmul.from_cublas == 3);  // the captured one and the reference one
  cublasDestroy_v2(handle);
}

TEST_CASE("cuBLAS and cuBLASLt stubs: reference calls are neither counted nor recorded, and never captured", "[blas]") {
  LtObjects o;
  cublasHandle_t handle = nullptr;
  REQUIRE(cublasCreate_v2(&handle) == CUBLAS_STATUS_SUCCESS);
  std::uint64_t a[2] = {0xA0, 0xA1}, b[2] = {0xB0, 0xB1}, c[2] = {0xC0, 0xC1}, d[2] = {};
  std::uint64_t lt_c[2] = {0xC0, 0xC1};  // the GEMM's C changes at each call
  Scalar alpha{1.0f}, beta{1.0f};
  Capture capture;
  REQUIRE(cublasSetStream_v2(handle, capture.runtime_stream()) == CUBLAS_STATUS_SUCCESS);
  const MatmulCall matmul{o.handle, o.desc, &alpha, a, o.layouts[0], b, o.layouts[1], &beta, lt_c, o.layouts[2], d,
                          o.layouts[3], nullptr, nullptr, 0, capture.runtime_stream()};
  GemmCall gemm{handle, STUBBLAS_GEMM_EX, CUBLAS_OP_N, CUBLAS_OP_N, 8, 8, 8, &alpha, a, CUDA_R_32F, 8, 0, b,
                CUDA_R_32F, 8, 0, &beta, c, CUDA_R_32F, 8, 0, 1, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT};
  const std::uint64_t matmul_direct = matmul.run(), gemm_direct = gemm.run();  // the stream is not capturing yet
  const StubLtMatmulRun last_matmul = stubblaslt_thread_last_matmul();
  const StubBlasGemmRun last_gemm = stubblas_thread_last_gemm();
  const StubBlasLtCounters lt = stubblaslt_counters();
  const StubBlasCounters blas = stubblas_counters();

  capture.begin();
  CHECK(stubblas_reference_calls(1) == 0);
  CHECK(stubblas_reference_calls_on() == 1);
  cublasLtMatmulHeuristicResult_t results[4];
  int count = 0;
  CHECK(o.heuristic(results, &count) == CUBLAS_STATUS_SUCCESS);
  CHECK(matmul.run() == matmul_direct);  // run now, although the stream captures
  for (StubBlasGemmEntry entry : {STUBBLAS_GEMM_EX, STUBBLAS_GEMM_EX_64, STUBBLAS_GEMM_STRIDED_BATCHED_EX,
                                  STUBBLAS_GEMM_STRIDED_BATCHED_EX_64}) {
    gemm.entry = entry;
    CHECK(gemm.run() != 0x0C0C0C0C);
  }
  CHECK(stubblas_reference_calls(0) == 1);
  capture.end();
  gemm.entry = STUBBLAS_GEMM_EX;
  CHECK(gemm.reference() == gemm_direct);

  const StubBlasLtCounters lt_now = stubblaslt_counters();
  const StubBlasCounters blas_now = stubblas_counters();
  CHECK(lt_now.heuristic_calls == lt.heuristic_calls);
  CHECK(lt_now.matmul_calls == lt.matmul_calls);
  CHECK(lt_now.matmul_direct == lt.matmul_direct);
  CHECK(lt_now.matmul_captured == lt.matmul_captured);
  CHECK(blas_now.gemm_calls == blas.gemm_calls);
  CHECK(blas_now.gemm_direct == blas.gemm_direct);
  CHECK(blas_now.gemm_captured == blas.gemm_captured);
  CHECK(blas_now.allocations_in_capture == blas.allocations_in_capture);
  CHECK(stubblaslt_thread_last_matmul().digest == last_matmul.digest);
  CHECK(stubblas_thread_last_gemm().digest == last_gemm.digest);
  CHECK(stubblas_thread_last_gemm().blob.entry == STUBBLAS_GEMM_EX);
  capture.launch();  // the capture recorded nothing
  CHECK(stubblaslt_counters().matmul_replays == lt.matmul_replays);
  CHECK(stubblas_counters().gemm_replays == blas.gemm_replays);

  // Off again: counted.
  CHECK(o.heuristic(results, &count) == CUBLAS_STATUS_SUCCESS);
  CHECK(stubblaslt_counters().heuristic_calls == lt.heuristic_calls + 1);
  cublasDestroy_v2(handle);
}
