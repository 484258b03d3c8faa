// Instructions and cache lines one op spends in the shim, for bench/shim/count-lines, and the
// instructions it costs the whole process, for bench/shim/count-process.
//
// Between two ops a framework runs enough of its own code and data to push the shim out of the
// caches, so what an op costs there is roughly one memory access per cache line of code and data
// it touches (pack_bench's cold rows time it; on a shared VM they move by a third from run to
// run). This program makes OPS ops of one kind, each after 8 MiB of other reads and 2 MiB of other
// code ("cold", as a framework leaves the caches) or right after the last one ("warm"), so that
// cachegrind's simulated caches see what the shim touches; count-lines sums the shim's own
// functions and takes the difference of two runs of different lengths, so that what the set-up
// and the warm-up cost cancels. The counts are deterministic: a change to the shim's layout shows
// up as a whole number of lines, and a change to its work as instructions.
//
// Kinds (the op; "_off" after it: the same op with the shim's features switched off, the A/B's
// "off", which is what the shim costs when it has nothing to do):
//   pack     a variant pack made as PyTorch makes it: create, 3 sets, finalize, destroy (the same
//            contents every time)
//   execute  the same pack executed on a handle with its own stream: a steady op, replayed as a
//            CUDA graph launch after the first three (the stub driver models capture and launch)
//   miss     as execute, but every op's pointers are new: nothing can be cached or replayed
//   bn       PyTorch's batch norm in eval: two tensor descriptors created and set, the
//            inference call (replayed after the first three), the descriptors destroyed
//   bn_call  the inference call alone, its descriptors made once (ONNX Runtime's way)
//   tensor   one tensor descriptor created, set and destroyed: what recording costs
//   matmul   a cublasLtMatmul with descriptors made once (replayed after the first three)
//   heuristic  the same matmul's cublasLtMatmulAlgoGetHeuristic (answered from the cache)
//   linear   PyTorch's Linear as cuBLASLt sees it: a matmul descriptor, three layouts and a
//            preference made, set and destroyed around the heuristic and the matmul
//   linear_stack  a layer's four Linears in turn, as PyTorch calls them (torch_linear), each with its
//            own weight, bias and sizes: every descriptor is made over its predecessor's other words
//   gemm     a cublasGemmEx on a handle with a workspace (replayed after the first three)
//   gemm_miss  as gemm, but every op's output is new: relocated (one proof, then a node update and a
//            launch each)
//   linear_moving  linear, as torch_linear calls it with one row (a decode step's Linear), its output a
//            new block every op: a relocated cublasLtMatmul whose descriptors are made for each call
// Loads that never repeat, and loads half of which do (bench/shim/count-process counts them, the
// whole process, against the same run under CUDNN_FASTPATH_DISABLE=1; "Never slower" in
// docs/design.md):
//   linear_miss  PyTorch's nn.Linear with a bias, exactly as it calls cuBLASLt, on a row count new
//            every op, its output a new block every op (as the caching allocator gives)
//   gemm_grow  a decode loop's attention scores, q times K transposed per head: a
//            cublasGemmStridedBatchedEx whose KV length (cuBLAS's m) grows by one every op
//   gemm_layers  gemm_grow's GEMM for each of a decode step's 8 layers, each with its own keys and
//            scores: a shape that comes in a burst of 8 calls, then never again
//   bn_miss  as bn, but the input's height is new every op (dynamic shapes)
//   bn_shapes_ab  the A/B of a block fed 300 shapes (gpu/pytorch's conv_bn_shapes): a batch norm of
//            the next of 300 heights, its input and output new blocks, with the features switched
//            off and on again every 160 ops (10 iterations of 16), which forgets every key and graph
//            as the A/B's blocks do; count it over a multiple of 320 ops (its "on - disabled"
//            holds the switches' forgetting, some 200 instructions an op)
//   cycle    as execute, but the ops cycle through 300 pointer sets in turn, more than the pack
//            cache (256) and a graph cache's sets hold: a conv fed 300 input shapes in turn. It
//            never settles (its caches back off and resume in turn): count it over thousands of ops
//   linear_mixed  every other op is one Linear repeated exactly (its rows and pointers the same
//            every time), those in between linear_miss's
//   gemm_mixed  every other op is gemm's cublasGemmEx (a decode step's projection), those in
//            between gemm_grow's
// An op that is "new every op" stays new for 8192 ops (the warm-up and the ops together), then the
// shapes start again from the first: by then the caches have long forgotten it.
#include <cudnn.h>
#include <dlfcn.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <cublasLt.h>
#include <cublas_api.h>

