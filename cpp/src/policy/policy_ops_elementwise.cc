// The elementwise ops of one float input (policy_op_table.h), with the ONNX
// operator specs' semantics:
//
//   Relu, Tanh, Sigmoid  Tanh is PolicyGraph's (tanh_block: MLAS's rational
//                        approximation, error < 1e-6)
//   Clip                 min(max(x, min), max), min and max one-element
//                        constants (or omitted)
//   Gelu                 0.5 x (1 + erf(x / sqrt 2)), or approximate "tanh":
//                        0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))
//   Erf, Sqrt            elementwise
//   LeakyRelu            x >= 0 ? x : alpha x            (alpha 0.01)
//   Elu                  x >= 0 ? x : alpha (exp(x) - 1) (alpha 1)
//   Selu                 gamma (x > 0 ? x : alpha (exp(x) - 1))
//   Softplus             log(1 + exp(x)), as x + log1p(exp(-x)) for x > 0
//   Mish                 x tanh(softplus(x))
//
// Each output element is computed by the same float operations whatever the
// instruction set (no FMA contraction), in the forms onnxruntime's CPU
// kernels use (Elu and Selu as alpha * (exp(x) - 1), Softplus through
// log1p). Gelu's tanh form and Mish use PolicyGraph's Tanh.
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "common/kernel_targets.h"
#include "policy/policy_op_table.h"

namespace evokit {

namespace {

using detail::View;

constexpr std::size_t kBlock = 256;  // floats of stack buffer per tanh_block call

inline float softplus(float x) noexcept {
  return x > 0.0f ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x));
}

float sigmoid(float x) {
  if (x >= 0.0f) return 1.0f / (1.0f + std::exp(-x));
  const float e = std::exp(x);
  return e / (1.0f + e);
}

const float* input(const ops::Step& step, const ops::Ctx& ctx) noexcept {
  return ctx.view(step.in[0]).base;
}

EVOKIT_KERNEL_TARGETS
void gelu_erf(const float* __restrict x, float* __restrict y, std::size_t size) noexcept {
  constexpr float kSqrtHalf = 0.707106781186547524f;  // 1 / sqrt(2)
  for (std::size_t i = 0; i < size; ++i) y[i] = 0.5f * x[i] * (1.0f + std::erf(x[i] * kSqrtHalf));
}

// Tanh is tanh_block (vectorised), over blocks of a stack buffer.
EVOKIT_KERNEL_TARGETS
void gelu_tanh(const float* __restrict x, float* __restrict y, std::size_t size) noexcept {
  constexpr float kSqrtTwoOverPi = 0.797884560802865356f;  // sqrt(2 / pi)
  for (std::size_t at = 0; at < size; at += kBlock) {
    const std::size_t n = size - at < kBlock ? size - at : kBlock;
    float inner[kBlock], t[kBlock];
    for (std::size_t i = 0; i < n; ++i) {
      const float v = x[at + i];
      inner[i] = kSqrtTwoOverPi * (v + 0.044715f * v * v * v);
    }
    detail::tanh_block(inner, t, n);
    for (std::size_t i = 0; i < n; ++i) y[at + i] = 0.5f * x[at + i] * (1.0f + t[i]);
  }
}

EVOKIT_KERNEL_TARGETS
void erf_kernel(const float* __restrict x, float* __restrict y, std::size_t size) noexcept {
  for (std::size_t i = 0; i < size; ++i) y[i] = std::erf(x[i]);
}

EVOKIT_KERNEL_TARGETS
void leaky_relu(float alpha, const float* __restrict x, float* __restrict y, std::size_t size) noexcept {
#pragma omp simd
  for (std::size_t i = 0; i < size; ++i) y[i] = x[i] >= 0.0f ? x[i] : alpha * x[i];
}

EVOKIT_KERNEL_TARGETS
void elu(float alpha, const float* __restrict x, float* __restrict y, std::size_t size) noexcept {
  for (std::size_t i = 0; i < size; ++i) y[i] = x[i] >= 0.0f ? x[i] : alpha * (std::exp(x[i]) - 1.0f);
}

EVOKIT_KERNEL_TARGETS
void selu(float alpha, float gamma, const float* __restrict x, float* __restrict y,
          std::size_t size) noexcept {
  for (std::size_t i = 0; i < size; ++i) {
    y[i] = x[i] > 0.0f ? gamma * x[i] : gamma * (alpha * std::exp(x[i]) - alpha);
  }
}

EVOKIT_KERNEL_TARGETS
void softplus_kernel(const float* __restrict x, float* __restrict y, std::size_t size) noexcept {
  for (std::size_t i = 0; i < size; ++i) y[i] = softplus(x[i]);
}

EVOKIT_KERNEL_TARGETS
void mish(const float* __restrict x, float* __restrict y, std::size_t size) noexcept {
  for (std::size_t at = 0; at < size; at += kBlock) {
    const std::size_t n = size - at < kBlock ? size - at : kBlock;
    float sp[kBlock], t[kBlock];
    for (std::size_t i = 0; i < n; ++i) sp[i] = softplus(x[at + i]);
    detail::tanh_block(sp, t, n);
    for (std::size_t i = 0; i < n; ++i) y[at + i] = x[at + i] * t[i];
  }
}

