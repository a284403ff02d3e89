// LM-MA-ES: the limited-memory matrix adaptation evolution strategy, a
// family of evokit/distribution.h.
//
//   I. Loshchilov, T. Glasmachers, H.-G. Beyer, "Large Scale Black-Box
//   Optimization by Limited-Memory Matrix Adaptation", IEEE Transactions on
//   Evolutionary Computation 23(2) (2019) 353-358 (arXiv:1705.06693):
//   Algorithm 1 (LM-MA-ES) and its default hyper-parameters.
//
// The search distribution N(y, sigma^2 A A^T) with A = T_k ... T_1,
// T_j = (1 - c_d,j) I + c_d,j m_j m_j^T, k = min(t, m) (t: generations so
// far): linear memory (m + 3 vectors) and O(m n) time per sample. A
// generation (Algorithm 1; lines of the paper's listing):
//   z_i ~ N(0, I), d_i = z_i                                      (5, 6)
//   for j = 1..min(t, m): d_i <- (1 - c_d,j) d_i + c_d,j m_j (m_j^T d_i)   (7, 8)
//   x_i = y + sigma d_i                                           (9)
//   sort by f (best first)
//   y   <- y + sigma sum_{i<=mu} w_i d_{i:lambda}                 (10)
//   p_s <- (1 - c_s) p_s + sqrt(mu_w c_s (2 - c_s)) sum_{i<=mu} w_i z_{i:lambda}   (11)
//   m_j <- (1 - c_c,j) m_j + sqrt(mu_w c_c,j (2 - c_c,j)) sum_{i<=mu} w_i z_{i:lambda}
//                                                      (j = 1..m)  (12, 13)
//   sigma <- sigma exp(c_s / d_s (||p_s||^2 / n - 1))            (14)
// Defaults (Algorithm 1, line 1): lambda = 4 + floor(3 ln n),
// mu = floor(lambda / 2), w_i = (ln((lambda + 1) / 2) - ln i) / sum_j (ln((lambda + 1) / 2) - ln j)
// (CMA-ES's weights: cma_default_params' positive ones), mu_w = 1 / sum w_i^2, m = 4 + floor(3 ln n),
// c_s = 2 lambda / n, c_d,j = 1 / (1.5^(j-1) n), c_c,j = lambda / (4^(j-1) n),
// d_s = 2. The rates 2 lambda / n and lambda / n exceed 1 below
// n = 2 lambda (the paper's experiments start at n = 128); EvoKit caps the
// default c_s and c_c,j at 1 (a rate of 1 keeps no memory; beyond 2 the
// square roots are undefined), so small n works too.
//
// stds(): sqrt(diag(sigma^2 A A^T)) exactly in O(n k^2): A = a I + M G M^T
// with M = [m_1 .. m_k], built factor by factor (T_j A = a_j a I +
// M (a_j G + c_j e_j (a e_j^T + (M^T m_j)^T G)) M^T).
//
// Options: sigma0, population_size, seed, num_threads, memory (m, >= 1;
// 0: the default), c_sigma (c_s in (0, 2); 0: the default), damping (d_s,
// > 0). State: "lmmaes.mean", "lmmaes.path" (p_s), "lmmaes.sigma" (1),
// "lmmaes.directions" (m rows of n: m_1..m_m).
#include <algorithm>
#include <cmath>

#include "search/distribution/distribution_internal.h"
#include "search/option_checks.h"

namespace evokit {

namespace {

constexpr char kName[] = "LMMAES";

class LMMAES final : public DistributionStrategy {
 public:
  LMMAES(std::vector<double> x0, const detail::CommonDistributionOptions& c, std::size_t memory,
         double c_sigma, double damping)
      : DistributionStrategy(kName, x0.size(), c.population_size, c.seed, c.num_threads, false),
        mean_(std::move(x0)),
        path_(mean_.size(), 0.0),
        sigma_(c.sigma0),
        memory_(memory != 0 ? memory : cma_default_population_size(mean_.size())),
        directions_(memory_ * mean_.size(), 0.0),
        damping_(damping) {
    const double n = static_cast<double>(mean_.size());
    const double lambda = static_cast<double>(population_size());
    // CMA-ES's recombination weights: the positive ones, on the best mu.
    const CMAParams cma = cma_default_params(mean_.size(), population_size(), false);
    mu_ = cma.mu;
    weights_.assign(cma.weights.begin(), cma.weights.begin() + static_cast<std::ptrdiff_t>(mu_));
    double sum_sq = 0.0;
    for (double w : weights_) sum_sq += w * w;
    mu_w_ = 1.0 / sum_sq;
    c_sigma_ = c_sigma != 0.0 ? c_sigma : std::min(1.0, 2.0 * lambda / n);
    for (std::size_t j = 0; j < memory_; ++j) {
      c_d_.push_back(1.0 / (std::pow(1.5, static_cast<double>(j)) * n));
      c_c_.push_back(std::min(1.0, lambda / (std::pow(4.0, static_cast<double>(j)) * n)));
    }
  }

