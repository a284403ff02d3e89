// CMA-ES: default parameters against the tutorial's formulas, the
// eigensolver against hand-made matrices, convergence, thread invariance,
// regenerable samples, termination, restarts and validation.
#include "evokit/cma_es.h"
#include "search/cma/cma_internal.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "evokit/noise.h"
#include "evokit/philox.h"
#include "test_util.h"

namespace evokit {
namespace {

using ::evokit::testing::MessageOf;
using ::evokit::testing::ThrowsWithMessage;

bool SameBits(const std::vector<double>& a, const std::vector<double>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0);
}

double Sphere(const double* x, std::size_t n) {
  double s = 0;
  for (std::size_t i = 0; i < n; ++i) s += x[i] * x[i];
  return s;
}

double Ellipsoid(const double* x, std::size_t n) {
  double s = 0;
  for (std::size_t i = 0; i < n; ++i) {
    s += std::pow(1e6, static_cast<double>(i) / static_cast<double>(n - 1)) * x[i] * x[i];
  }
  return s;
}

// Runs ask/tell on f until the strategy stops or `max_generations` pass.
template <class F>
void Optimize(CMABase& es, F f, int max_generations = 100000) {
  for (int g = 0; g < max_generations && !es.stopped(); ++g) {
    const std::vector<double>& x = es.ask();
    const std::size_t n = es.num_params();
    std::vector<double> values(es.population_size());
    for (std::size_t k = 0; k < values.size(); ++k) values[k] = f(x.data() + k * n, n);
    es.tell(values.data(), values.size());
  }
}

// ---- parameters ----------------------------------------------------------------

TEST(CMAParams, DefaultsFollowTheTutorial) {
  for (std::size_t n : {1u, 2u, 5u, 10u, 30u, 100u, 1000u}) {
    const double N = static_cast<double>(n);
    const std::size_t lambda = 4 + static_cast<std::size_t>(std::floor(3 * std::log(N)));
    EXPECT_EQ(cma_default_population_size(n), lambda) << n;
    const CMAParams p = cma_default_params(n, lambda, false);
    ASSERT_EQ(p.population_size, lambda);
    ASSERT_EQ(p.mu, lambda / 2);
    std::vector<double> wp(lambda);
    for (std::size_t i = 0; i < lambda; ++i) wp[i] = std::log((lambda + 1) / 2.0) - std::log(i + 1.0);
    double sp = 0, sp2 = 0, sn = 0, sn2 = 0;
    for (std::size_t i = 0; i < lambda; ++i) (i < lambda / 2 ? sp : sn) += wp[i];
    for (std::size_t i = 0; i < lambda; ++i) (i < lambda / 2 ? sp2 : sn2) += wp[i] * wp[i];
    const double mueff = sp * sp / sp2;
    const double mueff_minus = sn * sn / sn2;
    const double c1 = 2 / ((N + 1.3) * (N + 1.3) + mueff);
    // pycma's two changes to the tutorial: rank-mu offset 1/4, its c_sigma.
    const double cmu = std::min(1 - c1, 2 * (mueff - 2 + 1 / mueff + 0.25) / ((N + 2) * (N + 2) + mueff));
    const double cs = std::min(0.5, (mueff + 2) / (N + mueff + 3));
    const double ds = 1 + 2 * std::max(0.0, std::sqrt((mueff - 1) / (N + 1)) - 1) + cs;
    const double cc = (4 + mueff / N) / (N + 4 + 2 * mueff / N);
    const double alpha = std::min({1 + c1 / cmu, 1 + 2 * mueff_minus / (mueff + 2), (1 - c1 - cmu) / (N * cmu)});
    EXPECT_NEAR(p.mueff, mueff, 1e-12 * mueff) << n;
    EXPECT_NEAR(p.c1, c1, 1e-15) << n;
    EXPECT_NEAR(p.cmu, cmu, 1e-15) << n;
    EXPECT_NEAR(p.c_sigma, cs, 1e-15) << n;
    EXPECT_NEAR(p.d_sigma, ds, 1e-14) << n;
    EXPECT_NEAR(p.cc, cc, 1e-15) << n;
    EXPECT_EQ(p.cm, 1.0);
    EXPECT_NEAR(p.chi_n, std::sqrt(N) * (1 - 1 / (4 * N) + 1 / (21 * N * N)), 1e-14 * N);
    double sum_pos = 0, sum_neg = 0;
    for (std::size_t i = 0; i < lambda; ++i) {
      const double want = wp[i] >= 0 ? wp[i] / sp : alpha * wp[i] / -sn;
      EXPECT_NEAR(p.weights[i], want, 1e-14) << n << " weight " << i;
      (p.weights[i] >= 0 ? sum_pos : sum_neg) += p.weights[i];
    }
    EXPECT_NEAR(sum_pos, 1.0, 1e-14);
    EXPECT_NEAR(-sum_neg, alpha, 1e-12);
    // decomposed once more than 1 / (10 n (c1 + cmu)) generations have passed
    const double gap = 1 / (10 * N * (c1 + cmu));
    EXPECT_GT(static_cast<double>(p.eigen_interval), gap);
    EXPECT_LE(static_cast<double>(p.eigen_interval - 1), gap);
  }
}

TEST(CMAParams, SeparableTakesPycmasSeparableRates) {
  // pycma's own figures for n = 20, lambda = 12 (CMAParameters' docstring,
  // cma/options_parameters.py): c1_sep 0.0343279..., cmu_sep 0.0565385...,
  // cc_sep 0.252594...; full CMA-ES's c1 0.00437235..., cmu 0.00921656...,
  // cc 0.171767... stay the tutorial's.
  const CMAParams sep = cma_default_params(20, 12, true);
  const CMAParams full = cma_default_params(20, 12, false);
  EXPECT_NEAR(sep.c1, 0.0343279, 1e-7);
  EXPECT_NEAR(sep.cmu, 0.0565385, 1e-7);
  EXPECT_NEAR(sep.cc, 0.252594, 1e-6);
  EXPECT_NEAR(full.c1, 0.00437235, 1e-8);
  EXPECT_NEAR(full.cmu, 0.00921656, 1e-8);
  EXPECT_NEAR(full.cc, 0.171767, 1e-6);
  EXPECT_EQ(sep.c_sigma, full.c_sigma);
  EXPECT_EQ(sep.d_sigma, full.d_sigma);
  // n = 1: cmu stays below 1 - c1.
  const CMAParams one = cma_default_params(1, 4, true);
  EXPECT_GT(one.c1, 0.0);
  EXPECT_LE(one.c1 + one.cmu, 1.0);
}

TEST(CMAParams, OddPopulationHasAZeroWeight) {
  const CMAParams p = cma_default_params(10, 7, false);
  EXPECT_EQ(p.mu, 3u);
  EXPECT_EQ(p.weights[3], 0.0);
  EXPECT_LT(p.weights[4], 0.0);
}

// ---- eigensolver ---------------------------------------------------------------

void ExpectDecomposes(const std::vector<double>& a, std::size_t n, double tol) {
  const SymmetricEigen e = symmetric_eigen(a.data(), n, 2);
  ASSERT_EQ(e.values.size(), n);
  ASSERT_TRUE(std::is_sorted(e.values.begin(), e.values.end()));
  double scale = 0;
  for (double v : a) scale = std::max(scale, std::fabs(v));
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < n; ++j) {
      double rec = 0, dot = 0;
      for (std::size_t k = 0; k < n; ++k) {
        rec += e.vectors[k * n + i] * e.values[k] * e.vectors[k * n + j];
        dot += e.vectors[i * n + k] * e.vectors[j * n + k];
      }
      EXPECT_NEAR(rec, a[i * n + j], tol * std::max(scale, 1.0)) << "reconstruction " << i << "," << j;
      EXPECT_NEAR(dot, i == j ? 1.0 : 0.0, tol) << "orthogonality " << i << "," << j;
    }
  }
}

// The stagnation test's windowed medians equal the medians of the windows'
// entries computed afresh, bit for bit: windows that slide as the test's do
// (growing with the generation), jump, shrink, and outlive the history's cap.
TEST(WindowedHistory, MediansEqualFreshMedians) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  detail::WindowedHistory h;
  std::vector<double> kept;  // the same history, kept naively
  const std::size_t cap = 300;
  auto fresh = [&](std::size_t from, std::size_t len) {
    std::vector<double> v(kept.begin() + static_cast<std::ptrdiff_t>(from),
                          kept.begin() + static_cast<std::ptrdiff_t>(from + len));
    std::sort(v.begin(), v.end());
    return len % 2 ? v[len / 2] : 0.5 * (v[len / 2 - 1] + v[len / 2]);
  };
  for (int g = 1; g <= 2000; ++g) {
    // Ties, signed zeros and infinities besides ordinary values.
    const int kind = static_cast<int>(rng() % 10);
    const double v = kind == 0 ? 0.25 : kind == 1 ? -0.0 : kind == 2 ? 0.0
                   : kind == 3 ? std::numeric_limits<double>::infinity() : std::floor(u(rng) * 50.0) / 8.0;
    h.push(v, cap);
    kept.push_back(v);
    if (kept.size() > cap) kept.erase(kept.begin());
    ASSERT_EQ(h.size(), kept.size());
    std::size_t window = std::max<std::size_t>(20, static_cast<std::size_t>(0.2 * g));
    if (g % 97 == 0) window = 1 + rng() % h.size();  // a jump
    if (window > h.size()) continue;
    const std::size_t part = std::max<std::size_t>(1, static_cast<std::size_t>(0.3 * static_cast<double>(window)));
    const std::size_t first = h.size() - window;
    const std::size_t recent = h.size() - part;
    const double a = h.median(0, recent, part);
    const double b = h.median(1, first, part);
    const double ra = fresh(recent, part);
    const double rb = fresh(first, part);
    ASSERT_TRUE(a == ra || (std::isnan(a) && std::isnan(ra))) << "g " << g << ": " << a << " vs " << ra;
    ASSERT_TRUE(b == rb || (std::isnan(b) && std::isnan(rb))) << "g " << g << ": " << b << " vs " << rb;
  }
  h.clear();
  EXPECT_EQ(h.size(), 0u);
  h.push(3.0, cap);
  EXPECT_EQ(h.median(0, 0, 1), 3.0);
}

