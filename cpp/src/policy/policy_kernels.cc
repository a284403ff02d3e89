// The forward pass's kernels (policy_kernels.h): Gemm / MatMul and Tanh.
//
// The hot kernels are built for several x86-64 instruction sets (SSE2, AVX2,
// AVX-512; EVOKIT_KERNEL_TARGETS, GCC's target_clones) and the loader picks
// the best one the CPU has. They vectorise across independent output
// elements only, never across a sum, and nothing is contracted into FMA
// (-ffp-contract=off): every instruction set gives the same bits.
#include "policy/policy_kernels.h"

#include <cmath>
#include <type_traits>

#include "evokit/policy_graph.h"
#include "common/kernel_targets.h"

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
#define EVOKIT_KERNEL_INLINE inline __attribute__((always_inline))
#else
#define EVOKIT_KERNEL_INLINE inline
#endif

namespace evokit::detail {

namespace {

// y[jj] = sum_p a[p * a_step] * B(p, jj) for jj < W, B row-major with row
// stride n, each sum taken from 0.0f in p order; B(p, j) = b[p n + j]
// (+ scale * e[p n + j] when noisy). W is a compile-time width, so the
// accumulators stay in registers and the loop over jj is vectorised.
template <std::size_t W, bool kNoisy>
EVOKIT_KERNEL_INLINE void row_block(const float* a, std::size_t a_step, std::size_t k,
                                    const float* b, const float* e, float scale, std::size_t n,
                                    float* y) noexcept {
  float acc[W];
  for (std::size_t jj = 0; jj < W; ++jj) acc[jj] = 0.0f;
  for (std::size_t p = 0; p < k; ++p) {
    const float av = a[p * a_step];
    const float* bp = b + p * n;
    const float* ep = kNoisy ? e + p * n : nullptr;
#pragma omp simd
    for (std::size_t jj = 0; jj < W; ++jj) {
      acc[jj] += av * (kNoisy ? bp[jj] + scale * ep[jj] : bp[jj]);
    }
  }
  for (std::size_t jj = 0; jj < W; ++jj) y[jj] = acc[jj];
}

// y (m, n) = A' B' with A (m, k) or, transposed, (k, m); B (k, n) or (n, k).
// Element (i, j) is summed from 0.0f over p in order, whatever the path.
template <bool kNoisy>
EVOKIT_KERNEL_INLINE void matmul(const float* a, bool trans_a, const View& b, bool trans_b,
                                 std::size_t m, std::size_t n, std::size_t k, float* y) noexcept {
  const std::size_t a_step = trans_a ? m : 1;
  const float s = b.scale;
  for (std::size_t i = 0; i < m; ++i) {
    const float* ai = trans_a ? a + i : a + i * k;  // A'(i, p) = ai[p * a_step]
    float* yi = y + i * n;
    if (!trans_b) {  // B is (k, n): its rows are contiguous in j
      // Column blocks of 64, then 32, 16, 8, 4, 2, 1 (each a fixed width).
      // 64 columns are 4 independent AVX-512 accumulators: enough to hide
      // the latency of the adds, whose order within a sum is fixed.
      std::size_t j = 0;
      const auto blocks = [&](auto width) {
        constexpr std::size_t W = decltype(width)::value;
        for (; j + W <= n; j += W) {
          row_block<W, kNoisy>(ai, a_step, k, b.base + j, kNoisy ? b.noise + j : nullptr, s, n,
                               yi + j);
        }
      };
      blocks(std::integral_constant<std::size_t, 64>{});
      blocks(std::integral_constant<std::size_t, 32>{});
      blocks(std::integral_constant<std::size_t, 16>{});
      blocks(std::integral_constant<std::size_t, 8>{});
      blocks(std::integral_constant<std::size_t, 4>{});
      blocks(std::integral_constant<std::size_t, 2>{});
      blocks(std::integral_constant<std::size_t, 1>{});
    } else {  // B is (n, k): column j of B' is row j of B, a dot product
      for (std::size_t j = 0; j < n; ++j) {
        const float* bj = b.base + j * k;
        const float* ej = kNoisy ? b.noise + j * k : nullptr;
        float acc = 0.0f;
        for (std::size_t p = 0; p < k; ++p) {
          acc += ai[p * a_step] * (kNoisy ? bj[p] + s * ej[p] : bj[p]);
        }
        yi[j] = acc;
      }
    }
  }
}

EVOKIT_KERNEL_TARGETS
void matmul_noisy(const float* a, bool trans_a, const View& b, bool trans_b, std::size_t m,
                  std::size_t n, std::size_t k, float* y) noexcept {
  matmul<true>(a, trans_a, b, trans_b, m, n, k, y);
}

EVOKIT_KERNEL_TARGETS
void matmul_plain(const float* a, bool trans_a, const View& b, bool trans_b, std::size_t m,
                  std::size_t n, std::size_t k, float* y) noexcept {
  matmul<false>(a, trans_a, b, trans_b, m, n, k, y);
}

// tanh(x) as x * P(x^2) / Q(x^2), the minimax rational approximation of
// Eigen and onnxruntime's MLAS (odd numerator of degree 13, even denominator
// of degree 6), on x clamped to +-7.905..., where tanh rounds to +-1 in
// float; tanh(x) = x below |x| = 0.0004. Absolute error < 1e-6.
EVOKIT_KERNEL_INLINE float fast_tanh(float x) noexcept {
  constexpr float kClamp = 7.90531110763549805f;
  float c = x < -kClamp ? -kClamp : x;
  c = c > kClamp ? kClamp : c;
  const float x2 = c * c;
  float p = -2.76076847742355e-16f;
  p = x2 * p + 2.00018790482477e-13f;
  p = x2 * p + -8.60467152213735e-11f;
  p = x2 * p + 5.12229709037114e-08f;
  p = x2 * p + 1.48572235717979e-05f;
  p = x2 * p + 6.37261928875436e-04f;
  p = x2 * p + 4.89352455891786e-03f;
  p = c * p;
  float q = 1.19825839466702e-06f;
  q = x2 * q + 1.18534705686654e-04f;
  q = x2 * q + 2.26843463243900e-03f;
  q = x2 * q + 4.89352518554385e-03f;
  const float r = p / q;
  return std::fabs(x) < 0.0004f ? x : r;
}

}  // namespace

void matmul(const float* a, bool trans_a, const View& b, bool trans_b, std::size_t m,
            std::size_t n, std::size_t k, float* y) noexcept {
  if (b.noise != nullptr) {
    matmul_noisy(a, trans_a, b, trans_b, m, n, k, y);
  } else {
    matmul_plain(a, trans_a, b, trans_b, m, n, k, y);
  }
}

void gemm_epilogue(float* y, std::size_t m, std::size_t n, float alpha, float beta,
                   const View* c, std::size_t c_rows, std::size_t c_cols) noexcept {
  for (std::size_t i = 0; i < m; ++i) {
    float* yi = y + i * n;
    if (alpha != 1.0f) {  // alpha * y is y itself when alpha is 1
      for (std::size_t j = 0; j < n; ++j) yi[j] = alpha * yi[j];
    }
    if (c == nullptr) continue;
    const std::size_t row = (c_rows == 1 ? 0 : i) * c_cols;
    const float* cb = c->base + row;
    const float* ce = c->noise != nullptr ? c->noise + row : nullptr;
    const float s = c->scale;
    if (c_cols == 1) {
      const float cv = ce != nullptr ? cb[0] + s * ce[0] : cb[0];
      for (std::size_t j = 0; j < n; ++j) yi[j] += beta * cv;
    } else if (ce != nullptr) {
      for (std::size_t j = 0; j < n; ++j) yi[j] += beta * (cb[j] + s * ce[j]);
    } else if (beta == 1.0f) {
      for (std::size_t j = 0; j < n; ++j) yi[j] += cb[j];
    } else {
      for (std::size_t j = 0; j < n; ++j) yi[j] += beta * cb[j];
    }
  }
}

EVOKIT_KERNEL_TARGETS
void tanh_block(const float* __restrict x, float* __restrict y, std::size_t size) noexcept {
#pragma omp simd
  for (std::size_t i = 0; i < size; ++i) y[i] = fast_tanh(x[i]);
}

float tanh_approx(float x) noexcept { return fast_tanh(x); }

}  // namespace evokit::detail
