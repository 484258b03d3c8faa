// The stub cuBLAS GEMMs' and cuBLASLt matmul's kernel styles (stubblas_set_kernel_style): in each,
// a direct call, a captured one and one captured on other tensors and moved correctly by hand
// (tests/stub/stub_relocation.h) write the reference output; and what each style does to a
// relocation that lacks the rule it needs.
#include <catch2/catch.hpp>

#include <cstdint>
#include <memory>
#include <vector>

#include "tests/stub/stub_style_check.h"
#include "tests/unit/blas_stub_support.h"

using namespace blastest;
using stylecheck::Library;
using stylecheck::Relocation;

namespace {

// The style for the life of a test, then the default again.
struct Style {
  explicit Style(StubKernelStyle style) { REQUIRE(stubblas_set_kernel_style(style) == STUB_KERNEL_STYLE_PLAIN); }
  ~Style() { stubblas_set_kernel_style(STUB_KERNEL_STYLE_PLAIN); }
};

// A cuBLAS handle on a stream of the stub driver, with a workspace; its GEMM on tensors A, B, C.
struct Gemm {
  cublasHandle_t handle = nullptr;
  CUstream stream = nullptr;
  Scalar alpha{1.5f}, beta{0.5f};
  alignas(256) unsigned char workspace[1024] = {};
  StubBlasGemmEntry entry;

  explicit Gemm(StubBlasGemmEntry e) : entry(e) {
    REQUIRE(cublasCreate_v2(&handle) == CUBLAS_STATUS_SUCCESS);
    REQUIRE(cuStreamCreate(&stream, 0) == CUDA_SUCCESS);
    REQUIRE(cublasSetStream_v2(handle, reinterpret_cast<cudaStream_t>(stream)) == CUBLAS_STATUS_SUCCESS);
    REQUIRE(cublasSetWorkspace_v2(handle, workspace, sizeof workspace) == CUBLAS_STATUS_SUCCESS);
  }
  ~Gemm() {
    cublasDestroy_v2(handle);
    cuStreamDestroy_v2(stream);
  }
  Gemm(const Gemm&) = delete;
  Gemm& operator=(const Gemm&) = delete;

  Library library() {
    return {3, 2, stream,
            [this](const std::vector<unsigned char*>& t) {
              const blas_arguments::Gemm g{handle,     entry,      CUBLAS_OP_N, CUBLAS_OP_T, 64,    32,   16,
                                           &alpha,     t[0],       CUDA_R_16F,  64,          1024,  t[1], CUDA_R_16F,
                                           32,         512,        &beta,       t[2],        CUDA_R_32F, 64, 2048,
                                           4,          CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT};
              REQUIRE(g.call(Linked{}) == CUBLAS_STATUS_SUCCESS);
            },
            [](bool on) { stubblas_reference_calls(on); }};
  }
};

// A cuBLASLt matmul on tensors A, B, C, D (D written), on a stream of the stub driver.
struct Matmul {
  LtObjects objects;
  CUstream stream = nullptr;
  Scalar alpha{1.5f}, beta{0.5f};
  alignas(256) unsigned char workspace[1024] = {};

  Matmul() { REQUIRE(cuStreamCreate(&stream, 0) == CUDA_SUCCESS); }
  ~Matmul() { cuStreamDestroy_v2(stream); }
  Matmul(const Matmul&) = delete;
  Matmul& operator=(const Matmul&) = delete;

