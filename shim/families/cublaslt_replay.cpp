// cuBLASLt under the shim: a steady cublasLtMatmul becomes one CUDA graph launch (the replay
// engine), and cublasLtMatmulAlgoGetHeuristic, which PyTorch asks before every matmul, is
// answered from a cache with exactly what cuBLASLt answered the first time.
//
// The matmul's key: the handle, the current context, the records of the matmul descriptor (with
// its emulation descriptor's, when it names one) and of the four layouts (blas_records.cpp), the
// A, B, C and D pointers, alpha and beta as the descriptor's pointer mode reads them (host: their
// bytes, sized by its scale type; device and the device-vector modes: the pointers;
// ALPHA_DEVICE_VECTOR_BETA_HOST: alpha's pointer and beta's bytes), the algo's 64 bytes (or that
// there is none), the workspace pointer and size. The stream is an argument: the capture passes
// the shim's own, and the graph is launched on the program's. The heuristic's key: the handle, the
// current context, the same records, the preference's record and the requested count; only a
// successful answer of at most kMaxAnswers results is kept.
#include <cublasLt.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "replay/answer_cache.h"
#include "replay/seen_filter.h"
#include "shim/engine/replay_engine.h"
#include "shim/families/blas.h"
#include "shim/families/blas_keys.h"
#include "shim/families/gate.h"
#include "shim/families/replay_call.h"
#include "shim/libraries/mode.h"
#include "shim/process/config.h"
#include "shim/process/counters.h"

