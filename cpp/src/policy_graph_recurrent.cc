// PolicyGraph: recurrent state, the recurrent ops LSTM and GRU, and
// Transpose: building and their kernels. compile() plans them in
// policy_graph_plan.cc, execute() runs them in policy_graph.cc. The other
// layout ops exported recurrent graphs put around them (Squeeze, Unsqueeze,
// Slice, Reshape) and the integer shape arithmetic (Shape, Concat, Gather,
// Mul, ...) are policy_graph_ops.cc's.
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
//
// Recurrent state: add_state_input() declares an input holding state,
// add_state_output() the value that holds its next value; compile() places
// the state in a caller's buffer and execute() replaces it in place.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>

#include "evokit/policy_graph.h"
#include "policy_graph_ops.h"
#include "policy_recurrent.h"

namespace evokit {

namespace {

std::string join_strings(const std::vector<std::string>& v) {
  std::string out = "[";
  for (std::size_t i = 0; i < v.size(); ++i) out += (i ? ", '" : "'") + v[i] + "'";
  return out + "]";
}

std::int64_t int_or(const NodeAttributes& a, const char* key, std::int64_t fallback) {
  return detail::attribute_or(a.ints, key, fallback);
}

}  // namespace

// ---- state --------------------------------------------------------------

void PolicyGraph::add_state_input(const std::string& name, const std::vector<std::size_t>& shape,
                                  std::size_t batch_axis) {
  const std::string label = "state input '" + name + "'";
  if (batch_axis >= shape.size()) {
    throw std::invalid_argument(label + ": batch axis " + std::to_string(batch_axis) +
                                " is out of range for shape " + format_shape(shape));
  }
  Value v{name, Kind::kState, {}};
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i != batch_axis && shape[i] == 0) {
      throw std::invalid_argument(label + ": dimension " + std::to_string(i) +
                                  " must be >= 1, got 0");
    }
    v.shape.push_back(i == batch_axis ? Dim{1, true} : Dim{shape[i], false});
  }
  v.state = state_inputs_.size();
  define(std::move(v), label);
  state_inputs_.push_back(name);
  state_outputs_.emplace_back();
}

void PolicyGraph::add_state_output(const std::string& input, const std::string& output) {
  const int in = find_value(input);
  if (in < 0 || values_[static_cast<std::size_t>(in)].kind != Kind::kState) {
    throw std::invalid_argument("state output '" + output + "': '" + input +
                                "' is not a state input of the graph");
  }
  const Value& state = values_[static_cast<std::size_t>(in)];
  if (!state_outputs_[state.state].empty()) {
    throw std::invalid_argument("state input '" + input + "' is already paired with output '" +
                                state_outputs_[state.state] + "'");
  }
  const int out = find_value(output);
  if (out < 0) {
    throw std::invalid_argument("state output '" + output + "' is not a value of the graph");
  }
  const SymbolicShape& shape = values_[static_cast<std::size_t>(out)].shape;
  if (shape != state.shape) {
    throw std::invalid_argument("state output '" + output + "' has shape " + format_shape(shape) +
                                ", its state input '" + input + "' has shape " +
                                format_shape(state.shape));
  }
  state_outputs_[state.state] = output;
}

std::vector<std::vector<std::size_t>> PolicyGraph::state_shapes(std::size_t batch) const {
  std::vector<std::vector<std::size_t>> out;
  for (const std::string& name : state_inputs_) {
    std::vector<std::size_t> dims;
    for (const Dim& d : values_[static_cast<std::size_t>(find_value(name))].shape) {
      dims.push_back(d.resolve(batch));
    }
    out.push_back(std::move(dims));
  }
  return out;
}

std::size_t PolicyGraph::state_size() const {
  std::size_t total = 0;
  for (const std::vector<std::size_t>& shape : state_shapes(1)) {
    std::size_t n = 1;
    for (std::size_t d : shape) n *= d;
    total += n;
  }
  return total;
}

// ---- building -------------------------------------------------------------

