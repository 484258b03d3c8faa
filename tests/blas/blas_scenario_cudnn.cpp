// The blas scenario's case of cuDNN's own cuBLASLt calls (blas_scenario.h): the stub libcudnn's
// cudnnBackendExecute runs a cuBLASLt matmul from inside libcudnn (stub_cudnn_blas_control.h), as
// the real cuDNN's RNNs do, on the program's own cuBLASLt objects (which the shim knows). Executes
// through the shim (replayed as graphs: the matmul is captured with them) and around it (the
// stub's own execute: the matmul reaches the shim from libcudnn, inside no call of the shim's).
#include "tests/blas/blas_scenario.h"
#include "tests/packs/pack_api.h"
#include "tests/stub/stub_cudnn_blas_control.h"
#include "tests/support/variant_pack.h"

namespace blas_scenario {

namespace {

constexpr std::uintptr_t kDevice = 0x7f0000000000;
constexpr std::size_t kDeviceBytes = std::size_t{1} << 30;

PackApi g_cudnn;
void* g_cudnn_library = nullptr;

// cuDNN as the load mode reaches it: linked, the framework library of tests/packs (RTLD_LOCAL),
// or dlsym on a handle of the stub opened RTLD_LOCAL.
void load_cudnn() {
#ifdef BLAS_SCENARIO_LINKED
  g_cudnn = linked_pack_api();
  g_cudnn_library = must_dlopen("libcudnn.so.9", RTLD_NOW | RTLD_NOLOAD);
#else
  if (std::strcmp(g_mode, "local") == 0) {
    g_cudnn = framework_api<PackApi>(PACK_FRAMEWORK_PATH, "pack_framework_api");
    g_cudnn_library = must_dlopen("libcudnn.so.9", RTLD_NOW | RTLD_NOLOAD);
  } else {
    g_cudnn_library = must_dlopen(STUB_CUDNN_PATH, RTLD_NOW | RTLD_LOCAL);
    const char* missing = nullptr;
    auto look_up = [](void* where, const char* name) { return dlsym(where, name); };
    if (!pack_api_from(g_cudnn, look_up, g_cudnn_library, g_cudnn_library, missing)) die(missing);
  }
#endif
}

// A variant pack of the plan's three tensors, made with `api`'s functions (the shim's proxies, or
// the stub's own: a real pack).
cudnnBackendDescriptor_t make_pack(const PackApi& api) {
  const std::int64_t uids[3] = {1, 2, 3};
  void* pointers[3] = {reinterpret_cast<void*>(kDevice), reinterpret_cast<void*>(kDevice + 0x1000),
                       reinterpret_cast<void*>(kDevice + 0x2000)};
  void* workspace = reinterpret_cast<void*>(kDevice + 0x100000);
  cudnnBackendDescriptor_t pack = nullptr;
  if (::make_pack(api, 3, uids, pointers, workspace, &pack) != 0) die("a variant pack");
  return pack;
}

template <typename T>
void take_own(T& out, const char* name) {
  out = reinterpret_cast<T>(glibc_dlsym(g_cudnn_library, name));
  if (out == nullptr) die(name);
}

// The stub's own backend calls, around the shim (g_cudnn's but for them).
PackApi own_backend() {
  PackApi own = g_cudnn;
  take_own(own.create, "cudnnBackendCreateDescriptor");
  take_own(own.set, "cudnnBackendSetAttribute");
  take_own(own.finalize, "cudnnBackendFinalize");
  take_own(own.destroy, "cudnnBackendDestroyDescriptor");
  take_own(own.execute, "cudnnBackendExecute");
  return own;
}

}  // namespace

int cudnn_inner() {
  load_cudnn();
  stubcuda_add_device_memory(kDevice, kDeviceBytes);
  const PackApi own = own_backend();
  void (*inner_matmul)(const StubCudnnInnerMatmul*) = nullptr;
  StubCudnnInnerMatmulCounts (*inner_counts)() = nullptr;
  take_own(inner_matmul, "stubcudnn_inner_lt_matmul");
  take_own(inner_counts, "stubcudnn_inner_lt_matmul_counts");

  cudnnHandle_t handle = nullptr;
  CUstream stream = nullptr;
  if (g_cudnn.create_handle(&handle) != 0) die("cudnnCreate");
  if (cuStreamCreate(&stream, 0) != CUDA_SUCCESS) die("cuStreamCreate");
  if (g_cudnn.set_stream(handle, reinterpret_cast<cudaStream_t>(stream)) != 0) die("cudnnSetStream");
  MatmulPlan plan;
  const std::int64_t uids[3] = {1, 2, 3};
  if (plan.build(g_cudnn, handle, uids) != 0) die("the plan");

  LtObjects o;
  o.open();
  Scalar alpha{1.5f}, beta{0.25f};
  Buffer a{0xA0}, b{0xB0}, c{0xC0}, d;
  const StubCudnnInnerMatmul inner{o.handle,     o.desc, alpha.bytes,  a.get(), o.layouts[0], b.get(), o.layouts[1],
                                   beta.bytes,   c.get(), o.layouts[2], d.get(), o.layouts[3], nullptr, 0};
  Matmul expected = matmul_of(o, alpha, beta, a, b, c, d);  // the same matmul, for its reference
  inner_matmul(&inner);
  Counts counts;
  auto executes = [&](const PackApi& api, cudnnBackendDescriptor_t pack, const char* prefix) {
    const Snapshot before = Snapshot::now();
    const StubBackendCounters backend = g_cudnn.counters();
    const StubCudnnInnerMatmulCounts made = inner_counts();
    for (int i = 0; i < 10; ++i) {
      std::memset(d.get(), 0, 8);
      if (api.execute(handle, plan.plan(), pack) != 0) ++counts.failures;
      const std::uint64_t written = d.first();
      if (written != expected.reference()) ++counts.mismatches;
    }
    print_since(before, prefix);
    const StubBackendCounters now = g_cudnn.counters();
    const std::string p = prefix;
    print(p + "cudnn.executes", static_cast<long long>(now.execute - backend.execute));
    print(p + "cudnn.captured", static_cast<long long>(now.captured - backend.captured));
    print(p + "cudnn.replays", static_cast<long long>(now.replays - backend.replays));
    print(p + "cudnn.inner_matmuls", static_cast<long long>(inner_counts().calls - made.calls));
    print(p + "cudnn.inner_failures", static_cast<long long>(inner_counts().failures - made.failures));
  };
  cudnnBackendDescriptor_t pack = make_pack(g_cudnn);
  executes(g_cudnn, pack, "through.");
  g_cudnn.destroy(pack);
  cudnnBackendDescriptor_t real_pack = make_pack(own);
  executes(own, real_pack, "around.");
  own.destroy(real_pack);
  inner_matmul(nullptr);
  print_counts(counts);
  return 0;
}

// A library setting a program's descriptor: the program's matmuls replayed, then one execute of
// the stub's own (around the shim) in which libcudnn sets the program's matmul descriptor's
// epilogue from inside, then the program's matmuls again, each checked against the reference
// made with the descriptor as it now is. The record must follow the library's set (or be
// forgotten): a graph of the old epilogue launched again writes the old digest.
int cudnn_sets_program_desc() {
  load_cudnn();
  stubcuda_add_device_memory(kDevice, kDeviceBytes);
  const PackApi own = own_backend();
  void (*inner_epilogue)(cublasLtMatmulDesc_t, std::uint32_t) = nullptr;
  take_own(inner_epilogue, "stubcudnn_inner_lt_epilogue");

  cudnnHandle_t handle = nullptr;
  if (g_cudnn.create_handle(&handle) != 0) die("cudnnCreate");
  MatmulPlan plan;
  const std::int64_t uids[3] = {1, 2, 3};
  if (plan.build(g_cudnn, handle, uids) != 0) die("the plan");
  cudnnBackendDescriptor_t pack = make_pack(own);

  LtObjects o;
  o.open();
  Scalar alpha{1.5f}, beta{0.25f};
  Buffer a{0xA0}, b{0xB0}, c{0xC0}, d;
  const Matmul m = matmul_of(o, alpha, beta, a, b, c, d);
  Counts counts;
  Snapshot before = Snapshot::now();
  for (int i = 0; i < 10; ++i) checked(m, counts);
  print_since(before, "before.");
  inner_epilogue(o.desc, CUBLASLT_EPILOGUE_RELU);
  if (own.execute(handle, plan.plan(), pack) != 0) ++counts.failures;
  before = Snapshot::now();
  for (int i = 0; i < 10; ++i) checked(m, counts);
  print_since(before, "after.");
  own.destroy(pack);
  print_counts(counts);
  return 0;
}

}  // namespace blas_scenario
