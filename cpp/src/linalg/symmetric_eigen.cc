// The symmetric eigensolver of symmetric_eigen.h: every eigenvalue and
// eigenvector of a dense symmetric matrix, in double precision (CMA-ES
// decomposes its covariance matrix with it, cma_es.cc).
//
// Algorithm:
// 1. Householder reduction to tridiagonal form T = Q^T A Q, blocked as
//    LAPACK's dsytrd / dlatrd: within a panel of kPanel steps the trailing
//    matrix is only read (the symmetric product four rows per pass), and the
//    panel's rank-2 updates are applied to it together at the end of the
//    panel (tridiagonalize): as one matrix product A22 -= [V W][W V]^T for
//    n > kQlMaxSize, as rank-2 terms row by row for smaller n.
// For n > kQlMaxSize (LAPACK's dsyevd):
// 2. Divide and conquer on T (Cuppen; Gu and Eisenstat's eigenvectors; see
//    "divide and conquer on the tridiagonal" below): eigenvalues ascending,
//    the eigenvectors of T as rows, leaves of at most kLeaf rows by QL.
// 3. Those rows times Q^T, Q applied from the right in compact WY blocks of
//    kBackBlock reflectors (as LAPACK's dormtr; HouseholderProduct): three
//    matrix products per block, no Q formed. symmetric_eigen_factored skips
//    this step and returns the reflectors instead.
// For n <= kQlMaxSize (bit-identical to the solver before step 2 existed):
// 2'. Q accumulated backwards in blocks of kQBlock reflectors, in compact WY
//    form I - V T V^T with T as LAPACK's dlarft builds it.
// 3'. The implicit QL algorithm with Wilkinson shifts on T (as EISPACK's tql2,
//    JAMA and Hansen's C code). Its rotations depend on T only, so they are
//    logged and applied to Q in bulk, in their order (tridiagonal_ql).
// 4'. Eigenvalues sorted ascending (a stable sort), eigenvectors as rows.
// The matrix products are dense_kernels' matmul (register tiles, no FMA,
// each sum in one accumulator over its terms in order).
//
// Threads (OpenMP): the symmetric product of each reduction step in row
// blocks of about equal area (only steps of m >= 1024 rows: a step is well
// under a millisecond and each parallel region waits for every thread), the
// panel updates over blocks of rows, the leaves, the merges of a level of
// the tree (when there are at least as many as threads) or a merge's secular
// roots, Loewner products and matrix products over fixed blocks, and the
// back-transformation over blocks of rows (for n <= kQlMaxSize, Q's
// accumulation over blocks of columns; the QL rotations, on at most
// kQlMaxSize rows, stay on one thread). A loop of less than kParallelWork
// multiply-adds (kParallelMatmulWork for matrix products, about 100
// microseconds either) runs on one thread.
//
// Determinism: the cut of the work into blocks depends on the matrix size
// only, never on the thread count; every number is computed by one thread
// with a fixed order of operations (the column parts of a symmetric
// product's blocks are added in block order). The kernels are built for
// several instruction sets (EVOKIT_KERNEL_TARGETS), vectorise across
// independent outputs or in a fixed number of interleaved partial sums, and
// contract nothing into FMA. So the results are bit-identical for any
// num_threads and on every instruction set.
#include "evokit/symmetric_eigen.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/kernel_targets.h"
#include "common/messages.h"
#include "common/parallel.h"
#include "linalg/dense_kernels.h"
#include "linalg/symmetric_eigen_internal.h"