SymbolicShape PolicyGraph::infer_recurrent_shape(Node& node, const NodeAttributes& attributes,
                                                 std::vector<SymbolicShape>& more) const {
  const std::string& label = node.label;
  const auto has = [&](std::size_t i) { return i < node.inputs.size() && node.inputs[i] >= 0; };
  const auto value = [&](std::size_t i) -> const Value& {
    return values_[static_cast<std::size_t>(node.inputs[i])];
  };
  const auto float_input = [&](std::size_t i, const char* what) -> const SymbolicShape& {
    if (value(i).kind == Kind::kInts || value(i).boolean) {
      throw std::invalid_argument(label + ": " + what + " '" + value(i).name +
                                  "' is an integer or boolean tensor, expected a float tensor");
    }
    return value(i).shape;
  };

  switch (node.op) {
    case Op::kLSTM:
    case Op::kGRU: {
      const bool lstm = node.op == Op::kLSTM;
      const std::int64_t hidden = int_or(attributes, "hidden_size", 0);
      if (hidden < 1) {
        throw std::invalid_argument(label + ": attribute hidden_size must be >= 1, got " +
                                    std::to_string(hidden) +
                                    (attributes.ints.count("hidden_size") ? "" : " (missing)"));
      }
      if (int_or(attributes, "layout", 0) != 0) {
        throw std::invalid_argument(label + ": attribute layout " +
                                    std::to_string(int_or(attributes, "layout", 0)) +
                                    " is not supported (only 0: (seq, batch, input))");
      }
      if (lstm && int_or(attributes, "input_forget", 0) != 0) {
        throw std::invalid_argument(label + ": attribute input_forget " +
                                    std::to_string(int_or(attributes, "input_forget", 0)) +
                                    " is not supported (only 0)");
      }
      const std::int64_t lbr = int_or(attributes, "linear_before_reset", 0);
      if (lbr != 0 && lbr != 1) {
        throw std::invalid_argument(label + ": attribute linear_before_reset must be 0 or 1, got " +
                                    std::to_string(lbr));
      }
      node.linear_before_reset = lbr == 1;
      const auto dir = attributes.strings.find("direction");
      if (dir != attributes.strings.end() && dir->second != std::vector<std::string>{"forward"}) {
        throw std::invalid_argument(label + ": direction " + join_strings(dir->second) +
                                    " is not supported (only 'forward')");
      }
      const std::vector<std::string> defaults =
          lstm ? std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"}
               : std::vector<std::string>{"Sigmoid", "Tanh"};
      const auto act = attributes.strings.find("activations");
      if (act != attributes.strings.end() && act->second != defaults) {
        throw std::invalid_argument(label + ": activations " + join_strings(act->second) +
                                    " are not supported (only the default " +
                                    join_strings(defaults) + ")");
      }
      if (has(4)) {
        throw std::invalid_argument(label + ": input sequence_lens '" + value(4).name +
                                    "' is not supported (every sequence has the full length)");
      }
      if (lstm && has(7)) {
        throw std::invalid_argument(label + ": input P (peepholes) '" + value(7).name +
                                    "' is not supported");
      }
      const auto h = static_cast<std::size_t>(hidden);
      const std::size_t gates = lstm ? 4 : 3;
      const SymbolicShape& x = float_input(0, "input X");
      if (x.size() != 3 || x[0].batch || x[2].batch) {
        throw std::invalid_argument(label + ": input X '" + value(0).name +
                                    "' must have shape (seq_length, batch, input_size), got " +
                                    format_shape(x));
      }
      const Dim batch = x[1];
      const std::size_t input = x[2].factor;
      const auto expect = [&](std::size_t i, const char* what, const SymbolicShape& want) {
        const SymbolicShape& got = float_input(i, what);
        if (got != want) {
          throw std::invalid_argument(label + ": input " + what + " '" + value(i).name +
                                      "' has shape " + format_shape(got) + ", expected " +
                                      format_shape(want));
        }
      };
      expect(1, "W", {Dim{1, false}, Dim{gates * h, false}, Dim{input, false}});
      expect(2, "R", {Dim{1, false}, Dim{gates * h, false}, Dim{h, false}});
      if (has(3)) expect(3, "B", {Dim{1, false}, Dim{2 * gates * h, false}});
      const SymbolicShape state{Dim{1, false}, batch, Dim{h, false}};
      if (has(5)) expect(5, "initial_h", state);
      if (lstm && has(6)) expect(6, "initial_c", state);
      node.hidden = h;
      more.assign(lstm ? 2 : 1, state);
      return {x[0], Dim{1, false}, batch, Dim{h, false}};
    }

    case Op::kTranspose: {
      const SymbolicShape& x = float_input(0, "input");
      std::vector<std::int64_t> perm;
      const auto it = attributes.int_lists.find("perm");
      if (it != attributes.int_lists.end()) {
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
        throw std::invalid_argument(label + ": perm " + detail::ints_text(perm) +
                                    " is not a permutation of the " + std::to_string(x.size()) +
                                    " axes of " + format_shape(x));
      }
      SymbolicShape out;
      node.perm.clear();
      for (std::int64_t p : perm) {
        node.perm.push_back(static_cast<std::size_t>(p));
        out.push_back(x[static_cast<std::size_t>(p)]);
      }
      return out;
    }

    default:
      break;
  }
  throw std::logic_error(label + ": not LSTM, GRU or Transpose");  // unreachable
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
