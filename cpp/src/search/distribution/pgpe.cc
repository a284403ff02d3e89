// PGPE with ClipUp: parameter-exploring policy gradients, a family of
// evokit/distribution.h, in the configuration pgpelib and EvoTorch use for
// locomotion.
//
//   F. Sehnke, C. Osendorfer, T. Rueckstiess, A. Graves, J. Peters,
//   J. Schmidhuber, "Parameter-exploring policy gradients", Neural Networks
//   23(4) (2010) 551-559: section 2 (the likelihood gradients of the mean,
//   (theta - mu) / sigma^2, and of the standard deviations,
//   ((theta - mu)^2 - sigma^2) / sigma^3) and its symmetric sampling (the
//   mean from the difference r+ - r- of a pair, the standard deviations from
//   the pair's average against the baseline b).
//   N. E. Toklu, P. Liskowski, R. K. Srivastava, "ClipUp: A Simple and
//   Powerful Optimizer for Distribution-based Policy Evolution", PPSN 2020
//   (arXiv:2008.02387): Algorithm 1 (ClipUp) and its recommendation
//   max_speed = 2 step_size (section 4).
//
// The distribution N(mu, diag(sigma)^2). A generation of lambda = 2K
// members is K mirrored pairs (distribution.h: members 2p, 2p+1 share z_p):
//   eps_p = sigma * z_p,  x = mu + eps_p and mu - eps_p
//   u = centred ranks of the fitnesses -f over all 2K members (pgpelib's
//       default shaping): rank r = 0 (worst) .. 2K-1 (best),
//       u = r / (2K - 1) - 1/2 (ties: member order, the earlier ranks better)
//   u+_p, u-_p the utilities of the pair's two members
//   g_mu    = 1/K sum_p (u+_p - u-_p) / 2 * eps_p                   (symmetric mu)
//   s_p     = (u+_p + u-_p) / 2,  b = mean_p s_p                     (baseline)
//   g_sigma = 1/K sum_p (s_p - b) (eps_p^2 - sigma^2) / sigma        (symmetric sigma)
//   sigma'  = sigma + stdev_learning_rate * g_sigma, clipped
//             elementwise to sigma (1 +- stdev_max_change)           (pgpelib)
//   mu      <- mu + step(g_mu), the step of the centre's optimizer (ascent):
//     CLIPUP (ClipUp, Algorithm 1): v <- momentum v + alpha g / ||g||;
//             v <- v * max_speed / ||v|| when ||v|| > max_speed;  step = v
//             (g = 0: v <- momentum v)
//     ADAM  (Kingma & Ba 2015, Algorithm 1; beta1 0.9, beta2 0.999, eps 1e-8):
//             m <- b1 m + (1 - b1) g, v <- b2 v + (1 - b2) g^2,
//             step = alpha (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps)
//     SGD   (with momentum): v <- momentum v + alpha g;  step = v
//   with alpha = center_learning_rate.
// Defaults: stdev_learning_rate 0.1, stdev_max_change 0.2, momentum 0.9
// (ClipUp paper); max_speed 2 alpha (0: that default); center_learning_rate
// 0.15 (EvoKit's: alpha is in parameter units, choose it for the problem);
// population_size 4 + floor(3 ln n) rounded up to even (EvoKit's; pgpelib
// and EvoTorch take it from the user).
//
// Options: sigma0, population_size, seed, num_threads, optimizer ("CLIPUP",
// "ADAM", "SGD"), center_learning_rate (> 0), stdev_learning_rate (>= 0),
// stdev_max_change (in (0, 1]), max_speed (> 0; 0: 2 center_learning_rate),
// momentum ([0, 1)). State: "pgpe.mean", "pgpe.sigma", "pgpe.velocity" (v,
// or Adam's m), "pgpe.second_moment" (Adam's v; zeros otherwise).
#include <algorithm>
#include <cmath>

#include "search/distribution/distribution_internal.h"
#include "search/option_checks.h"

