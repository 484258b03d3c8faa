// What the files of the stub driver share about graphs (hidden: libcuda.so.1 exports only the
// driver's names and the stub's own stubcuda_* functions): the nodes a capture records, the
// graphs and executable graphs made of them, and the lock over all of it.
//
// stub_cuda.cpp: streams, capture, graphs, instantiation and launches.
// stub_cuda_nodes.cpp: kernel and memset nodes, read back from a graph and updated in an exec.
// stub_cuda_tensor_map.cpp: cuTensorMapReplaceAddress.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <vector>

#include "tests/stub/stub_cuda.h"
#include "tests/stub/stub_kernel.h"

#pragma GCC visibility push(hidden)

namespace stubcuda {

// A kernel's parameter buffer, aligned to 128 bytes (a tensor map parameter is 64-byte aligned).
// Over-allocated and aligned inside rather than by aligned_alloc, whose split-off fragments would
// land in malloc's small bins and move the addresses the tests expect freed objects to come back at.
class ArgumentBytes {
 public:
  ArgumentBytes() = default;
  ArgumentBytes(const void* bytes, std::size_t size);
  ArgumentBytes(const ArgumentBytes&) = delete;
  ArgumentBytes& operator=(const ArgumentBytes&) = delete;
  ArgumentBytes(ArgumentBytes&&) = default;
  ArgumentBytes& operator=(ArgumentBytes&&) = default;
  unsigned char* data() const { return aligned_; }
  std::size_t size() const { return size_; }

 private:
  std::unique_ptr<unsigned char[]> storage_;
  unsigned char* aligned_ = nullptr;
  std::size_t size_ = 0;
};

enum class NodeKind {
  kOpaque,  // stubcuda_capture_node: a host node as the API tells it (its work cannot be relocated)
  kKernel,  // stubcuda_capture_kernel
  kMemset,  // cuMemsetD8Async / D16 / D32 on a capturing stream: a 1-D memset
};

struct Node {
  NodeKind kind = NodeKind::kOpaque;
  std::uint64_t id = 0;      // never the same for two nodes
  std::uint64_t origin = 0;  // an exec's node: the id of the graph node it was instantiated from
  CUcontext context = nullptr;
  // kOpaque: run(blob) at each launch.
  void (*run)(const void*) = nullptr;
  std::vector<unsigned char> blob;
  // kKernel: kernel->run on `args` at each launch; cuGraphKernelNodeGetParams_v2 hands out
  // kernelParams (a pointer to each parameter in `args`) or, with use_extra, `extra`.
  const StubKernel* kernel = nullptr;
  ArgumentBytes args;
  bool use_extra = false;
  std::vector<void*> param_pointers;
  void* extra[5] = {};
  std::size_t extra_size = 0;
  // kMemset
  CUDA_MEMSET_NODE_PARAMS memset{};
};
using NodeList = std::vector<std::unique_ptr<Node>>;

// A new node with `from`'s work (its current arguments), a new id, and `origin` as given.
std::unique_ptr<Node> clone(const Node& from, std::uint64_t origin);
// A new node's id.
std::uint64_t next_node_id();
// Runs a node's work (outside the lock).
void run(const Node& node);

struct StubGraph {
  NodeList nodes;
};
struct StubExec {
  NodeList nodes;
  pid_t pid;
};

// Everything below, and every graph's and exec's nodes, under graph_lock.
extern std::mutex graph_lock;
extern StubCudaGraphCounters graph_counters;
extern std::set<StubGraph*>* graphs;
extern std::set<StubExec*>* execs;
// Every node of a live graph: the handles the node functions accept.
extern std::map<const Node*, StubGraph*>* graph_nodes;
// The stub kernels recorded into captures so far: the CUfunctions cuFuncGetParamInfo knows. A
// fixed table, not a heap container: an allocation at a capture would move the addresses that
// tests expect freed objects to come back at (the first 4096 kernels are known, no more).
void know_kernel(const StubKernel* kernel);
bool known_kernel(const void* function);

// Appends `node` to `stream`'s capture: 1 when recorded, 0 when the stream is not capturing.
int capture(CUstream stream, std::unique_ptr<Node> node);

// The model of host time (cudnn_fastpath_model_clock_ns, stub_cuda.h): what a node update costs is
// spent by the update's function.
void spend_update();

}  // namespace stubcuda

#pragma GCC visibility pop
