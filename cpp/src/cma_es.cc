// CMA-ES and separable CMA-ES.
//
//   N. Hansen, "The CMA Evolution Strategy: A Tutorial", arXiv:1604.00772
//   (2016); `Eq. (n)` marks the tutorial's equations (Appendix A, Table 1).
//   R. Ros, N. Hansen, PPSN X (2008): separable CMA-ES.
//   N. Hansen, GECCO 2009 BBOB workshop: BIPOP restarts; A. Auger, N. Hansen,
//   CEC 2005: IPOP restarts.
//
// One generation (tell), with y_{i:lambda} the i-th best of the members'
// y = (x - m) / sigma and z their standard normal vectors:
//   <y>_w = sum_{i<=mu} w_i y_{i:lambda}                          Eq. (41)
//   m    <- m + cm sigma <y>_w                                    Eq. (42)
//   p_s  <- (1 - cs) p_s + sqrt(cs (2 - cs) mueff) C^-1/2 <y>_w    Eq. (43)
//   sigma<- sigma exp(cs / ds (||p_s|| / E||N(0,I)|| - 1))        Eq. (44)
//   h_s   = [||p_s|| / sqrt(1 - (1 - cs)^(2 (g + 1))) < (1.4 + 2 / (n + 1)) E||N(0,I)||]
//   p_c  <- (1 - cc) p_c + h_s sqrt(cc (2 - cc) mueff) <y>_w      Eq. (45)
//   w°_i  = w_i if w_i >= 0 else w_i n / ||C^-1/2 y_{i:lambda}||^2  Eq. (46)
//   C    <- (1 + c1 delta(h_s) - c1 - cmu sum_j w_j) C
//           + c1 p_c p_c^T + cmu sum_i w°_i y_{i:lambda} y_{i:lambda}^T   Eq. (47)
// with delta(h_s) = (1 - h_s) cc (2 - cc). C^-1/2 is B D^-1 B^T of the
// decomposition used for sampling, so C^-1/2 y = B z and ||C^-1/2 y|| = ||z||.
#include "evokit/cma_es.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <string>
#include <utility>

#include "dense_kernels.h"
#include "evokit/noise.h"
#include "evokit/philox.h"
#include "messages.h"
#include "parallel.h"

namespace evokit {

namespace detail {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
// hash_draw tag of BIPOP's uniform draws (counter word c).
constexpr std::uint64_t kBipopTag = 0x4249504Full;  // "BIPO"
// Stagnation histories are kept for at most this many generations.
constexpr std::size_t kStagnationMax = 20000;

std::string num(double v) { return format_number(v); }

// A uniform double in [0, 1) from 64 random bits.
double uniform01(std::uint64_t bits) { return static_cast<double>(bits >> 11) * 0x1.0p-53; }

double median(std::vector<double> v) {
  const std::size_t n = v.size();
  const auto mid = v.begin() + static_cast<std::ptrdiff_t>(n / 2);
  std::nth_element(v.begin(), mid, v.end());
  if (n % 2 == 1) return *mid;
  return 0.5 * (*std::max_element(v.begin(), mid) + *mid);
}

// out[k * n + i] = sum_j bt[j * n + i] * v[k * n + j] for k < count: rows of
// v times B, B^T given row-major. Parallel over blocks of i; each output sums
// over j in ascending order.
void times_b(const double* bt, std::size_t n, const double* v, double* out, std::size_t count,
             int threads) {
  std::vector<double> vt(n * count);  // v transposed: vt[j * count + k]
  for (std::size_t k = 0; k < count; ++k) {
    for (std::size_t j = 0; j < n; ++j) vt[j * count + k] = v[k * n + j];
  }
  const std::size_t blocks = ceil_div(n, kRowBlock);
  parallel_items(blocks, team_size(blocks, threads), [&](std::size_t b) {
    const std::size_t i0 = b * kRowBlock;
    const std::size_t len = std::min(kRowBlock, n - i0);
    transposed_product(vt.data(), count, count, bt + i0, n, n, len, out + i0, n);
  });
}

}  // namespace
}  // namespace detail

// ---- parameters --------------------------------------------------------------

std::size_t cma_default_population_size(std::size_t n) {
  // Eq. (48)
  return 4 + static_cast<std::size_t>(std::floor(3.0 * std::log(static_cast<double>(n))));
}

