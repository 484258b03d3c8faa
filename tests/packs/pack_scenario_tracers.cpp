// pack_scenario_tracers.cpp: the cases run under a tracer preload of the user's own
// (tests/tracer), and a shim opened after cuDNN (packs_test.cpp's [tracers]).
#include <dlfcn.h>

#include <cstdint>
#include <string>
#include <utility>

#include "tests/packs/pack_scenario.h"

namespace pack_scenario {

// Under a tracer (tests/tracer): 200 ops with the stream changed every second op, three pack
// contents in turn, and a second handle at the end. Prints each kind of call's failures
// ("status.traced.*", compared with the run without the shim), what reached the stub, and what the
// tracer saw ("tracer.*"), if one is preloaded.
int traced() {
  using TracerCount = std::uint64_t (*)(const char*);
  const auto tracer_count = reinterpret_cast<TracerCount>(dlsym(RTLD_DEFAULT, "tracer_count"));
  const cudaStream_t streams[2] = {reinterpret_cast<cudaStream_t>(std::uintptr_t{0x5100}),
                                   reinterpret_cast<cudaStream_t>(std::uintptr_t{0x5200})};
  const Contents c[3] = {contents(1), contents(2), contents(3)};
  long long set_failures = 0, first_set_failure = 0, mismatches = 0;
  long long step_failures[7] = {};  // create, 3 sets, finalize, execute, destroy
  long long first_step_failure[7] = {};
  const auto note = [&](int step, cudnnStatus_t s) {
    if (s == CUDNN_STATUS_SUCCESS) return;
    if (step_failures[step]++ == 0) first_step_failure[step] = s;
  };
  for (int i = 0; i < 200; ++i) {
    const cudnnStatus_t set = g_api.set_stream(g_handle, streams[(i / 2) % 2]);
    if (set != CUDNN_STATUS_SUCCESS && set_failures++ == 0) first_set_failure = set;
    const Contents& op = c[i % 3];
    cudnnBackendDescriptor_t pack = nullptr;
    cudnnStatus_t s = g_api.create(kPack, &pack);
    note(0, s);
    if (s == 0) note(1, s = g_api.set(pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, 3, op.uids));
    if (s == 0) note(2, s = g_api.set(pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, 3, op.pointers));
    if (s == 0) note(3, s = g_api.set(pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &op.workspace));
    if (s == 0) note(4, s = g_api.finalize(pack));
    if (s == 0) note(5, s = g_api.execute(g_handle, g_matmul.plan(), pack));
    if (s == 0 && !ran_with(g_api.last_execution(), g_matmul.plan(), op)) ++mismatches;
    if (pack != nullptr) note(6, g_api.destroy(pack));
  }
  cudnnHandle_t second = nullptr;
  const cudnnStatus_t created = g_api.create_handle(&second);
  const cudnnStatus_t second_set = created == 0 ? g_api.set_stream(second, streams[0]) : created;
  const cudnnStatus_t destroyed = created == 0 ? g_api.destroy_handle(second) : created;

  print("status.traced.set_stream_failures", set_failures);
  print("status.traced.set_stream_first_failure", first_set_failure);
  const char* steps[7] = {"create", "set_ids", "set_pointers", "set_workspace", "finalize", "execute", "destroy"};
  for (int step = 0; step < 7; ++step) {
    print((std::string("status.traced.") + steps[step] + "_failures").c_str(), step_failures[step]);
    print((std::string("status.traced.") + steps[step] + "_first_failure").c_str(), first_step_failure[step]);
  }
  print("status.traced.mismatches", mismatches);
  print("status.traced.second_handle", created);
  print("status.traced.second_set", second_set);
  print("status.traced.second_destroy", destroyed);

  const StubCudnnCounters handle_calls = g_api.cudnn_counters();
  const StubBackendCounters backend_calls = g_api.counters();
  const std::pair<const char*, std::uint64_t> reached[] = {
      {"cudnnCreate", handle_calls.create},
      {"cudnnDestroy", handle_calls.destroy},
      {"cudnnSetStream", handle_calls.set_stream},
      {"cudnnGetStream", handle_calls.get_stream},
      {"cudnnBackendCreateDescriptor", backend_calls.create_descriptor},
      {"cudnnBackendDestroyDescriptor", backend_calls.destroy_descriptor},
      {"cudnnBackendSetAttribute", backend_calls.set_attribute},
      {"cudnnBackendGetAttribute", backend_calls.get_attribute},
      {"cudnnBackendFinalize", backend_calls.finalize},
      {"cudnnBackendExecute", backend_calls.execute},
  };
  print("tracer_present", tracer_count != nullptr);
  for (const auto& [name, count] : reached) {
    print((std::string("stub.") + name).c_str(), static_cast<long long>(count));
    if (tracer_count != nullptr)
      print((std::string("tracer.") + name).c_str(), static_cast<long long>(tracer_count(name)));
  }
  return 0;
}

#ifndef PACK_SCENARIO_LINKED
// Mode local_lazy, run without a preload: the program opens the shim RTLD_GLOBAL after cuDNN was
// loaded (behind the framework), and cuDNN then calls one of its own functions for the first time:
// the lazily bound call reaches the shim, which must send it back to cuDNN's own definition.
int shim_opened_later() {
  print("shim_loaded", dlopen(SHIM_PATH, RTLD_NOW | RTLD_GLOBAL) != nullptr);
  cudnnBackendDescriptor_t pack = nullptr;
  const std::uint64_t before = packs_created();
  print("status.internal_create", g_api.create_pack_internally(&pack));
  print("real_packs", static_cast<long long>(packs_created() - before));
  print("status.destroy", pack != nullptr ? g_api.destroy(pack) : -1);
  return 0;
}
#endif

}  // namespace pack_scenario
