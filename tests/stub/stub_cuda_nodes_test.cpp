// The stub driver's kernel and memset nodes (stub_cuda.h), read back and updated with the driver's
// own functions and structs, as a program would on the real driver.
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <vector>

#include "tests/stub/stub_cuda.h"
#include "tests/stub/stub_kernel.h"

namespace {

// A kernel that writes *in + add into *out: its three parameters, with 4 bytes of padding after `add`.
struct AddArgs {
  std::int32_t add;
  std::int32_t padding;
  const std::uint64_t* in;
  std::uint64_t* out;
};

void run_add(const StubKernel*, const unsigned char* args) {
  AddArgs a;
  std::memcpy(&a, args, sizeof a);
  *a.out = *a.in + static_cast<std::uint64_t>(a.add);
}

const StubKernelParam kAddParams[] = {{0, 4}, {8, 8}, {16, 8}};
StubKernel g_add{STUB_KERNEL_MAGIC, "add", run_add, kAddParams, 3, sizeof(AddArgs), nullptr};
StubKernel g_other_add{STUB_KERNEL_MAGIC, "other_add", run_add, kAddParams, 3, sizeof(AddArgs), nullptr};

CUfunction function(StubKernel& kernel) { return reinterpret_cast<CUfunction>(&kernel); }

// A stream of the stub driver and the graph and exec of what it captured.
struct Capture {
  CUstream stream = nullptr;
  CUgraph graph = nullptr;
  CUgraphExec exec = nullptr;
  Capture() { REQUIRE(cuStreamCreate(&stream, 0) == CUDA_SUCCESS); }
  ~Capture() {
    if (exec != nullptr) cuGraphExecDestroy(exec);
    if (graph != nullptr) cuGraphDestroy(graph);
    cuStreamDestroy_v2(stream);
  }
  Capture(const Capture&) = delete;
  Capture& operator=(const Capture&) = delete;
  void begin() { REQUIRE(cuStreamBeginCapture_v2(stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL) == CUDA_SUCCESS); }
  void end() {
    REQUIRE(cuStreamEndCapture(stream, &graph) == CUDA_SUCCESS);
    REQUIRE(cuGraphInstantiateWithFlags(&exec, graph, 0) == CUDA_SUCCESS);
  }
  void launch() { REQUIRE(cuGraphLaunch(exec, stream) == CUDA_SUCCESS); }
  std::vector<CUgraphNode> nodes() const {
    std::size_t count = 0;
    REQUIRE(cuGraphGetNodes(graph, nullptr, &count) == CUDA_SUCCESS);
    std::vector<CUgraphNode> nodes(count);
    REQUIRE(cuGraphGetNodes(graph, nodes.data(), &count) == CUDA_SUCCESS);
    REQUIRE(count == nodes.size());
    return nodes;
  }
};

// One add kernel captured with `args`, its arguments reported through `extra` or not.
void capture_add(Capture& c, const AddArgs& args, bool use_extra, StubKernel& kernel = g_add) {
  c.begin();
  REQUIRE(stubcuda_capture_kernel(c.stream, function(kernel), &args, sizeof args, use_extra) == 1);
  c.end();
}

// A node's argument bytes, from kernelParams (laid out by cuFuncGetParamInfo) or from extra.
std::vector<unsigned char> arguments(const CUDA_KERNEL_NODE_PARAMS& p) {
  std::vector<unsigned char> bytes;
  if (p.extra != nullptr) {
    REQUIRE(p.extra[0] == CU_LAUNCH_PARAM_BUFFER_POINTER);
    REQUIRE(p.extra[2] == CU_LAUNCH_PARAM_BUFFER_SIZE);
    REQUIRE(p.extra[4] == CU_LAUNCH_PARAM_END);
    const std::size_t size = *static_cast<const std::size_t*>(p.extra[3]);
    const auto* buffer = static_cast<const unsigned char*>(p.extra[1]);
    bytes.assign(buffer, buffer + size);
    return bytes;
  }
  for (std::size_t i = 0;; ++i) {
    std::size_t offset = 0, size = 0;
    if (cuFuncGetParamInfo(p.func, i, &offset, &size) != CUDA_SUCCESS) break;
    if (bytes.size() < offset + size) bytes.resize(offset + size);
    std::memcpy(bytes.data() + offset, p.kernelParams[i], size);
  }
  return bytes;
}

}  // namespace

