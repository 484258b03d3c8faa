// A variant pack made the way PyTorch makes one, through any table of cuDNN's calls that has
// create, set and finalize (tests/packs/pack_api.h's PackApi): the scenario programs' way.
#pragma once

#include <cudnn.h>

#include <cstdint>

// create, set UNIQUE_IDS, set DATA_POINTERS, set WORKSPACE, finalize: the first failure, if any.
// `workspace` by reference: cuDNN is given its address, the caller's variable (a shim that kept
// the address instead of the value would read it there, as with the caller's own calls).
template <typename Api>
cudnnStatus_t make_pack(const Api& api, std::int64_t count, const std::int64_t* uids, void* const* pointers,
                        void* const& workspace, cudnnBackendDescriptor_t* pack) {
  *pack = nullptr;
  cudnnStatus_t s = api.create(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, pack);
  if (s == 0) s = api.set(*pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, count, uids);
  if (s == 0) s = api.set(*pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, count, pointers);
  if (s == 0) s = api.set(*pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &workspace);
  if (s == 0) s = api.finalize(*pack);
  return s;
}

// The same with what a program's Contents holds: count, uids, pointers and workspace.
template <typename Api, typename Contents>
cudnnStatus_t make_pack(const Api& api, const Contents& contents, cudnnBackendDescriptor_t* pack) {
  return make_pack(api, contents.count, contents.uids, contents.pointers, contents.workspace, pack);
}
