// Variant-pack scenario cases: the shim's run-time switch, cudnn_fastpath_set_features
// (pack_scenario.h).
#include <dlfcn.h>

#include <cstdint>
#include <cstdlib>
#include <initializer_list>

#include "tests/packs/pack_scenario.h"

namespace pack_scenario {

namespace {

// The shim's run-time switch, found with dlsym; "have_switch" says whether it was (both members
// are null without the shim).
struct FeatureSwitch {
  unsigned (*features)() = nullptr;
  unsigned (*set_features)(unsigned) = nullptr;
};
FeatureSwitch find_feature_switch() {
  FeatureSwitch f;
  f.features = reinterpret_cast<unsigned (*)()>(dlsym(RTLD_DEFAULT, "cudnn_fastpath_features"));
  f.set_features = reinterpret_cast<unsigned (*)(unsigned)>(dlsym(RTLD_DEFAULT, "cudnn_fastpath_set_features"));
  const bool found = f.features != nullptr && f.set_features != nullptr;
  print("have_switch", found);
  return found ? f : FeatureSwitch{};
}

}  // namespace

int runtime_switch() {
  const auto [features, set_features] = find_feature_switch();
  if (set_features == nullptr) return 0;
  const unsigned both = PACKS_FEATURE_SET_STREAM | PACKS_FEATURE_VARIANT_PACKS;

  const Contents c = contents(1), early_contents = contents(2), late_contents = contents(3);
  OpCounts counts;
  print("features_initial", features());
  std::uint64_t before = packs_created();
  for (int i = 0; i < 10; ++i) run_op(g_handle, g_matmul.plan(), c, counts);
  print("real_warm", static_cast<long long>(packs_created() - before));
  cudnnBackendDescriptor_t kept = nullptr, early = nullptr, late = nullptr;
  print("kept_status", make_pack(c, &kept));          // finalized before the switch
  print("early_create", g_api.create(kPack, &early));  // created before, finalized after

  print("set_off", set_features(PACKS_FEATURE_SET_STREAM));
  print("features_off", features());
  before = packs_created();
  for (int i = 0; i < 100; ++i) run_op(g_handle, g_matmul.plan(), c, counts);
  print("real_off", static_cast<long long>(packs_created() - before));
  print("kept_execute_off", g_api.execute(g_handle, g_matmul.plan(), kept));
  print("kept_as_set_off", ran_with(g_api.last_execution(), g_matmul.plan(), c));
  cudnnStatus_t s = g_api.set(early, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, 3, early_contents.uids);
  if (s == 0) s = g_api.set(early, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, 3, early_contents.pointers);
  if (s == 0) s = g_api.set(early, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &early_contents.workspace);
  if (s == 0) s = g_api.finalize(early);
  if (s == 0) s = g_api.execute(g_handle, g_matmul.plan(), early);
  print("early_status", s);
  print("early_as_set", s == 0 && ran_with(g_api.last_execution(), g_matmul.plan(), early_contents));
  print("late_create", make_pack(late_contents, &late));  // created (and finalized) while off

  print("set_on", set_features(both));
  print("features_on", features());
  before = packs_created();
  for (int i = 0; i < 100; ++i) run_op(g_handle, g_matmul.plan(), c, counts);
  print("real_on", static_cast<long long>(packs_created() - before));
  print("kept_execute_on", g_api.execute(g_handle, g_matmul.plan(), kept));
  print("late_execute_on", g_api.execute(g_handle, g_matmul.plan(), late));
  print("late_as_set", ran_with(g_api.last_execution(), g_matmul.plan(), late_contents));
  for (cudnnBackendDescriptor_t pack : {kept, early, late})
    if (g_api.destroy(pack) != 0) ++counts.failures;

  // Bits that name no feature are ignored; set-stream skipping follows its own bit.
  print("set_unknown_bits", set_features(~0u));
  print("set_variant_packs_only", set_features(PACKS_FEATURE_VARIANT_PACKS));
  const auto stream = reinterpret_cast<cudaStream_t>(std::uintptr_t{0x5200});
  const std::uint64_t sets_before = g_api.cudnn_counters().set_stream;
  for (int i = 0; i < 10; ++i) g_api.set_stream(g_handle, stream);
  print("real_set_stream_without_feature", static_cast<long long>(g_api.cudnn_counters().set_stream - sets_before));
  print("set_both_again", set_features(both));
  print_counts(counts);
  return 0;
}

// An in-process A/B's shape: SCENARIO_SWITCH_EVERY ops (default 48) with the pack cache on, as
// many with it off, and again, until 4096 ops have run with it on ("ops_on").
int switch_every() {
  const FeatureSwitch feature_switch = find_feature_switch();
  if (feature_switch.set_features == nullptr) return 0;
  const char* every_text = std::getenv("SCENARIO_SWITCH_EVERY");
  const int every = every_text != nullptr ? std::atoi(every_text) : 48;
  if (every <= 0) die("SCENARIO_SWITCH_EVERY must be a positive number");
  const unsigned both = PACKS_FEATURE_SET_STREAM | PACKS_FEATURE_VARIANT_PACKS;
  const Contents c = contents(1);
  OpCounts counts;
  const std::uint64_t before = packs_created();
  int ops_on = 0;
  while (ops_on < 4096) {
    for (int i = 0; i < every && ops_on < 4096; ++i, ++ops_on) run_op(g_handle, g_matmul.plan(), c, counts);
    feature_switch.set_features(PACKS_FEATURE_SET_STREAM);
    for (int i = 0; i < every; ++i) run_op(g_handle, g_matmul.plan(), c, counts);
    feature_switch.set_features(both);
  }
  print("ops_on", ops_on);
  print("real_packs", static_cast<long long>(packs_created() - before));
  print_counts(counts);
  return 0;
}

}  // namespace pack_scenario
