// set_stream: idempotent, with the shim's table and its invariant (a handle the table says holds
// S holds S in cuDNN), kept across handle and stream address reuse, failures, builds and forks.
#include <catch2/catch.hpp>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <thread>
#include <vector>

#include "tests/frontend/fixtures.h"
#include "tests/frontend/paused_set_stream.h"
#include "tests/frontend/stub_calls.h"

using namespace cudnn_fastpath;
using namespace cudnn_fastpath::test;

namespace {

// How many cudnnSetStream calls reached the stub while `body` ran.
template <typename Body>
std::uint64_t forwarded_by(Body&& body) {
  const StubCalls before = StubCalls::now();
  body();
  return (StubCalls::now() - before).cudnn.set_stream;
}

cudaStream_t held_by(cudnnHandle_t handle) {
  cudaStream_t stream = nullptr;
  REQUIRE(cudnnGetStream(handle, &stream) == CUDNN_STATUS_SUCCESS);
  return stream;
}

}  // namespace

TEST_CASE("set_stream forwards a new stream once and skips it after", "[set_stream]") {
  StubHandle handle;
  const cudaStream_t s = fake_stream(1);
  CHECK(forwarded_by([&] { CHECK(set_stream(handle, s) == CUDNN_STATUS_SUCCESS); }) == 1);
  CHECK(forwarded_by([&] {
          for (int i = 0; i < 10; ++i) CHECK(set_stream(handle, s) == CUDNN_STATUS_SUCCESS);
        }) == 0);
  CHECK(held_by(handle) == s);
}

TEST_CASE("set_stream forwards every change of stream", "[set_stream]") {
  StubHandle handle;
  const cudaStream_t s1 = fake_stream(1), s2 = fake_stream(2);
  CHECK(forwarded_by([&] {
          for (int i = 0; i < 10; ++i) CHECK(set_stream(handle, i % 2 ? s2 : s1) == CUDNN_STATUS_SUCCESS);
        }) == 10);
  CHECK(held_by(handle) == s2);
  CHECK(forwarded_by([&] { CHECK(set_stream(handle, nullptr) == CUDNN_STATUS_SUCCESS); }) == 1);
  CHECK(forwarded_by([&] { CHECK(set_stream(handle, nullptr) == CUDNN_STATUS_SUCCESS); }) == 0);
}

TEST_CASE("a failed set_stream is returned and not remembered", "[set_stream]") {
  StubHandle handle;
  CHECK(forwarded_by([&] {
          CHECK(set_stream(handle, STUBCUDNN_REJECTED_STREAM) == CUDNN_STATUS_BAD_PARAM);
          CHECK(set_stream(handle, STUBCUDNN_REJECTED_STREAM) == CUDNN_STATUS_BAD_PARAM);
        }) == 2);
}

TEST_CASE("a handle address cuDNN hands out again starts unknown", "[set_stream]") {
  stubbackend_reset();
  const cudaStream_t s = fake_stream(1);
  cudnnHandle_t first = nullptr, second = nullptr;
  REQUIRE(create_handle(&first) == CUDNN_STATUS_SUCCESS);
  REQUIRE(set_stream(first, s) == CUDNN_STATUS_SUCCESS);
  REQUIRE(destroy_handle(first) == CUDNN_STATUS_SUCCESS);
  REQUIRE(create_handle(&second) == CUDNN_STATUS_SUCCESS);
  REQUIRE(second == first);  // the stub, like cuDNN, reuses the address

  // The new handle holds no stream yet: the set must reach cuDNN.
  CHECK(held_by(second) == nullptr);
  CHECK(forwarded_by([&] { CHECK(set_stream(second, s) == CUDNN_STATUS_SUCCESS); }) == 1);
  CHECK(held_by(second) == s);
  REQUIRE(destroy_handle(second) == CUDNN_STATUS_SUCCESS);
}

TEST_CASE("create_handle forgets a reused address even after a plain cudnnDestroy", "[set_stream]") {
  stubbackend_reset();
  const cudaStream_t s = fake_stream(1);
  cudnnHandle_t first = nullptr, second = nullptr;
  REQUIRE(create_handle(&first) == CUDNN_STATUS_SUCCESS);
  REQUIRE(set_stream(first, s) == CUDNN_STATUS_SUCCESS);
  REQUIRE(cudnnDestroy(first) == CUDNN_STATUS_SUCCESS);  // around the table
  REQUIRE(create_handle(&second) == CUDNN_STATUS_SUCCESS);
  REQUIRE(second == first);
  CHECK(forwarded_by([&] { CHECK(set_stream(second, s) == CUDNN_STATUS_SUCCESS); }) == 1);
  CHECK(held_by(second) == s);
  REQUIRE(destroy_handle(second) == CUDNN_STATUS_SUCCESS);
}

TEST_CASE("set_stream on a destroyed handle reaches cuDNN, which refuses it", "[set_stream]") {
  stubbackend_reset();
  const cudaStream_t s = fake_stream(1);
  cudnnHandle_t handle = nullptr;
  REQUIRE(create_handle(&handle) == CUDNN_STATUS_SUCCESS);
  REQUIRE(set_stream(handle, s) == CUDNN_STATUS_SUCCESS);
  REQUIRE(destroy_handle(handle) == CUDNN_STATUS_SUCCESS);
  CHECK(set_stream(handle, s) == CUDNN_STATUS_BAD_PARAM);
  CHECK(set_stream(nullptr, s) == CUDNN_STATUS_BAD_PARAM);
}