TEST(SymmetricEigen, KnownTridiagonalMatrix) {
  // Eigenvalues 2 - sqrt 2, 2, 2 + sqrt 2.
  const std::vector<double> a = {2, -1, 0, -1, 2, -1, 0, -1, 2};
  const SymmetricEigen e = symmetric_eigen(a.data(), 3);
  EXPECT_NEAR(e.values[0], 2 - std::sqrt(2.0), 1e-14);
  EXPECT_NEAR(e.values[1], 2.0, 1e-14);
  EXPECT_NEAR(e.values[2], 2 + std::sqrt(2.0), 1e-14);
  // The eigenvector of 2 is (1, 0, -1) / sqrt 2, up to sign.
  EXPECT_NEAR(std::fabs(e.vectors[3]), 1 / std::sqrt(2.0), 1e-14);
  EXPECT_NEAR(e.vectors[4], 0.0, 1e-14);
  EXPECT_NEAR(e.vectors[3] + e.vectors[5], 0.0, 1e-14);
  ExpectDecomposes(a, 3, 1e-14);
}

TEST(SymmetricEigen, HandMadeDenseMatrix) {
  // A = Q diag(1, 2, 3, 4) Q^T with Q a Householder reflection I - 2 u u^T / u^T u, u = (1, 1, 1, 1).
  const std::size_t n = 4;
  const double lam[4] = {1, 2, 3, 4};
  std::vector<double> q(16), a(16, 0.0);
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < n; ++j) q[i * n + j] = (i == j ? 1.0 : 0.0) - 0.5;
  }
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < n; ++j) {
      for (std::size_t k = 0; k < n; ++k) a[i * n + j] += q[i * n + k] * lam[k] * q[j * n + k];
    }
  }
  const SymmetricEigen e = symmetric_eigen(a.data(), n);
  for (std::size_t k = 0; k < n; ++k) EXPECT_NEAR(e.values[k], lam[k], 1e-14);
  ExpectDecomposes(a, n, 1e-14);
}

TEST(SymmetricEigen, IndefiniteLowRankMatrices) {
  // sum_i w_i s_i s_i^T with weights of both signs and few terms (xNES's
  // natural gradient G_M is one): a cluster of eigenvalues at 0 that the
  // neighbour-relative deflation test alone never declared converged.
  std::mt19937_64 rng(11);
  std::normal_distribution<double> normal;
  for (auto [n, r] : {std::pair<std::size_t, std::size_t>{120, 18}, {120, 40}, {200, 10}}) {
    std::vector<double> a(n * n, 0.0), s(n);
    for (std::size_t k = 0; k < r; ++k) {
      const double w = normal(rng);
      for (double& v : s) v = normal(rng);
      for (std::size_t i = 0; i < n; ++i) {
        for (std::size_t j = 0; j < n; ++j) a[i * n + j] += w * s[i] * s[j];
      }
    }
    ExpectDecomposes(a, n, 1e-11);
  }
}

TEST(SymmetricEigen, RandomAndDegenerateMatrices) {
  std::mt19937_64 rng(7);
  std::normal_distribution<double> normal;
  for (std::size_t n : {1u, 2u, 5u, 40u, 130u}) {
    std::vector<double> g(n * n), a(n * n, 0.0);
    for (double& v : g) v = normal(rng);
    for (std::size_t i = 0; i < n; ++i) {
      for (std::size_t j = 0; j <= i; ++j) a[i * n + j] = a[j * n + i] = g[i * n + j];
    }
    ExpectDecomposes(a, n, 1e-12);
  }
  // Repeated eigenvalues and an already-diagonal matrix.
  std::vector<double> eye(36, 0.0), diag(36, 0.0);
  for (std::size_t i = 0; i < 6; ++i) {
    eye[i * 6 + i] = 1.0;
    diag[i * 6 + i] = static_cast<double>(6 - i);
  }
  ExpectDecomposes(eye, 6, 1e-15);
  ExpectDecomposes(diag, 6, 1e-15);
}

TEST(SymmetricEigen, ThreadCountDoesNotChangeBits) {
  std::mt19937_64 rng(3);
  std::normal_distribution<double> normal;
  const std::size_t n = 1030;  // large enough for every threaded loop
  std::vector<double> a(n * n);
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j <= i; ++j) a[i * n + j] = a[j * n + i] = normal(rng);
  }
  const SymmetricEigen one = symmetric_eigen(a.data(), n, 1);
  for (int threads : {2, 3}) {
    const SymmetricEigen other = symmetric_eigen(a.data(), n, threads);
    EXPECT_TRUE(SameBits(one.values, other.values)) << threads;
    EXPECT_TRUE(SameBits(one.vectors, other.vectors)) << threads;
  }
}

// The buffers a thread keeps between decompositions hold the previous
// matrix's numbers: a decomposition after others of other sizes and
// contents (graded, with repeated eigenvalues, tiny) has the bits of the
// same decomposition done first.
TEST(SymmetricEigen, KeptBuffersDoNotChangeBits) {
  std::mt19937_64 rng(11);
  std::normal_distribution<double> normal;
  auto random_symmetric = [&](std::size_t n, double scale) {
    std::vector<double> a(n * n);
    for (std::size_t i = 0; i < n; ++i) {
      for (std::size_t j = 0; j <= i; ++j) a[i * n + j] = a[j * n + i] = scale * normal(rng);
    }
    return a;
  };
  const std::size_t n = 230;
  const std::vector<double> a = random_symmetric(n, 1.0);
  const SymmetricEigen first = symmetric_eigen(a.data(), n, 1);
  for (std::size_t other : {260u, 90u, 229u}) {
    std::vector<double> b = random_symmetric(other, 1e-3);
    for (std::size_t i = 0; i < other; i += 3) b[i * other + i] += 1e3;  // a graded diagonal
    symmetric_eigen(b.data(), other, 1);
  }
  const SymmetricEigen after_others = symmetric_eigen(a.data(), n, 1);
  EXPECT_TRUE(SameBits(first.values, after_others.values));
  EXPECT_TRUE(SameBits(first.vectors, after_others.vectors));
  std::vector<double> repeated(n * n, 0.0);  // the same size: eigenvalue 1 (n - 1 times) and 2
  for (std::size_t i = 0; i < n * n; ++i) repeated[i] = (i % (n + 1) == 0 ? 1.0 : 0.0) + 1.0 / static_cast<double>(n);
  symmetric_eigen(repeated.data(), n, 1);
  const SymmetricEigen after_same_size = symmetric_eigen(a.data(), n, 1);
  EXPECT_TRUE(SameBits(first.values, after_same_size.values));
  EXPECT_TRUE(SameBits(first.vectors, after_same_size.vectors));
}

// A = U diag(lambda) U^T with U a product of three random Householder
// reflections (dense, orthogonal to rounding).
std::vector<double> WithSpectrum(const std::vector<double>& lambda, std::mt19937_64& rng) {
  const std::size_t n = lambda.size();
  std::normal_distribution<double> normal;
  std::vector<double> u(n * n, 0.0);
  for (std::size_t i = 0; i < n; ++i) u[i * n + i] = 1.0;
  for (int r = 0; r < 3; ++r) {
    std::vector<double> v(n);
    double vv = 0;
    for (double& x : v) {
      x = normal(rng);
      vv += x * x;
    }
    for (std::size_t i = 0; i < n; ++i) {  // U <- U (I - 2 v v^T / v^T v)
      double uv = 0;
      for (std::size_t k = 0; k < n; ++k) uv += u[i * n + k] * v[k];
      for (std::size_t k = 0; k < n; ++k) u[i * n + k] -= 2.0 * uv / vv * v[k];
    }
  }
  std::vector<double> a(n * n, 0.0);
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j <= i; ++j) {
      double s = 0;
      for (std::size_t k = 0; k < n; ++k) s += u[i * n + k] * lambda[k] * u[j * n + k];
      a[i * n + j] = a[j * n + i] = s;
    }
  }
  return a;
}

// max_ij |(A B - B D)_ij| / ||A||_2 and max_ij |(B^T B - I)_ij| for the
// eigenvectors B (columns; stored as rows) and eigenvalues D.
std::pair<double, double> EigenErrors(const std::vector<double>& a, const SymmetricEigen& e) {
  const std::size_t n = e.values.size();
  const double norm = std::max(std::fabs(e.values.front()), std::fabs(e.values.back()));
  double residual = 0, orthogonality = 0;
  for (std::size_t j = 0; j < n; ++j) {
    const double* b = e.vectors.data() + j * n;
    for (std::size_t i = 0; i < n; ++i) {
      double s = 0;
      for (std::size_t k = 0; k < n; ++k) s += a[i * n + k] * b[k];
      residual = std::max(residual, std::fabs(s - e.values[j] * b[i]));
    }
    for (std::size_t l = 0; l <= j; ++l) {
      double s = 0;
      for (std::size_t k = 0; k < n; ++k) s += b[k] * e.vectors[l * n + k];
      orthogonality = std::max(orthogonality, std::fabs(s - (l == j ? 1.0 : 0.0)));
    }
  }
  return {residual / norm, orthogonality};
}

