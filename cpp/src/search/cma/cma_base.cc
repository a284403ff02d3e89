// CMABase: the bookkeeping CMAES and SepCMAES share (cma_es.cc holds their
// hooks): checked options, sampling and ask here; tell and one generation's
// update in cma_tell.cc; termination and restarts in cma_termination.cc.
//
//   N. Hansen, "The CMA Evolution Strategy: A Tutorial", arXiv:1604.00772
//   (2016); `Eq. (n)` marks the tutorial's equations (Appendix A, Table 1).
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
// with delta(h_s) = (1 - h_s) cc (2 - cc). With two-point step-size
// adaptation (TPA, StepSizeAdaptation in cma_es.h) sigma follows the ranks of
// the mirrored pair along m - m_old instead of Eq. (44); p_s is still kept
// for h_s. C^-1/2 is B D^-1 B^T of the
// decomposition used for sampling, so C^-1/2 y = B z and ||C^-1/2 y|| = ||z||.
#include "evokit/cma_es.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <string>
#include <utility>

#include "evokit/noise.h"
#include "evokit/philox.h"
#include "common/messages.h"
#include "common/parallel.h"
#include "linalg/dense_kernels.h"
#include "search/cma/cma_internal.h"

namespace evokit {

namespace detail {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

std::string num(double v) { return format_number(v); }

}  // namespace
}  // namespace detail

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
  is_integer_.assign(n, false);
  int_lo_.assign(n, -detail::kInf);
  int_hi_.assign(n, detail::kInf);
  for (std::size_t j = 0; j < o.integer_variables.size(); ++j) {
    const std::size_t i = o.integer_variables[j];
    const std::string at = "integer_variables[" + std::to_string(j) + "]";
    if (i >= n) {
      throw std::invalid_argument(at + " = " + std::to_string(i) + " is not a parameter index (num_params = " +
                                  std::to_string(n) + ")");
    }
    if (is_integer_[i]) throw std::invalid_argument(at + " = " + std::to_string(i) + " is repeated");
    is_integer_[i] = true;
    if (!o.lower.empty()) {
      int_lo_[i] = std::ceil(o.lower[i]);
      int_hi_[i] = std::floor(o.upper[i]);
      if (int_lo_[i] > int_hi_[i]) {
        throw std::invalid_argument("integer variable " + std::to_string(i) + " has no integer within its bounds [" +
                                    num(o.lower[i]) + ", " + num(o.upper[i]) + "]");
      }
    }
  }
  if (o.margin && !(*o.margin >= 0 && *o.margin < 0.5)) {
    throw std::invalid_argument("margin must be in [0, 0.5), got " + num(*o.margin));
  }
  params_ = cma_default_params(n, o.population_size.value_or(cma_default_population_size(n)), separable);
  tpa_ = o.step_size_adaptation == StepSizeAdaptation::kTPA ||
         (o.step_size_adaptation == StepSizeAdaptation::kAuto && n >= kTPADimension);
}

void CMABase::set_margin() {
  const CMAESOptions& o = options_;
  margin_ = o.integer_variables.empty()
                ? 0.0
                : o.margin.value_or(1.0 / (static_cast<double>(num_params()) *
                                           static_cast<double>(population_size())));  // Hamano et al. (2022)
}

