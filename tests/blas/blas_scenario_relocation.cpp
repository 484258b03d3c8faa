// Cases of relocation (shim/engine/shape_cache.h): calls of one shape whose tensors move from call to
// call, launched as their shape's graph pointed at each call's tensors where that was proven right,
// by pointer where not. The stubs lay their work out in the kernel style BLAS_SCENARIO_STYLE names
// (tests/support/moving_tensors.h; plain when unset).
#include <sys/mman.h>

#include <thread>

#include "tests/blas/blas_scenario.h"
#include "tests/support/moving_tensors.h"

namespace blas_scenario {
namespace {

using moving::Slots;

constexpr int kCalls = 200;

// A call's tensors: a matmul's A, B, C and D (`out`); a GEMM's A, B and C (`out`: it reads and
// writes it; `c` is not used).
struct Tensors {
  void* a;
  void* b;
  void* c;
  void* out;
};

enum Entry { kMatmul, kGemm, kStrided };
const char* const kEntryNames[] = {"matmul", "gemm", "strided"};

// Where the tensors of a load are: each tensor of call i in slot i * (its step) of its own pool (A
// 1, B 2, C 3, the output 4), or in a fixed slot.
struct Pools {
  Slots a{kCalls + 1, 0xA000}, b{2 * kCalls + 1, 0xB000}, c{3 * kCalls + 1, 0xC000}, out{4 * kCalls + 1, 0};
  Tensors fresh(int i) { return {a.at(i), b.at(2 * i), c.at(3 * i), out.at(4 * i)}; }
  Tensors output_only(int i) { return {a.at(0), b.at(0), c.at(0), out.at(4 * i)}; }
};

// The calls of each entry point on objects of their own (a cuBLASLt handle and descriptors, a cuBLAS
// handle with a workspace, each with its stream): calls made on another Calls have another shape.
// Never closed: no later object takes their addresses.
class Calls {
 public:
  Calls() {
    lt_.open();
    blas_.open();
  }

  Matmul matmul(const Tensors& t) const {
    Matmul m = matmul_of(lt_, alpha_, beta_, dummy_, dummy_, dummy_, dummy_);
    m.a = t.a, m.b = t.b, m.c = t.c, m.d = t.out;
    return m;
  }
  Gemm gemm(Entry e, const Tensors& t) const {
    Gemm g = gemm_of(blas_.handle, alpha_, beta_, dummy_, dummy_, dummy_);
    g.entry = e == kStrided ? STUBBLAS_GEMM_STRIDED_BATCHED_EX : STUBBLAS_GEMM_EX;
    g.a = t.a, g.b = t.b, g.c = t.out;
    return g;
  }
  CUstream stream(Entry e) const { return e == kMatmul ? lt_.stream : blas_.stream; }

  // The call made through the shim and its output checked against the stub's reference.
  void check(Entry e, const Tensors& t, Counts& counts) const {
    if (e == kMatmul) checked(matmul(t), counts);
    else checked(gemm(e, t), counts);
  }
  // The call made through the shim, nothing checked (inside the program's capture).
  cublasStatus_t make(Entry e, const Tensors& t) const {
    return e == kMatmul ? matmul(t).call(g_api) : gemm(e, t).call(g_api);
  }
  // The output's first word the call should write; the output then as the call needs it before it
  // runs (D poisoned; C as checked() sets it).
  std::uint64_t expected(Entry e, const Tensors& t) const {
    const std::uint64_t before = e == kMatmul ? 0xdead : kGemmBefore;
    std::memcpy(t.out, &before, sizeof before);
    const std::uint64_t want = e == kMatmul ? matmul(t).reference() : gemm(e, t).reference(kGemmBefore);
    std::memcpy(t.out, &before, sizeof before);
    return want;
  }