CMAParams cma_default_params(std::size_t n, std::size_t lambda, bool separable) {
  if (n == 0) throw std::invalid_argument("num_params must be >= 1, got 0");
  if (lambda < 2) {
    throw std::invalid_argument("population_size must be >= 2, got " + std::to_string(lambda));
  }
  CMAParams p;
  const double dn = static_cast<double>(n);
  p.num_params = n;
  p.population_size = lambda;
  p.separable = separable;
  p.mu = lambda / 2;  // Eq. (48)
  // Eq. (49): w'_i = ln((lambda + 1) / 2) - ln i.
  std::vector<double> wp(lambda);
  for (std::size_t i = 0; i < lambda; ++i) {
    wp[i] = std::log((static_cast<double>(lambda) + 1.0) / 2.0) - std::log(static_cast<double>(i + 1));
  }
  double sum_pos = 0, sum_pos2 = 0, sum_neg = 0, sum_neg2 = 0;
  for (std::size_t i = 0; i < lambda; ++i) {
    if (i < p.mu) {
      sum_pos += wp[i];
      sum_pos2 += wp[i] * wp[i];
    } else {
      sum_neg += wp[i];
      sum_neg2 += wp[i] * wp[i];
    }
  }
  p.mueff = sum_pos * sum_pos / sum_pos2;
  p.mueff_minus = sum_neg2 > 0 ? sum_neg * sum_neg / sum_neg2 : 0.0;
  // Eq. (57), (58) with alpha_cov = 2.
  constexpr double alpha_cov = 2.0;
  p.c1 = alpha_cov / ((dn + 1.3) * (dn + 1.3) + p.mueff);
  p.cmu = std::min(1.0 - p.c1, alpha_cov * (p.mueff - 2.0 + 1.0 / p.mueff) /
                                   ((dn + 2.0) * (dn + 2.0) + alpha_cov * p.mueff / 2.0));
  if (separable) {  // Ros & Hansen (2008)
    p.c1 = std::min(1.0, p.c1 * (dn + 2.0) / 3.0);
    p.cmu = std::min(1.0 - p.c1, p.cmu * (dn + 2.0) / 3.0);
  }
  p.cmu = std::max(p.cmu, 0.0);
  // Eq. (50)-(52): the scale of the negative weights.
  const double alpha_mu_minus = p.cmu > 0 ? 1.0 + p.c1 / p.cmu : detail::kInf;            // Eq. (50)
  const double alpha_mueff_minus = 1.0 + 2.0 * p.mueff_minus / (p.mueff + 2.0);             // Eq. (51)
  const double alpha_posdef_minus = p.cmu > 0 ? (1.0 - p.c1 - p.cmu) / (dn * p.cmu) : detail::kInf;  // Eq. (52)
  const double alpha_minus = std::min({alpha_mu_minus, alpha_mueff_minus, alpha_posdef_minus});
  // Eq. (53)
  double sum_abs_neg = 0;
  for (std::size_t i = 0; i < lambda; ++i) {
    if (wp[i] < 0) sum_abs_neg -= wp[i];
  }
  p.weights.resize(lambda);
  for (std::size_t i = 0; i < lambda; ++i) {
    p.weights[i] = wp[i] >= 0 ? wp[i] / sum_pos : alpha_minus * wp[i] / sum_abs_neg;
  }
  p.cm = 1.0;                                          // Eq. (54)
  p.c_sigma = (p.mueff + 2.0) / (dn + p.mueff + 5.0);  // Eq. (55)
  p.d_sigma = 1.0 + 2.0 * std::max(0.0, std::sqrt((p.mueff - 1.0) / (dn + 1.0)) - 1.0) + p.c_sigma;
  p.cc = (4.0 + p.mueff / dn) / (dn + 4.0 + 2.0 * p.mueff / dn);  // Eq. (56)
  p.chi_n = std::sqrt(dn) * (1.0 - 1.0 / (4.0 * dn) + 1.0 / (21.0 * dn * dn));
  // Decompose once more than 1 / (10 n (c1 + cmu)) generations have passed,
  // i.e. more than lambda / (c1 + cmu) / n / 10 evaluations, as in Hansen's
  // reference code and pycma.
  p.eigen_interval = static_cast<std::int64_t>(std::floor(1.0 / (10.0 * dn * (p.c1 + p.cmu)))) + 1;
  return p;
}

// ---- CMABase -----------------------------------------------------------------

