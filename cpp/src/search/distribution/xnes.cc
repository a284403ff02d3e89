// xNES: exponential natural evolution strategies, a family of
// evokit/distribution.h.
//
//   T. Glasmachers, T. Schaul, Y. Sun, D. Wierstra, J. Schmidhuber,
//   "Exponential Natural Evolution Strategies", GECCO 2010 (xNES's paper:
//   the exponential parameterisation A = sigma * B, section 3).
//   D. Wierstra, T. Schaul, T. Glasmachers, Y. Sun, J. Peters, J. Schmidhuber,
//   "Natural Evolution Strategies", JMLR 15 (2014) 949-980: Algorithm 5
//   (xNES), the default parameters of Table 1, the utilities of section 3.1.
//
// The distribution N(mu, sigma^2 B B^T) with det B = 1 (B starts at I). A
// generation (d = n):
//   s_k = z(g, k) ~ N(0, I),  x_k = mu + sigma * B s_k             (k = 1..lambda)
//   sort by f (best first), u_i the NES utilities (distribution.h)
//   G_delta = sum_i u_i s_i                                          (Alg. 5)
//   G_M     = sum_i u_i (s_i s_i^T - I)
//   G_sigma = tr(G_M) / d
//   G_B     = G_M - G_sigma I
//   mu    <- mu + eta_mu * sigma * B G_delta
//   sigma <- sigma * exp(eta_sigma / 2 * G_sigma)
//   B     <- B * expm(eta_B / 2 * G_B)
// (JMLR's Algorithm 5 writes the sample as mu + sigma B^T s with the mean
// step sigma B G_delta; GECCO 2010, eq. (5) and Algorithm 1, uses A s and
// A G_delta consistently with A <- A expm(eta_A / 2 G_M): the form used
// here.) G_B is symmetric and traceless, so expm(eta_B / 2 G_B) =
// Q diag(exp(eta_B / 2 lambda_j)) Q^T from its symmetric eigendecomposition
// (evokit/symmetric_eigen.h) keeps det B = 1.
// Defaults (Table 1): lambda = 4 + floor(3 ln d), eta_mu = 1,
// eta_sigma = eta_B = 3 (3 + ln d) / (5 d sqrt(d)).
//
// Options: sigma0, population_size, seed, num_threads, learning_rate_mean
// (eta_mu, > 0), learning_rate_sigma (eta_sigma, > 0; 0: the default),
// learning_rate_shape (eta_B, > 0; 0: the default).
// State: "xnes.mean" (n), "xnes.sigma" (1), "xnes.b" (n x n, row-major).
// Time per sample O(n^2), per update O(lambda n^2 + n^3); memory O(n^2).
#include <cmath>

#include "search/distribution/distribution_internal.h"
#include "evokit/symmetric_eigen.h"
#include "common/parallel.h"
#include "search/option_checks.h"

namespace evokit {

namespace {

constexpr char kName[] = "XNES";

double default_eta(std::size_t n) {
  const double d = static_cast<double>(n);
  return 3.0 * (3.0 + std::log(d)) / (5.0 * d * std::sqrt(d));
}

class XNES final : public DistributionStrategy {
 public:
  XNES(std::vector<double> x0, const detail::CommonDistributionOptions& c, double eta_mu,
       double eta_sigma, double eta_b)
      : DistributionStrategy(kName, x0.size(), c.population_size, c.seed, c.num_threads, false),
        mean_(std::move(x0)),
        sigma_(c.sigma0),
        b_(mean_.size() * mean_.size(), 0.0),
        eta_mu_(eta_mu),
        eta_sigma_(eta_sigma != 0.0 ? eta_sigma : default_eta(mean_.size())),
        eta_b_(eta_b != 0.0 ? eta_b : default_eta(mean_.size())),
        utilities_(distribution::nes_utilities(population_size())) {
    for (std::size_t j = 0; j < mean_.size(); ++j) b_[j * mean_.size() + j] = 1.0;
  }

  std::vector<double> center() const override { return mean_; }
  std::vector<double> stds() const override {
    // sqrt of the diagonal of sigma^2 B B^T.
    const std::size_t n = num_params();
    std::vector<double> s(n);
    for (std::size_t i = 0; i < n; ++i) {
      double sum = 0.0;
      for (std::size_t k = 0; k < n; ++k) sum += b_[i * n + k] * b_[i * n + k];
      s[i] = sigma_ * std::sqrt(sum);
    }
    return s;
  }
  std::map<std::string, double> parameters() const override {
    return {{"learning_rate_mean", eta_mu_},
            {"learning_rate_sigma", eta_sigma_},
            {"learning_rate_shape", eta_b_},
            {"population_size", static_cast<double>(population_size())}};
  }

 protected:
  void transform(const double* z, double* x) const override {
    sigma_b_times(z, x);
    for (std::size_t i = 0; i < num_params(); ++i) x[i] += mean_[i];
  }

  // out = sigma * B v.
  void sigma_b_times(const double* v, double* out) const {
    const std::size_t n = num_params();
    for (std::size_t i = 0; i < n; ++i) {
      const double* row = b_.data() + i * n;
      double bv = 0.0;
      for (std::size_t k = 0; k < n; ++k) bv += row[k] * v[k];
      out[i] = sigma_ * bv;
    }
  }

