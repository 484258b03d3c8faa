// What each family's row of CUDNN_FASTPATH_REPLAY_FAMILIES says (family_facts.h), off the hot path.
#include "shim/engine/family_facts.h"

namespace cudnn_fastpath::shim {

const char* noun_of(Family family) noexcept { return kFacts[static_cast<int>(family)].noun; }
unsigned feature_of(Family family) noexcept { return kFacts[static_cast<int>(family)].feature; }
HandleOwner handle_owner_of(Family family) noexcept { return kFacts[static_cast<int>(family)].handle; }

unsigned waste_of(Family family, const replay::Released& r) noexcept {
  const unsigned cost = kFacts[static_cast<int>(family)].capture_cost;
  if (r.relocated) return 0;  // its calls were relocated: it was the shape's to repay
  if (r.graph == nullptr) return 1;
  return r.launches >= cost ? 0 : 2 * cost;
}

}  // namespace cudnn_fastpath::shim