CMABase::CMABase(std::vector<double> x0, double sigma0, CMAESOptions options, bool separable)
    : options_(std::move(options)),
      x0_(std::move(x0)),
      sigma0_(sigma0),
      run_sigma0_(sigma0),
      separable_(separable),
      best_f_(detail::kInf) {
  using detail::num;
  const std::size_t n = x0_.size();
  if (n == 0) throw std::invalid_argument("x0 must not be empty");
  for (std::size_t i = 0; i < n; ++i) {
    if (!std::isfinite(x0_[i])) {
      throw std::invalid_argument("x0[" + std::to_string(i) + "] must be finite, got " + num(x0_[i]));
    }
  }
  if (!(sigma0 > 0) || !std::isfinite(sigma0)) {
    throw std::invalid_argument("sigma0 must be > 0 and finite, got " + num(sigma0));
  }
  const CMAESOptions& o = options_;
  if (o.population_size && *o.population_size < 2) {
    throw std::invalid_argument("population_size must be >= 2, got " +
                                std::to_string(*o.population_size));
  }
  if (!o.lower.empty() || !o.upper.empty()) {
    if (o.lower.size() != n) {
      throw std::invalid_argument("lower must have " + std::to_string(n) + " entries (one per parameter), got " +
                                  std::to_string(o.lower.size()));
    }
    if (o.upper.size() != n) {
      throw std::invalid_argument("upper must have " + std::to_string(n) + " entries (one per parameter), got " +
                                  std::to_string(o.upper.size()));
    }
    for (std::size_t i = 0; i < n; ++i) {
      const std::string at = "[" + std::to_string(i) + "]";
      if (std::isnan(o.lower[i]) || std::isnan(o.upper[i]) || !(o.lower[i] < o.upper[i])) {
        throw std::invalid_argument("lower" + at + " must be < upper" + at + ", got " + num(o.lower[i]) +
                                    " and " + num(o.upper[i]));
      }
      if (x0_[i] < o.lower[i] || x0_[i] > o.upper[i]) {
        throw std::invalid_argument("x0" + at + " = " + num(x0_[i]) + " is outside the bounds [" +
                                    num(o.lower[i]) + ", " + num(o.upper[i]) + "]");
      }
      if (std::isfinite(o.lower[i]) || std::isfinite(o.upper[i])) bounded_ = true;
    }
  }
  if (o.max_evaluations && *o.max_evaluations < 1) {
    throw std::invalid_argument("max_evaluations must be >= 1, got " + std::to_string(*o.max_evaluations));
  }
  if (std::isnan(o.ftarget)) throw std::invalid_argument("ftarget must not be NaN");
  const std::pair<const char*, double> non_negative[] = {
      {"tolfun", o.tolfun}, {"tolfunhist", o.tolfunhist}, {"tolx", o.tolx}};
  for (const auto& [name, value] : non_negative) {
    if (!(value >= 0)) throw std::invalid_argument(std::string(name) + " must be >= 0, got " + num(value));
  }
  if (o.tolstagnation && *o.tolstagnation < 0) {
    throw std::invalid_argument("tolstagnation must be >= 0, got " + std::to_string(*o.tolstagnation));
  }
  if (!(o.conditioncov > 1)) {
    throw std::invalid_argument("conditioncov must be > 1, got " + num(o.conditioncov));
  }
  if (!(o.tolupsigma > 0)) throw std::invalid_argument("tolupsigma must be > 0, got " + num(o.tolupsigma));
  if (o.restarts < 0) throw std::invalid_argument("restarts must be >= 0, got " + std::to_string(o.restarts));
  detail::require_num_threads(o.num_threads);
  params_ = cma_default_params(n, o.population_size.value_or(cma_default_population_size(n)), separable);
}

void CMABase::start() {
  const std::size_t n = num_params();
  state_ = CMAState{};
  state_.mean = x0_;
  state_.sigma = run_sigma0_;
  state_.p_sigma.assign(n, 0.0);
  state_.p_c.assign(n, 0.0);
  reset_covariance();
  pending_ = false;
  sampled_ = false;
  best_history_.clear();
  stag_best_.clear();
  stag_median_.clear();
  run_start_evaluations_ = evaluations_;
}

int CMABase::threads_for(double work) const noexcept {
  return work < detail::kParallelWork ? 1 : options_.num_threads;
}

