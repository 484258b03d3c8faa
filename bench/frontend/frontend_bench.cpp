// Host time per call of "set the stream, execute" for a 256x256x256 bf16 matmul, four ways:
//
//   floor           cudnnBackendExecute with a plan and a variant pack built beforehand: what
//                   cuDNN itself costs, and what the frontend aims to match (within 0.1 us);
//   fastpath        cudnn_fastpath::set_stream + Graph::execute (this library);
//   SetStream+floor cudnnSetStream (as PyTorch issues before every op) + the floor;
//   frontend-style  cudnnSetStream + what cudnn-frontend's Graph::execute does per call: a
//                   cudnnGetStream, heap-allocated pointer and uid vectors, and a new variant pack
//                   (create, 3 attributes, finalize, destroy) around the same execute;
//   cublas          cublasSetStream + cublasGemmEx (when cuBLAS was found at build time);
//   cudnn-frontend  cudnnSetStream + NVIDIA cudnn-frontend's graph.execute with a map of pointers
//                   (when its headers were found at build time: its pip wheel carries them).
//
// Only the enqueue is timed: loops of `calls` executes (fewer than the launch queue holds, so
// the GPU's speed is not what is measured), the stream synchronised outside the timed region,
// the variants alternated within each round in a rotating order, medians over the rounds.
//
// Usage: frontend_bench [rounds (default 51)] [calls per loop (default 200)]
#include <cuda_runtime_api.h>
#include <cudnn.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#if CUDNN_FASTPATH_BENCH_CUBLAS
#include <cublas_v2.h>
#endif

#include "cudnn_fastpath/frontend.h"

#if CUDNN_FASTPATH_BENCH_CUDNN_FRONTEND
#include "bench/frontend/cudnn_frontend_variant.h"
#endif

namespace {

constexpr std::int64_t kSize = 256;  // m = n = k

void die(const std::string& what) {
  std::fprintf(stderr, "frontend_bench: %s\n", what.c_str());
  std::exit(1);
}
void check(cudaError_t error, const char* what) {
  if (error != cudaSuccess) die(std::string(what) + ": " + cudaGetErrorString(error));
}
void check(cudnnStatus_t status, const char* what) {
  if (status != CUDNN_STATUS_SUCCESS) die(std::string(what) + ": " + cudnnGetErrorString(status));
}

// One way of issuing the matmul; `loop(calls)` issues it `calls` times and returns how many
// failed (checked after the timed region).
struct Variant {
  std::string name;
  std::string what;
  std::function<int(int)> loop;
  std::vector<double> ns_per_call;  // one per round
  std::vector<double> drain_ns;     // per round: what the GPU still had to do when the loop ended
};

template <typename Call>
std::function<int(int)> looping(Call call) {
  return [call](int calls) mutable {
    int failures = 0;
    for (int i = 0; i < calls; ++i) failures += call() ? 0 : 1;
    return failures;
  };
}

double percentile(std::vector<double> values, double fraction) {
  std::sort(values.begin(), values.end());
  const std::size_t at = static_cast<std::size_t>(fraction * static_cast<double>(values.size() - 1) + 0.5);
  return values[at];
}

// The first line of `path` that starts with `prefix`, from its first ": " on ("model name\t: X"
// gives "X").
std::string value_of(const char* path, const char* prefix) {
  std::ifstream file(path);
  std::string line;
  while (std::getline(file, line)) {
    if (line.rfind(prefix, 0) != 0) continue;
    const std::size_t colon = line.find(": ");
    return colon == std::string::npos ? line : line.substr(colon + 2);
  }
  return "unknown";
}

std::string version_text(int version, int major_scale) {
  return std::to_string(version / major_scale) + "." + std::to_string(version % major_scale / 10);
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 51;
  const int calls = argc > 2 ? std::atoi(argv[2]) : 200;
  if (rounds < 3 || calls < 1) die("usage: frontend_bench [rounds >= 3] [calls >= 1]");

  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::puts("SKIPPED: no CUDA device");
    return 0;
  }
  check(cudaSetDevice(0), "cudaSetDevice");
  cudaStream_t stream = nullptr;
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
  cudnnHandle_t handle = nullptr;
  check(cudnn_fastpath::create_handle(&handle), "cudnnCreate");
  check(cudnn_fastpath::set_stream(handle, stream), "set_stream");

