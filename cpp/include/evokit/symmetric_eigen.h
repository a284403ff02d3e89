// The eigendecomposition of a dense symmetric matrix, in double precision
// (CMA-ES decomposes its covariance matrix with it; cma_es.h includes this
// header).
#pragma once

#include <cstddef>
#include <vector>

namespace evokit {

// Eigendecomposition of a symmetric n x n matrix (row-major; the lower
// triangle is used, every entry is checked to be finite): blocked Householder
// tridiagonalisation (as LAPACK dsytrd), then the implicit QL algorithm with
// Wilkinson shifts (as in EISPACK tql2, JAMA, and Hansen's C code). values
// ascend; vectors is n * n row-major with row j the unit
// eigenvector of values[j]. Threaded; bit-identical for any num_threads.
// Throws std::invalid_argument if `a` holds a non-finite value and
// std::runtime_error if QL does not converge. symmetric_eigen.cc describes
// the algorithm, its threads and why the bits do not depend on them.
struct SymmetricEigen {
  std::vector<double> values;
  std::vector<double> vectors;
};
SymmetricEigen symmetric_eigen(const double* a, std::size_t n, int num_threads = 1);

}  // namespace evokit
