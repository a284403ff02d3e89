// What the distribution families share (internal): option checks and the
// families' registry entries. See evokit/distribution.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "evokit/cma_es.h"
#include "evokit/distribution.h"

namespace evokit {

// One per family, defined in the family's source file, listed in
// distribution_registry.cc.
DistributionFamily snes_family();
DistributionFamily xnes_family();
DistributionFamily crfmnes_family();
DistributionFamily lmmaes_family();
DistributionFamily pgpe_family();
DistributionFamily cem_family();
DistributionFamily maes_family();

namespace detail {

struct CommonDistributionOptions {
  double sigma0 = 1.0;
  std::size_t population_size = 0;  // resolved: the family's default for 0
  std::uint64_t seed = 0;
  int num_threads = 1;
};

// Checks and resolves sigma0, population_size (0: default_population,
// rounded up to even when mirrored; the paper's default is most often
// cma_default_population_size(n) of cma_es.h, 4 + floor(3 ln n)), seed and
// num_threads; messages start with prefix + the option's name.
CommonDistributionOptions common_distribution_options(const OptionSet& o, const std::string& prefix,
                                                      std::size_t default_population, bool mirrored);

// The real option `name`, checked to lie in the interval (low_open /
// high_open: excluded ends); zero_default: 0 is accepted too (the paper's
// default) and returned as 0. std::invalid_argument "<prefix><name> must be
// in (0, 1], got 2" otherwise.
double option_in(const OptionSet& o, const std::string& prefix, const std::string& name,
                 double low, double high, bool low_open, bool high_open, bool zero_default);

// Checks of a loaded state entry `name`: every value finite
// ("state entry 'xnes.mean'[3] is nan"), or finite and > 0
// ("state entry 'xnes.sigma'[0] must be > 0 and finite, got -1").
void require_finite_entries(const std::vector<double>& values, const std::string& name);
void require_positive_entries(const std::vector<double>& values, const std::string& name);

// The state entry prefix + name of n doubles, checked: every value finite
// (positive: > 0 and finite). std::invalid_argument "state entry
// '<prefix><name>'[j] ..." otherwise.
const std::vector<double>& finite_entry(const SolverState& state, const std::string& prefix,
                                        const std::string& name, std::size_t n,
                                        bool positive = false);

}  // namespace detail
}  // namespace evokit