void CMABase::start() {
  const std::size_t n = num_params();
  state_ = CMAState{};
  state_.mean = x0_;
  state_.sigma = run_sigma0_;
  state_.p_sigma.assign(n, 0.0);
  state_.p_c.assign(n, 0.0);
  state_.affine.assign(n, 1.0);
  reset_covariance();
  set_margin();
  pending_ = false;
  sampled_ = false;
  tpa_row_ = population_size();
  history_.clear();
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

namespace detail {

namespace {
double linquad_margin(double bound, double width) { return std::min(width / 2.0, 0.05 * std::max(std::fabs(bound), 1.0)); }
}  // namespace

double into_bounds(double v, double lo, double hi) noexcept {
  const bool has_lo = std::isfinite(lo), has_hi = std::isfinite(hi);
  const double width = hi - lo;  // +inf with an infinite bound
  const double al = has_lo ? linquad_margin(lo, width) : 0.0;
  const double au = has_hi ? linquad_margin(hi, width) : 0.0;
  if ((!has_lo || v >= lo + al) && (!has_hi || v <= hi - au)) return v;  // the identity
  const double a = lo - al, b = hi + au;  // where the transformation touches lo and hi
  if (has_lo && has_hi) {
    const double period = 2.0 * (b - a);
    double r = std::fmod(v - a, period);
    if (r < 0) r += period;
    v = a + (r <= b - a ? r : period - r);
  } else if (has_lo) {
    if (v < a) v = 2.0 * a - v;
  } else if (v > b) {
    v = 2.0 * b - v;
  }
  if (has_lo && v < lo + al) {
    v = lo + (v - a) * (v - a) / (4.0 * al);
  } else if (has_hi && v > hi - au) {
    v = hi - (b - v) * (b - v) / (4.0 * au);
  }
  return std::min(std::max(v, lo), hi);  // rounding
}

}  // namespace detail

void CMABase::to_bounds(double* x) const noexcept {
  const std::size_t n = num_params();
  if (!options_.integer_variables.empty()) {
    for (std::size_t i = 0; i < n; ++i) {
      // The cell (k - 1/2, k + 1/2] of integer k, clamped to the integer range.
      if (is_integer_[i]) x[i] = std::min(std::max(std::ceil(x[i] - 0.5), int_lo_[i]), int_hi_[i]);
    }
  }
  if (!bounded_) return;
  for (std::size_t i = 0; i < n; ++i) {
    if (!is_integer_[i]) x[i] = detail::into_bounds(x[i], options_.lower[i], options_.upper[i]);
  }
}

namespace {

double squared_norm(const double* v, std::size_t n) {
  double sum = 0.0;
  for (std::size_t j = 0; j < n; ++j) sum += v[j] * v[j];
  return sum;
}

// Scales the step y and its z so that ||z||^2 = target (pycma's
// _random_rescaling_factor_to_mahalanobis_size, the target the row's own
// normals'); false, changing nothing, when z is zero or the factor is not finite.
bool rescale_to_length(double* y, double* z, std::size_t n, double target) {
  const double f = std::sqrt(target) / std::sqrt(squared_norm(z, n));
  if (!std::isfinite(f) || !(f > 0)) return false;
  for (std::size_t j = 0; j < n; ++j) {
    y[j] *= f;
    z[j] *= f;
  }
  return true;
}

}  // namespace

void CMABase::sample_population() {
  const std::size_t lambda = population_size();
  keys_.resize(lambda);
  for (std::size_t k = 0; k < lambda; ++k) keys_[k] = sample_key(k);
  // The rows that injections and TPA's pair replace need only their normals
  // (the lengths they are rescaled to), not y and x.
  const std::size_t injected = std::min(injections_.size(), lambda);
  materialize_population(injected + (tpa_pair_due(injected) ? 2 : 0));
  place_injections();
  place_tpa_pair();
  // mean + sigma y beyond the largest double (a huge sigma0, or a sigma
  // grown so far): say so, by name, rather than hand inf to the objective.
  const std::size_t n = num_params();
  for (std::size_t i = 0; i < solutions_.size(); ++i) {
    if (std::isfinite(solutions_[i])) continue;
    throw std::runtime_error("CMA-ES: generation " + std::to_string(state_.generation) + "'s member " +
                             std::to_string(i / n) + " has coordinate " + std::to_string(i % n) + " = " +
                             detail::num(solutions_[i]) + ": mean + sigma y overflows (sigma = " +
                             detail::num(state_.sigma) + "); choose a smaller sigma0");
  }
  sampled_ = true;
}

void CMABase::solution_of(const double* y, double* x) const {
  const std::size_t n = num_params();
  const CMAState& s = state_;
  for (std::size_t i = 0; i < n; ++i) {
    // Integer coordinates: v_i = m_i + A_i sigma y_i (Hamano et al. 2022).
    x[i] = is_integer_[i] ? s.mean[i] + s.sigma * (s.affine[i] * y[i]) : s.mean[i] + s.sigma * y[i];
  }
  to_bounds(x);
}

void CMABase::clip_step(double* y, double* z) const {
  // pycma's repair_genotype: the Mahalanobis norm ||z|| of the step is
  // clipped at sqrt(n) + 2 n / (n + 2).
  const std::size_t n = num_params();
  const double dn = static_cast<double>(n);
  const double upper = std::sqrt(dn) + 2.0 * dn / (dn + 2.0);
  double z2 = 0.0;
  for (std::size_t j = 0; j < n; ++j) z2 += z[j] * z[j];
  const double norm = std::sqrt(z2);
  if (!(norm > upper)) return;
  const double f = upper / norm;
  for (std::size_t j = 0; j < n; ++j) {
    y[j] *= f;
    z[j] *= f;
  }
}

void CMABase::step_of(const double* x, double* y, double* z) const {
  const std::size_t n = num_params();
  const CMAState& s = state_;
  for (std::size_t i = 0; i < n; ++i) {
    y[i] = is_integer_[i] ? (x[i] - s.mean[i]) / (s.sigma * s.affine[i]) : (x[i] - s.mean[i]) / s.sigma;
  }
  to_z(y, z);
  clip_step(y, z);
}

// The first queued injections replace the first members (pycma's ask_geno).
void CMABase::place_injections() {
  const std::size_t n = num_params();
  const std::size_t count = std::min(injections_.size(), population_size());
  const double keep_len = std::sqrt(static_cast<double>(n));  // CMA_injections_threshold_keep_len = 1
  const CMAState& s = state_;
  for (std::size_t k = 0; k < count; ++k) {
    const Injection inj = std::move(injections_.front());
    injections_.pop_front();
    double* y = y_.data() + k * n;
    double* z = z_.data() + k * n;
    double* x = solutions_.data() + k * n;
    const double key_norm = squared_norm(z, n);  // ||z_k||^2 of the member's own normals: a chi_n length
    for (std::size_t i = 0; i < n; ++i) {
      y[i] = is_integer_[i] ? (inj.x[i] - s.mean[i]) / (s.sigma * s.affine[i]) : (inj.x[i] - s.mean[i]) / s.sigma;
    }
    to_z(y, z);
    if (!inj.force && std::sqrt(squared_norm(z, n)) > keep_len) {
      rescale_to_length(y, z, n, key_norm);
      solution_of(y, x);
    } else {
      std::copy(inj.x.begin(), inj.x.end(), x);  // the injected point itself
      to_bounds(x);
    }
  }
  num_injected_ = count;
}

bool CMABase::tpa_pair_due(std::size_t injected) const noexcept {
  return tpa_ && state_.mean_shift.size() == num_params() && population_size() - injected >= 2;
}

// TPA's mirrored pair along the last mean shift, right after the injected
// rows: y_+ = f u, y_- = -y_+, with u the mean shift in y units (for an
// integer coordinate divided by A_i, so that x - m stays along the shift) and
// f giving ||z_+|| the length of the row's own normal vector (pycma's
// _random_rescaling_factor_to_mahalanobis_size).
void CMABase::place_tpa_pair() {
  const std::size_t n = num_params();
  const std::size_t lambda = population_size();
  const CMAState& s = state_;
  tpa_row_ = lambda;
  if (!tpa_pair_due(num_injected_)) return;
  const std::size_t r = num_injected_;
  double* y = y_.data() + r * n;
  double* z = z_.data() + r * n;
  const double key_norm = squared_norm(z, n);
  for (std::size_t i = 0; i < n; ++i) y[i] = is_integer_[i] ? s.mean_shift[i] / s.affine[i] : s.mean_shift[i];
  if (s.mean_shift_z.size() == n) {
    std::copy(s.mean_shift_z.begin(), s.mean_shift_z.end(), z);
  } else {
    to_z(y, z);
  }
  if (!rescale_to_length(y, z, n, key_norm)) {  // no shift, or too small to scale: the keys' samples
    sample_z(&keys_[r], z, 1);
    sample_y(z, y, 2);
    solution_of(y, solutions_.data() + r * n);
    solution_of(y + n, solutions_.data() + (r + 1) * n);
    return;
  }
  for (std::size_t j = 0; j < n; ++j) {
    y[n + j] = -y[j];
    z[n + j] = -z[j];
  }
  solution_of(y, solutions_.data() + r * n);
  solution_of(y + n, solutions_.data() + (r + 1) * n);
  tpa_row_ = r;
}

void CMABase::inject(const double* x, std::size_t count, bool force) {
  const std::size_t n = num_params();
  if (count > 0) detail::require_non_null(x, "solutions");
  detail::require_finite_solutions(x, count, n);
  for (std::size_t k = 0; k < count; ++k) {
    injections_.push_back(Injection{std::vector<double>(x + k * n, x + (k + 1) * n), force});
  }
}

// z of the members keyed by keys_, and their y and solutions (mapped into
// the bounds) from row first_row on (the rows before are replaced by the
// caller; a row's bits do not depend on which rows are sampled with it).
void CMABase::materialize_population(std::size_t first_row) {
  const std::size_t n = num_params();
  const std::size_t lambda = population_size();
  z_.resize(lambda * n);
  y_.resize(lambda * n);
  solutions_.resize(lambda * n);
  sample_z(keys_.data(), z_.data(), lambda);
  sample_y(z_.data() + first_row * n, y_.data() + first_row * n, lambda - first_row);
  for (std::size_t k = first_row; k < lambda; ++k) solution_of(y_.data() + k * n, solutions_.data() + k * n);
  num_injected_ = 0;
  tpa_row_ = lambda;
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
  solution_of(y.data(), x.data());
  return x;
}

}  // namespace evokit
