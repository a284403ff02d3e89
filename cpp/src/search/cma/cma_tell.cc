// CMABase's tell side (cma_base.cc has the options, sampling and ask): the
// f-values of the asked or repaired solutions, or of members named by their
// keys, one generation's update (the tutorial's Eq. (41) to (47), written out
// in cma_base.cc's header), and loading a state.
#include "evokit/cma_es.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <string>
#include <utility>

#include "common/messages.h"
#include "common/parallel.h"
#include "linalg/dense_kernels.h"
#include "search/cma/cma_internal.h"

namespace evokit {

namespace detail {

void require_finite_solutions(const double* x, std::size_t count, std::size_t n) {
  for (std::size_t k = 0; k < count * n; ++k) {
    if (!std::isfinite(x[k])) {
      throw std::invalid_argument("solutions[" + std::to_string(k / n) + "][" + std::to_string(k % n) +
                                  "] must be finite, got " + detail::format_number(x[k]));
    }
  }
}

}  // namespace detail

namespace {

void check_values(const double* values, std::size_t count, std::size_t lambda) {
  if (count != lambda) {
    throw std::invalid_argument("#f-values = " + std::to_string(count) +
                                " must equal #solutions = " + std::to_string(lambda));
  }
  detail::require_non_null(values, "values");
  for (std::size_t k = 0; k < count; ++k) {
    if (std::isnan(values[k])) {
      throw std::invalid_argument("values[" + std::to_string(k) + "] is NaN");
    }
  }
}

}  // namespace

void CMABase::tell(const double* values, std::size_t count) {
  if (!pending_) {
    throw std::logic_error(
        "tell() without a pending ask(): each tell() must follow an ask() of the same generation");
  }
  check_values(values, count, population_size());
  tell_rows(nullptr, values);
}

void CMABase::tell_solutions(const double* x, const double* values, std::size_t count) {
  if (!pending_) {
    throw std::logic_error(
        "tell() without a pending ask(): each tell() must follow an ask() of the same generation");
  }
  check_values(values, count, population_size());
  detail::require_non_null(x, "solutions");
  const std::size_t n = num_params();
  detail::require_finite_solutions(x, count, n);
  tell_rows(x, values);
}

// x: the told solutions, or nullptr for those of ask(). Rows equal to ask()'s
// use the sampled z and y; the others, and injected rows, are clipped.
void CMABase::tell_rows(const double* x, const double* values) {
  const std::size_t n = num_params();
  const std::size_t lambda = population_size();
  std::vector<bool>& no_active = scratch_.no_active;
  no_active.assign(lambda, false);
  std::vector<double> z_told, y_told;
  for (std::size_t k = 0; k < lambda; ++k) {
    const bool injected = k < num_injected_;
    const double* asked = solutions_.data() + k * n;
    const bool changed = x != nullptr && !std::equal(asked, asked + n, x + k * n);
    if (!changed && !injected) continue;
    if (z_told.empty()) {
      z_told = z_;
      y_told = y_;
    }
    if (changed) {
      step_of(x + k * n, y_told.data() + k * n, z_told.data() + k * n);
    } else {
      clip_step(y_told.data() + k * n, z_told.data() + k * n);
    }
    no_active[k] = injected;  // pycma's CMA_active_injected = 0
  }
  const bool copied = !z_told.empty();
  update(copied ? z_told.data() : z_.data(), copied ? y_told.data() : y_.data(),
         x != nullptr ? x : solutions_.data(), values, no_active);
}

void CMABase::tell_keys(const std::int64_t* keys, const double* values, std::size_t count) {
  const std::size_t lambda = population_size();
  if (count != lambda) {
    throw std::invalid_argument("#keys = " + std::to_string(count) + " must equal population_size = " +
                                std::to_string(lambda));
  }
  detail::require_non_null(keys, "keys");
  for (std::size_t k = 0; k < count; ++k) {
    if (keys[k] < 0) {
      throw std::out_of_range("keys[" + std::to_string(k) + "] must be >= 0, got " + std::to_string(keys[k]));
    }
  }
  check_values(values, count, lambda);
  if (tpa_) {
    throw std::logic_error(
        "tell_keys() needs step-size adaptation CSA: this strategy adapts sigma by TPA, whose mirrored "
        "pair is not regenerated from keys");
  }
  keys_.assign(keys, keys + count);
  materialize_population();
  update(z_.data(), y_.data(), solutions_.data(), values, std::vector<bool>(lambda, false));
}

void CMABase::update(const double* z, const double* y, const double* x, const double* values,
                     const std::vector<bool>& no_active) {
  const CMAParams& p = params_;
  const std::size_t n = p.num_params;
  const std::size_t lambda = p.population_size;
  CMAState& s = state_;

  // Ranks, ties by index (a stable sort's order, without its buffer).
  std::vector<std::size_t>& order = scratch_.order;
  order.resize(lambda);
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return values[a] < values[b] || (!(values[b] < values[a]) && a < b);
  });

  evaluations_ += static_cast<std::int64_t>(lambda);
  if (values[order[0]] < best_f_ || best_x_.empty()) {
    best_f_ = values[order[0]];
    best_x_.assign(x + order[0] * n, x + (order[0] + 1) * n);
  }
  last_values_.assign(values, values + lambda);

  // Eq. (41): <y>_w and its z counterpart, over the mu best.
  std::vector<double>& y_w = scratch_.y_w;
  std::vector<double>& z_w = scratch_.z_w;
  y_w.assign(n, 0.0);
  z_w.assign(n, 0.0);
  for (std::size_t i = 0; i < p.mu; ++i) {
    const double w = p.weights[i];
    const double* yi = y + order[i] * n;
    const double* zi = z + order[i] * n;
    for (std::size_t j = 0; j < n; ++j) {
      y_w[j] += w * yi[j];
      z_w[j] += w * zi[j];
    }
  }
  const double sigma = s.sigma;
  // Eq. (42); TPA's next pair lies along the shift.
  if (tpa_) s.mean_shift = s.mean;
  for (std::size_t j = 0; j < n; ++j) s.mean[j] += p.cm * sigma * y_w[j];
  if (tpa_) {
    for (std::size_t j = 0; j < n; ++j) s.mean_shift[j] = s.mean[j] - s.mean_shift[j];
  }
  // Eq. (43): C^-1/2 <y>_w = B <z>_w.
  std::vector<double>& white = scratch_.white;
  white.resize(n);
  whiten(z_w.data(), white.data());
  const double ps_norm = cma_update_sigma_path(p, s.p_sigma.data(), white.data());
  if (!tpa_) {
    s.sigma = cma_csa_step_size(p, sigma, ps_norm);  // Eq. (44)
  } else if (tpa_row_ < lambda) {
    // TPA: the rank difference of the pair, z in [-1, 1] (> 0: the member
    // along the shift is better).
    const double f_plus = values[tpa_row_];
    const double f_minus = values[tpa_row_ + 1];
    std::size_t below_plus = 0, below_minus = 0;
    for (std::size_t k = 0; k < lambda; ++k) {
      below_plus += values[k] < f_plus;
      below_minus += values[k] < f_minus;
    }
    const double zr = (static_cast<double>(below_minus) - static_cast<double>(below_plus)) /
                      static_cast<double>(lambda - 1);
    const double step = zr > 0 ? std::sqrt(zr) : zr < 0 ? -std::sqrt(-zr) : 0.0;
    s.tpa_s = (1.0 - p.tpa_c) * s.tpa_s + p.tpa_c * step;
    s.sigma = sigma * std::exp(s.tpa_s / p.tpa_damp);
  }  // TPA without a pair (the first generation): sigma stays
  // h_sigma (tutorial, Appendix A), with g + 1 updates of p_sigma so far.
  const double debias =
      std::sqrt(1.0 - std::pow(1.0 - p.c_sigma, 2.0 * static_cast<double>(s.generation + 1)));
  const double dn = static_cast<double>(n);
  const bool h_sigma = ps_norm / debias < (1.4 + 2.0 / (dn + 1.0)) * p.chi_n;
  // Eq. (45)
  const double pc_coef = h_sigma ? std::sqrt(p.cc * (2.0 - p.cc) * p.mueff) : 0.0;
  for (std::size_t j = 0; j < n; ++j) s.p_c[j] = (1.0 - p.cc) * s.p_c[j] + pc_coef * y_w[j];
  // Eq. (46): w°_i; ||C^-1/2 y|| = ||B z|| = ||z||.
  std::vector<const double*>& rows = scratch_.rows;
  std::vector<double>& coef = scratch_.coef;
  rows.clear();
  coef.clear();
  double sum_w = 0.0;
  for (std::size_t i = 0; i < lambda; ++i) {
    double w = p.weights[i];
    if (w < 0 && no_active[order[i]]) w = 0.0;  // an injected member: no active update
    sum_w += w;
    if (w == 0.0) continue;
    if (w < 0) {
      const double* zi = z + order[i] * n;
      double z2 = 0.0;
      for (std::size_t j = 0; j < n; ++j) z2 += zi[j] * zi[j];
      // A step of Mahalanobis norm 0 (a told solution repaired onto the
      // mean) has no direction: it adds nothing, instead of -inf * 0 = NaN.
      if (!std::isfinite(dn / z2)) continue;
      w *= dn / z2;
    }
    rows.push_back(y + order[i] * n);
    coef.push_back(p.cmu * w);
  }
  // Eq. (47): the factor of the old C.
  const double delta = h_sigma ? 0.0 : p.cc * (2.0 - p.cc);
  const double a = 1.0 + p.c1 * delta - p.c1 - p.cmu * sum_w;
  s.generation += 1;
  update_covariance(a, rows, coef);
  if (margin_ > 0) margin_correction();
  // TPA's next pair: z of the mean shift c_m sigma <y>_w is c_m sigma <z>_w
  // while the decomposition the members were sampled from stays (y_k = B D
  // z_k for every row, repaired and injected ones included).
  s.mean_shift_z.clear();
  if (tpa_ && s.eigen_generation != s.generation && options_.integer_variables.empty()) {
    s.mean_shift_z.resize(n);
    for (std::size_t j = 0; j < n; ++j) s.mean_shift_z[j] = p.cm * sigma * z_w[j];
  }

  iterations_ += 1;
  pending_ = false;
  sampled_ = false;
  check_termination();
}


