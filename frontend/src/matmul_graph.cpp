// The operation graph of a MatmulDescription:
//
//   A, B --matmul--> C                          (no epilogue)
//   A, B --matmul--> t0 --add bias--> t1 --relu--> C
//
// with the intermediates t0, t1 virtual fp32 tensors, so that an engine can fuse the epilogue.
#include <string>
#include <utility>
#include <vector>

#include "data_type.h"
#include "operation_graph.h"

namespace cudnn_fastpath::detail {

namespace {

// Tensor unique ids. The non-virtual ones are also the order of execute()'s pointers.
constexpr std::int64_t kUidA = 1;
constexpr std::int64_t kUidB = 2;
constexpr std::int64_t kUidBias = 3;
constexpr std::int64_t kUidC = 4;
constexpr std::int64_t kUidProduct = 101;  // virtual: A x B before the epilogue
constexpr std::int64_t kUidBiased = 102;   // virtual: A x B + bias before the ReLU

Status check_shape(const MatmulDescription& d, const std::string& summary) {
  if (d.batch > 0 && d.m > 0 && d.n > 0 && d.k > 0) return Status();
  return Status(CUDNN_STATUS_BAD_PARAM, summary + ": batch, m, n and k must all be positive");
}

Status make_pointwise(cudnnPointwiseMode_t mode, const std::string& what,
                      BackendDescriptor* out) {
  return DescriptorBuilder(CUDNN_BACKEND_POINTWISE_DESCRIPTOR, what)
      .set(CUDNN_ATTR_POINTWISE_MODE, mode)
      .set(CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_DATA_FLOAT)
      .finalize(out);
}

}  // namespace

std::string describe(const MatmulDescription& d) {
  std::string text = "matmul [b=" + std::to_string(d.batch) + " m=" + std::to_string(d.m) +
                     " n=" + std::to_string(d.n) + " k=" + std::to_string(d.k) + "] " +
                     name_of(d.input_type) + " -> " + name_of(d.output_type);
  if (d.add_bias) text += " +bias";
  if (d.relu) text += " +relu";
  return text;
}

Status build_operation_graph(const MatmulDescription& d, cudnnHandle_t handle,
                             OperationGraph* out) {
  out->summary = describe(d);
  if (Status shape = check_shape(d, out->summary); !shape.ok()) return shape;

  const cudnnDataType_t input = to_cudnn(d.input_type);
  const cudnnDataType_t output = to_cudnn(d.output_type);
  const bool has_epilogue = d.add_bias || d.relu;

  BackendDescriptor a, b, c, bias, product, biased;
  Status made = make_tensor({"A", kUidA, input, {d.batch, d.m, d.k}, {d.m * d.k, d.k, 1}}, &a);
  if (made.ok())
    made = make_tensor({"B", kUidB, input, {d.batch, d.k, d.n}, {d.k * d.n, d.n, 1}}, &b);
  if (made.ok())
    made = make_tensor({"C", kUidC, output, {d.batch, d.m, d.n}, {d.m * d.n, d.n, 1}}, &c);
  if (made.ok() && d.add_bias)
    made = make_tensor({"bias", kUidBias, output, {1, 1, d.n}, {d.n, d.n, 1}}, &bias);
  if (made.ok() && has_epilogue)
    made = make_tensor({"A x B", kUidProduct, CUDNN_DATA_FLOAT, {d.batch, d.m, d.n},
                        {d.m * d.n, d.n, 1}, /*is_virtual=*/true},
                       &product);
  if (made.ok() && d.add_bias && d.relu)
    made = make_tensor({"A x B + bias", kUidBiased, CUDNN_DATA_FLOAT, {d.batch, d.m, d.n},
                        {d.m * d.n, d.n, 1}, /*is_virtual=*/true},
                       &biased);
  if (!made.ok()) return made;

  BackendDescriptor matmul;
  made = DescriptorBuilder(CUDNN_BACKEND_MATMUL_DESCRIPTOR, "matmul")
             .set(CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_DATA_FLOAT)
             .finalize(&matmul);
  if (!made.ok()) return made;

  std::vector<BackendDescriptor> operations;
  BackendDescriptor matmul_op;
  made = DescriptorBuilder(CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR, "matmul operation")
             .set_descriptor(CUDNN_ATTR_OPERATION_MATMUL_ADESC, a)
             .set_descriptor(CUDNN_ATTR_OPERATION_MATMUL_BDESC, b)
             .set_descriptor(CUDNN_ATTR_OPERATION_MATMUL_CDESC, has_epilogue ? product : c)
             .set_descriptor(CUDNN_ATTR_OPERATION_MATMUL_DESC, matmul)
             .finalize(&matmul_op);
  if (!made.ok()) return made;
  operations.push_back(std::move(matmul_op));

  // The tensor the next epilogue step reads.
  const BackendDescriptor* last = &product;
  BackendDescriptor add, add_op;
  if (d.add_bias) {
    const BackendDescriptor& sum = d.relu ? biased : c;
    made = make_pointwise(CUDNN_POINTWISE_ADD, "bias add", &add);
    if (made.ok())
      made = DescriptorBuilder(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR, "bias add operation")
                 .set_descriptor(CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, add)
                 .set_descriptor(CUDNN_ATTR_OPERATION_POINTWISE_XDESC, *last)
                 .set_descriptor(CUDNN_ATTR_OPERATION_POINTWISE_BDESC, bias)
                 .set_descriptor(CUDNN_ATTR_OPERATION_POINTWISE_YDESC, sum)
                 .finalize(&add_op);
    if (!made.ok()) return made;
    operations.push_back(std::move(add_op));
    last = &sum;
  }
  BackendDescriptor relu, relu_op;
  if (d.relu) {
    made = make_pointwise(CUDNN_POINTWISE_RELU_FWD, "relu", &relu);
    if (made.ok())
      made = DescriptorBuilder(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR, "relu operation")
                 .set_descriptor(CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, relu)
                 .set_descriptor(CUDNN_ATTR_OPERATION_POINTWISE_XDESC, *last)
                 .set_descriptor(CUDNN_ATTR_OPERATION_POINTWISE_YDESC, c)
                 .finalize(&relu_op);
    if (!made.ok()) return made;
    operations.push_back(std::move(relu_op));
  }

  std::vector<cudnnBackendDescriptor_t> raw_operations;
  for (const BackendDescriptor& op : operations) raw_operations.push_back(op.get());
  made = finalize_operation_graph(handle, raw_operations, out);
  if (!made.ok()) return made;

  out->tensor_uids = {kUidA, kUidB};
  if (d.add_bias) out->tensor_uids.push_back(kUidBias);
  out->tensor_uids.push_back(kUidC);
  out->requirements.forbid_tf32 = d.input_type == DataType::kFloat && !d.allow_tf32;
  for (BackendDescriptor* part : {&a, &b, &c, &bias, &product, &biased, &matmul, &add, &relu})
    if (*part) out->parts.push_back(std::move(*part));
  for (BackendDescriptor& op : operations) out->parts.push_back(std::move(op));
  return Status();
}

}  // namespace cudnn_fastpath::detail
