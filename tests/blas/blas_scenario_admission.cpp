// Cases of the admission rule (replay/admission.h): loads whose calls never repeat, or repeat too
// seldom to repay a capture, and what comes back after them.
#include "tests/blas/blas_scenario.h"

namespace blas_scenario {
namespace {

// A Linear as PyTorch makes it: a matmul descriptor, three layouts and a preference made and set
// around the heuristic and the matmul, then destroyed. `rows`: the batch's row count; A transposed
// (TRANSA set) unless `transpose_a` is false (TRANSA not set: cuBLASLt's default, not transposed);
// `bias`, when given, added by the epilogue.
void pytorch_linear(const LtObjects& o, std::uint64_t rows, const Scalar& alpha, const Scalar& beta, Buffer& a,
                    Buffer& b, Buffer& c, Buffer& d, Counts& counts, bool transpose_a = true,
                    const void* bias = nullptr) {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t layouts[4] = {};
  cublasLtMatmulPreference_t preference = nullptr;
  must(g_api.cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F), "cublasLtMatmulDescCreate");
  const cublasOperation_t transpose = CUBLAS_OP_T;
  if (transpose_a)
    must(g_api.cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &transpose, sizeof transpose),
         "transa");
  if (bias != nullptr) {
    const cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_BIAS;
    must(g_api.cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof epilogue),
         "epilogue");
    must(g_api.cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias), "bias");
  }
  const std::uint64_t shapes[4][2] = {{16, rows}, {16, 32}, {rows, 32}, {rows, 32}};
  for (int i = 0; i < 4; ++i)
    must(g_api.cublasLtMatrixLayoutCreate(&layouts[i], CUDA_R_32F, shapes[i][0], shapes[i][1],
                                          static_cast<std::int64_t>(shapes[i][0])),
         "cublasLtMatrixLayoutCreate");
  must(g_api.cublasLtMatmulPreferenceCreate(&preference), "cublasLtMatmulPreferenceCreate");
  const std::uint64_t workspace = 1 << 20;
  must(g_api.cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace,
                                                  sizeof workspace),
       "the preference's workspace");
  cublasLtMatmulHeuristicResult_t result{};
  int returned = 0;
  if (g_api.cublasLtMatmulAlgoGetHeuristic(o.handle, desc, layouts[0], layouts[1], layouts[2], layouts[3], preference,
                                           1, &result, &returned) != CUBLAS_STATUS_SUCCESS)
    ++counts.failures;
  Matmul m = matmul_of(o, alpha, beta, a, b, c, d);
  m.desc = desc;
  m.a_desc = layouts[0], m.b_desc = layouts[1], m.c_desc = layouts[2], m.d_desc = layouts[3];
  checked(m, counts);
  // Destroyed as PyTorch's destructors do, the last made first: the next Linear's objects come back
  // at the same addresses in the same places (the allocator's last freed first).
  g_api.cublasLtMatmulPreferenceDestroy(preference);
  for (int i = 3; i >= 0; --i) g_api.cublasLtMatrixLayoutDestroy(layouts[i]);
  g_api.cublasLtMatmulDescDestroy(desc);
}

}  // namespace

// Every other call repeats (the same objects and pointers each time) and the calls between never
// do (a new output every time): the never-repeating half must not keep the repeating half from
// being replayed. A matmul on objects made once, then a GEMM.
int mixed() {
  constexpr int kCalls = 3000;
  Counts counts;
  LtObjects o;
  o.open();
  Scalar alpha{1.5f}, beta{0.25f};
  Buffer a{0xA0}, b{0xB0}, c{0xC0}, steady_out;
  std::vector<Buffer> outputs(kCalls);
  const Matmul steady = matmul_of(o, alpha, beta, a, b, c, steady_out);
  Matmul fresh = steady;
  print("calls", kCalls);
  Snapshot before = Snapshot::now();
  for (int i = 0; i < kCalls; ++i) {
    checked(steady, counts);
    fresh.d = outputs[i].get();
    checked(fresh, counts);
  }
  print_since(before, "matmul.");

  BlasHandle h;
  h.open();
  Gemm g = gemm_of(h.handle, alpha, beta, a, b, steady_out);
  const Gemm steady_gemm = g;
  before = Snapshot::now();
  for (int i = 0; i < kCalls; ++i) {
    checked(steady_gemm, counts);
    g.c = outputs[i].get();
    checked(g, counts);
  }
  print_since(before, "gemm.");
  print_counts(counts);
  return 0;
}

