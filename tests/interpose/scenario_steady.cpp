// Scenario cases on one thread: sets that repeat or change, handles and streams reused, verify
// mode (scenario.h).
#include <dlfcn.h>

#include <cstdint>

#include "tests/support/glibc_dlsym.h"
#include "tests/support/must_load.h"
#include "tests/interpose/scenario.h"

namespace scenario {

namespace {

// The stub's own function, reached through the library's handle with glibc's own dlsym (taken by
// version with dlvsym, which the shim does not export): the shim is not on that path. Used to
// change a handle behind the shim's back.
template <typename Function>
Function around_shim(const char* name) {
  void* library = dlopen("libcudnn.so.9", RTLD_NOLOAD | RTLD_LAZY);
  if (library == nullptr) die("libcudnn.so.9 is not loaded");
  const auto real = reinterpret_cast<Function>(glibc_dlsym(library, name));
  if (real == nullptr) die(name);
  return real;
}

cudnnStatus_t set_stream_around_shim(cudnnHandle_t h, cudaStream_t s) {
  return around_shim<decltype(&cudnnSetStream)>("cudnnSetStream")(h, s);
}

}  // namespace

int same_stream() {
  const std::uint64_t before = real_sets();
  cudnnHandle_t h = must_create();
  cudaStream_t s = must_create_stream();
  int failures = 0;
  for (int i = 0; i < 1000; ++i) failures += set(h, s) != CUDNN_STATUS_SUCCESS;
  print("failures", failures);
  print("get_agrees", holds(h, s));
  report(before);
  return 0;
}

int alternate() {
  const std::uint64_t before = real_sets();
  cudnnHandle_t h = must_create();
  cudaStream_t s[2] = {must_create_stream(), must_create_stream()};
  int disagreements = 0;
  for (int i = 0; i < 1000; ++i) {
    set(h, s[i % 2]);
    disagreements += !holds(h, s[i % 2]);
  }
  print("disagreements", disagreements);
  report(before);
  return 0;
}

int null_after_stream() {
  const std::uint64_t before = real_sets();
  cudnnHandle_t h = must_create();
  cudaStream_t s = must_create_stream();
  set(h, s);
  set(h, s);
  set(h, nullptr);
  print("null_agrees", holds(h, nullptr));
  set(h, nullptr);
  set(h, s);
  print("get_agrees", holds(h, s));
  report(before);  // expected with the shim: 3 (s, NULL, s)
  return 0;
}

int recreate() {
  const std::uint64_t before = real_sets();
  cudaStream_t s = must_create_stream();
  cudnnHandle_t first = must_create();
  set(first, s);
  set(first, s);
  g_api.destroy(first);
  cudnnHandle_t second = must_create();
  print("same_address", first == second);
  set(second, s);
  set(second, s);
  print("get_agrees", holds(second, s));
  report(before);  // expected with the shim: 2 (one per handle)
  return 0;
}

// As recreate, but one of the two calls goes around the shim, so that the other one alone must
// void the slot: "destroy" sees the destroy only, "create" the create only.
int recreate_half_seen(bool shim_sees_destroy) {
  const std::uint64_t before = real_sets();
  cudaStream_t s = must_create_stream();
  cudnnHandle_t first = must_create();
  set(first, s);
  if (shim_sees_destroy) g_api.destroy(first);
  else around_shim<decltype(&cudnnDestroy)>("cudnnDestroy")(first);
  cudnnHandle_t second = nullptr;
  if (shim_sees_destroy) around_shim<decltype(&cudnnCreate)>("cudnnCreate")(&second);
  else g_api.create(&second);
  print("same_address", first == second);
  set(second, s);
  report(before);  // expected with the shim: 2
  return 0;
}
int recreate_shim_sees_destroy() { return recreate_half_seen(true); }
int recreate_shim_sees_create() { return recreate_half_seen(false); }

int failed_set() {
  const std::uint64_t before = real_sets();
  cudnnHandle_t h = must_create();
  int rejected = 0;
  rejected += set(h, STUBCUDNN_REJECTED_STREAM) == CUDNN_STATUS_BAD_PARAM;
  rejected += set(h, STUBCUDNN_REJECTED_STREAM) == CUDNN_STATUS_BAD_PARAM;
  print("rejected", rejected);
  report(before);  // expected with the shim: 2 (a failure is never cached)
  return 0;
}

// Random sets over three handles and four streams (the null one included), each checked against
// cudnnGetStream; "expected_real" is what an exact cache forwards: first set on a handle, and
// every change.
int get_agrees() {
  const std::uint64_t before = real_sets();
  cudnnHandle_t h[3] = {must_create(), must_create(), must_create()};
  cudaStream_t s[4] = {nullptr, must_create_stream(), must_create_stream(), must_create_stream()};
  cudaStream_t last[3] = {};
  bool known[3] = {};
  std::uint64_t expected = 0, disagreements = 0, state = 12345;
  for (int i = 0; i < 3000; ++i) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    const int hi = static_cast<int>((state >> 33) % 3);
    // Mostly the same stream again, as frameworks do; sometimes another.
    const int si = ((state >> 40) % 8 == 0) ? static_cast<int>((state >> 20) % 4) : -1;
    cudaStream_t stream = si < 0 ? (known[hi] ? last[hi] : s[1]) : s[si];
    if (!known[hi] || last[hi] != stream) ++expected;
    known[hi] = true;
    last[hi] = stream;
    set(h[hi], stream);
    disagreements += !holds(h[hi], stream);
  }
  print("disagreements", disagreements);
  print("expected_real", expected);
  report(before);
  return 0;
}

int stream_reuse() {
  const std::uint64_t before = real_sets();
  cudnnHandle_t h = must_create();
  cudaStream_t first = must_create_stream();
  set(h, first);
  set(h, first);
  g_api.stream_destroy(first);
  cudaStream_t second = must_create_stream();
  print("same_address", first == second);
  set(h, second);
  report(before);  // expected with the shim: 2 (the new stream must reach cuDNN)
  return 0;
}

int verify() {
  const std::uint64_t before = real_sets();
  cudnnHandle_t h = must_create();
  cudaStream_t a = must_create_stream(), b = must_create_stream();
  set(h, a);
  set_stream_around_shim(h, b);
  set(h, a);  // the table says a; cuDNN holds b
  print("get_agrees", holds(h, a));
  report(before);
  return 0;
}

}  // namespace scenario
