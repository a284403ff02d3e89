// The recurrent ops LSTM and GRU, and Transpose (policy_op_table.h):
// building, planning, running and their kernels. The other layout ops
// exported recurrent graphs put around them (Squeeze, Unsqueeze, Slice,
// Reshape) and the integer shape arithmetic (Shape, Concat, Gather, Mul, ...)
// are policy_ops_shape.cc's, policy_ops_index.cc's and policy_ops_binary.cc's.
//
// Op semantics follow the ONNX operator specs (opset 13+):
//   LSTM  layout 0, direction forward, default activations (sigmoid, tanh,
//         tanh), gates i, o, f, c in W, R and B; no peepholes, clip or
//         sequence_lens. Y (seq, 1, batch, hidden), Y_h and Y_c (1, batch,
//         hidden).
//   GRU   the same with gates z, r, h, linear_before_reset 0 or 1 (PyTorch
//         exports 1).
//   Transpose  perm (default: reversed axes).
// Every attribute value outside these is refused naming the node.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>

#include "evokit/policy_graph.h"
#include "policy/policy_op_table.h"
#include "policy/policy_recurrent.h"

namespace evokit {

namespace {

std::string join_strings(const std::vector<std::string>& v) {
  std::string out = "[";
  for (std::size_t i = 0; i < v.size(); ++i) out += (i ? ", '" : "'") + v[i] + "'";
  return out + "]";
}

}  // namespace

// ---- building, planning, running -------------------------------------------

namespace {

// Input i's shape, which must be a float tensor's.
const SymbolicShape& float_input(const ops::Build& b, std::size_t i, const char* what) {
  if (b.ints_in(i) || b.value(i).boolean) {
    throw std::invalid_argument(b.label() + ": " + what + " '" + b.value(i).name +
                                "' is an integer or boolean tensor, expected a float tensor");
  }
  return b.shape_of(i);
}

SymbolicShape build_recurrent(ops::Build& b, bool lstm) {
  const std::string& label = b.label();
  const std::int64_t hidden = b.int_attr("hidden_size", 0);
  if (hidden < 1) {
    throw std::invalid_argument(label + ": attribute hidden_size must be >= 1, got " +
                                std::to_string(hidden) +
                                (b.attributes.ints.count("hidden_size") ? "" : " (missing)"));
  }
  if (b.int_attr("layout", 0) != 0) {
    throw std::invalid_argument(label + ": attribute layout " +
                                std::to_string(b.int_attr("layout", 0)) +
                                " is not supported (only 0: (seq, batch, input))");
  }
  if (lstm && b.int_attr("input_forget", 0) != 0) {
    throw std::invalid_argument(label + ": attribute input_forget " +
                                std::to_string(b.int_attr("input_forget", 0)) +
                                " is not supported (only 0)");
  }
  const std::int64_t lbr = b.int_attr("linear_before_reset", 0);
  if (lbr != 0 && lbr != 1) {
    throw std::invalid_argument(label + ": attribute linear_before_reset must be 0 or 1, got " +
                                std::to_string(lbr));
  }
  b.node.linear_before_reset = lbr == 1;
  const auto dir = b.attributes.strings.find("direction");
  if (dir != b.attributes.strings.end() && dir->second != std::vector<std::string>{"forward"}) {
    throw std::invalid_argument(label + ": direction " + join_strings(dir->second) +
                                " is not supported (only 'forward')");
  }
  const std::vector<std::string> defaults =
      lstm ? std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"}
           : std::vector<std::string>{"Sigmoid", "Tanh"};
  const auto act = b.attributes.strings.find("activations");
  if (act != b.attributes.strings.end() && act->second != defaults) {
    throw std::invalid_argument(label + ": activations " + join_strings(act->second) +
                                " are not supported (only the default " +
                                join_strings(defaults) + ")");
  }
  if (b.has_input(4)) {
    throw std::invalid_argument(label + ": input sequence_lens '" + b.value(4).name +
                                "' is not supported (every sequence has the full length)");
  }
  if (lstm && b.has_input(7)) {
    throw std::invalid_argument(label + ": input P (peepholes) '" + b.value(7).name +
                                "' is not supported");
  }
  const auto h = static_cast<std::size_t>(hidden);
  const std::size_t gates = lstm ? 4 : 3;
  const SymbolicShape& x = float_input(b, 0, "input X");
  if (x.size() != 3 || x[0].batch || x[2].batch) {
    throw std::invalid_argument(label + ": input X '" + b.value(0).name +
                                "' must have shape (seq_length, batch, input_size), got " +
                                format_shape(x));
  }
  const Dim batch = x[1];
  const std::size_t input = x[2].factor;
  const auto expect = [&](std::size_t i, const char* what, const SymbolicShape& want) {
    const SymbolicShape& got = float_input(b, i, what);
    if (got != want) {
      throw std::invalid_argument(label + ": input " + what + " '" + b.value(i).name +
                                  "' has shape " + format_shape(got) + ", expected " +
                                  format_shape(want));
    }
  };
  expect(1, "W", {Dim{1, false}, Dim{gates * h, false}, Dim{input, false}});
  expect(2, "R", {Dim{1, false}, Dim{gates * h, false}, Dim{h, false}});
  if (b.has_input(3)) expect(3, "B", {Dim{1, false}, Dim{2 * gates * h, false}});
  const SymbolicShape state{Dim{1, false}, batch, Dim{h, false}};
  if (b.has_input(5)) expect(5, "initial_h", state);
  if (lstm && b.has_input(6)) expect(6, "initial_c", state);
  b.node.hidden = h;
  b.more.assign(lstm ? 2 : 1, state);
  return {x[0], Dim{1, false}, batch, Dim{h, false}};
}

// The step's operands, shared by LSTM and GRU.
detail::RecurrentArgs recurrent_args(const ops::Step& step, const ops::Ctx& ctx, float* y) noexcept {
  detail::RecurrentArgs a;
  a.x = ctx.view(step.in[0]).base;
  a.w = ctx.view(step.in[1]);
  a.r = ctx.view(step.in[2]);
  a.has_b = step.has_c;
  if (a.has_b) a.b = ctx.view(step.in[3]);
  a.h0 = step.has_h0 ? ctx.view(step.in[4]).base : nullptr;
  a.c0 = step.has_c0 ? ctx.view(step.in[5]).base : nullptr;
  a.seq = step.seq;
  a.batch = step.m;
  a.input = step.k;
  a.hidden = step.hidden;
  a.linear_before_reset = step.linear_before_reset;
  a.y = y;
  a.c = ctx.workspace + step.out2;
  a.scratch = ctx.workspace + step.scratch;
  return a;
}

}  // namespace

SymbolicShape ops::build_lstm(Build& b) { return build_recurrent(b, true); }
SymbolicShape ops::build_gru(Build& b) { return build_recurrent(b, false); }

// Y, then Y_c (LSTM) and the gate scratch; Y_h is Y's last step.
bool ops::plan_recurrent(Planner& p, Step& step) {
  const PolicyGraph::Ops::Node& node = p.node;
  const bool lstm = step.run == run_lstm;
  const auto has = [&](std::size_t i) { return node.inputs.size() > i && node.inputs[i] >= 0; };
  step.seq = p.in_shape(0)[0];
  step.m = p.in_shape(0)[1];  // batch
  step.k = p.in_shape(0)[2];  // input size
  step.hidden = node.hidden;
  step.linear_before_reset = node.linear_before_reset;
  step.in[0] = p.plain_in(0);
  step.in[1] = p.at(1);
  step.in[2] = p.at(2);
  step.has_c = has(3);  // the bias B
  if (has(3)) step.in[3] = p.at(3);
  step.has_h0 = has(5);  // else zeros
  step.has_c0 = lstm && has(6);
  if (step.has_h0) step.in[4] = p.plain_in(5);
  if (step.has_c0) step.in[5] = p.plain_in(6);
  const std::size_t state = step.m * step.hidden;
  step.size = step.seq * state;
  p.place_output(step);
  step.out2 = lstm ? p.reserve(state) : 0;
  step.scratch = p.reserve(detail::recurrent_scratch_size(lstm, step.m, step.hidden));
  using Operand = PolicyGraph::Ops::Operand;
  using Source = PolicyGraph::Ops::Source;
  if (!node.more_outputs.empty() && node.more_outputs[0] >= 0) {
    p.where[static_cast<std::size_t>(node.more_outputs[0])] =
        Operand{Source::kWork, step.out + (step.seq - 1) * state, nullptr};
  }
  if (node.more_outputs.size() > 1 && node.more_outputs[1] >= 0) {
    p.where[static_cast<std::size_t>(node.more_outputs[1])] = Operand{Source::kWork, step.out2, nullptr};
  }
  return true;
}

void ops::run_lstm(const Step& step, const Ctx& ctx, float* y) noexcept {
  detail::lstm_forward(recurrent_args(step, ctx, y));
}

void ops::run_gru(const Step& step, const Ctx& ctx, float* y) noexcept {
  detail::gru_forward(recurrent_args(step, ctx, y));
}

SymbolicShape ops::build_transpose(Build& b) {
  const std::string& label = b.label();
  const SymbolicShape& x = float_input(b, 0, "input");
  std::vector<std::int64_t> perm;
  const auto it = b.attributes.int_lists.find("perm");
  if (it != b.attributes.int_lists.end()) {
    perm = it->second;
  } else {
    for (std::size_t i = x.size(); i-- > 0;) perm.push_back(static_cast<std::int64_t>(i));
  }
  std::vector<bool> seen(x.size(), false);
  bool ok = perm.size() == x.size();
  for (std::size_t i = 0; ok && i < perm.size(); ++i) {
    ok = perm[i] >= 0 && static_cast<std::size_t>(perm[i]) < x.size() &&
         !seen[static_cast<std::size_t>(perm[i])];
    if (ok) seen[static_cast<std::size_t>(perm[i])] = true;
  }
  if (!ok) {
    throw std::invalid_argument(label + ": perm " + ops::ints_text(perm) +
                                " is not a permutation of the " + std::to_string(x.size()) +
                                " axes of " + format_shape(x));
  }
  SymbolicShape out;
  b.node.perm.clear();
  for (std::int64_t p : perm) {
    b.node.perm.push_back(static_cast<std::size_t>(p));
    out.push_back(x[static_cast<std::size_t>(p)]);
  }
  return out;
}

// The input strides of each output axis; no step when that walk is
// contiguous (the same bytes).
bool ops::plan_transpose(Planner& p, Step& step) {
  const std::vector<std::size_t>& x = p.in_shape(0);
  const std::vector<std::size_t>& out_shape = p.out_shape();
  std::vector<std::size_t> stride(x.size(), 1);
  for (std::size_t i = x.size(); i-- > 1;) stride[i - 1] = stride[i] * x[i];
  std::vector<std::size_t> strides;
  for (std::size_t d : p.node.perm) strides.push_back(stride[d]);
  bool contiguous = true;
  std::size_t expect = 1;
  for (std::size_t i = out_shape.size(); i-- > 0;) {
    if (out_shape[i] == 1) continue;
    contiguous = contiguous && strides[i] == expect;
    expect *= out_shape[i];
  }
  if (contiguous) return false;
  if (out_shape.size() > 16) {
    throw std::invalid_argument(p.node.label + ": more than 16 dimensions are not supported");
  }
  step.in[0] = p.at(0);
  step.out_shape = out_shape;
  step.stride_a = strides;
  return true;
}

void ops::run_transpose(const Step& step, const Ctx& ctx, float* y) noexcept {
  detail::strided_copy(ctx.view(step.in[0]), step.out_shape, step.stride_a, step.size, y);
}

// ---- kernels --------------------------------------------------------------

namespace detail {

namespace {

float logistic(float x) noexcept {
  if (x >= 0.0f) return 1.0f / (1.0f + std::exp(-x));
  const float e = std::exp(x);
  return e / (1.0f + e);
}

}  // namespace

void strided_copy(const View& in, const std::vector<std::size_t>& out_shape,
                  const std::vector<std::size_t>& strides, std::size_t total, float* out) noexcept {
  const std::size_t rank = out_shape.size();
  std::size_t index[16] = {};  // compile() refuses ranks above 16
  std::size_t at = 0;
  for (std::size_t i = 0; i < total; ++i) {
    out[i] = in[at];
    for (std::size_t k = rank; k-- > 0;) {
      if (++index[k] < out_shape[k]) {
        at += strides[k];
        break;
      }
      at -= strides[k] * (out_shape[k] - 1);
      index[k] = 0;
    }
  }
}

std::size_t recurrent_scratch_size(bool lstm, std::size_t batch, std::size_t hidden) noexcept {
  const std::size_t gates = lstm ? 4 : 3;
  // x W^T and h R^T per gate, zeros for an omitted initial state, r * h (GRU).
  return 2 * batch * gates * hidden + batch * hidden + (lstm ? 0 : batch * hidden);
}

void lstm_forward(const RecurrentArgs& a) noexcept {
  const std::size_t n = a.batch, h = a.hidden, g4 = 4 * h;
  float* xw = a.scratch;
  float* hr = xw + n * g4;
  float* zeros = hr + n * g4;
  for (std::size_t i = 0; i < n * h; ++i) zeros[i] = 0.0f;
  const float* h_prev = a.h0 != nullptr ? a.h0 : zeros;
  const float* c_prev = a.c0 != nullptr ? a.c0 : zeros;
  for (std::size_t t = 0; t < a.seq; ++t) {
    matmul(a.x + t * n * a.input, false, a.w, true, n, g4, a.input, xw);
    matmul(h_prev, false, a.r, true, n, g4, h, hr);
    float* y = a.y + t * n * h;
    for (std::size_t b = 0; b < n; ++b) {
      const float* gx = xw + b * g4;
      const float* gh = hr + b * g4;
      const auto gate = [&](std::size_t k, std::size_t j) {
        const std::size_t q = k * h + j;
        const float bias = a.has_b ? a.b[q] + a.b[g4 + q] : 0.0f;
        return gx[q] + gh[q] + bias;
      };
      for (std::size_t j = 0; j < h; ++j) {
        const float i_gate = logistic(gate(0, j));
        const float o_gate = logistic(gate(1, j));
        const float f_gate = logistic(gate(2, j));
        const float cand = tanh_approx(gate(3, j));
        const float c = f_gate * c_prev[b * h + j] + i_gate * cand;
        a.c[b * h + j] = c;
        y[b * h + j] = o_gate * tanh_approx(c);
      }
    }
    h_prev = y;
    c_prev = a.c;
  }
}

void gru_forward(const RecurrentArgs& a) noexcept {
  const std::size_t n = a.batch, h = a.hidden, g3 = 3 * h;
  float* xw = a.scratch;
  float* hr = xw + n * g3;
  float* zeros = hr + n * g3;
  float* rh = zeros + n * h;
  for (std::size_t i = 0; i < n * h; ++i) zeros[i] = 0.0f;
  const float* h_prev = a.h0 != nullptr ? a.h0 : zeros;
  const View r_h{a.r.base + 2 * h * h, a.r.noise != nullptr ? a.r.noise + 2 * h * h : nullptr,
                 a.r.scale};
  const auto bias = [&](std::size_t q) { return a.has_b ? a.b[q] : 0.0f; };
  for (std::size_t t = 0; t < a.seq; ++t) {
    matmul(a.x + t * n * a.input, false, a.w, true, n, g3, a.input, xw);
    // linear_before_reset: h R^T for all three gates; else z and r here,
    // and (r * h) R_h^T once r is known.
    if (a.linear_before_reset) {
      matmul(h_prev, false, a.r, true, n, g3, h, hr);
    } else {  // rows of 3h with the last h filled below
      for (std::size_t b = 0; b < n; ++b) {
        matmul(h_prev + b * h, false, a.r, true, 1, 2 * h, h, hr + b * g3);
      }
    }
    float* y = a.y + t * n * h;
    for (std::size_t b = 0; b < n; ++b) {
      const float* gx = xw + b * g3;
      float* gh = hr + b * g3;
      for (std::size_t j = 0; j < 2 * h; ++j) {
        gh[j] = logistic(gx[j] + gh[j] + (bias(j) + bias(g3 + j)));  // z, then r
      }
      if (!a.linear_before_reset) {
        for (std::size_t j = 0; j < h; ++j) rh[b * h + j] = gh[h + j] * h_prev[b * h + j];
      }
    }
    if (!a.linear_before_reset) {
      // (r * h) R_h^T into the h-gate columns' place, row by row.
      for (std::size_t b = 0; b < n; ++b) {
        matmul(rh + b * h, false, r_h, true, 1, h, h, hr + b * g3 + 2 * h);
      }
    }
    for (std::size_t b = 0; b < n; ++b) {
      const float* gx = xw + b * g3;
      const float* gh = hr + b * g3;
      for (std::size_t j = 0; j < h; ++j) {
        const float z = gh[j];
        const float r = gh[h + j];
        const std::size_t q = 2 * h + j;
        const float pre = a.linear_before_reset
                              ? gx[q] + bias(q) + r * (gh[q] + bias(g3 + q))
                              : gx[q] + bias(q) + (gh[q] + bias(g3 + q));
        const float cand = tanh_approx(pre);
        y[b * h + j] = (1.0f - z) * cand + z * h_prev[b * h + j];
      }
    }
    h_prev = y;
  }
}

}  // namespace detail

}  // namespace evokit
