#include "operation_graph.h"

namespace cudnn_fastpath::detail {

namespace {
// Every tensor is declared 16-byte aligned: what vectorised engines need, and what cudaMalloc and
// any caching allocator give.
constexpr std::int64_t kTensorAlignment = 16;
}  // namespace

Status make_tensor(const TensorSpec& spec, BackendDescriptor* out) {
  return DescriptorBuilder(CUDNN_BACKEND_TENSOR_DESCRIPTOR, "tensor " + spec.name)
      .set(CUDNN_ATTR_TENSOR_UNIQUE_ID, spec.uid)
      .set(CUDNN_ATTR_TENSOR_DATA_TYPE, spec.data_type)
      .set(CUDNN_ATTR_TENSOR_DIMENSIONS, spec.dims)
      .set(CUDNN_ATTR_TENSOR_STRIDES, spec.strides)
      .set(CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, kTensorAlignment)
      .set(CUDNN_ATTR_TENSOR_IS_VIRTUAL, spec.is_virtual)
      .finalize(out);
}

Status finalize_operation_graph(cudnnHandle_t handle,
                                const std::vector<cudnnBackendDescriptor_t>& operations,
                                OperationGraph* out) {
  // The handle attribute is marked deprecated in cuDNN 9.19 (device properties may replace it),
  // but it is what binds the graph to the handle's device, and every 9.x release accepts it.
  return DescriptorBuilder(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, "operation graph of " + out->summary)
      .set(CUDNN_ATTR_OPERATIONGRAPH_HANDLE, handle)
      .set_descriptors(CUDNN_ATTR_OPERATIONGRAPH_OPS, operations)
      .finalize(&out->descriptor);
}

}  // namespace cudnn_fastpath::detail