namespace evokit {

namespace detail {
namespace {

// Reflectors per block of HouseholderProduct and rows of x per work item.
constexpr std::size_t kBackBlock = 32;
static_assert(kBackBlock == kMatmulPanel, "V (m x kBackBlock) is used as its own packed form");
constexpr std::size_t kBackRows = 32;

// The reflectors of tridiagonalize (v_k in the upper part of row k of a,
// H_k = v_k^T v_k / 2 in h[k], 0: none) as a Householder: tau = 1 / H.
Householder reflectors_of(const std::vector<double>& a, const std::vector<double>& h, std::size_t n) {
  Householder q;
  if (n < 2) return q;
  q.vectors.assign(n * (n - 1) / 2, 0.0);
  q.tau.assign(n - 1, 0.0);
  std::size_t offset = 0;
  for (std::size_t k = 0; k + 1 < n; ++k) {
    const std::size_t len = n - 1 - k;
    if (k + 2 < n && h[k] != 0.0) {
      std::copy_n(a.data() + k * n + k + 1, len, q.vectors.data() + offset);
      q.tau[k] = 1.0 / h[k];
    }
    offset += len;
  }
  return q;
}

}  // namespace
}  // namespace detail

namespace {

SymmetricEigen decompose(const double* a, std::size_t n, int num_threads, bool factored) {
  detail::require_non_null(a, "a");
  detail::require_num_threads(num_threads);
  for (std::size_t i = detail::all_finite(a, n * n) ? n * n : 0; i < n * n; ++i) {
    if (!std::isfinite(a[i])) {
      throw std::invalid_argument("symmetric_eigen: matrix entry (" + std::to_string(i / n) + ", " +
                                  std::to_string(i % n) + ") is " + detail::format_number(a[i]));
    }
  }
  SymmetricEigen out;
  if (n == 0) return out;
  // The working copy, kept by the calling thread (detail::kKeptBytes).
  thread_local std::vector<double> kept_work;
  std::vector<double> local_work;
  std::vector<double>& work = detail::kept_or_local(kept_work, local_work, n * n * sizeof(double));
  work.assign(a, a + n * n);
  // Scaling (as LAPACK's dsyevd): the secular equation squares and
  // multiplies entries of the size of the matrix's, so a matrix whose largest
  // entry lies outside [2^-kScaleExponent, 2^kScaleExponent] is scaled by a
  // power of two (exact) to a largest entry in [1/2, 1), and its eigenvalues
  // back. Inside the range nothing changes (measured: random matrices of
  // largest entry 1e-125 .. 1e150 decompose to LAPACK's accuracy unscaled;
  // 1e175 made the secular equation overflow, 1e-150 underflow).
  constexpr int kScaleExponent = 384;
  int scale_exponent = 0;
  {
    double anrm = 0.0;  // over the lower triangle, the part used
    for (std::size_t i = 0; i < n; ++i) {
      for (std::size_t j = 0; j <= i; ++j) anrm = std::max(anrm, std::fabs(a[i * n + j]));
    }
    int exponent = 0;
    std::frexp(anrm, &exponent);  // anrm = f 2^exponent, f in [1/2, 1)
    if (anrm > 0.0 && (exponent > kScaleExponent || exponent < -kScaleExponent)) {
      scale_exponent = exponent;
      for (double& x : work) x = std::ldexp(x, -scale_exponent);
    }
  }
  std::vector<double> d, e, h, z;
  if (n > detail::kQlMaxSize) {
    detail::tridiagonalize(work, n, d, e, h, z, false, num_threads);
    detail::divide_and_conquer(d, e, n, z, num_threads);
    Householder q = detail::reflectors_of(work, h, n);
    for (double& x : d) x = std::ldexp(x, scale_exponent);
    out.values = std::move(d);
    if (factored) {
      out.q = std::move(q);
    } else {
      // The blocks (about n^2 doubles), kept by the calling thread.
      thread_local HouseholderProduct kept;
      HouseholderProduct local;
      HouseholderProduct& product = detail::kept_or_local(kept, local, n * n * sizeof(double));
      product.assign(n, q, num_threads);
      product.times_qt(z.data(), n, n, num_threads);
    }
    out.vectors = std::move(z);
    return out;
  }
  detail::tridiagonalize(work, n, d, e, h, z, true, num_threads);
  detail::tridiagonal_ql(d, e, z, n);
  // Ascending eigenvalues (stable), vectors as rows.
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t x, std::size_t y) { return d[x] < d[y]; });
  out.values.resize(n);
  out.vectors.resize(n * n);
  for (std::size_t j = 0; j < n; ++j) {
    out.values[j] = std::ldexp(d[order[j]], scale_exponent);
    const std::size_t col = order[j];
    for (std::size_t i = 0; i < n; ++i) out.vectors[j * n + i] = z[i * n + col];
  }
  return out;
}

}  // namespace