TEST_CASE("stub driver: a kernel node's parameters read back are the bytes it was launched with", "[driver]") {
  std::uint64_t in = 40, out = 0;
  const AddArgs args{2, 0, &in, &out};
  for (const bool use_extra : {false, true}) {
    INFO("extra " << use_extra);
    out = 0;
    Capture c;
    capture_add(c, args, use_extra);
    CHECK(out == 0);  // recorded, not run
    const std::vector<CUgraphNode> nodes = c.nodes();
    REQUIRE(nodes.size() == 1);
    CUgraphNodeType type = CU_GRAPH_NODE_TYPE_EMPTY;
    REQUIRE(cuGraphNodeGetType(nodes[0], &type) == CUDA_SUCCESS);
    CHECK(type == CU_GRAPH_NODE_TYPE_KERNEL);
    CUDA_KERNEL_NODE_PARAMS p{};
    REQUIRE(cuGraphKernelNodeGetParams_v2(nodes[0], &p) == CUDA_SUCCESS);
    CHECK(p.func == function(g_add));
    CHECK(p.ctx == STUBCUDA_PRIMARY_CONTEXT);
    CHECK(p.gridDimX * p.blockDimX > 0);
    if (use_extra) {  // as cuLaunchKernel's launches: no CUkernel, no kernelParams
      CHECK(p.kernelParams == nullptr);
      CHECK(p.kern == nullptr);
      REQUIRE(p.extra != nullptr);
    } else {  // as the runtime's: kernelParams, and the CUkernel
      CHECK(p.extra == nullptr);
      REQUIRE(p.kernelParams != nullptr);
      CHECK(reinterpret_cast<void*>(p.kern) == &g_add);
    }
    const std::vector<unsigned char> read = arguments(p);
    REQUIRE(read.size() == sizeof args);
    CHECK(std::memcmp(read.data(), &args, sizeof args) == 0);
    c.launch();
    CHECK(out == 42);
  }
}

TEST_CASE("stub driver: cuFuncGetParamInfo and cuKernelGetParamInfo give each parameter, then INVALID_VALUE", "[driver]") {
  std::uint64_t in = 0, out = 0;
  Capture c;
  capture_add(c, AddArgs{1, 0, &in, &out}, false);
  for (std::size_t i = 0; i < 3; ++i) {
    std::size_t offset = 99, size = 99;
    REQUIRE(cuFuncGetParamInfo(function(g_add), i, &offset, &size) == CUDA_SUCCESS);
    CHECK(offset == kAddParams[i].offset);
    CHECK(size == kAddParams[i].size);
    offset = 99;
    REQUIRE(cuKernelGetParamInfo(reinterpret_cast<CUkernel>(&g_add), i, &offset, nullptr) == CUDA_SUCCESS);
    CHECK(offset == kAddParams[i].offset);
  }
  std::size_t offset = 0;
  CHECK(cuFuncGetParamInfo(function(g_add), 3, &offset, nullptr) == CUDA_ERROR_INVALID_VALUE);
  CHECK(cuKernelGetParamInfo(reinterpret_cast<CUkernel>(&g_add), 3, &offset, nullptr) == CUDA_ERROR_INVALID_VALUE);
  CHECK(cuFuncGetParamInfo(function(g_add), 0, nullptr, nullptr) == CUDA_ERROR_INVALID_VALUE);
  StubKernel never_launched = g_add;
  CHECK(cuFuncGetParamInfo(function(never_launched), 0, &offset, nullptr) == CUDA_ERROR_INVALID_HANDLE);
}

TEST_CASE("stub driver: a kernel launched on a stream that is not capturing is the library's to run", "[driver]") {
  std::uint64_t in = 1, out = 0;
  const AddArgs args{1, 0, &in, &out};
  Capture c;
  CHECK(stubcuda_capture_kernel(c.stream, function(g_add), &args, sizeof args, 0) == 0);
  CHECK(stubcuda_capture_kernel(nullptr, function(g_add), &args, sizeof args, 0) == 0);  // the legacy stream
  CHECK(out == 0);
  c.begin();
  CHECK(stubcuda_capture_kernel(c.stream, function(g_add), &args, sizeof args - 8, 0) == -1);  // not its size
  StubKernel not_a_kernel = g_add;
  not_a_kernel.magic = 0;
  CHECK(stubcuda_capture_kernel(c.stream, function(not_a_kernel), &args, sizeof args, 0) == -1);
  c.end();
  CHECK(c.nodes().empty());
}

