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
// and Hansen's C code); a matrix whose largest entry (in the lower triangle)
// is outside 2^-384..2^384 is first scaled by a power of two (as dsyevd).
// values ascend; vectors is n * n row-major with row j the unit eigenvector
// of values[j]. Threaded; bit-identical for any
// num_threads and on every instruction set. Throws std::invalid_argument if
// `a` holds a non-finite value and std::runtime_error if an iteration (QL,
// or a root of a secular equation) does not converge. symmetric_eigen.cc
// describes the algorithm, its threads and why the bits do not depend on them.
//
// An orthogonal n x n matrix Q = P_0 P_1 ... P_{n-2} kept as Householder
// reflectors P_k = I - tau[k] v_k v_k^T, v_k zero in components 0..k (as
// LAPACK's dsytrd leaves them): `vectors` holds v_k's components k+1..n-1,
// k ascending (the strict upper triangle of an n x n matrix, row by row:
// n (n - 1) / 2 entries, row k at k (2n - k - 1) / 2), `tau` n - 1 entries
// (0: P_k = I). Both empty: Q = I.
struct Householder {
  std::vector<double> vectors;
  std::vector<double> tau;
};

struct SymmetricEigen {
  std::vector<double> values;
  std::vector<double> vectors;
  Householder q;  // symmetric_eigen_factored only
};
SymmetricEigen symmetric_eigen(const double* a, std::size_t n, int num_threads = 1);

// The same decomposition with the tridiagonalisation's Q kept as its
// reflectors (for n > 32; smaller n: q empty and vectors as symmetric_eigen):
// row j of `vectors` times Q^T is the unit eigenvector of values[j],
// symmetric_eigen's row j bit for bit (HouseholderProduct::times_qt). Saves
// the n^3 multiply-adds of the back-transformation when only a few vectors
// are ever multiplied by the eigenvectors (CMA-ES samples lambda rows per
// generation, cma_es.cc).
SymmetricEigen symmetric_eigen_factored(const double* a, std::size_t n, int num_threads = 1);

// std::invalid_argument naming the entry unless q is empty or holds
// n (n - 1) / 2 and n - 1 finite entries with every tau[k] either 0 or
// 2 / ||v_k||^2 (to 1e-10 relative: P_k orthogonal).
void check_householder(std::size_t n, const Householder& q);

// Q of a Householder in compact WY blocks of 32 reflectors, B = I - V T V^T
// (T upper triangular, as LAPACK's dlarft), applied to rows from the right
// (as LAPACK's dormtr): x B^T = x - ((x V) T^T) V^T, three matrix products
// per block. Rows are independent: threaded over groups of rows, and each
// row's bits do not depend on the thread count or the grouping.
class HouseholderProduct {
 public:
  HouseholderProduct() = default;  // Q = I
  // Builds the blocks of q (trailing identity reflectors are skipped);
  // check_householder's exceptions. Reuses the storage of earlier blocks.
  void assign(std::size_t n, const Householder& q, int num_threads = 1);
  bool identity() const noexcept { return num_blocks_ == 0; }
  // x <- x Q^T for `rows` rows of n entries, row i at x + i * ldx.
  void times_qt(double* x, std::size_t rows, std::size_t ldx, int num_threads = 1) const;
  // x <- x Q.
  void times_q(double* x, std::size_t rows, std::size_t ldx, int num_threads = 1) const;

 private:
  struct Block {
    std::size_t r0 = 0, m = 0;  // rows r0..r0+m-1 of Q's columns
    // V (m x 32: its own packed form), V^T packed, T^T and T (32 x 32).
    std::vector<double> v, vt, t_transposed, t;
  };
  void apply(double* x, std::size_t rows, std::size_t ldx, bool transposed, int num_threads) const;
  std::size_t n_ = 0;
  std::size_t num_blocks_ = 0;
  std::vector<Block> blocks_;  // the first num_blocks_ are Q's
};

}  // namespace evokit