  void update(const std::vector<double>& z, const std::vector<double>& /*x*/,
              const std::vector<double>& values) override {
    const std::size_t n = num_params();
    const std::size_t lambda = population_size();
    const std::vector<std::size_t> order = distribution::ranking(values);
    const double dn = static_cast<double>(n);
    const int threads = threads_for(static_cast<double>(lambda * n * n));

    // G_delta = sum_i u_i s_i; G_M = sum_i u_i (s_i s_i^T - I) (Alg. 5), one
    // row of G_M per item (each sum in rank order: no dependence on threads).
    std::vector<double> g_delta(n, 0.0), g_m(n * n, 0.0);
    for (std::size_t i = 0; i < lambda; ++i) {
      const double* s = z.data() + order[i] * n;
      for (std::size_t j = 0; j < n; ++j) g_delta[j] += utilities_[i] * s[j];
    }
    detail::parallel_items(n, detail::team_size(n, threads), [&](std::size_t a) {
      double* row = g_m.data() + a * n;
      for (std::size_t i = 0; i < lambda; ++i) {
        const double* s = z.data() + order[i] * n;
        const double us = utilities_[i] * s[a];
        for (std::size_t b = 0; b < n; ++b) row[b] += us * s[b] - (a == b ? utilities_[i] : 0.0);
      }
    });
    // G_sigma = tr(G_M) / d; G_B = G_M - G_sigma I (Alg. 5).
    double trace = 0.0;
    for (std::size_t j = 0; j < n; ++j) trace += g_m[j * n + j];
    const double g_sigma = trace / dn;
    for (std::size_t j = 0; j < n; ++j) g_m[j * n + j] -= g_sigma;  // now G_B

    // mu <- mu + eta_mu sigma B G_delta (Alg. 5), with the old sigma and B.
    std::vector<double> step(n);
    sigma_b_times(g_delta.data(), step.data());
    for (std::size_t j = 0; j < n; ++j) mean_[j] += eta_mu_ * step[j];

    // sigma <- sigma exp(eta_sigma / 2 G_sigma) (Alg. 5).
    sigma_ *= std::exp(0.5 * eta_sigma_ * g_sigma);

    // B <- B expm(eta_B / 2 G_B) (Alg. 5): expm of the symmetric matrix from
    // its eigendecomposition G_B = Q diag(l) Q^T.
    const SymmetricEigen eig = symmetric_eigen(g_m.data(), n, threads);
    std::vector<double> e(n);
    for (std::size_t j = 0; j < n; ++j) e[j] = std::exp(0.5 * eta_b_ * eig.values[j]);
    std::vector<double> expm(n * n);
    detail::parallel_items(n, detail::team_size(n, threads), [&](std::size_t a) {
      for (std::size_t b = 0; b < n; ++b) {
        double sum = 0.0;
        for (std::size_t j = 0; j < n; ++j) sum += e[j] * eig.vectors[j * n + a] * eig.vectors[j * n + b];
        expm[a * n + b] = sum;
      }
    });
    std::vector<double> next(n * n);
    detail::parallel_items(n, detail::team_size(n, threads), [&](std::size_t i) {
      double* out = next.data() + i * n;
      for (std::size_t a = 0; a < n; ++a) {
        const double bia = b_[i * n + a];
        const double* row = expm.data() + a * n;
        for (std::size_t b = 0; b < n; ++b) out[b] += bia * row[b];
      }
    });
    b_ = std::move(next);
  }

  void save_state(SolverState& state, const std::string& prefix) const override {
    state.doubles[prefix + "mean"] = mean_;
    state.doubles[prefix + "sigma"] = {sigma_};
    state.doubles[prefix + "b"] = b_;
  }

  void load_state(const SolverState& state, const std::string& prefix) override {
    const std::size_t n = num_params();
    const auto& mean = detail::finite_entry(state, prefix, "mean", n);
    const auto& sigma = detail::finite_entry(state, prefix, "sigma", 1, true);
    const auto& b = detail::finite_entry(state, prefix, "b", n * n);
    mean_ = mean;
    sigma_ = sigma[0];
    b_ = b;
  }

 private:
  std::vector<double> mean_;
  double sigma_;
  std::vector<double> b_;  // n x n, row-major
  double eta_mu_;
  double eta_sigma_;
  double eta_b_;
  std::vector<double> utilities_;
};

void validate(const OptionSet& o, const std::string& prefix) {
  detail::common_distribution_options(o, prefix, 2, false);
  detail::option_in(o, prefix, "learning_rate_mean", 0, 1e6, true, false, false);
  detail::option_in(o, prefix, "learning_rate_sigma", 0, 1e6, true, false, true);
  detail::option_in(o, prefix, "learning_rate_shape", 0, 1e6, true, false, true);
}

std::unique_ptr<DistributionStrategy> make(std::vector<double> x0, const OptionSet& o) {
  const auto c = detail::common_distribution_options(o, "", cma_default_population_size(x0.size()), false);
  return std::make_unique<XNES>(std::move(x0), c, o.real("learning_rate_mean"),
                                o.real("learning_rate_sigma"), o.real("learning_rate_shape"));
}

}  // namespace

DistributionFamily xnes_family() {
  return {kName, "XNES_SAMPLING", "xnes_sampling", &validate, &make};
}

}  // namespace evokit
