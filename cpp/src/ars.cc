// ARS: augmented random search as an ask/tell strategy, a family of
// evokit/distribution.h (ask/tell only: its policy family is ARS_SAMPLING,
// GaussianSolver with ARS's options, so its registry entry has no
// SamplingConfig type; the two share ars_select of gaussian_solver.h).
//
//   H. Mania, A. Guy, B. Recht, "Simple random search of static linear
//   policies is competitive for reinforcement learning", NeurIPS 2018
//   (arXiv:1803.07055): Algorithm 2 without the state normalisation (ARS V1,
//   and V1-t with b < N).
//
// The "distribution": theta and the exploration noise nu (sigma0), fixed.
// A generation of lambda = 2N members is N mirrored pairs (distribution.h:
// members 2p, 2p+1 share z_p = delta_p):
//   x = theta + nu delta_p  and  theta - nu delta_p               (line 5)
//   r+_p = -f(theta + nu delta_p), r-_p = -f(theta - nu delta_p)  (rewards: minimisation)
//   the top b pairs by max(r+_p, r-_p) (ties: the earlier pair)   (line 6)
//   sigma_R: the standard deviation of those 2b rewards (1 if 0)
//   theta <- theta + alpha / (b sigma_R) sum_{top b} (r+_p - r-_p) delta_p   (line 7)
// The step is invariant to scaling the rewards; rewards beyond 2^512 in
// magnitude (where sigma_R^2 or a difference would overflow to inf and the
// step to NaN) are scaled by a power of two first, which changes no other
// bit of the computation.
// Defaults: alpha (step_size) 0.02 and b = N (top_directions 0), as
// ARS_SAMPLING's; population_size 4 + floor(3 ln n) rounded up to even
// (EvoKit's; the paper tunes N per task).
//
// Options: sigma0 (nu), population_size, seed, num_threads, step_size
// (alpha, > 0), top_directions (b, >= 0; 0 or more than N: all N).
// State: "ars.mean" (theta, n doubles).
#include <algorithm>
#include <cmath>

#include "distribution_internal.h"
#include "evokit/gaussian_solver.h"
#include "option_checks.h"

namespace evokit {

namespace {

constexpr char kName[] = "ARS";

class ARS final : public DistributionStrategy {
 public:
  ARS(std::vector<double> x0, const detail::CommonDistributionOptions& c, double step_size,
      std::size_t top_directions)
      : DistributionStrategy(kName, x0.size(), c.population_size, c.seed, c.num_threads, true),
        mean_(std::move(x0)),
        nu_(c.sigma0),
        step_size_(step_size),
        top_(top_directions == 0 ? c.population_size / 2
                                 : std::min(top_directions, c.population_size / 2)) {}

  std::vector<double> center() const override { return mean_; }
  std::vector<double> stds() const override { return std::vector<double>(mean_.size(), nu_); }
  std::map<std::string, double> parameters() const override {
    return {{"population_size", static_cast<double>(population_size())},
            {"step_size", step_size_},
            {"top_directions", static_cast<double>(top_)},
            {"sigma", nu_}};
  }

 protected:
  void transform(const double* z, double* x) const override {
    for (std::size_t j = 0; j < mean_.size(); ++j) x[j] = mean_[j] + nu_ * z[j];
  }

  void update(const std::vector<double>& z, const std::vector<double>& /*x*/,
              const std::vector<double>& values) override {
    const std::size_t n = num_params();
    const std::size_t pairs = population_size() / 2;
    std::vector<double> r_plus(pairs), r_minus(pairs);
    for (std::size_t p = 0; p < pairs; ++p) {
      r_plus[p] = -values[2 * p];
      r_minus[p] = -values[2 * p + 1];
    }
    ArsSelection s = ars_select(r_plus, r_minus, top_);
    // An infinite f-value among the top directions gives no step: refuse it
    // before changing anything.
    double largest = 0.0;
    for (std::size_t p : s.top) {
      for (std::size_t k : {2 * p, 2 * p + 1}) {
        if (!std::isfinite(values[k])) {
          throw std::invalid_argument("ARS: values[" + std::to_string(k) + "] is " +
                                      detail::format_g(values[k]) +
                                      "; the members of the top directions need finite f-values");
        }
        largest = std::max(largest, std::fabs(values[k]));
      }
    }
    if (largest > 0x1.0p512) {
      // Scale by 2^-e (exact) so that the largest reward is below 1: the
      // same selection, a finite sigma_R and finite differences.
      int e = 0;
      std::frexp(largest, &e);
      for (std::size_t p = 0; p < pairs; ++p) {
        r_plus[p] = std::ldexp(r_plus[p], -e);
        r_minus[p] = std::ldexp(r_minus[p], -e);
      }
      s = ars_select(r_plus, r_minus, top_);
    }
    const double scale = step_size_ / (static_cast<double>(top_) * s.sigma_r);
    std::vector<double> step(n, 0.0);
    for (std::size_t p : s.top) {
      const double c = r_plus[p] - r_minus[p];
      const double* delta = z.data() + 2 * p * n;
      for (std::size_t j = 0; j < n; ++j) step[j] += c * delta[j];
    }
    for (std::size_t j = 0; j < n; ++j) mean_[j] += scale * step[j];  // line 7
  }

  void save_state(SolverState& state, const std::string& prefix) const override {
    state.doubles[prefix + "mean"] = mean_;
  }

  void load_state(const SolverState& state, const std::string& prefix) override {
    mean_ = detail::finite_entry(state, prefix, "mean", num_params());
  }

 private:
  std::vector<double> mean_;
  double nu_;
  double step_size_;
  std::size_t top_;
};

void validate(const OptionSet& o, const std::string& prefix) {
  detail::common_distribution_options(o, prefix, 2, true);
  detail::option_in(o, prefix, "step_size", 0, 1e12, true, false, false);
  const std::int64_t b = o.integer("top_directions");
  if (b < 0) {
    throw std::invalid_argument(prefix + "top_directions must be >= 0 (0: all), got " +
                                std::to_string(b));
  }
}

std::unique_ptr<DistributionStrategy> make(std::vector<double> x0, const OptionSet& o) {
  const auto c = detail::common_distribution_options(o, "", cma_default_population_size(x0.size()), true);
  return std::make_unique<ARS>(std::move(x0), c, o.real("step_size"),
                               static_cast<std::size_t>(o.integer("top_directions")));
}

}  // namespace

DistributionFamily ars_family() {
  // Ask/tell only: the policy family with this meaning is ARS_SAMPLING.
  return {kName, nullptr, nullptr, &validate, &make};
}

}  // namespace evokit