TEST_CASE("stub driver: an update of an exec's kernel node changes what its next launches do", "[driver]") {
  std::uint64_t in = 40, out = 0, other_in = 100, other_out = 0;
  for (const bool use_extra : {false, true}) {
    INFO("extra " << use_extra);
    Capture c;
    const AddArgs args{2, 0, &in, &out};
    capture_add(c, args, use_extra);
    const CUgraphNode node = c.nodes()[0];
    CUDA_KERNEL_NODE_PARAMS p{};
    REQUIRE(cuGraphKernelNodeGetParams_v2(node, &p) == CUDA_SUCCESS);
    const StubCudaGraphCounters before = stubcuda_graph_counters();

    // The tensors moved: the same kernel on other pointers, given as the node gave its arguments.
    AddArgs moved = args;
    moved.in = &other_in;
    moved.out = &other_out;
    std::size_t size = sizeof moved;
    void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, &moved, CU_LAUNCH_PARAM_BUFFER_SIZE, &size, CU_LAUNCH_PARAM_END};
    void* params[] = {&moved.add, &moved.in, &moved.out};
    CUDA_KERNEL_NODE_PARAMS update = p;
    update.kernelParams = use_extra ? nullptr : params;
    update.extra = use_extra ? extra : nullptr;
    REQUIRE(cuGraphExecKernelNodeSetParams_v2(c.exec, node, &update) == CUDA_SUCCESS);
    CHECK(stubcuda_graph_counters().kernel_node_updates == before.kernel_node_updates + 1);
    out = other_out = 0;
    c.launch();
    CHECK(other_out == 102);
    CHECK(out == 0);
    // The graph's own node is unchanged: a new exec of it runs the captured arguments.
    CUDA_KERNEL_NODE_PARAMS again{};
    REQUIRE(cuGraphKernelNodeGetParams_v2(node, &again) == CUDA_SUCCESS);
    const std::vector<unsigned char> read = arguments(again);
    CHECK(std::memcmp(read.data(), &args, sizeof args) == 0);
    CUgraphExec fresh = nullptr;
    REQUIRE(cuGraphInstantiateWithFlags(&fresh, c.graph, 0) == CUDA_SUCCESS);
    REQUIRE(cuGraphLaunch(fresh, c.stream) == CUDA_SUCCESS);
    CHECK(out == 42);
    cuGraphExecDestroy(fresh);
    // A launch into another capture takes the exec's arguments as they are now.
    Capture outer;
    outer.begin();
    REQUIRE(cuGraphLaunch(c.exec, outer.stream) == CUDA_SUCCESS);
    outer.end();
    other_out = 0;
    outer.launch();
    CHECK(other_out == 102);
  }
}

