// The GA of Such et al. as the ask/tell strategy of the GA_SAMPLING solver
// (GeneticAlgorithm's AskTellStrategy side and its options); see
// evokit/ga.h and evokit/strategy_solver.h.
#include <algorithm>
#include <stdexcept>

#include "evokit/ga.h"
#include "search/option_checks.h"
#include "search/strategy_internal.h"

namespace evokit {

using detail::get_infos;
using detail::put_infos;

// ---- GeneticAlgorithm as an AskTellStrategy ---------------------------------

std::vector<std::vector<std::int64_t>> GeneticAlgorithm::member_keys() const {
  const auto& infos = phase() == Phase::kFitness ? ask() : ask_elite_candidates();
  std::vector<std::vector<std::int64_t>> keys;
  keys.reserve(infos.size());
  for (const SamplingInfo& info : infos) keys.push_back(info.key);
  return keys;
}

void GeneticAlgorithm::rebuild_member(const std::vector<std::int64_t>& key, float* out) const {
  rebuild(key, out, options_.num_threads);
}

std::pair<std::size_t, std::string> GeneticAlgorithm::member_requirement() const {
  if (phase() == Phase::kFitness) return {1, "individuals"};
  return {options_.elite_evaluations, "elite candidates"};
}

std::size_t GeneticAlgorithm::rewards_averaged() const {
  // Elite candidates: the mean of their first elite_evaluations rewards.
  return phase() == Phase::kFitness ? 0 : options_.elite_evaluations;
}

void GeneticAlgorithm::tell_members(const std::vector<double>& values) {
  std::vector<double> fitness(values.size());  // the GA maximises the mean rewards
  for (std::size_t m = 0; m < values.size(); ++m) fitness[m] = -values[m];
  if (phase() == Phase::kFitness) {
    tell(fitness);
  } else {
    tell_elite_means(fitness);
  }
}

void GeneticAlgorithm::center_params(float* out) const {
  if (elites_.empty()) {
    std::copy(x0_.begin(), x0_.end(), out);
  } else {
    rebuild(elites_[0].key, out, options_.num_threads);
  }
}

void GeneticAlgorithm::save_entries(SolverState& state) const {
  state.floats["ga.x0"] = x0_;
  state.ints["ga.generation"] = {generation()};
  put_infos(state, "ga.population", ask());
  put_infos(state, "ga.elites", elites());
  state.doubles["ga.elite_scores"] = elite_scores();
  const auto order = pending_order();
  state.ints["ga.order"].assign(order.begin(), order.end());
}

void GeneticAlgorithm::load_entries(const SolverState& state) {
  const std::vector<float>& x0 = state.float_array("ga.x0", num_params());
  const auto& order = state.int_array("ga.order");
  std::vector<std::size_t> positions;
  for (std::size_t i = 0; i < order.size(); ++i) {
    if (order[i] < 0) {
      throw std::invalid_argument("ga.order[" + std::to_string(i) + "] must be >= 0, got " +
                                  std::to_string(order[i]));
    }
    positions.push_back(static_cast<std::size_t>(order[i]));
  }
  // A fresh GA around the saved x0 (the individuals are rebuilt from it),
  // given the saved generation; this one is replaced only if it holds.
  GeneticAlgorithm ga(options_, x0);
  ga.set_state(state.int_value("ga.generation"), get_infos(state, "ga.population"),
               get_infos(state, "ga.elites"), state.double_array("ga.elite_scores"),
               std::move(positions));
  *this = std::move(ga);
}

// ---- options ----------------------------------------------------------------

namespace {

// GA_SAMPLING's options as the GA reads them (the 0 defaults not yet
// resolved: resolved_ga_options).
GeneticAlgorithmOptions ga_options_of(const OptionSet& o) {
  const std::string f = "sampling.ga_sampling.";
  auto size = [&](const std::string& name) {
    return static_cast<std::size_t>(std::max<std::int64_t>(0, o.integer(name)));
  };
  GeneticAlgorithmOptions g;
  g.population_size = size("population_size");
  g.truncation_size = size(f + "truncation_size");
  g.num_elites = size(f + "num_elites");
  g.mutation_power = static_cast<float>(o.real(f + "mutation_power"));
  g.init_sigma = static_cast<float>(o.real(f + "init_sigma"));
  g.elite_candidates = size(f + "elite_candidates");
  g.elite_evaluations = size(f + "elite_evaluations");
  g.seed = static_cast<std::uint64_t>(o.integer(f + "seed"));
  return g;
}

}  // namespace

void validate_ga_options(const OptionSet& o, std::optional<std::size_t> /*num_params*/) {
  using detail::fail;
  detail::validate_strategy_options(o);
  const std::string f = "sampling.ga_sampling.";
  const std::int64_t n = o.integer("population_size");
  detail::at_least(o, f + "truncation_size", 0);
  detail::at_least(o, f + "elite_candidates", 0);
  const GeneticAlgorithmOptions g = resolved_ga_options(ga_options_of(o));
  const auto truncation = static_cast<std::int64_t>(g.truncation_size);
  if (!(1 <= truncation && truncation <= n)) {
    fail(f + "truncation_size", "must be in [1, " + std::to_string(n) +
                                    "] (solver.population_size), got " +
                                    std::to_string(truncation));
  }
  const std::int64_t elites = o.integer(f + "num_elites");
  if (!(1 <= elites && elites <= n - 1)) {
    fail(f + "num_elites", "must be in [1, " + std::to_string(n - 1) +
                               "] (solver.population_size - 1), got " + std::to_string(elites));
  }
  detail::positive(o, f + "mutation_power");
  detail::non_negative(o, f + "init_sigma");
  detail::at_least(o, f + "elite_evaluations", 0);
  const std::int64_t evaluations = o.integer(f + "elite_evaluations");
  if (evaluations > 0) {
    const auto candidates = static_cast<std::int64_t>(g.elite_candidates);
    if (!(elites <= candidates && candidates <= n)) {
      fail(f + "elite_candidates", "must be in [" + std::to_string(elites) + ", " +
                                       std::to_string(n) +
                                       "] (num_elites to solver.population_size), got " +
                                       std::to_string(candidates));
    }
    const std::int64_t need = (candidates + elites) * evaluations;
    if (need > n) {
      fail(f + "elite_evaluations",
           "(" + std::to_string(evaluations) + ") times the at most " +
               std::to_string(candidates + elites) +
               " candidates (elite_candidates + num_elites) is " + std::to_string(need) +
               ", more than the " + std::to_string(n) +
               " samples of a generation (solver.population_size)");
    }
  }
}

std::unique_ptr<AskTellStrategy> make_ga_strategy(const OptionSet& o, const std::vector<float>& x0,
                                                  int num_threads) {
  GeneticAlgorithmOptions g = ga_options_of(o);
  g.num_threads = num_threads;
  return std::make_unique<GeneticAlgorithm>(g, x0);
}

}  // namespace evokit
