// The symmetric eigensolver of symmetric_eigen.h: every eigenvalue and
// eigenvector of a dense symmetric matrix, in double precision (CMA-ES
// decomposes its covariance matrix with it, cma_es.cc).
//
// Algorithm:
// 1. Householder reduction to tridiagonal form T = Q^T A Q, blocked as
//    LAPACK's dsytrd / dlatrd: within a panel of kPanel steps the trailing
//    matrix is only read, and the panel's rank-2 updates are applied to it
//    together at the end of the panel (tridiagonalize).
// 2. Q accumulated backwards in blocks of kQBlock reflectors, in compact WY
//    form I - V T V^T with T as LAPACK's dlarft builds it.
// 3. The implicit QL algorithm with Wilkinson shifts on T (as EISPACK's tql2,
//    JAMA and Hansen's C code). Its rotations depend on T only, so they are
//    logged and applied to Q in bulk, in their order (tridiagonal_ql).
// 4. Eigenvalues sorted ascending (a stable sort), eigenvectors as rows.
//
// Threads (OpenMP): the symmetric product of each reduction step in row
// blocks of about equal area (only steps of m >= 1024 rows: a step is well
// under a millisecond and each parallel region waits for every thread), the
// panel updates over blocks of rows, the accumulation of Q over blocks of
// columns, and the rotations over blocks of rows. A loop of less than
// kParallelWork multiply-adds runs on one thread.
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

// sum_t a[t] b[t] in four interleaved partial sums (a fixed order).
EVOKIT_KERNEL_TARGETS
double dot4(const double* __restrict a, const double* __restrict b, std::size_t len) {
  double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  std::size_t t = 0;
  for (; t + 4 <= len; t += 4) {
    s0 += a[t] * b[t];
    s1 += a[t + 1] * b[t + 1];
    s2 += a[t + 2] * b[t + 2];
    s3 += a[t + 3] * b[t + 3];
  }
  for (; t < len; ++t) s0 += a[t] * b[t];
  return (s0 + s1) + (s2 + s3);
}

// row[t] -= vi w[t] + wi v[t] for t < len: one rank-2 term of an update.
EVOKIT_KERNEL_TARGETS
void rank2_row(double* __restrict row, std::size_t len, const double* __restrict v,
               const double* __restrict w, double vi, double wi) {
  for (std::size_t t = 0; t < len; ++t) row[t] -= vi * w[t] + wi * v[t];
}