  const std::size_t bytes = kSize * kSize * 2;
  void *a = nullptr, *b = nullptr, *c = nullptr;
  check(cudaMalloc(&a, bytes), "cudaMalloc");
  check(cudaMalloc(&b, bytes), "cudaMalloc");
  check(cudaMalloc(&c, bytes), "cudaMalloc");
  check(cudaMemset(a, 0, bytes), "cudaMemset");
  check(cudaMemset(b, 0, bytes), "cudaMemset");

  cudnn_fastpath::MatmulDescription gemm;
  gemm.m = gemm.n = gemm.k = kSize;
  cudnn_fastpath::Graph graph = cudnn_fastpath::Graph::matmul(gemm);
  if (cudnn_fastpath::Status built = graph.build(handle); !built.ok()) die(built.message());
  void* workspace = nullptr;
  if (graph.workspace_size() > 0)
    check(cudaMalloc(&workspace, static_cast<std::size_t>(graph.workspace_size())), "cudaMalloc");

  // The floor's variant pack, built once, from the same plan.
  cudnnBackendDescriptor_t plan = graph.execution_plan();
  std::vector<std::int64_t> uids = graph.tensor_uids();
  void* pointers[] = {a, b, c};
  auto make_pack = [&](const std::int64_t* ids, void* const* data, cudnnBackendDescriptor_t* pack) {
    cudnnStatus_t s = cudnnBackendCreateDescriptor(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, pack);
    if (s == CUDNN_STATUS_SUCCESS)
      s = cudnnBackendSetAttribute(*pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, 3, ids);
    if (s == CUDNN_STATUS_SUCCESS)
      s = cudnnBackendSetAttribute(*pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, 3, data);
    if (s == CUDNN_STATUS_SUCCESS)
      s = cudnnBackendSetAttribute(*pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &workspace);
    if (s == CUDNN_STATUS_SUCCESS) s = cudnnBackendFinalize(*pack);
    return s;
  };
  cudnnBackendDescriptor_t prebuilt_pack = nullptr;
  check(make_pack(uids.data(), pointers, &prebuilt_pack), "building the floor's variant pack");

  std::vector<Variant> variants;
  variants.push_back({"floor", "cudnnBackendExecute, plan and variant pack prebuilt", looping([&] {
                        return cudnnBackendExecute(handle, plan, prebuilt_pack) == CUDNN_STATUS_SUCCESS;
                      }), {}});
  variants.push_back({"fastpath", "cudnn_fastpath::set_stream + Graph::execute", looping([&] {
                        cudnn_fastpath::set_stream(handle, stream);
                        return graph.execute(handle, {a, b, c}, workspace).ok();
                      }), {}});
  // The real cudnnSetStream of the stream the handle already holds: the table's claim stays true.
  variants.push_back({"SetStream+floor", "cudnnSetStream + the floor", looping([&] {
                        cudnnSetStream(handle, stream);
                        return cudnnBackendExecute(handle, plan, prebuilt_pack) == CUDNN_STATUS_SUCCESS;
                      }), {}});
  variants.push_back({"frontend-style",
                      "cudnnSetStream + cudnnGetStream + new variant pack per call + execute",
                      looping([&] {
                        cudnnSetStream(handle, stream);
                        cudaStream_t held = nullptr;
                        cudnnGetStream(handle, &held);
                        std::vector<void*> data{a, b, c};
                        std::vector<std::int64_t> ids(uids.begin(), uids.end());
                        cudnnBackendDescriptor_t pack = nullptr;
                        bool ok = make_pack(ids.data(), data.data(), &pack) == CUDNN_STATUS_SUCCESS &&
                                  cudnnBackendExecute(handle, plan, pack) == CUDNN_STATUS_SUCCESS;
                        cudnnBackendDestroyDescriptor(pack);
                        return ok;
                      }), {}});
#if CUDNN_FASTPATH_BENCH_CUBLAS
  cublasHandle_t cublas = nullptr;
  if (cublasCreate(&cublas) != CUBLAS_STATUS_SUCCESS) die("cublasCreate failed");
  const float one = 1.0f, zero = 0.0f;
  // Row-major C = A B is column-major C^T = B^T A^T: swap the operands.
  variants.push_back({"cublas", "cublasSetStream + cublasGemmEx (bf16, fp32 compute)", looping([&] {
                        cublasSetStream(cublas, stream);
                        return cublasGemmEx(cublas, CUBLAS_OP_N, CUBLAS_OP_N, kSize, kSize, kSize,
                                            &one, b, CUDA_R_16BF, kSize, a, CUDA_R_16BF, kSize,
                                            &zero, c, CUDA_R_16BF, kSize, CUBLAS_COMPUTE_32F,
                                            CUBLAS_GEMM_DEFAULT) == CUBLAS_STATUS_SUCCESS;
                      }), {}});
#endif
#if CUDNN_FASTPATH_BENCH_CUDNN_FRONTEND
  std::string frontend_error, frontend_version;
  if (auto loop = cudnn_frontend_matmul(handle, stream, kSize, kSize, kSize, a, b, c, frontend_error, frontend_version))
    variants.push_back({"cudnn-frontend", "cudnnSetStream + cudnn-frontend " + frontend_version +
                                              " graph.execute (a map of pointers)",
                        std::move(loop), {}});
  else
    std::fprintf(stderr, "frontend_bench: no cudnn-frontend column: %s\n", frontend_error.c_str());
#endif

