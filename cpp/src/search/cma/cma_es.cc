// CMAES and SepCMAES: the covariance models behind CMABase's hooks
// (cma_base.cc). Full: C as an n x n matrix, sampled through its lazily
// updated eigendecomposition C = B D^2 B^T (symmetric_eigen.cc), y = B D z.
// Separable: C diagonal, y = sqrt(diag C) z, every generation.
//
//   N. Hansen, "The CMA Evolution Strategy: A Tutorial", arXiv:1604.00772
//   (2016); `Eq. (n)` marks the tutorial's equations.
//   R. Ros, N. Hansen, PPSN X (2008): separable CMA-ES.
#include "evokit/cma_es.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>

#include "common/messages.h"
#include "common/parallel.h"
#include "linalg/dense_kernels.h"

namespace evokit {

namespace detail {
namespace {

std::string num(double v) { return format_number(v); }

// out[k * n + i] = sum_j bt[j * n + i] * v[k * n + j] for k < count: rows of
// v times B, B^T given row-major. Parallel over blocks of i; each output sums
// over j in ascending order.
void times_b(const double* bt, std::size_t n, const double* v, double* out, std::size_t count,
             int threads) {
  std::vector<double> vt(n * count);  // v transposed: vt[j * count + k]
  for (std::size_t k = 0; k < count; ++k) {
    for (std::size_t j = 0; j < n; ++j) vt[j * count + k] = v[k * n + j];
  }
  const std::size_t blocks = ceil_div(n, kRowBlock);
  parallel_items(blocks, team_size(blocks, threads), [&](std::size_t b) {
    const std::size_t i0 = b * kRowBlock;
    const std::size_t len = std::min(kRowBlock, n - i0);
    transposed_product(vt.data(), count, count, bt + i0, n, n, len, out + i0, n);
  });
}

// From this dimension on, sampling multiplies by the packed eigenvectors and
// Eq. (47) runs as packed products (matmul_packed runs at about twice the
// rate of transposed_product and of the row-by-row axpys; packing costs one
// pass over B per decomposition and over the y_k per generation).
constexpr std::size_t kPackedProducts = 128;

}  // namespace
}  // namespace detail

// ---- CMAES -------------------------------------------------------------------

CMAES::CMAES(std::vector<double> x0, double sigma0, CMAESOptions options)
    : CMABase(std::move(x0), sigma0, std::move(options), false) {
  start();
}

void CMAES::reset_covariance() {
  const std::size_t n = num_params();
  state_.cov.assign(n * n, 0.0);
  state_.eigenvectors.assign(n * n, 0.0);
  for (std::size_t i = 0; i < n; ++i) {
    state_.cov[i * n + i] = 1.0;
    state_.eigenvectors[i * n + i] = 1.0;
  }
  state_.eigenvalues.assign(n, 1.0);
  state_.householder = Householder{};
  state_.eigen_generation = 0;
  upper_stale_.store(false);
  pack_eigenvectors();
}

void CMAES::pack_eigenvectors() {
  const std::size_t n = num_params();
  q_.assign(n, state_.householder, threads_for(static_cast<double>(n * n) * 32.0));
  if (n < detail::kPackedProducts) {
    packed_eigenvectors_.clear();
    return;
  }
  packed_eigenvectors_.resize(detail::packed_size(n, n));
  detail::pack_panels(n, n, state_.eigenvectors.data(), n, packed_eigenvectors_.data());
}

void CMAES::times_bt(const double* v, double* out, std::size_t count) const {
  // out = v B^T = (v E) Q^T with E = state.eigenvectors row-major; v E as
  // one product over the packed E, threaded over blocks of kRowBlock
  // columns (two panels each), for n >= kPackedProducts, else times_b (the
  // same sums in the same order).
  const std::size_t n = num_params();
  const int threads = threads_for(static_cast<double>(count * n * n));
  if (packed_eigenvectors_.empty()) {
    detail::times_b(state_.eigenvectors.data(), n, v, out, count, threads);
  } else {
    constexpr std::size_t panels = detail::kRowBlock / detail::kMatmulPanel;
    static_assert(panels * detail::kMatmulPanel == detail::kRowBlock, "whole panels per block");
    const std::size_t blocks = detail::ceil_div(n, detail::kRowBlock);
    detail::parallel_items(blocks, detail::team_size(blocks, threads), [&](std::size_t b) {
      const std::size_t i0 = b * detail::kRowBlock;
      const std::size_t len = std::min(detail::kRowBlock, n - i0);
      detail::matmul_packed(count, len, n, v, n, packed_eigenvectors_.data() + b * panels * n * detail::kMatmulPanel,
                            out + i0, n, false);
    });
  }
  q_.times_qt(out, count, n, threads);
}

void CMAES::sample_y(const double* z, double* y, std::size_t count) const {
  // Eq. (39): y = B D z, as rows: y = (D z) B^T.
  const std::size_t n = num_params();
  std::vector<double> dz(count * n);
  std::vector<double> d(n);
  for (std::size_t j = 0; j < n; ++j) d[j] = std::sqrt(state_.eigenvalues[j]);
  for (std::size_t k = 0; k < count; ++k) {
    for (std::size_t j = 0; j < n; ++j) dz[k * n + j] = d[j] * z[k * n + j];
  }
  times_bt(dz.data(), y, count);
}

void CMAES::whiten(const double* z_w, double* out) const { times_bt(z_w, out, 1); }

std::vector<double> CMAES::eigenbasis() const {
  const std::size_t n = num_params();
  std::vector<double> bt = state_.eigenvectors;
  q_.times_qt(bt.data(), n, n, options_.num_threads);
  return bt;
}

void CMAES::basis_row(std::size_t i, double* out) const {
  const std::size_t n = num_params();
  std::copy_n(state_.eigenvectors.data() + i * n, n, out);
  q_.times_qt(out, 1, n, 1);
}

void CMAES::update_covariance(double a, const std::vector<const double*>& y,
                              const std::vector<double>& coef) {
  const std::size_t n = num_params();
  const std::size_t count = y.size();
  const int threads = threads_for(static_cast<double>(n * n) * static_cast<double>(count + 2) / 2.0);
  if (n >= detail::kPackedProducts) {
    update_covariance_blocked(a, y, coef, threads);
  } else {
    update_covariance_rows(a, y, coef, threads);
  }
  upper_stale_.store(true);
  if (state_.generation - state_.eigen_generation >= params_.eigen_interval) {
    try {
      decompose(state_);
    } catch (const std::invalid_argument& e) {
      throw std::runtime_error(std::string("CMA-ES: the covariance matrix became invalid: ") + e.what());
    }
    pack_eigenvectors();
  }
}

void CMAES::complete_state() const noexcept {
  if (!upper_stale_.load()) return;
  std::lock_guard<std::mutex> lock(mirror_mutex_);
  if (!upper_stale_.load()) return;
  const std::size_t n = num_params();
  mirror_cov(threads_for(static_cast<double>(n * n) / 2.0));
  upper_stale_.store(false);
}

// C's upper triangle from its lower one: block b is columns jb..j1-1, rows
// 0..j1-1, read from rows jb..j1-1 in tiles of 8 x 8 (8 cache lines read, 8
// written per tile).
void CMAES::mirror_cov(int threads) const noexcept {
  const std::size_t n = num_params();
  // Only the stale upper triangle is written, with the values C has (state()
  // is const: the object itself is never const, so the write is defined).
  double* c = const_cast<double*>(state_.cov.data());
  const std::size_t blocks = detail::ceil_div(n, detail::kRowBlock);
  detail::parallel_items(blocks, detail::team_size(blocks, threads), [&](std::size_t b) {
    const std::size_t jb = b * detail::kRowBlock;
    const std::size_t j1 = std::min(n, jb + detail::kRowBlock);
    constexpr std::size_t kTile = 8;
    double tile[kTile][kTile];
    for (std::size_t t0 = jb; t0 < j1; t0 += kTile) {
      const std::size_t tj = std::min(kTile, j1 - t0);
      for (std::size_t i0 = 0; i0 < t0 + tj; i0 += kTile) {
        const std::size_t ti = std::min(kTile, n - i0);
        for (std::size_t a = 0; a < tj; ++a) {
          const double* row = c + (t0 + a) * n + i0;
          for (std::size_t u = 0; u < ti; ++u) tile[u][a] = row[u];
        }
        for (std::size_t u = 0; u < ti; ++u) {
          double* out = c + (i0 + u) * n + t0;
          for (std::size_t a = 0; a < tj; ++a) {
            if (i0 + u < t0 + a) out[a] = tile[u][a];
          }
        }
      }
    }
  });
}

void CMAES::update_covariance_rows(double a, const std::vector<const double*>& y,
                                   const std::vector<double>& coef, int threads) {
  const std::size_t n = num_params();
  double* c = state_.cov.data();
  const double* pc = state_.p_c.data();
  const double c1 = params_.c1;
  const std::size_t count = y.size();
  // The lower triangle, row by row; item t does rows t and n - 1 - t so that
  // items have equal work. Each entry: a C_ij + c1 pc_i pc_j, then the
  // members' terms added in rank order.
  const std::size_t items = (n + 1) / 2;
  auto row = [&](std::size_t i) {
    double* ci = c + i * n;
    const double c1pi = c1 * pc[i];
    for (std::size_t j = 0; j <= i; ++j) ci[j] = a * ci[j] + c1pi * pc[j];
    std::size_t k = 0;
    for (; k + 4 <= count; k += 4) {
      detail::axpy_4x(ci, i + 1, coef[k] * y[k][i], y[k], coef[k + 1] * y[k + 1][i], y[k + 1],
                      coef[k + 2] * y[k + 2][i], y[k + 2], coef[k + 3] * y[k + 3][i], y[k + 3]);
    }
    for (; k < count; ++k) detail::axpy1(y[k], i + 1, coef[k] * y[k][i], ci);
  };
  detail::parallel_items(items, detail::team_size(items, threads), [&](std::size_t t) {
    row(t);
    if (n - 1 - t != t) row(n - 1 - t);
  });
}

void CMAES::update_covariance_blocked(double a, const std::vector<const double*>& y,
                                      const std::vector<double>& coef, int threads) {
  // The lower triangle by blocks of kRowBlock rows: (a C_ij) + S_ij with
  // S = U^T V one packed matrix product over the terms (U's rows coef_k y_k,
  // V's rows y_k; term 0 is c1 pc pc^T), each S_ij summed over the terms in
  // rank order in one accumulator. One pass over C for the scaling and the
  // product together; entries right of the diagonal in a diagonal block are
  // computed too and then overwritten by the mirror.
  const std::size_t n = num_params();
  double* c = state_.cov.data();
  const std::size_t terms = y.size() + 1;
  std::vector<const double*>& rows = blocked_.rows;
  rows.assign(1, state_.p_c.data());
  rows.insert(rows.end(), y.begin(), y.end());
  blocked_.packed.resize(detail::packed_size(terms, n));
  detail::pack_rows(terms, n, rows.data(), blocked_.packed.data());
  // -U^T, row-major n x terms: the product is subtracted (matmul_packed
  // stores or subtracts), and -(-s) is exact.
  std::vector<double>& ut = blocked_.ut;
  ut.resize(n * terms);
  for (std::size_t i = 0; i < n; ++i) ut[i * terms] = -(params_.c1 * state_.p_c[i]);
  for (std::size_t k = 1; k < terms; ++k) {
    const double ck = coef[k - 1];
    const double* yk = y[k - 1];
    for (std::size_t i = 0; i < n; ++i) ut[i * terms + k] = -(ck * yk[i]);
  }
  const std::size_t blocks = detail::ceil_div(n, detail::kRowBlock);
  auto block = [&](std::size_t b) {
    const std::size_t i0 = b * detail::kRowBlock;
    const std::size_t i1 = std::min(n, i0 + detail::kRowBlock);
    detail::matmul_packed_scaled(i1 - i0, i1, terms, ut.data() + i0 * terms, terms, blocked_.packed.data(),
                                 c + i0 * n, n, a);
  };
  // Item t does blocks t and blocks - 1 - t: equal work per item.
  const std::size_t items = (blocks + 1) / 2;
  detail::parallel_items(items, detail::team_size(items, threads), [&](std::size_t t) {
    block(t);
    if (blocks - 1 - t != t) block(blocks - 1 - t);
  });
}

void CMAES::decompose(CMAState& state) const {
  const std::size_t n = num_params();
  SymmetricEigen e = symmetric_eigen_factored(state.cov.data(), n,
                                              threads_for(static_cast<double>(n) * static_cast<double>(n * n)));
  // An eigenvalue that rounding made <= 0 is raised to max * 1e-16; the
  // condition number (1e16) then stops the run (conditioncov).
  const double floor = e.values.back() * 1e-16;
  for (double& v : e.values) v = std::max(v, floor);
  state.eigenvalues = std::move(e.values);
  state.eigenvectors = std::move(e.vectors);
  state.householder = std::move(e.q);
  state.eigen_generation = state.generation;
}

void CMAES::check_and_decompose(CMAState& state) const {
  const std::size_t n = num_params();
  std::vector<double>& c = state.cov;
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < i; ++j) {
      const double u = c[i * n + j];
      const double v = c[j * n + i];
      if (std::fabs(u - v) > 1e-10 * (std::fabs(u) + std::fabs(v)) + 1e-300) {
        throw std::invalid_argument("state.cov must be symmetric, got (" + std::to_string(i) + ", " +
                                    std::to_string(j) + ") = " + detail::num(u) + " and (" +
                                    std::to_string(j) + ", " + std::to_string(i) + ") = " + detail::num(v));
      }
      c[i * n + j] = c[j * n + i] = 0.5 * (u + v);
    }
  }
  if (state.eigenvalues.empty() && state.eigenvectors.empty()) {
    if (!state.householder.vectors.empty() || !state.householder.tau.empty()) {
      throw std::invalid_argument(
          "state.householder must be empty when state.eigenvalues and state.eigenvectors are (C is decomposed "
          "anew)");
    }
    SymmetricEigen e = symmetric_eigen_factored(c.data(), n, options_.num_threads);
    if (!(e.values.front() > 0)) {
      throw std::invalid_argument("state.cov must be positive definite, its smallest eigenvalue is " +
                                  detail::num(e.values.front()));
    }
    state.eigenvalues = std::move(e.values);
    state.eigenvectors = std::move(e.vectors);
    state.householder = std::move(e.q);
    state.eigen_generation = state.generation;
    return;
  }
  if (state.eigenvalues.size() != n || state.eigenvectors.size() != n * n) {
    throw std::invalid_argument("state.eigenvalues and state.eigenvectors must have " + std::to_string(n) +
                                " and " + std::to_string(n * n) + " entries (or both be empty), got " +
                                std::to_string(state.eigenvalues.size()) + " and " +
                                std::to_string(state.eigenvectors.size()));
  }
  for (std::size_t i = 0; i < n; ++i) {
    if (!(state.eigenvalues[i] > 0) || !std::isfinite(state.eigenvalues[i])) {
      throw std::invalid_argument("state.eigenvalues[" + std::to_string(i) + "] must be > 0 and finite, got " +
                                  detail::num(state.eigenvalues[i]));
    }
  }
  for (std::size_t i = 0; i < n * n; ++i) {
    if (!std::isfinite(state.eigenvectors[i])) {
      throw std::invalid_argument("state.eigenvectors must be finite");
    }
  }
  try {
    check_householder(n, state.householder);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(std::string("state.") + e.what());
  }
}