  Library library() {
    return {4, 3, stream,
            [this](const std::vector<unsigned char*>& t) {
              const cublasLtMatrixLayout_t* l = objects.layouts;
              REQUIRE(cublasLtMatmul(objects.handle, objects.desc, &alpha, t[0], l[0], t[1], l[1], &beta, t[2], l[2],
                                     t[3], l[3], nullptr, workspace, sizeof workspace,
                                     reinterpret_cast<cudaStream_t>(stream)) == CUBLAS_STATUS_SUCCESS);
            },
            [](bool on) { stubblas_reference_calls(on); }};
  }
};

// Every call whose kernels the styles lay out: cublasGemmEx, cublasGemmStridedBatchedEx_64, cublasLtMatmul.
struct Calls {
  Gemm gemm{STUBBLAS_GEMM_EX};
  Gemm batched{STUBBLAS_GEMM_STRIDED_BATCHED_EX_64};
  Matmul matmul;
  std::vector<std::pair<const char*, Library>> all() {
    return {{"cublasGemmEx", gemm.library()},
            {"cublasGemmStridedBatchedEx_64", batched.library()},
            {"cublasLtMatmul", matmul.library()}};
  }
};

std::vector<CUgraphNodeType> types(const std::vector<stubreloc::Node>& nodes) {
  std::vector<CUgraphNodeType> t;
  for (const stubreloc::Node& n : nodes) t.push_back(n.type);
  return t;
}

stubreloc::Options naive_output_delta() {
  stubreloc::Options o;
  o.output_delta = true;
  return o;
}

}  // namespace

TEST_CASE("kernel styles: plain, one kernel node, and a relocation by the output's move writes a wrong output", "[blas]") {
  Style style(STUB_KERNEL_STYLE_PLAIN);
  Calls calls;
  for (auto& [name, lib] : calls.all()) {
    INFO(name);
    stylecheck::check_correct(lib, STUB_KERNEL_STYLE_PLAIN);
    const Relocation r(lib);
    CHECK(types(r.first_graph.nodes()) == std::vector<CUgraphNodeType>{CU_GRAPH_NODE_TYPE_KERNEL});
    const auto [refused, out] = r.run(naive_output_delta());
    CHECK(refused.empty());
    CHECK(out != r.expected);
  }
}

TEST_CASE("kernel styles: by_alignment, another kernel for a tensor off 256 bytes, which a relocation must not ignore",
          "[blas]") {
  Style style(STUB_KERNEL_STYLE_BY_ALIGNMENT);
  Calls calls;
  for (auto& [name, lib] : calls.all()) {
    INFO(name);
    stylecheck::check_correct(lib, STUB_KERNEL_STYLE_BY_ALIGNMENT);
    const stylecheck::Graph aligned(lib, stylecheck::tensors(stylecheck::kTarget, lib.count));
    const stylecheck::Graph misaligned(lib, stylecheck::tensors(stylecheck::kTargetMisaligned, lib.count));
    CHECK(aligned.nodes()[0].kernel.func != misaligned.nodes()[0].kernel.func);
    // Every word moves by its tensor's move, but the target's A is only 16-byte aligned: the
    // aligned kernel runs where the library would have chosen the other.
    const Relocation r(lib, stylecheck::kTargetMisaligned);
    const auto [refused, out] = r.run({});
    CHECK(refused.empty());
    CHECK(out != r.expected);
  }
}

TEST_CASE("kernel styles: indirect, the tensors move and no argument does, so nothing can be proven", "[blas]") {
  Style style(STUB_KERNEL_STYLE_INDIRECT);
  Calls calls;
  for (auto& [name, lib] : calls.all()) {
    INFO(name);
    stylecheck::check_correct(lib, STUB_KERNEL_STYLE_INDIRECT);
    const Relocation r(lib);
    const auto first = r.first_graph.nodes(), second = r.second_graph.nodes();
    REQUIRE(first.size() == 1);
    CHECK(first[0].args == second[0].args);
    // Launched as it is (no word to move), it runs on the tensors the last call wrote into the
    // scratch memory, and the target's output is never written.
    CHECK(r.unmoved() == stylecheck::kOutputBefore);
    CHECK(r.run(naive_output_delta()).second != r.expected);
  }
}

