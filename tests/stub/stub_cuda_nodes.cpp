// The stub driver's kernel and memset nodes (see stub_cuda.h): recorded by a capture, read back
// from a graph with the driver's own functions and structs, and updated in an executable graph,
// each launch running a node with its arguments as they are then.
#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <vector>

#include "tests/stub/stub_cuda_graph.h"
#include "tests/stub/stub_device_memory.h"

namespace stubcuda {

namespace {

std::atomic<std::uint64_t> g_next_node_id{1};
const StubKernel* g_known_kernels[4096];  // under graph_lock
std::size_t g_known_count = 0;

// What cuGraphKernelNodeGetParams_v2 hands out for a kernel node: pointers into its own bytes.
void point_into_args(Node& node) {
  node.param_pointers.clear();
  node.param_pointers.reserve(node.kernel->param_count);
  for (std::uint32_t i = 0; i < node.kernel->param_count; ++i)
    node.param_pointers.push_back(node.args.data() + node.kernel->params[i].offset);
  node.extra_size = node.args.size();
  node.extra[0] = CU_LAUNCH_PARAM_BUFFER_POINTER;
  node.extra[1] = node.args.data();
  node.extra[2] = CU_LAUNCH_PARAM_BUFFER_SIZE;
  node.extra[3] = &node.extra_size;
  node.extra[4] = CU_LAUNCH_PARAM_END;
}

std::unique_ptr<Node> kernel_node(const StubKernel* kernel, const void* args, bool use_extra) {
  auto node = std::make_unique<Node>();
  node->kind = NodeKind::kKernel;
  node->kernel = kernel;
  node->args = ArgumentBytes(args, kernel->args_size);
  node->use_extra = use_extra;
  point_into_args(*node);
  return node;
}

// The node of a live graph a handle names, or nullptr (under graph_lock).
Node* graph_node(CUgraphNode handle) {
  const auto it = graph_nodes->find(reinterpret_cast<const Node*>(handle));
  return it == graph_nodes->end() ? nullptr : const_cast<Node*>(it->first);
}

// The node of `exec` instantiated from the graph node `handle` names, or nullptr (under graph_lock).
Node* exec_node(CUgraphExec exec, CUgraphNode handle) {
  auto* e = reinterpret_cast<StubExec*>(exec);
  const Node* origin = graph_node(handle);
  if (origin == nullptr || !execs->count(e)) return nullptr;
  for (const auto& node : e->nodes)
    if (node->origin == origin->id) return node.get();
  return nullptr;  // a node of another graph
}

CUresult param_info(const void* function, std::size_t index, std::size_t* offset, std::size_t* size) {
  if (offset == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<std::mutex> guard(graph_lock);
  if (!known_kernel(function)) return CUDA_ERROR_INVALID_HANDLE;
  const auto* kernel = static_cast<const StubKernel*>(function);
  if (index >= kernel->param_count) return CUDA_ERROR_INVALID_VALUE;  // past the last parameter
  *offset = kernel->params[index].offset;
  if (size != nullptr) *size = kernel->params[index].size;
  return CUDA_SUCCESS;
}

// The argument bytes an update gives, copied into `args` as the kernel lays them out: false when
// they are not given exactly one way, or `extra` is not a whole buffer of the right size.
bool read_update(const StubKernel& kernel, const CUDA_KERNEL_NODE_PARAMS& params, unsigned char* args) {
  if ((params.kernelParams == nullptr) == (params.extra == nullptr)) return false;
  if (params.kernelParams != nullptr) {
    for (std::uint32_t i = 0; i < kernel.param_count; ++i) {
      if (params.kernelParams[i] == nullptr) return false;
      std::memcpy(args + kernel.params[i].offset, params.kernelParams[i], kernel.params[i].size);
    }
    return true;
  }
  const void* buffer = nullptr;
  const std::size_t* size = nullptr;
  for (void** e = params.extra; *e != CU_LAUNCH_PARAM_END && *e != nullptr; e += 2) {
    if (e[0] == CU_LAUNCH_PARAM_BUFFER_POINTER)
      buffer = e[1];
    else if (e[0] == CU_LAUNCH_PARAM_BUFFER_SIZE)
      size = static_cast<const std::size_t*>(e[1]);
    else
      return false;
  }
  if (buffer == nullptr || size == nullptr || *size != kernel.args_size) return false;
  std::memcpy(args, buffer, kernel.args_size);
  return true;
}

// A 1-D memset: `count` elements of `element_size` bytes, each the low bytes of `value`.
CUresult memset_async(CUdeviceptr destination, unsigned int value, unsigned int element_size, std::size_t count,
                      CUstream stream) {
  if (destination % element_size != 0) return CUDA_ERROR_INVALID_VALUE;
  auto node = std::make_unique<Node>();
  node->kind = NodeKind::kMemset;
  node->memset.dst = destination;
  node->memset.pitch = 0;
  node->memset.value = value;
  node->memset.elementSize = element_size;
  node->memset.width = count;
  node->memset.height = 1;
  const CUDA_MEMSET_NODE_PARAMS params = node->memset;
  if (capture(stream, std::move(node)) == 1) return CUDA_SUCCESS;
  Node now;  // not capturing: the work is done now
  now.kind = NodeKind::kMemset;
  now.memset = params;
  run(now);
  return CUDA_SUCCESS;
}

}  // namespace

ArgumentBytes::ArgumentBytes(const void* bytes, std::size_t size)
    : storage_(new unsigned char[size + 128]()), size_(size) {
  const auto base = reinterpret_cast<std::uintptr_t>(storage_.get());
  aligned_ = storage_.get() + ((base + 127) / 128 * 128 - base);
  if (size != 0) std::memcpy(aligned_, bytes, size);
}

void know_kernel(const StubKernel* kernel) {
  if (known_kernel(kernel) || g_known_count == sizeof g_known_kernels / sizeof g_known_kernels[0]) return;
  g_known_kernels[g_known_count++] = kernel;
}

bool known_kernel(const void* function) {
  for (std::size_t i = 0; i < g_known_count; ++i)
    if (g_known_kernels[i] == function) return true;
  return false;
}

std::uint64_t next_node_id() { return g_next_node_id.fetch_add(1, std::memory_order_relaxed); }

std::unique_ptr<Node> clone(const Node& from, std::uint64_t origin) {
  std::unique_ptr<Node> node;
  if (from.kind == NodeKind::kKernel) {
    node = kernel_node(from.kernel, from.args.data(), from.use_extra);
  } else {
    node = std::make_unique<Node>();
    node->kind = from.kind;
    node->run = from.run;
    node->blob = from.blob;
    node->memset = from.memset;
  }
  node->id = next_node_id();
  node->origin = origin;
  node->context = from.context;
  return node;
}

void run(const Node& node) {
  switch (node.kind) {
    case NodeKind::kOpaque:
      node.run(node.blob.data());
      return;
    case NodeKind::kKernel:
      node.kernel->run(node.kernel, node.args.data());
      return;
    case NodeKind::kMemset: {
      const CUDA_MEMSET_NODE_PARAMS& m = node.memset;
      std::vector<unsigned char> row(m.width * m.elementSize);
      for (std::size_t i = 0; i < row.size(); ++i) row[i] = static_cast<unsigned char>(m.value >> (8 * (i % m.elementSize)));
      for (std::size_t y = 0; y < m.height; ++y)  // through stubmem: an address moved wrongly is lost, not a crash
        stubmem::write(reinterpret_cast<void*>(m.dst + y * m.pitch), row.data(), row.size());
      return;
    }
  }
}

}  // namespace stubcuda

using stubcuda::graph_counters;
using stubcuda::graph_lock;
using stubcuda::Node;
using stubcuda::NodeKind;

extern "C" {

int stubcuda_capture_kernel(CUstream stream, CUfunction function, const void* args, std::size_t size, int use_extra) {
  const auto* kernel = reinterpret_cast<const StubKernel*>(function);
  if (kernel == nullptr || kernel->magic != STUB_KERNEL_MAGIC || size != kernel->args_size) return -1;
  return stubcuda::capture(stream, stubcuda::kernel_node(kernel, args, use_extra != 0));
}

CUresult CUDAAPI cuFuncGetParamInfo(CUfunction func, size_t paramIndex, size_t* paramOffset, size_t* paramSize) {
  return stubcuda::param_info(func, paramIndex, paramOffset, paramSize);
}

// A stub kernel's CUkernel is its CUfunction (the driver accepts one as the other in cuLaunchKernel).
CUresult CUDAAPI cuKernelGetParamInfo(CUkernel kernel, size_t paramIndex, size_t* paramOffset, size_t* paramSize) {
  return stubcuda::param_info(kernel, paramIndex, paramOffset, paramSize);
}

CUresult CUDAAPI cuGraphGetNodes(CUgraph hGraph, CUgraphNode* nodes, size_t* numNodes) {
  if (numNodes == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<std::mutex> guard(graph_lock);
  auto* graph = reinterpret_cast<stubcuda::StubGraph*>(hGraph);
  if (!stubcuda::graphs->count(graph)) return CUDA_ERROR_INVALID_VALUE;
  if (nodes == nullptr) {
    *numNodes = graph->nodes.size();
    return CUDA_SUCCESS;
  }
  std::size_t i = 0;
  for (; i < *numNodes && i < graph->nodes.size(); ++i) nodes[i] = reinterpret_cast<CUgraphNode>(graph->nodes[i].get());
  for (std::size_t j = i; j < *numNodes; ++j) nodes[j] = nullptr;
  *numNodes = i;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGraphNodeGetType(CUgraphNode hNode, CUgraphNodeType* type) {
  if (type == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<std::mutex> guard(graph_lock);
  const Node* node = stubcuda::graph_node(hNode);
  if (node == nullptr) return CUDA_ERROR_INVALID_VALUE;
  switch (node->kind) {
    case NodeKind::kOpaque: *type = CU_GRAPH_NODE_TYPE_HOST; break;
    case NodeKind::kKernel: *type = CU_GRAPH_NODE_TYPE_KERNEL; break;
    case NodeKind::kMemset: *type = CU_GRAPH_NODE_TYPE_MEMSET; break;
  }
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGraphKernelNodeGetParams_v2(CUgraphNode hNode, CUDA_KERNEL_NODE_PARAMS* nodeParams) {
  if (nodeParams == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<std::mutex> guard(graph_lock);
  Node* node = stubcuda::graph_node(hNode);
  if (node == nullptr || node->kind != NodeKind::kKernel) return CUDA_ERROR_INVALID_VALUE;
  std::memset(nodeParams, 0, sizeof *nodeParams);
  nodeParams->func = reinterpret_cast<CUfunction>(const_cast<StubKernel*>(node->kernel));
  nodeParams->gridDimX = 132;
  nodeParams->gridDimY = nodeParams->gridDimZ = 1;
  nodeParams->blockDimX = 128;
  nodeParams->blockDimY = nodeParams->blockDimZ = 1;
  nodeParams->sharedMemBytes = 0;
  if (node->use_extra) {
    nodeParams->extra = node->extra;
  } else {
    nodeParams->kernelParams = node->param_pointers.data();
    nodeParams->kern = reinterpret_cast<CUkernel>(const_cast<StubKernel*>(node->kernel));
  }
  nodeParams->ctx = node->context;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGraphExecKernelNodeSetParams_v2(CUgraphExec hGraphExec, CUgraphNode hNode,
                                                   const CUDA_KERNEL_NODE_PARAMS* nodeParams) {
  if (nodeParams == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<std::mutex> guard(graph_lock);
  Node* node = stubcuda::exec_node(hGraphExec, hNode);
  if (node == nullptr || node->kind != NodeKind::kKernel) return CUDA_ERROR_INVALID_VALUE;
  // The function may not change (the real driver allows a few changes; no stub library makes one).
  const void* function = nodeParams->func != nullptr ? static_cast<const void*>(nodeParams->func)
                                                     : static_cast<const void*>(nodeParams->kern);
  if (function != node->kernel) return CUDA_ERROR_INVALID_VALUE;
  stubcuda::ArgumentBytes updated(node->args.data(), node->args.size());
  if (!stubcuda::read_update(*node->kernel, *nodeParams, updated.data())) return CUDA_ERROR_INVALID_VALUE;
  std::memcpy(node->args.data(), updated.data(), updated.size());
  ++graph_counters.kernel_node_updates;
  stubcuda::spend_update();
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemsetD8Async(CUdeviceptr dstDevice, unsigned char uc, size_t N, CUstream hStream) {
  return stubcuda::memset_async(dstDevice, uc, 1, N, hStream);
}

CUresult CUDAAPI cuMemsetD16Async(CUdeviceptr dstDevice, unsigned short us, size_t N, CUstream hStream) {
  return stubcuda::memset_async(dstDevice, us, 2, N, hStream);
}

CUresult CUDAAPI cuMemsetD32Async(CUdeviceptr dstDevice, unsigned int ui, size_t N, CUstream hStream) {
  return stubcuda::memset_async(dstDevice, ui, 4, N, hStream);
}

CUresult CUDAAPI cuGraphMemsetNodeGetParams(CUgraphNode hNode, CUDA_MEMSET_NODE_PARAMS* nodeParams) {
  if (nodeParams == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<std::mutex> guard(graph_lock);
  const Node* node = stubcuda::graph_node(hNode);
  if (node == nullptr || node->kind != NodeKind::kMemset) return CUDA_ERROR_INVALID_VALUE;
  *nodeParams = node->memset;
  return CUDA_SUCCESS;
}

// Destination and value only: a 1-D memset's element size, width and height stay (the driver
// rejects a change of height, and of the rest when it does not fit the node's resources).
CUresult CUDAAPI cuGraphExecMemsetNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode,
                                                const CUDA_MEMSET_NODE_PARAMS* memsetParams, CUcontext ctx) {
  if (memsetParams == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<std::mutex> guard(graph_lock);
  Node* node = stubcuda::exec_node(hGraphExec, hNode);
  if (node == nullptr || node->kind != NodeKind::kMemset) return CUDA_ERROR_INVALID_VALUE;
  // The node runs in the context it was captured in: an update names that one (a real driver's rule
  // for the destination's memory too).
  if (ctx != node->context) return CUDA_ERROR_INVALID_CONTEXT;
  const CUDA_MEMSET_NODE_PARAMS& now = node->memset;
  if (memsetParams->elementSize != now.elementSize || memsetParams->width != now.width ||
      memsetParams->height != now.height || memsetParams->dst % now.elementSize != 0)
    return CUDA_ERROR_INVALID_VALUE;
  node->memset.dst = memsetParams->dst;
  node->memset.value = memsetParams->value;
  ++graph_counters.memset_node_updates;
  stubcuda::spend_update();
  return CUDA_SUCCESS;
}

}  // extern "C"
