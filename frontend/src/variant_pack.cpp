#include "variant_pack.h"

#include <utility>

namespace cudnn_fastpath::detail {

void VariantPackCache::bind(std::vector<std::int64_t> tensor_uids, std::int64_t workspace_size) {
  uids_ = std::move(tensor_uids);
  pointers_.assign(uids_.size(), nullptr);
  candidate_.assign(uids_.size(), nullptr);
  workspace_ = nullptr;
  workspace_size_ = workspace_size;
  pack_.reset();
}

Status VariantPackCache::rebuild(const void* const* pointers, std::size_t count, void* workspace,
                                 const std::string& graph) {
  if (count != uids_.size())
    return Status(CUDNN_STATUS_BAD_PARAM,
                  "executing " + graph + ": got " + std::to_string(count) +
                      " device pointers, the graph has " + std::to_string(uids_.size()) +
                      " tensors (see Graph::tensor_uids())");
  if (workspace == nullptr && workspace_size_ > 0)
    return Status(CUDNN_STATUS_BAD_PARAM,
                  "executing " + graph + ": its plan needs " + std::to_string(workspace_size_) +
                      " bytes of workspace (Graph::workspace_size()) and the workspace is null");

  // cuDNN's pointer array is not const; it only reads through the inputs' pointers.
  for (std::size_t i = 0; i < candidate_.size(); ++i)
    candidate_[i] = const_cast<void*>(pointers[i]);

  BackendDescriptor pack;
  Status made = DescriptorBuilder(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, "variant pack of " + graph)
                    .set(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, uids_)
                    .set_data_pointers(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, candidate_.data(),
                                       static_cast<std::int64_t>(candidate_.size()))
                    .set_data_pointers(CUDNN_ATTR_VARIANT_PACK_WORKSPACE, &workspace, 1)
                    .finalize(&pack);
  if (!made.ok()) return made;

  pack_ = std::move(pack);  // destroys the previous pack
  pointers_.swap(candidate_);
  workspace_ = workspace;
  return Status();
}

}  // namespace cudnn_fastpath::detail
