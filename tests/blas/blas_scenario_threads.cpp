// The blas scenario's threads case (blas_scenario.h): threads with their own cuBLASLt handle,
// descriptors, cuBLAS handle and streams, changing a scaling factor and an attribute as they go.
#include <thread>
#include <vector>

#include "tests/blas/blas_scenario.h"

namespace blas_scenario {

int threads() {
  constexpr int kThreads = 4, kCalls = 60;
  g_check_launch_streams = false;  // the driver's last launch stream is the process's, not a thread's
  Counts per_thread[kThreads];
  const Snapshot before = Snapshot::now();
  std::vector<std::thread> workers;
  for (int t = 0; t < kThreads; ++t)
    workers.emplace_back([t, &per_thread] {
      Counts& counts = per_thread[t];
      LtObjects o;
      o.open();
      BlasHandle h;
      h.open();
      Scalar alpha{1.5f}, beta{0.25f};
      Buffer a{0xA0u + t}, b{0xB0u + t}, c{0xC0u + t}, d, c2{0xD0u + t};
      const Matmul m = matmul_of(o, alpha, beta, a, b, c, d);
      const Gemm g = gemm_of(h.handle, alpha, beta, a, b, c2);
      for (int i = 0; i < kCalls; ++i) {
        alpha = Scalar{(i / 10) % 2 ? 2.5f : 1.5f};
        const std::uint32_t epilogue = (i / 20) % 2 ? CUBLASLT_EPILOGUE_RELU : CUBLASLT_EPILOGUE_DEFAULT;
        must(g_api.cublasLtMatmulDescSetAttribute(o.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof epilogue),
             "the epilogue");
        checked(m, counts);
        checked(g, counts);
      }
      h.close();
      o.close();
    });
  for (std::thread& w : workers) w.join();
  Counts total;
  for (const Counts& c : per_thread) total.add(c);
  print("calls", kThreads * kCalls);
  print_since(before);
  print_counts(total);
  return 0;
}

}  // namespace blas_scenario