void CMAES::check_axes(std::map<std::string, double>& stop) const {
  const std::size_t n = num_params();
  const CMAESOptions& o = options_;
  const std::vector<double>& ev = state_.eigenvalues;  // ascending
  if (ev.back() > o.conditioncov * ev.front()) stop["conditioncov"] = o.conditioncov;
  if (o.noeffectaxis) {
    const std::size_t i = static_cast<std::size_t>(state_.generation) % n;
    const double step = 0.1 * state_.sigma * std::sqrt(ev[i]);
    // b_i (a unit vector) has a component of at least 1 / sqrt(n) in size;
    // a step that moves that component by more than the largest mean's ulp
    // has an effect, whatever b_i is (no row of B^T formed then).
    double largest = 0.0;
    for (double m : state_.mean) largest = std::max(largest, std::fabs(m));
    const double ulp = std::nextafter(largest, std::numeric_limits<double>::infinity()) - largest;
    if (!(step * 0.99 / std::sqrt(static_cast<double>(n)) > 2.0 * ulp)) {
      std::vector<double> b(n);
      basis_row(i, b.data());
      bool no_effect = true;
      for (std::size_t j = 0; j < n && no_effect; ++j) {
        no_effect = state_.mean[j] == state_.mean[j] + step * b[j];
      }
      if (no_effect) stop["noeffectaxis"] = 0.1;
    }
  }
  if (state_.sigma / run_sigma0() > o.tolupsigma * std::sqrt(ev.back())) stop["tolupsigma"] = o.tolupsigma;
}

