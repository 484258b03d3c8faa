#include "shim/features.h"

#include <cstdint>

#include "cudnn_fastpath/shim_control.h"
#include "shim/engine/replay_engine.h"
#include "shim/families/blas.h"
#include "shim/libraries/mode.h"
#include "shim/streams/handle_table.h"

namespace cudnn_fastpath::shim {
namespace {

// The public feature bits and the mode bits they move.
struct Feature {
  unsigned bit;
  std::uint32_t mode;
};
constexpr Feature kFeatures[] = {
    {CUDNN_FASTPATH_FEATURE_SET_STREAM, mode::kSkipping}, {CUDNN_FASTPATH_FEATURE_VARIANT_PACKS, mode::kCaching},
    {CUDNN_FASTPATH_FEATURE_GRAPHS, mode::kGraphs},       {CUDNN_FASTPATH_FEATURE_LEGACY, mode::kLegacy},
    {CUDNN_FASTPATH_FEATURE_CUBLAS, mode::kCublas},
};

// The public bits of the features mode word `m` has on.
unsigned bits_of(std::uint32_t m) {
  unsigned bits = 0;
  for (const Feature& f : kFeatures) bits |= (m & f.mode) ? f.bit : 0u;
  return bits;
}

}  // namespace

unsigned features() noexcept {
  const std::uint32_t m = current_mode();
  if (m & mode::kFollower) return leader().features();
  return bits_of(m);
}

unsigned set_features(unsigned wanted) noexcept {
  const std::uint32_t m = current_mode();
  if (m & mode::kFollower) return leader().set_features(wanted);
  // Graphs only with the pack cache: only a cached pack is stable enough to replay.
  if (!(wanted & CUDNN_FASTPATH_FEATURE_VARIANT_PACKS)) wanted &= ~CUDNN_FASTPATH_FEATURE_GRAPHS;
  std::uint32_t modes = 0;
  for (const Feature& f : kFeatures) modes |= (wanted & f.bit) ? f.mode : 0u;
  const std::uint32_t before = switch_features(modes);
  const std::uint32_t now = current_mode();
  // Whatever the table knew stops being trusted both ways: when skipping stops, so that nothing
  // cached outlives it; when it starts, so that nothing learnt before counts.
  if ((before ^ now) & mode::kSkipping) handle_table().forget_all();
  // A replay switched off: its graphs (and cached answers) are forgotten now, so that none
  // outlives the switch.
  const unsigned switched_off = bits_of(before & ~now);
  forget_families(switched_off);
  if (switched_off & CUDNN_FASTPATH_FEATURE_CUBLAS) forget_cublas_answers();
  return features();
}

}  // namespace cudnn_fastpath::shim
