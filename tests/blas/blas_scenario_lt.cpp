// The blas scenario's cuBLASLt matmul cases (blas_scenario.h), and the steady case of each family.
#include <vector>

#include "tests/blas/blas_scenario.h"

namespace blas_scenario {

namespace {

template <typename T>
void set_desc(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attribute, T value, const BlasApi& api = g_api) {
  must(api.cublasLtMatmulDescSetAttribute(desc, attribute, &value, sizeof value), "a matmul descriptor attribute");
}
template <typename T>
void set_layout(cublasLtMatrixLayout_t layout, cublasLtMatrixLayoutAttribute_t attribute, T value,
                const BlasApi& api = g_api) {
  must(api.cublasLtMatrixLayoutSetAttribute(layout, attribute, &value, sizeof value), "a layout attribute");
}
template <typename T>
void set_emulation(cublasLtEmulationDesc_t emulation, cublasLtEmulationDescAttributes_t attribute, T value,
                   const BlasApi& api = g_api) {
  must(api.cublasLtEmulationDescSetAttribute(emulation, attribute, &value, sizeof value), "an emulation attribute");
}

// The heuristic's answer for `o` (through `api`; g_real in reference mode: the stub's own answer).
struct Answer {
  cublasStatus_t status;
  int returned;
  cublasLtMatmulHeuristicResult_t results[8];
};
Answer ask(const BlasApi& api, const LtObjects& o, int requested) {
  Answer a;
  std::memset(&a, 0, sizeof a);
  a.status = api.cublasLtMatmulAlgoGetHeuristic(o.handle, o.desc, o.layouts[0], o.layouts[1], o.layouts[2],
                                                o.layouts[3], o.preference, requested, a.results, &a.returned);
  return a;
}
Answer reference_answer(const LtObjects& o, int requested) {
  g_stub.stubblas_reference_calls(1);
  const Answer a = ask(g_real, o, requested);
  g_stub.stubblas_reference_calls(0);
  return a;
}
bool same(const Answer& x, const Answer& y) {
  return x.status == y.status && x.returned == y.returned && x.returned >= 0 && x.returned <= 8 &&
         std::memcmp(x.results, y.results, sizeof x.results[0] * static_cast<std::size_t>(x.returned)) == 0;
}

}  // namespace

// 10 steady matmuls, 10 steady GEMMs, 5 identical heuristic queries.
int steady() {
  LtObjects o;
  o.open();
  BlasHandle h;
  h.open();
  const std::uint64_t streams_before = stubcuda_graph_counters().streams_created;
  const Scalar alpha{1.5f}, beta{0.25f};
  Buffer a{0xA0}, b{0xB0}, c{0xC0}, d, c2{0xC2};
  const Matmul m = matmul_of(o, alpha, beta, a, b, c, d);
  Counts counts;
  Snapshot before = Snapshot::now();
  for (int i = 0; i < 10; ++i) checked(m, counts);
  print_since(before, "matmul.");

  const Gemm g = gemm_of(h.handle, alpha, beta, a, b, c2);
  before = Snapshot::now();
  for (int i = 0; i < 10; ++i) checked(g, counts);
  print_since(before, "gemm.");
  cudaStream_t held = nullptr;
  must(g_stub.cublasGetStream_v2(h.handle, &held), "cublasGetStream_v2");
  print("gemm.handle_holds_program_stream", held == h.runtime_stream());

  before = Snapshot::now();
  for (int i = 0; i < 5; ++i)
    if (!same(ask(g_api, o, 3), reference_answer(o, 3))) ++counts.mismatches;
  print_since(before, "heuristic.");
  // The shim's capture streams: one for the thread (in the one context), both families.
  print("private_streams", static_cast<long long>(stubcuda_graph_counters().streams_created - streams_before));
  // The load mode's premise: the stubs are in the global scope only when linked.
  print("stubs_in_global_scope", glibc_dlsym(RTLD_DEFAULT, "stubblaslt_counters") != nullptr);
  print_counts(counts);
  return 0;
}

// Every part of a matmul's key changed in turn: descriptor and layout attributes, the scaling
// factors, the pointers, the workspace, the algo, the handle; and the stream, which is no part of
// it (the graph is launched on the new one).
int lt_changes() {
  LtObjects o, other;
  o.open();
  other.open();
  Scalar alpha{1.5f}, beta{0.25f};
  Scalar alpha64{1.5}, beta64{0.25};
  Scalar alpha64_high{1.5}, alpha_other{2.5f}, beta_other{0.75f};
  alpha64_high.bytes[5] ^= 0x40;  // the double's high half only: a key of 4 bytes would not see it
  Buffer a{0xA0}, b{0xB0}, c{0xC0}, d, a2{0xA2}, b2{0xB2}, c2{0xC2}, d2;
  alignas(256) static unsigned char workspace[2][8192];
  cublasLtMatmulAlgo_t algo{}, algo2{};
  for (int i = 0; i < 8; ++i) algo.data[i] = algo2.data[i] = 0x1000 + i;
  algo2.data[7] ^= 1;  // the last word: a key of part of the algo would not see it
  Matmul m = matmul_of(o, alpha, beta, a, b, c, d);
  m.workspace = workspace[0];
  m.workspace_size = 4096;
  const Matmul base = m;
  // Every attribute a change moves, set explicitly first: the records return to exactly these.
  set_desc(o.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, std::uint32_t{CUBLASLT_EPILOGUE_DEFAULT});
  set_desc(o.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, static_cast<const void*>(nullptr));
  set_desc(o.desc, CUBLASLT_MATMUL_DESC_TRANSA, std::int32_t{CUBLAS_OP_N});
  set_desc(o.desc, CUBLASLT_MATMUL_DESC_TRANSB, std::int32_t{CUBLAS_OP_N});
  for (cublasLtMatrixLayout_t layout : o.layouts) {
    set_layout(layout, CUBLASLT_MATRIX_LAYOUT_ORDER, std::int32_t{CUBLASLT_ORDER_COL});
    set_layout(layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, std::int32_t{1});
  }
  set_emulation(o.emulation, CUBLASLT_EMULATION_DESC_STRATEGY, std::int32_t{CUBLAS_EMULATION_STRATEGY_DEFAULT});
  const CUstream second_stream = [] {
    CUstream s = nullptr;
    if (cuStreamCreate(&s, 0) != CUDA_SUCCESS) die("cuStreamCreate");
    return s;
  }();

  std::vector<Change> changes;
  auto desc_change = [&](const char* name, cublasLtMatmulDescAttributes_t attribute, auto base_value, auto variant) {
    changes.push_back({name, [=, &o](int which) { set_desc(o.desc, attribute, which == 1 ? variant : base_value); }});
  };
  desc_change("epilogue", CUBLASLT_MATMUL_DESC_EPILOGUE, std::uint32_t{CUBLASLT_EPILOGUE_DEFAULT},
              std::uint32_t{CUBLASLT_EPILOGUE_RELU});
  desc_change("bias_pointer", CUBLASLT_MATMUL_DESC_BIAS_POINTER, static_cast<const void*>(nullptr),
              static_cast<const void*>(c2.get()));
  desc_change("transa", CUBLASLT_MATMUL_DESC_TRANSA, std::int32_t{CUBLAS_OP_N}, std::int32_t{CUBLAS_OP_T});
  desc_change("transb", CUBLASLT_MATMUL_DESC_TRANSB, std::int32_t{CUBLAS_OP_N}, std::int32_t{CUBLAS_OP_T});
  desc_change("compute_type", CUBLASLT_MATMUL_DESC_COMPUTE_TYPE, std::int32_t{CUBLAS_COMPUTE_32F},
              std::int32_t{CUBLAS_COMPUTE_32F_FAST_TF32});
  // The scale type with alpha and beta in it: 8 bytes each, then a change of alpha's high half.
  // Every value is written into the same memory (a host value is keyed by its bytes, not its
  // address).
  changes.push_back({"scale_type", [&](int which) {
                       set_desc(o.desc, CUBLASLT_MATMUL_DESC_SCALE_TYPE,
                                static_cast<std::int32_t>(which == 1 ? CUDA_R_64F : CUDA_R_32F));
                       alpha = which == 1 ? alpha64 : Scalar{1.5f};
                       beta = which == 1 ? beta64 : Scalar{0.25f};
                     }});
  changes.push_back({"scale_bytes", [&](int which) {
                       set_desc(o.desc, CUBLASLT_MATMUL_DESC_SCALE_TYPE,
                                static_cast<std::int32_t>(which == -1 ? CUDA_R_32F : CUDA_R_64F));
                       alpha = which == -1 ? Scalar{1.5f} : which == 1 ? alpha64_high : alpha64;
                       beta = which == -1 ? Scalar{0.25f} : beta64;
                     }});
  changes.push_back({"emulation_strategy", [&](int which) {
                       set_emulation(o.emulation, CUBLASLT_EMULATION_DESC_STRATEGY,
                                     static_cast<std::int32_t>(which == 1 ? CUBLAS_EMULATION_STRATEGY_EAGER
                                                                         : CUBLAS_EMULATION_STRATEGY_DEFAULT));
                     }});
  const char* const kLayoutNames[4] = {"a", "b", "c", "d"};
  const std::uint64_t rows[4] = {64, 16, 64, 64};
  for (int l = 0; l < 4; ++l) {
    const std::string n = std::string("layout_") + kLayoutNames[l];
    cublasLtMatrixLayout_t layout = o.layouts[l];
    const std::uint64_t r = rows[l];
    changes.push_back({n + ".rows", [=](int which) { set_layout(layout, CUBLASLT_MATRIX_LAYOUT_ROWS, static_cast<std::uint64_t>(which == 1 ? r + 1 : r)); }});
    changes.push_back({n + ".ld", [=](int which) {
                         set_layout(layout, CUBLASLT_MATRIX_LAYOUT_LD, static_cast<std::int64_t>(which == 1 ? 2 * r : r));
                       }});
    changes.push_back({n + ".order", [=](int which) {
                         set_layout(layout, CUBLASLT_MATRIX_LAYOUT_ORDER,
                                    static_cast<std::int32_t>(which == 1 ? CUBLASLT_ORDER_ROW : CUBLASLT_ORDER_COL));
                       }});
    changes.push_back({n + ".batch_count", [=](int which) {
                         set_layout(layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, static_cast<std::int32_t>(which == 1 ? 2 : 1));
                       }});
  }
  // One layout passed twice (PyTorch's C and D): D as C's, then as B's, whose contents differ.
  changes.push_back({"layout_d_as_c_then_b", [&](int which) {
                       m.d_desc = o.layouts[which == 0 ? 2 : which == 1 ? 1 : 3];
                     }});
  changes.push_back({"alpha", [&](int which) { alpha = which == 1 ? alpha_other : Scalar{1.5f}; }});
  changes.push_back({"beta", [&](int which) { beta = which == 1 ? beta_other : Scalar{0.25f}; }});
  changes.push_back({"a", [&](int which) { m.a = which == 1 ? a2.get() : a.get(); }});
  changes.push_back({"b", [&](int which) { m.b = which == 1 ? b2.get() : b.get(); }});
  changes.push_back({"c", [&](int which) { m.c = which == 1 ? c2.get() : c.get(); }});
  changes.push_back({"d", [&](int which) { m.d = which == 1 ? d2.get() : d.get(); }});
  changes.push_back({"workspace_moved", [&](int which) { m.workspace = workspace[which == 1 ? 1 : 0]; }});
  changes.push_back({"workspace_resized", [&](int which) { m.workspace_size = which == 1 ? 8192 : 4096; }});
  changes.push_back({"algo_given", [&](int which) { m.algo = which == 1 ? &algo : nullptr; }});
  changes.push_back({"algo_changed", [&](int which) { m.algo = which == -1 ? nullptr : which == 1 ? &algo2 : &algo; }});
  changes.push_back({"handle", [&](int which) { m.handle = which == 1 ? other.handle : o.handle; }});
  changes.push_back({"stream", [&](int which) {
                       m.stream = which == 1 ? reinterpret_cast<cudaStream_t>(second_stream) : base.stream;
                     }});
  // Last (the descriptor's record is unknown from the refusal on, until it is made again): TRANSA
  // made T, then a set back to N that cuBLASLt refuses (2 bytes of an int32 attribute). The
  // descriptor stays T, and its record must not say N (the base's key, whose graph is N's).
  changes.push_back({"transa_then_refused", [&](int which) {
                       set_desc(o.desc, CUBLASLT_MATMUL_DESC_TRANSA,
                                std::int32_t{which == 1 ? CUBLAS_OP_T : CUBLAS_OP_N});
                       if (which != 1) return;
                       const std::int16_t op_n = CUBLAS_OP_N;
                       if (g_api.cublasLtMatmulDescSetAttribute(o.desc, CUBLASLT_MATMUL_DESC_TRANSA, &op_n,
                                                                sizeof op_n) == CUBLAS_STATUS_SUCCESS)
                         die("a 2-byte TRANSA was taken");
                     }});

  Counts counts;
  const Snapshot before = Snapshot::now();
  run_changes(changes, [&](Counts& c) { checked(m, c); }, counts);
  print_since(before);
  print_counts(counts);
  return 0;
}

// The five pointer modes, with the values behind device pointers changed in memory before every
// call (read at each launch), and host values changed halfway.
int lt_pointer_modes() {
  LtObjects o;
  o.open();
  Scalar alpha{1.5f}, beta{0.25f}, beta_other{0.5f};
  Buffer a{0xA0}, b{0xB0}, c{0xC0}, d;
  Matmul m = matmul_of(o, alpha, beta, a, b, c, d);
  const struct {
    const char* name;
    std::int32_t mode;
    bool device_alpha, device_beta, host_beta;
  } kModes[] = {
      {"host", CUBLASLT_POINTER_MODE_HOST, false, false, true},
      {"device", CUBLASLT_POINTER_MODE_DEVICE, true, true, false},
      {"device_vector", CUBLASLT_POINTER_MODE_DEVICE_VECTOR, true, true, false},
      {"alpha_device_vector_beta_zero", CUBLASLT_POINTER_MODE_ALPHA_DEVICE_VECTOR_BETA_ZERO, true, false, false},
      {"alpha_device_vector_beta_host", CUBLASLT_POINTER_MODE_ALPHA_DEVICE_VECTOR_BETA_HOST, true, false, true},
  };
  Counts total;
  for (const auto& mode : kModes) {
    set_desc(o.desc, CUBLASLT_MATMUL_DESC_POINTER_MODE, mode.mode);
    Counts counts;
    const Snapshot before = Snapshot::now();
    for (int i = 0; i < 10; ++i) {
      // Device values: new bytes in the same memory before every call. Host values: the same bytes
      // for five calls, then others (by value: another key). A beta that is never read: another
      // pointer every call (no key of it).
      alpha = mode.device_alpha ? Scalar{1.0f + static_cast<float>(i)} : Scalar{i < 5 ? 1.5f : 2.5f};
      if (mode.device_beta) beta = Scalar{0.125f * static_cast<float>(i)};
      else if (mode.host_beta) beta = Scalar{i < 5 ? 0.25f : 0.5f};
      m.beta = !mode.device_beta && !mode.host_beta && i % 2 ? beta_other.bytes : beta.bytes;
      checked(m, counts);
    }
    print_since(before, std::string(mode.name) + ".");
    print(std::string(mode.name) + ".mismatches", counts.mismatches);
    total.add(counts);
  }
  print_counts(total);
  return 0;
}

// Objects made around the shim (create and set through the stubs' own functions): the shim never
// saw them, and a matmul that uses one runs directly, however they change.
int lt_around() {
  Counts counts;
  Scalar alpha{1.5f}, beta{0.25f};
  Buffer a{0xA0}, b{0xB0}, c{0xC0}, d;
  {  // the matmul descriptor
    LtObjects o;
    o.open();
    cublasLtMatmulDesc_t around = nullptr;
    must(g_real.cublasLtMatmulDescCreate(&around, CUBLAS_COMPUTE_32F, CUDA_R_32F), "create around");
    Matmul m = matmul_of(o, alpha, beta, a, b, c, d);
    m.desc = around;
    const Snapshot before = Snapshot::now();
    for (int i = 0; i < 10; ++i) {
      if (i == 5) set_desc(around, CUBLASLT_MATMUL_DESC_EPILOGUE, std::uint32_t{CUBLASLT_EPILOGUE_RELU}, g_real);
      checked(m, counts);
    }
    print_since(before, "desc.");
    g_real.cublasLtMatmulDescDestroy(around);
    o.close();
  }
  {  // a layout
    LtObjects o;
    o.open();
    cublasLtMatrixLayout_t around = nullptr;
    must(g_real.cublasLtMatrixLayoutCreate(&around, CUDA_R_32F, 64, 16, 64), "create around");
    Matmul m = matmul_of(o, alpha, beta, a, b, c, d);
    m.a_desc = around;
    const Snapshot before = Snapshot::now();
    for (int i = 0; i < 10; ++i) {
      if (i == 5) set_layout(around, CUBLASLT_MATRIX_LAYOUT_ROWS, std::uint64_t{65}, g_real);
      checked(m, counts);
    }
    print_since(before, "layout.");
    g_real.cublasLtMatrixLayoutDestroy(around);
    o.close();
  }
  {  // the emulation descriptor a known matmul descriptor names
    LtObjects o;
    o.open();
    cublasLtEmulationDesc_t around = nullptr;
    must(g_real.cublasLtEmulationDescCreate(&around), "create around");
    set_desc(o.desc, CUBLASLT_MATMUL_DESC_EMULATION_DESCRIPTOR, around);
    const Matmul m = matmul_of(o, alpha, beta, a, b, c, d);
    const Snapshot before = Snapshot::now();
    for (int i = 0; i < 10; ++i) {
      if (i == 5)
        set_emulation(around, CUBLASLT_EMULATION_DESC_STRATEGY, std::int32_t{CUBLAS_EMULATION_STRATEGY_EAGER}, g_real);
      checked(m, counts);
    }
    print_since(before, "emulation.");
    set_desc(o.desc, CUBLASLT_MATMUL_DESC_EMULATION_DESCRIPTOR, o.emulation);
    g_real.cublasLtEmulationDescDestroy(around);
    o.close();
  }
  print_counts(counts);
  return 0;
}

// A layout destroyed around the shim whose address comes back to a creation the shim records
// nothing of (the feature off): the creation forgets the record the address kept, so that with the
// feature on again a matmul with the new layout runs directly (unknown), not by the old one's record.
int lt_made_off() {
  if (g_set_features == nullptr) die("lt_made_off runs under the shim");
  Counts counts;
  Scalar alpha{1.5f}, beta{0.25f};
  Buffer a{0xA0}, b{0xB0}, c{0xC0}, d;
  LtObjects o;
  o.open();
  cublasLtMatrixLayout_t known = nullptr;
  must(g_api.cublasLtMatrixLayoutCreate(&known, CUDA_R_32F, 64, 16, 64), "create");
  Matmul m = matmul_of(o, alpha, beta, a, b, c, d);
  m.a_desc = known;
  Snapshot before = Snapshot::now();
  for (int i = 0; i < 5; ++i) checked(m, counts);
  print_since(before, "known.");
  must(g_real.cublasLtMatrixLayoutDestroy(known), "destroy around");  // the shim keeps its record
  const unsigned all = g_features();
  g_set_features(all & ~CUDNN_FASTPATH_FEATURE_CUBLAS);
  cublasLtMatrixLayout_t made_off = nullptr;
  must(g_api.cublasLtMatrixLayoutCreate(&made_off, CUDA_R_32F, 64, 16, 64), "create with the feature off");
  print("made_off.same_address", made_off == known);  // the premise: the stub's pool gives it back
  g_set_features(all);
  m.a_desc = made_off;
  before = Snapshot::now();
  for (int i = 0; i < 5; ++i) checked(m, counts);
  print_since(before, "made_off.");
  must(g_api.cublasLtMatrixLayoutDestroy(made_off), "destroy");
  o.close();
  print_counts(counts);
  return 0;
}

// A matmul descriptor and a layout made with ..._Init_internal in the program's own memory (here,
// the stack), initialised again at the same address with other values: each init is a new object.
int lt_init_internal() {
  LtObjects o;
  o.open();
  Scalar alpha{1.5f}, beta{0.25f};
  Buffer a{0xA0}, b{0xB0}, c{0xC0}, d;
  cublasLtMatmulDescOpaque_t desc_memory;
  cublasLtMatrixLayoutOpaque_t layout_memory;
  const auto desc = reinterpret_cast<cublasLtMatmulDesc_t>(&desc_memory);
  const auto layout = reinterpret_cast<cublasLtMatrixLayout_t>(&layout_memory);
  Matmul m = matmul_of(o, alpha, beta, a, b, c, d);
  m.desc = desc;
  m.a_desc = layout;
  // Round 0: 32F with a RELU epilogue; 1: TF32, A with another row count; 2: as round 0's init,
  // without the epilogue (the init forgets it: the first round's graph would be stale).
  const struct {
    cublasComputeType_t compute;
    bool relu;
    std::uint64_t rows;
  } kRounds[] = {{CUBLAS_COMPUTE_32F, true, 64}, {CUBLAS_COMPUTE_32F_FAST_TF32, false, 65}, {CUBLAS_COMPUTE_32F, false, 64}};
  Counts counts;
  int round = 0;
  for (const auto& r : kRounds) {
    must(g_api.cublasLtMatmulDescInit_internal(desc, sizeof desc_memory, r.compute, CUDA_R_32F), "Init_internal");
    if (r.relu) set_desc(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, std::uint32_t{CUBLASLT_EPILOGUE_RELU});
    must(g_api.cublasLtMatrixLayoutInit_internal(layout, sizeof layout_memory, CUDA_R_32F, r.rows, 16, 64),
         "Init_internal");
    const Snapshot before = Snapshot::now();
    for (int i = 0; i < 5; ++i) checked(m, counts);
    print_since(before, "round" + std::to_string(round++) + ".");
  }
  print_counts(counts);
  return 0;
}

// The program captures its own CUDA graph: on the stream it gives cublasLtMatmul, then on a cuBLAS
// handle's stream, after the shim made a graph of each call.
int program_capture() {
  Counts counts;
  LtObjects o;
  o.open();
  Scalar alpha{1.5f}, beta{0.25f};
  Buffer a{0xA0}, b{0xB0}, c{0xC0}, d, c2{0xC2};
  const Matmul m = matmul_of(o, alpha, beta, a, b, c, d);
  for (int i = 0; i < 5; ++i) checked(m, counts);
  Snapshot before = Snapshot::now();
  if (cuStreamBeginCapture_v2(o.stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL) != CUDA_SUCCESS) die("begin");
  for (int i = 0; i < 5; ++i)
    if (m.call(g_api) != CUBLAS_STATUS_SUCCESS) ++counts.failures;
  CUgraph graph = nullptr;
  CUgraphExec exec = nullptr;
  if (cuStreamEndCapture(o.stream, &graph) != CUDA_SUCCESS) die("end");
  print_since(before, "lt_during.");
  if (cuGraphInstantiateWithFlags(&exec, graph, 0) != CUDA_SUCCESS) die("instantiate");
  std::memset(d.get(), 0, 8);
  before = Snapshot::now();
  if (cuGraphLaunch(exec, o.stream) != CUDA_SUCCESS) die("launch");
  print_since(before, "lt_program_launch.");
  const std::uint64_t launched = d.first();
  if (launched != m.reference()) ++counts.mismatches;
  cuGraphExecDestroy(exec);
  cuGraphDestroy(graph);

  BlasHandle h;
  h.open();
  const Gemm g = gemm_of(h.handle, alpha, beta, a, b, c2);
  for (int i = 0; i < 5; ++i) checked(g, counts);
  before = Snapshot::now();
  if (cuStreamBeginCapture_v2(h.stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL) != CUDA_SUCCESS) die("begin");
  for (int i = 0; i < 5; ++i)
    if (g.call(g_api) != CUBLAS_STATUS_SUCCESS) ++counts.failures;
  if (cuStreamEndCapture(h.stream, &graph) != CUDA_SUCCESS) die("end");
  print_since(before, "gemm_during.");
  if (cuGraphInstantiateWithFlags(&exec, graph, 0) != CUDA_SUCCESS) die("instantiate");
  // Five GEMMs, each reading the C the one before wrote.
  std::uint64_t expected = 0x0C0C0C0C;
  for (int i = 0; i < 5; ++i) expected = g.reference(expected);
  std::memcpy(c2.get(), "\x0C\x0C\x0C\x0C\0\0\0\0", 8);
  before = Snapshot::now();
  if (cuGraphLaunch(exec, h.stream) != CUDA_SUCCESS) die("launch");
  print_since(before, "gemm_program_launch.");
  if (c2.first() != expected) ++counts.mismatches;
  cuGraphExecDestroy(exec);
  cuGraphDestroy(graph);
  print_counts(counts);
  return 0;
}

// One thread capturing in six contexts in turn (a model split over devices, driven by one thread):
// each context's matmuls on outputs new every round, each output three times, so that every round
// is a capture in each context. Prints streams.live (the streams made and not destroyed since the
// program made its six: the shim's capture streams) and the phase's counters as all.*.
int capture_streams() {
  constexpr int kContexts = 6, kRounds = 10;
  Counts counts;
  Scalar alpha{1.5f}, beta{0.25f};
  Buffer a{0xA0}, b{0xB0}, c{0xC0};
  static Buffer outputs[kContexts * kRounds];
  static LtObjects objects[kContexts];  // never closed: no later object takes their addresses
  for (int k = 0; k < kContexts; ++k) {
    objects[k].open();
    stubcuda_set_stream_context(objects[k].stream, reinterpret_cast<CUcontext>(std::uintptr_t{0xC100000} + 0x10000 * k), 0);
  }
  const StubCudaCounters streams = stubcuda_counters();
  const Snapshot before = Snapshot::now();
  for (int r = 0; r < kRounds; ++r)
    for (int k = 0; k < kContexts; ++k) {
      const Matmul m = matmul_of(objects[k], alpha, beta, a, b, c, outputs[r * kContexts + k]);
      for (int i = 0; i < 3; ++i) checked(m, counts);
    }
  print_since(before, "all.");
  const StubCudaCounters now = stubcuda_counters();
  print("streams.live", static_cast<long long>((now.stream_create - streams.stream_create) -
                                               (now.stream_destroy_v2 - streams.stream_destroy_v2) -
                                               (now.stream_destroy_legacy - streams.stream_destroy_legacy)));
  print_counts(counts);
  return 0;
}

// After the capture, the stream belongs to another context: the calls run directly, and the graph
// is launched again once the stream is back. A green context's stream is never captured.
int other_context() {
  Counts counts;
  const auto other = reinterpret_cast<CUcontext>(std::uintptr_t{0xC0D0000});
  LtObjects o;
  o.open();
  Scalar alpha{1.5f}, beta{0.25f};
  Buffer a{0xA0}, b{0xB0}, c{0xC0}, d, d2, c2{0xC2}, c3{0xC3};
  Matmul m = matmul_of(o, alpha, beta, a, b, c, d);
  for (int i = 0; i < 5; ++i) checked(m, counts);
  stubcuda_set_stream_context(o.stream, other, 0);
  Snapshot before = Snapshot::now();
  for (int i = 0; i < 5; ++i) checked(m, counts);
  print_since(before, "lt_other.");
  stubcuda_set_stream_context(o.stream, STUBCUDA_PRIMARY_CONTEXT, 0);
  before = Snapshot::now();
  for (int i = 0; i < 5; ++i) checked(m, counts);
  print_since(before, "lt_back.");
  CUstream green = nullptr;
  if (cuStreamCreate(&green, 0) != CUDA_SUCCESS) die("cuStreamCreate");
  stubcuda_set_stream_context(green, reinterpret_cast<CUcontext>(std::uintptr_t{0xC0E0000}), 1);
  m.stream = reinterpret_cast<cudaStream_t>(green);
  m.d = d2.get();
  before = Snapshot::now();
  for (int i = 0; i < 10; ++i) checked(m, counts);
  print_since(before, "lt_green.");

  BlasHandle h;
  h.open();
  const Gemm g = gemm_of(h.handle, alpha, beta, a, b, c2);
  for (int i = 0; i < 5; ++i) checked(g, counts);
  stubcuda_set_stream_context(h.stream, other, 0);
  before = Snapshot::now();
  for (int i = 0; i < 5; ++i) checked(g, counts);
  print_since(before, "gemm_other.");
  stubcuda_set_stream_context(h.stream, STUBCUDA_PRIMARY_CONTEXT, 0);
  before = Snapshot::now();
  for (int i = 0; i < 5; ++i) checked(g, counts);
  print_since(before, "gemm_back.");
  must(g_api.cublasSetStream_v2(h.handle, reinterpret_cast<cudaStream_t>(green)), "cublasSetStream_v2");
  must(g_api.cublasSetWorkspace_v2(h.handle, h.workspace, BlasHandle::kWorkspaceSize), "cublasSetWorkspace_v2");
  Gemm g3 = g;
  g3.c = c3.get();
  before = Snapshot::now();
  for (int i = 0; i < 10; ++i) checked(g3, counts);
  print_since(before, "gemm_green.");
  print_counts(counts);
  return 0;
}

// A failed capture and a failed instantiation: direct for good; a failed launch: the library's
// "execution failed".
int failures() {
  Counts counts;
  LtObjects o;
  o.open();
  Scalar alpha{1.5f}, beta{0.25f};
  Buffer a{0xA0}, b{0xB0}, c{0xC0}, d[3], cs[3] = {Buffer{0xC1}, Buffer{0xC2}, Buffer{0xC3}};
  Matmul m = matmul_of(o, alpha, beta, a, b, c, d[0]);
  stubcuda_fail_captures(1);
  Snapshot before = Snapshot::now();
  for (int i = 0; i < 10; ++i) checked(m, counts);
  print_since(before, "lt_capture.");
  m.d = d[1].get();
  stubcuda_fail_instantiations(1);
  before = Snapshot::now();
  for (int i = 0; i < 10; ++i) checked(m, counts);
  print_since(before, "lt_instantiate.");
  m.d = d[2].get();
  for (int i = 0; i < 5; ++i) checked(m, counts);
  stubcuda_fail_launches(CUDA_ERROR_LAUNCH_FAILED);
  before = Snapshot::now();
  print("lt_launch.status", m.call(g_api));
  stubcuda_fail_launches(CUDA_SUCCESS);
  print_since(before, "lt_launch.");
  checked(m, counts);  // and the graph works again

  BlasHandle h;
  h.open();
  Gemm g = gemm_of(h.handle, alpha, beta, a, b, cs[0]);
  stubcuda_fail_captures(1);
  before = Snapshot::now();
  for (int i = 0; i < 10; ++i) checked(g, counts);
  print_since(before, "gemm_capture.");
  g.c = cs[1].get();
  stubcuda_fail_instantiations(1);
  before = Snapshot::now();
  for (int i = 0; i < 10; ++i) checked(g, counts);
  print_since(before, "gemm_instantiate.");
  g.c = cs[2].get();
  for (int i = 0; i < 5; ++i) checked(g, counts);
  stubcuda_fail_launches(CUDA_ERROR_LAUNCH_FAILED);
  before = Snapshot::now();
  print("gemm_launch.status", g.call(g_api));
  stubcuda_fail_launches(CUDA_SUCCESS);
  print_since(before, "gemm_launch.");
  checked(g, counts);
  cudaStream_t held = nullptr;
  must(g_stub.cublasGetStream_v2(h.handle, &held), "cublasGetStream_v2");
  print("gemm_failures.handle_holds_program_stream", held == h.runtime_stream());
  print_counts(counts);
  return 0;
}

// What a destroyed handle and the run-time switch make the shim forget.
int forget() {
  if (g_set_features == nullptr) die("forget runs under the shim");
  Counts counts;
  Scalar alpha{1.5f}, beta{0.25f};
  Buffer a{0xA0}, b{0xB0}, c{0xC0}, d, c2{0xC2}, d3;
  {  // a cuBLASLt handle: its graphs and its heuristic answers
    LtObjects o;
    o.open();
    Matmul m = matmul_of(o, alpha, beta, a, b, c, d);
    for (int i = 0; i < 5; ++i) checked(m, counts);
    for (int i = 0; i < 2; ++i)
      if (!same(ask(g_api, o, 3), reference_answer(o, 3))) ++counts.mismatches;
    print("lt_handle.graphs_before", static_cast<long long>(stubcuda_graph_counters().live_execs));
    const cublasLtHandle_t old = o.handle;
    must(g_api.cublasLtDestroy(o.handle), "cublasLtDestroy");
    print("lt_handle.graphs_after", static_cast<long long>(stubcuda_graph_counters().live_execs));
    must(g_api.cublasLtCreate(&o.handle), "cublasLtCreate");
    print("lt_handle.same_address", o.handle == old);
    m.handle = o.handle;
    const Snapshot before = Snapshot::now();
    if (!same(ask(g_api, o, 3), reference_answer(o, 3))) ++counts.mismatches;
    for (int i = 0; i < 5; ++i) checked(m, counts);
    print_since(before, "lt_handle.");
    o.close();
  }
  {  // a cuBLAS handle: its GEMM graphs, and the matmul graphs of cuBLASLt calls made with it
    LtObjects o;
    o.open();
    BlasHandle h;
    h.open();
    const Gemm g = gemm_of(h.handle, alpha, beta, a, b, c2);
    Matmul m = matmul_of(o, alpha, beta, a, b, c, d3);
    m.handle = reinterpret_cast<cublasLtHandle_t>(h.handle);  // PyTorch's way: a cuBLAS handle, cast
    for (int i = 0; i < 5; ++i) checked(g, counts), checked(m, counts);
    print("blas_handle.graphs_before", static_cast<long long>(stubcuda_graph_counters().live_execs));
    const cublasHandle_t old = h.handle;
    must(g_api.cublasDestroy_v2(h.handle), "cublasDestroy_v2");
    print("blas_handle.graphs_after", static_cast<long long>(stubcuda_graph_counters().live_execs));
    must(g_api.cublasCreate_v2(&h.handle), "cublasCreate_v2");
    print("blas_handle.same_address", h.handle == old);
    must(g_api.cublasSetStream_v2(h.handle, h.runtime_stream()), "cublasSetStream_v2");
    must(g_api.cublasSetWorkspace_v2(h.handle, h.workspace, BlasHandle::kWorkspaceSize), "cublasSetWorkspace_v2");
    const Snapshot before = Snapshot::now();
    for (int i = 0; i < 5; ++i) checked(g, counts), checked(m, counts);
    print_since(before, "blas_handle.");
    h.close();
    o.close();
  }
  {  // the run-time switch
    LtObjects o;
    o.open();
    BlasHandle h;
    h.open();
    const Matmul m = matmul_of(o, alpha, beta, a, b, c, d);
    const Gemm g = gemm_of(h.handle, alpha, beta, a, b, c2);
    for (int i = 0; i < 5; ++i) checked(m, counts), checked(g, counts);
    if (!same(ask(g_api, o, 3), reference_answer(o, 3))) ++counts.mismatches;
    print("switch.graphs_before", static_cast<long long>(stubcuda_graph_counters().live_execs));
    const unsigned all = g_features();
    print("switch.features_before", all);
    print("switch.features_off", g_set_features(all & ~CUDNN_FASTPATH_FEATURE_CUBLAS));
    print("switch.graphs_after", static_cast<long long>(stubcuda_graph_counters().live_execs));
    Snapshot before = Snapshot::now();
    // PyTorch's way while the feature is off: the handle's stream and workspace set before every
    // GEMM (a record that forgot the handle would make its GEMMs unknown for good); and a handle
    // made while the feature is off.
    for (int i = 0; i < 5; ++i) {
      checked(m, counts);
      must(g_api.cublasSetStream_v2(h.handle, h.runtime_stream()), "cublasSetStream_v2");
      must(g_api.cublasSetWorkspace_v2(h.handle, h.workspace, BlasHandle::kWorkspaceSize), "cublasSetWorkspace_v2");
      checked(g, counts);
    }
    for (int i = 0; i < 3; ++i)
      if (!same(ask(g_api, o, 3), reference_answer(o, 3))) ++counts.mismatches;
    BlasHandle made_off;
    made_off.open();
    const Gemm g_off = gemm_of(made_off.handle, alpha, beta, a, b, c2);
    print_since(before, "switch.off.");
    print("switch.features_on", g_set_features(all));
    before = Snapshot::now();
    for (int i = 0; i < 5; ++i) checked(m, counts), checked(g, counts);
    for (int i = 0; i < 3; ++i)
      if (!same(ask(g_api, o, 3), reference_answer(o, 3))) ++counts.mismatches;
    print_since(before, "switch.on.");
    before = Snapshot::now();
    for (int i = 0; i < 5; ++i) checked(g_off, counts);
    print_since(before, "switch.made_off.");
    made_off.close();
  }
  print_counts(counts);
  return 0;
}

// Loads that never repeat: matmuls and GEMMs on a fresh output with a new alpha every call (a new
// shape, too: no graph follows it), heuristic queries on a layout that changes every call.
int miss_heavy() {
  constexpr int kCalls = 3000;
  Counts counts;
  LtObjects o;
  o.open();
  Scalar alpha{1.5f}, beta{0.25f};
  Buffer a{0xA0}, b{0xB0}, c{0xC0};
  std::vector<Buffer> outputs(kCalls);
  Matmul m = matmul_of(o, alpha, beta, a, b, c, outputs[0]);
  print("calls", kCalls);
  Snapshot before = Snapshot::now();
  // A new output and a new alpha every call: a new shape too, so that no graph can be pointed at it.
  for (int i = 0; i < kCalls; ++i) {
    m.d = outputs[i].get();
    alpha = Scalar{1.5f + static_cast<float>(i)};
    checked(m, counts);
  }
  print_since(before, "matmul.");

  BlasHandle h;
  h.open();
  Gemm g = gemm_of(h.handle, alpha, beta, a, b, outputs[0]);
  before = Snapshot::now();
  for (int i = 0; i < kCalls; ++i) {
    g.c = outputs[i].get();
    alpha = Scalar{1.5f + static_cast<float>(i)};
    checked(g, counts);
  }
  print_since(before, "gemm.");

  before = Snapshot::now();
  for (int i = 0; i < kCalls; ++i) {
    set_layout(o.layouts[3], CUBLASLT_MATRIX_LAYOUT_ROWS, static_cast<std::uint64_t>(64 + i));
    if (!same(ask(g_api, o, 3), reference_answer(o, 3))) ++counts.mismatches;
  }
  print_since(before, "heuristic.");
  print_counts(counts);
  return 0;
}

// The program takes cublasLtMatmulDescSetAttribute with dlsym on libcublasLt's handle (linked mode:
// its other calls are bound to the shim) and changes the epilogue with it between matmuls. Under
// CUDNN_FASTPATH_DLSYM=0 the function is cuBLASLt's own, the shim sees none of those sets, and the
// program's matmuls must all run directly.
int dlsym_setter() {
  const auto setter = reinterpret_cast<decltype(&cublasLtMatmulDescSetAttribute)>(
      dlsym(g_lt_library, "cublasLtMatmulDescSetAttribute"));
  if (setter == nullptr) die("cublasLtMatmulDescSetAttribute");
  print("setter_is_the_librarys", setter == g_real.cublasLtMatmulDescSetAttribute);
  LtObjects o;
  o.open();
  Scalar alpha{1.5f}, beta{0.25f};
  Buffer a{0xA0}, b{0xB0}, c{0xC0}, d;
  const Matmul m = matmul_of(o, alpha, beta, a, b, c, d);
  Counts counts;
  const Snapshot before = Snapshot::now();
  for (int i = 0; i < 20; ++i) {
    const std::uint32_t epilogue = (i / 5) % 2 ? CUBLASLT_EPILOGUE_RELU : CUBLASLT_EPILOGUE_DEFAULT;
    must(setter(o.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof epilogue), "the epilogue");
    checked(m, counts);
  }
  print_since(before);
  print_counts(counts);
  return 0;
}

}  // namespace blas_scenario
