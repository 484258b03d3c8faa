// The stub's legacy ops run directly: the digest they write, what changes it, their checks.
#include <catch2/catch.hpp>
#include <cstdint>
#include <cstring>

#include "tests/stub/stub_legacy_test.h"

using namespace stub_legacy_test;

namespace {

bool same(const StubCudnnOpCounters& a, const StubCudnnOpCounters& b) {
  return a.calls == b.calls && a.direct_runs == b.direct_runs && a.captured == b.captured && a.replays == b.replays;
}

// `op` with its arguments as `w` holds them now: BAD_PARAM, counted as a call, no output written.
void require_bad_param(const Op& op, World& w) {
  for (int i = 0; i < w.outputs; ++i) std::memset(w.out_data[i], 0, 8);
  const std::uint64_t calls = stubcudnn_op_counters(op.id).calls;
  CHECK(op.call(w) == CUDNN_STATUS_BAD_PARAM);
  CHECK(stubcudnn_op_counters(op.id).calls == calls + 1);
  for (int i = 0; i < w.outputs; ++i) CHECK(w.out_data[i][0] == 0);
}

// Sets `slot` to `value` for one bad call, then back.
template <typename T, typename V>
void with(const Op& op, World& w, T& slot, V value) {
  const T saved = slot;
  slot = value;
  require_bad_param(op, w);
  slot = saved;
}

}  // namespace

TEST_CASE("legacy ops: each writes one digest into every output, the same in reference mode, counted once") {
  for (const Op& op : ops()) {
    INFO(op.name);
    World w(op);
    const StubCudnnOpCounters before = stubcudnn_op_counters(op.id), total = stubcudnn_op_totals();
    const std::uint64_t counted = digest(op, w);
    const StubCudnnOpCounters after = stubcudnn_op_counters(op.id);
    CHECK(after.calls == before.calls + 1);
    CHECK(after.direct_runs == before.direct_runs + 1);
    CHECK(after.captured == before.captured);
    CHECK(stubcudnn_op_totals().calls == total.calls + 1);
    CHECK(stubcudnn_op_totals().direct_runs == total.direct_runs + 1);
    CHECK(digest(op, w, true) == counted);
    CHECK(same(stubcudnn_op_counters(op.id), after));
    CHECK(digest(op, w) == counted);  // nothing else goes into it
  }
}

TEST_CASE("legacy ops: any one descriptor field, scalar, number, enum, pointer or input changed changes the digest") {
  for (const Op& op : ops()) {
    for (const Mutation& m : mutations(op)) {
      INFO(op.name << ": " << m.name);
      World w(op);
      const std::uint64_t before = digest(op, w);
      m.apply(w);
      CHECK(digest(op, w) != before);
    }
  }
}

TEST_CASE("legacy ops: two ops given the same arguments write different digests") {
  const Op& add = ops()[STUBCUDNN_ADD_TENSOR];
  const Op& transform = ops()[STUBCUDNN_TRANSFORM_TENSOR];  // the same arguments in the same order
  World w(add);
  CHECK(digest(add, w) != digest(transform, w));
}

TEST_CASE("legacy ops: scalars are doubles for a CUDNN_DATA_DOUBLE output, floats otherwise") {
  const Op& add = ops()[STUBCUDNN_ADD_TENSOR];
  World w(add);
  const std::uint64_t narrow = digest(add, w);
  w.s[0][4] ^= 0xff;  // past a float: not read
  CHECK(digest(add, w) == narrow);

  w.wide = true;
  w.set_tensor(0, 5, CUDNN_DATA_DOUBLE);
  w.set_tensor(1, 6, CUDNN_DATA_DOUBLE);
  w.set_scalar(0, 1.0);
  const std::uint64_t one = digest(add, w);
  w.set_scalar(0, 2.0);  // differs from 1.0 only in the upper four bytes
  CHECK(digest(add, w) != one);
}

TEST_CASE("legacy ops: a NULL or unset argument, a dead handle, an unknown enum is BAD_PARAM and runs nothing") {
  for (const Op& op : ops()) {
    INFO(op.name);
    World w(op);
    with(op, w, w.handle, nullptr);
    cudnnHandle_t dead = nullptr;
    REQUIRE(cudnnCreate(&dead) == CUDNN_STATUS_SUCCESS);
    REQUIRE(cudnnDestroy(dead) == CUDNN_STATUS_SUCCESS);
    with(op, w, w.handle, dead);
    cudnnTensorDescriptor_t unset = nullptr;
    REQUIRE(cudnnCreateTensorDescriptor(&unset) == CUDNN_STATUS_SUCCESS);
    for (int i = 0; i < op.tensors; ++i) {
      with(op, w, w.t[i], nullptr);
      with(op, w, w.t[i], unset);
    }
    cudnnDestroyTensorDescriptor(unset);
    if (op.singles & kFilter) with(op, w, w.filter, nullptr);
    if (op.singles & kConvolution) with(op, w, w.conv, nullptr);
    if (op.singles & kActivation) with(op, w, w.act, nullptr);
    if (op.singles & kPooling) with(op, w, w.pool, nullptr);
    if (op.singles & kOpTensor) with(op, w, w.op_tensor, nullptr);
    if (op.singles & kLrn) with(op, w, w.lrn, nullptr);
    for (int i = 0; i < op.scalars; ++i) with(op, w, w.scalar[i], nullptr);
    for (int i = 0; i < op.inputs; ++i) with(op, w, w.in[i], nullptr);
    for (int i = 0; i < op.outputs; ++i) with(op, w, w.out[i], nullptr);
    for (int i = 0; i < op.spaces; ++i) with(op, w, w.space[i], nullptr);  // with a size
    for (std::size_t i = 0; i < op.choices.size(); ++i) with(op, w, w.choices[i], 99);
  }
}

