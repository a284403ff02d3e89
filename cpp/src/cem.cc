// CEM: the cross-entropy method with a diagonal Gaussian, a family of
// evokit/distribution.h.
//
//   P.-T. de Boer, D. P. Kroese, S. Mannor, R. Y. Rubinstein, "A Tutorial on
//   the Cross-Entropy Method", Annals of Operations Research 134 (2005)
//   19-67: the main CE algorithm for optimisation with normal densities (the
//   new parameters are the sample mean and the sample variance of the
//   elite, the best rho fraction of the sample), with its "smoothed
//   updating" v <- alpha v_elite + (1 - alpha) v.
//   I. Szita, A. Lorincz, "Learning Tetris Using the Noisy Cross-Entropy
//   Method", Neural Computation 18(12) (2006) 2936-2941: the noise added to
//   the variance after each update (their constant-noise variant Z_t = Z),
//   which keeps the distribution from collapsing early.
//
// The distribution N(mu, diag(sigma)^2). A generation:
//   x_k = mu + sigma * z_k,  z_k = z(g, k) ~ N(0, I)          (k = 1..lambda)
//   the elite: the N_e = max(1, round(elite_ratio * lambda)) members with
//   the smallest f (ties: member order)
//   mu_e     = 1/N_e sum_{elite} x_k
//   var_e    = 1/N_e sum_{elite} (x_k - mu_e)^2                (elementwise)
//   mu      <- alpha mu_e + (1 - alpha) mu
//   sigma^2 <- alpha var_e + (1 - alpha) sigma^2 + extra_variance
// Defaults: population_size 100 and elite_ratio 0.1 (the tutorial's and
// Szita & Lorincz's N = 100, rho = 0.1), alpha 0.5 (the tutorial finds
// 0.4 <= alpha <= 0.9 best; 1 is the unsmoothed update), extra_variance 0.
//
// Options: sigma0, population_size, seed, num_threads, elite_ratio (in
// (0, 1]), smoothing (alpha, in (0, 1]), extra_variance (>= 0).
// State: "cem.mean", "cem.sigma" (n doubles each).
#include <algorithm>
#include <cmath>
#include <limits>

#include "distribution_internal.h"
#include "option_checks.h"

namespace evokit {

namespace {

constexpr char kName[] = "CEM";
constexpr std::size_t kDefaultPopulation = 100;

class CEM final : public DistributionStrategy {
 public:
  CEM(std::vector<double> x0, const detail::CommonDistributionOptions& c, double elite_ratio,
      double smoothing, double extra_variance)
      : DistributionStrategy(kName, x0.size(), c.population_size, c.seed, c.num_threads, false),
        mean_(std::move(x0)),
        sigma_(mean_.size(), c.sigma0),
        elite_ratio_(elite_ratio),
        num_elites_(std::clamp<std::size_t>(
            static_cast<std::size_t>(std::llround(elite_ratio * static_cast<double>(population_size()))),
            1, population_size())),
        smoothing_(smoothing),
        extra_variance_(extra_variance) {}

  std::vector<double> center() const override { return mean_; }
  std::vector<double> stds() const override { return sigma_; }
  std::map<std::string, double> parameters() const override {
    return {{"population_size", static_cast<double>(population_size())},
            {"elite_ratio", elite_ratio_},
            {"num_elites", static_cast<double>(num_elites_)},
            {"smoothing", smoothing_},
            {"extra_variance", extra_variance_}};
  }

 protected:
  void transform(const double* z, double* x) const override {
    for (std::size_t j = 0; j < mean_.size(); ++j) x[j] = mean_[j] + sigma_[j] * z[j];
  }

  void update(const std::vector<double>& /*z*/, const std::vector<double>& x,
              const std::vector<double>& values) override {
    const std::size_t n = num_params();
    const std::vector<std::size_t> order = distribution::ranking(values);
    const double ne = static_cast<double>(num_elites_);
    std::vector<double> mu_e(n, 0.0), var_e(n, 0.0);
    for (std::size_t i = 0; i < num_elites_; ++i) {
      const double* xi = x.data() + order[i] * n;
      for (std::size_t j = 0; j < n; ++j) mu_e[j] += xi[j];
    }
    for (double& v : mu_e) v /= ne;
    for (std::size_t i = 0; i < num_elites_; ++i) {
      const double* xi = x.data() + order[i] * n;
      for (std::size_t j = 0; j < n; ++j) var_e[j] += (xi[j] - mu_e[j]) * (xi[j] - mu_e[j]);
    }
    const double a = smoothing_;
    for (std::size_t j = 0; j < n; ++j) {
      const double var = a * (var_e[j] / ne) + (1.0 - a) * sigma_[j] * sigma_[j] + extra_variance_;
      mean_[j] = a * mu_e[j] + (1.0 - a) * mean_[j];
      // A variance of 0 (one elite, no extra variance) keeps the smallest
      // positive standard deviation rather than a degenerate distribution.
      sigma_[j] = std::max(std::sqrt(var), std::numeric_limits<double>::min());
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
  double elite_ratio_;
  std::size_t num_elites_;
  double smoothing_;
  double extra_variance_;
};

void validate(const OptionSet& o, const std::string& prefix) {
  detail::common_distribution_options(o, prefix, 2, false);
  detail::option_in(o, prefix, "elite_ratio", 0, 1, true, false, false);
  detail::option_in(o, prefix, "smoothing", 0, 1, true, false, false);
  detail::option_in(o, prefix, "extra_variance", 0, 1e12, false, false, false);
}

std::unique_ptr<DistributionStrategy> make(std::vector<double> x0, const OptionSet& o) {
  const auto c = detail::common_distribution_options(o, "", kDefaultPopulation, false);
  return std::make_unique<CEM>(std::move(x0), c, o.real("elite_ratio"), o.real("smoothing"),
                               o.real("extra_variance"));
}

}  // namespace

DistributionFamily cem_family() {
  return {kName, "CEM_SAMPLING", "cem_sampling", &validate, &make};
}

}  // namespace evokit