TEST_CASE("stub driver: an update the driver refuses changes nothing", "[driver]") {
  std::uint64_t in = 40, out = 0;
  const AddArgs args{2, 0, &in, &out};
  Capture c, other;
  capture_add(c, args, false);
  capture_add(other, args, false);
  const CUgraphNode node = c.nodes()[0];
  CUDA_KERNEL_NODE_PARAMS p{};
  REQUIRE(cuGraphKernelNodeGetParams_v2(node, &p) == CUDA_SUCCESS);
  AddArgs changed = args;
  changed.add = 7;
  void* params[] = {&changed.add, &changed.in, &changed.out};
  std::size_t short_size = sizeof changed - 8;
  void* short_extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, &changed, CU_LAUNCH_PARAM_BUFFER_SIZE, &short_size,
                         CU_LAUNCH_PARAM_END};
  const StubCudaGraphCounters before = stubcuda_graph_counters();

  CUDA_KERNEL_NODE_PARAMS update = p;
  update.kernelParams = params;
  update.func = function(g_other_add);  // another function
  update.kern = nullptr;
  CHECK(cuGraphExecKernelNodeSetParams_v2(c.exec, node, &update) == CUDA_ERROR_INVALID_VALUE);
  update.func = p.func;
  update.extra = short_extra;  // both ways at once
  CHECK(cuGraphExecKernelNodeSetParams_v2(c.exec, node, &update) == CUDA_ERROR_INVALID_VALUE);
  update.kernelParams = nullptr;  // a buffer of the wrong size
  CHECK(cuGraphExecKernelNodeSetParams_v2(c.exec, node, &update) == CUDA_ERROR_INVALID_VALUE);
  update.extra = nullptr;  // neither
  CHECK(cuGraphExecKernelNodeSetParams_v2(c.exec, node, &update) == CUDA_ERROR_INVALID_VALUE);
  update.kernelParams = params;
  CHECK(cuGraphExecKernelNodeSetParams_v2(other.exec, node, &update) == CUDA_ERROR_INVALID_VALUE);  // another graph's exec
  CHECK(cuGraphExecKernelNodeSetParams_v2(c.exec, other.nodes()[0], &update) == CUDA_ERROR_INVALID_VALUE);
  CHECK(cuGraphExecKernelNodeSetParams_v2(c.exec, node, nullptr) == CUDA_ERROR_INVALID_VALUE);
  CHECK(stubcuda_graph_counters().kernel_node_updates == before.kernel_node_updates);
  c.launch();
  CHECK(out == 42);

  // By the CUkernel instead of the function: accepted.
  update.func = nullptr;
  update.kern = reinterpret_cast<CUkernel>(&g_add);
  REQUIRE(cuGraphExecKernelNodeSetParams_v2(c.exec, node, &update) == CUDA_SUCCESS);
  c.launch();
  CHECK(out == 47);

  // The graph destroyed: its node handles name nothing any more.
  REQUIRE(cuGraphDestroy(c.graph) == CUDA_SUCCESS);
  c.graph = nullptr;
  CHECK(cuGraphExecKernelNodeSetParams_v2(c.exec, node, &update) == CUDA_ERROR_INVALID_VALUE);
  CUgraphNodeType type;
  CHECK(cuGraphNodeGetType(node, &type) == CUDA_ERROR_INVALID_VALUE);
  c.launch();  // the exec still runs
  CHECK(out == 47);
}

TEST_CASE("stub driver: cuGraphGetNodes lists the nodes in capture order, opaque ones as host nodes", "[driver]") {
  std::uint64_t in = 1, out = 0, word = 0x1111111111111111ull;
  const AddArgs args{1, 0, &in, &out};
  Capture c;
  c.begin();
  REQUIRE(cuMemsetD8Async(reinterpret_cast<CUdeviceptr>(&word), 0, 2, c.stream) == CUDA_SUCCESS);
  REQUIRE(stubcuda_capture_kernel(c.stream, function(g_add), &args, sizeof args, 0) == 1);
  REQUIRE(stubcuda_capture_node(c.stream, [](const void*) {}, &word, sizeof word) == 1);
  c.end();
  const std::vector<CUgraphNode> nodes = c.nodes();
  REQUIRE(nodes.size() == 3);
  const CUgraphNodeType expected[] = {CU_GRAPH_NODE_TYPE_MEMSET, CU_GRAPH_NODE_TYPE_KERNEL, CU_GRAPH_NODE_TYPE_HOST};
  for (int i = 0; i < 3; ++i) {
    CUgraphNodeType type = CU_GRAPH_NODE_TYPE_EMPTY;
    REQUIRE(cuGraphNodeGetType(nodes[i], &type) == CUDA_SUCCESS);
    CHECK(type == expected[i]);
  }
  CUDA_KERNEL_NODE_PARAMS p{};
  CHECK(cuGraphKernelNodeGetParams_v2(nodes[2], &p) == CUDA_ERROR_INVALID_VALUE);  // not a kernel node
  CUDA_MEMSET_NODE_PARAMS m{};
  CHECK(cuGraphMemsetNodeGetParams(nodes[1], &m) == CUDA_ERROR_INVALID_VALUE);
  // More room than nodes: the rest NULL, the count what was filled; less: the first ones.
  CUgraphNode room[5] = {};
  std::size_t count = 5;
  REQUIRE(cuGraphGetNodes(c.graph, room, &count) == CUDA_SUCCESS);
  CHECK(count == 3);
  CHECK(room[3] == nullptr);
  count = 1;
  REQUIRE(cuGraphGetNodes(c.graph, room, &count) == CUDA_SUCCESS);
  CHECK(count == 1);
  CHECK(room[0] == nodes[0]);
  CHECK(cuGraphGetNodes(c.graph, room, nullptr) == CUDA_ERROR_INVALID_VALUE);
  CHECK(cuGraphGetNodes(reinterpret_cast<CUgraph>(&word), room, &count) == CUDA_ERROR_INVALID_VALUE);
}

