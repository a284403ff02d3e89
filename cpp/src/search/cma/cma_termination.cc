// CMABase's termination criteria and restarts: after each tell(), the
// criteria of CMAESOptions (pycma's names and defaults): those on f-values
// are termination.h's, shared by every strategy; tolx, noeffectcoord,
// noeffectaxis, conditioncov and tolupsigma are CMA-ES's own. A stop by
// any but maxfevals and ftarget restarts the
// run, with IPOP's doubled or BIPOP's alternating population sizes.
//
// BIPOP's bookkeeping is that of pycma's fmin(..., restarts=R, bipop=True)
// (pycma 4.x, evolution_strategy.py, whose fmin docstring says "Small-
// population restarts do not count into the total restart count"): the
// first run's evaluations count into the small budget; a restart is small
// while budget_small < max(1, budget_large), with lambda_s =
// floor(lambda0 (2^L)^(U1^2)), L the large restarts so far, sigma0 10^(-2 U2),
// and an iteration limit of 0.5 budget_large / lambda_s (stop() name
// "maxiter"); else large, lambda0 2^(L+1). The optimisation ends when a run
// stops after L = R large restarts (or by maxfevals / ftarget).
//
//   N. Hansen, "Benchmarking a BI-Population CMA-ES on the BBOB-2009
//   Function Testbed", GECCO 2009: BIPOP restarts and the stagnation test.
//   A. Auger, N. Hansen, "A Restart CMA Evolution Strategy With Increasing
//   Population Size", CEC 2005: IPOP restarts.
#include "evokit/cma_es.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <deque>
#include <limits>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "evokit/philox.h"

namespace evokit {

namespace detail {
namespace {

// hash_draw tag of BIPOP's uniform draws (counter word c).
constexpr std::uint64_t kBipopTag = 0x4249504Full;  // "BIPO"

// A uniform double in [0, 1) from 64 random bits.
double uniform01(std::uint64_t bits) { return static_cast<double>(bits >> 11) * 0x1.0p-53; }

}  // namespace
}  // namespace detail

void CMABase::disable_stagnation() noexcept {
  options_.tolstagnation = std::numeric_limits<std::int64_t>::max() / 4;
}

void CMABase::disable_value_criteria() noexcept {
  disable_stagnation();
  options_.tolfun = 0.0;  // a spread is never < 0
  options_.tolfunhist = 0.0;
}

void CMABase::count_evaluations(std::int64_t n) {
  if (n < 0) throw std::invalid_argument("count_evaluations: n must be >= 0, got " + std::to_string(n));
  evaluations_ += n;
}

void CMABase::check_termination() {
  const CMAParams& p = params_;
  const CMAESOptions& o = options_;
  const std::size_t n = p.num_params;
  const CMAState& s = state_;
  history_.record(last_values_.data(), last_values_.size(), n, p.population_size);
  FValueCriteria criteria;
  criteria.max_evaluations = o.max_evaluations;
  criteria.ftarget = o.ftarget;
  criteria.tolfun = o.tolfun;
  criteria.tolfunhist = o.tolfunhist;
  criteria.tolstagnation = o.tolstagnation;
  std::map<std::string, double> stop = history_.check(criteria, evaluations_, best_f_);

  bool tolx = true;
  bool noeffectcoord = false;
  for (std::size_t i = 0; i < n; ++i) {
    const double sd = coord_std(i);
    if (!(s.sigma * std::fabs(s.p_c[i]) < o.tolx && s.sigma * sd < o.tolx)) tolx = false;
    if (s.mean[i] == s.mean[i] + 0.2 * s.sigma * sd) noeffectcoord = true;
  }
  if (tolx) stop["tolx"] = o.tolx;
  if (o.noeffectcoord && noeffectcoord) stop["noeffectcoord"] = 0.2;
  check_axes(stop);

  if (run_max_iterations_ > 0 && s.generation >= run_max_iterations_) {
    stop["maxiter"] = static_cast<double>(run_max_iterations_);
  }

  if (stop.empty()) return;
  // BIPOP counts only the large restarts (pycma's fmin: irun - runs_with_small).
  const int counted = o.restart_strategy == RestartStrategy::kBIPOP ? large_runs_ : restart_;
  const bool final_stop = stop.count("maxfevals") > 0 || stop.count("ftarget") > 0 ||
                          counted >= o.restarts;
  if (final_stop) {
    stop_ = std::move(stop);
    return;
  }
  restart_history_.push_back(std::move(stop));
  restart();
}

void CMABase::restart() {
  const CMAESOptions& o = options_;
  const std::size_t n = num_params();
  const std::size_t lambda0 = o.population_size.value_or(cma_default_population_size(n));
  const std::int64_t used = evaluations_ - run_start_evaluations_;
  // The first run counts as small (pycma's fmin, after Hansen's Matlab code).
  (run_is_small_ || restart_ == 0 ? budget_small_ : budget_large_) += used;
  restart_ += 1;
  std::size_t lambda;
  run_sigma0_ = sigma0_;
  run_is_small_ = false;
  run_max_iterations_ = 0;
  if (o.restart_strategy == RestartStrategy::kBIPOP && budget_small_ < std::max<std::int64_t>(1, budget_large_)) {
    // Small regime: lambda_s = floor(lambda0 (2^L)^(U1^2)), sigma = sigma0
    // 10^(-2 U2), U1, U2 uniform on [0, 1), at most 0.5 budget_large /
    // lambda_s iterations.
    const auto r = static_cast<std::uint64_t>(restart_);
    const double u1 = detail::uniform01(hash_draw(o.seed, r, 0, detail::kBipopTag));
    const double u2 = detail::uniform01(hash_draw(o.seed, r, 1, detail::kBipopTag));
    lambda = std::max<std::size_t>(
        2, static_cast<std::size_t>(std::floor(static_cast<double>(lambda0) *
                                               std::pow(std::pow(2.0, large_runs_), u1 * u1))));
    run_sigma0_ = sigma0_ * std::pow(10.0, -2.0 * u2);
    run_is_small_ = true;
    run_max_iterations_ = std::max<std::int64_t>(
        1, static_cast<std::int64_t>(std::ceil(0.5 * static_cast<double>(budget_large_) / static_cast<double>(lambda))));
  } else if (o.restart_strategy == RestartStrategy::kBIPOP) {
    large_runs_ += 1;
    lambda = lambda0 << large_runs_;
  } else {
    lambda = lambda0 << restart_;  // IPOP: the population doubles per restart
  }
  params_ = cma_default_params(n, lambda, separable_);
  start();
}

}  // namespace evokit