  // Warm-up: first-call costs (module loads, cuBLAS workspace) stay out of the rounds.
  for (Variant& v : variants)
    if (v.loop(calls) != 0) die(v.name + " failed during warm-up");
  check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");

  int failures = 0;
  for (int round = 0; round < rounds; ++round) {
    for (std::size_t i = 0; i < variants.size(); ++i) {
      Variant& v = variants[(i + static_cast<std::size_t>(round)) % variants.size()];
      check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
      const auto start = std::chrono::steady_clock::now();
      failures += v.loop(calls);
      const auto stop = std::chrono::steady_clock::now();
      v.ns_per_call.push_back(std::chrono::duration<double, std::nano>(stop - start).count() / calls);
      // Not part of the timing: how far behind the GPU was. Near zero means the loop ran at the
      // host's pace; a backlog close to a full launch queue would mean it did not.
      check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
      v.drain_ns.push_back(std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - stop).count());
    }
  }
  check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  if (failures != 0) die(std::to_string(failures) + " calls failed during the rounds");

  cudaDeviceProp properties{};
  check(cudaGetDeviceProperties(&properties, 0), "cudaGetDeviceProperties");
  int driver = 0, runtime = 0;
  cudaDriverGetVersion(&driver);
  cudaRuntimeGetVersion(&runtime);
  char host[256] = "unknown";
  gethostname(host, sizeof host - 1);
  std::printf("## frontend_bench: %lldx%lldx%lld bf16 matmul, host ns per call (enqueue only)\n\n",
              static_cast<long long>(kSize), static_cast<long long>(kSize), static_cast<long long>(kSize));
  std::printf("- GPU: %s (sm_%d%d), host %s\n", properties.name, properties.major, properties.minor, host);
  std::printf("- CPU: %s\n", value_of("/proc/cpuinfo", "model name").c_str());
  std::printf("- driver: %s; CUDA driver API %s, runtime %s\n",
              value_of("/proc/driver/nvidia/version", "NVRM").c_str(),
              version_text(driver, 1000).c_str(), version_text(runtime, 1000).c_str());
  std::printf("- cuDNN %zu (built against %d)", cudnnGetVersion(), CUDNN_VERSION);
#if CUDNN_FASTPATH_BENCH_CUBLAS
  int cublas_version = 0;
  cublasGetVersion(cublas, &cublas_version);
  std::printf(", cuBLAS %d", cublas_version);
#endif
  std::printf("\n- plan: %s\n", graph.plan_summary().c_str());
  std::printf("- %d rounds x %d calls per variant, variants alternated; median and 10th-90th percentile of the rounds\n\n",
              rounds, calls);

  const double floor = percentile(variants[0].ns_per_call, 0.5);
  std::printf("| variant | what one call does | median ns | p10-p90 ns | vs floor | GPU backlog at loop end (us) |\n");
  std::printf("| --- | --- | ---: | ---: | ---: | ---: |\n");
  for (const Variant& v : variants) {
    const double median = percentile(v.ns_per_call, 0.5);
    std::printf("| %s | %s | %.0f | %.0f-%.0f | %.2fx (%+.0f ns) | %.0f |\n", v.name.c_str(),
                v.what.c_str(), median, percentile(v.ns_per_call, 0.1),
                percentile(v.ns_per_call, 0.9), median / floor, median - floor,
                percentile(v.drain_ns, 0.5) / 1000);
  }

  cudnnBackendDestroyDescriptor(prebuilt_pack);
#if CUDNN_FASTPATH_BENCH_CUBLAS
  cublasDestroy(cublas);
#endif
  cudaFree(workspace);
  cudaFree(a);
  cudaFree(b);
  cudaFree(c);
  graph = cudnn_fastpath::Graph();
  cudnn_fastpath::destroy_handle(handle);
  cudnn_fastpath::forget_stream(stream);
  cudaStreamDestroy(stream);
  return 0;
}