TEST(SymmetricEigen, AccurateOnSpdIllConditionedAndClusteredMatrices) {
  std::mt19937_64 rng(11);
  std::normal_distribution<double> normal;
  for (std::size_t n : {64u, 257u, 500u}) {
    SCOPED_TRACE("n = " + std::to_string(n));
    // Random SPD: G G^T / n + I.
    std::vector<double> g(n * n), spd(n * n);
    for (double& v : g) v = normal(rng);
    for (std::size_t i = 0; i < n; ++i) {
      for (std::size_t j = 0; j <= i; ++j) {
        double s = 0;
        for (std::size_t k = 0; k < n; ++k) s += g[i * n + k] * g[j * n + k];
        spd[i * n + j] = spd[j * n + i] = s / static_cast<double>(n) + (i == j ? 1.0 : 0.0);
      }
    }
    // Condition 1e14 (CMA's conditioncov), eigenvalues geometric from 1e-14 to 1.
    std::vector<double> geometric(n), clustered(n);
    for (std::size_t i = 0; i < n; ++i) {
      geometric[i] = std::pow(1e-14, static_cast<double>(i) / static_cast<double>(n - 1));
      // As C early in a CMA-ES run: mostly one value, a few larger ones.
      clustered[i] = i < n - 5 ? 0.25 : 0.25 + static_cast<double>(i - (n - 6));
    }
    std::vector<double> ill = WithSpectrum(geometric, rng);
    std::vector<double> near_identity = WithSpectrum(clustered, rng);
    std::sort(geometric.begin(), geometric.end());
    for (const std::vector<double>* a : {&spd, &ill, &near_identity}) {
      const SymmetricEigen e = symmetric_eigen(a->data(), n, 2);
      ASSERT_TRUE(std::is_sorted(e.values.begin(), e.values.end()));
      const auto [residual, orthogonality] = EigenErrors(*a, e);
      EXPECT_LT(residual, 1e-13);
      EXPECT_LT(orthogonality, 1e-13);
      const SymmetricEigen one = symmetric_eigen(a->data(), n, 1);
      EXPECT_TRUE(SameBits(one.values, e.values));
      EXPECT_TRUE(SameBits(one.vectors, e.vectors));
    }
    const SymmetricEigen e = symmetric_eigen(ill.data(), n, 1);
    for (std::size_t i = 0; i < n; ++i) EXPECT_NEAR(e.values[i], geometric[i], 1e-14) << i;
  }
}

// ---- divide and conquer (n > 32) -----------------------------------------------

std::vector<double> SymmetricFromLower(const std::vector<double>& g, std::size_t n) {
  std::vector<double> a(n * n);
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j <= i; ++j) a[i * n + j] = a[j * n + i] = g[i * n + j];
  }
  return a;
}

std::vector<double> RandomSymmetric(std::size_t n, std::mt19937_64& rng) {
  std::normal_distribution<double> normal;
  std::vector<double> g(n * n);
  for (double& v : g) v = normal(rng);
  return SymmetricFromLower(g, n);
}

// alpha I + sum of r weighted outer products (C early in a CMA-ES run: most
// eigenvalues equal to alpha, which deflates most of every merge).
std::vector<double> CmaLike(std::size_t n, std::size_t r, double alpha, std::mt19937_64& rng) {
  std::normal_distribution<double> normal;
  std::vector<double> a(n * n, 0.0), y(n);
  for (std::size_t i = 0; i < n; ++i) a[i * n + i] = alpha;
  for (std::size_t k = 0; k < r; ++k) {
    const double w = 0.01 * std::fabs(normal(rng));
    for (double& v : y) v = normal(rng);
    for (std::size_t i = 0; i < n; ++i) {
      for (std::size_t j = 0; j < n; ++j) a[i * n + j] += w * y[i] * y[j];
    }
  }
  return a;
}

// Copies of Wilkinson's W21+ glued by small and unit off-diagonal entries
// (many close pairs of eigenvalues).
std::vector<double> GluedWilkinson(std::size_t copies) {
  const std::size_t n = 21 * copies;
  std::vector<double> a(n * n, 0.0);
  for (std::size_t c = 0; c < copies; ++c) {
    for (std::size_t i = 0; i < 21; ++i) {
      const std::size_t g = 21 * c + i;
      a[g * n + g] = std::fabs(static_cast<double>(i) - 10.0);
      if (i < 20) a[g * n + g + 1] = a[(g + 1) * n + g] = 1.0;
    }
    if (c > 0) {
      const double glue = c % 2 ? 1e-8 : 1.0;
      a[(21 * c - 1) * n + 21 * c] = a[(21 * c) * n + 21 * c - 1] = glue;
    }
  }
  return a;
}

// A tridiagonal matrix with the given diagonal and off-diagonal.
std::vector<double> Tridiagonal(const std::vector<double>& d, const std::vector<double>& e) {
  const std::size_t n = d.size();
  std::vector<double> a(n * n, 0.0);
  for (std::size_t i = 0; i < n; ++i) {
    a[i * n + i] = d[i];
    if (i + 1 < n) a[i * n + i + 1] = a[(i + 1) * n + i] = e[i];
  }
  return a;
}

// Residual and orthogonality of order n eps ||A|| (LAPACK's bounds), values
// ascending and, where the spectrum is known, each within n eps ||A|| of it.
void ExpectAccurate(const std::vector<double>& a, std::size_t n, const std::string& name,
                    const std::vector<double>* spectrum = nullptr) {
  SCOPED_TRACE(name + ", n = " + std::to_string(n));
  const SymmetricEigen e = symmetric_eigen(a.data(), n, 2);
  ASSERT_EQ(e.values.size(), n);
  ASSERT_EQ(e.vectors.size(), n * n);
  ASSERT_TRUE(std::is_sorted(e.values.begin(), e.values.end()));
  const double eps = std::numeric_limits<double>::epsilon();
  const double bound = 2.0 * static_cast<double>(n) * eps;
  const double norm = std::max(std::fabs(e.values.front()), std::fabs(e.values.back()));
  if (norm == 0.0) {  // the zero matrix: any orthonormal basis
    for (double v : e.values) EXPECT_EQ(v, 0.0);
  }
  if (norm > 0.0) {
    const auto [residual, orthogonality] = EigenErrors(a, e);
    EXPECT_LT(residual, bound);
    EXPECT_LT(orthogonality, bound);
  }
  if (spectrum != nullptr) {
    std::vector<double> sorted = *spectrum;
    std::sort(sorted.begin(), sorted.end());
    for (std::size_t i = 0; i < n; ++i) EXPECT_NEAR(e.values[i], sorted[i], bound * std::max(norm, 1e-300)) << i;
  }
}

TEST(SymmetricEigen, DivideAndConquerOnRandomMatrices) {
  std::mt19937_64 rng(21);
  for (std::size_t n : {1u, 2u, 3u, 31u, 32u, 33u, 64u, 100u, 257u, 500u}) {
    ExpectAccurate(RandomSymmetric(n, rng), n, "random");
  }
}

// Matrices far from 1 in size: without scaling, the secular equation of a
// matrix of largest entry 1e175 overflowed ("did not converge") and one of
// 1e-150 underflowed (residuals of 1e14 n eps ||A||). Both solver paths.
TEST(SymmetricEigen, HugeAndTinyMatricesAreScaled) {
  std::mt19937_64 rng(23);
  for (double scale : {1e-300, 1e-250, 1e-150, 1e150, 1e175, 1e250, 1e300}) {
    for (std::size_t n : {20u, 33u, 120u}) {
      std::vector<double> a = RandomSymmetric(n, rng);
      for (double& v : a) v *= scale;
      ExpectAccurate(a, n, "random times " + std::to_string(scale));
    }
  }
  // Scaling is by a power of two: for A of largest entry in [1/2, 1), the
  // eigenvalues of 2^600 A are 2^600 times A's, bit for bit.
  std::vector<double> a = RandomSymmetric(90, rng);
  double largest = 0;
  for (double v : a) largest = std::max(largest, std::fabs(v));
  int exponent = 0;
  std::frexp(largest, &exponent);
  for (double& v : a) v = std::ldexp(v, -exponent);
  std::vector<double> big(a);
  for (double& v : big) v = std::ldexp(v, 600);
  const SymmetricEigen e = symmetric_eigen(a.data(), 90);
  const SymmetricEigen f = symmetric_eigen(big.data(), 90);
  for (std::size_t i = 0; i < 90; ++i) EXPECT_EQ(f.values[i], std::ldexp(e.values[i], 600)) << i;
  EXPECT_TRUE(SameBits(e.vectors, f.vectors));
}

