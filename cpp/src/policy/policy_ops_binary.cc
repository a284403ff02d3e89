// The elementwise ops of two or three operands (policy_op_table.h), numpy
// broadcasting, with the ONNX operator specs' semantics:
//
//   Add, Sub, Mul, Div   float tensors; on integer values only (shape
//                        arithmetic) evaluated when the graph is built,
//                        each element a factor times the batch size or not
//   Pow                  std::pow
//   Greater, Less        a boolean value, 1.0f for true (Where's condition)
//   Where                condition ? a : b over three operands
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "policy/policy_op_table.h"

namespace evokit {

namespace {

using detail::View;
using IntDim = PolicyGraph::Ops::IntDim;
using Kind = PolicyGraph::Ops::Kind;
using AddKind = PolicyGraph::Ops::AddKind;

// Add, Sub, Mul or Div (`sym`) on integer values only: evaluated into the
// node's value, its shape in `shape` (true), else false.
bool fold_int_arithmetic(ops::Build& b, char sym, SymbolicShape& shape) {
  for (std::size_t i = 0; i < b.node.inputs.size(); ++i) {
    if (b.node.inputs[i] < 0 || !b.ints_in(i)) return false;
  }
  const PolicyGraph::Ops::Value& a = b.value(0);
  const PolicyGraph::Ops::Value& c = b.value(1);
  const bool a_one = a.ints.size() == 1, c_one = c.ints.size() == 1;
  if (!(a.shape == c.shape || a_one || c_one)) {
    throw std::invalid_argument(b.label() + ": integer operands of shapes " +
                                format_shape(a.shape) + " and " + format_shape(c.shape) +
                                " (only equal shapes or one element are supported)");
  }
  shape = (a_one && !c_one) ? c.shape : (a.shape.size() >= c.shape.size() ? a.shape : c.shape);
  std::vector<IntDim> out;
  const std::size_t n = std::max(a.ints.size(), c.ints.size());
  for (std::size_t i = 0; i < n; ++i) {
    const IntDim x = a.ints[a_one ? 0 : i], y = c.ints[c_one ? 0 : i];
    IntDim r;
    bool ok = true;
    switch (sym) {
      case '+':
      case '-':
        ok = x.batch == y.batch || (x.factor == 0 && !x.batch) || (y.factor == 0 && !y.batch);
        r.factor = sym == '+' ? x.factor + y.factor : x.factor - y.factor;
        r.batch = x.batch || y.batch;
        if (x.batch && y.batch && r.factor == 0) r.batch = false;
        break;
      case '*':
        ok = !(x.batch && y.batch);
        r.factor = x.factor * y.factor;
        r.batch = (x.batch || y.batch) && r.factor != 0;
        break;
      default:  // '/': exact, or of constants (truncating, as ONNX)
        ok = y.factor != 0 && !(y.batch && !x.batch) && (!x.batch || x.factor % y.factor == 0);
        if (ok) {
          r.factor = x.factor / y.factor;
          r.batch = x.batch && !y.batch;
        }
        break;
    }
    if (!ok) {
      throw std::invalid_argument(b.label() + ": cannot compute " +
                                  ops::int_dim_text(x.factor, x.batch) + " " + sym + " " +
                                  ops::int_dim_text(y.factor, y.batch) + " for every batch size");
    }
    out.push_back(r);
  }
  b.fold_to(shape, std::move(out));
  return true;
}

SymbolicShape build_arithmetic(ops::Build& b, char sym) {
  SymbolicShape folded;
  if (fold_int_arithmetic(b, sym, folded)) return folded;
  b.refuse_non_float();
  return ops::broadcast_shapes(b.shape_of(0), b.shape_of(1), b.label());
}

struct AddOp {
  float operator()(float a, float b) const noexcept { return a + b; }
};
struct SubOp {
  float operator()(float a, float b) const noexcept { return a - b; }
};
struct MulOp {
  float operator()(float a, float b) const noexcept { return a * b; }
};
struct DivOp {
  float operator()(float a, float b) const noexcept { return a / b; }
};
struct PowOp {
  float operator()(float a, float b) const noexcept { return std::pow(a, b); }
};
struct GreaterOp {
  float operator()(float a, float b) const noexcept { return a > b ? 1.0f : 0.0f; }
};
struct LessOp {
  float operator()(float a, float b) const noexcept { return a < b ? 1.0f : 0.0f; }
};

// numpy broadcasting along precomputed strides (0 on broadcast dims).
template <class F>
void broadcast_binary(F f, const View& a, const std::vector<std::size_t>& sa, const View& b,
                      const std::vector<std::size_t>& sb, const std::vector<std::size_t>& out_shape,
                      std::size_t total, float* out) noexcept {
  const std::size_t rank = out_shape.size();
  std::size_t index[16] = {};  // compile() refuses ranks above 16
  std::size_t ia = 0, ib = 0;
  for (std::size_t i = 0; i < total; ++i) {
    out[i] = f(a[ia], b[ib]);
    // Advance the multi-index (last dim fastest) and both input offsets.
    for (std::size_t k = rank; k-- > 0;) {
      if (++index[k] < out_shape[k]) {
        ia += sa[k];
        ib += sb[k];
        break;
      }
      ia -= sa[k] * (out_shape[k] - 1);
      ib -= sb[k] * (out_shape[k] - 1);
      index[k] = 0;
    }
  }
}

// y = f(a, b) with numpy broadcasting as plan_binary planned it.
template <class F>
void binary(F f, const ops::Step& step, const ops::Ctx& ctx, float* y) noexcept {
  const View a = ctx.view(step.in[0]), b = ctx.view(step.in[1]);
  const std::size_t size = step.size;
  switch (step.add) {
    case AddKind::kSame:
      for (std::size_t i = 0; i < size; ++i) y[i] = f(a[i], b[i]);
      break;
    case AddKind::kRowRight:
      for (std::size_t r = 0; r * step.n < size; ++r) {
        for (std::size_t j = 0; j < step.n; ++j) y[r * step.n + j] = f(a[r * step.n + j], b[j]);
      }
      break;
    case AddKind::kRowLeft:
      for (std::size_t r = 0; r * step.n < size; ++r) {
        for (std::size_t j = 0; j < step.n; ++j) y[r * step.n + j] = f(a[j], b[r * step.n + j]);
      }
      break;
    case AddKind::kGeneral:
      broadcast_binary(f, a, step.stride_a, b, step.stride_b, step.out_shape, size, y);
      break;
  }
}

// `shape` without its leading 1s.
std::vector<std::size_t> squeeze_leading(const std::vector<std::size_t>& shape) {
  std::size_t first = 0;
  while (first < shape.size() && shape[first] == 1) ++first;
  return std::vector<std::size_t>(shape.begin() + static_cast<std::ptrdiff_t>(first), shape.end());
}

void refuse_rank_above_16(const ops::Planner& p) {
  if (p.out_shape().size() > 16) {
    throw std::invalid_argument(p.node.label + ": broadcasting over more than 16 dimensions is not supported");
  }
}

}  // namespace

SymbolicShape ops::build_add(Build& b) { return build_arithmetic(b, '+'); }
SymbolicShape ops::build_sub(Build& b) { return build_arithmetic(b, '-'); }
SymbolicShape ops::build_mul(Build& b) { return build_arithmetic(b, '*'); }
SymbolicShape ops::build_div(Build& b) { return build_arithmetic(b, '/'); }

SymbolicShape ops::build_pow(Build& b) {
  b.refuse_non_float();
  return broadcast_shapes(b.shape_of(0), b.shape_of(1), b.label());
}

SymbolicShape ops::build_compare(Build& b) {
  b.refuse_non_float();
  b.folded.boolean = true;
  return broadcast_shapes(b.shape_of(0), b.shape_of(1), b.label());
}

// Equal shapes, a row repeated over the other operand (x + bias), or the
// general strided walk.
bool ops::plan_binary(Planner& p, Step& step) {
  step.in[0] = p.at(0);
  step.in[1] = p.at(1);
  const std::vector<std::size_t>& out_shape = p.out_shape();
  const std::vector<std::size_t>& sa = p.in_shape(0);
  const std::vector<std::size_t>& sb = p.in_shape(1);
  const std::vector<std::size_t> last{out_shape.empty() ? 1 : out_shape.back()};
  if (sa == out_shape && sb == out_shape) {
    step.add = AddKind::kSame;
  } else if (!out_shape.empty() && sa == out_shape && squeeze_leading(sb) == last) {
    step.add = AddKind::kRowRight;
    step.n = last[0];
  } else if (!out_shape.empty() && sb == out_shape && squeeze_leading(sa) == last) {
    step.add = AddKind::kRowLeft;
    step.n = last[0];
  } else {
    refuse_rank_above_16(p);
    step.add = AddKind::kGeneral;
    step.out_shape = out_shape;
    step.stride_a = broadcast_strides(sa, out_shape);
    step.stride_b = broadcast_strides(sb, out_shape);
  }
  return true;
}

void ops::run_add(const Step& step, const Ctx& ctx, float* y) noexcept { binary(AddOp{}, step, ctx, y); }
void ops::run_sub(const Step& step, const Ctx& ctx, float* y) noexcept { binary(SubOp{}, step, ctx, y); }
void ops::run_mul(const Step& step, const Ctx& ctx, float* y) noexcept { binary(MulOp{}, step, ctx, y); }
void ops::run_div(const Step& step, const Ctx& ctx, float* y) noexcept { binary(DivOp{}, step, ctx, y); }
void ops::run_pow(const Step& step, const Ctx& ctx, float* y) noexcept { binary(PowOp{}, step, ctx, y); }
void ops::run_greater(const Step& step, const Ctx& ctx, float* y) noexcept {
  binary(GreaterOp{}, step, ctx, y);
}
void ops::run_less(const Step& step, const Ctx& ctx, float* y) noexcept { binary(LessOp{}, step, ctx, y); }

SymbolicShape ops::build_where(Build& b) {
  if (!b.value(0).boolean) {
    throw std::invalid_argument(b.label() + ": the condition " + b.quoted(0) +
                                " must be a boolean tensor computed by Greater or Less");
  }
  for (std::size_t i = 1; i < 3; ++i) {
    if (b.ints_in(i) || b.value(i).boolean) {
      throw std::invalid_argument(b.label() + ": input " + b.quoted(i) +
                                  " must be a float tensor; the native policy computes on "
                                  "FLOAT tensors only");
    }
  }
  return broadcast_shapes(broadcast_shapes(b.shape_of(0), b.shape_of(1), b.label()), b.shape_of(2),
                          b.label());
}

bool ops::plan_where(Planner& p, Step& step) {
  refuse_rank_above_16(p);
  const std::vector<std::size_t>& out = p.out_shape();
  for (std::size_t i = 0; i < 3; ++i) step.in[i] = p.at(i);
  step.out_shape = out;
  step.stride_a = broadcast_strides(p.in_shape(0), out);
  step.stride_b = broadcast_strides(p.in_shape(1), out);
  step.stride_c = broadcast_strides(p.in_shape(2), out);
  return true;
}

void ops::run_where(const Step& step, const Ctx& ctx, float* y) noexcept {
  const View c = ctx.view(step.in[0]), a = ctx.view(step.in[1]), b = ctx.view(step.in[2]);
  const std::size_t rank = step.out_shape.size();
  std::size_t index[16] = {};
  std::size_t ic = 0, ia = 0, ib = 0;
  for (std::size_t i = 0; i < step.size; ++i) {
    y[i] = c[ic] != 0.0f ? a[ia] : b[ib];
    for (std::size_t k = rank; k-- > 0;) {
      if (++index[k] < step.out_shape[k]) {
        ic += step.stride_a[k];
        ia += step.stride_b[k];
        ib += step.stride_c[k];
        break;
      }
      ic -= step.stride_a[k] * (step.out_shape[k] - 1);
      ia -= step.stride_b[k] * (step.out_shape[k] - 1);
      ib -= step.stride_c[k] * (step.out_shape[k] - 1);
      index[k] = 0;
    }
  }
}

}  // namespace evokit