TEST_CASE("stub driver: a memset records a 1-D memset node on a capturing stream and runs at once elsewhere", "[driver]") {
  alignas(8) unsigned char bytes[16];
  std::memset(bytes, 0xEE, sizeof bytes);
  Capture c;
  REQUIRE(cuMemsetD16Async(reinterpret_cast<CUdeviceptr>(bytes), 0x0102, 2, c.stream) == CUDA_SUCCESS);  // now
  const unsigned char at_once[] = {0x02, 0x01, 0x02, 0x01, 0xEE};
  CHECK(std::memcmp(bytes, at_once, sizeof at_once) == 0);
  CHECK(cuMemsetD32Async(reinterpret_cast<CUdeviceptr>(bytes + 2), 0, 1, c.stream) == CUDA_ERROR_INVALID_VALUE);

  std::memset(bytes, 0xEE, sizeof bytes);
  c.begin();
  REQUIRE(cuMemsetD32Async(reinterpret_cast<CUdeviceptr>(bytes + 4), 0xA1B2C3D4u, 2, c.stream) == CUDA_SUCCESS);
  c.end();
  CHECK(bytes[4] == 0xEE);  // recorded, not run
  const CUgraphNode node = c.nodes()[0];
  CUDA_MEMSET_NODE_PARAMS m{};
  REQUIRE(cuGraphMemsetNodeGetParams(node, &m) == CUDA_SUCCESS);
  CHECK(m.dst == reinterpret_cast<CUdeviceptr>(bytes + 4));
  CHECK(m.value == 0xA1B2C3D4u);
  CHECK(m.elementSize == 4);
  CHECK(m.width == 2);
  CHECK(m.height == 1);
  c.launch();
  const std::uint32_t word = 0xA1B2C3D4u;
  CHECK(std::memcmp(bytes + 4, &word, 4) == 0);
  CHECK(std::memcmp(bytes + 8, &word, 4) == 0);
  CHECK(bytes[12] == 0xEE);

  // Destination and value move; width, element size and height do not; the update is made in the
  // context the node was captured in (the thread's, here), not another.
  const StubCudaGraphCounters before = stubcuda_graph_counters();
  std::memset(bytes, 0xEE, sizeof bytes);
  CUcontext context = nullptr;
  REQUIRE(cuCtxGetCurrent(&context) == CUDA_SUCCESS);
  CUDA_MEMSET_NODE_PARAMS update = m;
  CHECK(cuGraphExecMemsetNodeSetParams(c.exec, node, &update, nullptr) == CUDA_ERROR_INVALID_CONTEXT);
  update.width = 3;
  CHECK(cuGraphExecMemsetNodeSetParams(c.exec, node, &update, context) == CUDA_ERROR_INVALID_VALUE);
  update = m;
  update.dst = reinterpret_cast<CUdeviceptr>(bytes + 2);  // not 4-byte aligned
  CHECK(cuGraphExecMemsetNodeSetParams(c.exec, node, &update, context) == CUDA_ERROR_INVALID_VALUE);
  update.dst = reinterpret_cast<CUdeviceptr>(bytes);
  update.value = 0;
  REQUIRE(cuGraphExecMemsetNodeSetParams(c.exec, node, &update, context) == CUDA_SUCCESS);
  CHECK(stubcuda_graph_counters().memset_node_updates == before.memset_node_updates + 1);
  c.launch();
  const unsigned char zeroed[] = {0, 0, 0, 0, 0, 0, 0, 0, 0xEE};
  CHECK(std::memcmp(bytes, zeroed, sizeof zeroed) == 0);
  REQUIRE(cuGraphMemsetNodeGetParams(node, &m) == CUDA_SUCCESS);
  CHECK(m.dst == reinterpret_cast<CUdeviceptr>(bytes + 4));  // the graph's node is unchanged

  // A memset whose destination is not mapped any more loses its write; the launch goes on.
  update.dst = 16;
  REQUIRE(cuGraphExecMemsetNodeSetParams(c.exec, node, &update, context) == CUDA_SUCCESS);
  c.launch();
}
