// The stub's legacy batch norms in each kernel style (stubcudnn_set_kernel_style): a direct call, a
// captured one and one captured on other tensors and moved correctly by hand write the reference
// output; a relocation that lacks what a style needs does not.
#include <cudnn.h>

#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

#include "tests/stub/stub_legacy_test.h"
#include "tests/stub/stub_style_check.h"

using namespace stub_legacy_test;
using stylecheck::Library;
using stylecheck::Relocation;

namespace {

struct Style {
  explicit Style(StubKernelStyle style) { REQUIRE(stubcudnn_set_kernel_style(style) == STUB_KERNEL_STYLE_PLAIN); }
  ~Style() { stubcudnn_set_kernel_style(STUB_KERNEL_STYLE_PLAIN); }
};

// A batch norm whose input and output pointers are a test's tensors (the inputs first, then the
// outputs; the digest checked in the first output), its handle on a stream of the stub driver.
struct BatchNorm {
  const Op& op;
  World w;
  CUstream stream = nullptr;

  explicit BatchNorm(StubCudnnLegacyOp id) : op(ops()[id]), w(op) {
    REQUIRE(cuStreamCreate(&stream, 0) == CUDA_SUCCESS);
    REQUIRE(cudnnSetStream(w.handle, reinterpret_cast<cudaStream_t>(stream)) == CUDNN_STATUS_SUCCESS);
  }
  ~BatchNorm() { cuStreamDestroy_v2(stream); }
  BatchNorm(const BatchNorm&) = delete;
  BatchNorm& operator=(const BatchNorm&) = delete;

  Library library() {
    return {op.inputs + op.outputs, op.inputs, stream,
            [this](const std::vector<unsigned char*>& t) {
              for (int i = 0; i < op.inputs; ++i) w.in[i] = t[i];
              for (int i = 0; i < op.outputs; ++i) w.out[i] = t[op.inputs + i];
              REQUIRE(op.call(w) == CUDNN_STATUS_SUCCESS);
            },
            [](bool on) { stubcudnn_reference_calls(on); }};
  }
};

struct Calls {
  BatchNorm inference{STUBCUDNN_BATCHNORM_FORWARD_INFERENCE};
  BatchNorm training{STUBCUDNN_BATCHNORM_FORWARD_TRAINING_EX};
  BatchNorm backward{STUBCUDNN_BATCHNORM_BACKWARD_EX};
  std::vector<std::pair<const char*, Library>> all() {
    return {{inference.op.name, inference.library()}, {training.op.name, training.library()},
            {backward.op.name, backward.library()}};
  }
};

stubreloc::Options naive_output_delta() {
  stubreloc::Options o;
  o.output_delta = true;
  return o;
}

}  // namespace

TEST_CASE("legacy kernel styles: every style's direct call, capture and correct relocation write the reference output",
          "[kernels]") {
  Calls calls;
  for (int s = STUB_KERNEL_STYLE_PLAIN; s < STUB_KERNEL_STYLES; ++s) {
    const auto style = static_cast<StubKernelStyle>(s);
    INFO("style " << s);
    Style scope(style);
    for (auto& [name, lib] : calls.all()) {
      INFO(name);
      stylecheck::check_correct(lib, style);
    }
  }
}

TEST_CASE("legacy kernel styles: what each style does to a relocation that lacks its rule", "[kernels]") {
  Calls calls;
  for (auto& [name, lib] : calls.all()) {
    INFO(name);
    {
      Style scope(STUB_KERNEL_STYLE_PLAIN);
      const Relocation r(lib);
      CHECK(r.run(naive_output_delta()).second != r.expected);
    }
    {
      Style scope(STUB_KERNEL_STYLE_BY_ALIGNMENT);
      const Relocation r(lib, stylecheck::kTargetMisaligned);
      const auto [refused, out] = r.run({});
      CHECK(refused.empty());
      CHECK(out != r.expected);
    }
    {
      Style scope(STUB_KERNEL_STYLE_INDIRECT);
      const Relocation r(lib);
      CHECK(r.first_graph.nodes()[0].args == r.second_graph.nodes()[0].args);
      CHECK(r.unmoved() == stylecheck::kOutputBefore);
    }
    {
      Style scope(STUB_KERNEL_STYLE_SPLIT);
      const Relocation r(lib);
      stubreloc::Options words_only;
      words_only.split_pairs = false;
      CHECK_FALSE(r.run(words_only).first.empty());
      CHECK(r.run(naive_output_delta()).second != r.expected);
    }
    {
      Style scope(STUB_KERNEL_STYLE_MEMSET);
      const Relocation r(lib);
      stubreloc::Options kernels_only;
      kernels_only.memsets = false;
      const auto [refused, out] = r.run(kernels_only);
      CHECK(refused.empty());
      CHECK(out != r.expected);
    }
    {
      Style scope(STUB_KERNEL_STYLE_TWO_KERNELS);
      const Relocation r(lib);
      stubreloc::Options last_only;
      last_only.only_kernel = 1;
      const auto [refused, out] = r.run(last_only);
      CHECK(refused.empty());
      CHECK(out != r.expected);
    }
    {
      Style scope(STUB_KERNEL_STYLE_TMA);
      const Relocation r(lib);
      stubreloc::Options words_only;
      words_only.tensor_maps = false;
      CHECK_FALSE(r.run(words_only).first.empty());
      CHECK(r.run(naive_output_delta()).second != r.expected);
    }
  }
  CHECK(stubcudnn_set_kernel_style(STUB_KERNEL_STYLES) == -1);
}
