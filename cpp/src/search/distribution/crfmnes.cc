// CR-FM-NES: the cost-reduced fast moving natural evolution strategy, a
// family of evokit/distribution.h.
//
//   M. Nomura, I. Ono, "Fast Moving Natural Evolution Strategy for
//   High-Dimensional Problems", IEEE CEC 2022, arXiv:2201.11422: Algorithm 1
//   (one generation), section III (the parameterisation, the weights, the
//   learning rates, the v and D updates of section III-C) and the default
//   parameters of its Table I. FM-NES (Nomura, Ono, arXiv:2108.09455) is the
//   full-covariance method it reduces.
//
// The distribution N(m, sigma^2 D (I + v v^T) D), D diagonal (n numbers) and
// v a vector (n numbers): linear time and memory per sample. A generation
// (d = n, lambda even, mirrored: members 2p and 2p + 1 are +z and -z):
//   z_k = z(g, k),  y_k = z_k + (sqrt(1 + |v|^2) - 1) vbar (vbar^T z_k),  vbar = v / |v|
//   x_k = m + sigma D y_k                                               (Alg. 1, l. 3-6)
//   rank the members by f, best first; an infeasible member (f = +inf) ranks
//   after every feasible one, infeasible ones by |z_k| ascending; lambda_F =
//   #feasible (Alg. 1, l. 7-8; ties keep member order)
//   p_sigma <- (1 - c_sigma) p_sigma + sqrt(c_sigma (2 - c_sigma) mu_eff) sum_i w_rank_i z_i   (l. 9)
//   w_dist_i = w_hat_i exp(alpha_dist |z_i|) / sum_j (...) - 1/lambda, with
//     alpha_dist = h^-1(d) min(1, sqrt(lambda / d)) sqrt(lambda_F / lambda)  (eq. (8)-(9))
//   |p_sigma| >= chi_d:        w = w_dist, eta_sigma = eta_move = 1            (movement, l. 10-13)
//   0.1 chi_d <= |p_sigma| < chi_d: w = w_rank, eta_sigma = eta_stag
//   |p_sigma| < 0.1 chi_d:     w = w_rank, eta_sigma = eta_conv
//   p_c <- (1 - c_c) p_c + sqrt(c_c (2 - c_c) mu_eff) sum_i w_i (x_i - m) / sigma   (l. 14)
//   m   <- m + eta_m sum_i w_i (x_i - m)                                       (l. 15)
//   s_i, t_i of each column Y of [y_1..y_lambda, p_c / D] by the natural
//   gradient of section III-C (steps 1-3: t, s's two steps, the solve with
//   the diagonal-plus-rank-one H, t corrected with s):             (l. 16-17)
//     gamma = 1 + |v|^2,  alpha = min(1, sqrt(|v|^4 + (2 gamma - sqrt(gamma)) / max_j vbar_j^2) / (2 + |v|^2))
//     b = -(1 - alpha^2) |v|^4 / gamma + 2 alpha^2,  H = 2 - (b + 2 alpha^2) vbar^2 (elementwise)
//     t = Y (vbar^T Y) - vbar ((vbar^T Y)^2 + gamma) / 2
//     s = Y^2 - |v|^2 / gamma (vbar^T Y) (Y vbar) - 1
//     s <- s - alpha / gamma ((2 + |v|^2) (t vbar) - |v|^2 (vbar^T t) vbar^2)
//     s <- H^-1 s - b / (1 + b (vbar^2)^T H^-1 vbar^2) ((vbar^2)^T H^-1 s) H^-1 vbar^2
//     t <- t - alpha ((2 + |v|^2) (s vbar) - ((vbar^2)^T s) vbar)
//   v <- v + (sum_i eta_B w_i t_i + c_1 t_c) / |v|                           (l. 18)
//   D <- D + (sum_i eta_B w_i s_i + c_1 s_c) D                               (l. 19)
//   D <- D / det(A)^(1/d), det(A)^(1/d) = exp(sum_j ln D_j / d + ln(1 + |v|^2) / (2 d))  (l. 20)
//   G_sigma = sum_i w_i (|z_i|^2 - d) / d;  sigma <- sigma exp(eta_sigma / 2 G_sigma)   (l. 21-22)
// (The "Y" of the p_c column uses p_c after its update; all the others the
// state before the generation.)
// Defaults (Table I; w_hat_i = max(0, ln(lambda/2 + 1) - ln i)):
//   lambda = 4 + floor(3 ln d), rounded up to even;  w_rank = the NES utilities;
//   mu_eff = 1 / sum_i (w_rank_i + 1/lambda)^2;  c_sigma = (mu_eff + 2) / (d + mu_eff + 5);
//   c_c = (4 + mu_eff / d) / (d + 4 + 2 mu_eff / d);
//   c_1 = max(0, 2 / ((d + 1.3)^2 + mu_eff) * (d - 5) / 6 * lambda_F / lambda): the published
//     rate, which is negative for d < 5, floored at 0 there (as at d = 5: no rank-one update).
//     A negative rate multiplies D by 1 + c_1 s_c (l. 19), which turns negative once p_c is
//     long (s_c grows as (p_c / D)^2): at d = 2 on the ellipsoid, 5 of 100 runs reached
//     D < 0 and sampled NaN solutions (evosax's CR_FM_NES, which keeps the published rate,
//     reaches the target in none of 100 runs there);
//   eta_m = 1, eta_move = 1, eta_stag = tanh((0.024 lambda_F + 0.7 d + 20) / (d + 12)),
//   eta_conv = 2 tanh((0.025 lambda_F + 0.75 d + 10) / (d + 4)),
//   eta_B = tanh((min(0.02 lambda_F, 3 ln d) + 5) / (0.23 d + 25));
//   chi_d = sqrt(d) (1 - 1/(4d) + 1/(21 d^2));  h^-1(d) the root a > 0 of
//   (1 + a^2) exp(a^2 / 2) / 0.24 - 10 - d = 0;
//   m = x0, sigma = sigma0, D = 1, p_sigma = p_c = 0, v_j = N_j / sqrt(d).
// The initial v is drawn like every other number of EvoKit: N_j =
// gaussian_at(seed, key_v, j) (noise.h, widened from float) with
// key_v = hash_draw(seed, 0, 0, kInitialVTag) >> 2. w_dist is formed with
// exp(alpha_dist (|z_i| - max_j |z_j|)) (the same ratio; no overflow), and
// the mean step as sigma D sum_i w_i y_i (= sum_i w_i (x_i - m), without the
// cancellation of x_i - m).
//
// Options: sigma0, population_size (even), seed, num_threads,
// learning_rate_mean (eta_m, > 0).
// State: "crfmnes.mean", "crfmnes.d", "crfmnes.v", "crfmnes.p_sigma",
// "crfmnes.p_c" (n each), "crfmnes.sigma" (1): 5 n + 1 numbers. Time per
// generation O(lambda n), memory O(n) besides the generation's samples.
#include <algorithm>
#include <cmath>
#include <limits>

