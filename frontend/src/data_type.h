// DataType as cuDNN and people spell it.
#pragma once

#include <cudnn_graph.h>

#include "cudnn_fastpath/op_descriptions.h"

namespace cudnn_fastpath::detail {

inline cudnnDataType_t to_cudnn(DataType type) noexcept {
  switch (type) {
    case DataType::kFloat: return CUDNN_DATA_FLOAT;
    case DataType::kHalf: return CUDNN_DATA_HALF;
    case DataType::kBFloat16: return CUDNN_DATA_BFLOAT16;
  }
  return CUDNN_DATA_FLOAT;  // unreachable for valid enumerators
}

inline const char* name_of(DataType type) noexcept {
  switch (type) {
    case DataType::kFloat: return "fp32";
    case DataType::kHalf: return "fp16";
    case DataType::kBFloat16: return "bf16";
  }
  return "?";
}

}  // namespace cudnn_fastpath::detail
