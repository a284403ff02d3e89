// The eigendecomposition of a dense symmetric matrix, in double precision
// (CMA-ES decomposes its covariance matrix with it; cma_es.h includes this
// header).
#pragma once

#include <cstddef>
#include <vector>

namespace evokit {

// Eigendecomposition of a symmetric n x n matrix (row-major; the lower
// triangle is used, every entry is checked to be finite): blocked Householder
// tridiagonalisation (as LAPACK dsytrd), then for n > 32 divide and conquer
// on the tridiagonal (Cuppen; Gu and Eisenstat; as LAPACK dstedc) and the
// reflectors applied to its eigenvectors in blocks (as dormtr), for n <= 32
// the implicit QL algorithm with Wilkinson shifts (as in EISPACK tql2, JAMA,
// and Hansen's C code); a matrix whose largest entry is outside
// 2^-384..2^384 is first scaled by a power of two (as dsyevd). values ascend; vectors is n * n row-major with row j
// the unit eigenvector of values[j]. Threaded; bit-identical for any
// num_threads and on every instruction set. Throws std::invalid_argument if
// `a` holds a non-finite value and std::runtime_error if an iteration (QL,
// or a root of a secular equation) does not converge. symmetric_eigen.cc
// describes the algorithm, its threads and why the bits do not depend on them.
struct SymmetricEigen {
  std::vector<double> values;
  std::vector<double> vectors;
};
SymmetricEigen symmetric_eigen(const double* a, std::size_t n, int num_threads = 1);

}  // namespace evokit