TEST(SymmetricEigen, DivideAndConquerOnStructuredMatrices) {
  std::mt19937_64 rng(22);
  std::normal_distribution<double> normal;
  for (std::size_t n : {33u, 65u, 200u}) {
    std::vector<double> ones(n, 1.0), threes(n, -3.0), zeros(n, 0.0), repeated(n), graded(n), indefinite(n),
        negative(n), clustered(n), cma(n);
    std::vector<double> eye(n * n, 0.0), minus3(n * n, 0.0), zero(n * n, 0.0), diag(n * n, 0.0);
    for (std::size_t i = 0; i < n; ++i) {
      eye[i * n + i] = 1.0;
      minus3[i * n + i] = -3.0;
      repeated[i] = static_cast<double>(i % 3);
      diag[i * n + i] = repeated[i];
      const double t = static_cast<double>(i) / static_cast<double>(n - 1);
      graded[i] = std::pow(1e-14, t);
      indefinite[i] = -5.0 + 10.0 * t;
      negative[i] = -std::pow(100.0, t);
      clustered[i] = 1.0 + static_cast<double>(i) * 1e-12;
      cma[i] = i + 4 < n ? 0.5 : 0.5 + static_cast<double>(i + 5 - n);
    }
    ExpectAccurate(eye, n, "identity", &ones);
    ExpectAccurate(minus3, n, "-3 I", &threes);
    ExpectAccurate(zero, n, "zero", &zeros);
    ExpectAccurate(diag, n, "diagonal with repeated entries", &repeated);
    ExpectAccurate(WithSpectrum(graded, rng), n, "graded 1e-14..1", &graded);
    ExpectAccurate(WithSpectrum(indefinite, rng), n, "indefinite", &indefinite);
    ExpectAccurate(WithSpectrum(negative, rng), n, "negative definite", &negative);
    ExpectAccurate(WithSpectrum(clustered, rng), n, "clustered 1 + k 1e-12", &clustered);
    ExpectAccurate(WithSpectrum(cma, rng), n, "0.5 I + rank 4", &cma);
    for (std::size_t r : {1u, 5u, 30u}) ExpectAccurate(CmaLike(n, r, 0.7, rng), n, "alpha I + low rank");
    std::vector<double> d(n), e(n - 1);
    for (double& v : d) v = normal(rng);
    for (double& v : e) v = normal(rng);
    ExpectAccurate(Tridiagonal(d, e), n, "tridiagonal");
    // The secular equation made hard: poles a few ulps apart and tiny
    // couplings (z_i tiny), or couplings of mixed magnitudes.
    const double eps = std::numeric_limits<double>::epsilon();
    for (std::size_t i = 0; i < n; ++i) {
      d[i] = i < n / 2 ? static_cast<double>(i) : static_cast<double>(i - n / 2) * (1.0 + 4.0 * eps * i);
    }
    std::sort(d.begin(), d.end());
    std::fill(e.begin(), e.end(), 1e-10);
    ExpectAccurate(Tridiagonal(d, e), n, "poles a few ulps apart, tiny couplings");
    const double mags[3] = {1e-18, 1e-3, 1e-9};
    for (std::size_t i = 0; i + 1 < n; ++i) e[i] = mags[i % 3];
    ExpectAccurate(Tridiagonal(d, e), n, "couplings of mixed magnitudes");
  }
  for (std::size_t copies : {2u, 5u, 10u}) ExpectAccurate(GluedWilkinson(copies), 21 * copies, "glued W21+");
}

TEST(SymmetricEigen, DivideAndConquerRootHuggingAPoleOfTinyWeight) {
  // n = 66 merges two halves of 33 at row 33, coupled by 10 (rho = 20) while
  // the halves' couplings are 0.1. A diagonal entry of 5 at t rows before
  // the cut gives the largest eigenvalue of the first half an eigenvector of
  // about 0.02^t at the cut: z near the deflation tolerance (kept or
  // deflated as t grows), and the merge's last root about z^2 from its pole.
  // (The case that made the solver fail, a root 2^97 below its bracket's
  // width, came from a random 257 x 257 matrix: tests/blackbox/test_cmaes.py
  // test_symmetric_eigen_against_numpy[random-257].)
  for (std::size_t t = 6; t <= 9; ++t) {
    const std::size_t n = 66;
    std::vector<double> d(n), e(n - 1, 0.1);
    for (std::size_t i = 0; i < n; ++i) d[i] = 0.01 * static_cast<double>(i);
    d[32 - t] = 5.0;
    e[32] = 10.0;
    ExpectAccurate(Tridiagonal(d, e), n, "big entry " + std::to_string(t) + " rows before the cut");
  }
}

TEST(SymmetricEigen, DivideAndConquerThreadCountDoesNotChangeBits) {
  // Sizes whose tree has 3 to 5 levels of merges, dense and heavily deflated
  // (alpha I + low rank: equal eigenvalues from both halves of a merge are
  // rotated together), all large enough for the threaded loops (leaves,
  // secular roots, merge products, back-transformation, trailing updates).
  std::mt19937_64 rng(23);
  const std::vector<std::pair<std::string, std::vector<double>>> cases = {
      {"random 300", RandomSymmetric(300, rng)},
      {"cma-like 600", CmaLike(600, 40, 0.3, rng)},
      {"glued W21+ x 30", GluedWilkinson(30)},
  };
  for (const auto& [name, a] : cases) {
    SCOPED_TRACE(name);
    const std::size_t n = static_cast<std::size_t>(std::sqrt(static_cast<double>(a.size())));
    const SymmetricEigen one = symmetric_eigen(a.data(), n, 1);
    for (int threads : {2, 3}) {
      const SymmetricEigen other = symmetric_eigen(a.data(), n, threads);
      EXPECT_TRUE(SameBits(one.values, other.values)) << threads;
      EXPECT_TRUE(SameBits(one.vectors, other.vectors)) << threads;
    }
  }
}

TEST(SymmetricEigen, RejectsNonFinite) {
  const std::vector<double> a = {1, 0, 0, std::numeric_limits<double>::quiet_NaN()};
  EXPECT_TRUE(ThrowsWithMessage<std::invalid_argument>([&] { symmetric_eigen(a.data(), 2); },
                                                       "matrix entry (1, 1) is nan"));
}

// ---- Q kept as Householder reflectors --------------------------------------------

// Q itself: the rows of I times Q.
std::vector<double> ExplicitQ(const HouseholderProduct& p, std::size_t n) {
  std::vector<double> q(n * n, 0.0);
  for (std::size_t i = 0; i < n; ++i) q[i * n + i] = 1.0;
  p.times_q(q.data(), n, n);
  return q;
}

TEST(SymmetricEigen, FactoredIsTheExplicitBitForBit) {
  std::mt19937_64 rng(31);
  for (std::size_t n : {33, 65, 130, 400}) {
    SCOPED_TRACE(n);
    const std::vector<double> a = n == 400 ? CmaLike(n, 30, 0.5, rng) : RandomSymmetric(n, rng);
    const SymmetricEigen e = symmetric_eigen(a.data(), n);
    const SymmetricEigen f = symmetric_eigen_factored(a.data(), n);
    EXPECT_TRUE(SameBits(e.values, f.values));
    ASSERT_EQ(f.q.vectors.size(), n * (n - 1) / 2);
    ASSERT_EQ(f.q.tau.size(), n - 1);
    EXPECT_TRUE(e.q.vectors.empty());
    HouseholderProduct p;
    p.assign(n, f.q);
    std::vector<double> all = f.vectors;
    p.times_qt(all.data(), n, n);
    EXPECT_TRUE(SameBits(all, e.vectors));
    // Any rows, any thread count: each row's bits are the same.
    for (int threads : {1, 2, 3}) {
      std::vector<double> some(f.vectors.begin() + 5 * n, f.vectors.begin() + 12 * n);
      p.times_qt(some.data(), 7, n, threads);
      EXPECT_TRUE(SameBits(some, std::vector<double>(e.vectors.begin() + 5 * n, e.vectors.begin() + 12 * n)))
          << threads;
    }
  }
  // Small n: QL on the whole matrix, Q formed, nothing factored.
  const std::vector<double> small = RandomSymmetric(20, rng);
  const SymmetricEigen s = symmetric_eigen_factored(small.data(), 20);
  EXPECT_TRUE(s.q.vectors.empty() && s.q.tau.empty());
  EXPECT_TRUE(SameBits(s.vectors, symmetric_eigen(small.data(), 20).vectors));
}

TEST(HouseholderProduct, IsTheOrthogonalQThatTridiagonalisesTheMatrix) {
  std::mt19937_64 rng(37);
  const std::size_t n = 90;
  const std::vector<double> a = RandomSymmetric(n, rng);
  const SymmetricEigen f = symmetric_eigen_factored(a.data(), n);
  HouseholderProduct p;
  p.assign(n, f.q, 2);
  const std::vector<double> q = ExplicitQ(p, n);
  double norm = 0;
  for (double v : a) norm = std::max(norm, std::fabs(v));
  // Q^T Q = I and Q^T A Q tridiagonal.
  std::vector<double> aq(n * n, 0.0);
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t k = 0; k < n; ++k) {
      for (std::size_t j = 0; j < n; ++j) aq[i * n + j] += a[i * n + k] * q[k * n + j];
    }
  }
  double orthogonality = 0, off_band = 0;
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < n; ++j) {
      double qq = 0, t = 0;
      for (std::size_t k = 0; k < n; ++k) {
        qq += q[k * n + i] * q[k * n + j];
        t += q[k * n + i] * aq[k * n + j];
      }
      orthogonality = std::max(orthogonality, std::fabs(qq - (i == j ? 1.0 : 0.0)));
      if (i > j + 1 || j > i + 1) off_band = std::max(off_band, std::fabs(t));
    }
  }
  EXPECT_LT(orthogonality, 1e-13);
  EXPECT_LT(off_band, 1e-12 * norm * static_cast<double>(n));
  // times_q undoes times_qt.
  std::normal_distribution<double> normal;
  std::vector<double> x(3 * n);
  for (double& v : x) v = normal(rng);
  std::vector<double> y = x;
  p.times_qt(y.data(), 3, n);
  p.times_q(y.data(), 3, n);
  for (std::size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(y[i], x[i], 1e-13) << i;
  // Reflectors that are all the identity: Q = I, nothing done.
  Householder none;
  none.vectors.assign(n * (n - 1) / 2, 0.5);
  none.tau.assign(n - 1, 0.0);
  p.assign(n, none);
  EXPECT_TRUE(p.identity());
  std::vector<double> same = x;
  p.times_qt(same.data(), 3, n);
  EXPECT_TRUE(SameBits(same, x));
}