std::int64_t CMABase::sample_key(std::size_t member) const noexcept {
  return static_cast<std::int64_t>(hash_draw(options_.seed, static_cast<std::uint64_t>(state_.generation),
                                             member, static_cast<std::uint64_t>(restart_)) >>
                                   2);
}

void CMABase::sample_z(const std::int64_t* keys, double* z, std::size_t count) const {
  const std::size_t n = num_params();
  const int threads = threads_for(static_cast<double>(count * n) * 8.0);
  std::vector<float> buffer(count * n);
  detail::parallel_items(count, detail::team_size(count, threads), [&](std::size_t k) {
    float* f = buffer.data() + k * n;
    fill_gaussian(options_.seed, static_cast<std::uint64_t>(keys[k]), 0, f, n);
    double* out = z + k * n;
    for (std::size_t j = 0; j < n; ++j) out[j] = static_cast<double>(f[j]);
  });
}

void CMABase::to_bounds(double* x) const noexcept {
  if (!bounded_) return;
  const std::size_t n = num_params();
  for (std::size_t i = 0; i < n; ++i) {
    const double lo = options_.lower[i];
    const double hi = options_.upper[i];
    double v = x[i];
    if (v >= lo && v <= hi) continue;  // identity inside the box
    if (std::isfinite(lo) && std::isfinite(hi)) {
      const double width = hi - lo;
      double t = std::fmod(v - lo, 2.0 * width);
      if (t < 0) t += 2.0 * width;
      v = t <= width ? lo + t : hi - (t - width);
      v = std::min(std::max(v, lo), hi);  // rounding
    } else if (std::isfinite(lo)) {
      v = lo + (lo - v);
    } else {
      v = hi - (v - hi);
    }
    x[i] = v;
  }
}

void CMABase::sample_population() {
  const std::size_t lambda = population_size();
  keys_.resize(lambda);
  for (std::size_t k = 0; k < lambda; ++k) keys_[k] = sample_key(k);
  materialize_population();
  sampled_ = true;
}

// z, y and the solutions (mapped into the bounds) of the members keyed by keys_.
void CMABase::materialize_population() {
  const std::size_t n = num_params();
  const std::size_t lambda = population_size();
  z_.resize(lambda * n);
  y_.resize(lambda * n);
  solutions_.resize(lambda * n);
  sample_z(keys_.data(), z_.data(), lambda);
  sample_y(z_.data(), y_.data(), lambda);
  for (std::size_t k = 0; k < lambda; ++k) {
    double* x = solutions_.data() + k * n;
    const double* y = y_.data() + k * n;
    for (std::size_t i = 0; i < n; ++i) x[i] = state_.mean[i] + state_.sigma * y[i];
    to_bounds(x);
  }
}

const std::vector<double>& CMABase::ask() {
  if (!sampled_) sample_population();
  pending_ = true;
  return solutions_;
}

std::vector<double> CMABase::regenerate(std::int64_t key) const {
  if (key < 0) throw std::out_of_range("key must be >= 0, got " + std::to_string(key));
  const std::size_t n = num_params();
  std::vector<double> z(n), y(n), x(n);
  sample_z(&key, z.data(), 1);
  sample_y(z.data(), y.data(), 1);
  for (std::size_t i = 0; i < n; ++i) x[i] = state_.mean[i] + state_.sigma * y[i];
  to_bounds(x.data());
  return x;
}

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
  update(z_.data(), y_.data(), values);
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
  keys_.assign(keys, keys + count);
  materialize_population();
  update(z_.data(), y_.data(), values);
}