namespace cudnn_fastpath::shim {
namespace {

constexpr int kMaxAnswers = 8;
constexpr std::size_t kResultWords = sizeof(cublasLtMatmulHeuristicResult_t) / 8;
static_assert(sizeof(cublasLtMatmulHeuristicResult_t) % 8 == 0, "a result is whole words");
static_assert(kResultWords == 12, "the copy of one result below unrolls 12 words");
// 512 answers, 8 ways a set (as the graph cache): a network asks a query per Linear, a distinct one
// each (BERT-base 72, BERT-large 144), and a set of 4 ways that more than 4 of them hash to would
// miss them all at every pass (H200 run 68: 72 queries, about 3 misses a pass).
using Answers = replay::AnswerCache<Key, 1 + kMaxAnswers * kResultWords, 64, 8>;
Answers g_answers;
replay::SeenFilter g_seen_handles;  // the handles that ever had an answer

enum Query : std::uint64_t { kMatmul = 1, kHeuristic = 2 };

bool counting(std::uint32_t m) { return (m & mode::kCounting) != 0; }

// The descriptor and the four layouts, into `key`; the descriptor's attributes the key needs into
// `desc`. False when the descriptor is unknown (the key is refused). The descriptor's pointers
// follow its name (blas_keys.h). The emulation descriptor the matmul descriptor names is a part of
// it, and takes a word only when there is one (the matmul descriptor's record, before it, says
// whether). A layout passed again (PyTorch's C and D are one) is read once: later places take the
// word kSameLayout above the first place's index, which no record's word has (a record's kind is
// its top byte: record_names.h). The same five objects as the thread's last key's, none of them
// set or destroyed since (its heuristic's, before a matmul), take that key's words again
// (replay/record_run.h); a run with an emulation descriptor (a sixth object), or with more
// pointers than it keeps (four), is not kept.
constexpr std::uint64_t kSameLayout = std::uint64_t{0xFF} << 56;
using OperationRun = decltype(ReplayThread::operation);
constexpr std::uint32_t kRunWords = sizeof(OperationRun::words) / sizeof(std::uint64_t);

bool add_operation(Key& key, ReplayThread* t, cublasLtMatmulDesc_t operation, cublasLtMatrixLayout_t a,
                   cublasLtMatrixLayout_t b, cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t d,
                   MatmulDescAttributes& desc) noexcept {
  const void* const objects[5] = {operation, a, b, c, d};
  OperationRun spare;  // a thread without a replay block reads into a run of its own
  OperationRun& run = t != nullptr ? t->operation : spare;
  static constexpr std::uint32_t kKinds[5] = {kMatmulDesc, kLayout, kLayout, kLayout, kLayout};
  // Whole: a descriptor made over the run's takes the run's words, its pointers' among them, only
  // when its pointers are the run's too.
  if (t != nullptr && run.holds<BlasRegistry>(objects, kKinds, kept_whole)) {
    const std::uint32_t n = run.length;
    std::uint64_t* const at = key.extend(n);
    if (at == nullptr) return false;
    // The run's every word, at once (a copy of a known size), where the key has room past its n.
    if (key.length - n + kRunWords <= Key::kMaxWords) {
      std::memcpy(at, run.words, sizeof run.words);
    } else {
      for (std::uint32_t i = 0; i < n; ++i) at[i] = run.words[i];
    }
    desc.pointer_mode = run.facts[0], desc.scale_type = run.facts[1], desc.emulation = run.facts[2];
    return true;
  }
  run.begin();
  const std::uint32_t start = key.length;
  if (!add_record(key, operation, kMatmulDesc, false, &desc, &run.versions[0])) return false;
  if (desc.emulation != 0) add_record(key, reinterpret_cast<const void*>(desc.emulation), kEmulation);
  const cublasLtMatrixLayout_t layouts[4] = {a, b, c, d};
#pragma GCC unroll 4
  for (int i = 0; i < 4; ++i) {
    int first = i;
#pragma GCC unroll 4
    for (int j = i - 1; j >= 0; --j)
      if (layouts[j] == layouts[i]) first = j;
    if (first == i || layouts[i] == nullptr) {
      add_record(key, layouts[i], kLayout, false, nullptr, &run.versions[1 + i]);
    } else {
      key.add(kSameLayout | static_cast<std::uint64_t>(first));
      run.versions[1 + i] = run.versions[1 + first];
    }
  }
  if (key.complete && desc.emulation == 0 && key.length - start == 5 + desc.pointer_count)
    run.finish(objects, key.words + start, key.length - start, {desc.pointer_mode, desc.scale_type, desc.emulation});
  return true;
}

// The preference's record into `key`, through the thread's last (as add_operation's run).
void add_preference(Key& key, ReplayThread& t, cublasLtMatmulPreference_t preference) noexcept {
  const void* const objects[1] = {preference};
  auto& run = t.preference;
  static constexpr std::uint32_t kKinds[1] = {kPreference};
  if (run.holds<BlasRegistry>(objects, kKinds, kept_record)) return key.add(run.words[0]);
  run.begin();
  if (add_record(key, preference, kPreference, false, nullptr, &run.versions[0]) && key.complete)
    run.finish(objects, &key.words[key.length - 1], 1, {});
}

// alpha and beta as the pointer mode reads them (the mode and the scale type are the matmul
// descriptor's, whose record the key holds). Two host scales of 4 bytes share a word.
void add_scales(Key& key, const MatmulDescAttributes& desc, const void* alpha, const void* beta) noexcept {
  const std::uint32_t size = scale_bytes(static_cast<std::int32_t>(desc.scale_type));
  switch (static_cast<std::int32_t>(desc.pointer_mode)) {
    case CUBLASLT_POINTER_MODE_HOST:
      if (alpha != nullptr && beta != nullptr && size == 4) {  // fp32 scales: the common case
        std::uint32_t both[2];
        std::memcpy(&both[0], alpha, 4);
        std::memcpy(&both[1], beta, 4);
        key.add_bytes(both, sizeof both);
        break;
      }
      add_host_scale(key, alpha, size);
      add_host_scale(key, beta, size);
      break;
    case CUBLASLT_POINTER_MODE_DEVICE:
    case CUBLASLT_POINTER_MODE_DEVICE_VECTOR:
      key.add_pointer(alpha);
      key.add_pointer(beta);
      break;
    case CUBLASLT_POINTER_MODE_ALPHA_DEVICE_VECTOR_BETA_ZERO:
      key.add_pointer(alpha);
      break;
    case CUBLASLT_POINTER_MODE_ALPHA_DEVICE_VECTOR_BETA_HOST:
      key.add_pointer(alpha);
      add_host_scale(key, beta, size);
      break;
    default:
      key.refuse();  // a mode this shim does not know
  }
}

// A matmul's shape sample (admit()): what its key holds besides its tensors that the call's arguments
// show without a look at a record: the handle, the algo's first words, the workspace size. The
// descriptors' addresses say nothing (PyTorch makes them anew for every call, where the last ones were).
std::uint64_t matmul_shape_sample(cublasLtHandle_t handle, const cublasLtMatmulAlgo_t* algo,
                                  std::size_t workspace_size) noexcept {
  replay::SampleHash hash;
  hash.add(reinterpret_cast<std::uintptr_t>(handle));
  hash.add(algo != nullptr ? algo->data[0] : 0);
  hash.add(algo != nullptr ? algo->data[1] : 0);
  hash.add(workspace_size);
  return hash.value();
}

// One matmul, as the engine runs it (replay_call.h's adapter): the program's arguments, the
// stream replaced at capture.
struct Matmul : NoHandleStream, NoHostBytes {
  static constexpr Family kFamily = Family::lt_matmul;
  static constexpr bool kPastGate = true;
  static constexpr int kLaunchFailed = CUBLAS_STATUS_EXECUTION_FAILED;

