// The implicit QL algorithm of the symmetric eigensolver (see
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

}  // namespace

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

}  // namespace detail
}  // namespace evokit