void CMABase::update(const double* z, const double* y, const double* values) {
  const CMAParams& p = params_;
  const std::size_t n = p.num_params;
  const std::size_t lambda = p.population_size;
  CMAState& s = state_;

  // Ranks, ties stable by index.
  std::vector<std::size_t> order(lambda);
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return values[a] < values[b]; });

  evaluations_ += static_cast<std::int64_t>(lambda);
  if (values[order[0]] < best_f_ || best_x_.empty()) {
    best_f_ = values[order[0]];
    best_x_.assign(solutions_.begin() + static_cast<std::ptrdiff_t>(order[0] * n),
                   solutions_.begin() + static_cast<std::ptrdiff_t>((order[0] + 1) * n));
  }
  last_values_.assign(values, values + lambda);

  // Eq. (41): <y>_w and its z counterpart, over the mu best.
  std::vector<double> y_w(n, 0.0), z_w(n, 0.0);
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
  // Eq. (42)
  for (std::size_t j = 0; j < n; ++j) s.mean[j] += p.cm * sigma * y_w[j];
  // Eq. (43): C^-1/2 <y>_w = B <z>_w.
  std::vector<double> white(n);
  whiten(z_w.data(), white.data());
  const double ps_coef = std::sqrt(p.c_sigma * (2.0 - p.c_sigma) * p.mueff);
  double ps_norm2 = 0.0;
  for (std::size_t j = 0; j < n; ++j) {
    s.p_sigma[j] = (1.0 - p.c_sigma) * s.p_sigma[j] + ps_coef * white[j];
    ps_norm2 += s.p_sigma[j] * s.p_sigma[j];
  }
  const double ps_norm = std::sqrt(ps_norm2);
  // Eq. (44)
  s.sigma = sigma * std::exp(p.c_sigma / p.d_sigma * (ps_norm / p.chi_n - 1.0));
  // h_sigma (tutorial, Appendix A), with g + 1 updates of p_sigma so far.
  const double debias =
      std::sqrt(1.0 - std::pow(1.0 - p.c_sigma, 2.0 * static_cast<double>(s.generation + 1)));
  const double dn = static_cast<double>(n);
  const bool h_sigma = ps_norm / debias < (1.4 + 2.0 / (dn + 1.0)) * p.chi_n;
  // Eq. (45)
  const double pc_coef = h_sigma ? std::sqrt(p.cc * (2.0 - p.cc) * p.mueff) : 0.0;
  for (std::size_t j = 0; j < n; ++j) s.p_c[j] = (1.0 - p.cc) * s.p_c[j] + pc_coef * y_w[j];
  // Eq. (46): w°_i; ||C^-1/2 y|| = ||B z|| = ||z||.
  std::vector<const double*> rows;
  std::vector<double> coef;
  rows.reserve(lambda);
  coef.reserve(lambda);
  double sum_w = 0.0;
  for (std::size_t i = 0; i < lambda; ++i) {
    double w = p.weights[i];
    sum_w += w;
    if (w == 0.0) continue;
    if (w < 0) {
      const double* zi = z + order[i] * n;
      double z2 = 0.0;
      for (std::size_t j = 0; j < n; ++j) z2 += zi[j] * zi[j];
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

  iterations_ += 1;
  pending_ = false;
  sampled_ = false;
  check_termination();
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
  stag_best_.push_back(*vmin);
  stag_median_.push_back(detail::median(last_values_));
  while (stag_best_.size() > detail::kStagnationMax) {
    stag_best_.pop_front();
    stag_median_.pop_front();
  }

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
      auto med = [&](const std::deque<double>& h, std::size_t from) {
        return detail::median(std::vector<double>(h.begin() + static_cast<std::ptrdiff_t>(from),
                                                  h.begin() + static_cast<std::ptrdiff_t>(from + part)));
      };
      const std::size_t recent = stag_best_.size() - part;
      if (med(stag_best_, recent) >= med(stag_best_, first) &&
          med(stag_median_, recent) >= med(stag_median_, first)) {
        stop["tolstagnation"] = stag_iters;
      }
    }
  }

  if (stop.empty()) return;
  const bool final_stop = stop.count("maxfevals") > 0 || stop.count("ftarget") > 0 ||
                          restart_ >= o.restarts;
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
  if (restart_ > 0) (run_is_small_ ? budget_small_ : budget_large_) += used;
  restart_ += 1;
  std::size_t lambda;
  run_sigma0_ = sigma0_;
  run_is_small_ = false;
  if (o.restart_strategy == RestartStrategy::kBIPOP && budget_small_ < budget_large_) {
    // Small regime: lambda_s = floor(lambda0 (lambda_l / (2 lambda0))^(U1^2)),
    // sigma = sigma0 10^(-2 U2), U1, U2 uniform on [0, 1).
    const auto r = static_cast<std::uint64_t>(restart_);
    const double u1 = detail::uniform01(hash_draw(o.seed, r, 0, detail::kBipopTag));
    const double u2 = detail::uniform01(hash_draw(o.seed, r, 1, detail::kBipopTag));
    const double lambda_large = static_cast<double>(lambda0) * std::pow(2.0, large_runs_);
    lambda = std::max<std::size_t>(
        2, static_cast<std::size_t>(std::floor(static_cast<double>(lambda0) *
                                               std::pow(0.5 * lambda_large / static_cast<double>(lambda0),
                                                        u1 * u1))));
    run_sigma0_ = sigma0_ * std::pow(10.0, -2.0 * u2);
    run_is_small_ = true;
  } else if (o.restart_strategy == RestartStrategy::kBIPOP) {
    large_runs_ += 1;
    lambda = lambda0 << large_runs_;
  } else {
    lambda = lambda0 << restart_;  // IPOP: the population doubles per restart
  }
  params_ = cma_default_params(n, lambda, separable_);
  start();
}

