// What cudnnSetStream costs on this GPU, called directly and through whatever the program's global
// scope binds the name to (the shim, when it is preloaded).
//
//   set_stream_cost [--library PATH] [--rounds N] [--calls N] [--json FILE]
//
// libcudnn is dlopen'ed RTLD_GLOBAL. The real function comes from dlsym on its handle; the
// interposed one from dlsym(RTLD_DEFAULT), which finds the preloaded shim first. Each measurement is
// a loop of --calls calls timed as a whole; the two functions are measured alternately, in
// alternating order, over --rounds rounds in one run, and the table shows medians (ns per call) with
// the 10th-90th percentile spread, since host timings in a VM are noisy. Each function gets its own
// handle: calls made around the shim must not make its cache stale.
// Exit status 77 with "SKIPPED: no CUDA device" when cuDNN cannot create a handle for lack of a GPU.
#include <cuda_runtime_api.h>
#include <cudnn.h>
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "tests/support/glibc_dlsym.h"

#ifndef CUDNN_LIBRARY_PATH
#define CUDNN_LIBRARY_PATH "libcudnn.so.9"
#endif

namespace {

using SetStream = cudnnStatus_t (*)(cudnnHandle_t, cudaStream_t);
using GetStream = cudnnStatus_t (*)(cudnnHandle_t, cudaStream_t*);
using Create = cudnnStatus_t (*)(cudnnHandle_t*);

struct Options {
  std::string library = CUDNN_LIBRARY_PATH;
  int rounds = 61;
  int calls = 2000;
  std::string json;
};

// One timed loop of `calls` calls; the pattern of streams is the case being measured.
struct Case {
  const char* name;
  cudaStream_t streams[2];  // a call i uses streams[i % 2]
};

double ns_per_call(SetStream set, cudnnHandle_t handle, const Case& c, int calls) {
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < calls; ++i)
    if (set(handle, c.streams[i & 1]) != CUDNN_STATUS_SUCCESS) std::abort();
  const auto stop = std::chrono::steady_clock::now();
  return std::chrono::duration<double, std::nano>(stop - start).count() / calls;
}

double get_ns_per_call(GetStream get, cudnnHandle_t handle, int calls) {
  cudaStream_t held = nullptr;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < calls; ++i)
    if (get(handle, &held) != CUDNN_STATUS_SUCCESS) std::abort();
  const auto stop = std::chrono::steady_clock::now();
  return std::chrono::duration<double, std::nano>(stop - start).count() / calls;
}

double percentile(std::vector<double> values, double p) {
  std::sort(values.begin(), values.end());
  const double index = p * static_cast<double>(values.size() - 1);
  const auto low = static_cast<std::size_t>(index);
  const std::size_t high = std::min(low + 1, values.size() - 1);
  return values[low] + (values[high] - values[low]) * (index - static_cast<double>(low));
}

struct Row {
  std::string name;
  std::vector<double> real, interposed;
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const char* next = i + 1 < argc ? argv[i + 1] : nullptr;
    if (arg == "--library" && next) o.library = argv[++i];
    else if (arg == "--rounds" && next) o.rounds = std::max(1, std::atoi(argv[++i]));
    else if (arg == "--calls" && next) o.calls = std::max(1, std::atoi(argv[++i]));
    else if (arg == "--json" && next) o.json = argv[++i];
    else {
      std::fprintf(stderr, "usage: %s [--library PATH] [--rounds N] [--calls N] [--json FILE]\n", argv[0]);
      std::exit(2);
    }
  }
  return o;
}

const char* object_of(void* symbol) {
  Dl_info info{};
  return dladdr(symbol, &info) && info.dli_fname ? info.dli_fname : "?";
}

}  // namespace

