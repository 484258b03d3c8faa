#include "failure.h"

#include <utility>

namespace cudnn_fastpath::detail {

Status cudnn_failure(cudnnStatus_t status, const std::string& what) {
  std::string message = what + ": " + cudnnGetErrorString(status);
  // cuDNN keeps a sentence about its last error (which attribute, which limit); it is usually
  // the most useful part of the message.
  char detail[512] = {};
  cudnnGetLastErrorString(detail, sizeof detail);
  if (detail[0] != '\0') {
    message += " (cuDNN: ";
    message += detail;
    message += ")";
  }
  return Status(status, std::move(message));
}

}  // namespace cudnn_fastpath::detail
