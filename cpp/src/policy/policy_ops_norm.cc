// Softmax, LayerNormalization, ReduceMean and ReduceSum (policy_op_table.h),
// with the ONNX operator specs' semantics:
//
//   Softmax             over the last axis, exp(x - max) / sum
//   LayerNormalization  over dims axis.. (never the batch), stash_type 1:
//                       (x - mean) / sqrt(var + epsilon) * Scale + B
//   ReduceMean, ReduceSum  over contiguous axes other than the batch (axes
//                       an attribute or, opset 13 / 18+, a constant input),
//                       keepdims; summed in index order
//
// Sums run in index order from 0.0f, with no FMA contraction, and
// LayerNormalization divides by sqrt(var + epsilon) as onnxruntime's CPU
// kernel does, so the results do not depend on the instruction set picked.
#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "common/kernel_targets.h"
#include "policy/policy_op_table.h"

namespace evokit {

namespace {

using detail::View;

// LayerNormalization over rows of n: y = (x - mean) / sqrt(var + epsilon) *
// scale + bias (bias optional), mean and variance in two passes.
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

// y (outer, inner) = the sum over r of x (outer, r, inner), in order from
// 0.0f; divided by r when `mean`.
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

}  // namespace

SymbolicShape ops::build_softmax(Build& b) {
  b.refuse_non_float();
  const SymbolicShape& x = b.shape_of(0);
  const auto rank = static_cast<std::int64_t>(x.size());
  const std::int64_t axis = b.int_attr("axis", -1);
  if (rank == 0) throw std::invalid_argument(b.label() + ": input must have rank >= 1, got ()");
  if (axis != -1 && axis != rank - 1) {
    throw std::invalid_argument(b.label() + ": axis " + std::to_string(axis) +
                                " is not supported for input " + b.quoted(0) + " of shape " +
                                format_shape(x) + "; only the last axis (-1 or " +
                                std::to_string(rank - 1) + ")");
  }
  b.node.axis = rank - 1;
  return x;
}

bool ops::plan_softmax(Planner& p, Step& step) {
  step.in[0] = p.plain_in(0);
  step.n = p.out_shape().back();
  step.m = step.n == 0 ? 0 : step.size / step.n;
  return true;
}

void ops::run_softmax(const Step& step, const Ctx& ctx, float* y) noexcept {
  const float* x = ctx.view(step.in[0]).base;
  const std::size_t n = step.n;
  for (std::size_t r = 0; r < step.m; ++r) {
    const float* xr = x + r * n;
    float* yr = y + r * n;
    const float top = *std::max_element(xr, xr + n);
    float sum = 0.0f;
    for (std::size_t j = 0; j < n; ++j) {
      yr[j] = std::exp(xr[j] - top);
      sum += yr[j];
    }
    for (std::size_t j = 0; j < n; ++j) yr[j] /= sum;
  }
}

SymbolicShape ops::build_layer_norm(Build& b) {
  b.refuse_non_float();
  const std::string& label = b.label();
  const SymbolicShape& x = b.shape_of(0);
  if (x.empty()) throw std::invalid_argument(label + ": input " + b.quoted(0) + " is a scalar");
  const std::int64_t stash = b.int_attr("stash_type", 1);
  if (stash != 1) {
    throw std::invalid_argument(label + ": stash_type " + std::to_string(stash) +
                                " is not supported (only 1: float)");
  }
  const auto axis = static_cast<std::size_t>(normalise_axis(b.int_attr("axis", -1), x.size(), label));
  for (std::size_t d = axis; d < x.size(); ++d) b.require_not_batch(x, d, "normalised");
  b.node.axis = static_cast<std::int64_t>(axis);
  b.node.alpha = b.float_attr("epsilon", 1e-5f);
  // Scale and B: the normalised shape (leading 1s aside).
  SymbolicShape normalised(x.begin() + static_cast<std::ptrdiff_t>(axis), x.end());
  const auto strip = [](SymbolicShape s) {
    while (!s.empty() && s.front().factor == 1 && !s.front().batch) s.erase(s.begin());
    return s;
  };
  for (std::size_t i = 1; i < b.node.inputs.size(); ++i) {
    if (!b.has_input(i)) continue;
    if (strip(b.shape_of(i)) != strip(normalised)) {
      throw std::invalid_argument(label + ": " + (i == 1 ? "Scale " : "B ") + b.quoted(i) +
                                  " has shape " + format_shape(b.shape_of(i)) +
                                  ", expected the normalised shape " + format_shape(normalised));
    }
  }
  return x;
}

bool ops::plan_layer_norm(Planner& p, Step& step) {
  const std::vector<std::size_t>& x = p.in_shape(0);
  const auto axis = static_cast<std::size_t>(p.node.axis);
  step.in[0] = p.plain_in(0);
  step.in[1] = p.at(1);
  step.has_c = p.node.inputs.size() == 3 && p.node.inputs[2] >= 0;
  if (step.has_c) step.in[2] = p.at(2);
  step.n = count(x, axis, x.size());
  step.m = step.n == 0 ? 0 : count(x) / step.n;
  step.alpha = p.node.alpha;
  return true;
}

void ops::run_layer_norm(const Step& step, const Ctx& ctx, float* y) noexcept {
  const View scale = ctx.view(step.in[1]);
  const View bias = step.has_c ? ctx.view(step.in[2]) : View{};
  layer_norm(ctx.view(step.in[0]).base, step.m, step.n, step.alpha, scale,
             step.has_c ? &bias : nullptr, y);
}

// The reduced axes, a contiguous run, kept as node.index (first, last).
SymbolicShape ops::build_reduce(Build& b) {
  b.refuse_non_float(1);
  const std::string& label = b.label();
  const SymbolicShape& x = b.shape_of(0);
  bool given = false;
  std::vector<std::int64_t> axes = b.int_list(1, "axes", "axes", &given);
  if (axes.empty()) {
    if (b.int_attr("noop_with_empty_axes", 0) != 0) return x;  // the identity
    for (std::size_t d = 0; d < x.size(); ++d) axes.push_back(static_cast<std::int64_t>(d));
  }
  for (std::int64_t& a : axes) a = normalise_axis(a, x.size(), label, "axis");
  std::sort(axes.begin(), axes.end());
  for (std::size_t i = 1; i < axes.size(); ++i) {
    if (axes[i] != axes[i - 1] + 1) {
      throw std::invalid_argument(label + ": axes " + ints_text(axes) +
                                  " are not contiguous; only a run of adjacent axes is "
                                  "supported");
    }
  }
  for (std::int64_t a : axes) b.require_not_batch(x, static_cast<std::size_t>(a), "reduced");
  b.node.index = {axes.front(), axes.back()};
  const bool keep = b.int_attr("keepdims", 1) != 0;
  SymbolicShape out;
  for (std::size_t d = 0; d < x.size(); ++d) {
    const bool reduced = static_cast<std::int64_t>(d) >= axes.front() &&
                         static_cast<std::int64_t>(d) <= axes.back();
    if (!reduced) out.push_back(x[d]);
    else if (keep) out.push_back(Dim{1, false});
  }
  return out;
}

bool ops::plan_reduce(Planner& p, Step& step) {
  const std::vector<std::size_t>& x = p.in_shape(0);
  const auto a0 = static_cast<std::size_t>(p.node.index.at(0));
  const auto a1 = static_cast<std::size_t>(p.node.index.at(1));
  step.in[0] = p.plain_in(0);
  step.m = count(x, 0, a0);
  step.k = count(x, a0, a1 + 1);
  step.n = count(x, a1 + 1, x.size());
  return true;
}

void ops::run_reduce_mean(const Step& step, const Ctx& ctx, float* y) noexcept {
  reduce(ctx.view(step.in[0]).base, step.m, step.k, step.n, true, y);
}

void ops::run_reduce_sum(const Step& step, const Ctx& ctx, float* y) noexcept {
  reduce(ctx.view(step.in[0]).base, step.m, step.k, step.n, false, y);
}

}  // namespace evokit