#include "bench/shim/other_code.h"
#include "shim/include/cudnn_fastpath/shim_control.h"
#include "tests/packs/pack_api.h"
#include "tests/stub/stub_cuda.h"

namespace {

constexpr std::uintptr_t kDevice = 0x7f0000000000;
const std::int64_t kUids[3] = {1, 2, 3};
void* const kWorkspace = reinterpret_cast<void*>(0x7e0000100000);

PackApi g_api = linked_pack_api();
cudnnHandle_t g_handle = nullptr;
MatmulPlan g_plan;

bool pack_op(std::uintptr_t base, bool execute) {
  void* const pointers[3] = {reinterpret_cast<void*>(kDevice + base * 0x3000), reinterpret_cast<void*>(kDevice + base * 0x3000 + 0x1000),
                             reinterpret_cast<void*>(kDevice + base * 0x3000 + 0x2000)};
  cudnnBackendDescriptor_t pack = nullptr;
  cudnnStatus_t s = cudnnBackendCreateDescriptor(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, &pack);
  if (s == 0) s = cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, 3, kUids);
  if (s == 0) s = cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, 3, pointers);
  if (s == 0) s = cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &kWorkspace);
  if (s == 0) s = cudnnBackendFinalize(pack);
  if (s == 0 && execute) s = cudnnBackendExecute(g_handle, g_plan.plan(), pack);
  cudnnBackendDestroyDescriptor(pack);
  return s == CUDNN_STATUS_SUCCESS;
}

// ---- legacy cuDNN ----
alignas(8) unsigned char g_x[64], g_y[64], g_scale[64], g_bias[64], g_mean[64], g_var[64];

bool tensor_op(int) {
  cudnnTensorDescriptor_t t = nullptr;
  const int dims[4] = {1, 8, 4, 4}, strides[4] = {128, 16, 4, 1};
  cudnnStatus_t s = cudnnCreateTensorDescriptor(&t);
  if (s == 0) s = cudnnSetTensorNdDescriptor(t, CUDNN_DATA_FLOAT, 4, dims, strides);
  cudnnDestroyTensorDescriptor(t);
  return s == CUDNN_STATUS_SUCCESS;
}

bool bn_op(int height, const void* in = g_x, void* out = g_y) {
  cudnnTensorDescriptor_t x = nullptr, w = nullptr;
  const int dims[4] = {1, 8, height, 4}, strides[4] = {32 * height, 4 * height, 4, 1}, wdims[4] = {1, 8, 1, 1},
            wstrides[4] = {8, 1, 1, 1};
  const float one = 1, zero = 0;
  cudnnStatus_t s = cudnnCreateTensorDescriptor(&x);
  if (s == 0) s = cudnnSetTensorNdDescriptor(x, CUDNN_DATA_FLOAT, 4, dims, strides);
  if (s == 0) s = cudnnCreateTensorDescriptor(&w);
  if (s == 0) s = cudnnSetTensorNdDescriptor(w, CUDNN_DATA_FLOAT, 4, wdims, wstrides);
  if (s == 0)
    s = cudnnBatchNormalizationForwardInference(g_handle, CUDNN_BATCHNORM_SPATIAL, &one, &zero, x, in, x, out, w,
                                                g_scale, g_bias, g_mean, g_var, 1e-5);
  cudnnDestroyTensorDescriptor(x);
  cudnnDestroyTensorDescriptor(w);
  return s == CUDNN_STATUS_SUCCESS;
}