namespace evokit {

namespace {

constexpr char kName[] = "PGPE";
const char* const kOptimizers[] = {"CLIPUP", "ADAM", "SGD"};
enum class CenterOptimizer { kClipUp, kAdam, kSgd };

struct PGPEOptions {
  CenterOptimizer optimizer = CenterOptimizer::kClipUp;
  double center_learning_rate = 0.15;
  double stdev_learning_rate = 0.1;
  double stdev_max_change = 0.2;
  double max_speed = 0.0;
  double momentum = 0.9;
};

class PGPE final : public DistributionStrategy {
 public:
  PGPE(std::vector<double> x0, const detail::CommonDistributionOptions& c, const PGPEOptions& p)
      : DistributionStrategy(kName, x0.size(), c.population_size, c.seed, c.num_threads, true),
        mean_(std::move(x0)),
        sigma_(mean_.size(), c.sigma0),
        velocity_(mean_.size(), 0.0),
        second_moment_(mean_.size(), 0.0),
        p_(p) {
    if (p_.max_speed == 0.0) p_.max_speed = 2.0 * p_.center_learning_rate;
  }

  std::vector<double> center() const override { return mean_; }
  std::vector<double> stds() const override { return sigma_; }
  std::map<std::string, double> parameters() const override {
    return {{"population_size", static_cast<double>(population_size())},
            {"center_learning_rate", p_.center_learning_rate},
            {"stdev_learning_rate", p_.stdev_learning_rate},
            {"stdev_max_change", p_.stdev_max_change},
            {"max_speed", p_.max_speed},
            {"momentum", p_.momentum}};
  }

 protected:
  void transform(const double* z, double* x) const override {
    for (std::size_t j = 0; j < mean_.size(); ++j) x[j] = mean_[j] + sigma_[j] * z[j];
  }

  void update(const std::vector<double>& z, const std::vector<double>& /*x*/,
              const std::vector<double>& values) override {
    const std::size_t n = num_params();
    const std::size_t lambda = population_size();
    const std::size_t pairs = lambda / 2;
    // Centred ranks of the fitness -f: the best (smallest f) gets +1/2.
    const std::vector<std::size_t> order = distribution::ranking(values);
    std::vector<double> u(lambda);
    for (std::size_t i = 0; i < lambda; ++i) {
      u[order[i]] = static_cast<double>(lambda - 1 - i) / static_cast<double>(lambda - 1) - 0.5;
    }
    double baseline = 0.0;
    for (std::size_t p = 0; p < pairs; ++p) baseline += 0.5 * (u[2 * p] + u[2 * p + 1]);
    baseline /= static_cast<double>(pairs);
    std::vector<double> g_mu(n, 0.0), g_sigma(n, 0.0);
    for (std::size_t p = 0; p < pairs; ++p) {
      const double* zp = z.data() + 2 * p * n;  // the pair's +z
      const double diff = 0.5 * (u[2 * p] - u[2 * p + 1]);
      const double avg = 0.5 * (u[2 * p] + u[2 * p + 1]) - baseline;
      for (std::size_t j = 0; j < n; ++j) {
        const double eps = sigma_[j] * zp[j];
        g_mu[j] += diff * eps;                                               // symmetric mu
        g_sigma[j] += avg * (eps * eps - sigma_[j] * sigma_[j]) / sigma_[j];  // symmetric sigma
      }
    }
    const double k = static_cast<double>(pairs);
    for (std::size_t j = 0; j < n; ++j) {
      g_mu[j] /= k;
      g_sigma[j] /= k;
    }
    step_center(g_mu);
    for (std::size_t j = 0; j < n; ++j) {
      const double allowed = sigma_[j] * p_.stdev_max_change;
      const double proposed = sigma_[j] + p_.stdev_learning_rate * g_sigma[j];
      sigma_[j] = std::clamp(proposed, sigma_[j] - allowed, sigma_[j] + allowed);
    }
  }

  void save_state(SolverState& state, const std::string& prefix) const override {
    state.doubles[prefix + "mean"] = mean_;
    state.doubles[prefix + "sigma"] = sigma_;
    state.doubles[prefix + "velocity"] = velocity_;
    state.doubles[prefix + "second_moment"] = second_moment_;
  }

