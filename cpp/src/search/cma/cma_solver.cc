// CMA-ES as the ask/tell strategy of the CMA_SAMPLING solver (CMABase's
// AskTellStrategy side, the policy CMA and its options); see
// evokit/cma_es.h and evokit/strategy_solver.h.
#include <algorithm>
#include <limits>
#include <stdexcept>

#include "evokit/cma_es.h"
#include "search/option_checks.h"
#include "search/strategy_internal.h"

namespace evokit {

// ---- the policy CMA -----------------------------------------------------------

namespace {

CMAESOptions policy_cma_options(std::size_t population_size, std::uint64_t seed, int num_threads) {
  CMAESOptions o;
  o.population_size = population_size;
  o.seed = seed;
  o.num_threads = num_threads;
  o.tolfun = 0.0;  // the criteria compare with <: 0 never fires
  o.tolfunhist = 0.0;
  o.tolx = 0.0;
  o.tolstagnation = std::numeric_limits<std::int64_t>::max() / 4;
  o.conditioncov = std::numeric_limits<double>::max();
  o.tolupsigma = std::numeric_limits<double>::max();
  o.noeffectaxis = false;
  o.noeffectcoord = false;
  o.restarts = 0;
  // Members are regenerated from their keys alone (tell_keys), which TPA's
  // mirrored pair is not.
  o.step_size_adaptation = StepSizeAdaptation::kCSA;
  return o;
}

}  // namespace

std::unique_ptr<CMABase> make_policy_cma(const std::vector<float>& x0, double sigma0,
                                         std::size_t population_size, bool separable,
                                         std::uint64_t seed, int num_threads) {
  std::vector<double> mean(x0.begin(), x0.end());
  const CMAESOptions o = policy_cma_options(population_size, seed, num_threads);
  if (separable) return std::make_unique<SepCMAES>(std::move(mean), sigma0, o);
  return std::make_unique<CMAES>(std::move(mean), sigma0, o);
}

// ---- CMABase as an AskTellStrategy -----------------------------------------------

std::vector<std::vector<std::int64_t>> CMABase::member_keys() const {
  std::vector<std::vector<std::int64_t>> keys(population_size());
  for (std::size_t k = 0; k < keys.size(); ++k) keys[k] = {sample_key(k)};
  return keys;
}

void CMABase::prepare_members() {
  if (sampled_population() == nullptr) ask();
}

void CMABase::rebuild_member(const std::vector<std::int64_t>& key, float* out) const {
  const std::size_t n = num_params();
  if (const std::vector<double>* asked = sampled_population()) {  // ask()'s row: the same bits
    const auto& keys = this->keys();
    const auto at = std::find(keys.begin(), keys.end(), key.at(0));
    if (at != keys.end()) {
      const double* row = asked->data() + static_cast<std::size_t>(at - keys.begin()) * n;
      for (std::size_t j = 0; j < n; ++j) out[j] = static_cast<float>(row[j]);
      return;
    }
  }
  const std::vector<double> x = regenerate(key.at(0));
  for (std::size_t j = 0; j < x.size(); ++j) out[j] = static_cast<float>(x[j]);
}

std::pair<std::size_t, std::string> CMABase::member_requirement() const { return {1, "members"}; }

void CMABase::tell_members(const std::vector<double>& values) {
  if (stopped()) {
    std::string names;
    for (const auto& [name, threshold] : stop()) names += (names.empty() ? "" : ", ") + name;
    throw std::logic_error("CMA-ES has stopped (" + names + "): no further updates");
  }
  std::vector<std::int64_t> k(population_size());
  for (std::size_t m = 0; m < k.size(); ++m) k[m] = sample_key(m);
  if (sampled_population() != nullptr && this->keys() == k) {
    ask();  // pending again if need be: the materialised generation, not a new one
    tell(values.data(), values.size());  // its samples, as tell_keys would rebuild them
  } else {
    tell_keys(k.data(), values.data(), k.size());
  }
}

void CMABase::center_params(float* out) const {
  const std::vector<double> m = mean_solution();
  for (std::size_t j = 0; j < m.size(); ++j) out[j] = static_cast<float>(m[j]);
}

void CMABase::save_entries(SolverState& state) const {
  const CMAState& s = this->state();
  state.doubles["cma.mean"] = s.mean;
  state.doubles["cma.p_sigma"] = s.p_sigma;
  state.doubles["cma.p_c"] = s.p_c;
  state.doubles["cma.cov"] = s.cov;
  state.doubles["cma.eigenvalues"] = s.eigenvalues;
  state.doubles["cma.eigenvectors"] = s.eigenvectors;
  state.doubles["cma.householder"] = s.householder.vectors;
  state.doubles["cma.householder_tau"] = s.householder.tau;
  state.doubles["cma.sigma"] = {s.sigma};
  state.ints["cma.generation"] = {s.generation};
  state.ints["cma.eigen_generation"] = {s.eigen_generation};
}

void CMABase::load_entries(const SolverState& state) {
  const std::size_t n = num_params();
  const bool full = !params().separable;
  CMAState s;
  s.mean = state.double_array("cma.mean", n);
  s.p_sigma = state.double_array("cma.p_sigma", n);
  s.p_c = state.double_array("cma.p_c", n);
  s.cov = state.double_array("cma.cov", full ? n * n : n);
  s.eigenvalues = state.double_array("cma.eigenvalues", full ? n : 0);
  s.eigenvectors = state.double_array("cma.eigenvectors", full ? n * n : 0);
  // Absent (a state saved before the reflectors were kept): Q = I, the
  // eigenvectors B^T themselves. set_state checks the sizes.
  if (state.doubles.count("cma.householder") != 0 || state.doubles.count("cma.householder_tau") != 0) {
    s.householder.vectors = state.double_array("cma.householder");
    s.householder.tau = state.double_array("cma.householder_tau");
  }
  s.sigma = state.double_value("cma.sigma");
  s.generation = state.int_value("cma.generation");
  s.eigen_generation = full ? state.int_value("cma.eigen_generation") : s.generation;
  set_state(s);  // validates first
}

// ---- options ----------------------------------------------------------------

void validate_cma_options(const OptionSet& o, std::optional<std::size_t> /*num_params*/) {
  detail::validate_strategy_options(o);
  detail::positive(o, "sampling.cma_sampling.sigma0");
}

std::unique_ptr<AskTellStrategy> make_cma_strategy(const OptionSet& o, const std::vector<float>& x0,
                                                   int num_threads) {
  const std::string c = "sampling.cma_sampling.";
  return make_policy_cma(x0, o.real(c + "sigma0"),
                         static_cast<std::size_t>(o.integer("population_size")),
                         o.flag(c + "separable"), static_cast<std::uint64_t>(o.integer(c + "seed")),
                         num_threads);
}

}  // namespace evokit