int main(int argc, char** argv) {
  const Options options = parse(argc, argv);
  void* library = dlopen(options.library.c_str(), RTLD_NOW | RTLD_GLOBAL);
  if (library == nullptr) {
    std::fprintf(stderr, "cannot load %s: %s\n", options.library.c_str(), dlerror());
    return 1;
  }
  const auto real_set = reinterpret_cast<SetStream>(glibc_dlsym(library, "cudnnSetStream"));
  const auto real_get = reinterpret_cast<GetStream>(glibc_dlsym(library, "cudnnGetStream"));
  const auto real_create = reinterpret_cast<Create>(glibc_dlsym(library, "cudnnCreate"));
  const auto interposed_set = reinterpret_cast<SetStream>(dlsym(RTLD_DEFAULT, "cudnnSetStream"));
  if (!real_set || !real_get || !real_create || !interposed_set) {
    std::fprintf(stderr, "cudnnSetStream, cudnnGetStream or cudnnCreate not found\n");
    return 1;
  }
  const char* interposer = object_of(reinterpret_cast<void*>(interposed_set));
  const bool through_shim = reinterpret_cast<void*>(interposed_set) != reinterpret_cast<void*>(real_set);

  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("SKIPPED: no CUDA device\n");
    return 77;
  }
  cudnnHandle_t real_handle = nullptr, shim_handle = nullptr;
  cudaStream_t a = nullptr, b = nullptr;
  if (real_create(&real_handle) != CUDNN_STATUS_SUCCESS || real_create(&shim_handle) != CUDNN_STATUS_SUCCESS ||
      cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking) != cudaSuccess ||
      cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking) != cudaSuccess) {
    std::fprintf(stderr, "cannot create the handles and streams\n");
    return 1;
  }

  const Case cases[] = {
      {"same non-null stream again", {a, a}},
      {"alternating two streams", {a, b}},
      {"NULL stream again", {nullptr, nullptr}},
  };
  std::vector<Row> rows;
  for (const Case& c : cases) rows.push_back({c.name, {}, {}});
  std::vector<double> get_stream;

  // Warm-up: loads whatever cuDNN loads lazily, and lets the shim resolve and cache.
  for (const Case& c : cases) {
    ns_per_call(real_set, real_handle, c, options.calls);
    ns_per_call(interposed_set, shim_handle, c, options.calls);
  }
  for (int round = 0; round < options.rounds; ++round) {
    for (std::size_t i = 0; i < rows.size(); ++i) {
      const Case& c = cases[i];
      if (round % 2 == 0) {
        rows[i].real.push_back(ns_per_call(real_set, real_handle, c, options.calls));
        rows[i].interposed.push_back(ns_per_call(interposed_set, shim_handle, c, options.calls));
      } else {
        rows[i].interposed.push_back(ns_per_call(interposed_set, shim_handle, c, options.calls));
        rows[i].real.push_back(ns_per_call(real_set, real_handle, c, options.calls));
      }
    }
    get_stream.push_back(get_ns_per_call(real_get, real_handle, options.calls));
  }

  std::printf("cudnnSetStream, ns per call: median (p10-p90) of %d rounds of %d calls each, A/B alternated\n",
              options.rounds, options.calls);
  std::printf("real: %s\ninterposed: %s%s\n\n", object_of(reinterpret_cast<void*>(real_set)), interposer,
              through_shim ? "" : " (no shim preloaded: both columns are cuDNN)");
  std::printf("| call | cuDNN directly | through the shim | ratio |\n| --- | --- | --- | --- |\n");
  for (const Row& r : rows) {
    const double real = percentile(r.real, 0.5), shim = percentile(r.interposed, 0.5);
    std::printf("| `cudnnSetStream`, %s | %.1f (%.1f-%.1f) | %.1f (%.1f-%.1f) | %.2f |\n", r.name.c_str(), real,
                percentile(r.real, 0.1), percentile(r.real, 0.9), shim, percentile(r.interposed, 0.1),
                percentile(r.interposed, 0.9), shim / real);
  }
  std::printf("| `cudnnGetStream` | %.1f (%.1f-%.1f) | | |\n", percentile(get_stream, 0.5),
              percentile(get_stream, 0.1), percentile(get_stream, 0.9));

  if (!options.json.empty()) {
    FILE* out = std::fopen(options.json.c_str(), "w");
    if (out == nullptr) {
      std::perror(options.json.c_str());
      return 1;
    }
    std::fprintf(out, "{\n  \"rounds\": %d,\n  \"calls_per_round\": %d,\n  \"interposed_by\": \"%s\",\n"
                      "  \"through_shim\": %s,\n  \"rows\": [\n",
                 options.rounds, options.calls, interposer, through_shim ? "true" : "false");
    for (const Row& r : rows) {
      std::fprintf(out,
                   "    {\"call\": \"%s\", \"real_ns\": %.1f, \"real_p10\": %.1f, \"real_p90\": %.1f, "
                   "\"shim_ns\": %.1f, \"shim_p10\": %.1f, \"shim_p90\": %.1f},\n",
                   r.name.c_str(), percentile(r.real, 0.5), percentile(r.real, 0.1), percentile(r.real, 0.9),
                   percentile(r.interposed, 0.5), percentile(r.interposed, 0.1), percentile(r.interposed, 0.9));
    }
    std::fprintf(out, "    {\"call\": \"cudnnGetStream\", \"real_ns\": %.1f, \"real_p10\": %.1f, \"real_p90\": %.1f}\n  ]\n}\n",
                 percentile(get_stream, 0.5), percentile(get_stream, 0.1), percentile(get_stream, 0.9));
    std::fclose(out);
  }
  return 0;
}
