// Variant-pack scenario cases: the shim's run-time switch, cudnn_fastpath_set_features, and its
// statistics C API, cudnn_fastpath_stats (pack_scenario.h).
#include <dlfcn.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

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
  print("kept_status", make_pack(g_api, c, &kept));          // finalized before the switch
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
  print("late_create", make_pack(g_api, late_contents, &late));  // created (and finalized) while off

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

namespace {

// cudnn_fastpath_stats_t as the C API lays it out (shim_control.h, statistics version 2): four
// 32-bit words, then 64-bit counts, as many as cudnn_fastpath_stats_fields() names. Room for more
// than the shim has.
struct StatsBuffer {
  std::uint32_t size;
  std::uint32_t counting;
  std::uint32_t version;
  std::uint32_t reserved;
  std::uint64_t values[256];
};
using StatsFunction = int (*)(void*, std::size_t);
using FieldsFunction = const char* (*)();

std::vector<std::string> words(const char* text) {
  std::istringstream in(text);
  std::vector<std::string> out;
  for (std::string word; in >> word;) out.push_back(word);
  return out;
}

}  // namespace

// The statistics C API, found with dlsym ("have_stats_api"), after 100 sets on the main handle,
// 1000 ops with one content, and a thread that made 100 sets on a handle of its own, destroyed it
// and exited. Prints each field as "api.NAME", and what the API answers to a null pointer, a
// buffer shorter than its two words, and one that holds only the first count. In mode global with
// SCENARIO_SHIM_COPY, also asks a second copy of the shim (a follower): "follower_same".
int stats_api() {
  const auto stats = reinterpret_cast<StatsFunction>(dlsym(RTLD_DEFAULT, "cudnn_fastpath_stats"));
  const auto fields = reinterpret_cast<FieldsFunction>(dlsym(RTLD_DEFAULT, "cudnn_fastpath_stats_fields"));
  print("have_stats_api", stats != nullptr && fields != nullptr);

  const auto stream = reinterpret_cast<cudaStream_t>(std::uintptr_t{0x5400});
  const std::uint64_t sets_before = g_api.cudnn_counters().set_stream;
  const std::uint64_t packs_before = packs_created();
  OpCounts counts;
  for (int i = 0; i < 100; ++i)
    if (g_api.set_stream(g_handle, stream) != 0) ++counts.failures;
  const Contents c = contents(1);
  for (int i = 0; i < 1000; ++i) run_op(g_handle, g_matmul.plan(), c, counts);
  std::thread([&] {
    cudnnHandle_t handle = nullptr;
    if (g_api.create_handle(&handle) != 0) {
      ++counts.failures;  // the main thread waits in join: no other writer
      return;
    }
    for (int i = 0; i < 100; ++i)
      if (g_api.set_stream(handle, stream) != 0) ++counts.failures;
    if (g_api.destroy_handle(handle) != 0) ++counts.failures;
  }).join();
  print("real_set_stream", static_cast<long long>(g_api.cudnn_counters().set_stream - sets_before));
  print("real_packs", static_cast<long long>(packs_created() - packs_before));
  print_counts(counts);
  if (stats == nullptr || fields == nullptr) return 0;

  std::printf("fields=%s\n", fields());
#ifdef CUDNN_FASTPATH_COUNTERS
  // The public header's list, for the test to hold against the library's.
  std::string header_fields = "handles live_handles";
#define PACKS_FIELD_NAME(name, group, label, what) header_fields += " " #name;
  CUDNN_FASTPATH_COUNTERS(PACKS_FIELD_NAME)
#undef PACKS_FIELD_NAME
  std::printf("header_fields=%s\n", header_fields.c_str());
#endif
  StatsBuffer all;
  std::memset(&all, 0xab, sizeof all);
  print("status", stats(&all, sizeof all));
  print("size", all.size);
  print("counting", all.counting);
  print("version", all.version);
  const std::vector<std::string> names = words(fields());
  for (std::size_t i = 0; i < names.size() && i < 64; ++i)
    print(("api." + names[i]).c_str(), static_cast<long long>(all.values[i]));

  print("null_status", stats(nullptr, sizeof all));
  StatsBuffer small;
  std::memset(&small, 0xab, sizeof small);
  print("small_status", stats(&small, 4));
  print("small_untouched", small.size == 0xababababu);
  StatsBuffer partial;
  std::memset(&partial, 0xab, sizeof partial);
  print("partial_status", stats(&partial, 24));
  print("partial_size", partial.size);
  print("partial_handles", static_cast<long long>(partial.values[0]));
  print("partial_rest_untouched", partial.values[1] == 0xababababababababull);

#ifndef PACK_SCENARIO_LINKED
  if (const char* copy = std::getenv("SCENARIO_SHIM_COPY"); copy != nullptr && *copy != '\0') {
    void* other = dlopen(copy, RTLD_NOW | RTLD_LOCAL);
    const auto follower = other == nullptr ? nullptr : reinterpret_cast<StatsFunction>(dlsym(other, "cudnn_fastpath_stats"));
    StatsBuffer theirs;
    std::memset(&theirs, 0xab, sizeof theirs);
    print("follower_same", follower != nullptr && follower(&theirs, sizeof theirs) == 0 &&
                               std::memcmp(&theirs, &all, sizeof all) == 0);
  }
#endif
  return 0;
}

}  // namespace pack_scenario