TEST(HouseholderProduct, RejectsReflectorsThatAreNotOrthogonal) {
  const std::size_t n = 5;  // v_0 = (1, 1, 0, 0), v_1 = (2, 0, 0), ...
  Householder q;
  q.vectors.assign(n * (n - 1) / 2, 0.0);
  q.tau.assign(n - 1, 0.0);
  q.vectors[0] = q.vectors[1] = 1.0;
  q.tau[0] = 1.0;  // 2 / ||v_0||^2
  q.vectors[4] = 2.0;
  q.tau[1] = 0.5;
  HouseholderProduct p;
  p.assign(n, q);
  EXPECT_FALSE(p.identity());
  Householder bad = q;
  bad.tau[1] = 0.4;
  EXPECT_EQ(MessageOf<std::invalid_argument>([&] { p.assign(n, bad); }),
            "householder_tau[1] must be 0 or 2 / ||v_1||^2 = 0.5 (an orthogonal reflector), got 0.4");
  bad = q;
  bad.vectors[7] = std::numeric_limits<double>::infinity();
  EXPECT_EQ(MessageOf<std::invalid_argument>([&] { p.assign(n, bad); }),
            "householder[7] (reflector 2) must be finite, got inf");
  bad = q;
  bad.tau.pop_back();
  EXPECT_EQ(MessageOf<std::invalid_argument>([&] { p.assign(n, bad); }),
            "householder and householder_tau must have 10 and 4 entries (or both be empty), got 10 and 3");
}

// ---- convergence ---------------------------------------------------------------

TEST(CMAES, SphereConverges) {
  CMAESOptions o;
  o.ftarget = 1e-10;
  o.seed = 1;
  CMAES es(std::vector<double>(10, 1.0), 0.5, o);
  Optimize(es, Sphere);
  EXPECT_EQ(es.stop().count("ftarget"), 1u);
  EXPECT_LT(es.best_value(), 1e-10);
  EXPECT_LT(es.evaluations(), 2500);  // pycma needs ~1600 for 1e-10 here
  EXPECT_EQ(es.evaluations(), es.iterations() * 10);
}

TEST(CMAES, EllipsoidConverges) {
  CMAESOptions o;
  o.ftarget = 1e-8;
  CMAES es(std::vector<double>(10, 1.0), 0.5, o);
  Optimize(es, Ellipsoid);
  EXPECT_LT(es.best_value(), 1e-8);
  EXPECT_LT(es.evaluations(), 5000);  // pycma: median ~4000
}

TEST(SepCMAES, SphereAndSeparableEllipsoidConverge) {
  CMAESOptions o;
  o.ftarget = 1e-10;
  SepCMAES sphere(std::vector<double>(30, 1.0), 0.5, o);
  Optimize(sphere, Sphere);
  EXPECT_LT(sphere.best_value(), 1e-10);
  SepCMAES elli(std::vector<double>(30, 1.0), 0.5, o);
  Optimize(elli, Ellipsoid);
  EXPECT_LT(elli.best_value(), 1e-10);
  EXPECT_TRUE(elli.state().eigenvectors.empty());
}

// ---- determinism ---------------------------------------------------------------

template <class Strategy>
CMAState RunWithThreads(std::size_t n, int threads, int generations) {
  CMAESOptions o;
  o.num_threads = threads;
  o.seed = 11;
  Strategy es(std::vector<double>(n, 0.3), 0.7, o);
  Optimize(es, Ellipsoid, generations);
  return es.state();
}

TEST(CMAES, ThreadCountDoesNotChangeBits) {
  // n = 200: sampling, rank-mu update and eigendecomposition all run threaded.
  const CMAState one = RunWithThreads<CMAES>(200, 1, 12);
  const CMAState three = RunWithThreads<CMAES>(200, 3, 12);
  ASSERT_GT(one.eigen_generation, 0);
  EXPECT_TRUE(SameBits(one.mean, three.mean));
  EXPECT_TRUE(SameBits(one.cov, three.cov));
  EXPECT_TRUE(SameBits(one.p_sigma, three.p_sigma));
  EXPECT_TRUE(SameBits(one.p_c, three.p_c));
  EXPECT_TRUE(SameBits(one.eigenvectors, three.eigenvectors));
  ASSERT_FALSE(one.householder.tau.empty());  // n > 32: Q kept as reflectors
  EXPECT_TRUE(SameBits(one.householder.vectors, three.householder.vectors));
  EXPECT_TRUE(SameBits(one.householder.tau, three.householder.tau));
  EXPECT_EQ(one.sigma, three.sigma);
}

TEST(TPA, AutoIsTPAFromDimension300AndTheThreadCountDoesNotChangeBits) {
  CMAESOptions o;
  EXPECT_FALSE(SepCMAES(std::vector<double>(kTPADimension - 1, 0.0), 1.0, o).tpa());
  EXPECT_TRUE(SepCMAES(std::vector<double>(kTPADimension, 0.0), 1.0, o).tpa());
  o.step_size_adaptation = StepSizeAdaptation::kCSA;
  EXPECT_FALSE(CMAES(std::vector<double>(kTPADimension, 0.0), 1.0, o).tpa());
  o.step_size_adaptation = StepSizeAdaptation::kTPA;
  EXPECT_TRUE(CMAES(std::vector<double>(3, 0.0), 1.0, o).tpa());
  // n = 300 full CMA-ES: TPA by default, threaded sampling and update.
  const CMAState one = RunWithThreads<CMAES>(kTPADimension, 1, 6);
  const CMAState two = RunWithThreads<CMAES>(kTPADimension, 2, 6);
  EXPECT_NE(one.tpa_s, 0.0);
  EXPECT_EQ(one.tpa_s, two.tpa_s);
  EXPECT_EQ(one.sigma, two.sigma);
  EXPECT_TRUE(SameBits(one.mean, two.mean));
  EXPECT_TRUE(SameBits(one.mean_shift, two.mean_shift));
  EXPECT_TRUE(SameBits(one.cov, two.cov));
}

TEST(TPA, PairIsMirroredAlongTheMeanShiftAndTellKeysRefusesIt) {
  CMAESOptions o;
  o.step_size_adaptation = StepSizeAdaptation::kTPA;
  o.seed = 4;
  SepCMAES es(std::vector<double>(6, 1.0), 0.5, o);
  Optimize(es, Ellipsoid, 3);
  const CMAState s = es.state();
  const std::vector<double> x = es.ask();
  ASSERT_EQ(es.tpa_row(), 0u);
  double ratio = 0.0;
  for (std::size_t i = 0; i < 6; ++i) {
    EXPECT_NEAR(x[i] - s.mean[i], -(x[6 + i] - s.mean[i]), 1e-15);
    const double r = (x[i] - s.mean[i]) / s.mean_shift[i];
    if (i == 0) ratio = r;
    EXPECT_NEAR(r, ratio, 1e-12 * std::fabs(ratio));  // along the shift
  }
  const std::vector<std::int64_t> keys = es.keys();
  const std::vector<double> values(es.population_size(), 1.0);
  EXPECT_THROW(es.tell_keys(keys.data(), values.data(), keys.size()), std::logic_error);
}

TEST(SepCMAES, ThreadCountDoesNotChangeBits) {
  const CMAState one = RunWithThreads<SepCMAES>(20000, 1, 5);
  const CMAState three = RunWithThreads<SepCMAES>(20000, 3, 5);
  EXPECT_TRUE(SameBits(one.mean, three.mean));
  EXPECT_TRUE(SameBits(one.cov, three.cov));
  EXPECT_EQ(one.sigma, three.sigma);
}

TEST(CMAES, SameSeedSameRunOtherSeedOtherRun) {
  EXPECT_TRUE(SameBits(RunWithThreads<CMAES>(8, 1, 30).mean, RunWithThreads<CMAES>(8, 1, 30).mean));
  CMAESOptions o;
  o.seed = 12;
  CMAES other(std::vector<double>(8, 0.3), 0.7, o);
  Optimize(other, Ellipsoid, 30);
  EXPECT_FALSE(SameBits(other.state().mean, RunWithThreads<CMAES>(8, 1, 30).mean));
}

// ---- keys ----------------------------------------------------------------------

TEST(CMAES, KeysAreDocumentedAndSamplesRegenerate) {
  CMAESOptions o;
  o.seed = 5;
  o.lower.assign(6, -0.5);
  o.upper.assign(6, 0.5);
  CMAES es(std::vector<double>(6, 0.1), 0.8, o);
  Optimize(es, Sphere, 12);  // a non-trivial state, with eigendecompositions
  const std::vector<double> x = es.ask();
  const std::size_t n = 6;
  for (std::size_t k = 0; k < es.population_size(); ++k) {
    const std::int64_t key = es.keys()[k];
    EXPECT_EQ(static_cast<std::uint64_t>(key),
              hash_draw(5, static_cast<std::uint64_t>(es.state().generation), k, 0) >> 2);
    EXPECT_EQ(key, es.sample_key(k));
    const std::vector<double> again = es.regenerate(key);
    EXPECT_TRUE(SameBits(again, std::vector<double>(x.begin() + k * n, x.begin() + (k + 1) * n))) << k;
    for (double v : again) {
      EXPECT_GE(v, -0.5);
      EXPECT_LE(v, 0.5);
    }
  }
  // Asking twice gives the same population.
  EXPECT_TRUE(SameBits(es.ask(), x));
}