  const void* caller;
  const Caller* known_caller;
  decltype(RealSymbols::cublasLtMatmul) real;
  cublasLtHandle_t handle;
  cublasLtMatmulDesc_t desc;
  const void *alpha, *a;
  cublasLtMatrixLayout_t a_desc;
  const void* b;
  cublasLtMatrixLayout_t b_desc;
  const void *beta, *c;
  cublasLtMatrixLayout_t c_desc;
  void* d;
  cublasLtMatrixLayout_t d_desc;
  const cublasLtMatmulAlgo_t* algo;
  void* workspace;
  std::size_t workspace_size;
  cudaStream_t program_stream;

  bool known(std::uint32_t, Counter&) const noexcept { return true; }
  CUstream stream() const noexcept { return reinterpret_cast<CUstream>(program_stream); }
  static std::uint64_t shape_sample(const void* context) {
    const Matmul& x = *static_cast<const Matmul*>(context);
    return matmul_shape_sample(x.handle, x.algo, x.workspace_size);
  }
  static int run(void* context, CUstream capture) {
    const Matmul& x = *static_cast<const Matmul*>(context);
    return x.on(capture ? reinterpret_cast<cudaStream_t>(capture) : x.program_stream);
  }
  // The key: a descriptor the shim did not see set, or no current context, refuses it.
  void write_key(Key& key) const noexcept {
    key.add_pointer(handle);
    key.add(kMatmul | std::uint64_t{algo != nullptr} << 8);
    const void* context = current_context(caller, known_caller);
    key.add_pointer(context);
    MatmulDescAttributes attributes;
    if (add_operation(key, replay_thread(), desc, a_desc, b_desc, c_desc, d_desc, attributes))
      add_scales(key, attributes, alpha, beta);
    key.add_tensors({a, b, c, d, workspace});
    if (algo != nullptr) key.add_bytes(algo->data, sizeof algo->data);
    key.add(workspace_size);
    if (context == nullptr) key.refuse();
  }

