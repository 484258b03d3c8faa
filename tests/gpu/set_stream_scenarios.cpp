// Drives the real cuDNN and the real CUDA runtime (both linked) through cudnnSetStream sequences
// the shim must get right, and asks cudnnGetStream after every step whether cuDNN holds the stream
// that was asked for. shim_on_real_cudnn_test.cpp runs it with and without the shim preloaded.
//
//   set_stream_scenarios probe | same_stream | alternating | null_after_stream |
//                        handle_reuse | stream_reuse
//
// Prints key=value lines:
//   set_calls                   cudnnSetStream calls made
//   expected_forwards           of those, calls that must reach cuDNN: the first set on a handle, a
//                               change of stream, a set after the handle or the stream was destroyed
//   expected_handles            handles passed to cudnnSetStream (one destroyed and created again
//                               at the same address counts again: it is a new handle, and the shim
//                               gives it a slot of its own)
//   expected_streams_forgotten  handles holding a stream when it was destroyed
//   get_stream_mismatches       steps after which cudnnGetStream disagreed with the last set
//   failed_calls                cuDNN or CUDA calls that returned an error
//   handle_reused / stream_reused  1 when a recreated handle or stream came back at the old address
// Exit status: 0 when every call succeeded and every check agreed; 77 with "SKIPPED: no CUDA
// device" when there is no GPU; 1 otherwise.
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace {

constexpr int kNoDevice = 77;

// Every cuDNN and CUDA call of the scenarios goes through here, so that the expectations (what must
// reach cuDNN) are derived from what the program did, not written by hand next to each call.
class Session {
 public:
  ~Session() {
    for (void* buffer : buffers_) cudaFree(buffer);
  }

  cudnnHandle_t create_handle() {
    cudnnHandle_t handle = nullptr;
    if (!ok(cudnnCreate(&handle), "cudnnCreate")) return nullptr;
    known_.erase(handle);  // a new handle holds the NULL stream, whatever the address held before
    return handle;
  }

  void destroy_handle(cudnnHandle_t handle) {
    known_.erase(handle);
    handles_.erase(handle);
    ok(cudnnDestroy(handle), "cudnnDestroy");
  }

  cudaStream_t create_stream() {
    cudaStream_t stream = nullptr;
    ok(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
    return stream;
  }

  // Handles that held `stream` hold a dangling stream now: the next set on them must reach cuDNN,
  // even when it names a new stream at the same address.
  void destroy_stream(cudaStream_t stream) {
    for (auto it = known_.begin(); it != known_.end();) {
      if (it->second == stream) {
        ++expected_streams_forgotten_;
        it = known_.erase(it);
      } else {
        ++it;
      }
    }
    ok(cudaStreamDestroy(stream), "cudaStreamDestroy");
  }

  // cudnnSetStream, then cudnnGetStream: cuDNN must hold what was asked for after every step.
  void set(cudnnHandle_t handle, cudaStream_t stream) {
    const auto known = known_.find(handle);
    const bool must_reach_cudnn = known == known_.end() || known->second != stream;
    ++set_calls_;
    expected_forwards_ += must_reach_cudnn ? 1 : 0;
    if (handles_.insert(handle).second) ++handles_seen_;
    if (!ok(cudnnSetStream(handle, stream), "cudnnSetStream")) {
      known_.erase(handle);
      return;
    }
    known_[handle] = stream;
    cudaStream_t held = reinterpret_cast<cudaStream_t>(~std::uintptr_t{0});
    if (!ok(cudnnGetStream(handle, &held), "cudnnGetStream")) return;
    if (held != stream && ++get_stream_mismatches_ <= 5)
      std::fprintf(stderr, "set %lld: handle %p holds stream %p, but %p was asked for\n", set_calls_,
                   static_cast<void*>(handle), static_cast<void*>(held), static_cast<void*>(stream));
  }

  void set_many(cudnnHandle_t handle, cudaStream_t stream, int times) {
    for (int i = 0; i < times; ++i) set(handle, stream);
  }

  // A small real cuDNN job through `handle` (zero on the stream, then cuDNN fills with 6), read back
  // on the stream the handle was last given: it does real work on that stream, skipped calls or not.
  void check_work(cudnnHandle_t handle) {
    const auto known = known_.find(handle);
    if (known == known_.end()) return;
    cudaStream_t stream = known->second;
    constexpr int kCount = 16 * 16;
    void* device = nullptr;
    if (!ok(cudaMalloc(&device, kCount * sizeof(float)), "cudaMalloc")) return;
    buffers_.push_back(device);
    cudnnTensorDescriptor_t desc = nullptr;
    if (!ok(cudnnCreateTensorDescriptor(&desc), "cudnnCreateTensorDescriptor")) return;
    const float six = 6.0f;
    std::vector<float> host(kCount, 0.0f);
    if (ok(cudnnSetTensor4dDescriptor(desc, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, 1, 16, 16),
           "cudnnSetTensor4dDescriptor") &&
        ok(cudaMemsetAsync(device, 0, kCount * sizeof(float), stream), "cudaMemsetAsync") &&
        ok(cudnnSetTensor(handle, desc, device, &six), "cudnnSetTensor") &&
        ok(cudaMemcpyAsync(host.data(), device, kCount * sizeof(float), cudaMemcpyDeviceToHost, stream),
           "cudaMemcpyAsync") &&
        ok(cudaStreamSynchronize(stream), "cudaStreamSynchronize")) {
      int wrong = 0;
      for (float value : host) wrong += value != 6.0f;
      if (wrong != 0) {
        ++failed_calls_;
        std::fprintf(stderr, "work on stream %p: %d of %d values are not 6\n",
                     static_cast<void*>(stream), wrong, kCount);
      }
      ++work_checked_;
    }
    cudnnDestroyTensorDescriptor(desc);
  }

  void note(const std::string& key, const std::string& value) { notes_.emplace_back(key, value); }

  int report() const {
    std::printf("set_calls=%lld\n", set_calls_);
    std::printf("expected_forwards=%lld\n", expected_forwards_);
    std::printf("expected_handles=%lld\n", handles_seen_);
    std::printf("expected_streams_forgotten=%lld\n", expected_streams_forgotten_);
    std::printf("get_stream_mismatches=%lld\n", get_stream_mismatches_);
    std::printf("failed_calls=%lld\n", failed_calls_);
    std::printf("work_checked=%lld\n", work_checked_);
    for (const auto& [key, value] : notes_) std::printf("%s=%s\n", key.c_str(), value.c_str());
    return failed_calls_ == 0 && get_stream_mismatches_ == 0 ? 0 : 1;
  }

 private:
  bool ok(cudnnStatus_t status, const char* what) {
    if (status == CUDNN_STATUS_SUCCESS) return true;
    ++failed_calls_;
    std::fprintf(stderr, "%s: %s\n", what, cudnnGetErrorString(status));
    return false;
  }

  bool ok(cudaError_t status, const char* what) {
    if (status == cudaSuccess) return true;
    ++failed_calls_;
    std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(status));
    return false;
  }

  std::map<cudnnHandle_t, cudaStream_t> known_;  // what each handle holds, as far as we know
  std::set<cudnnHandle_t> handles_;  // live handles that were given a stream
  long long handles_seen_ = 0;
  std::vector<void*> buffers_;
  std::vector<std::pair<std::string, std::string>> notes_;
  long long set_calls_ = 0;
  long long expected_forwards_ = 0;
  long long expected_streams_forgotten_ = 0;
  long long get_stream_mismatches_ = 0;
  long long failed_calls_ = 0;
  long long work_checked_ = 0;
};

std::string address(const void* pointer) {
  char text[32];
  std::snprintf(text, sizeof text, "%p", pointer);
  return text;
}

// 5000 sets of one stream: exactly one must reach cuDNN, statistics on or off.
void same_stream(Session& s) {
  cudnnHandle_t h = s.create_handle();
  cudaStream_t stream = s.create_stream();
  s.set_many(h, stream, 5000);
  s.check_work(h);
  s.destroy_handle(h);
  s.destroy_stream(stream);
}

// One handle switching streams in runs of three, then two handles on two streams, interleaved,
// first each keeping its own stream, then swapping at every step.
void alternating(Session& s) {
  cudnnHandle_t h1 = s.create_handle();
  cudnnHandle_t h2 = s.create_handle();
  cudaStream_t a = s.create_stream();
  cudaStream_t b = s.create_stream();
  for (int run = 0; run < 200; ++run) s.set_many(h1, run % 2 ? b : a, 3);
  s.check_work(h1);
  for (int i = 0; i < 300; ++i) {
    s.set(h1, a);
    s.set(h2, b);
  }
  for (int i = 0; i < 300; ++i) {
    s.set(h1, i % 2 ? a : b);
    s.set(h2, i % 2 ? b : a);
  }
  s.check_work(h1);
  s.check_work(h2);
  s.destroy_handle(h1);
  s.destroy_handle(h2);
  s.destroy_stream(a);
  s.destroy_stream(b);
}

// NULL (the legacy default stream) is a stream like any other: cached, and left when another
// stream is set. A fresh handle already holds NULL, but the shim cannot know that.
void null_after_stream(Session& s) {
  cudnnHandle_t h = s.create_handle();
  cudaStream_t stream = s.create_stream();
  for (int round = 0; round < 3; ++round) {
    s.set_many(h, stream, 3);
    s.set_many(h, nullptr, 3);
  }
  s.check_work(h);
  cudnnHandle_t fresh = s.create_handle();
  s.set_many(fresh, nullptr, 3);
  s.set_many(fresh, stream, 3);
  s.check_work(fresh);
  s.destroy_handle(fresh);
  s.destroy_handle(h);
  s.destroy_stream(stream);
}

// A handle destroyed and created again, usually at the same address. The new handle holds NULL: a
// skipped set would leave it there, which cudnnGetStream shows.
void handle_reuse(Session& s) {
  cudaStream_t stream = s.create_stream();
  cudnnHandle_t first = s.create_handle();
  cudnnHandle_t h = first;
  int reused = 0;
  for (int cycle = 0; cycle < 3; ++cycle) {
    s.set_many(h, stream, 10);
    s.destroy_handle(h);
    cudnnHandle_t again = s.create_handle();
    std::printf("handle cycle %d: destroyed %p, created %p (%s)\n", cycle, static_cast<void*>(h),
                static_cast<void*>(again), again == h ? "same address" : "new address");
    reused += again == h;
    h = again;
  }
  s.set_many(h, stream, 10);
  s.check_work(h);
  s.note("handle_first", address(first));
  s.note("handle_last", address(h));
  s.note("handle_reused", std::to_string(reused));
  s.destroy_handle(h);
  s.destroy_stream(stream);
}

// A stream destroyed while two handles hold it, and a new stream created at the same address. The
// sets to the new stream must reach cuDNN (cudnnGetStream cannot tell the two apart: the counts do).
void stream_reuse(Session& s) {
  cudnnHandle_t h1 = s.create_handle();
  cudnnHandle_t h2 = s.create_handle();
  cudaStream_t old_stream = s.create_stream();
  s.set_many(h1, old_stream, 10);
  s.set_many(h2, old_stream, 10);
  s.destroy_stream(old_stream);

  // The runtime usually hands the freed address out again at once; a few more tries otherwise.
  std::vector<cudaStream_t> misses;
  cudaStream_t stream = s.create_stream();
  while (stream != old_stream && misses.size() < 8) {
    misses.push_back(stream);
    stream = s.create_stream();
  }
  std::printf("stream destroyed %p, created %p after %zu other(s) (%s)\n",
              static_cast<void*>(old_stream), static_cast<void*>(stream), misses.size(),
              stream == old_stream ? "same address" : "new address");
  s.set_many(h1, stream, 10);
  s.set_many(h2, stream, 10);
  s.check_work(h1);
  s.check_work(h2);
  s.note("stream_reused", stream == old_stream ? "1" : "0");
  s.note("stream_address", address(stream));
  for (cudaStream_t miss : misses) s.destroy_stream(miss);
  s.destroy_handle(h1);
  s.destroy_handle(h2);
  s.destroy_stream(stream);
}

struct Scenario {
  const char* name;
  void (*run)(Session&);
};

const Scenario kScenarios[] = {
    {"same_stream", same_stream},   {"alternating", alternating}, {"null_after_stream", null_after_stream},
    {"handle_reuse", handle_reuse}, {"stream_reuse", stream_reuse},
};

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s probe|SCENARIO\n", argv[0]);
    return 2;
  }
  // No GPU (no driver, or no device) is not a failure: CI has none.
  int devices = 0;
  const cudaError_t probe = cudaGetDeviceCount(&devices);
  if (probe != cudaSuccess || devices == 0) {
    std::printf("SKIPPED: no CUDA device (%s)\n",
                probe != cudaSuccess ? cudaGetErrorString(probe) : "0 devices");
    return kNoDevice;
  }
  if (std::strcmp(argv[1], "probe") == 0) {
    std::printf("devices=%d\ncudnn_version=%zu\n", devices, cudnnGetVersion());
    return 0;
  }
  for (const Scenario& scenario : kScenarios) {
    if (std::strcmp(argv[1], scenario.name) != 0) continue;
    Session session;
    scenario.run(session);
    return session.report();
  }
  std::fprintf(stderr, "unknown scenario %s\n", argv[1]);
  return 2;
}
