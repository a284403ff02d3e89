// Gemm and MatMul (policy_op_table.h), with the ONNX operator specs'
// semantics; their kernels are policy_kernels.cc's:
//
//   Gemm    Y = alpha * A' B' + beta * C, A' = transA ? A^T : A, B' likewise,
//           C unidirectionally broadcast to (M, N)
//   MatMul  numpy matmul with a 2-D right operand: (..., m, k) x (k, n)
#include <stdexcept>
#include <utility>

#include "policy/policy_op_table.h"

namespace evokit {

SymbolicShape ops::build_gemm(Build& b) {
  b.refuse_non_float();
  PolicyGraph::Ops::Node& node = b.node;
  const std::string& label = b.label();
  const std::int64_t trans_a = b.int_attr("transA", 0);
  const std::int64_t trans_b = b.int_attr("transB", 0);
  for (const auto& [key, v] : {std::pair<const char*, std::int64_t>{"transA", trans_a},
                               std::pair<const char*, std::int64_t>{"transB", trans_b}}) {
    if (v != 0 && v != 1) {
      throw std::invalid_argument(label + ": attribute " + key + " must be 0 or 1, got " +
                                  std::to_string(v));
    }
  }
  node.trans_a = trans_a == 1;
  node.trans_b = trans_b == 1;
  node.alpha = b.float_attr("alpha", 1.0f);
  node.beta = b.float_attr("beta", 1.0f);
  const SymbolicShape& a = b.shape_of(0);
  const SymbolicShape& w = b.shape_of(1);
  if (a.size() != 2) {
    throw std::invalid_argument(label + ": input A " + b.quoted(0) + " must be 2-D, got shape " +
                                format_shape(a));
  }
  if (w.size() != 2) {
    throw std::invalid_argument(label + ": input B " + b.quoted(1) + " must be 2-D, got shape " +
                                format_shape(w));
  }
  const Dim m = node.trans_a ? a[1] : a[0];
  const Dim k_a = node.trans_a ? a[0] : a[1];
  const Dim k_b = node.trans_b ? w[1] : w[0];
  const Dim n = node.trans_b ? w[0] : w[1];
  if (k_a != k_b) {
    throw std::invalid_argument(
        label + ": inner dimensions differ: A " + b.quoted(0) + " " + format_shape(a) +
        (node.trans_a ? " (transposed)" : "") + " x B " + b.quoted(1) + " " + format_shape(w) +
        (node.trans_b ? " (transposed)" : "") + ": expected B to have " + format_dim(k_a) +
        (node.trans_b ? " columns" : " rows") + ", got " + format_dim(k_b));
  }
  const SymbolicShape out{m, n};
  if (b.has_input(2)) {
    const SymbolicShape& c = b.shape_of(2);
    bool ok = c.size() <= 2;
    for (std::size_t i = 0; ok && i < c.size(); ++i) {
      const Dim& want = out[2 - c.size() + i];
      ok = c[i] == want || (!c[i].batch && c[i].factor == 1);
    }
    if (!ok) {
      throw std::invalid_argument(label + ": input C " + b.quoted(2) + " of shape " +
                                  format_shape(c) + " cannot be broadcast to the output " +
                                  format_shape(out));
    }
  }
  return out;
}

bool ops::plan_gemm(Planner& p, Step& step) {
  const PolicyGraph::Ops::Node& node = p.node;
  step.in[0] = p.plain_in(0);
  step.in[1] = p.at(1);
  step.m = p.out_shape()[0];
  step.n = p.out_shape()[1];
  step.k = node.trans_a ? p.in_shape(0)[0] : p.in_shape(0)[1];
  step.alpha = node.alpha;
  step.beta = node.beta;
  step.trans_a = node.trans_a;
  step.trans_b = node.trans_b;
  step.has_c = node.inputs.size() == 3 && node.inputs[2] >= 0;
  if (step.has_c) {
    step.in[2] = p.at(2);
    const std::vector<std::size_t>& sc = p.in_shape(2);
    if (sc.size() == 2) {
      step.c_rows = sc[0];
      step.c_cols = sc[1];
    } else if (sc.size() == 1) {
      step.c_cols = sc[0];
    }
  }
  return true;
}

void ops::run_gemm(const Step& step, const Ctx& ctx, float* y) noexcept {
  detail::matmul(ctx.view(step.in[0]).base, step.trans_a, ctx.view(step.in[1]), step.trans_b,
                 step.m, step.n, step.k, y);
  const detail::View c = step.has_c ? ctx.view(step.in[2]) : detail::View{};
  detail::gemm_epilogue(y, step.m, step.n, step.alpha, step.beta, step.has_c ? &c : nullptr,
                        step.c_rows, step.c_cols);
}

SymbolicShape ops::build_matmul(Build& b) {
  b.refuse_non_float();
  const std::string& label = b.label();
  const SymbolicShape& a = b.shape_of(0);
  const SymbolicShape& w = b.shape_of(1);
  if (w.size() != 2) {
    throw std::invalid_argument(label + ": the right operand " + b.quoted(1) +
                                " must be 2-D (k, n), got shape " + format_shape(w));
  }
  if (a.empty()) {
    throw std::invalid_argument(label + ": the left operand " + b.quoted(0) +
                                " must have rank >= 1, got shape ()");
  }
  if (a.back() != w[0]) {
    throw std::invalid_argument(label + ": inner dimensions differ: " + b.quoted(0) + " " +
                                format_shape(a) + " x " + b.quoted(1) + " " + format_shape(w) +
                                " (expected " + b.quoted(1) + " to have " + format_dim(a.back()) +
                                " rows, got " + format_dim(w[0]) + ")");
  }
  SymbolicShape out(a.begin(), a.end() - 1);
  out.push_back(w[1]);
  return out;
}

bool ops::plan_matmul(Planner& p, Step& step) {
  step.in[0] = p.plain_in(0);
  step.in[1] = p.at(1);
  step.k = p.in_shape(1)[0];
  step.n = p.in_shape(1)[1];
  step.m = step.n == 0 ? 0 : step.size / step.n;
  return true;
}

void ops::run_matmul(const Step& step, const Ctx& ctx, float* y) noexcept {
  detail::matmul(ctx.view(step.in[0]).base, false, ctx.view(step.in[1]), false, step.m, step.n,
                 step.k, y);
}

}  // namespace evokit
