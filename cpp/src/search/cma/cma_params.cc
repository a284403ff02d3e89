// CMA-ES strategy parameters for dimension n and population size lambda: the
// defaults of Hansen's tutorial (Table 1, Eqs. (48)-(58)) with the two
// changes Hansen's reference implementation pycma makes to them (its
// defaults since pycma 2.x; cma/options_parameters.py, sigma_adaptation.py):
// - full CMA-ES's rank-mu rate adds 0.25 to the numerator of Eq. (58)
//   (pycma's rankmu_offset): cmu = min(1 - c1, 2 (mueff - 2 + 1/mueff + 1/4)
//   / ((n + 2)^2 + mueff));
// - the step-size path's rate is c_sigma = min(1/2, (mueff + 2) / (n + mueff
//   + 3)) (pycma's CSA cs, _CSA_cs_max) instead of Eq. (55)'s
//   (mueff + 2) / (n + mueff + 5); d_sigma keeps Eq. (55)'s form.
// They matter most at small n (cmu 1.48x and c_sigma 1.12x the tutorial's
// at n = 2, 1.17x and 1.12x at n = 10, 1.08x and 1.02x at n = 100), where
// they save 10 % to 13 % of the evaluations on ill-conditioned functions
// (bench/README.md).
//
// Separable CMA-ES (Ros & Hansen 2008: only the diagonal of C) takes
// pycma's separable learning rates (options_parameters.py: c1_sep, cmu_sep,
// cc_sep) instead of Ros and Hansen's (the tutorial's c1 and cmu scaled by
// (n + 2) / 3, and Eq. (56)'s c_c):
//   c1  = 1 / (n + 2 sqrt(n) + mueff / n),
//   cmu = min(1 - c1, (1/4 + mueff + 1/mueff - 2) / (n + 4 sqrt(n) + mueff / 2)),
//   c_c = (1 + 1/n + mueff/n) / (sqrt(n) + 1/n + 2 mueff / n),
// and pycma's c_sigma as full CMA-ES does. c_c ~ 1/sqrt(n) keeps a longer
// memory than Eq. (56)'s ~4/n (0.105 against 0.039 at n = 100): over 40
// seeds on Rosenbrock at n = 100 Ros and Hansen's rates needed 1.21x
// pycma's evaluations (ERT), these 1.07x; on the other functions of
// bench/blackbox.py the two sets are within 2 % of each other
// (bench/README.md). Eqs. (50)-(52) bound the negative weights with the
// rates the update uses.
//
//   N. Hansen, "The CMA Evolution Strategy: A Tutorial", arXiv:1604.00772
//   (2016); `Eq. (n)` marks the tutorial's equations.
//   N. Hansen et al., pycma, https://github.com/CMA-ES/pycma.
//   R. Ros, N. Hansen, "A Simple Modification in CMA-ES Achieving Linear
//   Time and Space Complexity", PPSN X (2008): separable CMA-ES.
#include "evokit/cma_es.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

namespace evokit {

namespace detail {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

}  // namespace
}  // namespace detail

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
  // pycma's rank-mu offset 1/4 in the numerator of Eq. (58) and of its
  // separable cmu.
  constexpr double rankmu_offset = 0.25;
  const double sqrt_n = std::sqrt(dn);
  if (separable) {  // pycma's c1_sep, cmu_sep
    p.c1 = 1.0 / (dn + 2.0 * sqrt_n + p.mueff / dn);
    p.cmu = std::min(1.0 - p.c1, (rankmu_offset + p.mueff + 1.0 / p.mueff - 2.0) /
                                     (dn + 4.0 * sqrt_n + p.mueff / 2.0));
  } else {  // Eq. (57), (58) with alpha_cov = 2
    constexpr double alpha_cov = 2.0;
    p.c1 = alpha_cov / ((dn + 1.3) * (dn + 1.3) + p.mueff);
    p.cmu = std::min(1.0 - p.c1, alpha_cov * (p.mueff - 2.0 + 1.0 / p.mueff + rankmu_offset) /
                                     ((dn + 2.0) * (dn + 2.0) + alpha_cov * p.mueff / 2.0));
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
  p.c_sigma = std::min(0.5, (p.mueff + 2.0) / (dn + p.mueff + 3.0));  // pycma's cs
  p.d_sigma = 1.0 + 2.0 * std::max(0.0, std::sqrt((p.mueff - 1.0) / (dn + 1.0)) - 1.0) + p.c_sigma;  // Eq. (55)
  p.cc = separable ? (1.0 + 1.0 / dn + p.mueff / dn) / (sqrt_n + 1.0 / dn + 2.0 * p.mueff / dn)  // pycma's cc_sep
                   : (4.0 + p.mueff / dn) / (dn + 4.0 + 2.0 * p.mueff / dn);                   // Eq. (56)
  p.chi_n = std::sqrt(dn) * (1.0 - 1.0 / (4.0 * dn) + 1.0 / (21.0 * dn * dn));
  // Decompose once more than 1 / (10 n (c1 + cmu)) generations have passed,
  // i.e. more than lambda / (c1 + cmu) / n / 10 evaluations, as in Hansen's
  // reference code and pycma.
  p.eigen_interval = static_cast<std::int64_t>(std::floor(1.0 / (10.0 * dn * (p.c1 + p.cmu)))) + 1;
  // TPA's damping (pycma's CMAAdaptSigmaTPA.initialize_settings).
  p.tpa_damp = 0.7 + 2.0 * std::log(dn) +
               2.0 * std::log(std::max(1.0, static_cast<double>(lambda) - dn));
  return p;
}

double cma_update_sigma_path(const CMAParams& p, double* p_sigma, const double* white) {
  const double ps_coef = std::sqrt(p.c_sigma * (2.0 - p.c_sigma) * p.mueff);
  double ps_norm2 = 0.0;
  for (std::size_t j = 0; j < p.num_params; ++j) {
    p_sigma[j] = (1.0 - p.c_sigma) * p_sigma[j] + ps_coef * white[j];
    ps_norm2 += p_sigma[j] * p_sigma[j];
  }
  return std::sqrt(ps_norm2);
}

double cma_csa_step_size(const CMAParams& p, double sigma, double ps_norm) {
  return sigma * std::exp(p.c_sigma / p.d_sigma * (ps_norm / p.chi_n - 1.0));
}

}  // namespace evokit