// Four rank-2 terms in one pass, each subtracted in turn:
// row[t] -= vi_r w_r[t] + wi_r v_r[t] for r = 0, 1, 2, 3 (stride apart).
EVOKIT_KERNEL_TARGETS
void rank2_row4(double* __restrict row, std::size_t len, const double* __restrict v,
                const double* __restrict w, std::size_t stride, const double* vi, const double* wi) {
  const double* __restrict v0 = v;
  const double* __restrict v1 = v + stride;
  const double* __restrict v2 = v + 2 * stride;
  const double* __restrict v3 = v + 3 * stride;
  const double* __restrict w0 = w;
  const double* __restrict w1 = w + stride;
  const double* __restrict w2 = w + 2 * stride;
  const double* __restrict w3 = w + 3 * stride;
  const double a0 = vi[0], a1 = vi[stride], a2 = vi[2 * stride], a3 = vi[3 * stride];
  const double b0 = wi[0], b1 = wi[stride], b2 = wi[2 * stride], b3 = wi[3 * stride];
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
void tridiagonalize(std::vector<double>& a, std::size_t n, std::vector<double>& d,
                    std::vector<double>& e, std::vector<double>& q, int threads) {
  d.assign(n, 0.0);
  e.assign(n, 0.0);
  std::vector<double> h(n, 0.0);  // H_k = v^T v / 2 of reflector k (0: none)
  std::vector<double> p(n);
  std::vector<double> partial(kMaxStepBlocks * n);
  // The panel's v and w, column jj at [jj * n], full length (zero above their start).
  std::vector<double> vp(kPanel * n), wp(kPanel * n);
  std::vector<double> alpha(kPanel), beta(kPanel);
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
      for (std::size_t jj = 0; jj < j; ++jj) {
        rank2_row(x, m, wp.data() + jj * n + r0, vp.data() + jj * n + r0, wp[jj * n + k], vp[jj * n + k]);
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
        for (std::size_t i = i0; i < i1; ++i) p[i] = symmetric_row(a.data() + (r0 + i) * n + r0, i, x, s);
      });
      for (std::size_t b = 0; b < blocks; ++b) {
        const double* s = partial.data() + b * n;
        const std::size_t i1 = row_begin(b + 1);
        for (std::size_t i = 0; i < i1; ++i) p[i] += s[i];
      }
      // The panel's earlier updates: p -= V (W^T x) + W (V^T x).
      for (std::size_t jj = 0; jj < j; ++jj) {
        alpha[jj] = dot4(wp.data() + jj * n + r0, x, m);
        beta[jj] = dot4(vp.data() + jj * n + r0, x, m);
      }
      for (std::size_t jj = 0; jj < j; ++jj) {
        rank2_row(p.data(), m, wp.data() + jj * n + r0, vp.data() + jj * n + r0, alpha[jj], beta[jj]);
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
    // The panel's updates on the trailing lower triangle (rows and columns k1..).
    const std::size_t m = n - k1;
    const std::size_t np = k1 - k0;
    const std::size_t blocks = ceil_div(m, kRowBlock);
    const double work = static_cast<double>(m) * static_cast<double>(m) * static_cast<double>(np);
    parallel_items(blocks, work < kParallelWork ? 1 : team_size(blocks, threads), [&](std::size_t b) {
      // Block b: rows k1 + b, k1 + b + blocks, ... (interleaved, for equal area).
      for (std::size_t i = k1 + b; i < n; i += blocks) {
        double* row = a.data() + i * n + k1;
        std::size_t jj = 0;
        for (; jj + 4 <= np; jj += 4) {
          rank2_row4(row, i - k1 + 1, vp.data() + jj * n + k1, wp.data() + jj * n + k1, n, vp.data() + jj * n + i,
                     wp.data() + jj * n + i);
        }
        for (; jj < np; ++jj) {
          rank2_row(row, i - k1 + 1, vp.data() + jj * n + k1, wp.data() + jj * n + k1, vp[jj * n + i], wp[jj * n + i]);
        }
      }
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

// Rows per block of apply_rotations: consecutive rotations share a column, so
// a block needs many rows for independent work (64 rows: 8 AVX-512 vectors
// per column, the block of a 1,000-column matrix 512 KB, in L2).
constexpr std::size_t kRotationRows = 64;

// The rotations, in order, on a transposed block of rows: tb[i * kRotationRows + r].
// A QL sweep is a run of rotations on columns (i, i+1), (i-1, i), ...: the
// column the next rotation shares is carried in registers, so each rotation
// loads and stores one column (the arithmetic is the same).
EVOKIT_KERNEL_TARGETS
void rotate_block(double* __restrict tb, const Rotation* rot, std::size_t count) {
  constexpr std::size_t kR = kRotationRows;
  for (std::size_t q = 0; q < count;) {
    std::size_t end = q + 1;
    while (end < count && rot[end].i + 1 == rot[end - 1].i) ++end;
    double carry[kR];  // column rot[p].i + 1 of the rotation p being applied
    const double* first = tb + (rot[q].i + 1) * kR;
    for (std::size_t r = 0; r < kR; ++r) carry[r] = first[r];
    for (std::size_t p = q; p < end; ++p) {
      double* __restrict lo = tb + rot[p].i * kR;
      double* __restrict hi = lo + kR;
      const double c = rot[p].c;
      const double s = rot[p].s;
      for (std::size_t r = 0; r < kR; ++r) {
        const double f = carry[r];
        hi[r] = s * lo[r] + c * f;
        carry[r] = c * lo[r] - s * f;
      }
    }
    double* last = tb + rot[end - 1].i * kR;
    for (std::size_t r = 0; r < kR; ++r) last[r] = carry[r];
    q = end;
  }
}

// Applies the rotations, in order, to the columns of z (n x n, row-major):
//   z[r][i+1] <- s z[r][i] + c z[r][i+1],  z[r][i] <- c z[r][i] - s z[r][i+1].
// Rows are independent: parallel over blocks of kRotationRows rows, each block
// transposed into a local buffer so that a rotation touches contiguous numbers.
void apply_rotations(std::vector<double>& z, std::size_t n, const std::vector<Rotation>& rot,
                     int threads) {
  if (rot.empty()) return;
  constexpr std::size_t kR = kRotationRows;
  const std::size_t blocks = ceil_div(n, kR);
  const int t = static_cast<double>(rot.size()) * static_cast<double>(n) < kParallelWork
                    ? 1
                    : team_size(blocks, threads);
  std::vector<double> scratch(static_cast<std::size_t>(t) * n * kR);
  auto block = [&](std::size_t bb, double* tb) {
    const std::size_t r0 = bb * kR;
    const std::size_t rows = std::min(kR, n - r0);
    for (std::size_t r = 0; r < kR; ++r) {
      for (std::size_t i = 0; i < n; ++i) tb[i * kR + r] = r < rows ? z[(r0 + r) * n + i] : 0.0;
    }
    rotate_block(tb, rot.data(), rot.size());
    for (std::size_t r = 0; r < rows; ++r) {
      for (std::size_t i = 0; i < n; ++i) z[(r0 + r) * n + i] = tb[i * kR + r];
    }
  };
  if (t <= 1) {  // no OpenMP region: entering one costs microseconds
    for (std::size_t bb = 0; bb < blocks; ++bb) block(bb, scratch.data());
    return;
  }
  ExceptionCollector errors;
  const auto nb = static_cast<std::ptrdiff_t>(blocks);
#pragma omp parallel for num_threads(t) schedule(static)
  for (std::ptrdiff_t bb = 0; bb < nb; ++bb) {
    errors.run([&] {
      block(static_cast<std::size_t>(bb),
            scratch.data() + static_cast<std::size_t>(omp_get_thread_num()) * n * kR);
    });
  }
  errors.rethrow_if_any();
}

// The implicit QL algorithm with Wilkinson shifts on the tridiagonal (d, e)
// (e[k] couples k and k+1), accumulating the rotations into the columns of z
// (which enters as Q). The rotations depend on d and e only, so they are
// logged and applied to z in bulk, in their original order.
void tridiagonal_ql(std::vector<double>& d, std::vector<double>& e, std::vector<double>& z,
                    std::size_t n, int threads) {
  constexpr int kMaxIterations = 60;
  constexpr int kLocalIterations = 30;
  constexpr std::size_t kFlush = std::size_t{1} << 22;  // rotations kept before applying
  const double eps = std::numeric_limits<double>::epsilon();
  std::vector<Rotation> rot;
  rot.reserve(std::min(kFlush, n * n));
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
      if (rot.size() >= kFlush) {
        apply_rotations(z, n, rot, threads);
        rot.clear();
      }
    } while (m != l);
  }
  apply_rotations(z, n, rot, threads);
}

}  // namespace
}  // namespace detail

SymmetricEigen symmetric_eigen(const double* a, std::size_t n, int num_threads) {
  detail::require_non_null(a, "a");
  detail::require_num_threads(num_threads);
  for (std::size_t i = 0; i < n * n; ++i) {
    if (!std::isfinite(a[i])) {
      throw std::invalid_argument("symmetric_eigen: matrix entry (" + std::to_string(i / n) + ", " +
                                  std::to_string(i % n) + ") is " + detail::format_number(a[i]));
    }
  }
  SymmetricEigen out;
  if (n == 0) return out;
  std::vector<double> work(a, a + n * n);
  std::vector<double> d, e, z;
  detail::tridiagonalize(work, n, d, e, z, num_threads);
  detail::tridiagonal_ql(d, e, z, n, num_threads);
  // Ascending eigenvalues (stable), vectors as rows.
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t x, std::size_t y) { return d[x] < d[y]; });
  out.values.resize(n);
  out.vectors.resize(n * n);
  for (std::size_t j = 0; j < n; ++j) {
    out.values[j] = d[order[j]];
    const std::size_t col = order[j];
    for (std::size_t i = 0; i < n; ++i) out.vectors[j * n + i] = z[i * n + col];
  }
  return out;
}

}  // namespace evokit
