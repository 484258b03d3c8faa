// Status: what a frontend call did, and on failure a message a person can act on.
#pragma once

#include <cudnn_graph.h>

#include <string>
#include <utility>

#include "cudnn_fastpath/export.h"

namespace cudnn_fastpath {

// Success carries no message and costs no allocation; a failure carries cuDNN's status code (or
// the one that describes the caller's mistake, CUDNN_STATUS_BAD_PARAM) and a sentence saying what
// was being done, what cuDNN answered, and cuDNN's own last error message when it has one.
class [[nodiscard]] CUDNN_FASTPATH_API Status {
 public:
  Status() noexcept = default;
  Status(cudnnStatus_t code, std::string message) : code_(code), message_(std::move(message)) {}

  bool ok() const noexcept { return code_ == CUDNN_STATUS_SUCCESS; }
  cudnnStatus_t code() const noexcept { return code_; }
  const std::string& message() const noexcept { return message_; }

 private:
  cudnnStatus_t code_ = CUDNN_STATUS_SUCCESS;
  std::string message_;
};

}  // namespace cudnn_fastpath