std::vector<double> CMABase::mean_solution() const {
  std::vector<double> x = state_.mean;
  to_bounds(x.data());
  return x;
}

std::vector<double> CMABase::stds() const {
  std::vector<double> out(num_params());
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = state_.sigma * coord_std(i);
  return out;
}

void CMABase::set_state(const CMAState& state) {
  using detail::num;
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
  CMAState copy = state;
  check_and_decompose(copy);
  state_ = std::move(copy);
  pending_ = false;
  sampled_ = false;
}

// ---- CMAES -------------------------------------------------------------------

CMAES::CMAES(std::vector<double> x0, double sigma0, CMAESOptions options)
    : CMABase(std::move(x0), sigma0, std::move(options), false) {
  start();
}

void CMAES::reset_covariance() {
  const std::size_t n = num_params();
  state_.cov.assign(n * n, 0.0);
  state_.eigenvectors.assign(n * n, 0.0);
  for (std::size_t i = 0; i < n; ++i) {
    state_.cov[i * n + i] = 1.0;
    state_.eigenvectors[i * n + i] = 1.0;
  }
  state_.eigenvalues.assign(n, 1.0);
  state_.eigen_generation = 0;
}

void CMAES::sample_y(const double* z, double* y, std::size_t count) const {
  // Eq. (39): y = B D z.
  const std::size_t n = num_params();
  std::vector<double> dz(count * n);
  std::vector<double> d(n);
  for (std::size_t j = 0; j < n; ++j) d[j] = std::sqrt(state_.eigenvalues[j]);
  for (std::size_t k = 0; k < count; ++k) {
    for (std::size_t j = 0; j < n; ++j) dz[k * n + j] = d[j] * z[k * n + j];
  }
  detail::times_b(state_.eigenvectors.data(), n, dz.data(), y, count,
                  threads_for(static_cast<double>(count * n * n)));
}

void CMAES::whiten(const double* z_w, double* out) const {
  const std::size_t n = num_params();
  detail::times_b(state_.eigenvectors.data(), n, z_w, out, 1, threads_for(static_cast<double>(n * n)));
}

void CMAES::update_covariance(double a, const std::vector<const double*>& y,
                              const std::vector<double>& coef) {
  const std::size_t n = num_params();
  double* c = state_.cov.data();
  const double* pc = state_.p_c.data();
  const double c1 = params_.c1;
  const std::size_t count = y.size();
  // The lower triangle, row by row; item t does rows t and n - 1 - t so that
  // items have equal work. Each entry: a C_ij + c1 pc_i pc_j, then the
  // members' terms added in rank order.
  const std::size_t items = (n + 1) / 2;
  const int threads = threads_for(static_cast<double>(n * n) * static_cast<double>(count + 2) / 2.0);
  auto row = [&](std::size_t i) {
    double* ci = c + i * n;
    const double c1pi = c1 * pc[i];
    for (std::size_t j = 0; j <= i; ++j) ci[j] = a * ci[j] + c1pi * pc[j];
    std::size_t k = 0;
    for (; k + 4 <= count; k += 4) {
      detail::axpy_4x(ci, i + 1, coef[k] * y[k][i], y[k], coef[k + 1] * y[k + 1][i], y[k + 1],
                      coef[k + 2] * y[k + 2][i], y[k + 2], coef[k + 3] * y[k + 3][i], y[k + 3]);
    }
    for (; k < count; ++k) detail::axpy1(y[k], i + 1, coef[k] * y[k][i], ci);
  };
  detail::parallel_items(items, detail::team_size(items, threads), [&](std::size_t t) {
    row(t);
    if (n - 1 - t != t) row(n - 1 - t);
  });
  // Mirror into the upper triangle.
  const std::size_t blocks = detail::ceil_div(n, detail::kRowBlock);
  detail::parallel_items(blocks, detail::team_size(blocks, threads), [&](std::size_t b) {
    const std::size_t j1 = std::min(n, (b + 1) * detail::kRowBlock);
    for (std::size_t i = 0; i < n; ++i) {
      for (std::size_t j = std::max(b * detail::kRowBlock, i + 1); j < j1; ++j) c[i * n + j] = c[j * n + i];
    }
  });
  if (state_.generation - state_.eigen_generation >= params_.eigen_interval) {
    try {
      decompose(state_);
    } catch (const std::invalid_argument& e) {
      throw std::runtime_error(std::string("CMA-ES: the covariance matrix became invalid: ") + e.what());
    }
  }
}

