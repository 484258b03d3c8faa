// The variant pack of the last execute (which tensor lives where, and the workspace), kept
// finalized while execute keeps getting the same pointers.
#pragma once

#include <cudnn_graph.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "backend_descriptor.h"
#include "cudnn_fastpath/status.h"

namespace cudnn_fastpath::detail {

class VariantPackCache {
 public:
  // Once, when the plan is built: every allocation the cache will ever make happens here.
  void bind(std::vector<std::int64_t> tensor_uids, std::int64_t workspace_size);

  // Whether the cached pack was built from exactly these pointers and this workspace.
  bool holds(const void* const* pointers, std::size_t count, void* workspace) const noexcept {
    if (!pack_ || workspace != workspace_ || count != pointers_.size()) return false;
    for (std::size_t i = 0; i < count; ++i)
      if (pointers[i] != pointers_[i]) return false;
    return true;
  }

  // A new finalized pack for these pointers; the previous one stays in use if this fails.
  // `graph` names the graph in messages.
  Status rebuild(const void* const* pointers, std::size_t count, void* workspace,
                 const std::string& graph);

  cudnnBackendDescriptor_t get() const noexcept { return pack_.get(); }

 private:
  std::vector<std::int64_t> uids_;
  std::vector<void*> pointers_;   // what pack_ was built from
  std::vector<void*> candidate_;  // the next pointer set, while its pack is being built
  void* workspace_ = nullptr;
  std::int64_t workspace_size_ = 0;
  BackendDescriptor pack_;
};

}  // namespace cudnn_fastpath::detail