 private:
  cublasStatus_t on(cudaStream_t stream) const noexcept {
    return real(handle, desc, alpha, a, a_desc, b, b_desc, beta, c, c_desc, d, d_desc, algo, workspace, workspace_size,
                stream);
  }
};

// cuBLASLt's gate (gate.h): the cuBLAS feature.
constexpr Gate<cublasStatus_t> kGate{mode::kCublas, kDeclinedBlas, CUBLAS_STATUS_NOT_INITIALIZED};

}  // namespace

cublasStatus_t lt_matmul(const void* caller, cublasLtHandle_t handle, cublasLtMatmulDesc_t desc, const void* alpha,
                         const void* a, cublasLtMatrixLayout_t a_desc, const void* b, cublasLtMatrixLayout_t b_desc,
                         const void* beta, const void* c, cublasLtMatrixLayout_t c_desc, void* d,
                         cublasLtMatrixLayout_t d_desc, const cublasLtMatmulAlgo_t* algo, void* workspace,
                         std::size_t workspace_size, cudaStream_t stream) noexcept {
  const std::uint32_t m = current_mode();
  const Reach reach = reach_for(Library::kCublasLt, caller);
  const auto real = reach.binding.real.cublasLtMatmul;
  cublasStatus_t status;
  if (answered_at_gate<&Dispatch::lt_matmul>(
          status, kGate, m, caller, reach.caller, real, handle, desc, alpha, a, a_desc, b, b_desc, beta, c, c_desc, d, d_desc, algo,
          workspace, workspace_size, stream))
    return status;
  auto sample = [&] {
    replay::SampleHash hash;
    hash.add(reinterpret_cast<std::uintptr_t>(handle));
    hash.add(reinterpret_cast<std::uintptr_t>(a));
    hash.add(reinterpret_cast<std::uintptr_t>(b));
    hash.add(reinterpret_cast<std::uintptr_t>(c));
    hash.add(reinterpret_cast<std::uintptr_t>(d));
    return hash.value();
  };
  auto direct = [&] {
    return real(handle, desc, alpha, a, a_desc, b, b_desc, beta, c, c_desc, d, d_desc, algo, workspace, workspace_size,
                stream);
  };
  auto make = [&] {
    return Matmul{{}, {}, caller, reach.caller, real, handle, desc, alpha, a, a_desc, b, b_desc, beta, c, c_desc, d,
                  d_desc, algo, workspace, workspace_size, stream};
  };
  auto shape_sample = [&] { return matmul_shape_sample(handle, algo, workspace_size); };
  return static_cast<cublasStatus_t>(replay_call<Matmul>(m, sample, shape_sample, direct, make));
}

cublasStatus_t lt_matmul_algo_get_heuristic(const void* caller, cublasLtHandle_t handle, cublasLtMatmulDesc_t desc,
                                            cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b,
                                            cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t d,
                                            cublasLtMatmulPreference_t preference, int requested,
                                            cublasLtMatmulHeuristicResult_t* results, int* returned) noexcept {
  const std::uint32_t m = current_mode();
  const Reach reach = reach_for(Library::kCublasLt, caller);
  const auto real = reach.binding.real.cublasLtMatmulAlgoGetHeuristic;
  cublasStatus_t status;
  if (answered_at_gate<&Dispatch::lt_matmul_algo_get_heuristic>(
          status, kGate, m, caller, reach.caller, real, handle, desc, a, b, c, d, preference, requested, results, returned))
    return status;
  auto direct = [&] {
    if (counting(m)) count(Counter::heuristic_direct);
    const LibraryCall inside;
    return real(handle, desc, a, b, c, d, preference, requested, results, returned);
  };
  ReplayThread* t = replay_thread();
  // The cache's admission first: a call it declines (every call of a load whose Linears never
  // repeat) looks at nothing else.
  if (t == nullptr || !t->admissions.admit(Admitted::kHeuristic)) return direct();
  if (requested < 1 || requested > kMaxAnswers || results == nullptr || returned == nullptr) return direct();
  Key key;
  key.add_pointer(handle);
  key.add(kHeuristic | static_cast<std::uint64_t>(requested) << 8);  // requested: 1 to kMaxAnswers
  key.add_pointer(current_context(caller, reach.caller));
  MatmulDescAttributes attributes;
  add_operation(key, t, desc, a, b, c, d, attributes);
  add_preference(key, *t, preference);
  if (!key.complete || key.words[2] == 0) return direct();
  // The answer goes straight into the program's results: on a miss they are the library's to write.
  int given = 0;
  auto take = [&](const std::atomic<std::uint64_t>* words, std::uint32_t length) {
    given = length >= 1 ? static_cast<int>(words[0].load(std::memory_order_relaxed)) : 0;
    if (given < 1 || given > requested || length != 1 + static_cast<std::uint32_t>(given) * kResultWords) {
      given = 0;
      return;
    }
    auto* into = reinterpret_cast<unsigned char*>(results);
    auto copy = [&](std::uint32_t n) {  // n words after the count; one result's as a constant
#pragma GCC unroll 12
      for (std::uint32_t k = 1; k <= n; ++k, into += 8) {
        const std::uint64_t word = words[k].load(std::memory_order_relaxed);
        std::memcpy(into, &word, 8);
      }
    };
    if (given == 1) copy(kResultWords);  // PyTorch's one result: unrolled
    else copy(length - 1);
  };
  // The thread's last query again (PyTorch's Linear asks one per call) is looked for where its
  // answer was; any other, or one whose answer moved, by its hash.
  auto& recent = t->heuristic;
  bool found = recent.is(key) && g_answers.find_again(recent.ticket, take) && given >= 1;
  if (!found) {
    replay::AnswerTicket where;
    found = g_answers.find(key, take, &where) && given >= 1;
    if (found) recent.keep(key, where);
  }
  if (found) {
    *returned = given;
    t->admissions.hit(Admitted::kHeuristic);
    if (counting(m)) count(Counter::heuristic_cached);
    return CUBLAS_STATUS_SUCCESS;
  }
  {
    const LibraryCall inside;
    status = real(handle, desc, a, b, c, d, preference, requested, results, returned);
  }
  if (status != CUBLAS_STATUS_SUCCESS || *returned < 0 || *returned > requested) {
    if (counting(m)) count(Counter::heuristic_direct);
    return status;
  }
  Answers::Answer answer;
  answer.length = 1 + static_cast<std::uint32_t>(*returned) * kResultWords;
  answer.words[0] = static_cast<std::uint64_t>(*returned);
  std::memcpy(&answer.words[1], results, static_cast<std::size_t>(*returned) * sizeof *results);
  const Answers::Stored stored = g_answers.insert(key, answer);
  if (stored.stored) t->heuristic.keep(key, stored.where);
  if (stored.evicted && !stored.evicted_used) t->admissions.waste(Admitted::kHeuristic);
  g_seen_handles.note(handle);
  if (counting(m)) count(stored.stored ? Counter::heuristic_stored : Counter::heuristic_direct);
  return status;
}

void forget_blas_handle(const void* handle) noexcept {
  if (handle == nullptr) return;
  forget_graphs_of_handle(HandleOwner::cublas, handle);
  if (!g_seen_handles.maybe(handle)) return;
  const auto h = reinterpret_cast<std::uintptr_t>(handle);
  g_answers.forget_if([h](const std::uint64_t* words, std::uint32_t length) { return length > 0 && words[0] == h; });
}

void forget_cublas_answers() noexcept {
  g_answers.forget_if([](const std::uint64_t*, std::uint32_t) { return true; });
}

}  // namespace cudnn_fastpath::shim