void CMAES::decompose(CMAState& state) const {
  const std::size_t n = num_params();
  SymmetricEigen e = symmetric_eigen(state.cov.data(), n,
                                     threads_for(static_cast<double>(n) * static_cast<double>(n * n)));
  // An eigenvalue that rounding made <= 0 is raised to max * 1e-16; the
  // condition number (1e16) then stops the run (conditioncov).
  const double floor = e.values.back() * 1e-16;
  for (double& v : e.values) v = std::max(v, floor);
  state.eigenvalues = std::move(e.values);
  state.eigenvectors = std::move(e.vectors);
  state.eigen_generation = state.generation;
}

void CMAES::check_and_decompose(CMAState& state) const {
  const std::size_t n = num_params();
  std::vector<double>& c = state.cov;
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < i; ++j) {
      const double u = c[i * n + j];
      const double v = c[j * n + i];
      if (std::fabs(u - v) > 1e-10 * (std::fabs(u) + std::fabs(v)) + 1e-300) {
        throw std::invalid_argument("state.cov must be symmetric, got (" + std::to_string(i) + ", " +
                                    std::to_string(j) + ") = " + detail::num(u) + " and (" +
                                    std::to_string(j) + ", " + std::to_string(i) + ") = " + detail::num(v));
      }
      c[i * n + j] = c[j * n + i] = 0.5 * (u + v);
    }
  }
  if (state.eigenvalues.empty() && state.eigenvectors.empty()) {
    SymmetricEigen e = symmetric_eigen(c.data(), n, options_.num_threads);
    if (!(e.values.front() > 0)) {
      throw std::invalid_argument("state.cov must be positive definite, its smallest eigenvalue is " +
                                  detail::num(e.values.front()));
    }
    state.eigenvalues = std::move(e.values);
    state.eigenvectors = std::move(e.vectors);
    state.eigen_generation = state.generation;
    return;
  }
  if (state.eigenvalues.size() != n || state.eigenvectors.size() != n * n) {
    throw std::invalid_argument("state.eigenvalues and state.eigenvectors must have " + std::to_string(n) +
                                " and " + std::to_string(n * n) + " entries (or both be empty), got " +
                                std::to_string(state.eigenvalues.size()) + " and " +
                                std::to_string(state.eigenvectors.size()));
  }
  for (std::size_t i = 0; i < n; ++i) {
    if (!(state.eigenvalues[i] > 0) || !std::isfinite(state.eigenvalues[i])) {
      throw std::invalid_argument("state.eigenvalues[" + std::to_string(i) + "] must be > 0 and finite, got " +
                                  detail::num(state.eigenvalues[i]));
    }
  }
  for (std::size_t i = 0; i < n * n; ++i) {
    if (!std::isfinite(state.eigenvectors[i])) {
      throw std::invalid_argument("state.eigenvectors must be finite");
    }
  }
}

void CMAES::check_axes(std::map<std::string, double>& stop) const {
  const std::size_t n = num_params();
  const CMAESOptions& o = options_;
  const std::vector<double>& ev = state_.eigenvalues;  // ascending
  if (ev.back() > o.conditioncov * ev.front()) stop["conditioncov"] = o.conditioncov;
  if (o.noeffectaxis) {
    const std::size_t i = static_cast<std::size_t>(state_.generation) % n;
    const double step = 0.1 * state_.sigma * std::sqrt(ev[i]);
    const double* b = state_.eigenvectors.data() + i * n;
    bool no_effect = true;
    for (std::size_t j = 0; j < n && no_effect; ++j) {
      no_effect = state_.mean[j] == state_.mean[j] + step * b[j];
    }
    if (no_effect) stop["noeffectaxis"] = 0.1;
  }
  if (state_.sigma / run_sigma0() > o.tolupsigma * std::sqrt(ev.back())) stop["tolupsigma"] = o.tolupsigma;
}