 private:
  static constexpr std::uint64_t kGemmBefore = 0x0C0C0C0C;
  LtObjects lt_;
  BlasHandle blas_;
  Scalar alpha_{1.5f}, beta_{0.25f};
  mutable Buffer dummy_;
};

std::uint64_t first_word(const void* p) {
  std::uint64_t word;
  std::memcpy(&word, p, sizeof word);
  return word;
}

// A load: where call i's tensors are.
struct Load {
  const char* name;
  Tensors (*at)(Pools&, int i);
  bool matmul_only;  // the GEMMs' C is their output: nothing to vary
};

const Load kLoads[] = {
    // Every tensor new every call.
    {"fresh", [](Pools& p, int i) { return p.fresh(i); }, false},
    // The inputs stay (proven nowhere: the graph holds them as they were), the output moves.
    {"outputs", [](Pools& p, int i) { return p.output_only(i); }, false},
    // A matmul's C and D one buffer, new every call, and new inputs.
    {"c_is_d", [](Pools& p, int i) { return Tensors{p.a.at(i), p.b.at(2 * i), p.out.at(4 * i), p.out.at(4 * i)}; }, true},
    // As fresh, the output 256-byte aligned for two calls, then 16-byte aligned (and no more) for
    // two: calls of another alignment are another shape (a library may choose another kernel).
    {"aligned_pairs",
     [](Pools& p, int i) {
       Tensors t = p.fresh(i);
       t.out = p.out.at(4 * i, i / 2 % 2 == 0 ? 0 : 16);
       return t;
     },
     false},
    // The inputs taken from two sets in turn (double buffers), the output new every call: the graph
    // is pointed back at the set it left.
    {"inputs_alternate",
     [](Pools& p, int i) { return Tensors{p.a.at(i % 2), p.b.at(2 * (i % 2)), p.c.at(0), p.out.at(4 * i)}; }, false},
    // As outputs, A moved once, halfway: a tensor the proof never saw move, so its calls go by
    // pointer from then on.
    {"input_moved",
     [](Pools& p, int i) {
       Tensors t = p.output_only(i);
       if (i >= kCalls / 2) t.a = p.a.at(1);
       return t;
     },
     false},
    // A decode step's projections (a layer's key and value, its gate and up): two calls in turn
    // read one input, each with a weight of its own (four layers' worth), each output new. The
    // input moves from one pair to the next, never inside one.
    {"shared_input",
     [](Pools& p, int i) { return Tensors{p.a.at(i % 8), p.b.at(2 * (i / 2)), p.c.at(0), p.out.at(4 * i)}; }, false},
    // Two whole sets of tensors in turn (a training loop's allocator): each call repeats every other
    // call, its own graph soon.
    {"sets_alternate", [](Pools& p, int i) { return p.fresh(i % 2); }, false},
    // As fresh for half the calls, then two new sets in turn: keys that come back once the shape
    // relocates, each its own graph once it came back often enough.
    {"settles", [](Pools& p, int i) { return p.fresh(i < kCalls / 2 ? i : kCalls / 2 + i % 2); }, false},
};

void set_style(int style) {
  if (g_stub.stubblas_set_kernel_style(style) < 0) die("stubblas_set_kernel_style");
}

}  // namespace

// Every load of kLoads, kCalls calls of each entry point, in the kernel style BLAS_SCENARIO_STYLE
// names. Prints LOAD.ENTRY.* for each. Each load and entry point on objects of its own (a shape of
// its own) and on a thread of its own (the admission rule's state is the thread's: a load whose
// calls go by pointer and never repeat backs its family off, and must not decide the next one's).
int relocation() {
  set_style(moving::style_from_env("BLAS_SCENARIO_STYLE"));
  static Pools pools;
  Counts total;
  for (const Load& load : kLoads)
    for (const Entry e : {kMatmul, kGemm, kStrided}) {
      if (load.matmul_only && e != kMatmul) continue;
      static std::vector<Calls*> kept;  // never destroyed: see Calls
      const Calls& calls = *kept.emplace_back(new Calls);
      Counts counts;
      const Snapshot before = Snapshot::now();
      std::thread([&] {
        for (int i = 0; i < kCalls; ++i) calls.check(e, load.at(pools, i), counts);
      }).join();
      const std::string prefix = std::string(load.name) + "." + kEntryNames[e] + ".";
      print_since(before, prefix);
      print(prefix + "mismatches", counts.mismatches);
      total.add(counts);
    }
  print("calls", kCalls);
  print_counts(total);
  return 0;
}

// The fresh load's matmuls on two streams in turn: a shape for each stream (the launches of one
// executable graph are ordered behind each other: one graph for two streams would join them).
int relocation_streams() {
  static Pools pools;
  Calls calls;
  CUstream second = nullptr;
  if (cuStreamCreate(&second, 0) != CUDA_SUCCESS) die("cuStreamCreate");
  Counts counts;
  const Snapshot before = Snapshot::now();
  for (int i = 0; i < kCalls; ++i) {
    Matmul m = calls.matmul(pools.fresh(i));
    if (i % 2 == 1) m.stream = reinterpret_cast<cudaStream_t>(second);
    checked(m, counts);
  }
  print_since(before, "matmul.");
  print("calls", kCalls);
  print_counts(counts);
  return 0;
}

// A proven shape's calls (new tensors every call) made while the program captures its own graph on
// their stream: they reach the library, recorded into that graph, and nothing is launched or
// relocated by the shim; the program's graph then does each call's work, and relocation goes on
// after it.
int relocation_capture() {
  constexpr int kBefore = 10, kDuring = 5, kAfter = 10;
  static Pools pools;
  Counts counts;
  for (const Entry e : {kMatmul, kGemm}) {
    const std::string name = kEntryNames[e];
    Calls calls;
    int i = 0;
    Snapshot before = Snapshot::now();
    for (; i < kBefore; ++i) calls.check(e, pools.fresh(i), counts);
    print_since(before, name + "_before.");
    const CUstream stream = calls.stream(e);
    before = Snapshot::now();
    if (cuStreamBeginCapture_v2(stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL) != CUDA_SUCCESS) die("begin");
    for (int k = 0; k < kDuring; ++k)
      if (calls.make(e, pools.fresh(i + k)) != CUBLAS_STATUS_SUCCESS) ++counts.failures;
    CUgraph graph = nullptr;
    if (cuStreamEndCapture(stream, &graph) != CUDA_SUCCESS) die("end");
    print_since(before, name + "_during.");
    CUgraphExec exec = nullptr;
    if (cuGraphInstantiateWithFlags(&exec, graph, 0) != CUDA_SUCCESS) die("instantiate");
    std::uint64_t expected[kDuring];
    for (int k = 0; k < kDuring; ++k) expected[k] = calls.expected(e, pools.fresh(i + k));
    before = Snapshot::now();
    if (cuGraphLaunch(exec, stream) != CUDA_SUCCESS) die("launch");
    print_since(before, name + "_program_launch.");
    long long right = 0;
    for (int k = 0; k < kDuring; ++k) right += first_word(pools.fresh(i + k).out) == expected[k];
    print(name + "_program_launch.right", right);
    counts.mismatches += kDuring - right;
    cuGraphExecDestroy(exec);
    cuGraphDestroy(graph);
    i += kDuring;
    before = Snapshot::now();
    for (int k = 0; k < kAfter; ++k, ++i) calls.check(e, pools.fresh(i), counts);
    print_since(before, name + "_after.");
  }
  print_counts(counts);
  return 0;
}

// A GEMM's shape learnt while a capture begins that the shim did not see before its own (another
// thread's global capture, the call on the legacy stream): the stub answers "capturing" to the
// capture's question only (stubcuda_capturing_at_query), at the shape's first capture (first.*: its
// third call, as the runners learn shapes, whose capture asks first) or its second (second.*: the
// call after, which asks before the launch it may make, then the capture asks). Fresh tensors every
// call, a handle of its own each phase.
int relocation_capture_race() {
  constexpr int kCalls = 20;
  static Pools pools;
  Counts counts;
  int i = 0;
  for (const int raced : {2, 3}) {
    Calls calls;
    const Snapshot before = Snapshot::now();
    for (int k = 0; k < kCalls; ++k, ++i) {
      if (k == raced) stubcuda_capturing_at_query(raced == 2 ? 1 : 2);  // the capture's question
      calls.check(kGemm, pools.fresh(i), counts);
    }
    stubcuda_capturing_at_query(0);
    print_since(before, raced == 2 ? "first." : "second.");
  }
  print("calls", kCalls);
  print_counts(counts);
  return 0;
}

// The outputs load's calls of a proven shape, then the library's kernels change while nothing the
// shim sees does (the stub's style, plain to two kernels), the same calls going on: the kept graph
// relocated would do the old kernel's work. Prints before.* and after.* for each entry point, and
// their own mismatches (the premise, without verify mode: after.mismatches > 0).
int relocation_switch() {
  constexpr int kEach = 20;
  static Pools pools;
  Counts total;
  for (const Entry e : {kMatmul, kGemm}) {
    Calls calls;
    int i = 0;
    for (const char* phase : {"before.", "after."}) {
      if (std::strcmp(phase, "after.") == 0) set_style(STUB_KERNEL_STYLE_TWO_KERNELS);
      Counts counts;
      const Snapshot before = Snapshot::now();
      for (int k = 0; k < kEach; ++k, ++i) calls.check(e, pools.output_only(i), counts);
      const std::string prefix = std::string(kEntryNames[e]) + "_" + phase;
      print_since(before, prefix);
      print(prefix + "mismatches", counts.mismatches);
      total.add(counts);
    }
    set_style(STUB_KERNEL_STYLE_PLAIN);
  }
  print("calls", kEach);
  print_counts(total);
  return 0;
}

// The split style with B (also the matmul's C, so that it is found) alternating between two pages 8
// GiB apart, so that the low half of its address stays and the word holding its high half (the lower
// four bytes of a word) changes by 2, while A (at odd addresses) moves by exactly 2 every call. Each
// page is in a 4 GiB region of its own, so each is a shape of its own, in which B stays put: relocated
// with B where it was. (Were they one shape, that word is no pointer, however A moved: the 4 GiB rule
// refuses it.)
int relocation_far() {
  constexpr int kFarCalls = 20;
  constexpr std::size_t kApart = std::size_t{8} << 30, kPage = 4096;
  set_style(STUB_KERNEL_STYLE_SPLIT);
  void* reserved = mmap(nullptr, kApart + kPage, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (reserved == MAP_FAILED) die("mmap");
  auto* base = static_cast<unsigned char*>(reserved);
  unsigned char* far[2] = {base, base + kApart};
  for (unsigned char* page : far) {
    if (mprotect(page, kPage, PROT_READ | PROT_WRITE) != 0) die("mprotect");
    std::memset(page, page == base ? 0xB1 : 0xB2, kPage);
  }
  alignas(256) static unsigned char a_bytes[2 * kFarCalls + 64];
  for (std::size_t j = 0; j < sizeof a_bytes; ++j) a_bytes[j] = static_cast<unsigned char>(j * 37 + 11);
  static Pools pools;
  Calls calls;
  Counts counts;
  const Snapshot before = Snapshot::now();
  for (int i = 0; i < kFarCalls; ++i) {
    unsigned char* b = far[i % 2];
    calls.check(kMatmul, Tensors{a_bytes + 1 + 2 * i, b, b, pools.out.at(4 * i)}, counts);
  }
  print_since(before, "far.");
  print("calls", kFarCalls);
  print_counts(counts);
  return 0;
}

// The kernel styles that pass a value derived from B's address besides B itself (low_half,
// high_half, page_index), and the ones that choose their kernel by 4 KiB or 1 MiB alignment
// (by_page_alignment, by_large_alignment),
// BLAS_SCENARIO_STYLE naming which (replay/graph_relocation.h: what two captures cannot show). In a
// first phase B (every tensor, for by_page_alignment) moves only in ways that leave the derived value
// as it was, so that any two captures agree on it: inside one 4 GiB region, between two places 4 GiB
// apart, inside one page, among 4 KiB-aligned places (below 1 MiB for by_large_alignment). In the
// second it moves so that the value changes: into the next region, to a third place, across pages,
// to 256-byte-aligned places (1 MiB-aligned ones). A
// relocation proven in the first phase that took the value for a constant writes wrong outputs in
// the second. Prints ENTRY.first.* and ENTRY.second.* for the matmul and the GEMM.
int relocation_derived() {
  constexpr int kPhase = 20;
  constexpr std::int64_t kRegionPages = moving::Regions::kRegion / moving::Regions::kPage;
  const int style = moving::style_from_env("BLAS_SCENARIO_STYLE");
  set_style(style);
  static moving::Regions regions;
  static Pools pools;
  Counts total;
  for (const Entry e : {kMatmul, kGemm}) {
    static std::vector<Calls*> kept;  // never destroyed: see Calls
    const Calls& calls = *kept.emplace_back(new Calls);
    const std::int64_t page = e == kMatmul ? 1 : 1001;  // each entry point's tensors apart, 4 KiB aligned, no more
    // Call i's tensors; B moves by 5 slots a call within a page (A, C and the output by 1, 3, 4).
    auto at = [&](int i) {
      const bool second = i >= kPhase;
      const std::size_t slot = 256 * static_cast<std::size_t>(5 * i % 16);
      Tensors t = pools.fresh(i);
      switch (style) {
        case STUB_KERNEL_STYLE_HIGH_HALF:
          t.b = regions.at(second ? page : -1 - page, slot);
          break;
        case STUB_KERNEL_STYLE_LOW_HALF:
          // The proof's second capture (call 3) in the third place's region, every place of one
          // alignment (an alignment the proof did not see would be checked against a fresh capture).
          t.b = regions.at(second ? page + 2 : page + (i + 1) % 2 * kRegionPages);
          break;
        case STUB_KERNEL_STYLE_PAGE_INDEX:
          t.b = regions.at(second ? page + 1 + i : page, slot);
          break;
        case STUB_KERNEL_STYLE_BY_PAGE_ALIGNMENT: {
          const std::size_t offset = second ? 256 : 0;
          t = {regions.at(page + 100 + i, offset), regions.at(page + 200 + 2 * i, offset),
               regions.at(page + 300 + 3 * i, offset), regions.at(page + 400 + 4 * i, offset)};
          break;
        }
        case STUB_KERNEL_STYLE_BY_LARGE_ALIGNMENT: {
          // 4 KiB to 512 KiB aligned pages (none a multiple of 256 pages), then 1 MiB-aligned ones.
          const std::int64_t unit = second ? 256 : 1;
          t = {regions.at(unit * (page + 100 + i)), regions.at(unit * (page + 200 + 2 * i)),
               regions.at(unit * (page + 300 + 3 * i)), regions.at(unit * (page + 400 + 4 * i))};
          break;
        }
        default:
          die("relocation_derived: a style of B's derived values");
      }
      return t;
    };
    std::thread([&] {
      for (const char* phase : {"first.", "second."}) {
        Counts counts;
        const Snapshot before = Snapshot::now();
        const int from = std::strcmp(phase, "first.") == 0 ? 0 : kPhase;
        for (int i = from; i < from + kPhase; ++i) calls.check(e, at(i), counts);
        const std::string prefix = std::string(kEntryNames[e]) + "." + phase;
        print_since(before, prefix);
        print(prefix + "mismatches", counts.mismatches);
        total.add(counts);
      }
    }).join();
  }
  print("calls", kPhase);
  print_counts(total);
  return 0;
}

// The fresh load's matmuls and GEMMs in the memset style on a stream of another context than the
// one current on the calling thread: the memset node is set again in the context it was captured in
// (the stub driver, as a real one, refuses an update in another). Prints matmul.* and gemm.*.
int relocation_context() {
  set_style(STUB_KERNEL_STYLE_MEMSET);
  static Pools pools;
  Counts total;
  for (const Entry e : {kMatmul, kGemm}) {
    static std::vector<Calls*> kept;  // never destroyed: see Calls
    const Calls& calls = *kept.emplace_back(new Calls);
    stubcuda_set_stream_context(calls.stream(e), reinterpret_cast<CUcontext>(std::uintptr_t{0xC200000}), 0);
    Counts counts;
    const Snapshot before = Snapshot::now();
    std::thread([&] {
      for (int i = 0; i < 40; ++i) calls.check(e, pools.fresh(i), counts);
    }).join();
    const std::string prefix = std::string(kEntryNames[e]) + ".";
    print_since(before, prefix);
    print(prefix + "mismatches", counts.mismatches);
    total.add(counts);
  }
  print_counts(total);
  return 0;
}

// Shapes whose proofs are refused (the split style, every tensor new every call), one after the
// other: kShapes matmuls of their own workspace size, six calls each. Their captures were made for
// nothing, and weigh against the family's admission as an evicted graph's would: it backs off
// (direct, declined) before the last shapes are captured. Prints refused.*.
int relocation_refused_shapes() {
  constexpr int kShapes = 40, kEach = 6;
  set_style(STUB_KERNEL_STYLE_SPLIT);
  static Pools pools;
  Calls calls;
  alignas(256) static unsigned char workspace[4096];
  Counts counts;
  const Snapshot before = Snapshot::now();
  std::thread([&] {
    for (int s = 0; s < kShapes; ++s)
      for (int i = 0; i < kEach; ++i) {
        Matmul m = calls.matmul(pools.fresh((s * kEach + i) % kCalls));
        m.workspace = workspace;
        m.workspace_size = 64 + 64 * static_cast<std::size_t>(s);
        checked(m, counts);
      }
  }).join();
  print_since(before, "refused.");
  print("shapes", kShapes);
  print_counts(counts);
  return 0;
}

// Keys a shape took before it was refused: a matmul whose tensors alternate between two sets (an
// eval loop's activations, placed alike every other iteration), in the split kernel style, whose
// proofs are refused. The shape learns from the first calls, takes them, and is refused; its two
// keys then go by pointer, each captured and launched. Prints alternating.* and "calls".
int relocation_refused_keys() {
  constexpr int kCalls = 60;
  set_style(STUB_KERNEL_STYLE_SPLIT);
  static Pools pools;
  Calls calls;
  Counts counts;
  const Snapshot before = Snapshot::now();
  std::thread([&] {
    for (int i = 0; i < kCalls; ++i) checked(calls.matmul(pools.fresh(i % 2)), counts);
  }).join();
  print_since(before, "alternating.");
  print("calls", kCalls);
  print_counts(counts);
  return 0;
}

// Admission per shape: on one thread, a matmul whose output is new every call (a shape that
// relocates) between kOthers matmuls that never repeat (another workspace size every call) on other
// objects: their entries are evicted unused, and the family backs off. The steady shape's calls go
// on relocating (replay_engine.h's kShaped). Prints first.* and second.* (the rounds' two halves).
int relocation_admission() {
  constexpr int kRounds = 1200, kOthers = 7;
  static moving::Slots inputs(kRounds + 1, 0xA100), outputs(3 * kRounds + 1, 0);
  static Calls steady, others;
  alignas(256) static unsigned char workspace[4096];
  Counts counts;
  std::thread([&] {
    for (const char* half : {"first.", "second."}) {
      const Snapshot before = Snapshot::now();
      const int from = half[0] == 'f' ? 0 : kRounds / 2;
      for (int i = from; i < from + kRounds / 2; ++i) {
        checked(steady.matmul(Tensors{inputs.at(i), inputs.at(kRounds), outputs.at(3 * i), outputs.at(3 * i)}), counts);
        for (int k = 0; k < kOthers; ++k) {
          Matmul m = others.matmul(Tensors{inputs.at(0), inputs.at(1), outputs.at(0), outputs.at(1)});
          m.workspace = workspace;
          m.workspace_size = 64 * static_cast<std::size_t>(1 + i * kOthers + k);
          checked(m, counts);
        }
      }
      print_since(before, half);
    }
  }).join();
  print("rounds", kRounds);
  print_counts(counts);
  return 0;
}

// A decode loop's GEMMs (cublasGemmEx), kTokens steps of kLayers layers, each layer's seven
// projections on four shapes, in a language model's order: q (shape 1), k and v (shape 2, one
// input), o (shape 1 again, another input), gate and up (shape 3, one input), down (shape 4). Every
// projection has a weight of its own; every input is new at each layer of each step, every output
// new. Prints first.* and second.* (the steps' two halves), "calls" (a half's).
int relocation_decode() {
  constexpr int kTokens = 40, kLayers = 8, kProjections = 7;
  constexpr int kShapeOf[kProjections] = {0, 1, 1, 0, 2, 2, 3};
  constexpr int kInputOf[kProjections] = {0, 0, 0, 1, 2, 2, 3};  // x, x, x, attention, x2, x2, h
  static moving::Slots weights(kLayers * kProjections + 1, 0xA000), inputs(kTokens * kLayers * 4 + 1, 0xB000),
      outputs(kTokens * kLayers * kProjections + 1, 0);
  static Calls shapes[4];
  Counts counts;
  std::thread([&] {
    int output = 0;
    for (const char* half : {"first.", "second."}) {
      const Snapshot before = Snapshot::now();
      const int from = half[0] == 'f' ? 0 : kTokens / 2;
      for (int t = from; t < from + kTokens / 2; ++t)
        for (int l = 0; l < kLayers; ++l)
          for (int p = 0; p < kProjections; ++p) {
            const Tensors tensors{weights.at(l * kProjections + p), inputs.at((t * kLayers + l) * 4 + kInputOf[p]),
                                  weights.at(kLayers * kProjections), outputs.at(output++)};
            shapes[kShapeOf[p]].check(kGemm, tensors, counts);
          }
      print_since(before, half);
    }
  }).join();
  print("calls", kTokens / 2 * kLayers * kProjections);
  print_counts(counts);
  return 0;
}

// Shapes that come in bursts, then never again, and one that stays: "bursts." runs kSteps decode
// steps of kLayers strided-batched GEMMs each, a step's calls of one shape (a Calls of its own: its
// handle is in the shape) and each layer's tensors its own, as a decode step's attention at a KV
// length the next step leaves behind; "steady." then runs kSteadyCalls calls of one shape with a new
// output and input every call. Prints bursts.* and steady.*, and their calls.
int relocation_bursts() {
  constexpr int kSteps = 24, kLayers = 8, kSteadyCalls = 64;
  static Calls steps[kSteps];
  static Calls steady;
  static moving::Slots weights(kLayers + 1, 0xA000), inputs(kSteps * kLayers + kSteadyCalls + 1, 0xB000),
      outputs(kSteps * kLayers + kSteadyCalls + 1, 0);
  Counts counts;
  std::thread([&] {
    int call = 0;
    Snapshot before = Snapshot::now();
    for (int s = 0; s < kSteps; ++s)
      for (int l = 0; l < kLayers; ++l, ++call)
        steps[s].check(kStrided, {weights.at(l), inputs.at(call), weights.at(kLayers), outputs.at(call)}, counts);
    print_since(before, "bursts.");
    before = Snapshot::now();
    for (int i = 0; i < kSteadyCalls; ++i, ++call)
      steady.check(kStrided, {weights.at(0), inputs.at(call), weights.at(kLayers), outputs.at(call)}, counts);
    print_since(before, "steady.");
  }).join();
  print("bursts.calls", kSteps * kLayers);
  print("steady.calls", kSteadyCalls);
  print_counts(counts);
  return 0;
}

}  // namespace blas_scenario