// The inference call alone, on descriptors made once (ONNX Runtime's way).
cudnnTensorDescriptor_t g_bn_x = nullptr, g_bn_w = nullptr;
bool bn_call_op(int) {
  const float one = 1, zero = 0;
  if (g_bn_x == nullptr) {
    const int dims[4] = {1, 8, 4, 4}, strides[4] = {128, 16, 4, 1}, wdims[4] = {1, 8, 1, 1}, wstrides[4] = {8, 1, 1, 1};
    if (cudnnCreateTensorDescriptor(&g_bn_x) != 0 || cudnnCreateTensorDescriptor(&g_bn_w) != 0 ||
        cudnnSetTensorNdDescriptor(g_bn_x, CUDNN_DATA_FLOAT, 4, dims, strides) != 0 ||
        cudnnSetTensorNdDescriptor(g_bn_w, CUDNN_DATA_FLOAT, 4, wdims, wstrides) != 0)
      return false;
  }
  return cudnnBatchNormalizationForwardInference(g_handle, CUDNN_BATCHNORM_SPATIAL, &one, &zero, g_bn_x, g_x, g_bn_x,
                                                 g_y, g_bn_w, g_scale, g_bias, g_mean, g_var, 1e-5) == 0;
}

// ---- cuBLASLt and cuBLAS ----
cublasHandle_t g_blas = nullptr;
CUstream g_stream = nullptr;
alignas(256) unsigned char g_workspace[1 << 16];
alignas(8) unsigned char g_a[64], g_b[64], g_c[64], g_d[64];
cublasLtMatmulDesc_t g_desc = nullptr;
cublasLtMatrixLayout_t g_layouts[3] = {};
cublasLtMatmulPreference_t g_preference = nullptr;
cublasLtMatmulHeuristicResult_t g_result{};

