// cudnn_fastpath_features / cudnn_fastpath_set_features: the run-time switch of the public header.
#pragma once

namespace cudnn_fastpath::shim {

unsigned features() noexcept;
unsigned set_features(unsigned wanted) noexcept;

}  // namespace cudnn_fastpath::shim
