// PolicyGraph: running a compiled plan (execute) and the one-call run().
// The ops' semantics are in policy_graph_build.cc. The dense and Tanh
// kernels are in policy_kernels.cc; the elementwise ops (Relu, Sigmoid,
// Softmax, Clip, the broadcasting Add, Sub, Mul, Div) are here, in the loop
// over the plan's steps. Every output element is computed with the same
// float operations in the same order whatever the operand's source, so a
// ParamView (base + scale * noise, perturbed on the fly) gives the bits of
// the materialised parameter vector.
#include "evokit/policy_graph.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "common/messages.h"
#include "policy_graph_ops.h"
#include "policy_kernels.h"
#include "policy_recurrent.h"

namespace evokit {

namespace {

using detail::View;

// The elementwise binary ops, by PolicyGraph's Op.
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
// Greater and Less: a boolean value, 1.0f for true (Where's condition).
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

float sigmoid(float x) {
  if (x >= 0.0f) return 1.0f / (1.0f + std::exp(-x));
  const float e = std::exp(x);
  return e / (1.0f + e);
}

}  // namespace

void PolicyGraph::execute(const Plan& plan, const float* obs, const ParamView& params,
                          float* workspace, float* out, float* state) const noexcept {
  using Source = Plan::Source;
  const Ops::Context ctx{obs, params, workspace, state};
  const auto view = [&](const Plan::Operand& op) -> View { return Ops::view(op, ctx); };

  for (const Plan::Copy& c : plan.copies_) {
    const View v = view(Plan::Operand{Source::kParam, c.param, nullptr});
    float* dst = workspace + c.work;
    for (std::size_t j = 0; j < c.size; ++j) dst[j] = v[j];
  }

  // y = f(a, b) with numpy broadcasting as compile() planned it (Add, Sub, Mul, Div).
  const auto binary = [&](auto f, const Plan::Step& step, const View& a, const View& b, float* y) {
    const std::size_t size = step.size;
    switch (step.add) {
      case Plan::AddKind::kSame:
        for (std::size_t i = 0; i < size; ++i) y[i] = f(a[i], b[i]);
        break;
      case Plan::AddKind::kRowRight:
        for (std::size_t r = 0; r * step.n < size; ++r) {
          for (std::size_t j = 0; j < step.n; ++j) y[r * step.n + j] = f(a[r * step.n + j], b[j]);
        }
        break;
      case Plan::AddKind::kRowLeft:
        for (std::size_t r = 0; r * step.n < size; ++r) {
          for (std::size_t j = 0; j < step.n; ++j) y[r * step.n + j] = f(a[j], b[r * step.n + j]);
        }
        break;
      case Plan::AddKind::kGeneral:
        broadcast_binary(f, a, step.stride_a, b, step.stride_b, step.out_shape, size, y);
        break;
    }
  };

  for (const Plan::Step& step : plan.steps_) {
    float* y = workspace + step.out;
    const std::size_t size = step.size;
    switch (step.op) {
      case Op::kRelu: {
        const float* x = view(step.in[0]).base;
        for (std::size_t i = 0; i < size; ++i) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
        break;
      }
      case Op::kTanh: {
        const float* x = view(step.in[0]).base;
        detail::tanh_block(x, y, size);
        break;
      }
      case Op::kSigmoid: {
        const float* x = view(step.in[0]).base;
        for (std::size_t i = 0; i < size; ++i) y[i] = sigmoid(x[i]);
        break;
      }
      case Op::kSoftmax: {
        const float* x = view(step.in[0]).base;
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
        break;
      }
      case Op::kAdd:
        binary(AddOp{}, step, view(step.in[0]), view(step.in[1]), y);
        break;
      case Op::kSub:
        binary(SubOp{}, step, view(step.in[0]), view(step.in[1]), y);
        break;
      case Op::kMul:
        binary(MulOp{}, step, view(step.in[0]), view(step.in[1]), y);
        break;
      case Op::kDiv:
        binary(DivOp{}, step, view(step.in[0]), view(step.in[1]), y);
        break;
      case Op::kPow:
        binary(PowOp{}, step, view(step.in[0]), view(step.in[1]), y);
        break;
      case Op::kGreater:
        binary(GreaterOp{}, step, view(step.in[0]), view(step.in[1]), y);
        break;
      case Op::kLess:
        binary(LessOp{}, step, view(step.in[0]), view(step.in[1]), y);
        break;
      case Op::kClip: {
        const float* x = view(step.in[0]).base;
        for (std::size_t i = 0; i < size; ++i) {
          const float v = x[i] < step.lo ? step.lo : x[i];
          y[i] = v > step.hi ? step.hi : v;
        }
        break;
      }
      case Op::kMatMul:
        detail::matmul(view(step.in[0]).base, false, view(step.in[1]), false, step.m, step.n, step.k, y);
        break;
      case Op::kGemm: {
        detail::matmul(view(step.in[0]).base, step.trans_a, view(step.in[1]), step.trans_b, step.m,
                       step.n, step.k, y);
        const View c = step.has_c ? view(step.in[2]) : View{};
        detail::gemm_epilogue(y, step.m, step.n, step.alpha, step.beta, step.has_c ? &c : nullptr,
                              step.c_rows, step.c_cols);
        break;
      }
      case Op::kTranspose:
        detail::strided_copy(view(step.in[0]), step.out_shape, step.stride_a, size, y);
        break;
      case Op::kLSTM:
      case Op::kGRU: {
        detail::RecurrentArgs a;
        a.x = view(step.in[0]).base;
        a.w = view(step.in[1]);
        a.r = view(step.in[2]);
        a.has_b = step.has_c;
        if (a.has_b) a.b = view(step.in[3]);
        a.h0 = step.has_h0 ? view(step.in[4]).base : nullptr;
        a.c0 = step.has_c0 ? view(step.in[5]).base : nullptr;
        a.seq = step.seq;
        a.batch = step.m;
        a.input = step.k;
        a.hidden = step.hidden;
        a.linear_before_reset = step.linear_before_reset;
        a.y = y;
        a.c = workspace + step.out2;
        a.scratch = workspace + step.scratch;
        if (step.op == Op::kLSTM) {
          detail::lstm_forward(a);
        } else {
          detail::gru_forward(a);
        }
        break;
      }
      case Op::kIdentity:
      case Op::kFlatten:
        break;  // never a step
      default:
        Ops::run(step, ctx, y);
        break;
    }
  }

  const View result = view(plan.output_);
  for (std::size_t i = 0; i < plan.output_size_; ++i) out[i] = result[i];
  if (plan.state_size_ > 0) {  // staged first: a state output may read the state itself
    float* stage = workspace + plan.state_stage_;
    std::size_t at = 0;
    for (const auto& [operand, size] : plan.state_next_) {
      const View next = view(operand);
      for (std::size_t i = 0; i < size; ++i) stage[at + i] = next[i];
      at += size;
    }
    std::copy(stage, stage + plan.state_size_, state);
  }
}

std::vector<float> PolicyGraph::run(const float* obs, std::size_t batch, const float* params,
                                    std::size_t num_params) const {
  if (recurrent()) {
    throw std::invalid_argument("the graph is recurrent (state input '" + state_inputs_[0] +
                                "'): run it with a state buffer");
  }
  return run(obs, batch, params, num_params, nullptr);
}

std::vector<float> PolicyGraph::run(const float* obs, std::size_t batch, const float* params,
                                    std::size_t num_params, float* state) const {
  if (input_name_.empty()) throw std::invalid_argument("the graph has no input");
  if (outputs_.empty()) throw std::invalid_argument("the graph has no output");
  if (batch == 0) throw std::invalid_argument("batch must be >= 1, got 0");
  detail::require_non_null(obs, "obs");
  if (num_params != num_params_) {
    throw std::invalid_argument("params holds " + std::to_string(num_params) +
                                " values, the graph expects num_params = " +
                                std::to_string(num_params_));
  }
  if (num_params_ > 0) detail::require_non_null(params, "params");

  const Plan plan = compile(batch);
  std::vector<float> workspace(plan.workspace_size());
  std::vector<float> out(plan.output_size());
  if (recurrent()) detail::require_non_null(state, "state");
  execute(plan, obs, ParamView{params, nullptr, 0.0f}, workspace.data(), out.data(), state);
  return out;
}

}  // namespace evokit
