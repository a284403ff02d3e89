// SNES: separable natural evolution strategies, a family of
// evokit/distribution.h.
//
//   D. Wierstra, T. Schaul, T. Glasmachers, Y. Sun, J. Peters, J. Schmidhuber,
//   "Natural Evolution Strategies", JMLR 15 (2014) 949-980: Algorithm 6
//   (SNES), the default parameters of Table 1, the utilities of section 3.1.
//   T. Schaul, T. Glasmachers, J. Schmidhuber, "High Dimensions and Heavy
//   Tails for Natural Evolution Strategies", GECCO 2011 (SNES's first paper).
//
// The distribution N(mu, diag(sigma)^2). A generation (d = n):
//   s_k = z(g, k) ~ N(0, I),  x_k = mu + sigma * s_k          (k = 1..lambda)
//   sort by f (best first), u_i the NES utilities (distribution.h)
//   grad_mu    = sum_i u_i s_i
//   grad_sigma = sum_i u_i (s_i^2 - 1)                        (elementwise)
//   mu    <- mu + eta_mu * sigma * grad_mu
//   sigma <- sigma * exp(eta_sigma / 2 * grad_sigma)
// Defaults (Table 1): lambda = 4 + floor(3 ln d), eta_mu = 1,
// eta_sigma = (3 + ln d) / (5 sqrt(d)); sigma starts at sigma0 everywhere.
//
// Options: sigma0, population_size, seed, num_threads, learning_rate_mean
// (eta_mu, > 0), learning_rate_sigma (eta_sigma, > 0; 0: the default).
// State: "snes.mean", "snes.sigma" (n doubles each).
#include <cmath>

#include "search/distribution/distribution_internal.h"
#include "search/option_checks.h"

namespace evokit {

namespace {

constexpr char kName[] = "SNES";

class SNES final : public DistributionStrategy {
 public:
  SNES(std::vector<double> x0, const detail::CommonDistributionOptions& c, double eta_mu,
       double eta_sigma)
      : DistributionStrategy(kName, x0.size(), c.population_size, c.seed, c.num_threads, false),
        mean_(std::move(x0)),
        sigma_(mean_.size(), c.sigma0),
        eta_mu_(eta_mu),
        eta_sigma_(eta_sigma != 0.0 ? eta_sigma
                                    : (3.0 + std::log(static_cast<double>(mean_.size()))) /
                                          (5.0 * std::sqrt(static_cast<double>(mean_.size())))),
        utilities_(distribution::nes_utilities(population_size())) {}

  std::vector<double> center() const override { return mean_; }
  std::vector<double> stds() const override { return sigma_; }
  std::map<std::string, double> parameters() const override {
    return {{"learning_rate_mean", eta_mu_},
            {"learning_rate_sigma", eta_sigma_},
            {"population_size", static_cast<double>(population_size())}};
  }

 protected:
  void transform(const double* z, double* x) const override {
    for (std::size_t j = 0; j < mean_.size(); ++j) x[j] = mean_[j] + sigma_[j] * z[j];
  }

  void update(const std::vector<double>& z, const std::vector<double>& /*x*/,
              const std::vector<double>& values) override {
    const std::size_t n = num_params();
    const std::vector<std::size_t> order = distribution::ranking(values);
    std::vector<double> grad_mu(n, 0.0), grad_sigma(n, 0.0);
    for (std::size_t i = 0; i < order.size(); ++i) {
      const double u = utilities_[i];
      const double* s = z.data() + order[i] * n;
      for (std::size_t j = 0; j < n; ++j) {
        grad_mu[j] += u * s[j];
        grad_sigma[j] += u * (s[j] * s[j] - 1.0);
      }
    }
    for (std::size_t j = 0; j < n; ++j) {
      mean_[j] += eta_mu_ * sigma_[j] * grad_mu[j];
      sigma_[j] *= std::exp(0.5 * eta_sigma_ * grad_sigma[j]);
    }
  }

  void save_state(SolverState& state, const std::string& prefix) const override {
    state.doubles[prefix + "mean"] = mean_;
    state.doubles[prefix + "sigma"] = sigma_;
  }

  void load_state(const SolverState& state, const std::string& prefix) override {
    const std::size_t n = num_params();
    const auto& mean = detail::finite_entry(state, prefix, "mean", n);
    const auto& sigma = detail::finite_entry(state, prefix, "sigma", n, true);
    mean_ = mean;
    sigma_ = sigma;
  }

 private:
  std::vector<double> mean_;
  std::vector<double> sigma_;
  double eta_mu_;
  double eta_sigma_;
  std::vector<double> utilities_;
};

void validate(const OptionSet& o, const std::string& prefix) {
  detail::common_distribution_options(o, prefix, 2, false);
  detail::option_in(o, prefix, "learning_rate_mean", 0, 1e6, true, false, false);
  detail::option_in(o, prefix, "learning_rate_sigma", 0, 1e6, true, false, true);
}

std::unique_ptr<DistributionStrategy> make(std::vector<double> x0, const OptionSet& o) {
  const auto c = detail::common_distribution_options(o, "", cma_default_population_size(x0.size()), false);
  return std::make_unique<SNES>(std::move(x0), c, o.real("learning_rate_mean"),
                                o.real("learning_rate_sigma"));
}

}  // namespace

DistributionFamily snes_family() {
  return {kName, "SNES_SAMPLING", "snes_sampling", &validate, &make};
}

}  // namespace evokit