TEST(CMAES, TellKeysEqualsTell) {
  CMAES a(std::vector<double>(7, 1.0), 0.5);
  CMAES b(std::vector<double>(7, 1.0), 0.5);
  for (int g = 0; g < 20; ++g) {
    const std::vector<double>& x = a.ask();
    std::vector<double> values(a.population_size());
    for (std::size_t k = 0; k < values.size(); ++k) values[k] = Ellipsoid(x.data() + k * 7, 7);
    const std::vector<std::int64_t> keys = a.keys();
    a.tell(values.data(), values.size());
    b.tell_keys(keys.data(), values.data(), values.size());  // offline: no ask
  }
  EXPECT_TRUE(SameBits(a.state().mean, b.state().mean));
  EXPECT_TRUE(SameBits(a.state().cov, b.state().cov));
  EXPECT_EQ(a.best_value(), b.best_value());
}

TEST(CMAES, TiesAreRankedByIndex) {
  CMAES es(std::vector<double>(4, 0.0), 1.0);
  const std::vector<double> x = es.ask();
  const CMAParams& p = es.params();
  std::vector<double> want(4, 0.0);
  for (std::size_t i = 0; i < p.mu; ++i) {
    for (std::size_t j = 0; j < 4; ++j) want[j] += p.weights[i] * x[i * 4 + j];
  }
  const std::vector<double> flat(es.population_size(), 3.0);
  es.tell(flat.data(), flat.size());
  for (std::size_t j = 0; j < 4; ++j) EXPECT_NEAR(es.state().mean[j], want[j], 1e-15);
}

// ---- termination and restarts ----------------------------------------------------

TEST(CMAES, TerminationReportsItsName) {
  {
    CMAESOptions o;
    o.max_evaluations = 100;
    CMAES es(std::vector<double>(5, 1.0), 0.5, o);
    Optimize(es, Sphere);
    EXPECT_EQ(es.stop(), (std::map<std::string, double>{{"maxfevals", 100.0}}));
    EXPECT_EQ(es.evaluations(), 104);  // whole generations of 8
  }
  {
    CMAESOptions o;
    o.tolx = 1e-4;
    CMAES es(std::vector<double>(5, 1.0), 0.5, o);
    Optimize(es, Sphere);
    EXPECT_EQ(es.stop().at("tolx"), 1e-4);
  }
  {
    CMAESOptions o;
    o.conditioncov = 1e3;
    CMAES es(std::vector<double>(5, 1.0), 0.5, o);
    Optimize(es, Ellipsoid);
    EXPECT_EQ(es.stop().at("conditioncov"), 1e3);
  }
  {  // a flat function: the f-values and their history have range 0
    CMAES es(std::vector<double>(5, 1.0), 0.5);
    Optimize(es, [](const double*, std::size_t) { return 1.0; });
    EXPECT_EQ(es.stop().at("tolfun"), 1e-11);
    EXPECT_EQ(es.stop().at("tolfunhist"), 1e-12);
    EXPECT_EQ(es.iterations(), 10 + 19);  // 10 + ceil(30 * 5 / 8) generations
  }
  {
    SepCMAES es(std::vector<double>(5, 1.0), 0.5);
    Optimize(es, Sphere);  // no target: runs until the numbers stop moving
    EXPECT_FALSE(es.stop().empty());
    EXPECT_LT(es.best_value(), 1e-13);  // from 5: converged to rounding level
  }
}

TEST(CMAES, IpopRestartsDoubleThePopulation) {
  CMAESOptions o;
  o.tolx = 1e-3;
  o.restarts = 2;
  CMAES es(std::vector<double>(5, 1.0), 0.5, o);
  std::vector<std::size_t> sizes;
  for (int g = 0; g < 100000 && !es.stopped(); ++g) {
    if (sizes.empty() || sizes.back() != es.population_size()) sizes.push_back(es.population_size());
    const std::vector<double>& x = es.ask();
    std::vector<double> v(es.population_size());
    for (std::size_t k = 0; k < v.size(); ++k) v[k] = Sphere(x.data() + k * 5, 5);
    es.tell(v.data(), v.size());
  }
  EXPECT_EQ(sizes, (std::vector<std::size_t>{8, 16, 32}));
  ASSERT_EQ(es.restart_history().size(), 2u);
  EXPECT_EQ(es.restart_history()[0].at("tolx"), 1e-3);
  EXPECT_EQ(es.stop().at("tolx"), 1e-3);
  EXPECT_EQ(es.restarts_done(), 2);
}

TEST(CMAES, BipopCountsOnlyLargeRestartsAsPycma) {
  struct Run {
    std::size_t lambda;
    double sigma0;
  };
  auto run = [] {
    CMAESOptions o;
    o.tolx = 1e-3;
    o.restarts = 5;
    o.restart_strategy = RestartStrategy::kBIPOP;
    o.seed = 4;
    CMAES es(std::vector<double>(5, 1.0), 0.5, o);
    std::vector<Run> runs;
    int last_restart = -1;
    for (int g = 0; g < 1000000 && !es.stopped(); ++g) {
      if (es.restarts_done() != last_restart) {
        last_restart = es.restarts_done();
        runs.push_back({es.population_size(), es.run_sigma0()});
      }
      const std::vector<double>& x = es.ask();
      std::vector<double> v(es.population_size());
      for (std::size_t k = 0; k < v.size(); ++k) v[k] = Sphere(x.data() + k * 5, 5);
      es.tell(v.data(), v.size());
    }
    EXPECT_TRUE(es.stopped());
    EXPECT_EQ(es.large_restarts(), 5);  // restarts counts the large runs only
    EXPECT_EQ(es.small_restarts(), es.restarts_done() - 5);
    EXPECT_EQ(runs.size(), static_cast<std::size_t>(1 + es.restarts_done()));
    return runs;
  };
  const std::vector<Run> runs = run();
  ASSERT_GT(runs.size(), 6u);  // small runs happened in between
  EXPECT_EQ(runs[0].lambda, 8u);
  EXPECT_EQ(runs[1].lambda, 16u);  // the first restart is large (budget_small >= max(1, budget_large))
  std::vector<std::size_t> large;
  for (const Run& r : runs) {
    if (r.sigma0 == 0.5) {
      large.push_back(r.lambda);
    } else {  // small: lambda0 <= lambda <= lambda0 2^L, sigma0 10^(-2U)
      EXPECT_GE(r.lambda, 8u);
      EXPECT_LE(r.lambda, large.back());
      EXPECT_GT(r.sigma0, 0.5e-2);
      EXPECT_LT(r.sigma0, 0.5);
    }
  }
  EXPECT_EQ(large, (std::vector<std::size_t>{8, 16, 32, 64, 128, 256}));
  EXPECT_EQ(runs.back().sigma0, 0.5);  // the optimisation ends with the 5th large run
  const std::vector<Run> again = run();
  ASSERT_EQ(again.size(), runs.size());
  for (std::size_t r = 0; r < runs.size(); ++r) {
    EXPECT_EQ(again[r].lambda, runs[r].lambda);
    EXPECT_EQ(again[r].sigma0, runs[r].sigma0);
  }
}

// ---- the ask/tell contract and validation ----------------------------------------

TEST(CMAES, TellContract) {
  CMAES es(std::vector<double>(3, 0.0), 1.0);
  const std::vector<double> v(es.population_size(), 1.0);
  EXPECT_TRUE(ThrowsWithMessage<std::logic_error>([&] { es.tell(v.data(), v.size()); },
                                                  "tell() without a pending ask()"));
  es.ask();
  EXPECT_EQ(MessageOf<std::invalid_argument>([&] { es.tell(v.data(), 3); }),
            "#f-values = 3 must equal #solutions = 7");
  std::vector<double> nan = v;
  nan[2] = std::numeric_limits<double>::quiet_NaN();
  EXPECT_EQ(MessageOf<std::invalid_argument>([&] { es.tell(nan.data(), nan.size()); }), "values[2] is NaN");
  es.tell(v.data(), v.size());  // the failed tells changed nothing
  EXPECT_EQ(es.iterations(), 1);
  EXPECT_TRUE(ThrowsWithMessage<std::logic_error>([&] { es.tell(v.data(), v.size()); },
                                                  "tell() without a pending ask()"));
  std::vector<double> inf = v;
  inf[0] = std::numeric_limits<double>::infinity();
  es.ask();
  es.tell(inf.data(), inf.size());  // +inf is a valid (worst) value
}

