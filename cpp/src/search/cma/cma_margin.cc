// CMABase's margin correction for integer variables: CMA-ES with margin.
//
//   R. Hamano, S. Saito, M. Nomura, S. Shirakawa, "CMA-ES with Margin:
//   Lower-Bounding Marginal Probability for Mixed-Integer Black-Box
//   Optimization", GECCO 2022, arXiv:2205.13482, Sec. 4 (the margin
//   correction after the CMA update) with the default margin
//   alpha = 1 / (n lambda) of its experiments.
//
// The integer coordinate i is generated as v_i = m_i + A_i sigma y_i,
// y ~ N(0, C), and encoded to the integer k whose cell (k - 1/2, k + 1/2]
// holds v_i (clamped to the integers within the bounds), so its marginal is
// N(m_i, s^2), s = sigma A_i sqrt(C_ii). After each update, with k the
// integer of m_i:
//   interior k (integers on both sides): p_low = Pr(v_i <= k - 1/2) and
//     p_up = Pr(v_i > k + 1/2) are raised to at least alpha / 2; the excess
//     of p_low + p_up + p_mid over 1 is then taken from the three in
//     proportion to their parts above alpha / 2; m_i and A_i are solved
//     (sigma and C fixed) so that the corrected probabilities hold:
//       k - 1/2 = m_i - t_low s,  k + 1/2 = m_i + t_up s,
//       t = Phi^-1(1 - p),  s = sigma A_i sqrt(C_ii), i.e.
//       A_i = 1 / ((t_low + t_up) sigma sqrt(C_ii)),
//       m_i = ((k - 1/2) t_up + (k + 1/2) t_low) / (t_low + t_up);
//   edge k (the smallest or largest integer of a bounded range): the
//     probability of crossing its one threshold b is raised to alpha by
//     moving the mean, m_i = b +- s Phi^-1(1 - alpha) (A_i unchanged).
// Nothing changes where the probabilities are already at least the margin,
// so margin_correction is the identity on a wide distribution.
#include <algorithm>
#include <cmath>

#include "evokit/cma_es.h"

namespace evokit {

namespace detail {
namespace {

// Pr(N(0, 1) > t).
double upper_tail(double t) { return 0.5 * std::erfc(t / std::sqrt(2.0)); }

// t with Pr(N(0, 1) > t) = p for p in (0, 1/2]: t >= 0. Newton's method on
// the monotone upper_tail, safeguarded by bisection.
double upper_quantile(double p) {
  double lo = 0.0;
  double hi = 40.0;  // upper_tail(40) underflows far below any p used here
  double t = std::sqrt(-2.0 * std::log(2.0 * p));
  t = std::min(std::max(t, lo), hi);
  for (int it = 0; it < 200; ++it) {
    const double f = upper_tail(t) - p;  // decreasing in t
    if (f > 0) {
      lo = t;
    } else {
      hi = t;
    }
    const double density = 0.3989422804014327 * std::exp(-0.5 * t * t);  // 1 / sqrt(2 pi)
    double next = t + f / density;
    if (!(next > lo && next < hi)) next = 0.5 * (lo + hi);
    if (std::fabs(next - t) <= 1e-15 * std::max(1.0, t)) return next;
    t = next;
  }
  return t;
}

}  // namespace
}  // namespace detail

void CMABase::margin_correction() {
  const double alpha = margin_;
  CMAState& s = state_;
  const std::size_t n = num_params();
  // Probabilities are kept inside (0, 1/2] so that the quantiles stay finite.
  constexpr double kTiny = 1e-300;
  for (std::size_t i = 0; i < n; ++i) {
    if (!is_integer_[i] || int_lo_[i] == int_hi_[i]) continue;
    double& m = s.mean[i];
    double& a = s.affine[i];
    const double sd_c = s.sigma * coord_std(i);  // sigma sqrt(C_ii)
    const double sd = sd_c * a;
    const double k = std::min(std::max(std::ceil(m - 0.5), int_lo_[i]), int_hi_[i]);
    const bool has_low = k > int_lo_[i];
    const bool has_up = k < int_hi_[i];
    const double low = k - 0.5;
    const double up = k + 0.5;
    if (has_low && has_up) {
      double p_low = detail::upper_tail((m - low) / sd);
      double p_up = detail::upper_tail((up - m) / sd);
      if (std::min(p_low, p_up) >= 0.5 * alpha) continue;
      const double p_mid = 1.0 - p_low - p_up;
      p_low = std::max(p_low, 0.5 * alpha);
      p_up = std::max(p_up, 0.5 * alpha);
      const double excess = p_low + p_up + p_mid - 1.0;
      const double above = p_low + p_up + p_mid - 1.5 * alpha;
      p_low -= excess * (p_low - 0.5 * alpha) / above;
      p_up -= excess * (p_up - 0.5 * alpha) / above;
      const double t_low = detail::upper_quantile(std::min(std::max(p_low, kTiny), 0.5));
      const double t_up = detail::upper_quantile(std::min(std::max(p_up, kTiny), 0.5));
      a = (up - low) / ((t_low + t_up) * sd_c);
      m = (low * t_up + up * t_low) / (t_low + t_up);
    } else if (has_low || has_up) {
      const double b = has_low ? low : up;
      if (detail::upper_tail(std::fabs(m - b) / sd) >= alpha) continue;
      const double dist = sd * detail::upper_quantile(alpha);
      m = has_low ? b + dist : b - dist;
    }
  }
}

}  // namespace evokit
