// The blas scenario's cublasLtMatmulAlgoGetHeuristic case (blas_scenario.h): every answer against
// the stub's own for the same inputs (whose algos are a hash of every input), every input changed
// in turn.
#include <vector>

#include "tests/blas/blas_scenario.h"

namespace blas_scenario {

namespace {

using blas_arguments::AttrSpec;
using blas_arguments::kEmulationAttrs;
using blas_arguments::kLayoutAttrs;
using blas_arguments::kMatmulAttrs;
using blas_arguments::kPreferenceAttrs;

struct Answer {
  cublasStatus_t status;
  int returned;
  cublasLtMatmulHeuristicResult_t results[9];
};

Answer ask(const BlasApi& api, const LtObjects& o, int requested) {
  Answer a;
  std::memset(&a, 0, sizeof a);
  a.status = api.cublasLtMatmulAlgoGetHeuristic(o.handle, o.desc, o.layouts[0], o.layouts[1], o.layouts[2],
                                                o.layouts[3], o.preference, requested, a.results, &a.returned);
  return a;
}

// Every field of every result returned (algo bytes, workspaceSize, state, wavesCount, reserved).
bool same(const Answer& x, const Answer& y) {
  return x.status == y.status && x.returned == y.returned && x.returned >= 0 && x.returned <= 9 &&
         std::memcmp(x.results, y.results, sizeof x.results[0] * static_cast<std::size_t>(x.returned)) == 0;
}

// An attribute of one object, read with the stub's getter, set through the shim's setter.
struct Attribute {
  std::string name;
  std::function<void(unsigned char*, std::size_t)> get;
  std::function<void(const unsigned char*, std::size_t)> set;
  std::size_t size;
};

template <typename D, typename A, typename Get, typename Set>
Attribute attribute_of(const std::string& name, D d, const AttrSpec& spec, Get get, Set set) {
  return {name,
          [=](unsigned char* bytes, std::size_t size) {
            must(get(d, static_cast<A>(spec.attribute), bytes, size, nullptr), "a getter");
          },
          [=](const unsigned char* bytes, std::size_t size) {
            must(set(d, static_cast<A>(spec.attribute), bytes, size), "a setter");
          },
          spec.size};
}

}  // namespace

int heuristic() {
  LtObjects o;
  o.open();
  cublasLtEmulationDesc_t second_emulation = nullptr;
  must(g_api.cublasLtEmulationDescCreate(&second_emulation), "cublasLtEmulationDescCreate");
  std::vector<Attribute> attributes;
  for (const AttrSpec& spec : kMatmulAttrs) {
    if (spec.attribute == CUBLASLT_MATMUL_DESC_EMULATION_DESCRIPTOR) continue;  // another descriptor, below
    attributes.push_back(attribute_of<cublasLtMatmulDesc_t, cublasLtMatmulDescAttributes_t>(
        "desc." + std::to_string(spec.attribute), o.desc, spec, g_stub.cublasLtMatmulDescGetAttribute,
        g_api.cublasLtMatmulDescSetAttribute));
  }
  for (const AttrSpec& spec : kEmulationAttrs)
    attributes.push_back(attribute_of<cublasLtEmulationDesc_t, cublasLtEmulationDescAttributes_t>(
        "emulation." + std::to_string(spec.attribute), o.emulation, spec, g_stub.cublasLtEmulationDescGetAttribute,
        g_api.cublasLtEmulationDescSetAttribute));
  for (int l = 0; l < 4; ++l)
    for (const AttrSpec& spec : kLayoutAttrs)
      attributes.push_back(attribute_of<cublasLtMatrixLayout_t, cublasLtMatrixLayoutAttribute_t>(
          "layout" + std::to_string(l) + "." + std::to_string(spec.attribute), o.layouts[l], spec,
          g_stub.cublasLtMatrixLayoutGetAttribute, g_api.cublasLtMatrixLayoutSetAttribute));
  for (const AttrSpec& spec : kPreferenceAttrs)
    attributes.push_back(attribute_of<cublasLtMatmulPreference_t, cublasLtMatmulPreferenceAttributes_t>(
        "preference." + std::to_string(spec.attribute), o.preference, spec,
        g_stub.cublasLtMatmulPreferenceGetAttribute, g_api.cublasLtMatmulPreferenceSetAttribute));
  // Every attribute set once to the value it has: the shim's records then hold every attribute, and
  // a change undone returns them to exactly this.
  for (const Attribute& a : attributes) {
    unsigned char bytes[16] = {};
    a.get(bytes, a.size);
    a.set(bytes, a.size);
  }

  Counts counts;
  long long unchanged = 0, reached_changed = 0, reached_repeat = 0, reached_back = 0, changes = 0;
  auto reference = [&](int requested) {
    g_stub.stubblas_reference_calls(1);
    const Answer a = ask(g_real, o, requested);
    g_stub.stubblas_reference_calls(0);
    return a;
  };
  auto heuristic_calls = [] { return static_cast<long long>(g_stub.stubblaslt_counters().heuristic_calls); };
  // One query: its answer must be the stub's own; returns whether it reached the stub.
  auto query = [&](int requested, Answer* out = nullptr) {
    const long long calls = heuristic_calls();
    const Answer got = ask(g_api, o, requested);
    if (!same(got, reference(requested))) ++counts.mismatches;
    if (out != nullptr) *out = got;
    return heuristic_calls() != calls;
  };

  Snapshot before = Snapshot::now();
  Answer base;
  for (int i = 0; i < 5; ++i) query(3, &base);
  if (base.status != CUBLAS_STATUS_SUCCESS || base.returned != 3) ++counts.failures;
  print_since(before, "base.");

  // Each change: the new answer reaches the stub once, then comes from the cache; undone, the first
  // answer is the stub's own again.
  auto change = [&](const std::function<void()>& apply, const std::function<void()>& undo, int requested = 3) {
    apply();
    Answer changed;
    reached_changed += query(requested, &changed);
    if (same(changed, base)) ++unchanged;  // the premise: the stub's answer depends on it
    reached_repeat += query(requested);
    undo();
    reached_back += query(3);
    ++changes;
  };
  before = Snapshot::now();
  for (const Attribute& a : attributes) {
    unsigned char bytes[16] = {};
    a.get(bytes, a.size);
    bytes[0] ^= 1;
    change([&] { a.set(bytes, a.size); },
           [&] {
             bytes[0] ^= 1;
             a.set(bytes, a.size);
           });
  }
  change(
      [&] {
        must(g_api.cublasLtMatmulDescSetAttribute(o.desc, CUBLASLT_MATMUL_DESC_EMULATION_DESCRIPTOR, &second_emulation,
                                                  sizeof second_emulation),
             "the emulation descriptor");
        const std::int32_t strategy = CUBLAS_EMULATION_STRATEGY_EAGER;
        must(g_api.cublasLtEmulationDescSetAttribute(second_emulation, CUBLASLT_EMULATION_DESC_STRATEGY, &strategy,
                                                     sizeof strategy),
             "a strategy");
      },
      [&] {
        must(g_api.cublasLtMatmulDescSetAttribute(o.desc, CUBLASLT_MATMUL_DESC_EMULATION_DESCRIPTOR, &o.emulation,
                                                  sizeof o.emulation),
             "the emulation descriptor");
      });
  for (int requested = 1; requested <= 8; ++requested)
    if (requested != 3) change([] {}, [] {}, requested);
  print_since(before, "changes.");
  print("changes", changes);
  print("reached_changed", reached_changed);
  print("reached_repeat", reached_repeat);
  print("reached_back", reached_back);
  print("unchanged_answers", unchanged);

  // Counts the cache does not keep: every query reaches the stub.
  for (int requested : {0, 9}) {
    before = Snapshot::now();
    long long reached = 0;
    for (int i = 0; i < 3; ++i) reached += query(requested);
    print("requested" + std::to_string(requested) + ".reached", reached);
    print_since(before, "requested" + std::to_string(requested) + ".");
  }
  g_api.cublasLtEmulationDescDestroy(second_emulation);
  print_counts(counts);
  return 0;
}

}  // namespace blas_scenario
