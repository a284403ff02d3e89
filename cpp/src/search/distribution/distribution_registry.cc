// The distribution families, in SamplingConfig.Type order (after the
// families of solver.cc): adding one is its source file, one line here and
// one in distribution_internal.h.
#include "search/distribution/distribution_internal.h"

namespace evokit {

const std::vector<DistributionFamily>& distribution_families() {
  static const std::vector<DistributionFamily> families = {
      snes_family(),
      xnes_family(),
      crfmnes_family(),
      lmmaes_family(),
      pgpe_family(),
      cem_family(),
      maes_family(),
  };
  return families;
}

}  // namespace evokit
