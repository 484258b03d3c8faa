// A legacy-replay scenario program (legacy_scenario.cpp, its cases in legacy_scenario_*.cpp): the 13
// legacy ops of the stub libcudnn, called the way a framework calls them, with the stub libcuda
// loaded, so that a preloaded shim can capture steady calls and replay them as CUDA graphs. It
// prints key=value lines for legacy_test.cpp to judge, and runs with or without the shim.
//
//   legacy_scenario_linked CASE       the program links the stub libcudnn.so.9 (and the driver)
//   legacy_scenario_ops CASE          the program links the stub libcudnn_ops.so.9 for the legacy
//                                     API (its references carry that version), libcudnn.so.9 for
//                                     handles
//   legacy_scenario_dlopen MODE CASE  local: a framework library opened RTLD_LOCAL makes every call
//                                     (liblegacy_framework.so, PyTorch's case); dlsym: the program
//                                     opens the stub RTLD_LOCAL and takes every function with dlsym
//                                     on that handle (JAX's way; the shim's dlsym hands out its own)
//
// Every op's outputs are checked after every call against the stub's reference digest: the same
// stub function called again with the same arguments, around the shim (through a pointer taken
// with glibc's own dlsym on the stub library's handle), in the stub's reference mode (it runs at
// once and counts nowhere). A replay that used a stale descriptor, scalar, number or pointer writes
// another digest; one that did not run writes nothing (outputs are cleared before each call).
// Common keys: "checks", "mismatches" (outputs not as the reference says), "failures" (calls that
// should have succeeded and did not), and "end.*", what reached the stubs in the whole run.
#pragma once

#include <cuda.h>
#include <cudnn.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "tests/legacy/legacy_api.h"
#include "tests/stub/stub_cuda.h"
#include "tests/support/glibc_dlsym.h"
#include "tests/support/must_load.h"
#include "tests/support/scenario_main.h"

namespace legacy_scenario {

// The shim's feature bit for legacy replay (shim_control.h), repeated: the shim is under test.
constexpr unsigned kFeatureLegacy = 8u;

// The functions as the program calls them (through the shim, when it interposes), and the stub
// library's own, around any interposer (reference calls, and descriptors made around the shim).
extern LegacyApi g_api;
extern LegacyApi g_ref;
// The path of the stub library the api's legacy calls reach (libcudnn.so.9 or libcudnn_ops.so.9),
// and its handle.
extern std::string g_library_path;
extern void* g_library;
// The shim's switch and features, or null without the shim.
extern unsigned (*g_set_features)(unsigned);
extern unsigned (*g_features)();

using scenario_main::print;

// ---- the world of one op ------------------------------------------------------------------------

enum Single : unsigned { kFilter = 1, kConvolution = 2, kActivation = 4, kPooling = 8, kOpTensor = 16, kLrn = 32 };
enum FamilyOf : int { kBn = 0, kConv = 1, kTensor = 2 };

struct World;

// An op as the slots of its arguments in a World: t[0..tensors), s[0..scalars), and so on, in the
// order `call` passes them (as in tests/stub/stub_legacy_test.h).
struct Op {
  const char* name;
  StubCudnnLegacyOp id;
  FamilyOf family;
  int tensors, scalars, numbers, inputs, outputs, spaces;
  unsigned singles;
  int output_tensor;  // the tensor whose data type sizes the scalars (CUDNN_DATA_DOUBLE: doubles)
  int epsilon;        // which number is epsilon (-1: none)
  int factor;         // which number is the exponential average factor (-1: none)
  std::vector<std::pair<int, int>> choices;  // each choice's value, and another valid one
  cudnnStatus_t (*call)(const LegacyApi&, World&);
};

// Every op of the stub, in StubCudnnLegacyOp's order.
const std::vector<Op>& ops();

// One value for each slot an op can have, its descriptors made and set through g_api (the shim's
// functions, when it interposes); every buffer 16 bytes of host memory, distinct from every other
// World's.
struct World {
  World(const Op& op, cudnnHandle_t handle);
  ~World();
  World(const World&) = delete;
  World& operator=(const World&) = delete;

  void set_scalar(int i, double value);  // as a double when `wide`, else as a float
  void set_tensor(int i, int w, cudnnDataType_t type = CUDNN_DATA_FLOAT, const LegacyApi& api = g_api);
  void clear_outputs();  // each output's first 8 bytes: output_before
  std::uint64_t output(int i) const;

