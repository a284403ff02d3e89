// Divide and conquer on the tridiagonal, for the symmetric eigensolver (see
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

}  // namespace

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

}  // namespace detail
}  // namespace evokit
