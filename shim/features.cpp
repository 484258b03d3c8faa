#include "shim/features.h"

#include <cstdint>

#include "cudnn_fastpath/shim_control.h"
#include "shim/handle_table.h"
#include "shim/process.h"

namespace cudnn_fastpath::shim {

unsigned features() noexcept {
  const std::uint32_t m = current_mode();
  if (m & mode::kFollower) return leader().features();
  return ((m & mode::kSkipping) ? CUDNN_FASTPATH_FEATURE_SET_STREAM : 0u) |
         ((m & mode::kCaching) ? CUDNN_FASTPATH_FEATURE_VARIANT_PACKS : 0u);
}

unsigned set_features(unsigned wanted) noexcept {
  const std::uint32_t m = current_mode();
  if (m & mode::kFollower) return leader().set_features(wanted);
  const std::uint32_t before = switch_features(((wanted & CUDNN_FASTPATH_FEATURE_SET_STREAM) ? mode::kSkipping : 0u) |
                                               ((wanted & CUDNN_FASTPATH_FEATURE_VARIANT_PACKS) ? mode::kCaching : 0u));
  // Whatever the table knew stops being trusted both ways: when skipping stops, so that nothing
  // cached outlives it; when it starts, so that nothing learnt before counts.
  if ((before ^ current_mode()) & mode::kSkipping) handle_table().forget_all();
  return features();
}

}  // namespace cudnn_fastpath::shim