double CMAES::coord_std(std::size_t i) const noexcept {
  const std::size_t n = num_params();
  return std::sqrt(state_.cov[i * n + i]);
}

void CMAES::to_z(const double* y, double* z) const {
  // z = D^-1 B^T y = D^-1 E (Q^T y), the inverse of Eq. (39): w = y Q as a
  // row, then the dot products with the rows of E = state.eigenvectors
  // (dot4's four partial sums each; from the packed E when there is one,
  // the same bits), over fixed blocks of rows.
  const std::size_t n = num_params();
  const int threads = threads_for(static_cast<double>(n * n));
  std::vector<double> w(y, y + n);
  q_.times_q(w.data(), 1, n, threads);
  const std::size_t blocks = detail::ceil_div(n, detail::kRowBlock);
  detail::parallel_items(blocks, detail::team_size(blocks, threads), [&](std::size_t b) {
    const std::size_t j0 = b * detail::kRowBlock;
    const std::size_t j1 = std::min(n, j0 + detail::kRowBlock);
    if (packed_eigenvectors_.empty()) {
      detail::dot4_rows(state_.eigenvectors.data() + j0 * n, n, j1 - j0, w.data(), n, z + j0);
    } else {
      detail::dot4_rows_packed(packed_eigenvectors_.data(), n, j0, j1 - j0, w.data(), n, z + j0);
    }
    for (std::size_t j = j0; j < j1; ++j) z[j] /= std::sqrt(state_.eigenvalues[j]);
  });
}