#include "search/distribution/distribution_internal.h"
#include "evokit/noise.h"
#include "evokit/philox.h"
#include "search/option_checks.h"

namespace evokit {

namespace {

constexpr char kName[] = "CRFMNES";
constexpr std::uint64_t kInitialVTag = 0x43524656;  // "CRFV"

// h^-1(d): the root a > 0 of (1 + a^2) exp(a^2 / 2) / 0.24 - 10 - d, which
// increases on a > 0 (bisection to the last bit).
double h_inverse(double d) {
  const auto h = [d](double a) { return (1.0 + a * a) * std::exp(a * a / 2.0) / 0.24 - 10.0 - d; };
  double lo = 0.0, hi = 1.0;
  while (h(hi) < 0.0) hi *= 2.0;
  for (int i = 0; i < 200; ++i) {
    const double mid = 0.5 * (lo + hi);
    if (mid <= lo || mid >= hi) break;
    (h(mid) < 0.0 ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

double norm2(const double* a, std::size_t n) {
  double s = 0.0;
  for (std::size_t j = 0; j < n; ++j) s += a[j] * a[j];
  return s;
}

double dot(const double* a, const double* b, std::size_t n) {
  double s = 0.0;
  for (std::size_t j = 0; j < n; ++j) s += a[j] * b[j];
  return s;
}

class CRFMNES final : public DistributionStrategy {
 public:
  CRFMNES(std::vector<double> x0, const detail::CommonDistributionOptions& c, double eta_m)
      : DistributionStrategy(kName, x0.size(), c.population_size, c.seed, c.num_threads, true),
        mean_(std::move(x0)),
        sigma_(c.sigma0),
        d_(mean_.size(), 1.0),
        v_(mean_.size()),
        p_sigma_(mean_.size(), 0.0),
        p_c_(mean_.size(), 0.0),
        eta_m_(eta_m),
        w_rank_(distribution::nes_utilities(population_size())) {
    const std::size_t n = mean_.size();
    const double dn = static_cast<double>(n);
    const double lambda = static_cast<double>(population_size());
    w_hat_.resize(population_size());
    double mu = 0.0;
    for (std::size_t i = 0; i < w_hat_.size(); ++i) {
      w_hat_[i] = std::max(0.0, std::log(lambda / 2.0 + 1.0) - std::log(static_cast<double>(i + 1)));
      mu += (w_rank_[i] + 1.0 / lambda) * (w_rank_[i] + 1.0 / lambda);
    }
    mu_eff_ = 1.0 / mu;
    c_sigma_ = (mu_eff_ + 2.0) / (dn + mu_eff_ + 5.0);
    c_c_ = (4.0 + mu_eff_ / dn) / (dn + 4.0 + 2.0 * mu_eff_ / dn);
    c1_cma_ = 2.0 / ((dn + 1.3) * (dn + 1.3) + mu_eff_);
    chi_d_ = std::sqrt(dn) * (1.0 - 1.0 / (4.0 * dn) + 1.0 / (21.0 * dn * dn));
    h_inv_ = h_inverse(dn);
    // v_j = N_j / sqrt(d), N drawn from the seed (see the header).
    std::vector<float> f(n);
    fill_gaussian(seed(), hash_draw(seed(), 0, 0, kInitialVTag) >> 2, 0, f.data(), n);
    for (std::size_t j = 0; j < n; ++j) v_[j] = static_cast<double>(f[j]) / std::sqrt(dn);
    refresh();
  }

  std::vector<double> center() const override { return mean_; }
  std::vector<double> stds() const override {
    // sqrt of the diagonal of sigma^2 D (I + v v^T) D.
    std::vector<double> s(num_params());
    for (std::size_t j = 0; j < s.size(); ++j) s[j] = sigma_ * d_[j] * std::sqrt(1.0 + v_[j] * v_[j]);
    return s;
  }
  // sigma^2 D (I + v v^T) D = sigma^2 (D^2 + w w^T), w = D v: a diagonal plus
  // a rank-one term, whose eigenvalues interlace with the diagonal's (Golub
  // 1973): lambda_min >= min d^2 and lambda_max <= max d^2 + |w|^2. Their
  // ratio bounds the condition number from above, by at most a factor
  // (d^2 of the second smallest / the smallest) times 2.
  double condition() const override {
    const std::size_t n = num_params();
    double lo = std::numeric_limits<double>::infinity(), hi = 0.0, w2 = 0.0;
    for (std::size_t j = 0; j < n; ++j) {
      const double d2 = d_[j] * d_[j];
      lo = std::min(lo, d2);
      hi = std::max(hi, d2);
      w2 += d2 * v_[j] * v_[j];
    }
    const double bound = (hi + w2) / lo;
    // +inf when an update left D, v or sigma non-finite or D zero.
    if (!(lo > 0.0) || !std::isfinite(bound) || !std::isfinite(sigma_)) return std::numeric_limits<double>::infinity();
    return bound;
  }
  std::map<std::string, double> parameters() const override {
    const double all = static_cast<double>(population_size());  // lambda_F = lambda
    return {{"population_size", all},
            {"learning_rate_mean", eta_m_},
            {"mu_eff", mu_eff_},
            {"c_sigma", c_sigma_},
            {"c_c", c_c_},
            {"c_1", c1(all)},
            {"chi_d", chi_d_},
            {"h_inv", h_inv_},
            {"alpha_dist", alpha_dist(all)},
            {"eta_move_sigma", 1.0},
            {"eta_stag_sigma", eta_stag(all)},
            {"eta_conv_sigma", eta_conv(all)},
            {"eta_b", eta_b(all)}};
  }

 protected:
  void transform(const double* z, double* x) const override {
    const std::size_t n = num_params();
    const double c = (std::sqrt(1.0 + norm_v2_) - 1.0) * dot(vbar_.data(), z, n);
    for (std::size_t j = 0; j < n; ++j) x[j] = mean_[j] + sigma_ * d_[j] * (z[j] + c * vbar_[j]);
  }

  void update(const std::vector<double>& z, const std::vector<double>& /*x*/,
              const std::vector<double>& values) override {
    const std::size_t n = num_params();
    const std::size_t lambda = population_size();
    const double dn = static_cast<double>(n);

    // Ranking with the infeasible (+inf) last, by |z| (Alg. 1, l. 7-8).
    std::vector<double> z_sq(lambda), z_norm(lambda);
    for (std::size_t k = 0; k < lambda; ++k) {
      z_sq[k] = norm2(z.data() + k * n, n);
      z_norm[k] = std::sqrt(z_sq[k]);
    }
    std::vector<std::size_t> order = distribution::ranking(values);
    const auto first_infeasible = std::stable_partition(
        order.begin(), order.end(), [&](std::size_t k) { return values[k] < kInfeasible; });
    std::stable_sort(first_infeasible, order.end(),
                     [&](std::size_t a, std::size_t b) { return z_norm[a] < z_norm[b]; });
    const double lambda_f = static_cast<double>(first_infeasible - order.begin());

    // y_i of the ranked members (Alg. 1, l. 4), from the state before the update.
    std::vector<double> y(lambda * n);
    const double ycoef = std::sqrt(1.0 + norm_v2_) - 1.0;
    for (std::size_t i = 0; i < lambda; ++i) {
      const double* zi = z.data() + order[i] * n;
      const double c = ycoef * dot(vbar_.data(), zi, n);
      for (std::size_t j = 0; j < n; ++j) y[i * n + j] = zi[j] + c * vbar_[j];
    }

    // p_sigma (l. 9).
    const double ps_coef = std::sqrt(c_sigma_ * (2.0 - c_sigma_) * mu_eff_);
    std::vector<double> wz(n, 0.0);
    for (std::size_t i = 0; i < lambda; ++i) {
      const double* zi = z.data() + order[i] * n;
      for (std::size_t j = 0; j < n; ++j) wz[j] += w_rank_[i] * zi[j];
    }
    for (std::size_t j = 0; j < n; ++j) p_sigma_[j] = (1.0 - c_sigma_) * p_sigma_[j] + ps_coef * wz[j];
    const double ps_norm = std::sqrt(norm2(p_sigma_.data(), n));

    // The weights and eta_sigma by the movement (eq. (8)-(9), l. 10-13).
    std::vector<double> w = w_rank_;
    double eta_sigma = 1.0;
    if (ps_norm >= chi_d_) {
      const double alpha = alpha_dist(lambda_f);
      double top = -std::numeric_limits<double>::infinity();
      for (std::size_t i = 0; i < lambda; ++i) {
        if (w_hat_[i] > 0.0) top = std::max(top, alpha * z_norm[order[i]]);
      }
      double sum = 0.0;
      for (std::size_t i = 0; i < lambda; ++i) {
        w[i] = w_hat_[i] > 0.0 ? w_hat_[i] * std::exp(alpha * z_norm[order[i]] - top) : 0.0;
        sum += w[i];
      }
      for (double& wi : w) wi = wi / sum - 1.0 / static_cast<double>(lambda);
    } else {
      eta_sigma = ps_norm >= 0.1 * chi_d_ ? eta_stag(lambda_f) : eta_conv(lambda_f);
    }

    // p_c and m (l. 14-15): sum_i w_i (x_i - m) = sigma D sum_i w_i y_i.
    std::vector<double> wy(n, 0.0);
    for (std::size_t i = 0; i < lambda; ++i) {
      for (std::size_t j = 0; j < n; ++j) wy[j] += w[i] * y[i * n + j];
    }
    const double pc_coef = std::sqrt(c_c_ * (2.0 - c_c_) * mu_eff_);
    for (std::size_t j = 0; j < n; ++j) {
      const double wxm = sigma_ * d_[j] * wy[j];
      p_c_[j] = (1.0 - c_c_) * p_c_[j] + pc_coef * wxm / sigma_;
      mean_[j] += eta_m_ * wxm;
    }

    // s and t of every column (section III-C), accumulated with the weights
    // eta_B w_i (the samples) and c_1 (p_c / D) (l. 16-19).
    const double nv2 = norm_v2_, nv4 = nv2 * nv2, gamma = 1.0 + nv2;
    double max_vv = 0.0;
    std::vector<double> vv(n), inv_h(n), inv_h_vv(n);
    for (std::size_t j = 0; j < n; ++j) {
      vv[j] = vbar_[j] * vbar_[j];
      max_vv = std::max(max_vv, vv[j]);
    }
    const double alpha = std::min(1.0, std::sqrt(nv4 + (2.0 * gamma - std::sqrt(gamma)) / max_vv) /
                                           (2.0 + nv2));
    const double b = -(1.0 - alpha * alpha) * nv4 / gamma + 2.0 * alpha * alpha;
    for (std::size_t j = 0; j < n; ++j) {
      inv_h[j] = 1.0 / (2.0 - (b + 2.0 * alpha * alpha) * vv[j]);
      inv_h_vv[j] = inv_h[j] * vv[j];
    }
    const double sherman = b / (1.0 + b * dot(vv.data(), inv_h_vv.data(), n));
    std::vector<double> dv(n, 0.0), dd(n, 0.0), col(n), s(n), t(n);
    const double eta_b_now = eta_b(lambda_f);
    for (std::size_t c = 0; c <= lambda; ++c) {
      double weight;
      if (c < lambda) {
        std::copy(y.begin() + static_cast<std::ptrdiff_t>(c * n),
                  y.begin() + static_cast<std::ptrdiff_t>((c + 1) * n), col.begin());
        weight = eta_b_now * w[c];
      } else {
        for (std::size_t j = 0; j < n; ++j) col[j] = p_c_[j] / d_[j];
        weight = c1(lambda_f);
      }
      const double ip = dot(vbar_.data(), col.data(), n);
      for (std::size_t j = 0; j < n; ++j) {
        t[j] = col[j] * ip - vbar_[j] * (ip * ip + gamma) / 2.0;
        s[j] = col[j] * col[j] - nv2 / gamma * (col[j] * vbar_[j]) * ip - 1.0;
      }
      const double ip_vt = dot(vbar_.data(), t.data(), n);
      for (std::size_t j = 0; j < n; ++j) {
        s[j] -= alpha / gamma * ((2.0 + nv2) * (t[j] * vbar_[j]) - nv2 * vv[j] * ip_vt);
      }
      const double ip_s = dot(inv_h_vv.data(), s.data(), n);
      for (std::size_t j = 0; j < n; ++j) s[j] = s[j] * inv_h[j] - sherman * inv_h_vv[j] * ip_s;
      const double ip_vs = dot(vv.data(), s.data(), n);
      for (std::size_t j = 0; j < n; ++j) {
        t[j] -= alpha * ((2.0 + nv2) * (s[j] * vbar_[j]) - vbar_[j] * ip_vs);
        dv[j] += weight * t[j];
        dd[j] += weight * s[j];
      }
    }
    const double norm_v = std::sqrt(nv2);
    double log_d = 0.0;
    for (std::size_t j = 0; j < n; ++j) {
      v_[j] += dv[j] / norm_v;
      d_[j] += dd[j] * d_[j];
      log_d += std::log(d_[j]);
    }
    // D <- D / det(A)^(1/d) (l. 20).
    const double root_det = std::exp(log_d / dn + std::log(1.0 + norm2(v_.data(), n)) / (2.0 * dn));
    for (double& dj : d_) dj /= root_det;

    // sigma (l. 21-22).
    double g_sigma = 0.0;
    for (std::size_t i = 0; i < lambda; ++i) {
      g_sigma += w[i] * (z_sq[order[i]] - dn);
    }
    g_sigma /= dn;
    sigma_ *= std::exp(eta_sigma / 2.0 * g_sigma);
    refresh();
  }

  void save_state(SolverState& state, const std::string& prefix) const override {
    state.doubles[prefix + "mean"] = mean_;
    state.doubles[prefix + "sigma"] = {sigma_};
    state.doubles[prefix + "d"] = d_;
    state.doubles[prefix + "v"] = v_;
    state.doubles[prefix + "p_sigma"] = p_sigma_;
    state.doubles[prefix + "p_c"] = p_c_;
  }

  void load_state(const SolverState& state, const std::string& prefix) override {
    const std::size_t n = num_params();
    const auto& mean = detail::finite_entry(state, prefix, "mean", n);
    const auto& sigma = detail::finite_entry(state, prefix, "sigma", 1, true);
    const auto& d = detail::finite_entry(state, prefix, "d", n, true);
    const auto& v = detail::finite_entry(state, prefix, "v", n);
    const auto& p_sigma = detail::finite_entry(state, prefix, "p_sigma", n);
    const auto& p_c = detail::finite_entry(state, prefix, "p_c", n);
    if (!(norm2(v.data(), n) > 0.0)) {
      throw std::invalid_argument("state entry '" + prefix + "v' must not be all zeros");
    }
    mean_ = mean;
    sigma_ = sigma[0];
    d_ = d;
    v_ = v;
    p_sigma_ = p_sigma;
    p_c_ = p_c;
    refresh();
  }

 private:
  static constexpr double kInfeasible = std::numeric_limits<double>::infinity();

  // vbar and |v|^2 from v.
  void refresh() {
    const std::size_t n = num_params();
    norm_v2_ = norm2(v_.data(), n);
    const double norm_v = std::sqrt(norm_v2_);
    vbar_.resize(n);
    for (std::size_t j = 0; j < n; ++j) vbar_[j] = v_[j] / norm_v;
  }

  // The learning rates of Table I at lambda_F feasible members.
  double dim() const { return static_cast<double>(num_params()); }
  double lambda() const { return static_cast<double>(population_size()); }
  double alpha_dist(double lambda_f) const {
    return h_inv_ * std::min(1.0, std::sqrt(lambda() / dim())) * std::sqrt(lambda_f / lambda());
  }
  double eta_stag(double lambda_f) const {
    return std::tanh((0.024 * lambda_f + 0.7 * dim() + 20.0) / (dim() + 12.0));
  }
  double eta_conv(double lambda_f) const {
    return 2.0 * std::tanh((0.025 * lambda_f + 0.75 * dim() + 10.0) / (dim() + 4.0));
  }
  // Table I's c_1, floored at 0 (see the header comment).
  double c1(double lambda_f) const {
    return std::max(0.0, c1_cma_ * (dim() - 5.0) / 6.0 * (lambda_f / lambda()));
  }
  double eta_b(double lambda_f) const {
    return std::tanh((std::min(0.02 * lambda_f, 3.0 * std::log(dim())) + 5.0) / (0.23 * dim() + 25.0));
  }

  std::vector<double> mean_;
  double sigma_;
  std::vector<double> d_;
  std::vector<double> v_;
  std::vector<double> p_sigma_;
  std::vector<double> p_c_;
  double eta_m_;
  std::vector<double> w_rank_;
  std::vector<double> w_hat_;
  double mu_eff_ = 0.0, c_sigma_ = 0.0, c_c_ = 0.0, c1_cma_ = 0.0, chi_d_ = 0.0, h_inv_ = 0.0;
  // Derived from v (refresh()).
  std::vector<double> vbar_;
  double norm_v2_ = 0.0;
};

void validate(const OptionSet& o, const std::string& prefix) {
  detail::common_distribution_options(o, prefix, 2, true);
  detail::option_in(o, prefix, "learning_rate_mean", 0, 1e6, true, false, false);
}

std::unique_ptr<DistributionStrategy> make(std::vector<double> x0, const OptionSet& o) {
  const auto c = detail::common_distribution_options(o, "", cma_default_population_size(x0.size()), true);
  return std::make_unique<CRFMNES>(std::move(x0), c, o.real("learning_rate_mean"));
}

}  // namespace

DistributionFamily crfmnes_family() {
  return {kName, "CRFMNES_SAMPLING", "crfmnes_sampling", &validate, &make};
}

}  // namespace evokit