bool make_operation(cublasLtMatmulDesc_t& desc, cublasLtMatrixLayout_t (&layouts)[3], cublasLtMatmulPreference_t& pref) {
  const cublasOperation_t transpose = CUBLAS_OP_T;
  const std::uint32_t epilogue = CUBLASLT_EPILOGUE_BIAS;
  const void* bias = g_c;
  const std::uint64_t workspace = sizeof g_workspace;
  const std::uint32_t alignment = 256;
  bool ok = cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F) == 0 &&
            cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &transpose, sizeof transpose) == 0 &&
            cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof epilogue) == 0 &&
            cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias) == 0;
  for (cublasLtMatrixLayout_t& l : layouts) ok = ok && cublasLtMatrixLayoutCreate(&l, CUDA_R_32F, 4, 4, 4) == 0;
  ok = ok && cublasLtMatmulPreferenceCreate(&pref) == 0 &&
       cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace, sizeof workspace) == 0;
  for (auto attribute : {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                         CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES})
    ok = ok && cublasLtMatmulPreferenceSetAttribute(pref, attribute, &alignment, sizeof alignment) == 0;
  return ok;
}
// In the order of PyTorch's destructors (the reverse of the creations): an allocator that gives the
// last address freed first (glibc's, the stubs') then gives each descriptor of the next Linear the
// address its twin had.
void destroy_operation(cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t (&layouts)[3], cublasLtMatmulPreference_t pref) {
  cublasLtMatmulPreferenceDestroy(pref);
  for (int i = 2; i >= 0; --i) cublasLtMatrixLayoutDestroy(layouts[i]);
  cublasLtMatmulDescDestroy(desc);
}
bool heuristic(cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t (&l)[3], cublasLtMatmulPreference_t pref,
               cublasLtMatmulHeuristicResult_t& result) {
  int returned = 0;
  return cublasLtMatmulAlgoGetHeuristic(reinterpret_cast<cublasLtHandle_t>(g_blas), desc, l[0], l[1], l[2], l[2], pref,
                                        1, &result, &returned) == 0 &&
         returned == 1;
}
bool matmul(cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t (&l)[3], const cublasLtMatmulHeuristicResult_t& result) {
  const float one = 1, zero = 0;
  return cublasLtMatmul(reinterpret_cast<cublasLtHandle_t>(g_blas), desc, &one, g_a, l[0], g_b, l[1], &zero, g_c, l[2],
                        g_d, l[2], &result.algo, g_workspace, sizeof g_workspace,
                        reinterpret_cast<cudaStream_t>(g_stream)) == 0;
}
bool linear_op(int) {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t layouts[3] = {};
  cublasLtMatmulPreference_t pref = nullptr;
  cublasLtMatmulHeuristicResult_t result{};
  const bool ok = make_operation(desc, layouts, pref) && heuristic(desc, layouts, pref, result) &&
                  matmul(desc, layouts, result);
  destroy_operation(desc, layouts, pref);
  return ok;
}
bool gemm_into(void* c) {
  const float one = 1, zero = 0;
  return cublasGemmEx(g_blas, CUBLAS_OP_N, CUBLAS_OP_N, 4, 4, 4, &one, g_a, CUDA_R_32F, 4, g_b, CUDA_R_32F, 4, &zero,
                      c, CUDA_R_32F, 4, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT) == 0;
}
bool gemm_op(int) { return gemm_into(g_c); }
// A new output for every op (up to 32768 ops and warm-up ops together).
bool gemm_miss_op(int i) {
  static std::vector<unsigned char> outputs(std::size_t{64} << 15);
  return gemm_into(&outputs[(static_cast<std::size_t>(i + 4000) & 32767) * 64]);
}

// ---- loads that never repeat ----
// Where op i stands in a cycle of `period` ops.
int place(int i, int period) { return (i % period + period) % period; }
constexpr int kShapes = 8192;  // the shapes a never-repeating kind goes through before it starts again

// PyTorch's nn.Linear with a bias, bf16, exactly as it calls cuBLASLt (at::cuda::blas::gemm_and_bias):
// out = x W^T + b column-major, so A is W transposed, B is x with its rows as n, C and D are out.
// Every descriptor is made around the call; the alignments come from the pointers, as PyTorch's do.
alignas(256) unsigned char g_weight[64], g_input[64], g_linear_bias[64], g_output[64];
alignas(256) unsigned char g_outputs[kShapes * 256];  // a new block for every row count

