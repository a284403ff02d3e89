// The parts of the symmetric eigensolver (symmetric_eigen.cc), one file per
// algorithm: the Householder reduction (tridiagonalize.cc), the implicit QL
// algorithm (tridiagonal_ql.cc) and divide and conquer on the tridiagonal
// (divide_and_conquer.cc). Internal to the core.
#pragma once

#include <cmath>
#include <cstddef>
#include <vector>

namespace evokit::detail {

// Largest n solved by QL on the whole matrix (Q formed and rotated), and the
// largest segment of divide and conquer solved by QL.
constexpr std::size_t kQlMaxSize = 32;
constexpr std::size_t kLeaf = 32;

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

// sqrt(a^2 + b^2) without std::hypot's cost where the squares cannot
// overflow or underflow (its result within an ulp of hypot's), else hypot.
inline double fast_hypot(double a, double b) {
  const double ss = a * a + b * b;
  if (ss > 0x1p-900 && ss < 0x1p900) return std::sqrt(ss);
  return std::hypot(a, b);
}

// Householder reduction of the symmetric a (n x n, row-major, lower triangle
// read, overwritten by the reflectors) to tridiagonal form: d the diagonal,
// e the off-diagonal, h[k] the reflectors' H_k; Q formed into q when
// form_q (tridiagonalize.cc).
void tridiagonalize(std::vector<double>& a, std::size_t n, std::vector<double>& d,
                    std::vector<double>& e, std::vector<double>& h, std::vector<double>& q, bool form_q,
                    int threads);

// The implicit QL algorithm with Wilkinson shifts on (d, e), the rotations
// accumulated into the columns of z (tridiagonal_ql.cc).
void tridiagonal_ql(std::vector<double>& d, std::vector<double>& e, std::vector<double>& z,
                    std::size_t n);

// Eigenvalues (ascending, into d) and eigenvectors (rows of v, n x n) of the
// tridiagonal (d, e) by divide and conquer (divide_and_conquer.cc).
void divide_and_conquer(std::vector<double>& d, std::vector<double>& e, std::size_t n, std::vector<double>& v,
                        int threads);

}  // namespace evokit::detail
