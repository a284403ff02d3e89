// The forward pass's dense and Tanh kernels (internal; policy_graph.cc runs
// them). Every output element is computed with the same float operations in
// the same order whatever the operand's source, so a ParamView (base + scale
// * noise, perturbed on the fly) gives the bits of the materialised
// parameter vector.
#pragma once

#include <cstddef>

namespace evokit::detail {

// A read-only operand: value i is base[i] + scale * noise[i] when noise is set.
struct View {
  const float* base = nullptr;
  const float* noise = nullptr;
  float scale = 0.0f;

  float operator[](std::size_t i) const noexcept {
    return noise != nullptr ? base[i] + scale * noise[i] : base[i];
  }
};

// y (m, n) = A' B' with A (m, k) or, transposed, (k, m); B (k, n) or (n, k).
// Element (i, j) is summed from 0.0f over p in order, whatever the path.
void matmul(const float* a, bool trans_a, const View& b, bool trans_b, std::size_t m,
            std::size_t n, std::size_t k, float* y) noexcept;

// y = alpha * y + beta * C, C broadcast from (c_rows, c_cols) to (m, n).
void gemm_epilogue(float* y, std::size_t m, std::size_t n, float alpha, float beta,
                   const View* c, std::size_t c_rows, std::size_t c_cols) noexcept;

// y[i] = tanh_approx(x[i]) for i < size (tanh_approx: policy_graph.h).
void tanh_block(const float* __restrict x, float* __restrict y, std::size_t size) noexcept;

}  // namespace evokit::detail