// ---- SepCMAES ----------------------------------------------------------------

SepCMAES::SepCMAES(std::vector<double> x0, double sigma0, CMAESOptions options)
    : CMABase(std::move(x0), sigma0, std::move(options), true) {
  start();
}

void SepCMAES::reset_covariance() {
  state_.cov.assign(num_params(), 1.0);
  state_.eigenvalues.clear();
  state_.eigenvectors.clear();
  state_.householder = Householder{};
  state_.eigen_generation = 0;
}

void SepCMAES::sample_y(const double* z, double* y, std::size_t count) const {
  // y = sqrt(diag C) z.
  const std::size_t n = num_params();
  std::vector<double> d(n);
  for (std::size_t j = 0; j < n; ++j) d[j] = std::sqrt(state_.cov[j]);
  detail::parallel_items(count, detail::team_size(count, threads_for(static_cast<double>(count * n))),
                         [&](std::size_t k) {
                           for (std::size_t j = 0; j < n; ++j) y[k * n + j] = d[j] * z[k * n + j];
                         });
}

void SepCMAES::whiten(const double* z_w, double* out) const {
  std::copy(z_w, z_w + num_params(), out);
}

void SepCMAES::update_covariance(double a, const std::vector<const double*>& y,
                                 const std::vector<double>& coef) {
  // Eq. (47), diagonal only.
  const std::size_t n = num_params();
  double* c = state_.cov.data();
  const double* pc = state_.p_c.data();
  const double c1 = params_.c1;
  const std::size_t count = y.size();
  constexpr std::size_t kBlock = 4096;
  const std::size_t blocks = detail::ceil_div(n, kBlock);
  const int threads = threads_for(static_cast<double>(n * (count + 2)));
  detail::parallel_items(blocks, detail::team_size(blocks, threads), [&](std::size_t b) {
    const std::size_t i0 = b * kBlock;
    const std::size_t i1 = std::min(n, i0 + kBlock);
    for (std::size_t i = i0; i < i1; ++i) c[i] = a * c[i] + c1 * pc[i] * pc[i];
    for (std::size_t k = 0; k < count; ++k) {
      const double* yk = y[k];
      const double f = coef[k];
      for (std::size_t i = i0; i < i1; ++i) c[i] += f * yk[i] * yk[i];
    }
  });
  state_.eigen_generation = state_.generation;
  for (std::size_t i = 0; i < n; ++i) {
    if (!(c[i] > 0) || !std::isfinite(c[i])) {
      throw std::runtime_error("SepCMAES: the covariance entry " + std::to_string(i) + " became " +
                               detail::num(c[i]));
    }
  }
}