  void load_state(const SolverState& state, const std::string& prefix) override {
    const std::size_t n = num_params();
    const auto& mean = detail::finite_entry(state, prefix, "mean", n);
    const auto& sigma = detail::finite_entry(state, prefix, "sigma", n, true);
    const auto& velocity = detail::finite_entry(state, prefix, "velocity", n);
    const auto& second = detail::finite_entry(state, prefix, "second_moment", n);
    for (std::size_t j = 0; j < n; ++j) {
      if (second[j] < 0) {
        throw std::invalid_argument("state entry '" + prefix + "second_moment'[" +
                                    std::to_string(j) + "] must be >= 0, got " +
                                    detail::format_g(second[j]));
      }
    }
    mean_ = mean;
    sigma_ = sigma;
    velocity_ = velocity;
    second_moment_ = second;
  }

 private:
  // mu <- mu + the optimizer's step for the ascent direction g.
  void step_center(const std::vector<double>& g) {
    const std::size_t n = num_params();
    const double alpha = p_.center_learning_rate;
    if (p_.optimizer == CenterOptimizer::kAdam) {
      const double b1 = 0.9, b2 = 0.999, eps = 1e-8;
      const double t = static_cast<double>(generation() + 1);
      const double c1 = 1.0 - std::pow(b1, t), c2 = 1.0 - std::pow(b2, t);
      for (std::size_t j = 0; j < n; ++j) {
        velocity_[j] = b1 * velocity_[j] + (1.0 - b1) * g[j];
        second_moment_[j] = b2 * second_moment_[j] + (1.0 - b2) * g[j] * g[j];
        mean_[j] += alpha * (velocity_[j] / c1) / (std::sqrt(second_moment_[j] / c2) + eps);
      }
      return;
    }
    double scale = alpha;  // SGD: alpha g
    if (p_.optimizer == CenterOptimizer::kClipUp) {
      double norm = 0.0;
      for (double v : g) norm += v * v;
      norm = std::sqrt(norm);
      scale = norm > 0.0 ? alpha / norm : 0.0;  // alpha g / ||g||
    }
    double speed = 0.0;
    for (std::size_t j = 0; j < n; ++j) {
      velocity_[j] = p_.momentum * velocity_[j] + scale * g[j];
      speed += velocity_[j] * velocity_[j];
    }
    speed = std::sqrt(speed);
    if (p_.optimizer == CenterOptimizer::kClipUp && speed > p_.max_speed) {
      const double clip = p_.max_speed / speed;
      for (double& v : velocity_) v *= clip;
    }
    for (std::size_t j = 0; j < n; ++j) mean_[j] += velocity_[j];
  }

  std::vector<double> mean_;
  std::vector<double> sigma_;
  std::vector<double> velocity_;
  std::vector<double> second_moment_;
  PGPEOptions p_;
};

PGPEOptions options(const OptionSet& o, const std::string& prefix) {
  PGPEOptions p;
  const std::string& name = o.text("optimizer");
  std::string known;
  bool found = false;
  for (std::size_t i = 0; i < 3; ++i) {
    known += (i ? ", " : "") + std::string(kOptimizers[i]);
    if (name == kOptimizers[i]) {
      p.optimizer = static_cast<CenterOptimizer>(i);
      found = true;
    }
  }
  if (!found) {
    throw std::invalid_argument(prefix + "optimizer must be one of " + known + ", got '" + name +
                                "'");
  }
  p.center_learning_rate =
      detail::option_in(o, prefix, "center_learning_rate", 0, 1e6, true, false, false);
  p.stdev_learning_rate =
      detail::option_in(o, prefix, "stdev_learning_rate", 0, 1e6, false, false, false);
  p.stdev_max_change = detail::option_in(o, prefix, "stdev_max_change", 0, 1, true, false, false);
  p.max_speed = detail::option_in(o, prefix, "max_speed", 0, 1e12, true, false, true);
  p.momentum = detail::option_in(o, prefix, "momentum", 0, 1, false, true, false);
  return p;
}

void validate(const OptionSet& o, const std::string& prefix) {
  detail::common_distribution_options(o, prefix, 2, true);
  options(o, prefix);
}

std::unique_ptr<DistributionStrategy> make(std::vector<double> x0, const OptionSet& o) {
  const auto c = detail::common_distribution_options(o, "", cma_default_population_size(x0.size()), true);
  return std::make_unique<PGPE>(std::move(x0), c, options(o, ""));
}

}  // namespace

DistributionFamily pgpe_family() {
  return {kName, "PGPE_SAMPLING", "pgpe_sampling", &validate, &make};
}

}  // namespace evokit
