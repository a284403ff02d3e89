// The kernels of the ops policy_graph_ops.cc adds (policy_graph_ops.h): the
// elementwise activations, LayerNormalization and ReduceMean. Each output
// element is computed by the same float operations in a fixed order (sums
// in index order from 0.0f, no FMA contraction), in the forms onnxruntime's
// CPU kernels use (Elu and Selu as alpha * (exp(x) - 1), Softplus through
// log1p, LayerNormalization dividing by sqrt(var + epsilon)), so the results
// do not depend on the thread count or the instruction set picked. Gelu's
// tanh form and Mish use PolicyGraph's Tanh (tanh_block, error < 1e-6).
#include <cmath>

#include "common/kernel_targets.h"
#include "policy_graph_ops.h"
#include "policy_kernels.h"

namespace evokit::detail {

namespace {

inline float softplus(float x) noexcept {
  return x > 0.0f ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x));
}

}  // namespace

EVOKIT_KERNEL_TARGETS
void unary_block(Unary op, float alpha, float gamma, const float* __restrict x,
                 float* __restrict y, std::size_t size) noexcept {
  constexpr float kSqrtHalf = 0.707106781186547524f;     // 1 / sqrt(2)
  constexpr float kSqrtTwoOverPi = 0.797884560802865356f;  // sqrt(2 / pi)
  constexpr std::size_t kBlock = 256;
  switch (op) {
    case Unary::kGelu:
      for (std::size_t i = 0; i < size; ++i) y[i] = 0.5f * x[i] * (1.0f + std::erf(x[i] * kSqrtHalf));
      break;
    case Unary::kGeluTanh:
      // Tanh is PolicyGraph's (tanh_block: MLAS's rational approximation,
      // vectorised), over blocks of a stack buffer.
      for (std::size_t at = 0; at < size; at += kBlock) {
        const std::size_t n = size - at < kBlock ? size - at : kBlock;
        float inner[kBlock], t[kBlock];
        for (std::size_t i = 0; i < n; ++i) {
          const float v = x[at + i];
          inner[i] = kSqrtTwoOverPi * (v + 0.044715f * v * v * v);
        }
        tanh_block(inner, t, n);
        for (std::size_t i = 0; i < n; ++i) y[at + i] = 0.5f * x[at + i] * (1.0f + t[i]);
      }
      break;
    case Unary::kErf:
      for (std::size_t i = 0; i < size; ++i) y[i] = std::erf(x[i]);
      break;
    case Unary::kLeakyRelu:
#pragma omp simd
      for (std::size_t i = 0; i < size; ++i) y[i] = x[i] >= 0.0f ? x[i] : alpha * x[i];
      break;
    case Unary::kElu:
      for (std::size_t i = 0; i < size; ++i) y[i] = x[i] >= 0.0f ? x[i] : alpha * (std::exp(x[i]) - 1.0f);
      break;
    case Unary::kSelu:
      for (std::size_t i = 0; i < size; ++i) {
        y[i] = x[i] > 0.0f ? gamma * x[i] : gamma * (alpha * std::exp(x[i]) - alpha);
      }
      break;
    case Unary::kSoftplus:
      for (std::size_t i = 0; i < size; ++i) y[i] = softplus(x[i]);
      break;
    case Unary::kMish:
      for (std::size_t at = 0; at < size; at += kBlock) {
        const std::size_t n = size - at < kBlock ? size - at : kBlock;
        float sp[kBlock], t[kBlock];
        for (std::size_t i = 0; i < n; ++i) sp[i] = softplus(x[at + i]);
        tanh_block(sp, t, n);
        for (std::size_t i = 0; i < n; ++i) y[at + i] = x[at + i] * t[i];
      }
      break;
    case Unary::kSqrt:
#pragma omp simd
      for (std::size_t i = 0; i < size; ++i) y[i] = std::sqrt(x[i]);
      break;
  }
}

EVOKIT_KERNEL_TARGETS
void layer_norm(const float* x, std::size_t rows, std::size_t n, float epsilon, const View& scale,
                const View* bias, float* y) noexcept {
  const float count = static_cast<float>(n);
  for (std::size_t r = 0; r < rows; ++r) {
    const float* xr = x + r * n;
    float* yr = y + r * n;
    float sum = 0.0f;
    for (std::size_t j = 0; j < n; ++j) sum += xr[j];
    const float mean = sum / count;
    float squares = 0.0f;
    for (std::size_t j = 0; j < n; ++j) {
      const float d = xr[j] - mean;
      squares += d * d;
    }
    const float denom = std::sqrt(squares / count + epsilon);
    if (scale.noise == nullptr && (bias == nullptr || bias->noise == nullptr)) {
      const float* s = scale.base;
      const float* b = bias != nullptr ? bias->base : nullptr;
      if (b != nullptr) {
#pragma omp simd
        for (std::size_t j = 0; j < n; ++j) yr[j] = (xr[j] - mean) / denom * s[j] + b[j];
      } else {
#pragma omp simd
        for (std::size_t j = 0; j < n; ++j) yr[j] = (xr[j] - mean) / denom * s[j];
      }
    } else {
      for (std::size_t j = 0; j < n; ++j) {
        const float v = (xr[j] - mean) / denom * scale[j];
        yr[j] = bias != nullptr ? v + (*bias)[j] : v;
      }
    }
  }
}

EVOKIT_KERNEL_TARGETS
void reduce(const float* x, std::size_t outer, std::size_t r, std::size_t inner, bool mean,
            float* y) noexcept {
  const float count = static_cast<float>(r);
  if (inner == 1) {  // over the last axis: one sum per row, in order
    for (std::size_t o = 0; o < outer; ++o) {
      const float* xo = x + o * r;
      float sum = 0.0f;
      for (std::size_t p = 0; p < r; ++p) sum += xo[p];
      y[o] = mean ? sum / count : sum;
    }
    return;
  }
  for (std::size_t o = 0; o < outer; ++o) {
    float* yo = y + o * inner;
    for (std::size_t j = 0; j < inner; ++j) yo[j] = 0.0f;
    for (std::size_t p = 0; p < r; ++p) {
      const float* xp = x + (o * r + p) * inner;
#pragma omp simd
      for (std::size_t j = 0; j < inner; ++j) yo[j] += xp[j];
    }
    if (!mean) continue;
#pragma omp simd
    for (std::size_t j = 0; j < inner; ++j) yo[j] /= count;
  }
}

}  // namespace evokit::detail