std::uint32_t alignment_of(const void* pointer) {
  const auto address = reinterpret_cast<std::uintptr_t>(pointer);
  std::uint32_t alignment = 1;
  while (alignment < 256 && address % (2 * alignment) == 0) alignment *= 2;
  return alignment;
}
// A Linear's own: its sizes, weight and bias.
struct LinearLayer {
  std::uint64_t in, out;
  const void* weight;
  const void* bias;
};
bool torch_linear(std::uint64_t rows, void* out, const LinearLayer& layer = {64, 64, g_weight, g_linear_bias}) {
  const std::uint64_t kIn = layer.in, kOut = layer.out;
  const cublasOperation_t transa = CUBLAS_OP_T, transb = CUBLAS_OP_N;
  const std::uint32_t epilogue = CUBLASLT_EPILOGUE_BIAS;
  const void* bias = layer.bias;
  const std::uint64_t workspace = sizeof g_workspace;
  const std::uint32_t alignments[4] = {alignment_of(layer.weight), alignment_of(g_input), alignment_of(out),
                                       alignment_of(out)};
  const cublasLtMatmulPreferenceAttributes_t alignment_attributes[4] = {
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
  const auto lt = reinterpret_cast<cublasLtHandle_t>(g_blas);
  const float one = 1, zero = 0;
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulPreference_t pref = nullptr;
  cublasLtMatmulHeuristicResult_t result{};
  int returned = 0;
  bool ok = cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F) == 0 &&
            cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &transa, sizeof transa) == 0 &&
            cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &transb, sizeof transb) == 0 &&
            cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof epilogue) == 0 &&
            cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias) == 0 &&
            cublasLtMatrixLayoutCreate(&a, CUDA_R_16BF, kIn, kOut, kIn) == 0 &&
            cublasLtMatrixLayoutCreate(&b, CUDA_R_16BF, kIn, rows, kIn) == 0 &&
            cublasLtMatrixLayoutCreate(&c, CUDA_R_16BF, kOut, rows, kOut) == 0 &&
            cublasLtMatmulPreferenceCreate(&pref) == 0 &&
            cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace,
                                                 sizeof workspace) == 0;
  for (int i = 0; i < 4; ++i)
    ok = ok && cublasLtMatmulPreferenceSetAttribute(pref, alignment_attributes[i], &alignments[i],
                                                    sizeof alignments[i]) == 0;
  ok = ok && cublasLtMatmulAlgoGetHeuristic(lt, desc, a, b, c, c, pref, 1, &result, &returned) == 0 && returned == 1 &&
       cublasLtMatmul(lt, desc, &one, layer.weight, a, g_input, b, &zero, out, c, out, c, &result.algo, g_workspace,
                      sizeof g_workspace, reinterpret_cast<cudaStream_t>(g_stream)) == 0;
  cublasLtMatmulPreferenceDestroy(pref);  // in the order of PyTorch's destructors
  cublasLtMatrixLayoutDestroy(c);
  cublasLtMatrixLayoutDestroy(b);
  cublasLtMatrixLayoutDestroy(a);
  cublasLtMatmulDescDestroy(desc);
  return ok;
}
bool linear_miss_op(int i) { return torch_linear(1 + place(i, kShapes), &g_outputs[place(i, kShapes) * 256]); }
bool linear_moving_op(int i) { return torch_linear(1, &g_outputs[place(i + 4000, kShapes) * 256]); }

// A layer's four Linears in turn, each with its own weight, bias and output: two square ones and an
// MLP's up and down projections. Each of a Linear's descriptors is made at the address the last
// Linear's twin left, over other words (another bias, other sizes).
alignas(256) unsigned char g_layer_weights[4][256], g_layer_biases[4][256], g_layer_outputs[4][256];
bool linear_stack_op(int i) {
  static const std::uint64_t kSizes[4][2] = {{64, 64}, {64, 256}, {256, 64}, {64, 64}};
  const int l = place(i, 4);
  return torch_linear(16, g_layer_outputs[l], {kSizes[l][0], kSizes[l][1], g_layer_weights[l], g_layer_biases[l]});
}

// A decode step's attention scores, q K^T for 12 heads, as PyTorch's bmm calls cuBLAS on a static KV
// cache of kShapes positions (column-major: m is the KV length, n the query's one row, k the head's 64).
alignas(256) unsigned char g_keys[64], g_query[64], g_scores[64];
bool scores(int length, const void* keys = g_keys, void* out = g_scores) {
  const float one = 1, zero = 0;
  return cublasGemmStridedBatchedEx(g_blas, CUBLAS_OP_T, CUBLAS_OP_N, length, 1, 64, &one, keys, CUDA_R_16BF, 64,
                                    64LL * kShapes, g_query, CUDA_R_16BF, 64, 64, &zero, out, CUDA_R_16BF, length,
                                    length, 12, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT) == 0;
}
bool gemm_grow_op(int i) { return scores(1 + place(i, kShapes)); }
// The same for each of a decode step's 8 layers, each with its own keys and scores: a shape that
// comes 8 times in a row, each call's tensors other than the last's, then never again.
alignas(256) unsigned char g_layer_keys[8][256], g_layer_scores[8][256];
bool gemm_layers_op(int i) {
  bool ok = true;
  for (int l = 0; l < 8; ++l) ok = ok && scores(1 + place(i, kShapes), g_layer_keys[l], g_layer_scores[l]);
  return ok;
}

