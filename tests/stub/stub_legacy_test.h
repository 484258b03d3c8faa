// What the tests of the stub's legacy ops share: every op described by the slots of its arguments,
// a World that holds a value for each slot, and the changes of one slot that must change the digest
// the op writes (stub_legacy_control.h).
#pragma once

#include <cudnn.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "tests/stub/stub_legacy_control.h"

namespace stub_legacy_test {

enum Single : unsigned { kFilter = 1, kConvolution = 2, kActivation = 4, kPooling = 8, kOpTensor = 16, kLrn = 32 };

struct World;

// An op as its arguments' slots: World::t[0..tensors), s[0..scalars), and so on, in the order the
// op's `call` passes them. Every slot is needed in the way the table calls the op: NULL in any one
// of them, or an unset descriptor, is a BAD_PARAM.
struct Op {
  const char* name;
  StubCudnnLegacyOp id;
  int tensors, scalars, numbers, inputs, outputs, spaces;
  unsigned singles;                          // the Single descriptors it takes
  std::vector<std::pair<int, int>> choices;  // the value each choice slot has, and another valid one
  cudnnStatus_t (*call)(World&);
};

// One value for each slot an op can have; each descriptor set, each buffer 16 bytes and distinct.
struct World {
  explicit World(const Op& op);
  ~World();
  World(const World&) = delete;
  World& operator=(const World&) = delete;

  void set_scalar(int i, double value);  // as a double when `wide`, else as a float
  void set_tensor(int i, int w, cudnnDataType_t type = CUDNN_DATA_FLOAT);

  bool wide = false;
  cudnnHandle_t handle = nullptr, other_handle = nullptr;
  cudnnTensorDescriptor_t t[6]{};
  cudnnFilterDescriptor_t filter = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  cudnnActivationDescriptor_t act = nullptr;
  cudnnPoolingDescriptor_t pool = nullptr;
  cudnnOpTensorDescriptor_t op_tensor = nullptr;
  cudnnLRNDescriptor_t lrn = nullptr;
  alignas(8) unsigned char s[4][8]{};  // the scalars' values
  const void* scalar[4]{};             // the pointers the op is given: to s
  double numbers[2] = {1e-5, 0.1};
  int choices[2]{};
  std::size_t sizes[2] = {64, 128};
  std::uint64_t in_data[8][2]{}, spare_in_data[8][2]{}, out_data[6][2]{}, spare_out_data[6][2]{}, space_data[2][2]{};
  const void* in[8]{};
  void* out[6]{};
  void* space[2]{};
  int outputs = 0;
};

// Clears the outputs, calls the op (counted, or in reference mode), requires it to succeed and to
// write one digest into every output, and returns that digest.
std::uint64_t digest(const Op& op, World& w, bool reference = false);
// The first 8 bytes of output `i`.
std::uint64_t output(const World& w, int i);

enum class Change {
  kInPlace,   // a value at the address the op was given: a descriptor set again, a scalar
  kContent,   // an input's first bytes
  kArgument,  // an argument itself: a pointer, a by-value number, an enum, a size, the handle
};
struct Mutation {
  std::string name;
  Change kind;
  std::function<void(World&)> apply;
};
// A change of each slot `op` has, each of which must change the digest.
std::vector<Mutation> mutations(const Op& op);

// Every legacy op of the stub.
const std::vector<Op>& ops();

}  // namespace stub_legacy_test
