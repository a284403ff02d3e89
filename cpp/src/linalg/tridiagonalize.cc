// The Householder reduction of the symmetric eigensolver (see
// symmetric_eigen.cc for the whole algorithm, its threads and determinism).
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

}  // namespace

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

}  // namespace detail
}  // namespace evokit
