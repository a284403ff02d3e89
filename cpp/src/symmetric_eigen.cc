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

#include "dense_kernels.h"
#include "kernel_targets.h"
#include "messages.h"
#include "parallel.h"

namespace evokit {

namespace detail {
namespace {

// Householder reflectors accumulated together (a multiple of 4).
constexpr std::size_t kQBlock = 16;
// kParallelWork for one step of the tridiagonal reduction: a step reads and
// writes m^2 / 2 numbers (memory-bound, well under a millisecond) and there
// are n steps, each a parallel region that waits for every thread (a whole
// scheduler time slice when another job has the core), so only steps with
// m >= 1024 rows are threaded, cut into row blocks of about kStepBlock
// entries each (at most kMaxStepBlocks).
constexpr std::size_t kParallelStep = std::size_t{1} << 20;
constexpr std::size_t kStepBlock = std::size_t{1} << 18;
constexpr std::size_t kMaxStepBlocks = 8;

// The second product of applying a block of kQBlock reflectors to a block of
// at most kRowBlock columns of Q (register tiles of 32 outputs, each summed
// over r ascending from 0):
//   q[i * stride + t] -= sum_{r < kQBlock} v[i * kQBlock + r] w2[r * kRowBlock + t]
EVOKIT_KERNEL_TARGETS
void q_minus_v_times_w(double* __restrict q, std::size_t stride, std::size_t m, std::size_t len,
                       const double* __restrict v, const double* __restrict w2) {
  constexpr std::size_t kT = 32;
  const std::size_t full = len - len % kT;
  for (std::size_t i = 0; i < m; ++i) {
    double* __restrict qi = q + i * stride;
    const double* __restrict vi = v + i * kQBlock;
    for (std::size_t t0 = 0; t0 < full; t0 += kT) {
      double acc[kT] = {};
      for (std::size_t r = 0; r < kQBlock; ++r) {
        for (std::size_t u = 0; u < kT; ++u) acc[u] += vi[r] * w2[r * kRowBlock + t0 + u];
      }
      for (std::size_t u = 0; u < kT; ++u) qi[t0 + u] -= acc[u];
    }
    for (std::size_t t = full; t < len; ++t) {
      double acc = 0.0;
      for (std::size_t r = 0; r < kQBlock; ++r) acc += vi[r] * w2[r * kRowBlock + t];
      qi[t] -= acc;
    }
  }
}

// One row of the symmetric product A22 x on the lower triangle: returns
//   sum_{t < len} row[t] x[t] + row[len] x[len]
// (in 16 interleaved partial sums, added pairwise: a fixed order) and adds
// s[t] += row[t] x[len] for t < len (the column part of the product).
EVOKIT_KERNEL_TARGETS
double symmetric_row(const double* __restrict row, std::size_t len, const double* __restrict x,
                     double* __restrict s) {
  constexpr std::size_t kL = 16;
  const double xi = x[len];
  double acc[kL] = {};
  std::size_t t = 0;
  for (; t + kL <= len; t += kL) {
    for (std::size_t u = 0; u < kL; ++u) {
      acc[u] += row[t + u] * x[t + u];
      s[t + u] += row[t + u] * xi;
    }
  }
  for (std::size_t u = 0; t + u < len; ++u) {
    acc[u] += row[t + u] * x[t + u];
    s[t + u] += row[t + u] * xi;
  }
  for (std::size_t width = kL / 2; width > 0; width /= 2) {
    for (std::size_t u = 0; u < width; ++u) acc[u] += acc[u + width];
  }
  return acc[0] + row[len] * xi;
}

// Rows i and i+1 of the symmetric product in one pass (row0 = row i, row1 =
// row i+1, n apart), with the bits of two symmetric_row calls: a term of
// index t goes to partial sum t mod 16 in both, and s[t] gets row i's term,
// then row i+1's. Returns the two row parts in out[0], out[1].
EVOKIT_KERNEL_TARGETS
void symmetric_row2(const double* __restrict row0, const double* __restrict row1, std::size_t i,
                    const double* __restrict x, double* __restrict s, double* __restrict out) {
  constexpr std::size_t kL = 16;
  const double x0 = x[i];
  const double x1 = x[i + 1];
  double acc0[kL] = {}, acc1[kL] = {};
  std::size_t t = 0;
  for (; t + kL <= i; t += kL) {
    for (std::size_t u = 0; u < kL; ++u) {
      acc0[u] += row0[t + u] * x[t + u];
      acc1[u] += row1[t + u] * x[t + u];
      s[t + u] = (s[t + u] + row0[t + u] * x0) + row1[t + u] * x1;
    }
  }
  for (std::size_t u = 0; t + u < i; ++u) {
    acc0[u] += row0[t + u] * x[t + u];
    acc1[u] += row1[t + u] * x[t + u];
    s[t + u] = (s[t + u] + row0[t + u] * x0) + row1[t + u] * x1;
  }
  acc1[i % kL] += row1[i] * x[i];
  s[i] += row1[i] * x1;
  for (std::size_t width = kL / 2; width > 0; width /= 2) {
    for (std::size_t u = 0; u < width; ++u) {
      acc0[u] += acc0[u + width];
      acc1[u] += acc1[u + width];
    }
  }
  out[0] = acc0[0] + row0[i] * x0;
  out[1] = acc1[0] + row1[i + 1] * x1;
}

// Rows i..i+3 of the symmetric product in one pass (rows n apart), with the
// bits of four symmetric_row calls (as symmetric_row2). out[r]: row i+r's part.
EVOKIT_KERNEL_TARGETS
void symmetric_row4(const double* __restrict row0, std::size_t stride, std::size_t i,
                    const double* __restrict x, double* __restrict s, double* __restrict out) {
  constexpr std::size_t kL = 16;
  const double* __restrict row1 = row0 + stride;
  const double* __restrict row2 = row1 + stride;
  const double* __restrict row3 = row2 + stride;
  const double x0 = x[i], x1 = x[i + 1], x2 = x[i + 2], x3 = x[i + 3];
  double acc0[kL] = {}, acc1[kL] = {}, acc2[kL] = {}, acc3[kL] = {};
  std::size_t t = 0;
  for (; t + kL <= i; t += kL) {
    for (std::size_t u = 0; u < kL; ++u) {
      const double xt = x[t + u];
      acc0[u] += row0[t + u] * xt;
      acc1[u] += row1[t + u] * xt;
      acc2[u] += row2[t + u] * xt;
      acc3[u] += row3[t + u] * xt;
      s[t + u] = (((s[t + u] + row0[t + u] * x0) + row1[t + u] * x1) + row2[t + u] * x2) + row3[t + u] * x3;
    }
  }
  for (std::size_t u = 0; t + u < i; ++u) {
    const double xt = x[t + u];
    acc0[u] += row0[t + u] * xt;
    acc1[u] += row1[t + u] * xt;
    acc2[u] += row2[t + u] * xt;
    acc3[u] += row3[t + u] * xt;
    s[t + u] = (((s[t + u] + row0[t + u] * x0) + row1[t + u] * x1) + row2[t + u] * x2) + row3[t + u] * x3;
  }
  // The triangle's corner: row i+r has entries up to i+r-1 before its diagonal.
  acc1[i % kL] += row1[i] * x[i];
  acc2[i % kL] += row2[i] * x[i];
  acc3[i % kL] += row3[i] * x[i];
  acc2[(i + 1) % kL] += row2[i + 1] * x[i + 1];
  acc3[(i + 1) % kL] += row3[i + 1] * x[i + 1];
  acc3[(i + 2) % kL] += row3[i + 2] * x[i + 2];
  s[i] = ((s[i] + row1[i] * x1) + row2[i] * x2) + row3[i] * x3;
  s[i + 1] = (s[i + 1] + row2[i + 1] * x2) + row3[i + 1] * x3;
  s[i + 2] += row3[i + 2] * x3;
  for (std::size_t width = kL / 2; width > 0; width /= 2) {
    for (std::size_t u = 0; u < width; ++u) {
      acc0[u] += acc0[u + width];
      acc1[u] += acc1[u + width];
      acc2[u] += acc2[u + width];
      acc3[u] += acc3[u + width];
    }
  }
  out[0] = acc0[0] + row0[i] * x0;
  out[1] = acc1[0] + row1[i + 1] * x1;
  out[2] = acc2[0] + row2[i + 2] * x2;
  out[3] = acc3[0] + row3[i + 3] * x3;
}

// row[t] -= vi w[t] + wi v[t] for t < len: one rank-2 term of an update.
EVOKIT_KERNEL_TARGETS
void rank2_row(double* __restrict row, std::size_t len, const double* __restrict v,
               const double* __restrict w, double vi, double wi) {
  for (std::size_t t = 0; t < len; ++t) row[t] -= vi * w[t] + wi * v[t];
}

// Four rank-2 terms in one pass, each subtracted in turn:
// row[t] -= vi_r w_r[t] + wi_r v_r[t] for r = 0, 1, 2, 3 (v_r, w_r stride
// apart, vi_r, wi_r sstride apart): the bits of four rank2_row calls.
EVOKIT_KERNEL_TARGETS
void rank2_row4(double* __restrict row, std::size_t len, const double* __restrict v,
                const double* __restrict w, std::size_t stride, const double* vi, const double* wi,
                std::size_t sstride) {
  const double* __restrict v0 = v;
  const double* __restrict v1 = v + stride;
  const double* __restrict v2 = v + 2 * stride;
  const double* __restrict v3 = v + 3 * stride;
  const double* __restrict w0 = w;
  const double* __restrict w1 = w + stride;
  const double* __restrict w2 = w + 2 * stride;
  const double* __restrict w3 = w + 3 * stride;
  const double a0 = vi[0], a1 = vi[sstride], a2 = vi[2 * sstride], a3 = vi[3 * sstride];
  const double b0 = wi[0], b1 = wi[sstride], b2 = wi[2 * sstride], b3 = wi[3 * sstride];
  for (std::size_t t = 0; t < len; ++t) {
    double r = row[t];
    r -= a0 * w0[t] + b0 * v0[t];
    r -= a1 * w1[t] + b1 * v1[t];
    r -= a2 * w2[t] + b2 * v2[t];
    r -= a3 * w3[t] + b3 * v3[t];
    row[t] = r;
  }
}

// Steps of the tridiagonal reduction per panel (as LAPACK's dsytrd / dlatrd).
constexpr std::size_t kPanel = 32;

// Householder reduction of the symmetric a (n x n, row-major; the lower
// triangle is read, a is overwritten) to tridiagonal form T = Q^T A Q: d the
// diagonal, e[k] the entry (k, k+1), e[n-1] = 0; q receives Q (row-major).
//
// Step k builds the reflector P_k = I - v v^T / H_k from column k, which
// zeroes a[k+2.., k], and updates the trailing block A22 (rows and columns
// k+1..):
//   p = A22 v / H,  w = p - (v^T p / 2H) v,  A22 -= v w^T + w v^T.
// Blocked as LAPACK's dlatrd: within a panel of kPanel steps A22 is only
// read (its lower triangle, once per step: the symmetric product), the
// updates of the panel's earlier steps enter as the corrections
// - V (W^T x) - W (V^T x) and on column k, and the panel's rank-2 updates are
// applied to the trailing lower triangle together at the end of the panel.
// v is stored in the free upper part of row k for the accumulation of Q.
//
// Threads: the rows of a symmetric product are cut into blocks of about
// equal area, a number that depends on m only; block b adds its column part
// into its own vector s_b, and p_i = row part of i + sum_b s_b[i] (b
// ascending). The panel updates are parallel over blocks of rows.
//
// h[k] receives H_k = v^T v / 2 of reflector k (0: none). With form_q true
// (small n: QL on the whole matrix) Q is formed and the panel updates are
// the rank-2 terms row by row, as before; with form_q false,
// Q is not formed (HouseholderProduct applies it later).
void tridiagonalize(std::vector<double>& a, std::size_t n, std::vector<double>& d,
                    std::vector<double>& e, std::vector<double>& h, std::vector<double>& q, bool form_q,
                    int threads) {
  d.assign(n, 0.0);
  e.assign(n, 0.0);
  h.assign(n, 0.0);
  std::vector<double> p(n);
  std::vector<double> partial(kMaxStepBlocks * n);
  // The panel's v and w, column jj at [jj * n], full length (zero above their start).
  std::vector<double> vp(kPanel * n), wp(kPanel * n);
  std::vector<double> alpha(kPanel), beta(kPanel);
  std::vector<double> left, right, packed;  // the trailing update's operands
  for (std::size_t k0 = 0; k0 + 2 < n; k0 += kPanel) {
    const std::size_t k1 = std::min(k0 + kPanel, n - 2);  // steps k0..k1-1
    std::fill(vp.begin(), vp.end(), 0.0);
    std::fill(wp.begin(), wp.end(), 0.0);
    for (std::size_t k = k0; k < k1; ++k) {
      const std::size_t j = k - k0;
      const std::size_t r0 = k + 1;
      const std::size_t m = n - r0;
      // Column k of the current matrix: a minus the panel's earlier updates.
      double dk = a[k * n + k];
      for (std::size_t jj = 0; jj < j; ++jj) {
        dk -= vp[jj * n + k] * wp[jj * n + k] + wp[jj * n + k] * vp[jj * n + k];
      }
      d[k] = dk;
      double* x = a.data() + k * n + r0;  // kept in row k as v
      for (std::size_t i = 0; i < m; ++i) x[i] = a[(r0 + i) * n + k];
      {
        std::size_t jj = 0;
        for (; jj + 4 <= j; jj += 4) {
          rank2_row4(x, m, wp.data() + jj * n + r0, vp.data() + jj * n + r0, n, wp.data() + jj * n + k,
                     vp.data() + jj * n + k, n);
        }
        for (; jj < j; ++jj) {
          rank2_row(x, m, wp.data() + jj * n + r0, vp.data() + jj * n + r0, wp[jj * n + k], vp[jj * n + k]);
        }
      }
      double scale = 0.0;
      for (std::size_t i = 0; i < m; ++i) scale += std::fabs(x[i]);
      if (scale == 0.0) {
        e[k] = 0.0;  // no reflector: v = w = 0
        continue;
      }
      double hh = 0.0;
      for (std::size_t i = 0; i < m; ++i) {
        x[i] /= scale;
        hh += x[i] * x[i];
      }
      const double f = x[0];
      const double g = f >= 0 ? -std::sqrt(hh) : std::sqrt(hh);
      e[k] = scale * g;
      const double H = hh - f * g;
      x[0] = f - g;
      h[k] = H;
      // p = A22 x on the lower triangle, in row blocks of about equal area.
      const std::size_t blocks =
          m * m < kParallelStep ? 1 : std::min<std::size_t>(kMaxStepBlocks, m * m / kStepBlock);
      auto row_begin = [&](std::size_t b) {
        return b == blocks ? m
                           : static_cast<std::size_t>(static_cast<double>(m) *
                                                      std::sqrt(static_cast<double>(b) / static_cast<double>(blocks)));
      };
      parallel_items(blocks, team_size(blocks, threads), [&](std::size_t b) {
        const std::size_t i0 = row_begin(b);
        const std::size_t i1 = row_begin(b + 1);
        double* s = partial.data() + b * n;
        std::fill_n(s, i1, 0.0);
        std::size_t i = i0;
        for (; i + 4 <= i1; i += 4) symmetric_row4(a.data() + (r0 + i) * n + r0, n, i, x, s, p.data() + i);
        for (; i + 2 <= i1; i += 2) {
          symmetric_row2(a.data() + (r0 + i) * n + r0, a.data() + (r0 + i + 1) * n + r0, i, x, s, p.data() + i);
        }
        for (; i < i1; ++i) p[i] = symmetric_row(a.data() + (r0 + i) * n + r0, i, x, s);
      });
      for (std::size_t b = 0; b < blocks; ++b) {
        const double* s = partial.data() + b * n;
        const std::size_t i1 = row_begin(b + 1);
        for (std::size_t i = 0; i < i1; ++i) p[i] += s[i];
      }
      // The panel's earlier updates: p -= V (W^T x) + W (V^T x).
      dot4_rows(wp.data() + r0, n, j, x, m, alpha.data());
      dot4_rows(vp.data() + r0, n, j, x, m, beta.data());
      {
        std::size_t jj = 0;
        for (; jj + 4 <= j; jj += 4) {
          rank2_row4(p.data(), m, wp.data() + jj * n + r0, vp.data() + jj * n + r0, n, alpha.data() + jj,
                     beta.data() + jj, 1);
        }
        for (; jj < j; ++jj) {
          rank2_row(p.data(), m, wp.data() + jj * n + r0, vp.data() + jj * n + r0, alpha[jj], beta[jj]);
        }
      }
      for (std::size_t i = 0; i < m; ++i) p[i] /= H;
      double vpdot = 0.0;
      for (std::size_t i = 0; i < m; ++i) vpdot += x[i] * p[i];
      const double kk = vpdot / (2.0 * H);
      for (std::size_t i = 0; i < m; ++i) {
        vp[j * n + r0 + i] = x[i];
        wp[j * n + r0 + i] = p[i] - kk * x[i];
      }
    }
    // The panel's updates on the trailing lower triangle (rows and columns
    // k1..): A22 -= [V W] [W V]^T, a matrix product (each entry's 2 np terms
    // summed in a fixed order, then subtracted), in blocks of kRowBlock rows
    // over the columns up to the block's last row (the rest of the diagonal
    // block lands in the unused upper part). An item takes blocks b and
    // last - b, for equal work.
    const std::size_t m = n - k1;
    const std::size_t np = k1 - k0;
    if (form_q) {
      // Small n (QL on the whole matrix): the rank-2 terms one after the
      // other, row by row, as before divide and conquer existed (the same bits).
      for (std::size_t i = k1; i < n; ++i) {
        double* row = a.data() + i * n + k1;
        std::size_t jj = 0;
        for (; jj + 4 <= np; jj += 4) {
          rank2_row4(row, i - k1 + 1, vp.data() + jj * n + k1, wp.data() + jj * n + k1, n, vp.data() + jj * n + i,
                     wp.data() + jj * n + i, n);
        }
        for (; jj < np; ++jj) {
          rank2_row(row, i - k1 + 1, vp.data() + jj * n + k1, wp.data() + jj * n + k1, vp[jj * n + i], wp[jj * n + i]);
        }
      }
      continue;
    }
    const std::size_t q2 = 2 * np;
    left.resize(m * q2);
    right.resize(q2 * m);
    packed.resize(packed_size(q2, m));
    for (std::size_t i = 0; i < m; ++i) {
      for (std::size_t jj = 0; jj < np; ++jj) {
        left[i * q2 + jj] = vp[jj * n + k1 + i];
        left[i * q2 + np + jj] = wp[jj * n + k1 + i];
      }
    }
    for (std::size_t jj = 0; jj < np; ++jj) {
      std::copy_n(wp.data() + jj * n + k1, m, right.data() + jj * m);
      std::copy_n(vp.data() + jj * n + k1, m, right.data() + (np + jj) * m);
    }
    pack_panels(q2, m, right.data(), m, packed.data());
    const std::size_t blocks = ceil_div(m, kRowBlock);
    const double work = static_cast<double>(m) * static_cast<double>(m) * static_cast<double>(np);
    auto update = [&](std::size_t b) {
      const std::size_t i0 = b * kRowBlock;
      const std::size_t i1 = std::min(m, i0 + kRowBlock);
      matmul_packed(i1 - i0, i1, q2, left.data() + i0 * q2, q2, packed.data(), a.data() + (k1 + i0) * n + k1, n,
                    true);
    };
    const std::size_t items = ceil_div(blocks, 2);
    parallel_items(items, work < kParallelMatmulWork ? 1 : team_size(items, threads), [&](std::size_t it) {
      update(it);
      if (blocks - 1 - it != it) update(blocks - 1 - it);
    });
  }
  // The last 2 x 2 block (updated by the last panel).
  if (n >= 2) {
    d[n - 2] = a[(n - 2) * n + n - 2];
    e[n - 2] = a[(n - 1) * n + n - 2];
  }
  d[n - 1] = a[(n - 1) * n + n - 1];
  e[n - 1] = 0.0;

  // Q = P_0 P_1 ... P_{n-3}, accumulated backwards in blocks of kQBlock
  // reflectors: Q <- (P_k0 ... P_k1-1) Q = (I - V T V^T) Q (compact WY form,
  // T upper triangular as in LAPACK's dlarft), which touches rows and columns
  // k0+1.. only. Parallel over blocks of columns; each entry is computed by
  // one thread in a fixed order.
  if (!form_q) return;
  q.assign(n * n, 0.0);
  for (std::size_t i = 0; i < n; ++i) q[i * n + i] = 1.0;
  const std::size_t reflectors = n >= 2 ? n - 2 : 0;
  constexpr std::size_t b = kQBlock;
  std::vector<double> vb, tb(b * b), dots(b);
  for (std::size_t k1 = reflectors; k1 > 0;) {
    const std::size_t k0 = k1 >= b ? k1 - b : 0;
    const std::size_t nb = k1 - k0;  // reflectors in this block (<= b; padded with zeros)
    const std::size_t r0 = k0 + 1;
    const std::size_t m = n - r0;
    // V: m x b, V[i][r] = component r0 + i of v_{k0+r} (zero above its start).
    vb.assign(m * b, 0.0);
    for (std::size_t r = 0; r < nb; ++r) {
      const std::size_t k = k0 + r;
      if (h[k] == 0.0) continue;
      for (std::size_t i = k + 1; i < n; ++i) vb[(i - r0) * b + r] = a[k * n + i];
    }
    // T: T[r][r] = tau_r, T[0:r, r] = -tau_r T[0:r, 0:r] (V[:, 0:r]^T v_r).
    std::fill(tb.begin(), tb.end(), 0.0);
    for (std::size_t r = 0; r < nb; ++r) {
      const double tau = h[k0 + r] == 0.0 ? 0.0 : 1.0 / h[k0 + r];
      for (std::size_t c = 0; c < r; ++c) {
        double sum = 0.0;
        for (std::size_t i = r; i < m; ++i) sum += vb[i * b + c] * vb[i * b + r];
        dots[c] = sum;
      }
      for (std::size_t c = 0; c < r; ++c) {
        double sum = 0.0;
        for (std::size_t t2 = c; t2 < r; ++t2) sum += tb[c * b + t2] * dots[t2];
        tb[c * b + r] = -tau * sum;
      }
      tb[r * b + r] = tau;
    }
    const std::size_t blocks = ceil_div(m, kRowBlock);
    std::vector<double> scratch(blocks * 2 * b * kRowBlock);
    parallel_items(blocks, m * m * b < kParallelWork ? 1 : team_size(blocks, threads), [&](std::size_t cb) {
      const std::size_t j0 = r0 + cb * kRowBlock;
      const std::size_t len = std::min(n, j0 + kRowBlock) - j0;
      double* wt = scratch.data() + cb * 2 * b * kRowBlock;  // W = V^T Q: b x len
      double* w2 = wt + b * kRowBlock;                        // T W
      transposed_product(vb.data(), b, b, q.data() + r0 * n + j0, n, m, len, wt, kRowBlock);
      std::fill_n(w2, b * kRowBlock, 0.0);
      for (std::size_t r = 0; r < b; ++r) {
        for (std::size_t c = r; c < b; ++c) axpy1(wt + c * kRowBlock, len, tb[r * b + c], w2 + r * kRowBlock);
      }
      q_minus_v_times_w(q.data() + r0 * n + j0, n, m, len, vb.data(), w2);
    });
    k1 = k0;
  }
}

// sqrt(a^2 + b^2) without std::hypot's cost where the squares cannot
// overflow or underflow (its result within an ulp of hypot's), else hypot.
inline double fast_hypot(double a, double b) {
  const double ss = a * a + b * b;
  if (ss > 0x1p-900 && ss < 0x1p900) return std::sqrt(ss);
  return std::hypot(a, b);
}

struct Rotation {
  std::size_t i;  // mixes columns i and i+1
  double c, s;
};

// Applies the rotations, in order, to the columns of z (n x n, row-major, n <=
// kQlMaxSize: QL runs on the whole matrix only that small, and on leaves of
// at most kLeaf rows):
//   z[r][i+1] <- s z[r][i] + c z[r][i+1],  z[r][i] <- c z[r][i] - s z[r][i+1],
// on a transposed copy, so that a rotation touches contiguous numbers.
EVOKIT_KERNEL_TARGETS
void rotate_transposed(double* __restrict tb, std::size_t n, const Rotation* rot, std::size_t count) {
  for (std::size_t q = 0; q < count; ++q) {
    double* __restrict lo = tb + rot[q].i * n;
    double* __restrict hi = lo + n;
    const double c = rot[q].c;
    const double s = rot[q].s;
    for (std::size_t r = 0; r < n; ++r) {
      const double f = hi[r];
      hi[r] = s * lo[r] + c * f;
      lo[r] = c * lo[r] - s * f;
    }
  }
}

void apply_rotations(std::vector<double>& z, std::size_t n, const std::vector<Rotation>& rot) {
  if (rot.empty()) return;
  std::vector<double> tb(n * n);
  for (std::size_t r = 0; r < n; ++r) {
    for (std::size_t i = 0; i < n; ++i) tb[i * n + r] = z[r * n + i];
  }
  rotate_transposed(tb.data(), n, rot.data(), rot.size());
  for (std::size_t r = 0; r < n; ++r) {
    for (std::size_t i = 0; i < n; ++i) z[r * n + i] = tb[i * n + r];
  }
}

// The implicit QL algorithm with Wilkinson shifts on the tridiagonal (d, e)
// (e[k] couples k and k+1), accumulating the rotations into the columns of z
// (which enters as Q). The rotations depend on d and e only, so they are
// logged and applied to z in bulk, in their original order.
void tridiagonal_ql(std::vector<double>& d, std::vector<double>& e, std::vector<double>& z,
                    std::size_t n) {
  constexpr int kMaxIterations = 60;
  constexpr int kLocalIterations = 30;
  const double eps = std::numeric_limits<double>::epsilon();
  std::vector<Rotation> rot;
  rot.reserve(n * n);
  double tst1 = 0.0;  // tql2's norm estimate: max over l of |d[l]| + |e[l]|
  for (std::size_t l = 0; l < n; ++l) {
    int iterations = 0;
    std::size_t m;
    tst1 = std::max(tst1, std::fabs(d[l]) + std::fabs(e[l]));
    do {
      // Negligible e[m]: relative to its neighbours (tqli's test), or, once
      // that has not converged in kLocalIterations (a cluster of eigenvalues
      // near 0 in an indefinite matrix, e.g. a low-rank one), relative to
      // the matrix (tql2's test).
      for (m = l; m + 1 < n; ++m) {
        const double dd = std::fabs(d[m]) + std::fabs(d[m + 1]);
        if (std::fabs(e[m]) <= eps * dd) break;
        if (iterations >= kLocalIterations && std::fabs(e[m]) <= eps * tst1) break;
      }
      if (m == l) break;
      if (++iterations > kMaxIterations) {
        throw std::runtime_error("symmetric_eigen: the QL iteration did not converge for eigenvalue " +
                                 std::to_string(l));
      }
      // Wilkinson shift from the leading 2 x 2 block.
      double g = (d[l + 1] - d[l]) / (2.0 * e[l]);
      double r = fast_hypot(g, 1.0);
      g = d[m] - d[l] + e[l] / (g + (g >= 0 ? r : -r));
      double s = 1.0, c = 1.0, p = 0.0;
      bool underflow = false;
      for (std::size_t i = m; i-- > l;) {
        const double f = s * e[i];
        const double b = c * e[i];
        r = fast_hypot(f, g);
        e[i + 1] = r;
        if (r == 0.0) {  // recover from underflow
          d[i + 1] -= p;
          e[m] = 0.0;
          underflow = true;
          break;
        }
        s = f / r;
        c = g / r;
        g = d[i + 1] - p;
        r = (d[i] - g) * s + 2.0 * c * b;
        p = s * r;
        d[i + 1] = g + p;
        g = c * r - b;
        rot.push_back({i, c, s});
      }
      if (underflow) continue;
      d[l] -= p;
      e[l] = g;
      e[m] = 0.0;
    } while (m != l);
  }
  apply_rotations(z, n, rot);
}



// ---- divide and conquer on the tridiagonal ------------------------------------
//
// Cuppen's method (J. J. M. Cuppen, "A divide and conquer method for the
// symmetric tridiagonal eigenproblem", Numer. Math. 36, 1981) with the
// deflation of Dongarra and Sorensen ("A fully parallel algorithm for the
// symmetric eigenvalue problem", SIAM J. Sci. Stat. Comput. 8, 1987) and the
// eigenvectors of Gu and Eisenstat ("A divide-and-conquer algorithm for the
// symmetric tridiagonal eigenproblem", SIAM J. Matrix Anal. Appl. 16, 1995):
// the vector z is recomputed from the computed eigenvalues (Loewner's
// formula), which makes the eigenvectors orthogonal to working precision
// without extra precision. The secular equation is solved by R.-C. Li's
// "middle way" rational interpolation ("Solving secular equations stably and
// efficiently", LAPACK Working Note 89, 1994), in a bracket with bisection as
// the fallback.
//
// T is torn at the middle of each segment, recursively, until segments have
// at most kLeaf rows: T = diag(T1', T2') + beta u u^T with u = (e_last; e_first)
// and T1', T2' the two halves with |beta| taken off the two diagonal entries
// next to the cut. Leaves are solved by the implicit QL algorithm above; a merge
// turns the eigensystems (D1, Q1), (D2, Q2) of the halves into that of
//   diag(D1, D2) + rho z z^T,  z = diag(Q1, Q2)^T u / sqrt 2,  rho = 2 |beta|.
//
// The eigenvectors are kept as ROWS of an n x n matrix (row j the eigenvector
// of d[j] in the coordinates of T): a segment [lo, lo + m) owns rows and
// columns lo..lo+m-1, and its rows are zero outside its columns.
//
// Threads: leaves in parallel; merges of one level of the tree in parallel
// when there are at least as many as threads, else one after the other with
// their roots, Loewner products and the matrix products threaded over fixed
// blocks. Each number is computed by one thread in a fixed order.

// Largest n solved by QL on the whole matrix (Q formed and rotated), and the
// largest segment of divide and conquer solved by QL.
constexpr std::size_t kQlMaxSize = 32;
constexpr std::size_t kLeaf = 32;
// Roots of the secular equation per work item, and the limit of iterations per root.
constexpr std::size_t kRootBlock = 16;
constexpr int kSecularIterations = 100;

// The terms of the secular function at shift tau from the origin pole:
//   delta[i] = shift[i] - tau  (= d_i - lambda),
//   psi = sum_{i <= p} z2[i] / delta[i],  dpsi = sum_{i <= p} z2[i] / delta[i]^2,
//   phi, dphi the same over i > p.
// In 8 interleaved partial sums added pairwise (a fixed order).
constexpr std::size_t kSecularLanes = 8;

// One of the two ranges [i, end): the sums of z2 / delta and z2 / delta^2
// over it, term i0 + 8 q + u in lane u (the tail from lane 0), each lane's
// terms ascending, then the lanes added pairwise.
__attribute__((always_inline)) inline void secular_range(const double* __restrict shift,
                                                         const double* __restrict z2, std::size_t i,
                                                         std::size_t end, double tau, double* __restrict delta,
                                                         double* __restrict out) {
  constexpr std::size_t kL = kSecularLanes;
  double s[kL] = {}, ds[kL] = {};
  for (; i + kL <= end; i += kL) {
    for (std::size_t u = 0; u < kL; ++u) {
      const double dl = shift[i + u] - tau;
      delta[i + u] = dl;
      const double inv = 1.0 / dl;
      const double t = z2[i + u] * inv;
      s[u] += t;
      ds[u] += t * inv;
    }
  }
  for (std::size_t u = 0; i < end; ++i, ++u) {
    const double dl = shift[i] - tau;
    delta[i] = dl;
    const double inv = 1.0 / dl;
    const double t = z2[i] * inv;
    s[u] += t;
    ds[u] += t * inv;
  }
  for (std::size_t width = kL / 2; width > 0; width /= 2) {
    for (std::size_t u = 0; u < width; ++u) {
      s[u] += s[u + width];
      ds[u] += ds[u + width];
    }
  }
  out[0] = s[0];
  out[1] = ds[0];
}

EVOKIT_KERNEL_TARGETS
void secular_terms(const double* __restrict shift, const double* __restrict z2, std::size_t k, std::size_t p,
                   double tau, double* __restrict delta, double* __restrict out) {
  secular_range(shift, z2, 0, p + 1, tau, delta, out);
  secular_range(shift, z2, p + 1, k, tau, delta, out + 2);
}

// Root j of 1 + rho sum_i z2[i] / (d[i] - lambda) = 0 (d strictly ascending, all
// z2 > 0, rho > 0): lambda_j lies in (d[j], d[j+1]), the last in
// (d[k-1], d[k-1] + rho sum z2). It is found as an offset tau from the nearer
// pole d[o] (the secular function at the midpoint of the interval tells
// which), so that delta[i] = (d[i] - d[o]) - tau keeps its relative accuracy
// near the pole (Gu and Eisenstat need d_i - lambda_j accurate, not lambda_j).
// Steps: Li's middle way, the secular function modelled by the two poles
// around the root plus a constant, matched in value and slope; a step that
// goes the wrong way falls back to Newton, one outside the bracket to
// bisection. Converged when |f| is below its rounding error bound.
// Returns lambda_j; delta (k numbers) receives d[i] - lambda_j.
double secular_root(const double* d, const double* z2, std::size_t k, double rho, std::size_t j,
                    double* delta, double* shift) {
  const double eps = std::numeric_limits<double>::epsilon();
  if (k == 1) {
    delta[0] = -rho * z2[0];
    return d[0] + rho * z2[0];
  }
  const double rhoinv = 1.0 / rho;
  double sums[4];
  std::size_t o, p;
  double lo, hi, tau;
  bool reuse = false, recompute = false;
  if (j + 1 < k) {
    p = j;
    const double mid = (d[j + 1] - d[j]) / 2.0;
    for (std::size_t i = 0; i < k; ++i) shift[i] = d[i] - d[j];
    secular_terms(shift, z2, k, p, mid, delta, sums);
    if (rhoinv + sums[0] + sums[2] >= 0.0) {  // root in (d[j], midpoint]
      o = j;
      lo = 0.0;
      hi = mid;
      tau = mid;
      reuse = true;  // delta and sums are those at tau
    } else {  // root in (midpoint, d[j+1])
      o = j + 1;
      for (std::size_t i = 0; i < k; ++i) shift[i] = d[i] - d[j + 1];
      lo = -mid;
      hi = 0.0;
      tau = -mid;
      // The sums at the same point serve for the first step (it needs
      // delta_p and delta_p+1 from the new origin); the whole row is
      // recomputed if that point is already the root.
      delta[p] = shift[p] - tau;
      delta[p + 1] = shift[p + 1] - tau;
      reuse = true;
      recompute = true;
    }
  } else {
    p = k - 2;
    o = k - 1;
    double zz = 0.0;
    for (std::size_t i = 0; i < k; ++i) zz += z2[i];
    for (std::size_t i = 0; i < k; ++i) shift[i] = d[i] - d[k - 1];
    lo = 0.0;
    hi = rho * zz;
    tau = hi;
  }
  for (int it = 0;; ++it) {
    if (!reuse) secular_terms(shift, z2, k, p, tau, delta, sums);
    reuse = false;
    const double psi = sums[0], dpsi = sums[1], phi = sums[2], dphi = sums[3];
    const double w = rhoinv + psi + phi;
    const double bound = eps * (8.0 * (phi - psi + rhoinv) + std::fabs(tau) * (dpsi + dphi));
    if (std::fabs(w) <= bound) {
      if (recompute) {
        for (std::size_t i = 0; i < k; ++i) delta[i] = shift[i] - tau;
      }
      break;
    }
    recompute = false;
    if (w < 0.0) {
      lo = std::max(lo, tau);
    } else {
      hi = std::min(hi, tau);
    }
    if (it >= kSecularIterations) {
      throw std::runtime_error("symmetric_eigen: the secular equation did not converge for root " +
                               std::to_string(j) + " of " + std::to_string(k));
    }
    // Middle way: c eta^2 - a eta + b = 0 for the model
    //   c + s / (delta_p - eta) + S / (delta_p+1 - eta),
    // s = delta_p^2 dpsi, S = delta_p+1^2 dphi, matching w and its slope.
    const double da = delta[p], db = delta[p + 1];
    const double a = (da + db) * w - da * db * (dpsi + dphi);
    const double b = da * db * w;
    const double c = w - da * dpsi - db * dphi;
    // The root between the two poles, or (last root) the one right of both,
    // each in the form without cancellation.
    double eta;
    if (c == 0.0) {
      eta = a != 0.0 ? b / a : 0.0;
    } else {
      const double disc = std::sqrt(std::fabs(a * a - 4.0 * b * c));
      if (j + 1 < k) {
        eta = a <= 0.0 ? (a - disc) / (2.0 * c) : (2.0 * b) / (a + disc);
      } else {
        eta = a >= 0.0 ? (a + disc) / (2.0 * c) : (2.0 * b) / (a - disc);
      }
    }
    if (!(w * eta < 0.0)) eta = -w / (dpsi + dphi);  // Newton
    double next = tau + eta;
    if (!(next > lo && next < hi)) {
      // The origin pole alone against the rest held fixed (the root of
      // rest + z2[o] / (-t) = 0): right when the root hugs a pole of tiny
      // weight, where bisection would take a hundred halvings.
      const double rest = w - z2[o] / delta[o];
      next = rest != 0.0 ? z2[o] / rest : lo;
      if (!(next > lo && next < hi)) next = lo + (hi - lo) / 2.0;
    }
    if (next == tau || !(next > lo && next < hi)) break;  // the bracket is an ulp wide
    tau = next;
  }
  return d[o] + tau;
}

// w[i] *= delta_j[i] / (d[i] - d[j]) for i in [i0, i1), i != j, and w[j] *= delta_j[j]:
// one factor of Loewner's formula.
EVOKIT_KERNEL_TARGETS
void loewner_factor(double* __restrict w, const double* __restrict d, const double* __restrict delta,
                    std::size_t i0, std::size_t i1, std::size_t j) {
  const double dj = d[j];
  const std::size_t a = std::min(std::max(j, i0), i1);
  for (std::size_t i = i0; i < a; ++i) w[i] *= delta[i] / (d[i] - dj);
  std::size_t b = a;
  if (j >= i0 && j < i1) {
    w[j] *= delta[j];
    b = j + 1;
  }
  for (std::size_t i = b; i < i1; ++i) w[i] *= delta[i] / (d[i] - dj);
}

// row[col[i]] = zhat[i] / delta_i, normalised (the norm in 8 interleaved
// partial sums), where row enters holding delta_i at i; tmp: k numbers.
EVOKIT_KERNEL_TARGETS
void secular_vector(const double* __restrict zhat, std::size_t k, const std::size_t* __restrict col,
                    double* __restrict row, double* __restrict tmp) {
  constexpr std::size_t kL = 8;
  double acc[kL] = {};
  std::size_t i = 0;
  for (; i + kL <= k; i += kL) {
    for (std::size_t u = 0; u < kL; ++u) {
      const double x = zhat[i + u] / row[i + u];
      tmp[i + u] = x;
      acc[u] += x * x;
    }
  }
  for (std::size_t u = 0; i < k; ++i, ++u) {
    const double x = zhat[i] / row[i];
    tmp[i] = x;
    acc[u] += x * x;
  }
  for (std::size_t width = kL / 2; width > 0; width /= 2) {
    for (std::size_t u = 0; u < width; ++u) acc[u] += acc[u + width];
  }
  const double norm = std::sqrt(acc[0]);
  for (std::size_t t = 0; t < k; ++t) row[col[t]] = tmp[t] / norm;
}

// The eigensystem of diag(d) + rho z z^T (k x k; d strictly ascending, z
// without zeros, rho > 0): lambda ascending, vec row j the unit eigenvector
// of lambda[j]. vec first holds delta_j[i] = d[i] - lambda_j; Loewner's
// formula then gives the z^ for which the computed lambdas are exact,
//   z^_i^2 = -delta_i[i] prod_{j != i} delta_j[i] / (d_i - d_j)  (times 1/rho),
// with the sign of z_i, and the eigenvectors z^_i / delta_j[i], normalised,
// entry i stored in column col[i] of vec.
void secular_eigensystem(const double* d, const double* z, double rho, std::size_t k, double* lambda,
                         double* vec, const std::size_t* col, int threads) {
  std::vector<double> z2(k), zhat(k, 1.0);
  for (std::size_t i = 0; i < k; ++i) z2[i] = z[i] * z[i];
  const double work = 8.0 * static_cast<double>(k) * static_cast<double>(k);
  const std::size_t blocks = ceil_div(k, kRootBlock);
  const int t = work < kParallelWork ? 1 : team_size(blocks, threads);
  parallel_items(blocks, t, [&](std::size_t b) {
    std::vector<double> shift(k);
    for (std::size_t j = b * kRootBlock; j < std::min(k, (b + 1) * kRootBlock); ++j) {
      lambda[j] = secular_root(d, z2.data(), k, rho, j, vec + j * k, shift.data());
    }
  });
  parallel_items(blocks, t, [&](std::size_t b) {
    const std::size_t i0 = b * kRootBlock, i1 = std::min(k, i0 + kRootBlock);
    for (std::size_t j = 0; j < k; ++j) loewner_factor(zhat.data(), d, vec + j * k, i0, i1, j);
    for (std::size_t i = i0; i < i1; ++i) zhat[i] = std::copysign(std::sqrt(std::fabs(zhat[i])), z[i]);
  });
  parallel_items(blocks, t, [&](std::size_t b) {
    std::vector<double> tmp(k);
    for (std::size_t j = b * kRootBlock; j < std::min(k, (b + 1) * kRootBlock); ++j) {
      secular_vector(zhat.data(), k, col, vec + j * k, tmp.data());
    }
  });
}

// A leaf: QL on T[lo..lo+m) from the identity, sorted; rows lo.. of v.
void solve_leaf(std::vector<double>& d, const std::vector<double>& e, std::size_t n, double* v,
                std::size_t lo, std::size_t m) {
  std::vector<double> dl(d.begin() + static_cast<std::ptrdiff_t>(lo),
                         d.begin() + static_cast<std::ptrdiff_t>(lo + m));
  std::vector<double> el(m, 0.0), z(m * m, 0.0);
  for (std::size_t i = 0; i + 1 < m; ++i) el[i] = e[lo + i];
  for (std::size_t i = 0; i < m; ++i) z[i * m + i] = 1.0;
  tridiagonal_ql(dl, el, z, m);
  std::vector<std::size_t> order(m);
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) { return dl[x] < dl[y]; });
  for (std::size_t f = 0; f < m; ++f) {
    d[lo + f] = dl[order[f]];
    double* row = v + (lo + f) * n + lo;
    for (std::size_t i = 0; i < m; ++i) row[i] = z[i * m + order[f]];
  }
}

// Merges the segments [lo, lo + m1) and [lo + m1, lo + m1 + m2), solved,
// coupled by beta (their d already torn).
//
// Deflation (Dongarra and Sorensen; as LAPACK's dlaed2 describes it): with
// tol = 8 eps max(|d|, rho |z|), a pair with rho |z_i| <= tol keeps (d_i, its
// vector); two neighbours (in ascending order of d) whose z can be rotated
// into one with the off-diagonal t c s this leaves (t = d_j - d_i) at most tol
// are rotated (their vectors too), and the one left with z = 0 keeps its
// value. The k pairs left go to the secular equation. A vector is "top" if
// it has entries in the first half, "bottom" in the second (a rotation can
// make one both), so the product of the new vectors with the old splits
// into two: (k x k1)(k1 x m1) for the first m1 columns and (k x k2)(k2 x m2)
// for the others, k1, k2 the top and bottom vectors among the k (LAPACK's
// dlaed3 exploits the same structure).
// Buffers of the merges (only ever grown: a merge writes what it reads).
struct MergeWork {
  std::vector<double> vec, packed_top, packed_bottom, new_top, new_bottom, old_deflated;
};
// The buffers a calling thread keeps between decompositions (the working
// copy, the merges', the back-transformation's): each kind while it holds
// at most kKeptBytes, so that a run that decomposes every few generations
// (CMA-ES) touches fresh pages, and zero-fills them, only once.
constexpr std::size_t kKeptBytes = std::size_t{64} << 20;
// `kept` (a thread_local) if `bytes` of it may be kept, else `local`.
template <class Buffers>
Buffers& kept_or_local(Buffers& kept, Buffers& local, std::size_t bytes) {
  return bytes <= kKeptBytes ? kept : local;
}
inline double* grown(std::vector<double>& v, std::size_t size) {
  if (v.size() < size) v.resize(size);
  return v.data();
}

void merge(std::size_t n, std::size_t lo, std::size_t m1, std::size_t m2, double beta, double* dglobal,
           double* v, MergeWork& ws, int threads) {
  const double eps = std::numeric_limits<double>::epsilon();
  const std::size_t m = m1 + m2;
  double* dm = dglobal + lo;
  auto row = [&](std::size_t i) { return v + (lo + i) * n + lo; };
  std::vector<double> z(m);
  const double sign = beta < 0.0 ? -1.0 : 1.0;
  constexpr double kInvSqrt2 = 0.70710678118654752440;
  for (std::size_t i = 0; i < m1; ++i) z[i] = row(i)[m1 - 1] * kInvSqrt2;
  for (std::size_t i = m1; i < m; ++i) z[i] = sign * row(i)[m1] * kInvSqrt2;
  const double rho = 2.0 * std::fabs(beta);
  // Ascending order of d (the two halves are each ascending).
  std::vector<std::size_t> perm(m);
  {
    std::size_t a = 0, b = m1;
    for (std::size_t f = 0; f < m; ++f) perm[f] = (b == m || (a < m1 && dm[a] <= dm[b])) ? a++ : b++;
  }
  std::vector<unsigned char> mask(m);
  double dmax = 0.0, zmax = 0.0;
  for (std::size_t i = 0; i < m; ++i) {
    mask[i] = i < m1 ? 1 : 2;
    dmax = std::max(dmax, std::fabs(dm[i]));
    zmax = std::max(zmax, std::fabs(z[i]));
  }
  const double tol = 8.0 * eps * std::max(dmax, rho * zmax);
  std::vector<std::size_t> kept, deflated;
  kept.reserve(m);
  if (rho * zmax > tol) {
    constexpr std::size_t kNone = static_cast<std::size_t>(-1);
    std::size_t jp = kNone;
    for (std::size_t idx : perm) {
      if (rho * std::fabs(z[idx]) <= tol) {
        deflated.push_back(idx);
        continue;
      }
      if (jp == kNone) {
        jp = idx;
        continue;
      }
      const double r = fast_hypot(z[idx], z[jp]);
      const double c = z[idx] / r;
      const double s = -z[jp] / r;
      const double t = dm[idx] - dm[jp];
      if (std::fabs(t * c * s) <= tol) {
        // Rows: jp <- c jp + s idx, idx <- -s jp + c idx (columns of Q G^T).
        z[idx] = r;
        z[jp] = 0.0;
        const unsigned char both = static_cast<unsigned char>(mask[jp] | mask[idx]);
        double* x = row(jp);
        double* y = row(idx);
        const std::size_t c0 = (both & 1) ? 0 : m1, c1 = (both & 2) ? m : m1;
        for (std::size_t q = c0; q < c1; ++q) {
          const double xq = x[q], yq = y[q];
          x[q] = c * xq + s * yq;
          y[q] = c * yq - s * xq;
        }
        mask[jp] = mask[idx] = both;
        const double djp = dm[jp] * c * c + dm[idx] * s * s;
        dm[idx] = dm[jp] * s * s + dm[idx] * c * c;
        dm[jp] = djp;
        deflated.push_back(jp);
      } else {
        kept.push_back(jp);
      }
      jp = idx;
    }
    if (jp != kNone) kept.push_back(jp);
  } else {
    deflated = perm;
  }
  const std::size_t k = kept.size();
  // Columns of the new vectors' coordinates: top-only, then both, then
  // bottom-only (each in ascending order of d), so that the top product
  // takes columns [0, k1) and the bottom one [k - k2, k).
  std::vector<std::size_t> col(k), top_rows, bottom_rows;
  std::size_t k1 = 0, k2 = 0;
  {
    std::size_t c = 0;
    for (unsigned char want : {1, 3, 2}) {
      for (std::size_t q = 0; q < k; ++q) {
        if (mask[kept[q]] == want) col[q] = c++;
      }
    }
    for (std::size_t q = 0; q < k; ++q) {
      if (mask[kept[q]] & 1) ++k1;
      if (mask[kept[q]] & 2) ++k2;
    }
  }
  std::vector<const double*> rows_top(k1), rows_bottom(k2);
  for (std::size_t q = 0; q < k; ++q) {
    if (mask[kept[q]] & 1) rows_top[col[q]] = row(kept[q]);
    if (mask[kept[q]] & 2) rows_bottom[col[q] - (k - k2)] = row(kept[q]) + m1;
  }
  std::vector<double> dk(k), zk(k), lambda(k);
  for (std::size_t q = 0; q < k; ++q) {
    dk[q] = dm[kept[q]];
    zk[q] = z[kept[q]];
  }
  double* vec = grown(ws.vec, k * k);
  if (k > 0) secular_eigensystem(dk.data(), zk.data(), rho, k, lambda.data(), vec, col.data(), threads);
  // The two products, the old vectors packed straight from v.
  double* packed_top = grown(ws.packed_top, packed_size(k1, m1));
  double* packed_bottom = grown(ws.packed_bottom, packed_size(k2, m2));
  pack_rows(k1, m1, rows_top.data(), packed_top);
  pack_rows(k2, m2, rows_bottom.data(), packed_bottom);
  double* new_top = grown(ws.new_top, k * m1);
  double* new_bottom = grown(ws.new_bottom, k * m2);
  matmul_threaded(k, m1, k1, vec, k, packed_top, new_top, m1, false, threads);
  matmul_threaded(k, m2, k2, vec + (k - k2), k, packed_bottom, new_bottom, m2, false, threads);
  // Deflated pairs, ascending (stable), then merged with the lambdas.
  std::stable_sort(deflated.begin(), deflated.end(), [&](std::size_t x, std::size_t y) { return dm[x] < dm[y]; });
  const std::size_t nd = deflated.size();
  double* old_deflated = grown(ws.old_deflated, nd * m);
  std::vector<double> dd(nd);
  for (std::size_t q = 0; q < nd; ++q) {
    std::copy_n(row(deflated[q]), m, old_deflated + q * m);
    dd[q] = dm[deflated[q]];
  }
  std::size_t a = 0, b = 0;
  for (std::size_t f = 0; f < m; ++f) {
    double* out = row(f);
    if (b == nd || (a < k && lambda[a] <= dd[b])) {
      dm[f] = lambda[a];
      std::copy_n(new_top + a * m1, m1, out);
      std::copy_n(new_bottom + a * m2, m2, out + m1);
      ++a;
    } else {
      dm[f] = dd[b];
      std::copy_n(old_deflated + b * m, m, out);
      ++b;
    }
  }
}

// Eigenvalues (ascending, into d) and eigenvectors (rows of v, n x n) of the
// tridiagonal (d, e) by divide and conquer.
void divide_and_conquer(std::vector<double>& d, std::vector<double>& e, std::size_t n, std::vector<double>& v,
                        int threads) {
  struct Merge {
    std::size_t lo, m1, m2, depth;
  };
  std::vector<Merge> merges;
  std::vector<std::pair<std::size_t, std::size_t>> leaves;
  std::size_t max_depth = 0;
  // The tree: halves, recursively, until at most kLeaf rows (depends on n only).
  std::vector<Merge> stack = {{0, n, 0, 0}};
  while (!stack.empty()) {
    const Merge s = stack.back();
    stack.pop_back();
    if (s.m1 <= kLeaf) {
      leaves.push_back({s.lo, s.m1});
      continue;
    }
    const std::size_t h = s.m1 / 2;
    merges.push_back({s.lo, h, s.m1 - h, s.depth});
    max_depth = std::max(max_depth, s.depth);
    stack.push_back({s.lo, h, 0, s.depth + 1});
    stack.push_back({s.lo + h, s.m1 - h, 0, s.depth + 1});
  }
  // Tear: T = diag(T1', T2') + beta u u^T at every cut.
  for (const Merge& g : merges) {
    const double beta = std::fabs(e[g.lo + g.m1 - 1]);
    d[g.lo + g.m1 - 1] -= beta;
    d[g.lo + g.m1] -= beta;
  }
  v.assign(n * n, 0.0);
  // (QL on a leaf of m rows: about m^3 / 2 multiply-adds, a few hundred
  // rotations with a division and a square root each.)
  const double leaf_work = static_cast<double>(n) * static_cast<double>(kLeaf * kLeaf);
  parallel_items(leaves.size(), leaf_work < kParallelWork ? 1 : team_size(leaves.size(), threads),
                 [&](std::size_t l) { solve_leaf(d, e, n, v.data(), leaves[l].first, leaves[l].second); });
  // Kept by the calling thread (kKeptBytes): at most about 4 n^2 doubles
  // per thread.
  thread_local std::vector<MergeWork> kept;
  std::vector<MergeWork> local;
  const auto nthreads = static_cast<std::size_t>(std::max(threads, 1));
  const std::size_t bound = 4 * n * n + 2 * n * kMatmulPanel;  // doubles per thread, generously
  std::vector<MergeWork>& work_of = kept_or_local(kept, local, bound * sizeof(double) * nthreads);
  if (work_of.size() < nthreads) work_of.resize(nthreads);
  for (std::size_t depth = max_depth + 1; depth-- > 0;) {
    std::vector<Merge> level;
    for (const Merge& g : merges) {
      if (g.depth == depth) level.push_back(g);
    }
    std::sort(level.begin(), level.end(), [](const Merge& x, const Merge& y) { return x.lo < y.lo; });
    double work = 0.0;
    for (const Merge& g : level) work += std::pow(static_cast<double>(g.m1 + g.m2), 3.0);
    const bool across = level.size() >= static_cast<std::size_t>(threads) && work >= kParallelWork && threads > 1;
    parallel_items(level.size(), across ? team_size(level.size(), threads) : 1, [&](std::size_t q) {
      const Merge& g = level[q];
      MergeWork& w = work_of[static_cast<std::size_t>(omp_get_thread_num())];
      merge(n, g.lo, g.m1, g.m2, e[g.lo + g.m1 - 1], d.data(), v.data(), w, across ? 1 : threads);
    });
  }
}

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