  std::vector<double> center() const override { return mean_; }

  std::vector<double> stds() const override {
    // A = a I + M G M^T over the k = min(t, m) vectors in use.
    const std::size_t n = num_params();
    const std::size_t k = used();
    double a = 1.0;
    std::vector<double> g(k * k, 0.0), gram(k * k, 0.0);
    for (std::size_t p = 0; p < k; ++p) {
      for (std::size_t q = 0; q < k; ++q) {
        const double* mp = directions_.data() + p * n;
        const double* mq = directions_.data() + q * n;
        double s = 0.0;
        for (std::size_t j = 0; j < n; ++j) s += mp[j] * mq[j];
        gram[p * k + q] = s;
      }
    }
    for (std::size_t j = 0; j < k; ++j) {
      const double aj = 1.0 - c_d_[j], cj = c_d_[j];
      std::vector<double> row(k, 0.0);  // a e_j^T + (M^T m_j)^T G
      for (std::size_t q = 0; q < k; ++q) {
        double s = 0.0;
        for (std::size_t p = 0; p < k; ++p) s += gram[j * k + p] * g[p * k + q];
        row[q] = s + (q == j ? a : 0.0);
      }
      for (double& v : g) v *= aj;
      for (std::size_t q = 0; q < k; ++q) g[j * k + q] += cj * row[q];
      a *= aj;
    }
    // diag(A A^T)_i = a^2 + 2 a M_i G M_i^T + M_i G K G^T M_i^T (K: the Gram matrix).
    std::vector<double> gk(k * k, 0.0), gkg(k * k, 0.0);
    for (std::size_t p = 0; p < k; ++p) {
      for (std::size_t q = 0; q < k; ++q) {
        double s = 0.0;
        for (std::size_t r = 0; r < k; ++r) s += g[p * k + r] * gram[r * k + q];
        gk[p * k + q] = s;
      }
    }
    for (std::size_t p = 0; p < k; ++p) {
      for (std::size_t q = 0; q < k; ++q) {
        double s = 0.0;
        for (std::size_t r = 0; r < k; ++r) s += gk[p * k + r] * g[q * k + r];
        gkg[p * k + q] = 2.0 * a * g[p * k + q] + s;
      }
    }
    std::vector<double> out(n);
    std::vector<double> mi(k);
    for (std::size_t i = 0; i < n; ++i) {
      for (std::size_t p = 0; p < k; ++p) mi[p] = directions_[p * n + i];
      double s = a * a;
      for (std::size_t p = 0; p < k; ++p) {
        for (std::size_t q = 0; q < k; ++q) s += mi[p] * gkg[p * k + q] * mi[q];
      }
      out[i] = sigma_ * std::sqrt(std::max(0.0, s));
    }
    return out;
  }

  std::map<std::string, double> parameters() const override {
    return {{"population_size", static_cast<double>(population_size())},
            {"mu", static_cast<double>(mu_)},
            {"mu_w", mu_w_},
            {"memory", static_cast<double>(memory_)},
            {"c_sigma", c_sigma_},
            {"damping", damping_},
            {"c_d_1", c_d_[0]},
            {"c_c_1", c_c_[0]},
            {"c_c_2", memory_ > 1 ? c_c_[1] : 0.0},
            {"weight_1", weights_[0]}};
  }

 protected:
  void transform(const double* z, double* x) const override {
    const std::size_t n = num_params();
    std::vector<double> d(z, z + n);
    direction(d.data());
    for (std::size_t j = 0; j < n; ++j) x[j] = mean_[j] + sigma_ * d[j];
  }