// Each GEMM is made four times and never again (a new output each): its graph, captured at the
// third, is launched once, fewer times than a capture costs (capture_cost, shim_control.h), so
// every capture is a waste and the family stops capturing.
int capture_cost() {
  constexpr int kKeys = 6000, kRepeats = 4;
  Counts counts;
  BlasHandle h;
  h.open();
  Scalar alpha{1.0f}, beta{0.0f};
  Buffer a{0xA0}, b{0xB0};
  std::vector<Buffer> outputs(kKeys);
  Gemm g = gemm_of(h.handle, alpha, beta, a, b, outputs[0]);
  print("keys", kKeys);
  const Snapshot before = Snapshot::now();
  for (int key = 0; key < kKeys; ++key) {
    g.c = outputs[key].get();
    for (int r = 0; r < kRepeats; ++r) checked(g, counts);
  }
  print_since(before, "gemm.");
  print_counts(counts);
  return 0;
}

// A matmul on descriptors made once is replayed; then a stretch of PyTorch-style Linears whose row
// count is new every call makes the matmul's and the heuristic's caches back off, and the thread
// stops recording cuBLASLt's descriptors. A layout of the first matmul set meanwhile must not leave
// a stale record: once a steady PyTorch-style Linear has brought the caches back, the first
// matmul's calls (its graph of the old rows still cached) must run directly or be captured anew,
// never launched with the old rows.
int records_back_off() {
  constexpr int kMisses = 3000, kSteady = 12000, kLast = 100, kAfter = 300;
  Counts counts;
  LtObjects o;
  o.open();
  Scalar alpha{1.5f}, beta{0.25f};
  Buffer a{0xA0}, b{0xB0}, c{0xC0}, d;
  const Matmul kept = matmul_of(o, alpha, beta, a, b, c, d);
  Snapshot before = Snapshot::now();
  for (int i = 0; i < 10; ++i) checked(kept, counts);
  print_since(before, "kept.");

  std::vector<Buffer> outputs(kMisses);
  before = Snapshot::now();
  for (int i = 0; i < kMisses; ++i) pytorch_linear(o, 64 + i, alpha, beta, a, b, c, outputs[i], counts);
  print_since(before, "misses.");
  const std::uint64_t rows = 48;  // the first matmul's C and D, set while the thread records nothing
  must(g_api.cublasLtMatrixLayoutSetAttribute(o.layouts[3], CUBLASLT_MATRIX_LAYOUT_ROWS, &rows, sizeof rows), "rows");
  must(g_api.cublasLtMatrixLayoutSetAttribute(o.layouts[2], CUBLASLT_MATRIX_LAYOUT_ROWS, &rows, sizeof rows), "rows");

  Buffer out;
  for (int i = 0; i < kSteady; ++i) {
    if (i == kSteady - kLast) before = Snapshot::now();
    pytorch_linear(o, 64, alpha, beta, a, b, c, out, counts);
  }
  print("last_calls", kLast);
  print_since(before, "last.");
  before = Snapshot::now();
  for (int i = 0; i < kAfter; ++i) checked(kept, counts);
  print_since(before, "after.");
  print_counts(counts);
  return 0;
}

// PyTorch-style Linears made for each call in blocks of 8 alike: A transposed in every other block,
// and the row count one of three in turn. Each descriptor is made at the address its twin just
// left, over that twin's words (the registry's slot), which name it without a look at its words
// when the record is its twin's (record_names.h). A block's first matmul descriptor writes only
// values its slot already holds (the TRANSA word keeps the transposed block's value across the
// untransposed one) and differs from its twin only in which attributes were set; its layouts set
// the same attributes to other rows. Each must be keyed as itself, never as its twin.
int made_again() {
  constexpr int kBlocks = 6, kBlock = 8;
  Counts counts;
  LtObjects o;
  o.open();
  Scalar alpha{1.5f}, beta{0.25f};
  Buffer a{0xA0}, b{0xB0}, c{0xC0}, d;
  const Snapshot before = Snapshot::now();
  for (int i = 0; i < kBlocks * kBlock; ++i) {
    const int block = i / kBlock;
    pytorch_linear(o, 64 + 16 * (block % 3), alpha, beta, a, b, c, d, counts, block % 2 == 0);
  }
  print_since(before, "");
  print("calls", kBlocks * kBlock);
  print_counts(counts);
  return 0;
}

// PyTorch-style Linears alike but for their bias, one of two in turn (a network's Linears of one
// size): each matmul descriptor is made over its twin's words, differs only in its bias pointer,
// which no record's name holds (blas.h), and so is kept and named as its twin; the bias must still
// be its own in every key, the thread's last key's words taken again included.
int made_again_bias() {
  constexpr int kCalls = 48;
  Counts counts;
  LtObjects o;
  o.open();
  Scalar alpha{1.5f}, beta{0.25f};
  Buffer a{0xA0}, b{0xB0}, c{0xC0}, d, bias[2] = {Buffer{0x0B}, Buffer{0x1B}};
  const Snapshot before = Snapshot::now();
  for (int i = 0; i < kCalls; ++i) pytorch_linear(o, 64, alpha, beta, a, b, c, d, counts, true, bias[i % 2].get());
  print_since(before, "");
  print("calls", kCalls);
  print_counts(counts);
  return 0;
}

}  // namespace blas_scenario