TEST(CMAES, ValidatesOptions) {
  using V = std::vector<double>;
  auto make = [](V x0, double sigma0, CMAESOptions o = {}) { CMAES es(std::move(x0), sigma0, std::move(o)); };
  EXPECT_EQ(MessageOf<std::invalid_argument>([&] { make(V{}, 1.0); }), "x0 must not be empty");
  EXPECT_EQ(MessageOf<std::invalid_argument>([&] { make(V{1, NAN}, 1.0); }), "x0[1] must be finite, got nan");
  EXPECT_EQ(MessageOf<std::invalid_argument>([&] { make(V{1, 2}, -0.5); }),
            "sigma0 must be > 0 and finite, got -0.5");
  CMAESOptions o;
  o.population_size = 1;
  EXPECT_EQ(MessageOf<std::invalid_argument>([&] { make(V{1, 2}, 1.0, o); }), "population_size must be >= 2, got 1");
  o = {};
  o.lower = {0};
  o.upper = {1, 2};
  EXPECT_EQ(MessageOf<std::invalid_argument>([&] { make(V{1, 2}, 1.0, o); }),
            "lower must have 2 entries (one per parameter), got 1");
  o.lower = {0, 3};
  EXPECT_EQ(MessageOf<std::invalid_argument>([&] { make(V{1, 2}, 1.0, o); }),
            "lower[1] must be < upper[1], got 3 and 2");
  o.lower = {0, 0};
  o.upper = {0.5, 3};
  EXPECT_EQ(MessageOf<std::invalid_argument>([&] { make(V{1, 2}, 1.0, o); }),
            "x0[0] = 1 is outside the bounds [0, 0.5]");
  o = {};
  o.max_evaluations = 0;
  EXPECT_EQ(MessageOf<std::invalid_argument>([&] { make(V{1, 2}, 1.0, o); }), "max_evaluations must be >= 1, got 0");
  o = {};
  o.tolfun = -1;
  EXPECT_EQ(MessageOf<std::invalid_argument>([&] { make(V{1, 2}, 1.0, o); }), "tolfun must be >= 0, got -1");
  o = {};
  o.restarts = -1;
  EXPECT_EQ(MessageOf<std::invalid_argument>([&] { make(V{1, 2}, 1.0, o); }), "restarts must be >= 0, got -1");
  o = {};
  o.num_threads = 0;
  EXPECT_EQ(MessageOf<std::invalid_argument>([&] { make(V{1, 2}, 1.0, o); }), "num_threads must be >= 1, got 0");
}

TEST(CMAES, SetStateValidatesAndRoundTrips) {
  CMAES es(std::vector<double>(3, 0.0), 1.0);
  Optimize(es, Ellipsoid, 10);
  CMAState s = es.state();
  CMAES other(std::vector<double>(3, 0.0), 1.0);
  other.set_state(s);
  EXPECT_TRUE(SameBits(other.ask(), es.ask()));
  s.cov[1] = 5.0;  // not symmetric
  EXPECT_TRUE(ThrowsWithMessage<std::invalid_argument>([&] { other.set_state(s); }, "state.cov must be symmetric"));
  s = es.state();
  s.eigenvalues.clear();
  s.eigenvectors.clear();
  s.cov = {1, 2, 0, 2, 1, 0, 0, 0, 1};  // eigenvalue -1
  EXPECT_TRUE(
      ThrowsWithMessage<std::invalid_argument>([&] { other.set_state(s); }, "state.cov must be positive definite"));
  s = es.state();
  s.sigma = 0;
  EXPECT_EQ(MessageOf<std::invalid_argument>([&] { other.set_state(s); }), "state.sigma must be > 0 and finite, got 0");
}

TEST(CMAES, FactoredStateRoundTripsAndItsBasisIsTheEigenvectors) {
  // n = 40 > 32: each decomposition keeps Q as reflectors.
  const std::size_t n = 40;
  CMAESOptions o;
  o.seed = 3;
  CMAES es(std::vector<double>(n, 1.0), 0.5, o);
  Optimize(es, Ellipsoid, 40);
  const CMAState s = es.state();
  ASSERT_GT(s.eigen_generation, 0);
  ASSERT_EQ(s.householder.tau.size(), n - 1);
  // A run that decomposes C right now: B diag(eigenvalues) B^T = C.
  CMAState now = s;
  now.eigenvalues.clear();
  now.eigenvectors.clear();
  now.householder = Householder{};
  CMAES fresh(std::vector<double>(n, 0.0), 1.0, o);
  fresh.set_state(now);
  ASSERT_EQ(fresh.state().householder.tau.size(), n - 1);
  const std::vector<double> bt = fresh.eigenbasis();
  const std::vector<double>& ev = fresh.state().eigenvalues;
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < n; ++j) {
      double c = 0;
      for (std::size_t k = 0; k < n; ++k) c += bt[k * n + i] * ev[k] * bt[k * n + j];
      EXPECT_NEAR(c, s.cov[i * n + j], 1e-12 * ev.back()) << i << ", " << j;
    }
  }
  // A sample is m + sigma B D z with B^T = eigenbasis(), z its key's normals.
  const std::vector<double> x = es.ask();
  const std::vector<double> b = es.eigenbasis();
  std::vector<float> z(n);
  fill_gaussian(3, static_cast<std::uint64_t>(es.keys()[2]), 0, z.data(), n);
  for (std::size_t i = 0; i < n; ++i) {
    double y = 0;
    for (std::size_t j = 0; j < n; ++j) y += b[j * n + i] * std::sqrt(s.eigenvalues[j]) * static_cast<double>(z[j]);
    EXPECT_NEAR(x[2 * n + i], s.mean[i] + s.sigma * y, 1e-12) << i;
  }
  // The state continues bit for bit; a broken reflector is named.
  CMAES other(std::vector<double>(n, 0.0), 1.0, o);
  other.set_state(s);
  EXPECT_TRUE(SameBits(other.ask(), x));
  // The earlier format, B^T itself and no reflectors (Q = I), samples the
  // same points to rounding.
  CMAState explicit_basis = s;
  explicit_basis.eigenvectors = b;
  explicit_basis.householder = Householder{};
  CMAES earlier(std::vector<double>(n, 0.0), 1.0, o);
  earlier.set_state(explicit_basis);
  const std::vector<double> xe = earlier.ask();
  for (std::size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(xe[i], x[i], 1e-12) << i;
  EXPECT_TRUE(SameBits(earlier.eigenbasis(), b));
  CMAState bad = s;
  bad.householder.tau[3] *= 1.5;
  EXPECT_TRUE(ThrowsWithMessage<std::invalid_argument>([&] { other.set_state(bad); },
                                                       "state.householder_tau[3] must be 0 or 2 / ||v_3||^2"));
  bad = s;
  bad.eigenvalues.clear();
  bad.eigenvectors.clear();
  EXPECT_TRUE(ThrowsWithMessage<std::invalid_argument>(
      [&] { other.set_state(bad); },
      "state.householder must be empty when state.eigenvalues and state.eigenvectors are"));
  bad = s;
  bad.householder.tau.clear();
  EXPECT_TRUE(ThrowsWithMessage<std::invalid_argument>([&] { other.set_state(bad); },
                                                       "state.householder and householder_tau must have 780 and 39"));
}

// ---- told (repaired) and injected solutions --------------------------------------

template <class Strategy>
void ExpectTellSolutionsOfTheAskedRowsIsTell() {
  Strategy a(std::vector<double>(7, 1.0), 0.5);
  Strategy b(std::vector<double>(7, 1.0), 0.5);
  for (int g = 0; g < 30; ++g) {
    const std::vector<double> x = a.ask();
    EXPECT_TRUE(SameBits(b.ask(), x));
    std::vector<double> values(a.population_size());
    for (std::size_t k = 0; k < values.size(); ++k) values[k] = Ellipsoid(x.data() + k * 7, 7);
    a.tell(values.data(), values.size());
    b.tell_solutions(x.data(), values.data(), values.size());
  }
  EXPECT_TRUE(SameBits(a.state().mean, b.state().mean));
  EXPECT_TRUE(SameBits(a.state().cov, b.state().cov));
  EXPECT_EQ(a.state().sigma, b.state().sigma);
}

TEST(CMAES, TellSolutionsOfTheAskedRowsIsTellBitForBit) {
  ExpectTellSolutionsOfTheAskedRowsIsTell<CMAES>();
  ExpectTellSolutionsOfTheAskedRowsIsTell<SepCMAES>();
}

TEST(SepCMAES, RepairedRowsGiveTheirClippedStepToTheMean) {
  // Generation 0: C = I, so z = y = (x - m) / sigma.
  const std::size_t n = 4;
  SepCMAES es(std::vector<double>(n, 0.0), 0.5);
  std::vector<double> x = es.ask();
  const std::size_t lambda = es.population_size();
  x[0] = 100.0;                  // far away, told best: its step is clipped
  x[1 * n + 2] += 0.01;          // near: kept as told
  std::vector<double> values(lambda);
  for (std::size_t k = 0; k < lambda; ++k) values[k] = static_cast<double>(k);
  std::vector<double> y(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) y[i] = x[i] / 0.5;
  const double dn = static_cast<double>(n);
  const double upper = std::sqrt(dn) + 2.0 * dn / (dn + 2.0);  // pycma's repair_genotype
  const double len = std::sqrt(Sphere(y.data(), n));
  for (std::size_t i = 0; i < n; ++i) y[i] *= upper / len;
  std::vector<double> want(n, 0.0);
  for (std::size_t r = 0; r < es.params().mu; ++r) {
    for (std::size_t i = 0; i < n; ++i) want[i] += 0.5 * es.params().weights[r] * y[r * n + i];
  }
  es.tell_solutions(x.data(), values.data(), lambda);
  for (std::size_t i = 0; i < n; ++i) EXPECT_NEAR(es.state().mean[i], want[i], 1e-14) << i;
  EXPECT_EQ(es.best_solution(), std::vector<double>(x.begin(), x.begin() + n));  // the told solution
  std::vector<double> bad = x;
  bad[3] = std::numeric_limits<double>::infinity();
  es.ask();
  EXPECT_EQ(MessageOf<std::invalid_argument>([&] { es.tell_solutions(bad.data(), values.data(), lambda); }),
            "solutions[0][3] must be finite, got inf");
}

