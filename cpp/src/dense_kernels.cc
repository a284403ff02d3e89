// Dense double-precision kernels (dense_kernels.h).
#include "dense_kernels.h"

#include <algorithm>

#include "kernel_targets.h"
#include "parallel.h"

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

// A panel of 32 columns (or the last, narrower one) at a time, so that its
// k x 32 part of b stays in L2 while every 4-row strip of a streams past; a
// 4 x 32 register tile per strip (16 AVX-512 registers). A remainder of
// rows or columns takes the same sums in narrower loops.
EVOKIT_KERNEL_TARGETS
void matmul(std::size_t m, std::size_t n, std::size_t k, const double* __restrict a, std::size_t lda,
            const double* __restrict b, std::size_t ldb, double* __restrict c, std::size_t ldc,
            bool subtract) noexcept {
  constexpr std::size_t kR = 4;
  constexpr std::size_t kW = 32;
  std::size_t j0 = 0;
  for (; j0 + kW <= n; j0 += kW) {
    std::size_t i = 0;
    for (; i + kR <= m; i += kR) {
      const double* __restrict a0 = a + i * lda;
      const double* __restrict a1 = a0 + lda;
      const double* __restrict a2 = a1 + lda;
      const double* __restrict a3 = a2 + lda;
      double acc[kR][kW] = {};
      for (std::size_t p = 0; p < k; ++p) {
        const double* __restrict bp = b + p * ldb + j0;
        const double x0 = a0[p], x1 = a1[p], x2 = a2[p], x3 = a3[p];
        for (std::size_t u = 0; u < kW; ++u) {
          acc[0][u] += x0 * bp[u];
          acc[1][u] += x1 * bp[u];
          acc[2][u] += x2 * bp[u];
          acc[3][u] += x3 * bp[u];
        }
      }
      for (std::size_t r = 0; r < kR; ++r) {
        double* __restrict cr = c + (i + r) * ldc + j0;
        if (subtract) {
          for (std::size_t u = 0; u < kW; ++u) cr[u] -= acc[r][u];
        } else {
          for (std::size_t u = 0; u < kW; ++u) cr[u] = acc[r][u];
        }
      }
    }
    for (; i < m; ++i) {
      const double* __restrict ai = a + i * lda;
      double acc[kW] = {};
      for (std::size_t p = 0; p < k; ++p) {
        const double* __restrict bp = b + p * ldb + j0;
        const double x = ai[p];
        for (std::size_t u = 0; u < kW; ++u) acc[u] += x * bp[u];
      }
      double* __restrict cr = c + i * ldc + j0;
      if (subtract) {
        for (std::size_t u = 0; u < kW; ++u) cr[u] -= acc[u];
      } else {
        for (std::size_t u = 0; u < kW; ++u) cr[u] = acc[u];
      }
    }
  }
  if (j0 == n) return;
  // The last panel, w < 32 columns: 8 at a time, then one at a time.
  const std::size_t w = n - j0;
  for (std::size_t i = 0; i < m; ++i) {
    const double* __restrict ai = a + i * lda;
    double* __restrict cr = c + i * ldc + j0;
    std::size_t u0 = 0;
    for (; u0 + 8 <= w; u0 += 8) {
      double acc[8] = {};
      for (std::size_t p = 0; p < k; ++p) {
        const double* __restrict bp = b + p * ldb + j0 + u0;
        const double x = ai[p];
        for (std::size_t u = 0; u < 8; ++u) acc[u] += x * bp[u];
      }
      if (subtract) {
        for (std::size_t u = 0; u < 8; ++u) cr[u0 + u] -= acc[u];
      } else {
        for (std::size_t u = 0; u < 8; ++u) cr[u0 + u] = acc[u];
      }
    }
    for (; u0 < w; ++u0) {
      double acc = 0.0;
      for (std::size_t p = 0; p < k; ++p) acc += ai[p] * b[p * ldb + j0 + u0];
      if (subtract) {
        cr[u0] -= acc;
      } else {
        cr[u0] = acc;
      }
    }
  }
}

void matmul_threaded(std::size_t m, std::size_t n, std::size_t k, const double* a, std::size_t lda,
                     const double* b, std::size_t ldb, double* c, std::size_t ldc, bool subtract,
                     int num_threads) {
  const std::size_t blocks = ceil_div(m, kMatmulRows);
  const double work = static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  const int threads = work < kParallelWork ? 1 : team_size(blocks, num_threads);
  if (threads <= 1) {
    matmul(m, n, k, a, lda, b, ldb, c, ldc, subtract);
    return;
  }
  parallel_items(blocks, threads, [&](std::size_t blk) {
    const std::size_t i0 = blk * kMatmulRows;
    const std::size_t rows = std::min(kMatmulRows, m - i0);
    matmul(rows, n, k, a + i0 * lda, lda, b, ldb, c + i0 * ldc, ldc, subtract);
  });
}

}  // namespace evokit::detail