  void update(const std::vector<double>& z, const std::vector<double>& /*x*/,
              const std::vector<double>& values) override {
    const std::size_t n = num_params();
    const std::vector<std::size_t> order = distribution::ranking(values);
    std::vector<double> wz(n, 0.0), wd(n, 0.0), d(n);
    for (std::size_t i = 0; i < mu_; ++i) {
      const double* zi = z.data() + order[i] * n;
      std::copy(zi, zi + n, d.begin());
      direction(d.data());  // line 7-8 again for the selected (as in ask)
      for (std::size_t j = 0; j < n; ++j) {
        wz[j] += weights_[i] * zi[j];
        wd[j] += weights_[i] * d[j];
      }
    }
    for (std::size_t j = 0; j < n; ++j) mean_[j] += sigma_ * wd[j];  // line 10
    const double ps = std::sqrt(mu_w_ * c_sigma_ * (2.0 - c_sigma_));
    double norm_sq = 0.0;
    for (std::size_t j = 0; j < n; ++j) {  // line 11
      path_[j] = (1.0 - c_sigma_) * path_[j] + ps * wz[j];
      norm_sq += path_[j] * path_[j];
    }
    for (std::size_t i = 0; i < memory_; ++i) {  // lines 12-13
      const double cc = c_c_[i];
      const double s = std::sqrt(mu_w_ * cc * (2.0 - cc));
      double* m = directions_.data() + i * n;
      for (std::size_t j = 0; j < n; ++j) m[j] = (1.0 - cc) * m[j] + s * wz[j];
    }
    sigma_ *= std::exp(c_sigma_ / damping_ * (norm_sq / static_cast<double>(n) - 1.0));  // line 14
  }

  std::vector<StateEntry> state_entries() override {
    const std::size_t n = num_params();
    return {{"mean", &mean_, nullptr, n, false},
            {"path", &path_, nullptr, n, false},
            {"sigma", nullptr, &sigma_, 1, true},
            {"directions", &directions_, nullptr, memory_ * n, false}};
  }

 private:
  // k = min(t, m): the direction vectors in use at generation t.
  std::size_t used() const noexcept {
    return static_cast<std::size_t>(
        std::min<std::int64_t>(generation(), static_cast<std::int64_t>(memory_)));
  }

  // d <- T_k ... T_1 d (Algorithm 1, lines 7-8).
  void direction(double* d) const {
    const std::size_t n = num_params();
    const std::size_t k = used();
    for (std::size_t j = 0; j < k; ++j) {
      const double* m = directions_.data() + j * n;
      double dot = 0.0;
      for (std::size_t i = 0; i < n; ++i) dot += m[i] * d[i];
      const double keep = 1.0 - c_d_[j], along = c_d_[j] * dot;
      for (std::size_t i = 0; i < n; ++i) d[i] = keep * d[i] + along * m[i];
    }
  }

  std::vector<double> mean_;
  std::vector<double> path_;
  double sigma_;
  std::size_t memory_;
  std::vector<double> directions_;  // memory_ rows of n
  double damping_;
  std::size_t mu_ = 0;
  std::vector<double> weights_;
  double mu_w_ = 1.0;
  double c_sigma_ = 1.0;
  std::vector<double> c_d_, c_c_;
};

void validate(const OptionSet& o, const std::string& prefix) {
  detail::common_distribution_options(o, prefix, 2, false);
  const std::int64_t memory = o.integer("memory");
  if (memory < 0 || memory > 100000) {
    throw std::invalid_argument(prefix + "memory must be in [1, 100000] (or 0: the default), got " +
                                std::to_string(memory));
  }
  detail::option_in(o, prefix, "c_sigma", 0, 2, true, true, true);
  detail::option_in(o, prefix, "damping", 0, 1e6, true, false, false);
}

std::unique_ptr<DistributionStrategy> make(std::vector<double> x0, const OptionSet& o) {
  const auto c = detail::common_distribution_options(o, "", cma_default_population_size(x0.size()), false);
  return std::make_unique<LMMAES>(std::move(x0), c, static_cast<std::size_t>(o.integer("memory")),
                                  o.real("c_sigma"), o.real("damping"));
}

}  // namespace

DistributionFamily lmmaes_family() {
  return {kName, "LMMAES_SAMPLING", "lmmaes_sampling", &validate, &make};
}

}  // namespace evokit