// The A/B of a block fed 300 shapes in turn (gpu/pytorch's conv_bn_shapes): each op a batch norm
// of the next of 300 heights, its input and output new blocks, the features switched on and off
// every 160 ops (a block of 10 iterations of 16), as the A/B's blocks do.
bool bn_shapes_ab_op(int i) {
  static const auto set_features =
      reinterpret_cast<unsigned (*)(unsigned)>(dlsym(RTLD_DEFAULT, "cudnn_fastpath_set_features"));
  if (set_features != nullptr && place(i, 160) == 0) set_features(place(i, 320) == 0 ? 31u : 0u);
  const std::uintptr_t block = kDevice + (std::uintptr_t{1} << 36) + static_cast<std::uintptr_t>(place(i, 4096)) * 0x40000;
  return bn_op(1 + place(i, 300), reinterpret_cast<const void*>(block), reinterpret_cast<void*>(block + 0x20000));
}

// An op, and the ops it needs before it is in its steady state (caches filled, graphs captured,
// or, for a load that never repeats, the caches backed off). Its argument is its place in the run:
// -warmup at the first warm-up op, 0 at the first op counted.
struct Kind {
  const char* name;
  bool (*op)(int i);
  int warmup;
};
const Kind kKinds[] = {
    {"pack", [](int) { return pack_op(1, false); }, 4},
    {"execute", [](int) { return pack_op(1, true); }, 4},
    {"miss", [](int i) { return pack_op(static_cast<std::uintptr_t>(i) + 1000000, true); }, 3000},
    {"bn", [](int) { return bn_op(4); }, 4},
    {"bn_call", bn_call_op, 4},
    {"tensor", tensor_op, 4},
    {"matmul", [](int) { return matmul(g_desc, g_layouts, g_result); }, 4},
    {"heuristic", [](int) { return heuristic(g_desc, g_layouts, g_preference, g_result); }, 4},
    {"linear", linear_op, 4},
    {"linear_stack", linear_stack_op, 16},
    {"gemm", gemm_op, 4},
    {"gemm_miss", gemm_miss_op, 3000},
    {"linear_moving", linear_moving_op, 3000},
    {"linear_miss", linear_miss_op, 6000},
    {"gemm_grow", gemm_grow_op, 6000},
    {"gemm_layers", gemm_layers_op, 1000},
    {"bn_miss", [](int i) { return bn_op(1 + place(i, kShapes)); }, 6000},
    {"bn_shapes_ab", bn_shapes_ab_op, 6000},
    {"cycle", [](int i) { return pack_op(static_cast<std::uintptr_t>(place(i, 300)) + 2000000, true); }, 6000},
    {"linear_mixed", [](int i) { return i % 2 == 0 ? torch_linear(64, g_output) : linear_miss_op(i); }, 6000},
    {"gemm_mixed", [](int i) { return i % 2 == 0 ? gemm_op(i) : gemm_grow_op(i); }, 6000},
};

// The shim's counters so far (they count under CUDNN_FASTPATH_STATS=1 alone).
bool read_counters(cudnn_fastpath_stats_t& stats) {
  const auto read = reinterpret_cast<int (*)(cudnn_fastpath_stats_t*, std::size_t)>(
      dlsym(RTLD_DEFAULT, "cudnn_fastpath_stats"));
  stats = {};
  return read != nullptr && read(&stats, sizeof stats) == 0 && stats.counting == 1;
}

}  // namespace