EVOKIT_KERNEL_TARGETS
void sqrt_kernel(const float* __restrict x, float* __restrict y, std::size_t size) noexcept {
#pragma omp simd
  for (std::size_t i = 0; i < size; ++i) y[i] = std::sqrt(x[i]);
}

}  // namespace

void ops::run_relu(const Step& step, const Ctx& ctx, float* y) noexcept {
  const float* x = input(step, ctx);
  for (std::size_t i = 0; i < step.size; ++i) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

void ops::run_tanh(const Step& step, const Ctx& ctx, float* y) noexcept {
  detail::tanh_block(input(step, ctx), y, step.size);
}

void ops::run_sigmoid(const Step& step, const Ctx& ctx, float* y) noexcept {
  const float* x = input(step, ctx);
  for (std::size_t i = 0; i < step.size; ++i) y[i] = sigmoid(x[i]);
}

// min and max (opset 11+ inputs) must be known when the graph is built.
SymbolicShape ops::build_clip(Build& b) {
  using Kind = PolicyGraph::Ops::Kind;
  b.refuse_non_float();
  PolicyGraph::Ops::Node& node = b.node;
  node.lo = -std::numeric_limits<float>::infinity();
  node.hi = std::numeric_limits<float>::infinity();
  for (std::size_t i = 1; i < node.inputs.size(); ++i) {
    if (node.inputs[i] < 0) continue;
    const PolicyGraph::Ops::Value& bound = b.value(i);
    if (bound.kind != Kind::kConstant || b.constant_of(bound).size() != 1) {
      throw std::invalid_argument(b.label() + ": " + (i == 1 ? "min " : "max ") + b.quoted(i) +
                                  " must be a constant with one element, got a " +
                                  (bound.kind == Kind::kConstant ? "constant" : "non-constant") +
                                  " of shape " + format_shape(bound.shape));
    }
    (i == 1 ? node.lo : node.hi) = b.constant_of(bound)[0];
  }
  if (node.lo > node.hi) {
    throw std::invalid_argument(b.label() + ": min " + std::to_string(node.lo) + " > max " +
                                std::to_string(node.hi));
  }
  return b.shape_of(0);
}

bool ops::plan_clip(Planner& p, Step& step) {
  step.in[0] = p.plain_in(0);
  step.lo = p.node.lo;
  step.hi = p.node.hi;
  return true;
}

void ops::run_clip(const Step& step, const Ctx& ctx, float* y) noexcept {
  const float* x = input(step, ctx);
  for (std::size_t i = 0; i < step.size; ++i) {
    const float v = x[i] < step.lo ? step.lo : x[i];
    y[i] = v > step.hi ? step.hi : v;
  }
}

// Gelu's form, kept as the node's (and step's) trans_a.
SymbolicShape ops::build_gelu(Build& b) {
  b.refuse_non_float();
  const auto it = b.attributes.strings.find("approximate");
  if (it != b.attributes.strings.end() && it->second.size() != 1) {
    throw std::invalid_argument(b.label() + ": attribute approximate must be one string, got " +
                                std::to_string(it->second.size()));
  }
  const std::string form = it == b.attributes.strings.end() ? "none" : it->second[0];
  if (form != "none" && form != "tanh") {
    throw std::invalid_argument(b.label() + ": attribute approximate must be 'none' or 'tanh', got '" +
                                form + "'");
  }
  b.node.trans_a = form == "tanh";
  return b.shape_of(0);
}

void ops::run_gelu(const Step& step, const Ctx& ctx, float* y) noexcept {
  if (step.trans_a) {
    gelu_tanh(input(step, ctx), y, step.size);
  } else {
    gelu_erf(input(step, ctx), y, step.size);
  }
}

void ops::run_erf(const Step& step, const Ctx& ctx, float* y) noexcept {
  erf_kernel(input(step, ctx), y, step.size);
}

void ops::run_leaky_relu(const Step& step, const Ctx& ctx, float* y) noexcept {
  leaky_relu(step.lo, input(step, ctx), y, step.size);
}

void ops::run_elu(const Step& step, const Ctx& ctx, float* y) noexcept {
  elu(step.lo, input(step, ctx), y, step.size);
}

void ops::run_selu(const Step& step, const Ctx& ctx, float* y) noexcept {
  selu(step.lo, step.hi, input(step, ctx), y, step.size);
}

void ops::run_softplus(const Step& step, const Ctx& ctx, float* y) noexcept {
  softplus_kernel(input(step, ctx), y, step.size);
}

void ops::run_mish(const Step& step, const Ctx& ctx, float* y) noexcept {
  mish(input(step, ctx), y, step.size);
}

void ops::run_sqrt(const Step& step, const Ctx& ctx, float* y) noexcept {
  sqrt_kernel(input(step, ctx), y, step.size);
}

}  // namespace evokit