SymmetricEigen symmetric_eigen(const double* a, std::size_t n, int num_threads) {
  return decompose(a, n, num_threads, false);
}

SymmetricEigen symmetric_eigen_factored(const double* a, std::size_t n, int num_threads) {
  return decompose(a, n, num_threads, true);
}

void check_householder(std::size_t n, const Householder& q) {
  if (q.vectors.empty() && q.tau.empty()) return;
  const std::size_t size = n < 2 ? 0 : n * (n - 1) / 2;
  const std::size_t reflectors = n < 2 ? 0 : n - 1;
  if (q.vectors.size() != size || q.tau.size() != reflectors) {
    throw std::invalid_argument("householder and householder_tau must have " + std::to_string(size) + " and " +
                                std::to_string(reflectors) + " entries (or both be empty), got " +
                                std::to_string(q.vectors.size()) + " and " + std::to_string(q.tau.size()));
  }
  for (std::size_t i = detail::all_finite(q.vectors.data(), size) ? size : 0; i < size; ++i) {
    if (!std::isfinite(q.vectors[i])) {
      std::size_t k = 0;  // the reflector of entry i
      while ((k + 1) * (2 * n - k - 2) / 2 <= i) ++k;
      throw std::invalid_argument("householder[" + std::to_string(i) + "] (reflector " + std::to_string(k) +
                                  ") must be finite, got " + detail::format_number(q.vectors[i]));
    }
  }
  std::size_t offset = 0;
  for (std::size_t k = 0; k < reflectors; ++k) {
    const std::size_t len = n - 1 - k;
    const double norm2 = detail::dot4(q.vectors.data() + offset, q.vectors.data() + offset, len);
    const double tau = q.tau[k];
    if (tau != 0.0 && !(std::fabs(tau * norm2 - 2.0) <= 2e-10)) {
      throw std::invalid_argument("householder_tau[" + std::to_string(k) + "] must be 0 or 2 / ||v_" +
                                  std::to_string(k) + "||^2 = " + detail::format_number(2.0 / norm2) +
                                  " (an orthogonal reflector), got " + detail::format_number(tau));
    }
    offset += len;
  }
}

void HouseholderProduct::assign(std::size_t n, const Householder& q, int num_threads) {
  detail::require_num_threads(num_threads);
  check_householder(n, q);
  n_ = n;
  num_blocks_ = 0;
  // The reflectors up to the last one that is not the identity.
  std::size_t reflectors = q.tau.size();
  while (reflectors > 0 && q.tau[reflectors - 1] == 0.0) --reflectors;
  if (reflectors == 0) return;
  constexpr std::size_t b = detail::kBackBlock;
  const std::size_t nblocks = detail::ceil_div(reflectors, b);
  if (blocks_.size() < nblocks) blocks_.resize(nblocks);
  num_blocks_ = nblocks;
  // (Building the blocks is about n^2 b multiply-adds; threaded from n of about 360.)
  const double work = static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(b);
  detail::parallel_items(nblocks, work < detail::kParallelMatmulWork ? 1 : detail::team_size(nblocks, num_threads),
                         [&](std::size_t bi) {
    Block& B = blocks_[bi];
    const std::size_t k0 = bi * b;
    const std::size_t nb = std::min(reflectors, k0 + b) - k0;
    B.r0 = k0 + 1;
    B.m = n - B.r0;
    const std::size_t m = B.m;
    B.v.assign(m * b, 0.0);
    for (std::size_t r = 0; r < nb; ++r) {
      const std::size_t k = k0 + r;
      if (q.tau[k] == 0.0) continue;
      const double* vk = q.vectors.data() + k * (2 * n - k - 1) / 2;  // components k+1..n-1
      for (std::size_t i = k + 1; i < n; ++i) B.v[(i - B.r0) * b + r] = vk[i - k - 1];
    }
    // gram[c * b + r] = v_c^T v_r (over all m rows: the entries above v_r's
    // start are zeros), into t_transposed as scratch, then T column by
    // column as dlarft.
    B.t_transposed.resize(b * b);
    double* gram = B.t_transposed.data();
    detail::transposed_product(B.v.data(), b, b, B.v.data(), b, m, b, gram, b);
    B.t.assign(b * b, 0.0);
    double* t = B.t.data();
    for (std::size_t r = 0; r < nb; ++r) {
      const double tau = q.tau[k0 + r];
      for (std::size_t c = 0; c < r; ++c) {
        double sum = 0.0;
        for (std::size_t t2 = c; t2 < r; ++t2) sum += t[c * b + t2] * gram[t2 * b + r];
        t[c * b + r] = -tau * sum;
      }
      t[r * b + r] = tau;
    }
    // V^T in matmul_packed's panels (panel j0: V^T's columns j0..j0+b-1,
    // zero-padded), straight from V; T and T^T (b x b = one panel: their
    // own packed forms).
    B.vt.resize(detail::packed_size(b, m));
    for (std::size_t j0 = 0; j0 < m; j0 += b) {
      const std::size_t w = std::min(b, m - j0);
      double* panel = B.vt.data() + j0 * b;
      for (std::size_t p = 0; p < b; ++p) {
        for (std::size_t u = 0; u < w; ++u) panel[p * b + u] = B.v[(j0 + u) * b + p];
        for (std::size_t u = w; u < b; ++u) panel[p * b + u] = 0.0;
      }
    }
    for (std::size_t r = 0; r < b; ++r) {
      for (std::size_t c = 0; c < b; ++c) gram[r * b + c] = t[c * b + r];
    }
  });
}

