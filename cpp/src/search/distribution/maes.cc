// MA-ES: the matrix adaptation evolution strategy, a family of
// evokit/distribution.h.
//
//   H.-G. Beyer, B. Sendhoff, "Simplify Your Covariance Matrix Adaptation
//   Evolution Strategy", IEEE Transactions on Evolutionary Computation 21(5)
//   (2017) 746-759: Fig. 3 (the MA-ES) and its strategy parameters, which
//   are CMA-ES's.
//
// The search distribution N(y, sigma^2 M M^T): CMA-ES without the
// covariance matrix, its evolution path p_c and its eigendecomposition; M
// is updated multiplicatively instead. A generation (Fig. 3, lines):
//   z_l ~ N(0, I),  d_l = M z_l,  x_l = y + sigma d_l               (4-6)
//   sort by f (best first)
//   y <- y + sigma <d>_w                                             (8)
//   s <- (1 - c_s) s + sqrt(mu_eff c_s (2 - c_s)) <z>_w             (9)
//   M <- M [I + c_1 / 2 (s s^T - I) + c_w / 2 (<z z^T>_w - I)]      (10)
//   sigma <- sigma exp(c_s / d_s (||s|| / E||N(0, I)|| - 1))        (11)
// with <v>_w = sum_{m <= mu} w_m v_{m:lambda}. Every strategy parameter is
// CMA-ES's (cma_default_params of cma_es.h, as the paper prescribes): the
// positive recombination weights on the best mu = floor(lambda / 2), mu_eff,
// c_s, d_s and chi_n; c_1 and c_w = c_mu. Lines (9) and (11) are CMA-ES's
// cumulative step-size adaptation itself (cma_update_sigma_path,
// cma_csa_step_size). Line (10) is computed without the n x n bracket:
// M_new = (1 - c_1 / 2 - c_w / 2) M + c_1 / 2 (M s) s^T
//         + c_w / 2 sum_m w_m d_{m:lambda} z_{m:lambda}^T   (the weights sum to 1)
// in O(mu n^2), row by row (threads over blocks of rows: the same bits for
// any thread count). Memory: M, n^2 doubles; sampling O(n^2) per member.
//
// stds(): sigma times the row norms of M (exact). condition(): the base's
// lower bound (max stds / min stds)^2.
//
// Options: sigma0, population_size (0: 4 + floor(3 ln n)), seed,
// num_threads. State: "maes.mean", "maes.path" (s), "maes.sigma" (1),
// "maes.matrix" (M, n x n row-major).
#include <algorithm>
#include <cmath>

#include "common/parallel.h"
#include "linalg/dense_kernels.h"
#include "search/distribution/distribution_internal.h"

namespace evokit {

namespace {

constexpr char kName[] = "MAES";
// M is n^2 doubles: 20,000 parameters are 3.2 GB.
constexpr std::size_t kMaxParams = 20000;

class MAES final : public DistributionStrategy {
 public:
  MAES(std::vector<double> x0, const detail::CommonDistributionOptions& c)
      : DistributionStrategy(kName, x0.size(), c.population_size, c.seed, c.num_threads, false),
        params_(cma_default_params(x0.size(), c.population_size, false)),
        mean_(std::move(x0)),
        path_(mean_.size(), 0.0),
        sigma_(c.sigma0),
        matrix_(mean_.size() * mean_.size(), 0.0) {
    const std::size_t n = mean_.size();
    for (std::size_t i = 0; i < n; ++i) matrix_[i * n + i] = 1.0;
  }

  std::vector<double> center() const override { return mean_; }

  std::vector<double> stds() const override {
    const std::size_t n = num_params();
    std::vector<double> out(n);
    for (std::size_t i = 0; i < n; ++i) {
      const double* row = matrix_.data() + i * n;
      out[i] = sigma_ * std::sqrt(detail::dot4(row, row, n));
    }
    return out;
  }

  std::map<std::string, double> parameters() const override {
    const CMAParams& p = params_;
    return {{"population_size", static_cast<double>(p.population_size)},
            {"mu", static_cast<double>(p.mu)},
            {"mueff", p.mueff},
            {"c_sigma", p.c_sigma},
            {"d_sigma", p.d_sigma},
            {"c1", p.c1},
            {"c_w", p.cmu},
            {"chi_n", p.chi_n},
            {"weight_1", p.weights[0]}};
  }