  const Op& op;
  bool wide = false;
  cudnnHandle_t handle = nullptr;
  cudnnTensorDescriptor_t t[6]{};
  cudnnFilterDescriptor_t filter = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  cudnnActivationDescriptor_t act = nullptr;
  cudnnPoolingDescriptor_t pool = nullptr;
  cudnnOpTensorDescriptor_t op_tensor = nullptr;
  cudnnLRNDescriptor_t lrn = nullptr;
  alignas(8) unsigned char s[4][8]{};
  const void* scalar[4]{};
  double numbers[2] = {1e-5, 0.1};
  int choices[2]{};
  std::size_t sizes[2] = {64, 128};
  std::uint64_t output_before = 0;  // what clear_outputs() leaves in each output (no digest is 0)
  // 256-byte aligned (the World with them): a buffer's alignment, which a call's shape holds
  // (shim/engine/shape_cache.h), is the same in every run, wherever the heap puts the World.
  alignas(256) std::uint64_t in_data[8][2]{};
  alignas(256) std::uint64_t spare_in_data[8][2]{};
  alignas(256) std::uint64_t out_data[6][2]{};
  alignas(256) std::uint64_t spare_out_data[6][2]{};
  alignas(256) std::uint64_t space_data[2][2]{};
  const void* in[8]{};
  void* out[6]{};
  void* space[2]{};
};

// A World for `op` on `handle`, alive until the process ends: no later World takes its buffers'
// or descriptors' addresses, so no two Worlds' calls have the same key.
World& make_world(const Op& op, cudnnHandle_t handle);
// A World for each op on `handle` (alive until the process ends).
std::vector<World*> worlds(cudnnHandle_t handle);

// ---- checking ------------------------------------------------------------------------------------

extern std::atomic<long long> g_checks, g_mismatches, g_failures;

// The digest the stub's reference call writes for `w` now (outputs cleared before and after).
std::uint64_t reference_digest(World& w);
// Whether every output of `w` holds `digest`.
bool outputs_hold(const World& w, std::uint64_t digest);
// One call as the program makes it: outputs cleared, the op called through g_api, its outputs
// compared with the reference digest (a failure when it does not succeed). Returns its status.
cudnnStatus_t check(World& w);
// `n` checks of `w`.
void check_times(World& w, int n);

// ---- what reached the stubs ----------------------------------------------------------------------

// The shim's legacy counters (statistics on), by the stats API; absent without the shim or with
// statistics off.
constexpr const char* kFamilyNames[3] = {"legacy_bn", "legacy_conv", "legacy_tensor"};
constexpr const char* kOutcomes[9] = {"direct",           "captured",         "launches",
                                      "refused_capturing", "refused_context", "refused_failed",
                                      "refused_full",      "unknown",         "declined"};
// The shim's relocation counters (shim/engine/shape_cache.h), for every family at once.
constexpr const char* kRelocationCounters[] = {"relocated",           "relocation_updates",    "relocations_proven",
                                               "relocations_refused", "relocation_mismatches", "relocation_checks",
                                               "relocations_unprofitable"};
constexpr int kRelocationCounterCount = sizeof kRelocationCounters / sizeof kRelocationCounters[0];

struct Snapshot {
  StubCudnnOpCounters op[STUBCUDNN_LEGACY_OPS];
  StubCudnnOpCounters total;
  StubCudnnDescriptorCounters descriptors[STUBCUDNN_DESCRIPTOR_KINDS];
  StubCudnnCounters cudnn;
  StubCudaGraphCounters driver;
  std::uint64_t inner;
  bool counting = false;
  std::uint64_t shim[3][9]{};
  std::uint64_t relocation[kRelocationCounterCount]{};  // kRelocationCounters' (absent from an older shim: then 0)
  static Snapshot now();
};

// Prints what changed since `before`, each key with `prefix`: the stub's op counts ("calls" that
// reached it, "direct_runs", "captured", "replays"; per op too with `per_op`), the driver's
// ("captures", "launches", ...), "set_stream", "inner_calls", and the shim's counters
// ("shim.legacy_bn_direct", ..., "shim.legacy_<outcome>" summed over the families, and
// "shim.relocated", ... where the shim has them).
void print_since(const Snapshot& before, const std::string& prefix, bool per_op = false);
// Prints "checks", "mismatches", "failures" and "end.*" (every stub count since the start).
void print_end();

// A handle on a stream of its own (both made through g_api and the driver).
struct Handle {
  cudnnHandle_t handle = nullptr;
  CUstream stream = nullptr;
  void open();
  // Whether the stub's own view of the handle's stream (its cudnnGetStream) is `stream`.
  bool holds_own_stream() const;
};
extern Handle g_main, g_other;

// The cases, each in a file of its topic.
int steady();
int reset();
int recreate();
int refused();
int around();
int arguments();
int factor();
int program_capture();
int other_context();
int failures();
int inner();
int forget();
int threads();
int fork_child();
int declined();
int switched();
int relocation();
int relocation_alike();
int relocation_pairs();
int idle_records();

}  // namespace legacy_scenario
