// The solver registry (solver.h): one entry per family, in
// SamplingConfig.Type order, and the calls that dispatch on
// solver.sampling.type. The only file that knows every family; the Solver
// base (solver.cc) includes none.
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "evokit/cma_es.h"
#include "evokit/distribution.h"
#include "evokit/ga.h"
#include "evokit/gaussian_solver.h"
#include "evokit/solver.h"
#include "evokit/strategy_solver.h"
#include "common/messages.h"
#include "search/option_checks.h"

namespace evokit {

// ---- the registry -------------------------------------------------------------

namespace {

// A family: the StrategySolver over the strategy its options make.
template <std::unique_ptr<AskTellStrategy> (*make_strategy)(const OptionSet&,
                                                             const std::vector<float>&, int)>
std::unique_ptr<Solver> make_strategy_solver(const OptionSet& o, std::vector<float> x0,
                                             int num_threads) {
  return std::make_unique<StrategySolver>(o.text("sampling.type"),
                                          make_strategy(o, x0, num_threads));
}

struct Family {
  std::string name;
  void (*validate)(const OptionSet&, std::optional<std::size_t>);
  std::unique_ptr<Solver> (*make)(const OptionSet&, std::vector<float>, int);
  std::vector<std::string> key_options;
};

// One entry per family, in SamplingConfig.Type order; the distribution
// families (distribution.h) follow.
const Family kOwnFamilies[] = {
    {"GAUSSIAN_SAMPLING", &validate_gaussian_options, &make_strategy_solver<&make_gaussian_strategy>,
     {"sampling.type", "sampling.gaussian_sampling.seed", "sampling.gaussian_sampling.cached",
      "sampling.gaussian_sampling.cache_size", "sampling.gaussian_sampling.std", "param_pattern"}},
    {"CMA_SAMPLING", &validate_cma_options, &make_strategy_solver<&make_cma_strategy>,
     {"sampling.type", "param_pattern", "population_size", "sampling.cma_sampling.seed",
      "sampling.cma_sampling.separable"}},
    {"GA_SAMPLING", &validate_ga_options, &make_strategy_solver<&make_ga_strategy>,
     {"sampling.type", "param_pattern", "population_size", "sampling.ga_sampling.seed",
      "sampling.ga_sampling.mutation_power", "sampling.ga_sampling.init_sigma",
      "sampling.ga_sampling.num_elites", "sampling.ga_sampling.elite_evaluations"}},
    {"ARS_SAMPLING", &validate_ars_options, &make_strategy_solver<&make_ars_strategy>,
     {"sampling.type", "sampling.ars_sampling.seed", "sampling.ars_sampling.cached",
      "sampling.ars_sampling.cache_size", "sampling.ars_sampling.std", "param_pattern"}},
};

const std::vector<Family>& families() {
  static const std::vector<Family> all = [] {
    std::vector<Family> out(std::begin(kOwnFamilies), std::end(kOwnFamilies));
    for (const DistributionFamily& d : distribution_families()) {
      out.push_back({d.sampling_type, &validate_distribution_solver_options,
                     &make_strategy_solver<&make_distribution_strategy>,
                     {"sampling.type", "param_pattern", "population_size",
                      std::string("sampling.") + d.config_field + ".seed"}});
    }
    return out;
  }();
  return all;
}

const Family& family_of(const OptionSet& o) {
  const std::string& name = o.text("sampling.type");
  std::string known;
  for (const Family& f : families()) {
    if (name == f.name) return f;
    known += (known.empty() ? "" : ", ") + f.name;
  }
  detail::fail("sampling.type", "must be one of " + known + ", got " + name);
}

}  // namespace

std::vector<std::string> solver_families() {
  std::vector<std::string> names;
  for (const Family& f : families()) names.emplace_back(f.name);
  return names;
}

void validate_solver_options(const OptionSet& options, std::optional<std::size_t> num_params) {
  const Family& family = family_of(options);
  detail::validate_common_options(options);
  family.validate(options, num_params);
}

std::vector<std::string> solver_key_options(const OptionSet& options) {
  return family_of(options).key_options;
}

std::unique_ptr<Solver> make_solver(const OptionSet& options, std::vector<float> x0,
                                    int num_threads) {
  validate_solver_options(options, x0.size());
  detail::require_num_threads(num_threads);
  return family_of(options).make(options, std::move(x0), num_threads);
}

}  // namespace evokit