 protected:
  void transform(const double* z, double* x) const override {
    const std::size_t n = num_params();
    detail::dot4_rows(matrix_.data(), n, n, z, n, x);  // d = M z
    for (std::size_t j = 0; j < n; ++j) x[j] = mean_[j] + sigma_ * x[j];
  }

  void update(const std::vector<double>& z, const std::vector<double>& /*x*/,
              const std::vector<double>& values) override {
    const CMAParams& p = params_;
    const std::size_t n = num_params();
    const std::size_t mu = p.mu;
    const std::vector<std::size_t> order = distribution::ranking(values);
    // d_m = M z_{m:lambda} of the selected (the old M), <z>_w and <d>_w.
    std::vector<double> d(mu * n), zw(n, 0.0), dw(n, 0.0);
    const int threads = threads_for(static_cast<double>(mu) * static_cast<double>(n) * static_cast<double>(n));
    detail::parallel_items(mu, detail::team_size(mu, threads), [&](std::size_t m) {
      detail::dot4_rows(matrix_.data(), n, n, z.data() + order[m] * n, n, d.data() + m * n);
    });
    for (std::size_t m = 0; m < mu; ++m) {
      detail::axpy1(z.data() + order[m] * n, n, p.weights[m], zw.data());
      detail::axpy1(d.data() + m * n, n, p.weights[m], dw.data());
    }
    for (std::size_t j = 0; j < n; ++j) mean_[j] += sigma_ * dw[j];      // (8)
    const double path_norm = cma_update_sigma_path(p, path_.data(), zw.data());  // (9)
    // (10), with M s of the old M and the new s.
    std::vector<double> ms(n);
    detail::dot4_rows(matrix_.data(), n, n, path_.data(), n, ms.data());
    const double keep = 1.0 - 0.5 * p.c1 - 0.5 * p.cmu;
    const std::size_t blocks = detail::ceil_div(n, detail::kRowBlock);
    detail::parallel_items(blocks, detail::team_size(blocks, threads), [&](std::size_t b) {
      const std::size_t end = std::min(n, (b + 1) * detail::kRowBlock);
      for (std::size_t i = b * detail::kRowBlock; i < end; ++i) {
        double* row = matrix_.data() + i * n;
        for (std::size_t j = 0; j < n; ++j) row[j] *= keep;
        detail::axpy1(path_.data(), n, 0.5 * p.c1 * ms[i], row);
        for (std::size_t m = 0; m < mu; ++m) {
          detail::axpy1(z.data() + order[m] * n, n, 0.5 * p.cmu * p.weights[m] * d[m * n + i], row);
        }
      }
    });
    sigma_ = cma_csa_step_size(p, sigma_, path_norm);  // (11)
  }

  std::vector<StateEntry> state_entries() override {
    const std::size_t n = num_params();
    return {{"mean", &mean_, nullptr, n, false},
            {"path", &path_, nullptr, n, false},
            {"sigma", nullptr, &sigma_, 1, true},
            {"matrix", &matrix_, nullptr, n * n, false}};
  }

 private:
  CMAParams params_;
  std::vector<double> mean_;
  std::vector<double> path_;  // s
  double sigma_;
  std::vector<double> matrix_;  // M, n x n row-major
};

void validate(const OptionSet& o, const std::string& prefix) {
  detail::common_distribution_options(o, prefix, 2, false);
}

std::unique_ptr<DistributionStrategy> make(std::vector<double> x0, const OptionSet& o) {
  if (x0.size() > kMaxParams) {
    throw std::invalid_argument("MAES: " + std::to_string(x0.size()) +
                                " parameters: its matrix M (n^2 doubles) allows at most " +
                                std::to_string(kMaxParams) + "; use SepCMAES, LMMAES or SNES");
  }
  const auto c = detail::common_distribution_options(o, "", cma_default_population_size(x0.size()), false);
  return std::make_unique<MAES>(std::move(x0), c);
}

}  // namespace

DistributionFamily maes_family() {
  return {kName, "MAES_SAMPLING", "maes_sampling", &validate, &make};
}

}  // namespace evokit
