// What each family is, off the hot path (family_facts.h).
#include "shim/engine/family_facts.h"

namespace cudnn_fastpath::shim {

const char* noun_of(Family family) noexcept { return facts_of(family).noun; }
unsigned feature_of(Family family) noexcept { return facts_of(family).feature; }
HandleOwner handle_owner_of(Family family) noexcept { return facts_of(family).handle; }

unsigned waste_of(Family family, const replay::Released& r) noexcept {
  const unsigned cost = facts_of(family).capture_cost;
  if (r.relocated) return 0;  // its calls were relocated: it was the shape's to repay
  if (r.graph == nullptr) return 1;
  return r.launches >= cost ? 0 : 2 * cost;
}

}  // namespace cudnn_fastpath::shim
