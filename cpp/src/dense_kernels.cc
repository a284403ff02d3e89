// Dense double-precision kernels (dense_kernels.h).
#include "dense_kernels.h"

#include "kernel_targets.h"

namespace evokit::detail {

EVOKIT_KERNEL_TARGETS
void axpy_4x(double* __restrict o, std::size_t len, double a0, const double* __restrict b0, double a1,
             const double* __restrict b1, double a2, const double* __restrict b2, double a3,
             const double* __restrict b3) noexcept {
  for (std::size_t t = 0; t < len; ++t) o[t] = (((o[t] + a0 * b0[t]) + a1 * b1[t]) + a2 * b2[t]) + a3 * b3[t];
}

EVOKIT_KERNEL_TARGETS
void axpy1(const double* __restrict b, std::size_t len, double a, double* __restrict o) noexcept {
  for (std::size_t t = 0; t < len; ++t) o[t] += b[t] * a;
}

// Register tiles of 4 x 16 outputs (for four rows at a time; any remainder
// one row at a time).
EVOKIT_KERNEL_TARGETS
void transposed_product(const double* __restrict v, std::size_t vstride, std::size_t rows,
                        const double* __restrict q, std::size_t qstride, std::size_t m, std::size_t len,
                        double* __restrict out, std::size_t ostride) noexcept {
  constexpr std::size_t kT = 16;
  const std::size_t full = len - len % kT;
  std::size_t r = 0;
  for (; r + 4 <= rows; r += 4) {
    for (std::size_t t0 = 0; t0 < full; t0 += kT) {
      double acc[4][kT] = {};
      for (std::size_t i = 0; i < m; ++i) {
        const double* __restrict qi = q + i * qstride + t0;
        const double* __restrict vi = v + i * vstride + r;
        for (std::size_t u = 0; u < kT; ++u) {
          acc[0][u] += qi[u] * vi[0];
          acc[1][u] += qi[u] * vi[1];
          acc[2][u] += qi[u] * vi[2];
          acc[3][u] += qi[u] * vi[3];
        }
      }
      for (std::size_t c = 0; c < 4; ++c) {
        for (std::size_t u = 0; u < kT; ++u) out[(r + c) * ostride + t0 + u] = acc[c][u];
      }
    }
    for (std::size_t t = full; t < len; ++t) {
      double acc[4] = {};
      for (std::size_t i = 0; i < m; ++i) {
        const double qi = q[i * qstride + t];
        for (std::size_t c = 0; c < 4; ++c) acc[c] += qi * v[i * vstride + r + c];
      }
      for (std::size_t c = 0; c < 4; ++c) out[(r + c) * ostride + t] = acc[c];
    }
  }
  for (; r < rows; ++r) {
    double* __restrict o = out + r * ostride;
    for (std::size_t t = 0; t < len; ++t) o[t] = 0.0;
    for (std::size_t i = 0; i < m; ++i) {
      const double* __restrict qi = q + i * qstride;
      const double vi = v[i * vstride + r];
      for (std::size_t t = 0; t < len; ++t) o[t] += qi[t] * vi;
    }
  }
}

// The second product of applying a block of kQBlock reflectors to a block of
// at most kRowBlock columns of Q (register tiles of 32 outputs, each summed
// over r ascending from 0):

}  // namespace evokit::detail
