// The legacy-replay scenario program (legacy_scenario.h): how each load mode takes the API, the ops
// and their Worlds, the checks, the counters, the cases by name (main:
// tests/support/scenario_main.cpp).
#include "tests/legacy/legacy_scenario.h"

#include "shim/include/cudnn_fastpath/shim_control.h"

#include <dlfcn.h>

namespace legacy_scenario {

LegacyApi g_api;
LegacyApi g_ref;
std::string g_library_path;
void* g_library = nullptr;
unsigned (*g_set_features)(unsigned) = nullptr;
unsigned (*g_features)() = nullptr;
std::atomic<long long> g_checks{0}, g_mismatches{0}, g_failures{0};
Handle g_main, g_other;

namespace {

template <typename T>
T as(int value) {
  return static_cast<T>(value);
}

const cudnnBatchNormOps_t kAddActivation = CUDNN_BATCHNORM_OPS_BN_ADD_ACTIVATION;

// A World's buffers differ from every other World's: the first word of each input says whose it is.
std::atomic<std::uint64_t> g_world_serial{0};

}  // namespace

// Each op with every optional argument given, as tests/stub/stub_legacy_test_support.cpp calls it.
const std::vector<Op>& ops() {
  static const std::vector<Op> table = {
      {"bn_inference", STUBCUDNN_BATCHNORM_FORWARD_INFERENCE, kBn, 3, 2, 1, 5, 1, 0, 0, 1, 0, -1,
       {{CUDNN_BATCHNORM_SPATIAL, CUDNN_BATCHNORM_PER_ACTIVATION}},
       [](const LegacyApi& a, World& w) {
         return a.cudnnBatchNormalizationForwardInference(w.handle, as<cudnnBatchNormMode_t>(w.choices[0]),
                                                          w.scalar[0], w.scalar[1], w.t[0], w.in[0], w.t[1], w.out[0],
                                                          w.t[2], w.in[1], w.in[2], w.in[3], w.in[4], w.numbers[0]);
       }},
      {"bn_training", STUBCUDNN_BATCHNORM_FORWARD_TRAINING_EX, kBn, 4, 2, 2, 4, 5, 2, kActivation, 2, 1, 0,
       {{CUDNN_BATCHNORM_SPATIAL, CUDNN_BATCHNORM_PER_ACTIVATION}, {kAddActivation, CUDNN_BATCHNORM_OPS_BN_ACTIVATION}},
       [](const LegacyApi& a, World& w) {
         return a.cudnnBatchNormalizationForwardTrainingEx(
             w.handle, as<cudnnBatchNormMode_t>(w.choices[0]), as<cudnnBatchNormOps_t>(w.choices[1]), w.scalar[0],
             w.scalar[1], w.t[0], w.in[0], w.t[1], w.in[1], w.t[2], w.out[0], w.t[3], w.in[2], w.in[3], w.numbers[0],
             w.out[1], w.out[2], w.numbers[1], w.out[3], w.out[4], w.act, w.space[0], w.sizes[0], w.space[1],
             w.sizes[1]);
       }},
      {"bn_backward", STUBCUDNN_BATCHNORM_BACKWARD_EX, kBn, 6, 4, 1, 7, 4, 2, kActivation, 4, 0, -1,
       {{CUDNN_BATCHNORM_SPATIAL, CUDNN_BATCHNORM_PER_ACTIVATION}, {kAddActivation, CUDNN_BATCHNORM_OPS_BN_ACTIVATION}},
       [](const LegacyApi& a, World& w) {
         return a.cudnnBatchNormalizationBackwardEx(
             w.handle, as<cudnnBatchNormMode_t>(w.choices[0]), as<cudnnBatchNormOps_t>(w.choices[1]), w.scalar[0],
             w.scalar[1], w.scalar[2], w.scalar[3], w.t[0], w.in[0], w.t[1], w.in[1], w.t[2], w.in[2], w.t[3],
             w.out[0], w.t[4], w.out[1], w.t[5], w.in[3], w.in[4], w.out[2], w.out[3], w.numbers[0], w.in[5],
             w.in[6], w.act, w.space[0], w.sizes[0], w.space[1], w.sizes[1]);
       }},
      {"conv", STUBCUDNN_CONVOLUTION_FORWARD, kConv, 2, 2, 0, 2, 1, 1, kFilter | kConvolution, 1, -1, -1,
       {{CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM, CUDNN_CONVOLUTION_FWD_ALGO_GEMM}},
       [](const LegacyApi& a, World& w) {
         return a.cudnnConvolutionForward(w.handle, w.scalar[0], w.t[0], w.in[0], w.filter, w.in[1], w.conv,
                                          as<cudnnConvolutionFwdAlgo_t>(w.choices[0]), w.space[0], w.sizes[0],
                                          w.scalar[1], w.t[1], w.out[0]);
       }},
      {"conv_bias_activation", STUBCUDNN_CONVOLUTION_BIAS_ACTIVATION_FORWARD, kConv, 4, 2, 0, 4, 1, 1,
       kFilter | kConvolution | kActivation, 3, -1, -1,
       {{CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM, CUDNN_CONVOLUTION_FWD_ALGO_GEMM}},
       [](const LegacyApi& a, World& w) {
         return a.cudnnConvolutionBiasActivationForward(w.handle, w.scalar[0], w.t[0], w.in[0], w.filter, w.in[1],
                                                        w.conv, as<cudnnConvolutionFwdAlgo_t>(w.choices[0]),
                                                        w.space[0], w.sizes[0], w.scalar[1], w.t[1], w.in[2], w.t[2],
                                                        w.in[3], w.act, w.t[3], w.out[0]);
       }},
      {"activation", STUBCUDNN_ACTIVATION_FORWARD, kTensor, 2, 2, 0, 1, 1, 0, kActivation, 1, -1, -1, {},
       [](const LegacyApi& a, World& w) {
         return a.cudnnActivationForward(w.handle, w.act, w.scalar[0], w.t[0], w.in[0], w.scalar[1], w.t[1], w.out[0]);
       }},
      {"pooling", STUBCUDNN_POOLING_FORWARD, kTensor, 2, 2, 0, 1, 1, 0, kPooling, 1, -1, -1, {},
       [](const LegacyApi& a, World& w) {
         return a.cudnnPoolingForward(w.handle, w.pool, w.scalar[0], w.t[0], w.in[0], w.scalar[1], w.t[1], w.out[0]);
       }},
      {"softmax", STUBCUDNN_SOFTMAX_FORWARD, kTensor, 2, 2, 0, 1, 1, 0, 0, 1, -1, -1,
       {{CUDNN_SOFTMAX_ACCURATE, CUDNN_SOFTMAX_LOG}, {CUDNN_SOFTMAX_MODE_CHANNEL, CUDNN_SOFTMAX_MODE_INSTANCE}},
       [](const LegacyApi& a, World& w) {
         return a.cudnnSoftmaxForward(w.handle, as<cudnnSoftmaxAlgorithm_t>(w.choices[0]),
                                      as<cudnnSoftmaxMode_t>(w.choices[1]), w.scalar[0], w.t[0], w.in[0], w.scalar[1],
                                      w.t[1], w.out[0]);
       }},
      {"add_tensor", STUBCUDNN_ADD_TENSOR, kTensor, 2, 2, 0, 1, 1, 0, 0, 1, -1, -1, {},
       [](const LegacyApi& a, World& w) {
         return a.cudnnAddTensor(w.handle, w.scalar[0], w.t[0], w.in[0], w.scalar[1], w.t[1], w.out[0]);
       }},
      {"op_tensor", STUBCUDNN_OP_TENSOR, kTensor, 3, 3, 0, 2, 1, 0, kOpTensor, 2, -1, -1, {},
       [](const LegacyApi& a, World& w) {
         return a.cudnnOpTensor(w.handle, w.op_tensor, w.scalar[0], w.t[0], w.in[0], w.scalar[1], w.t[1], w.in[1],
                                w.scalar[2], w.t[2], w.out[0]);
       }},
      {"scale_tensor", STUBCUDNN_SCALE_TENSOR, kTensor, 1, 1, 0, 0, 1, 0, 0, 0, -1, -1, {},
       [](const LegacyApi& a, World& w) { return a.cudnnScaleTensor(w.handle, w.t[0], w.out[0], w.scalar[0]); }},
      {"transform_tensor", STUBCUDNN_TRANSFORM_TENSOR, kTensor, 2, 2, 0, 1, 1, 0, 0, 1, -1, -1, {},
       [](const LegacyApi& a, World& w) {
         return a.cudnnTransformTensor(w.handle, w.scalar[0], w.t[0], w.in[0], w.scalar[1], w.t[1], w.out[0]);
       }},
      {"lrn", STUBCUDNN_LRN_CROSS_CHANNEL_FORWARD, kTensor, 2, 2, 0, 1, 1, 0, kLrn, 1, -1, -1,
       {{CUDNN_LRN_CROSS_CHANNEL_DIM1, CUDNN_LRN_CROSS_CHANNEL_DIM1}},
       [](const LegacyApi& a, World& w) {
         return a.cudnnLRNCrossChannelForward(w.handle, w.lrn, as<cudnnLRNMode_t>(w.choices[0]), w.scalar[0], w.t[0],
                                              w.in[0], w.scalar[1], w.t[1], w.out[0]);
       }},
  };
  return table;
}

// ---- World ---------------------------------------------------------------------------------------

World::World(const Op& o, cudnnHandle_t h) : op(o), handle(h) {
  const auto must = [](cudnnStatus_t s) {
    if (s != CUDNN_STATUS_SUCCESS) die("making a World's descriptors");
  };
  for (int i = 0; i < 6; ++i) {
    must(g_api.cudnnCreateTensorDescriptor(&t[i]));
    set_tensor(i, 5 + i);
  }
  must(g_api.cudnnCreateFilterDescriptor(&filter));
  must(g_api.cudnnSetFilter4dDescriptor(filter, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, 8, 3, 3, 3));
  must(g_api.cudnnCreateConvolutionDescriptor(&conv));
  must(g_api.cudnnSetConvolution2dDescriptor(conv, 1, 1, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
  must(g_api.cudnnCreateActivationDescriptor(&act));
  must(g_api.cudnnSetActivationDescriptor(act, CUDNN_ACTIVATION_RELU, CUDNN_NOT_PROPAGATE_NAN, 0.0));
  must(g_api.cudnnCreatePoolingDescriptor(&pool));
  must(g_api.cudnnSetPooling2dDescriptor(pool, CUDNN_POOLING_MAX, CUDNN_NOT_PROPAGATE_NAN, 2, 2, 0, 0, 2, 2));
  must(g_api.cudnnCreateOpTensorDescriptor(&op_tensor));
  must(g_api.cudnnSetOpTensorDescriptor(op_tensor, CUDNN_OP_TENSOR_ADD, CUDNN_DATA_FLOAT, CUDNN_NOT_PROPAGATE_NAN));
  must(g_api.cudnnCreateLRNDescriptor(&lrn));
  for (int i = 0; i < 4; ++i) {
    scalar[i] = s[i];
    set_scalar(i, 1.0 + i);
  }
  for (std::size_t i = 0; i < op.choices.size(); ++i) choices[i] = op.choices[i].first;
  const std::uint64_t serial = g_world_serial.fetch_add(1, std::memory_order_relaxed) << 8;
  for (int i = 0; i < 8; ++i) {
    in_data[i][0] = spare_in_data[i][0] = serial + 0x10 + i;  // a spare holds what its input holds
    in[i] = in_data[i];
  }
  for (int i = 0; i < 6; ++i) out[i] = out_data[i];
  for (int i = 0; i < 2; ++i) space[i] = space_data[i];
}

World::~World() {
  for (cudnnTensorDescriptor_t d : t) g_api.cudnnDestroyTensorDescriptor(d);
  g_api.cudnnDestroyFilterDescriptor(filter);
  g_api.cudnnDestroyConvolutionDescriptor(conv);
  g_api.cudnnDestroyActivationDescriptor(act);
  g_api.cudnnDestroyPoolingDescriptor(pool);
  g_api.cudnnDestroyOpTensorDescriptor(op_tensor);
  g_api.cudnnDestroyLRNDescriptor(lrn);
}

void World::set_scalar(int i, double value) {
  std::memset(s[i], 0, sizeof s[i]);
  const float narrow = static_cast<float>(value);
  if (wide)
    std::memcpy(s[i], &value, sizeof value);
  else
    std::memcpy(s[i], &narrow, sizeof narrow);
}

void World::set_tensor(int i, int w, cudnnDataType_t type, const LegacyApi& api) {
  if (api.cudnnSetTensor4dDescriptor(t[i], CUDNN_TENSOR_NCHW, type, 2, 3, 4, w) != CUDNN_STATUS_SUCCESS)
    die("cudnnSetTensor4dDescriptor");
}

void World::clear_outputs() {
  for (int i = 0; i < op.outputs; ++i) std::memcpy(out[i], &output_before, sizeof output_before);
}

std::uint64_t World::output(int i) const {
  std::uint64_t value;
  std::memcpy(&value, out[i], sizeof value);
  return value;
}

World& make_world(const Op& op, cudnnHandle_t handle) {
  return *new World(op, handle);  // never freed: see legacy_scenario.h
}

std::vector<World*> worlds(cudnnHandle_t handle) {
  std::vector<World*> all;
  for (const Op& op : ops()) all.push_back(&make_world(op, handle));
  return all;
}

// ---- checks --------------------------------------------------------------------------------------

std::uint64_t reference_digest(World& w) {
  w.clear_outputs();
  g_ref.stubcudnn_reference_calls(1);
  const cudnnStatus_t status = w.op.call(g_ref, w);
  g_ref.stubcudnn_reference_calls(0);
  if (status != CUDNN_STATUS_SUCCESS) die("a reference call failed");
  const std::uint64_t digest = w.output(0);
  if (digest == 0 || !outputs_hold(w, digest)) die("a reference call wrote no digest");
  w.clear_outputs();
  return digest;
}

bool outputs_hold(const World& w, std::uint64_t digest) {
  for (int i = 0; i < w.op.outputs; ++i)
    if (w.output(i) != digest) return false;
  return true;
}

cudnnStatus_t check(World& w) {
  w.clear_outputs();
  const cudnnStatus_t status = w.op.call(g_api, w);
  std::uint64_t got[6] = {};
  for (int i = 0; i < w.op.outputs; ++i) got[i] = w.output(i);
  const std::uint64_t expected = reference_digest(w);
  g_checks.fetch_add(1, std::memory_order_relaxed);
  if (status != CUDNN_STATUS_SUCCESS) {
    g_failures.fetch_add(1, std::memory_order_relaxed);
    return status;
  }
  for (int i = 0; i < w.op.outputs; ++i)
    if (got[i] != expected) {
      g_mismatches.fetch_add(1, std::memory_order_relaxed);
      break;
    }
  return status;
}

void check_times(World& w, int n) {
  for (int i = 0; i < n; ++i) check(w);
}

// ---- counters ------------------------------------------------------------------------------------

namespace {

// The shim's stats API, and where each legacy counter sits in its struct (by the field names).
int (*g_stats)(void*, std::size_t) = nullptr;
std::size_t g_stats_size = 0;
int g_field_of[3][9];
int g_relocation_field[kRelocationCounterCount];  // -1: the shim has no such counter
// The struct's members before its counters (size, counting, version, reserved).
constexpr std::size_t kStatsHeader = offsetof(cudnn_fastpath_stats_t, handles);

void find_stats() {
  g_stats = reinterpret_cast<int (*)(void*, std::size_t)>(dlsym(RTLD_DEFAULT, "cudnn_fastpath_stats"));
  const auto fields = reinterpret_cast<const char* (*)()>(dlsym(RTLD_DEFAULT, "cudnn_fastpath_stats_fields"));
  if (g_stats == nullptr || fields == nullptr) {
    g_stats = nullptr;
    return;
  }
  std::vector<std::string> names;
  for (const char* p = fields(); *p;) {
    const char* end = std::strchr(p, ' ');
    names.emplace_back(p, end ? static_cast<std::size_t>(end - p) : std::strlen(p));
    p = end ? end + 1 : p + std::strlen(p);
  }
  g_stats_size = kStatsHeader + 8 * names.size();
  for (int f = 0; f < 3; ++f)
    for (int o = 0; o < 9; ++o) {
      g_field_of[f][o] = -1;
      const std::string want = std::string(kFamilyNames[f]) + "_" + kOutcomes[o];
      for (std::size_t i = 0; i < names.size(); ++i)
        if (names[i] == want) g_field_of[f][o] = static_cast<int>(i);
      if (g_field_of[f][o] < 0) die("the shim has no counter of a legacy family's");
    }
  for (int r = 0; r < kRelocationCounterCount; ++r) {
    g_relocation_field[r] = -1;
    for (std::size_t i = 0; i < names.size(); ++i)
      if (names[i] == kRelocationCounters[r]) g_relocation_field[r] = static_cast<int>(i);
  }
}

}  // namespace

Snapshot Snapshot::now() {
  Snapshot s{};
  for (int i = 0; i < STUBCUDNN_LEGACY_OPS; ++i) s.op[i] = g_api.stubcudnn_op_counters(static_cast<StubCudnnLegacyOp>(i));
  s.total = g_api.stubcudnn_op_totals();
  for (int k = 0; k < STUBCUDNN_DESCRIPTOR_KINDS; ++k)
    s.descriptors[k] = g_api.stubcudnn_descriptor_counters(static_cast<StubCudnnDescriptorKind>(k));
  s.cudnn = g_api.stubcudnn_counters();
  s.driver = stubcuda_graph_counters();
  s.inner = g_api.stubcudnn_inner_call_count();
  if (g_stats != nullptr) {
    std::vector<std::uint64_t> words(g_stats_size / 8);
    if (g_stats(words.data(), g_stats_size) != 0) die("cudnn_fastpath_stats");
    std::uint32_t header[2];
    std::memcpy(header, words.data(), sizeof header);
    s.counting = header[1] != 0;
    constexpr std::size_t first = kStatsHeader / 8;  // the first counter's word
    for (int f = 0; f < 3; ++f)
      for (int o = 0; o < 9; ++o) s.shim[f][o] = words[first + g_field_of[f][o]];
    for (int r = 0; r < kRelocationCounterCount; ++r)
      s.relocation[r] = g_relocation_field[r] < 0 ? 0 : words[first + g_relocation_field[r]];
  }
  return s;
}

void print_since(const Snapshot& before, const std::string& prefix, bool per_op) {
  const Snapshot after = Snapshot::now();
  const auto put = [&](const std::string& name, std::uint64_t a, std::uint64_t b) {
    print(prefix + name, static_cast<long long>(a - b));
  };
  put("calls", after.total.calls, before.total.calls);
  put("direct_runs", after.total.direct_runs, before.total.direct_runs);
  put("captured", after.total.captured, before.total.captured);
  put("replays", after.total.replays, before.total.replays);
  if (per_op)
    for (int i = 0; i < STUBCUDNN_LEGACY_OPS; ++i) {
      const std::string op = ops()[i].name;
      put(op + ".calls", after.op[i].calls, before.op[i].calls);
      put(op + ".direct_runs", after.op[i].direct_runs, before.op[i].direct_runs);
      put(op + ".captured", after.op[i].captured, before.op[i].captured);
      put(op + ".replays", after.op[i].replays, before.op[i].replays);
    }
  put("captures", after.driver.captures_begun, before.driver.captures_begun);
  put("global_captures", after.driver.global_mode_captures, before.driver.global_mode_captures);
  put("instantiated", after.driver.instantiated, before.driver.instantiated);
  put("launches", after.driver.launches, before.driver.launches);
  put("launches_into_capture", after.driver.launches_into_capture, before.driver.launches_into_capture);
  put("foreign_launches", after.driver.foreign_launches, before.driver.foreign_launches);
  put("bad_launches", after.driver.bad_launches, before.driver.bad_launches);
  put("foreign_destroys", after.driver.foreign_destroys, before.driver.foreign_destroys);
  put("foreign_captures", after.driver.foreign_captures, before.driver.foreign_captures);
  put("streams_created", after.driver.streams_created, before.driver.streams_created);
  print(prefix + "live_graphs", static_cast<long long>(after.driver.live_execs));
  put("set_stream", after.cudnn.set_stream, before.cudnn.set_stream);
  put("get_stream", after.cudnn.get_stream, before.cudnn.get_stream);
  put("inner_calls", after.inner, before.inner);
  if (after.counting) {
    for (int o = 0; o < 9; ++o) {
      std::uint64_t sum = 0;
      for (int f = 0; f < 3; ++f) {
        put(std::string("shim.") + kFamilyNames[f] + "_" + kOutcomes[o], after.shim[f][o], before.shim[f][o]);
        sum += after.shim[f][o] - before.shim[f][o];
      }
      print(prefix + "shim.legacy_" + kOutcomes[o], static_cast<long long>(sum));
    }
    for (int r = 0; r < kRelocationCounterCount; ++r)
      if (g_relocation_field[r] >= 0)
        put(std::string("shim.") + kRelocationCounters[r], after.relocation[r], before.relocation[r]);
  }
}

void print_end() {
  print("checks", g_checks.load());
  print("mismatches", g_mismatches.load());
  print("failures", g_failures.load());
  // What reached the stubs in the whole run (the statistics must not change any of it).
  const Snapshot s = Snapshot::now();
  print("end.calls", static_cast<long long>(s.total.calls));
  print("end.direct_runs", static_cast<long long>(s.total.direct_runs));
  print("end.captured", static_cast<long long>(s.total.captured));
  print("end.replays", static_cast<long long>(s.total.replays));
  static const char* const kKinds[] = {"tensor", "filter", "convolution", "activation",
                                       "pooling", "op_tensor", "lrn", "tensor_transform"};
  for (int k = 0; k < STUBCUDNN_DESCRIPTOR_KINDS; ++k) {
    const std::string kind = std::string("end.descriptors.") + kKinds[k];
    print(kind + ".created", static_cast<long long>(s.descriptors[k].created));
    print(kind + ".set", static_cast<long long>(s.descriptors[k].set));
    print(kind + ".destroyed", static_cast<long long>(s.descriptors[k].destroyed));
    print(kind + ".live", static_cast<long long>(s.descriptors[k].live));
  }
  print("end.set_stream", static_cast<long long>(s.cudnn.set_stream));
  print("end.get_stream", static_cast<long long>(s.cudnn.get_stream));
  print("end.create", static_cast<long long>(s.cudnn.create));
  print("end.destroy", static_cast<long long>(s.cudnn.destroy));
  print("end.inner_calls", static_cast<long long>(s.inner));
  print("end.captures", static_cast<long long>(s.driver.captures_begun));
  print("end.instantiated", static_cast<long long>(s.driver.instantiated));
  print("end.launches", static_cast<long long>(s.driver.launches));
  print("end.live_graphs", static_cast<long long>(s.driver.live_execs));
  print("end.streams_created", static_cast<long long>(s.driver.streams_created));
}

void Handle::open() {
  if (g_api.cudnnCreate(&handle) != CUDNN_STATUS_SUCCESS) die("cudnnCreate");
  if (cuStreamCreate(&stream, 0) != CUDA_SUCCESS) die("cuStreamCreate");
  if (g_api.cudnnSetStream(handle, reinterpret_cast<cudaStream_t>(stream)) != CUDNN_STATUS_SUCCESS)
    die("cudnnSetStream");
}

bool Handle::holds_own_stream() const {
  cudaStream_t held = nullptr;
  return g_ref.cudnnGetStream(handle, &held) == CUDNN_STATUS_SUCCESS && held == reinterpret_cast<cudaStream_t>(stream);
}

namespace {

// ---- the load modes ------------------------------------------------------------------------------

#if defined(LEGACY_SCENARIO_LINKED) || defined(LEGACY_SCENARIO_OPS)
const char* const kFixedMode = "linked";
void load_api(const char*) {
  g_api = {
#define LEGACY_LINKED(name) &::name,
      LEGACY_FUNCTIONS(LEGACY_LINKED)
#undef LEGACY_LINKED
  };
}
#else
const char* const kFixedMode = nullptr;  // the first argument
void load_api(const char* mode) {
  if (std::strcmp(mode, "local") == 0) {
    g_api = framework_api<LegacyApi>(FRAMEWORK_PATH, "legacy_framework_api");
  } else if (std::strcmp(mode, "dlsym") == 0) {
    void* cudnn = must_dlopen(STUB_CUDNN_PATH, RTLD_NOW | RTLD_LOCAL);
#define LEGACY_DLSYM(name) must_dlsym(g_api.name, cudnn, #name);
    LEGACY_FUNCTIONS(LEGACY_DLSYM)
#undef LEGACY_DLSYM
  } else {
    die("unknown mode");
  }
}
#endif

// The stub library the api's legacy calls reach, and its own functions from its handle.
void find_reference() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(g_api.stubcudnn_op_counters), &info) == 0) die("dladdr");
  g_library_path = info.dli_fname;
  g_library = must_dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD);
#define LEGACY_REFERENCE(name)                                                   \
  g_ref.name = reinterpret_cast<decltype(g_ref.name)>(glibc_dlsym(g_library, #name)); \
  if (g_ref.name == nullptr) die(#name);
  LEGACY_FUNCTIONS(LEGACY_REFERENCE)
#undef LEGACY_REFERENCE
}

// The stub's own functions, the shim's statistics and switch, and the two handles every case has.
void set_up() {
  find_reference();
  find_stats();
  g_set_features = reinterpret_cast<unsigned (*)(unsigned)>(dlsym(RTLD_DEFAULT, "cudnn_fastpath_set_features"));
  g_features = reinterpret_cast<unsigned (*)()>(dlsym(RTLD_DEFAULT, "cudnn_fastpath_features"));
  print("library_is_ops", g_library_path.find("libcudnn_ops.so.9") != std::string::npos);
  g_main.open();
  g_other.open();
}

const scenario_main::Case kCases[] = {
    {"steady", steady},       {"reset", reset},     {"recreate", recreate}, {"refused", refused},
    {"around", around},       {"arguments", arguments}, {"factor", factor},  {"switched", switched},
    {"program_capture", program_capture}, {"other_context", other_context}, {"failures", failures},
    {"inner", inner},         {"forget", forget},   {"threads", threads},
    {"fork", fork_child},     {"declined", declined}, {"idle_records", idle_records},   {"relocation", relocation},
    {"relocation_alike", relocation_alike}, {"relocation_pairs", relocation_pairs},
};

}  // namespace
}  // namespace legacy_scenario

const scenario_main::Program kScenarioProgram{.name = "legacy scenario",
                                              .fixed_mode = legacy_scenario::kFixedMode,
                                              .load_api = legacy_scenario::load_api,
                                              .set_up = legacy_scenario::set_up,
                                              .finish = legacy_scenario::print_end,
                                              .cases = legacy_scenario::kCases};