void SepCMAES::check_and_decompose(CMAState& state) const {
  for (std::size_t i = 0; i < state.cov.size(); ++i) {
    if (!(state.cov[i] > 0)) {
      throw std::invalid_argument("state.cov[" + std::to_string(i) + "] must be > 0, got " +
                                  detail::num(state.cov[i]));
    }
  }
  if (!state.eigenvalues.empty() || !state.eigenvectors.empty() || !state.householder.vectors.empty() ||
      !state.householder.tau.empty()) {
    throw std::invalid_argument(
        "SepCMAES: state.eigenvalues, state.eigenvectors and state.householder must be empty");
  }
  state.eigen_generation = state.generation;
}

void SepCMAES::check_axes(std::map<std::string, double>& stop) const {
  const std::size_t n = num_params();
  const CMAESOptions& o = options_;
  const auto [cmin, cmax] = std::minmax_element(state_.cov.begin(), state_.cov.end());
  if (*cmax > o.conditioncov * *cmin) stop["conditioncov"] = o.conditioncov;
  if (o.noeffectaxis) {
    // The principal axes are the coordinates.
    const std::size_t i = static_cast<std::size_t>(state_.generation) % n;
    const double m = state_.mean[i];
    if (m == m + 0.1 * state_.sigma * std::sqrt(state_.cov[i])) stop["noeffectaxis"] = 0.1;
  }
  if (state_.sigma / run_sigma0() > o.tolupsigma * std::sqrt(*cmax)) stop["tolupsigma"] = o.tolupsigma;
}

double SepCMAES::coord_std(std::size_t i) const noexcept { return std::sqrt(state_.cov[i]); }

void SepCMAES::to_z(const double* y, double* z) const {
  const std::size_t n = num_params();
  for (std::size_t j = 0; j < n; ++j) z[j] = y[j] / std::sqrt(state_.cov[j]);
}

}  // namespace evokit