TEST(CMAES, InjectedSolutionsComeFirstInTheNextAsk) {
  const std::size_t n = 5;
  CMAES es(std::vector<double>(n, 0.0), 1.0);
  Optimize(es, Sphere, 3);
  const std::vector<double> m = es.state().mean;
  const double sigma = es.state().sigma;
  std::vector<double> near = m, far = m;
  near[0] += 0.1 * sigma;   // short step: kept as it is
  far[1] += 1e3 * sigma;    // long step: rescaled to the member's chi length
  std::vector<double> both = near;
  both.insert(both.end(), far.begin(), far.end());
  es.inject(both.data(), 2);
  EXPECT_EQ(es.pending_injections(), 2u);
  const std::vector<double> x = es.ask();
  EXPECT_EQ(es.num_injected(), 2u);
  EXPECT_EQ(es.pending_injections(), 0u);
  EXPECT_EQ(std::vector<double>(x.begin(), x.begin() + n), near);
  // Row 1: on the ray from m through `far`, at the Mahalanobis length of its key's normals.
  {
    std::vector<float> f(n);
    fill_gaussian(0, static_cast<std::uint64_t>(es.keys()[1]), 0, f.data(), n);
    double z2 = 0;
    for (float v : f) z2 += static_cast<double>(v) * static_cast<double>(v);
    const std::vector<double>& ev = es.state().eigenvalues;
    const std::vector<double>& bt = es.state().eigenvectors;
    double w2 = 0;  // ||D^-1 B^T (x_1 - m) / sigma||
    for (std::size_t j = 0; j < n; ++j) {
      double dot = 0;
      for (std::size_t i = 0; i < n; ++i) dot += bt[j * n + i] * (x[n + i] - m[i]) / sigma;
      w2 += dot * dot / ev[j];
    }
    EXPECT_NEAR(std::sqrt(w2), std::sqrt(z2), 1e-9);
    for (std::size_t i = 0; i < n; ++i) {
      if (i != 1) EXPECT_NEAR(x[n + i], m[i], 1e-12) << i;
    }
    EXPECT_GT(x[n + 1], m[1]);
  }
  for (std::size_t k = 2; k < es.population_size(); ++k) {  // the others: sampled as usual
    EXPECT_TRUE(SameBits(es.regenerate(es.keys()[k]), std::vector<double>(x.begin() + k * n, x.begin() + (k + 1) * n)));
  }
  // More injections than members wait for the next ask.
  std::vector<double> many(n * (es.population_size() + 3), 0.25);
  es.inject(many.data(), es.population_size() + 3);
  std::vector<double> values(es.population_size(), 1.0);
  es.tell(values.data(), values.size());
  es.ask();
  EXPECT_EQ(es.num_injected(), es.population_size());
  EXPECT_EQ(es.pending_injections(), 3u);
}

// ---- integer variables: CMA-ES with margin ----------------------------------------

// Pr(N(0, 1) > t).
double UpperTail(double t) { return 0.5 * std::erfc(t / std::sqrt(2.0)); }

TEST(CMAES, IntegerCoordinatesAreIntegralAndKeepTheirMargin) {
  const std::size_t n = 6;
  CMAESOptions o;
  o.integer_variables = {1, 3, 5};
  o.lower.assign(n, -std::numeric_limits<double>::infinity());
  o.upper.assign(n, std::numeric_limits<double>::infinity());
  o.lower[5] = 0.0;  // binary
  o.upper[5] = 1.0;
  o.seed = 2;
  CMAES es(std::vector<double>(n, 0.3), 1.0, o);
  const double alpha = 1.0 / (static_cast<double>(n) * static_cast<double>(es.population_size()));
  EXPECT_DOUBLE_EQ(es.margin(), alpha);
  auto f = [](const double* x, std::size_t) {  // optimum (0.5, 2, 0, -3, 0, 1)
    return (x[0] - 0.5) * (x[0] - 0.5) + (x[1] - 2) * (x[1] - 2) + x[2] * x[2] + (x[3] + 3) * (x[3] + 3) +
           x[4] * x[4] + (1 - x[5]);
  };
  bool corrected = false;
  for (int g = 0; g < 300; ++g) {
    const std::vector<double> x = es.ask();
    for (std::size_t k = 0; k < es.population_size(); ++k) {
      for (std::size_t i : {1, 3, 5}) EXPECT_EQ(x[k * n + i], std::round(x[k * n + i]));
      EXPECT_TRUE(x[k * n + 5] == 0.0 || x[k * n + 5] == 1.0);
    }
    std::vector<double> v(es.population_size());
    for (std::size_t k = 0; k < v.size(); ++k) v[k] = f(x.data() + k * n, n);
    es.tell(v.data(), v.size());
    // After each tell: each integer coordinate leaves its integer with
    // probability >= alpha (alpha / 2 per side inside the range).
    const CMAState& s = es.state();
    for (std::size_t i : {1, 3}) {
      const double sd = s.sigma * s.affine[i] * std::sqrt(s.cov[i * n + i]);
      const double k = std::ceil(s.mean[i] - 0.5);
      EXPECT_GE(UpperTail((s.mean[i] - (k - 0.5)) / sd), 0.5 * alpha * (1 - 1e-9)) << g;
      EXPECT_GE(UpperTail((k + 0.5 - s.mean[i]) / sd), 0.5 * alpha * (1 - 1e-9)) << g;
      if (s.affine[i] != 1.0) corrected = true;
    }
    const double sd5 = s.sigma * s.affine[5] * std::sqrt(s.cov[5 * n + 5]);
    EXPECT_GE(UpperTail(std::fabs(s.mean[5] - 0.5) / sd5), alpha * (1 - 1e-6)) << g;  // m - 1/2 cancels
  }
  EXPECT_TRUE(corrected);
  EXPECT_LT(es.best_value(), 1e-12);  // the integer part exact
  const std::vector<double> best = es.best_solution();
  EXPECT_EQ(best[1], 2.0);
  EXPECT_EQ(best[3], -3.0);
  EXPECT_EQ(best[5], 1.0);
}

TEST(CMAES, IntegerOptionsAreValidated) {
  CMAESOptions o;
  o.integer_variables = {0, 4};
  EXPECT_EQ(MessageOf<std::invalid_argument>([&] { CMAES(std::vector<double>(3, 0.0), 1.0, o); }),
            "integer_variables[1] = 4 is not a parameter index (num_params = 3)");
  o.integer_variables = {1, 1};
  EXPECT_EQ(MessageOf<std::invalid_argument>([&] { CMAES(std::vector<double>(3, 0.0), 1.0, o); }),
            "integer_variables[1] = 1 is repeated");
  o.integer_variables = {0};
  o.margin = 0.5;
  EXPECT_EQ(MessageOf<std::invalid_argument>([&] { CMAES(std::vector<double>(3, 0.0), 1.0, o); }),
            "margin must be in [0, 0.5), got 0.5");
  o.margin.reset();
  o.lower = {0.2, -1, -1};
  o.upper = {0.8, 1, 1};
  EXPECT_EQ(MessageOf<std::invalid_argument>([&] { CMAES(std::vector<double>{0.5, 0, 0}, 1.0, o); }),
            "integer variable 0 has no integer within its bounds [0.2, 0.8]");
}

}  // namespace
}  // namespace evokit

namespace evokit {
namespace {

// The bound transformation is pycma's BoundTransform: the values below are
// what pycma 4.5's cma.BoundTransform([[lo], [hi]]).transform gives.
TEST(CMABounds, LinearQuadraticTransformationAsPycma) {
  struct Case {
    double lo, hi;
    std::vector<double> in, out;
  };
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<Case> cases = {
      {-5, 5, {5.5, 4.9, 4.76, -5.25, -5.1, 16.0, -30.3, 0.0, 5.25, 15.75},
       {4.9375, 4.8775, 4.7599, -5.0, -4.9775, -4.9375, -1.1999999999999993, 0.0, 5.0, -5.0}},
      {0.5, 0.6, {0.45, 0.5, 0.55, 0.61, 0.7, 2.0}, {0.5, 0.5125, 0.55, 0.592, 0.5875, 0.5124999999999998}},
      {-inf, 2.0, {1.8, 1.95, 2.0, 2.1, 2.2, 3.0}, {1.8, 1.94375, 1.975, 2.0, 1.975, 1.2}},
      {0.0, inf, {-1, 0, 1, 2, -0.1}, {0.9, 0.0125, 1, 2, 0.0125}},
  };
  for (const Case& c : cases) {
    for (std::size_t k = 0; k < c.in.size(); ++k) {
      EXPECT_NEAR(detail::into_bounds(c.in[k], c.lo, c.hi), c.out[k], 1e-12)
          << "[" << c.lo << ", " << c.hi << "] at " << c.in[k];
    }
  }
  // Inside the box, monotone and continuous over a period; never outside.
  double last = detail::into_bounds(-5.25, -5, 5);
  for (double v = -5.25; v <= 5.25; v += 1e-4) {
    const double t = detail::into_bounds(v, -5, 5);
    ASSERT_GE(t, last - 1e-15) << v;
    ASSERT_LE(t - last, 2e-4) << v;  // slope <= 1: continuous
    ASSERT_GE(t, -5.0);
    ASSERT_LE(t, 5.0);
    last = t;
  }
}

}  // namespace
}  // namespace evokit
