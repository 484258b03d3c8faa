// cudnnCreate and cudnnDestroy under the shim: a handle's address, handed out again by cuDNN,
// starts with nothing known of it, in the stream table or in any replayed family.
#pragma once

#include <cudnn.h>

namespace cudnn_fastpath::shim {

cudnnStatus_t create(const void* caller, cudnnHandle_t* handle) noexcept;
cudnnStatus_t destroy(const void* caller, cudnnHandle_t handle) noexcept;

}  // namespace cudnn_fastpath::shim