TEST_CASE("legacy ops: unset descriptors of the other kinds are BAD_PARAM") {
  const Op& conv = ops()[STUBCUDNN_CONVOLUTION_BIAS_ACTIVATION_FORWARD];
  World w(conv);
  cudnnFilterDescriptor_t filter = nullptr;
  cudnnConvolutionDescriptor_t convolution = nullptr;
  cudnnActivationDescriptor_t activation = nullptr;
  REQUIRE(cudnnCreateFilterDescriptor(&filter) == CUDNN_STATUS_SUCCESS);
  REQUIRE(cudnnCreateConvolutionDescriptor(&convolution) == CUDNN_STATUS_SUCCESS);
  REQUIRE(cudnnCreateActivationDescriptor(&activation) == CUDNN_STATUS_SUCCESS);
  with(conv, w, w.filter, filter);
  with(conv, w, w.conv, convolution);
  with(conv, w, w.act, activation);
  cudnnDestroyFilterDescriptor(filter);
  cudnnDestroyConvolutionDescriptor(convolution);
  cudnnDestroyActivationDescriptor(activation);

  const Op& pool = ops()[STUBCUDNN_POOLING_FORWARD];
  World p(pool);
  cudnnPoolingDescriptor_t pooling = nullptr;
  REQUIRE(cudnnCreatePoolingDescriptor(&pooling) == CUDNN_STATUS_SUCCESS);
  with(pool, p, p.pool, pooling);
  cudnnDestroyPoolingDescriptor(pooling);

  const Op& op_tensor = ops()[STUBCUDNN_OP_TENSOR];
  World o(op_tensor);
  cudnnOpTensorDescriptor_t unset = nullptr;
  REQUIRE(cudnnCreateOpTensorDescriptor(&unset) == CUDNN_STATUS_SUCCESS);
  with(op_tensor, o, o.op_tensor, unset);
  cudnnDestroyOpTensorDescriptor(unset);
}

TEST_CASE("legacy ops: the optional arguments, as cuDNN documents them") {
  const Op& training = ops()[STUBCUDNN_BATCHNORM_FORWARD_TRAINING_EX];
  World t(training);
  const cudnnTensorDescriptor_t z = t.t[1];
  const cudnnActivationDescriptor_t activation = t.act;
  t.out[1] = t.out[2] = t.out[3] = t.out[4] = nullptr;  // no running or saved results: both pairs
  t.outputs = 1;
  t.space[0] = t.space[1] = nullptr;  // no workspace, no reserve space: with a size of 0
  t.sizes[0] = t.sizes[1] = 0;
  digest(training, t);
  t.choices[1] = CUDNN_BATCHNORM_OPS_BN_ACTIVATION;
  t.t[1] = nullptr;  // z is only for the add
  t.in[1] = nullptr;
  digest(training, t);
  t.choices[1] = CUDNN_BATCHNORM_OPS_BN;
  t.act = nullptr;  // the activation only for an activation
  digest(training, t);
  with(training, t, t.out[1], t.out_data[1]);  // half a pair
  with(training, t, t.out[4], t.out_data[4]);
  with(training, t, t.numbers[1], -1e-5);                                  // epsilon below CUDNN_BN_MIN_EPSILON
  with(training, t, t.sizes[0], 8);                                        // a size without a workspace
  with(training, t, t.choices[1], CUDNN_BATCHNORM_OPS_BN_ADD_ACTIVATION);  // without z
  t.choices[1] = CUDNN_BATCHNORM_OPS_BN_ACTIVATION;
  require_bad_param(training, t);  // without an activation
  t.t[1] = z;
  t.act = activation;

  const Op& backward = ops()[STUBCUDNN_BATCHNORM_BACKWARD_EX];
  World b(backward);
  const cudnnTensorDescriptor_t y = b.t[1], dz = b.t[3];
  const cudnnActivationDescriptor_t act = b.act;
  b.choices[1] = CUDNN_BATCHNORM_OPS_BN;
  b.t[1] = b.t[3] = nullptr;  // no y, no dz, no bias, no activation, no saved mean and variance
  b.in[1] = b.in[4] = b.in[5] = b.in[6] = nullptr;
  b.out[0] = nullptr;
  b.act = nullptr;
  CHECK(backward.call(b) == CUDNN_STATUS_SUCCESS);
  CHECK(b.out_data[1][0] != 0);                                        // dx
  with(backward, b, b.in[5], b.in_data[5]);                            // half a pair
  with(backward, b, b.choices[1], CUDNN_BATCHNORM_OPS_BN_ACTIVATION);  // without y and the activation
  b.t[1] = y;
  b.t[3] = dz;
  b.act = act;

  const Op& op_tensor = ops()[STUBCUDNN_OP_TENSOR];
  World o(op_tensor);
  const cudnnTensorDescriptor_t b_desc = o.t[1];
  REQUIRE(cudnnSetOpTensorDescriptor(o.op_tensor, CUDNN_OP_TENSOR_SQRT, CUDNN_DATA_FLOAT, CUDNN_NOT_PROPAGATE_NAN) ==
          CUDNN_STATUS_SUCCESS);
  o.t[1] = nullptr;  // B is ignored by a unary op
  o.in[1] = nullptr;
  digest(op_tensor, o);
  REQUIRE(cudnnSetOpTensorDescriptor(o.op_tensor, CUDNN_OP_TENSOR_MUL, CUDNN_DATA_FLOAT, CUDNN_NOT_PROPAGATE_NAN) ==
          CUDNN_STATUS_SUCCESS);
  require_bad_param(op_tensor, o);
  o.t[1] = b_desc;
}
