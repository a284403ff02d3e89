// Dense double-precision kernels (dense_kernels.h).
#include "linalg/dense_kernels.h"

#include <algorithm>
#include <vector>

#include "common/kernel_targets.h"
#include "common/parallel.h"

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

EVOKIT_KERNEL_TARGETS
double dot4(const double* __restrict a, const double* __restrict b, std::size_t len) noexcept {
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

// Four rows at a time: sixteen independent sums (dot4's four per row), so
// the adds are not one chain's latency apart.
EVOKIT_KERNEL_TARGETS
void dot4_rows(const double* __restrict a, std::size_t lda, std::size_t rows, const double* __restrict x,
               std::size_t len, double* __restrict out) noexcept {
  std::size_t r = 0;
  for (; r + 4 <= rows; r += 4) {
    double s[4][4] = {};
    const double* __restrict a0 = a + r * lda;
    std::size_t t = 0;
    for (; t + 4 <= len; t += 4) {
      for (std::size_t u = 0; u < 4; ++u) {
        s[0][u] += a0[t + u] * x[t + u];
        s[1][u] += a0[lda + t + u] * x[t + u];
        s[2][u] += a0[2 * lda + t + u] * x[t + u];
        s[3][u] += a0[3 * lda + t + u] * x[t + u];
      }
    }
    for (std::size_t c = 0; c < 4; ++c) {
      for (std::size_t t2 = t; t2 < len; ++t2) s[c][0] += a0[c * lda + t2] * x[t2];
      out[r + c] = (s[c][0] + s[c][1]) + (s[c][2] + s[c][3]);
    }
  }
  for (; r < rows; ++r) out[r] = dot4(a + r * lda, x, len);
}

// Row p of b lies in panel j0 at packed + j0 k + p kMatmulPanel (w columns).
// dot4's order: the terms t < len - len % 4 in lane t mod 4 (a panel's
// columns start at a multiple of 4), the rest in lane 0, t ascending.
template <std::size_t R>
__attribute__((always_inline)) inline void dot4_packed_tile(const double* __restrict packed, std::size_t k,
                                                            std::size_t row, const double* __restrict x,
                                                            std::size_t len, double* __restrict out) {
  constexpr std::size_t kW = kMatmulPanel;
  const std::size_t full = len - len % 4;
  double s[R][4] = {};
  for (std::size_t j0 = 0; j0 < len; j0 += kW) {
    const double* __restrict p = packed + j0 * k + row * kW;
    const double* __restrict xj = x + j0;
    const std::size_t w = std::min(kW, len - j0);
    const std::size_t wf = std::min(w, full - j0);
    std::size_t t = 0;
    for (; t < wf; t += 4) {
      for (std::size_t u = 0; u < 4; ++u) {
        for (std::size_t c = 0; c < R; ++c) s[c][u] += p[c * kW + t + u] * xj[t + u];
      }
    }
    for (; t < w; ++t) {
      for (std::size_t c = 0; c < R; ++c) s[c][0] += p[c * kW + t] * xj[t];
    }
  }
  for (std::size_t c = 0; c < R; ++c) out[c] = (s[c][0] + s[c][1]) + (s[c][2] + s[c][3]);
}

EVOKIT_KERNEL_TARGETS
void dot4_rows_packed(const double* __restrict packed, std::size_t k, std::size_t row0, std::size_t rows,
                      const double* __restrict x, std::size_t len, double* __restrict out) noexcept {
  std::size_t r = 0;
  for (; r + 4 <= rows; r += 4) dot4_packed_tile<4>(packed, k, row0 + r, x, len, out + r);
  for (; r < rows; ++r) dot4_packed_tile<1>(packed, k, row0 + r, x, len, out + r);
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

namespace {

// What a tile does with its sums s: c = s, c = c - s, or c = (scale c) - s
// (the product rounded, then the difference: the bits of scaling c in a
// pass of its own and subtracting after).
enum class Store { kSet, kSubtract, kScaleSubtract };

// Outputs c[r][u], r < R, u < W: each sum over p ascending in one
// accumulator, then stored as `Mode` says. Inlined into each instruction-set
// clone.
template <std::size_t R, std::size_t W, Store Mode>
__attribute__((always_inline)) inline void matmul_tile(std::size_t k, const double* __restrict a, std::size_t lda,
                                                       const double* __restrict b, std::size_t ldb,
                                                       double* __restrict c, std::size_t ldc, double scale) {
  double acc[R][W] = {};
  for (std::size_t p = 0; p < k; ++p) {
    const double* __restrict bp = b + p * ldb;
    for (std::size_t r = 0; r < R; ++r) {
      const double x = a[r * lda + p];
      for (std::size_t u = 0; u < W; ++u) acc[r][u] += x * bp[u];
    }
  }
  for (std::size_t r = 0; r < R; ++r) {
    double* __restrict cr = c + r * ldc;
    if (Mode == Store::kScaleSubtract) {
      for (std::size_t u = 0; u < W; ++u) cr[u] = scale * cr[u] - acc[r][u];
    } else if (Mode == Store::kSubtract) {
      for (std::size_t u = 0; u < W; ++u) cr[u] -= acc[r][u];
    } else {
      for (std::size_t u = 0; u < W; ++u) cr[u] = acc[r][u];
    }
  }
}

// The same for the last, partial panel (w < W valid columns): through a
// R x W scratch, the padding columns computed and dropped.
template <std::size_t R, std::size_t W, Store Mode>
__attribute__((always_inline)) inline void matmul_tile_partial(std::size_t k, const double* __restrict a,
                                                               std::size_t lda, const double* __restrict b,
                                                               double* __restrict c, std::size_t ldc,
                                                               std::size_t w, double scale) {
  double scratch[R * W];
  matmul_tile<R, W, Store::kSet>(k, a, lda, b, W, scratch, W, 1.0);
  for (std::size_t r = 0; r < R; ++r) {
    for (std::size_t u = 0; u < w; ++u) {
      double& out = c[r * ldc + u];
      const double s = scratch[r * W + u];
      out = Mode == Store::kScaleSubtract ? scale * out - s : Mode == Store::kSubtract ? out - s : s;
    }
  }
}

// Rows in blocks of 64 (kept in L2 while the panels pass), 4-row register
// tiles (4 x 32 outputs: 16 AVX-512 registers), a remainder of rows one at
// a time.
template <Store Mode>
__attribute__((always_inline)) inline void matmul_blocks(std::size_t m, std::size_t n, std::size_t k,
                                                         const double* __restrict a, std::size_t lda,
                                                         const double* __restrict packed, double* __restrict c,
                                                         std::size_t ldc, double scale) {
  constexpr std::size_t kRowsPerBlock = 64;
  constexpr std::size_t kW = kMatmulPanel;
  for (std::size_t i0 = 0; i0 < m; i0 += kRowsPerBlock) {
    const std::size_t i1 = std::min(m, i0 + kRowsPerBlock);
    for (std::size_t j0 = 0; j0 < n; j0 += kW) {
      const double* bp = packed + j0 * k;
      const std::size_t w = std::min(kW, n - j0);
      std::size_t i = i0;
      if (w == kW) {
        for (; i + 4 <= i1; i += 4) {
          matmul_tile<4, kW, Mode>(k, a + i * lda, lda, bp, kW, c + i * ldc + j0, ldc, scale);
        }
        for (; i < i1; ++i) matmul_tile<1, kW, Mode>(k, a + i * lda, lda, bp, kW, c + i * ldc + j0, ldc, scale);
      } else {
        for (; i + 4 <= i1; i += 4) {
          matmul_tile_partial<4, kW, Mode>(k, a + i * lda, lda, bp, c + i * ldc + j0, ldc, w, scale);
        }
        for (; i < i1; ++i) {
          matmul_tile_partial<1, kW, Mode>(k, a + i * lda, lda, bp, c + i * ldc + j0, ldc, w, scale);
        }
      }
    }
  }
}

}  // namespace

void pack_rows(std::size_t k, std::size_t n, const double* const* rows, double* packed) noexcept {
  for (std::size_t j0 = 0; j0 < n; j0 += kMatmulPanel) {
    const std::size_t w = std::min(kMatmulPanel, n - j0);
    double* out = packed + j0 * k;
    for (std::size_t p = 0; p < k; ++p) {
      const double* bp = rows[p] + j0;
      double* o = out + p * kMatmulPanel;
      std::size_t u = 0;
      for (; u < w; ++u) o[u] = bp[u];
      for (; u < kMatmulPanel; ++u) o[u] = 0.0;
    }
  }
}

void pack_panels(std::size_t k, std::size_t n, const double* b, std::size_t ldb, double* packed) noexcept {
  for (std::size_t j0 = 0; j0 < n; j0 += kMatmulPanel) {
    const std::size_t w = std::min(kMatmulPanel, n - j0);
    double* out = packed + j0 * k;
    for (std::size_t p = 0; p < k; ++p) {
      const double* bp = b + p * ldb + j0;
      double* o = out + p * kMatmulPanel;
      std::size_t u = 0;
      for (; u < w; ++u) o[u] = bp[u];
      for (; u < kMatmulPanel; ++u) o[u] = 0.0;
    }
  }
}

EVOKIT_KERNEL_TARGETS
void matmul_packed(std::size_t m, std::size_t n, std::size_t k, const double* __restrict a, std::size_t lda,
                   const double* __restrict packed, double* __restrict c, std::size_t ldc, bool subtract) noexcept {
  if (subtract) {
    matmul_blocks<Store::kSubtract>(m, n, k, a, lda, packed, c, ldc, 1.0);
  } else {
    matmul_blocks<Store::kSet>(m, n, k, a, lda, packed, c, ldc, 1.0);
  }
}

EVOKIT_KERNEL_TARGETS
void matmul_packed_scaled(std::size_t m, std::size_t n, std::size_t k, const double* __restrict a,
                          std::size_t lda, const double* __restrict packed, double* __restrict c, std::size_t ldc,
                          double scale) noexcept {
  matmul_blocks<Store::kScaleSubtract>(m, n, k, a, lda, packed, c, ldc, scale);
}

void matmul(std::size_t m, std::size_t n, std::size_t k, const double* a, std::size_t lda, const double* b,
            std::size_t ldb, double* c, std::size_t ldc, bool subtract) {
  std::vector<double> packed(packed_size(k, n));
  pack_panels(k, n, b, ldb, packed.data());
  matmul_packed(m, n, k, a, lda, packed.data(), c, ldc, subtract);
}

void matmul_threaded(std::size_t m, std::size_t n, std::size_t k, const double* a, std::size_t lda,
                     const double* packed, double* c, std::size_t ldc, bool subtract, int num_threads) {
  const std::size_t blocks = ceil_div(m, kMatmulRows);
  const double work = static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  const int threads = work < kParallelMatmulWork ? 1 : team_size(blocks, num_threads);
  if (threads <= 1) {
    matmul_packed(m, n, k, a, lda, packed, c, ldc, subtract);
    return;
  }
  parallel_items(blocks, threads, [&](std::size_t blk) {
    const std::size_t i0 = blk * kMatmulRows;
    const std::size_t rows = std::min(kMatmulRows, m - i0);
    matmul_packed(rows, n, k, a + i0 * lda, lda, packed, c + i0 * ldc, ldc, subtract);
  });
}

// Whether every a[i], i < count, is finite: x * 0 is 0 for a finite x and
// NaN otherwise, summed in 8 partial sums (vectorised; the caller scans
// again for the first bad entry).
EVOKIT_KERNEL_TARGETS
bool all_finite(const double* __restrict a, std::size_t count) noexcept {
  constexpr std::size_t kL = 8;
  double acc[kL] = {};
  std::size_t i = 0;
  for (; i + kL <= count; i += kL) {
    for (std::size_t u = 0; u < kL; ++u) acc[u] += a[i + u] * 0.0;
  }
  for (std::size_t u = 0; i < count; ++i, ++u) acc[u] += a[i] * 0.0;
  double sum = 0.0;
  for (std::size_t u = 0; u < kL; ++u) sum += acc[u];
  return sum == 0.0;
}

}  // namespace evokit::detail