// usage: op_lines OPS KIND[_off] [cold|warm] [counters]
// "counters": each of the shim's counters that moved during the OPS ops (after the warm-up), as
// "counter NAME COUNT" lines; the shim counts only under CUDNN_FASTPATH_STATS=1.
int main(int argc, char** argv) {
  const int ops = argc > 1 ? std::atoi(argv[1]) : 300;
  std::string kind = argc > 2 ? argv[2] : "pack";
  const bool cold = argc <= 3 || std::strcmp(argv[3], "warm") != 0;
  const bool counters = argc > 4 && std::strcmp(argv[4], "counters") == 0;
  const bool off = kind.size() > 4 && kind.compare(kind.size() - 4, 4, "_off") == 0;
  if (off) kind.resize(kind.size() - 4);
  const Kind* chosen = nullptr;
  for (const Kind& k : kKinds)
    if (kind == k.name) chosen = &k;
  if (ops < 1 || chosen == nullptr) {
    std::fprintf(stderr, "usage: op_lines OPS KIND[_off] [cold|warm] [counters] (the kinds: op_lines.cpp)\n");
    return 2;
  }
  stubcuda_add_device_memory(kDevice, std::size_t{1} << 40);
  CUstream stream = nullptr;
  if (cudnnCreate(&g_handle) != 0 || cuStreamCreate(&stream, 0) != CUDA_SUCCESS ||
      cudnnSetStream(g_handle, reinterpret_cast<cudaStream_t>(stream)) != 0 ||
      g_plan.build(g_api, g_handle, kUids) != 0 || cublasCreate_v2(&g_blas) != 0 ||
      cublasSetStream_v2(g_blas, reinterpret_cast<cudaStream_t>(stream)) != 0 ||
      cublasSetWorkspace_v2(g_blas, g_workspace, sizeof g_workspace) != 0 ||
      !make_operation(g_desc, g_layouts, g_preference) || !heuristic(g_desc, g_layouts, g_preference, g_result)) {
    std::fprintf(stderr, "op_lines: cannot set up the handles, plan and descriptors\n");
    return 1;
  }
  g_stream = stream;
  if (off) {
    const auto set_features = reinterpret_cast<unsigned (*)(unsigned)>(dlsym(RTLD_DEFAULT, "cudnn_fastpath_set_features"));
    if (set_features == nullptr || set_features(0) != 0) {
      std::fprintf(stderr, "op_lines: cannot switch the shim's features off\n");
      return 1;
    }
  }
  const cudnn_fastpath::bench::OtherCode other_code = cold ? cudnn_fastpath::bench::make_other_code() : nullptr;
  std::vector<std::uint64_t> other_data(cold ? std::size_t{1} << 20 : 0);
  std::uint64_t sink = 0;
  for (int i = -chosen->warmup; i < 0; ++i)
    if (!chosen->op(i)) {
      std::fprintf(stderr, "op_lines: an op failed\n");
      return 1;
    }
  cudnn_fastpath_stats_t before, after;
  if (counters && !read_counters(before)) {
    std::fprintf(stderr, "op_lines: the shim counts nothing (CUDNN_FASTPATH_STATS=1 turns its counters on)\n");
    return 1;
  }
  for (int i = 0; i < ops; ++i) {
    for (std::size_t k = 0; k < other_data.size(); k += 8) sink += other_data[k]++;
    if (other_code) other_code();
    if (!chosen->op(i)) return 1;
  }
  std::printf("ops %d (%s%s)\n", ops, cold ? "cold" : "warm", sink == 0 ? "" : "");
  if (counters && read_counters(after)) {
#define OP_LINES_PRINT_MOVED(name, group, label, what) \
  if (after.name != before.name)                        \
    std::printf("counter %s %llu\n", #name, static_cast<unsigned long long>(after.name - before.name));
    CUDNN_FASTPATH_COUNTERS(OP_LINES_PRINT_MOVED)
#undef OP_LINES_PRINT_MOVED
  }
  return 0;
}
