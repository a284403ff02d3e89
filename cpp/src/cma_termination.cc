// CMABase's termination criteria and restarts: after each tell(), the
// criteria of CMAESOptions (pycma's names and defaults, Hansen's
// stagnation test); a stop by any but maxfevals and ftarget restarts the
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
#include <string>
#include <utility>
#include <vector>

#include "evokit/philox.h"

namespace evokit {

namespace detail {
namespace {

// hash_draw tag of BIPOP's uniform draws (counter word c).
constexpr std::uint64_t kBipopTag = 0x4249504Full;  // "BIPO"
// Stagnation histories are kept for at most this many generations.
constexpr std::size_t kStagnationMax = 20000;

// A uniform double in [0, 1) from 64 random bits.
double uniform01(std::uint64_t bits) { return static_cast<double>(bits >> 11) * 0x1.0p-53; }

// The median of ascending values: the middle one, or half the sum of the two
// middle ones.
double sorted_median(const std::vector<double>& v) {
  const std::size_t n = v.size();
  if (n % 2 == 1) return v[n / 2];
  return 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

void sorted_insert(std::vector<double>& v, double x) {
  v.insert(std::upper_bound(v.begin(), v.end(), x), x);
}

// Erases one entry equal to x (present: it entered the window before).
void sorted_erase(std::vector<double>& v, double x) {
  v.erase(std::lower_bound(v.begin(), v.end(), x));
}

}  // namespace

void WindowedHistory::push(double v, std::size_t cap) {
  values_.push_back(v);
  while (values_.size() > cap) {
    values_.pop_front();
    ++base_;
  }
}

void WindowedHistory::clear() {
  values_.clear();
  base_ = 0;
  windows_[0] = Sorted{};
  windows_[1] = Sorted{};
}

double WindowedHistory::median(int window, std::size_t from, std::size_t len) {
  Sorted& w = windows_[window];
  const std::uint64_t lo = base_ + from;
  const std::uint64_t hi = lo + len;
  auto at = [&](std::uint64_t i) { return values_[static_cast<std::size_t>(i - base_)]; };
  // Move entry by entry while that is cheaper than sorting the window anew
  // and the entries leaving it are still in the history.
  const std::uint64_t moves = (lo > w.lo ? lo - w.lo : w.lo - lo) + (hi > w.hi ? hi - w.hi : w.hi - hi);
  if (w.lo < base_ || w.hi <= w.lo || lo >= w.hi || hi <= w.lo || moves > len / 8 + 8) {
    w.values.assign(values_.begin() + static_cast<std::ptrdiff_t>(from),
                    values_.begin() + static_cast<std::ptrdiff_t>(from + len));
    std::sort(w.values.begin(), w.values.end());
  } else {
    for (; w.hi < hi; ++w.hi) sorted_insert(w.values, at(w.hi));
    for (; w.lo > lo; --w.lo) sorted_insert(w.values, at(w.lo - 1));
    for (; w.lo < lo; ++w.lo) sorted_erase(w.values, at(w.lo));
    for (; w.hi > hi; --w.hi) sorted_erase(w.values, at(w.hi - 1));
  }
  w.lo = lo;
  w.hi = hi;
  return sorted_median(w.values);
}

}  // namespace detail

void CMABase::disable_stagnation() noexcept {
  options_.tolstagnation = std::numeric_limits<std::int64_t>::max() / 4;
}

void CMABase::check_termination() {
  const CMAParams& p = params_;
  const CMAESOptions& o = options_;
  const std::size_t n = p.num_params;
  const double dn = static_cast<double>(n);
  const double dl = static_cast<double>(p.population_size);
  const CMAState& s = state_;
  std::map<std::string, double> stop;

  const auto [vmin, vmax] = std::minmax_element(last_values_.begin(), last_values_.end());
  best_history_.push_back(*vmin);
  const auto hist_len = static_cast<std::size_t>(10 + std::ceil(30.0 * dn / dl));
  while (best_history_.size() > hist_len) best_history_.pop_front();
  stag_best_.push(*vmin, detail::kStagnationMax);
  median_buffer_.assign(last_values_.begin(), last_values_.end());
  std::sort(median_buffer_.begin(), median_buffer_.end());
  stag_median_.push(detail::sorted_median(median_buffer_), detail::kStagnationMax);

  if (o.max_evaluations && evaluations_ >= *o.max_evaluations) {
    stop["maxfevals"] = static_cast<double>(*o.max_evaluations);
  }
  if (best_f_ <= o.ftarget) stop["ftarget"] = o.ftarget;
  if (best_history_.size() == hist_len) {
    const auto [hmin, hmax] = std::minmax_element(best_history_.begin(), best_history_.end());
    const double hist_range = *hmax - *hmin;
    // Hansen's TolFun: the f-values of this generation and the best ones of
    // the last 10 + ceil(30 n / lambda) generations.
    if (*vmax - *vmin < o.tolfun && hist_range < o.tolfun) stop["tolfun"] = o.tolfun;
    if (hist_range < o.tolfunhist) stop["tolfunhist"] = o.tolfunhist;
  }
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
  // Stagnation (Hansen 2009): over the last max(120 + 30 n / lambda, 0.2 g)
  // generations, the median of the most recent 30% of the best and of the
  // median f-values is no better than that of the oldest 30%.
  const double stag_iters =
      o.tolstagnation ? static_cast<double>(*o.tolstagnation) : 100.0 + 100.0 * std::pow(dn, 1.5) / dl;
  if (static_cast<double>(s.generation) > stag_iters) {
    const auto window = static_cast<std::size_t>(
        std::max(120.0 + 30.0 * dn / dl, 0.2 * static_cast<double>(s.generation)));
    if (stag_best_.size() >= window) {
      const std::size_t part = std::max<std::size_t>(1, static_cast<std::size_t>(0.3 * static_cast<double>(window)));
      const std::size_t first = stag_best_.size() - window;
      const std::size_t recent = stag_best_.size() - part;
      // Both histories' windows move every generation (each medians' sorted
      // copy follows its window); all four are computed, so that the cached
      // windows do not depend on which comparison decided.
      const double best_recent = stag_best_.median(0, recent, part);
      const double best_first = stag_best_.median(1, first, part);
      const double median_recent = stag_median_.median(0, recent, part);
      const double median_first = stag_median_.median(1, first, part);
      if (best_recent >= best_first && median_recent >= median_first) {
        stop["tolstagnation"] = stag_iters;
      }
    }
  }

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