void HouseholderProduct::times_qt(double* x, std::size_t rows, std::size_t ldx, int num_threads) const {
  apply(x, rows, ldx, true, num_threads);
}

void HouseholderProduct::times_q(double* x, std::size_t rows, std::size_t ldx, int num_threads) const {
  apply(x, rows, ldx, false, num_threads);
}

// x Q^T = x B_last^T ... B_0^T and x Q = x B_0 ... B_last, x B^T = x - ((x V)
// T^T) V^T, x B = x - ((x V) T) V^T. The rows are cut into num_threads groups
// of at most kBackRows (a row's bits do not depend on the cut: each output of
// matmul_packed is one sum in a fixed order), each taken through every block
// while in cache.
void HouseholderProduct::apply(double* x, std::size_t rows, std::size_t ldx, bool transposed,
                               int num_threads) const {
  detail::require_num_threads(num_threads);
  if (num_blocks_ == 0 || rows == 0) return;
  detail::require_non_null(x, "x");
  if (ldx < n_) throw std::invalid_argument("ldx must be >= n = " + std::to_string(n_) + ", got " + std::to_string(ldx));
  constexpr std::size_t b = detail::kBackBlock;
  const double work = static_cast<double>(rows) * static_cast<double>(n_) * static_cast<double>(n_);
  const int team = work < detail::kParallelMatmulWork ? 1 : num_threads;
  const std::size_t per_item = std::min(detail::kBackRows, detail::ceil_div(rows, static_cast<std::size_t>(team)));
  const std::size_t items = detail::ceil_div(rows, per_item);
  detail::parallel_items(items, detail::team_size(items, team), [&](std::size_t it) {
    const std::size_t i0 = it * per_item;
    const std::size_t count = std::min(per_item, rows - i0);
    std::vector<double> y(count * b), y2(count * b);
    auto step = [&](const Block& B) {
      double* xr = x + i0 * ldx + B.r0;
      detail::matmul_packed(count, b, B.m, xr, ldx, B.v.data(), y.data(), b, false);
      // y2 = y T^T or y T (the exact-zero terms of T's lower part included).
      detail::matmul_packed(count, b, b, y.data(), b, transposed ? B.t_transposed.data() : B.t.data(), y2.data(), b,
                            false);
      detail::matmul_packed(count, B.m, b, y2.data(), b, B.vt.data(), xr, ldx, true);
    };
    if (transposed) {
      for (std::size_t bi = num_blocks_; bi-- > 0;) step(blocks_[bi]);
    } else {
      for (std::size_t bi = 0; bi < num_blocks_; ++bi) step(blocks_[bi]);
    }
  });
}

}  // namespace evokit
