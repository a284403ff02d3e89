// See evokit/termination.h.
#include "evokit/termination.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "evokit/solver.h"

namespace evokit {

namespace detail {
namespace {

// Stagnation histories are kept for at most this many generations.
constexpr std::size_t kStagnationMax = 20000;

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

void detail::WindowedHistory::restore(const std::vector<double>& values, std::uint64_t base) {
  clear();
  values_.assign(values.begin(), values.end());
  base_ = base;
}

FValueHistory::Saved FValueHistory::saved() const {
  Saved s;
  s.generations = generations_;
  s.n = n_;
  s.lambda = lambda_;
  s.last_min = last_min_;
  s.last_max = last_max_;
  s.best.assign(best_.begin(), best_.end());
  s.stag_best = stag_best_.values();
  s.stag_median = stag_median_.values();
  s.stag_base = stag_best_.base();
  return s;
}

void FValueHistory::restore(const Saved& s) {
  generations_ = s.generations;
  n_ = static_cast<std::size_t>(s.n);
  lambda_ = static_cast<std::size_t>(s.lambda);
  last_min_ = s.last_min;
  last_max_ = s.last_max;
  best_.assign(s.best.begin(), s.best.end());
  stag_best_.restore(s.stag_best, s.stag_base);
  stag_median_.restore(s.stag_median, s.stag_base);
}

void FValueHistory::save(SolverState& state, const std::string& prefix) const {
  const Saved h = saved();
  state.ints[prefix + "generations"] = {h.generations};
  state.ints[prefix + "shape"] = {static_cast<std::int64_t>(h.n), static_cast<std::int64_t>(h.lambda)};
  state.doubles[prefix + "last"] = {h.last_min, h.last_max};
  state.doubles[prefix + "best"] = h.best;
  state.doubles[prefix + "stag_best"] = h.stag_best;
  state.doubles[prefix + "stag_median"] = h.stag_median;
  state.ints[prefix + "stag_base"] = {static_cast<std::int64_t>(h.stag_base)};
}

FValueHistory::Saved FValueHistory::read(const SolverState& state, const std::string& prefix) {
  auto any = [&](const std::string& name) -> const std::vector<double>& {
    const auto it = state.doubles.find(prefix + name);
    if (it == state.doubles.end()) throw std::invalid_argument("state entry '" + prefix + name + "' is missing");
    return it->second;
  };
  Saved h;
  h.generations = state.int_array(prefix + "generations", 1)[0];
  const auto& shape = state.int_array(prefix + "shape", 2);
  if (shape[0] < 1 || shape[1] < 1) {
    throw std::invalid_argument("state entry '" + prefix + "shape' must hold n >= 1 and lambda >= 1");
  }
  h.n = static_cast<std::uint64_t>(shape[0]);
  h.lambda = static_cast<std::uint64_t>(shape[1]);
  const auto& last = state.double_array(prefix + "last", 2);
  h.last_min = last[0];
  h.last_max = last[1];
  h.best = any("best");
  h.stag_best = any("stag_best");
  h.stag_median = any("stag_median");
  h.stag_base = static_cast<std::uint64_t>(state.int_array(prefix + "stag_base", 1)[0]);
  if (h.stag_best.size() != h.stag_median.size()) {
    throw std::invalid_argument("state entries '" + prefix + "stag_best' and '" + prefix +
                                "stag_median' differ in size");
  }
  return h;
}

void FValueHistory::clear() {
  generations_ = 0;
  best_.clear();
  stag_best_.clear();
  stag_median_.clear();
}

void FValueHistory::record(const double* values, std::size_t count, std::size_t n, std::size_t lambda) {
  n_ = n;
  lambda_ = lambda;
  ++generations_;
  const auto [vmin, vmax] = std::minmax_element(values, values + count);
  last_min_ = *vmin;
  last_max_ = *vmax;
  best_.push_back(*vmin);
  const auto hist_len = static_cast<std::size_t>(10 + std::ceil(30.0 * static_cast<double>(n) /
                                                                 static_cast<double>(lambda)));
  while (best_.size() > hist_len) best_.pop_front();
  stag_best_.push(*vmin, detail::kStagnationMax);
  sorted_.assign(values, values + count);
  std::sort(sorted_.begin(), sorted_.end());
  stag_median_.push(detail::sorted_median(sorted_), detail::kStagnationMax);
}

std::map<std::string, double> FValueHistory::check(const FValueCriteria& c, std::int64_t evaluations,
                                                   double best_f) {
  std::map<std::string, double> stop;
  const double dn = static_cast<double>(n_);
  const double dl = static_cast<double>(lambda_);
  if (c.max_evaluations && evaluations >= *c.max_evaluations) {
    stop["maxfevals"] = static_cast<double>(*c.max_evaluations);
  }
  if (c.max_iterations && generations_ >= *c.max_iterations) {
    stop["maxiter"] = static_cast<double>(*c.max_iterations);
  }
  if (best_f <= c.ftarget) stop["ftarget"] = c.ftarget;
  const auto hist_len = static_cast<std::size_t>(10 + std::ceil(30.0 * dn / dl));
  if (generations_ > 0 && best_.size() == hist_len) {
    const auto [hmin, hmax] = std::minmax_element(best_.begin(), best_.end());
    if (last_max_ - last_min_ < c.tolfun && *hmax - *hmin < c.tolfun) stop["tolfun"] = c.tolfun;
    if (*hmax - *hmin < c.tolfunhist) stop["tolfunhist"] = c.tolfunhist;
  }
  const double stag_iters =
      c.tolstagnation ? static_cast<double>(*c.tolstagnation) : 100.0 + 100.0 * std::pow(dn, 1.5) / dl;
  if (static_cast<double>(generations_) > stag_iters) {
    const auto window = static_cast<std::size_t>(
        std::max(120.0 + 30.0 * dn / dl, 0.2 * static_cast<double>(generations_)));
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
      if (best_recent >= best_first && median_recent >= median_first) stop["tolstagnation"] = stag_iters;
    }
  }
  return stop;
}

}  // namespace evokit