std::vector<double> CMABase::mean_solution() const {
  std::vector<double> x = state_.mean;
  to_bounds(x.data());
  return x;
}

std::vector<double> CMABase::stds() const {
  std::vector<double> out(num_params());
  for (std::size_t i = 0; i < out.size(); ++i) {
    out[i] = is_integer_[i] ? state_.sigma * (state_.affine[i] * coord_std(i)) : state_.sigma * coord_std(i);
  }
  return out;
}

void CMABase::set_state(const CMAState& state) {
  const auto num = [](double v) { return detail::format_number(v); };
  const std::size_t n = num_params();
  auto require = [&](const std::vector<double>& v, std::size_t size, const char* name) {
    if (v.size() != size) {
      throw std::invalid_argument(std::string("state.") + name + " must have " + std::to_string(size) +
                                  " entries, got " + std::to_string(v.size()));
    }
    for (std::size_t i = 0; i < size; ++i) {
      if (!std::isfinite(v[i])) {
        throw std::invalid_argument(std::string("state.") + name + "[" + std::to_string(i) +
                                    "] must be finite, got " + num(v[i]));
      }
    }
  };
  require(state.mean, n, "mean");
  require(state.p_sigma, n, "p_sigma");
  require(state.p_c, n, "p_c");
  require(state.cov, separable_ ? n : n * n, "cov");
  if (!(state.sigma > 0) || !std::isfinite(state.sigma)) {
    throw std::invalid_argument("state.sigma must be > 0 and finite, got " + num(state.sigma));
  }
  if (state.generation < 0 || state.eigen_generation < 0 || state.eigen_generation > state.generation) {
    throw std::invalid_argument("state.generation and state.eigen_generation must satisfy 0 <= "
                                "eigen_generation <= generation, got " +
                                std::to_string(state.generation) + " and " +
                                std::to_string(state.eigen_generation));
  }
  if (!std::isfinite(state.tpa_s)) {
    throw std::invalid_argument("state.tpa_s must be finite, got " + num(state.tpa_s));
  }
  if (!state.mean_shift.empty()) require(state.mean_shift, n, "mean_shift");
  if (!state.mean_shift_z.empty()) {
    require(state.mean_shift_z, n, "mean_shift_z");
    if (state.mean_shift.empty()) {
      throw std::invalid_argument("state.mean_shift_z needs state.mean_shift (the shift it is the z of)");
    }
    if (!options_.integer_variables.empty()) {
      throw std::invalid_argument(
          "state.mean_shift_z must be empty with integer variables (the pair's z is computed from mean_shift / A)");
    }
  }
  CMAState copy = state;
  if (copy.affine.empty()) copy.affine.assign(n, 1.0);
  require(copy.affine, n, "affine");
  for (std::size_t i = 0; i < n; ++i) {
    if (!(copy.affine[i] > 0) || (!is_integer_[i] && copy.affine[i] != 1.0)) {
      throw std::invalid_argument("state.affine[" + std::to_string(i) + "] must be " +
                                  (is_integer_[i] ? "> 0" : "1 (a continuous coordinate)") + ", got " +
                                  num(copy.affine[i]));
    }
  }
  check_and_decompose(copy);
  state_ = std::move(copy);
  state_replaced();
  pending_ = false;
  sampled_ = false;
}

}  // namespace evokit