TEST_CASE("forget_handle: a stream set around the table is not overruled", "[set_stream]") {
  StubHandle handle;
  const cudaStream_t s1 = fake_stream(1), s2 = fake_stream(2);
  REQUIRE(set_stream(handle, s1) == CUDNN_STATUS_SUCCESS);
  REQUIRE(cudnnSetStream(handle, s2) == CUDNN_STATUS_SUCCESS);  // behind the table's back
  forget_handle(handle);
  CHECK(forwarded_by([&] { CHECK(set_stream(handle, s1) == CUDNN_STATUS_SUCCESS); }) == 1);
  CHECK(held_by(handle) == s1);
}

TEST_CASE("forget_stream: a destroyed stream's address is set again", "[set_stream]") {
  StubHandle handle, other;
  const cudaStream_t s = fake_stream(1);
  REQUIRE(set_stream(handle, s) == CUDNN_STATUS_SUCCESS);
  REQUIRE(set_stream(other, s) == CUDNN_STATUS_SUCCESS);
  forget_stream(s);  // cudaStreamDestroy(s) would follow; a new stream may get its address
  CHECK(forwarded_by([&] {
          CHECK(set_stream(handle, s) == CUDNN_STATUS_SUCCESS);
          CHECK(set_stream(other, s) == CUDNN_STATUS_SUCCESS);
        }) == 2);
}

TEST_CASE("building a graph tells set_stream which stream the handle holds", "[set_stream]") {
  StubHandle handle;
  const cudaStream_t s = fake_stream(3);
  REQUIRE(cudnnSetStream(handle, s) == CUDNN_STATUS_SUCCESS);  // the table has not seen this
  forget_handle(handle);
  Graph graph = Graph::matmul(small_matmul());
  REQUIRE(graph.build(handle).ok());
  CHECK(forwarded_by([&] { CHECK(set_stream(handle, s) == CUDNN_STATUS_SUCCESS); }) == 0);
  CHECK(forwarded_by([&] { CHECK(set_stream(handle, fake_stream(4)) == CUDNN_STATUS_SUCCESS); }) == 1);
}

TEST_CASE("threads with handles of their own always hold the stream they set", "[set_stream]") {
  stubbackend_reset();
  constexpr int kThreads = 8;
  constexpr int kRounds = 2000;
  std::vector<cudnnHandle_t> handles(kThreads);
  for (cudnnHandle_t& h : handles) REQUIRE(create_handle(&h) == CUDNN_STATUS_SUCCESS);
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < kRounds; ++i) {
        // Runs of the same stream (skips) broken by changes (forwards), the streams shared by all
        // threads: a slot that answered for another handle would skip wrongly.
        const cudaStream_t stream = fake_stream(static_cast<std::uintptr_t>((t + i / 5) % 3));
        cudaStream_t held = nullptr;
        if (set_stream(handles[t], stream) != CUDNN_STATUS_SUCCESS ||
            cudnnGetStream(handles[t], &held) != CUDNN_STATUS_SUCCESS || held != stream)
          wrong.fetch_add(1, std::memory_order_relaxed);
      }
    });
  for (std::thread& thread : threads) thread.join();
  CHECK(wrong.load() == 0);
  for (cudnnHandle_t h : handles) REQUIRE(destroy_handle(h) == CUDNN_STATUS_SUCCESS);
}

TEST_CASE("a set_stream overlapping another on the same handle leaves no stale skip", "[set_stream]") {
  // cuDNN forbids two threads on one handle; programs do it anyway. Staged: the first caller's
  // cudnnSetStream(s1) has run and not returned when a second caller sets s2 from start to end.
  // cuDNN then holds s2, and the first caller, finishing last, must not leave s1 in the table.
  StubHandle handle;
  const cudaStream_t s1 = fake_stream(1), s2 = fake_stream(2);
  {
    PausedSetStream pause;
    std::thread first([&] { set_stream(handle, s1); });
    pause.wait_until_paused();
    CHECK(set_stream(handle, s2) == CUDNN_STATUS_SUCCESS);
    pause.release();
    first.join();
  }
  REQUIRE(held_by(handle) == s2);
  CHECK(forwarded_by([&] { CHECK(set_stream(handle, s1) == CUDNN_STATUS_SUCCESS); }) == 1);
  CHECK(held_by(handle) == s1);
}

TEST_CASE("a forked child forgets what the parent's table knew", "[set_stream]") {
  StubHandle handle;
  const cudaStream_t s = fake_stream(1);
  REQUIRE(set_stream(handle, s) == CUDNN_STATUS_SUCCESS);
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    // The parent's handle is unusable here (the stub, like cuDNN, refuses it): a skip would
    // report a success that never happened.
    _exit(set_stream(handle, s) == CUDNN_STATUS_SUCCESS ? 1 : 0);
  }
  int status = 0;
  REQUIRE(waitpid(child, &status, 0) == child);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
}