TEST_CASE("kernel styles: split, a pointer in two halves that no 8-byte word moves with", "[blas]") {
  Style style(STUB_KERNEL_STYLE_SPLIT);
  Calls calls;
  for (auto& [name, lib] : calls.all()) {
    INFO(name);
    stylecheck::check_correct(lib, STUB_KERNEL_STYLE_SPLIT);
    const Relocation r(lib);
    stubreloc::Options words_only;
    words_only.split_pairs = false;
    CHECK_FALSE(r.run(words_only).first.empty());  // the halves' words moved by no tensor's move
    const auto [refused, out] = r.run(naive_output_delta());
    CHECK(refused.empty());
    CHECK(out != r.expected);
  }
}

TEST_CASE("kernel styles: memset, a memset node zeroes the output first, which a relocation must move too", "[blas]") {
  Style style(STUB_KERNEL_STYLE_MEMSET);
  Calls calls;
  for (auto& [name, lib] : calls.all()) {
    INFO(name);
    stylecheck::check_correct(lib, STUB_KERNEL_STYLE_MEMSET);
    const Relocation r(lib);
    CHECK(types(r.first_graph.nodes()) ==
          std::vector<CUgraphNodeType>{CU_GRAPH_NODE_TYPE_MEMSET, CU_GRAPH_NODE_TYPE_KERNEL});
    stubreloc::Options kernels_only;
    kernels_only.memsets = false;
    const auto [refused, out] = r.run(kernels_only);
    CHECK(refused.empty());
    CHECK(out != r.expected);  // the kernel accumulated into an output nobody zeroed
  }
}

TEST_CASE("kernel styles: two_kernels, an intermediate between two kernel nodes, both of which must move", "[blas]") {
  Style style(STUB_KERNEL_STYLE_TWO_KERNELS);
  Calls calls;
  for (auto& [name, lib] : calls.all()) {
    INFO(name);
    stylecheck::check_correct(lib, STUB_KERNEL_STYLE_TWO_KERNELS);
    const Relocation r(lib);
    const auto nodes = r.first_graph.nodes();
    CHECK(types(nodes) == std::vector<CUgraphNodeType>{CU_GRAPH_NODE_TYPE_KERNEL, CU_GRAPH_NODE_TYPE_KERNEL});
    REQUIRE(nodes.size() == 2);
    CHECK(nodes[0].kernel.func != nodes[1].kernel.func);
    CHECK((nodes[0].kernel.extra == nullptr) != (nodes[1].kernel.extra == nullptr));  // one reports extra
    stubreloc::Options last_only;
    last_only.only_kernel = 1;  // the node that writes the output
    const auto [refused, out] = r.run(last_only);
    CHECK(refused.empty());
    CHECK(out != r.expected);  // the first kernel read the first capture's inputs
    CHECK(r.run(naive_output_delta()).second != r.expected);
  }
}

TEST_CASE("kernel styles: tma, a pointer only inside a tensor map, moved only by cuTensorMapReplaceAddress", "[blas]") {
  Style style(STUB_KERNEL_STYLE_TMA);
  Calls calls;
  for (auto& [name, lib] : calls.all()) {
    INFO(name);
    stylecheck::check_correct(lib, STUB_KERNEL_STYLE_TMA);
    const Relocation r(lib);
    bool map = false;
    const auto nodes = r.first_graph.nodes();
    for (const auto& [offset, size] : nodes[0].layout) map = map || (size == 128 && offset % 64 == 0);
    CHECK(map);
    stubreloc::Options words_only;
    words_only.tensor_maps = false;
    words_only.split_pairs = false;
    CHECK_FALSE(r.run(words_only).first.empty());  // the map's words moved by no tensor's move
    const auto [refused, out] = r.run(naive_output_delta());
    CHECK(refused.empty());
    CHECK(out != r.expected);
  }
}

TEST_CASE("kernel styles: a style is one of them, the default plain", "[blas]") {
  CHECK(stubblas_kernel_style() == STUB_KERNEL_STYLE_PLAIN);
  CHECK(stubblas_set_kernel_style(STUB_KERNEL_STYLES) == -1);
  CHECK(stubblas_set_kernel_style(-1) == -1);
  CHECK(stubblas_kernel_style() == STUB_KERNEL_STYLE_PLAIN);
}