double CMAES::coord_std(std::size_t i) const noexcept {
  const std::size_t n = num_params();
  return std::sqrt(state_.cov[i * n + i]);
}

// ---- SepCMAES ----------------------------------------------------------------

SepCMAES::SepCMAES(std::vector<double> x0, double sigma0, CMAESOptions options)
    : CMABase(std::move(x0), sigma0, std::move(options), true) {
  start();
}

void SepCMAES::reset_covariance() {
  state_.cov.assign(num_params(), 1.0);
  state_.eigenvalues.clear();
  state_.eigenvectors.clear();
  state_.eigen_generation = 0;
}

void SepCMAES::sample_y(const double* z, double* y, std::size_t count) const {
  // y = sqrt(diag C) z.
  const std::size_t n = num_params();
  std::vector<double> d(n);
  for (std::size_t j = 0; j < n; ++j) d[j] = std::sqrt(state_.cov[j]);
  detail::parallel_items(count, detail::team_size(count, threads_for(static_cast<double>(count * n))),
                         [&](std::size_t k) {
                           for (std::size_t j = 0; j < n; ++j) y[k * n + j] = d[j] * z[k * n + j];
                         });
}

void SepCMAES::whiten(const double* z_w, double* out) const {
  std::copy(z_w, z_w + num_params(), out);
}

void SepCMAES::update_covariance(double a, const std::vector<const double*>& y,
                                 const std::vector<double>& coef) {
  // Eq. (47), diagonal only.
  const std::size_t n = num_params();
  double* c = state_.cov.data();
  const double* pc = state_.p_c.data();
  const double c1 = params_.c1;
  const std::size_t count = y.size();
  constexpr std::size_t kBlock = 4096;
  const std::size_t blocks = detail::ceil_div(n, kBlock);
  const int threads = threads_for(static_cast<double>(n * (count + 2)));
  detail::parallel_items(blocks, detail::team_size(blocks, threads), [&](std::size_t b) {
    const std::size_t i0 = b * kBlock;
    const std::size_t i1 = std::min(n, i0 + kBlock);
    for (std::size_t i = i0; i < i1; ++i) c[i] = a * c[i] + c1 * pc[i] * pc[i];
    for (std::size_t k = 0; k < count; ++k) {
      const double* yk = y[k];
      const double f = coef[k];
      for (std::size_t i = i0; i < i1; ++i) c[i] += f * yk[i] * yk[i];
    }
  });
  state_.eigen_generation = state_.generation;
  for (std::size_t i = 0; i < n; ++i) {
    if (!(c[i] > 0) || !std::isfinite(c[i])) {
      throw std::runtime_error("SepCMAES: the covariance entry " + std::to_string(i) + " became " +
                               detail::num(c[i]));
    }
  }
}

void SepCMAES::check_and_decompose(CMAState& state) const {
  for (std::size_t i = 0; i < state.cov.size(); ++i) {
    if (!(state.cov[i] > 0)) {
      throw std::invalid_argument("state.cov[" + std::to_string(i) + "] must be > 0, got " +
                                  detail::num(state.cov[i]));
    }
  }
  if (!state.eigenvalues.empty() || !state.eigenvectors.empty()) {
    throw std::invalid_argument("SepCMAES: state.eigenvalues and state.eigenvectors must be empty");
  }
  state.eigen_generation = state.generation;
}

void SepCMAES::check_axes(std::map<std::string, double>& stop) const {
  const std::size_t n = num_params();
  const CMAESOptions& o = options_;
  const auto [cmin, cmax] = std::minmax_element(state_.cov.begin(), state_.cov.end());
  if (*cmax > o.conditioncov * *cmin) stop["conditioncov"] = o.conditioncov;
  if (o.noeffectaxis) {
    // The principal axes are the coordinates.
    const std::size_t i = static_cast<std::size_t>(state_.generation) % n;
    const double m = state_.mean[i];
    if (m == m + 0.1 * state_.sigma * std::sqrt(state_.cov[i])) stop["noeffectaxis"] = 0.1;
  }
  if (state_.sigma / run_sigma0() > o.tolupsigma * std::sqrt(*cmax)) stop["tolupsigma"] = o.tolupsigma;
}

double SepCMAES::coord_std(std::size_t i) const noexcept { return std::sqrt(state_.cov[i]); }

}  // namespace evokit
