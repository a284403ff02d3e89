// PolicyGraph: the ops PyTorch exports of common policies produce (what
// torch.onnx.export writes for nn.LayerNorm, nn.GELU, LeakyReLU, ELU, SELU,
// Softplus, Mish, Dropout, torch.cat, reshape / flatten / view, squeeze /
// unsqueeze and indexing by constants, at opsets 13 to 20, its decomposed
// forms and its constant-folding leftovers), with the ONNX operator specs'
// semantics:
//
//   LayerNormalization  over dims axis.. (never the batch), stash_type 1:
//                       (x - mean) / sqrt(var + epsilon) * Scale + B
//   Gelu                0.5 x (1 + erf(x / sqrt 2)), or approximate "tanh":
//                       0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))
//   Erf, Sqrt           elementwise
//   LeakyRelu           x >= 0 ? x : alpha x            (alpha 0.01)
//   Elu                 x >= 0 ? x : alpha (exp(x) - 1) (alpha 1)
//   Selu                gamma (x > 0 ? x : alpha (exp(x) - 1))
//   Softplus            log(1 + exp(x)), as x + log1p(exp(-x)) for x > 0
//   Mish                x tanh(softplus(x))
//   Pow                 numpy broadcasting (std::pow)
//   Greater, Less       numpy broadcasting; a boolean value (Where's condition)
//   Where               numpy broadcasting of three operands
//   ReduceMean, ReduceSum  over contiguous axes other than the batch (axes
//                       an attribute or, opset 13 / 18+, a constant input),
//                       keepdims; summed in index order
//   Concat              along any axis but the batch's
//   Gather              constant indices, along any axis but the batch's
//   Slice               constant starts / ends / axes / steps (inputs, or
//                       attributes before opset 10); the batch dim whole
//   Reshape             a shape known when built (0 copies a dim unless
//                       allowzero, one -1 inferred), the batch size symbolic
//   Squeeze, Unsqueeze  axes an input (opset 13+) or an attribute
//   Dropout             the identity; refused when training_mode is true and
//                       the ratio > 0 (a model exported in training mode)
//   Cast                to FLOAT of a float (the identity), between integer
//                       types, or integer constants to FLOAT
//   Shape               the input's shape (start, end), an integer value
//
// Integer values (Kind::kInts: add_int_constant, Shape, and any node of
// integer values only: Gather, Concat, Slice, Squeeze, Unsqueeze, Reshape,
// Cast, Identity, Add, Sub, Mul, Div) are evaluated when the graph is built,
// each element a factor times the batch size or not, so PyTorch's
// Shape -> Gather -> Unsqueeze -> Concat -> Reshape chains give the
// symbolic shape (batch, 12). Reshape, Squeeze, Unsqueeze, Dropout and Cast
// to FLOAT are aliases: no step runs.
#include "policy_graph_ops.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <utility>

#include "common/messages.h"

namespace evokit {

std::string detail::ints_text(const std::vector<std::int64_t>& v) {
  std::string out = "[";
  for (std::size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + std::to_string(v[i]);
  return out + "]";
}

namespace {

using detail::ints_text;

// "3", "batch", "4*batch": an element of an integer value.
std::string int_dim_text(std::int64_t factor, bool batch) {
  if (!batch) return std::to_string(factor);
  return factor == 1 ? std::string("batch") : std::to_string(factor) + "*batch";
}

std::int64_t normalise_axis(std::int64_t axis, std::size_t rank, const std::string& label,
                            const char* what = "axis") {
  const auto r = static_cast<std::int64_t>(rank);
  if (axis < -r || axis >= r) {
    throw std::invalid_argument(label + ": " + what + " " + std::to_string(axis) +
                                " is out of range [" + std::to_string(-r) + ", " +
                                std::to_string(r - 1) + "] for rank " + std::to_string(rank));
  }
  return axis < 0 ? axis + r : axis;
}

std::size_t count(const std::vector<std::size_t>& shape) {
  std::size_t n = 1;
  for (std::size_t d : shape) n *= d;
  return n;
}

// The float of a one-element float constant.
bool scalar_of(const std::vector<float>& data, float& out) {
  if (data.size() != 1) return false;
  out = data[0];
  return true;
}

}  // namespace

void PolicyGraph::add_int_constant(const std::string& name, const std::vector<std::size_t>& shape,
                                   std::vector<std::int64_t> data) {
  const std::string label = "constant '" + name + "'";
  std::size_t size = 1;
  for (std::size_t d : shape) {
    if (d != 0 && size > std::numeric_limits<std::size_t>::max() / d) {
      throw std::invalid_argument(label + ": size overflows");
    }
    size *= d;
  }
  if (data.size() != size) {
    throw std::invalid_argument(label + ": shape " + format_shape(shape) + " holds " +
                                std::to_string(size) + " values, got " +
                                std::to_string(data.size()));
  }
  Value v{name, Kind::kInts, {}};
  for (std::size_t d : shape) v.shape.push_back(Dim{d, false});
  for (std::int64_t x : data) v.ints.push_back(IntDim{x, false});
  define(std::move(v), label);
}

bool PolicyGraph::is_extended(Op op) noexcept {
  switch (op) {
    case Op::kLayerNorm: case Op::kGelu: case Op::kErf: case Op::kLeakyRelu: case Op::kElu:
    case Op::kSelu: case Op::kSoftplus: case Op::kMish: case Op::kSqrt: case Op::kPow:
    case Op::kReduceMean: case Op::kReduceSum: case Op::kGreater: case Op::kLess: case Op::kWhere:
    case Op::kConcat: case Op::kGather: case Op::kSlice: case Op::kReshape: case Op::kSqueeze:
    case Op::kUnsqueeze: case Op::kDropout: case Op::kCast: case Op::kShape:
      return true;
    default:
      return false;
  }
}

void PolicyGraph::refuse_non_float(const Node& node, std::size_t inputs) const {
  for (std::size_t i = 0; i < node.inputs.size() && i < inputs; ++i) {
    const int id = node.inputs[i];
    if (id < 0) continue;
    const Value& v = values_[static_cast<std::size_t>(id)];
    if (v.kind == Kind::kInts) {
      throw std::invalid_argument(node.label + ": input '" + v.name +
                                  "' is an integer tensor (shapes, axes and indices only); the "
                                  "native policy computes on FLOAT tensors only");
    }
    if (v.boolean) {
      throw std::invalid_argument(node.label + ": input '" + v.name +
                                  "' is a boolean tensor; only Where's condition may be one");
    }
  }
}

const std::vector<PolicyGraph::IntDim>& PolicyGraph::int_input(const Node& node, std::size_t i,
                                                               const char* what) const {
  const Value& v = values_[static_cast<std::size_t>(node.inputs[i])];
  if (v.kind != Kind::kInts) {
    throw std::invalid_argument(node.label + ": " + what + " '" + v.name +
                                "' must be an integer tensor known when the graph is built (a "
                                "constant or computed from shapes), got a " +
                                (v.kind == Kind::kConstant ? "float constant" : "float tensor") +
                                " of shape " + format_shape(v.shape));
  }
  return v.ints;
}

bool PolicyGraph::fold_int_arithmetic(const Node& node, Value& folded) const {
  if (node.op != Op::kAdd && node.op != Op::kSub && node.op != Op::kMul && node.op != Op::kDiv &&
      node.op != Op::kIdentity) {
    return false;
  }
  for (int id : node.inputs) {
    if (id < 0 || values_[static_cast<std::size_t>(id)].kind != Kind::kInts) return false;
  }
  const Value& a = values_[static_cast<std::size_t>(node.inputs[0])];
  folded.kind = Kind::kInts;
  if (node.op == Op::kIdentity) {
    folded.shape = a.shape;
    folded.ints = a.ints;
    return true;
  }
  const Value& b = values_[static_cast<std::size_t>(node.inputs[1])];
  const bool a_one = a.ints.size() == 1, b_one = b.ints.size() == 1;
  if (!(a.shape == b.shape || a_one || b_one)) {
    throw std::invalid_argument(node.label + ": integer operands of shapes " +
                                format_shape(a.shape) + " and " + format_shape(b.shape) +
                                " (only equal shapes or one element are supported)");
  }
  folded.shape = (a_one && !b_one) ? b.shape
                 : (a.shape.size() >= b.shape.size() ? a.shape : b.shape);
  const std::size_t n = std::max(a.ints.size(), b.ints.size());
  for (std::size_t i = 0; i < n; ++i) {
    const IntDim x = a.ints[a_one ? 0 : i], y = b.ints[b_one ? 0 : i];
    IntDim r;
    bool ok = true;
    switch (node.op) {
      case Op::kAdd:
      case Op::kSub:
        ok = x.batch == y.batch || (x.factor == 0 && !x.batch) || (y.factor == 0 && !y.batch);
        r.factor = node.op == Op::kAdd ? x.factor + y.factor : x.factor - y.factor;
        r.batch = x.batch || y.batch;
        if (x.batch && y.batch && r.factor == 0) r.batch = false;
        break;
      case Op::kMul:
        ok = !(x.batch && y.batch);
        r.factor = x.factor * y.factor;
        r.batch = (x.batch || y.batch) && r.factor != 0;
        break;
      default:  // kDiv: exact, or of constants (truncating, as ONNX)
        ok = y.factor != 0 && !(y.batch && !x.batch) &&
             (!x.batch || x.factor % y.factor == 0);
        if (ok) {
          r.factor = x.factor / y.factor;
          r.batch = x.batch && !y.batch;
        }
        break;
    }
    if (!ok) {
      throw std::invalid_argument(node.label + ": cannot compute " + int_dim_text(x.factor, x.batch) +
                                  (node.op == Op::kAdd   ? " + "
                                   : node.op == Op::kSub ? " - "
                                   : node.op == Op::kMul ? " * "
                                                         : " / ") +
                                  int_dim_text(y.factor, y.batch) + " for every batch size");
    }
    folded.ints.push_back(r);
  }
  return true;
}

void PolicyGraph::check_extended_attributes(const Node& node,
                                            const NodeAttributes& attributes) const {
  std::vector<std::string> ints, floats, lists, strings;
  switch (node.op) {
    case Op::kLayerNorm: ints = {"axis", "stash_type"}; floats = {"epsilon"}; break;
    case Op::kGelu: strings = {"approximate"}; break;
    case Op::kLeakyRelu:
    case Op::kElu: floats = {"alpha"}; break;
    case Op::kSelu: floats = {"alpha", "gamma"}; break;
    case Op::kReduceMean:
    case Op::kReduceSum: ints = {"keepdims", "noop_with_empty_axes"}; lists = {"axes"}; break;
    case Op::kConcat:
    case Op::kGather: ints = {"axis"}; break;
    case Op::kSlice: lists = {"starts", "ends", "axes"}; break;
    case Op::kReshape: ints = {"allowzero"}; break;
    case Op::kSqueeze:
    case Op::kUnsqueeze: lists = {"axes"}; break;
    case Op::kDropout: ints = {"seed"}; floats = {"ratio"}; break;
    case Op::kCast: ints = {"to", "saturate"}; break;
    case Op::kShape: ints = {"start", "end"}; break;
    // policy_graph_recurrent.cc
    case Op::kLSTM:
      ints = {"hidden_size", "layout", "input_forget"};
      strings = {"direction", "activations"};
      break;
    case Op::kGRU:
      ints = {"hidden_size", "layout", "linear_before_reset"};
      strings = {"direction", "activations"};
      break;
    case Op::kTranspose: lists = {"perm"}; break;
    default: break;
  }
  const auto check = [&](const auto& map, const std::vector<std::string>& known, const char* kind) {
    for (const auto& entry : map) {
      if (std::find(known.begin(), known.end(), entry.first) == known.end()) {
        throw std::invalid_argument(node.label + ": unknown " + kind + " attribute '" +
                                    entry.first + "'");
      }
    }
  };
  check(attributes.ints, ints, "integer");
  check(attributes.floats, floats, "float");
  check(attributes.int_lists, lists, "integer list");
  check(attributes.strings, strings, "string");
}

SymbolicShape PolicyGraph::infer_extended(Node& node, const NodeAttributes& attributes,
                                          Value& folded) {
  using IntDim = PolicyGraph::IntDim;
  const std::string& label = node.label;
  const auto int_attr = [&](const char* key, std::int64_t fallback) {
    return detail::attribute_or(attributes.ints, key, fallback);
  };
  const auto float_attr = [&](const char* key, float fallback) {
    return detail::attribute_or(attributes.floats, key, fallback);
  };
  const auto has_input = [&](std::size_t i) {
    return i < node.inputs.size() && node.inputs[i] >= 0;
  };
  const auto value = [&](std::size_t i) -> const Value& {
    return values_[static_cast<std::size_t>(node.inputs[i])];
  };
  const auto shape_of = [&](std::size_t i) -> const SymbolicShape& { return value(i).shape; };
  const auto quoted = [&](std::size_t i) { return "'" + value(i).name + "'"; };
  // The integer list of input i, or of attribute `key` (older opsets), every
  // element known (no batch size); `present` says whether either was given.
  const auto int_list = [&](std::size_t i, const char* key, const char* what,
                            bool* present) -> std::vector<std::int64_t> {
    std::vector<std::int64_t> out;
    const auto it = attributes.int_lists.find(key);
    if (has_input(i)) {
      for (const IntDim& d : int_input(node, i, what)) {
        if (d.batch) {
          throw std::invalid_argument(label + ": " + what + " " + quoted(i) +
                                      " depends on the batch size");
        }
        out.push_back(d.factor);
      }
      if (present) *present = true;
    } else if (it != attributes.int_lists.end()) {
      out = it->second;
      if (present) *present = true;
    } else if (present) {
      *present = false;
    }
    return out;
  };
  const auto ints_in = [&](std::size_t i) { return value(i).kind == Kind::kInts; };
  // The data input's dims that must not be the batch's.
  const auto require_not_batch = [&](const SymbolicShape& x, std::size_t axis, const char* what) {
    if (x[axis].batch) {
      throw std::invalid_argument(label + ": " + what + " axis " + std::to_string(axis) +
                                  " of input " + quoted(0) + " " + format_shape(x) +
                                  " is the batch dimension, which a policy never mixes");
    }
  };
  const auto fold_to = [&](SymbolicShape shape, std::vector<IntDim> ints) {
    folded.kind = Kind::kInts;
    folded.ints = std::move(ints);
    return shape;
  };
  // ONNX's Squeeze / Unsqueeze / Reshape of an integer value: same elements.
  const auto concrete_shape = [&](const SymbolicShape& shape) {
    for (const Dim& d : shape) {
      if (d.batch) {
        throw std::invalid_argument(label + ": an integer tensor cannot take the shape " +
                                    format_shape(shape));
      }
    }
    return shape;
  };

  switch (node.op) {
    case Op::kGelu: {
      refuse_non_float(node);
      const auto it = attributes.strings.find("approximate");
      if (it != attributes.strings.end() && it->second.size() != 1) {
        throw std::invalid_argument(label + ": attribute approximate must be one string, got " +
                                    std::to_string(it->second.size()));
      }
      const std::string form = it == attributes.strings.end() ? "none" : it->second[0];
      if (form != "none" && form != "tanh") {
        throw std::invalid_argument(label + ": attribute approximate must be 'none' or 'tanh', got '" +
                                    form + "'");
      }
      node.trans_a = form == "tanh";
      return shape_of(0);
    }
    case Op::kErf:
    case Op::kSoftplus:
    case Op::kMish:
    case Op::kSqrt:
      refuse_non_float(node);
      return shape_of(0);
    case Op::kLeakyRelu:
      refuse_non_float(node);
      node.alpha = float_attr("alpha", 0.01f);
      return shape_of(0);
    case Op::kElu:
      refuse_non_float(node);
      node.alpha = float_attr("alpha", 1.0f);
      return shape_of(0);
    case Op::kSelu:
      refuse_non_float(node);
      node.alpha = float_attr("alpha", 1.67326319217681884765625f);
      node.gamma = float_attr("gamma", 1.05070102214813232421875f);
      return shape_of(0);

    case Op::kPow:
    case Op::kGreater:
    case Op::kLess:
      refuse_non_float(node);
      folded.boolean = node.op != Op::kPow;
      return detail::broadcast_shapes(shape_of(0), shape_of(1), label);

    case Op::kWhere: {
      if (!value(0).boolean) {
        throw std::invalid_argument(label + ": the condition " + quoted(0) +
                                    " must be a boolean tensor computed by Greater or Less");
      }
      for (std::size_t i = 1; i < 3; ++i) {
        if (value(i).kind == Kind::kInts || value(i).boolean) {
          throw std::invalid_argument(label + ": input " + quoted(i) +
                                      " must be a float tensor; the native policy computes on "
                                      "FLOAT tensors only");
        }
      }
      return detail::broadcast_shapes(detail::broadcast_shapes(shape_of(0), shape_of(1), label),
                                      shape_of(2), label);
    }

    case Op::kLayerNorm: {
      refuse_non_float(node);
      const SymbolicShape& x = shape_of(0);
      if (x.empty()) throw std::invalid_argument(label + ": input " + quoted(0) + " is a scalar");
      const std::int64_t stash = int_attr("stash_type", 1);
      if (stash != 1) {
        throw std::invalid_argument(label + ": stash_type " + std::to_string(stash) +
                                    " is not supported (only 1: float)");
      }
      const auto axis = static_cast<std::size_t>(normalise_axis(int_attr("axis", -1), x.size(), label));
      for (std::size_t d = axis; d < x.size(); ++d) require_not_batch(x, d, "normalised");
      node.axis = static_cast<std::int64_t>(axis);
      node.alpha = float_attr("epsilon", 1e-5f);
      // Scale and B: the normalised shape (leading 1s aside).
      SymbolicShape normalised(x.begin() + static_cast<std::ptrdiff_t>(axis), x.end());
      const auto strip = [](SymbolicShape s) {
        while (!s.empty() && s.front().factor == 1 && !s.front().batch) s.erase(s.begin());
        return s;
      };
      for (std::size_t i = 1; i < node.inputs.size(); ++i) {
        if (!has_input(i)) continue;
        if (strip(shape_of(i)) != strip(normalised)) {
          throw std::invalid_argument(label + ": " + (i == 1 ? "Scale " : "B ") + quoted(i) +
                                      " has shape " + format_shape(shape_of(i)) +
                                      ", expected the normalised shape " + format_shape(normalised));
        }
      }
      return x;
    }

    case Op::kReduceMean:
    case Op::kReduceSum: {
      refuse_non_float(node, 1);
      const SymbolicShape& x = shape_of(0);
      bool given = false;
      std::vector<std::int64_t> axes = int_list(1, "axes", "axes", &given);
      if (axes.empty()) {
        if (int_attr("noop_with_empty_axes", 0) != 0) return x;  // the identity
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
      for (std::int64_t a : axes) require_not_batch(x, static_cast<std::size_t>(a), "reduced");
      node.index = {axes.front(), axes.back()};
      const bool keep = int_attr("keepdims", 1) != 0;
      SymbolicShape out;
      for (std::size_t d = 0; d < x.size(); ++d) {
        const bool reduced = static_cast<std::int64_t>(d) >= axes.front() &&
                             static_cast<std::int64_t>(d) <= axes.back();
        if (!reduced) out.push_back(x[d]);
        else if (keep) out.push_back(Dim{1, false});
      }
      return out;
    }

    case Op::kConcat: {
      bool all_ints = true, any_ints = false;
      for (std::size_t i = 0; i < node.inputs.size(); ++i) {
        all_ints = all_ints && ints_in(i);
        any_ints = any_ints || ints_in(i);
      }
      if (!attributes.ints.count("axis")) {
        throw std::invalid_argument(label + ": attribute axis is required");
      }
      if (all_ints) {
        std::vector<IntDim> out;
        for (std::size_t i = 0; i < node.inputs.size(); ++i) {
          if (shape_of(i).size() != 1) {
            throw std::invalid_argument(label + ": integer input " + quoted(i) + " has shape " +
                                        format_shape(shape_of(i)) + "; only 1-D integer tensors "
                                        "can be concatenated");
          }
          out.insert(out.end(), value(i).ints.begin(), value(i).ints.end());
        }
        const std::size_t n = out.size();
        return fold_to({Dim{n, false}}, std::move(out));
      }
      (void)any_ints;
      refuse_non_float(node);
      const SymbolicShape& first = shape_of(0);
      if (first.empty()) throw std::invalid_argument(label + ": input " + quoted(0) + " is a scalar");
      const auto axis = static_cast<std::size_t>(normalise_axis(int_attr("axis", 0), first.size(), label));
      SymbolicShape out = first;
      out[axis] = Dim{0, false};
      for (std::size_t i = 0; i < node.inputs.size(); ++i) {
        const SymbolicShape& s = shape_of(i);
        bool ok = s.size() == first.size();
        for (std::size_t d = 0; ok && d < s.size(); ++d) ok = d == axis || s[d] == first[d];
        if (!ok) {
          throw std::invalid_argument(label + ": input " + quoted(i) + " has shape " +
                                      format_shape(s) + ", expected " + format_shape(first) +
                                      " but for axis " + std::to_string(axis));
        }
        if (s[axis].batch) require_not_batch(s, axis, "concatenation");
        out[axis].factor += s[axis].factor;
      }
      node.axis = static_cast<std::int64_t>(axis);
      return out;
    }

    case Op::kGather: {
      const std::vector<IntDim>& idx = int_input(node, 1, "indices");
      const SymbolicShape& x = shape_of(0);
      const SymbolicShape& idx_shape = shape_of(1);
      if (x.empty()) throw std::invalid_argument(label + ": data " + quoted(0) + " is a scalar");
      const auto axis = static_cast<std::size_t>(normalise_axis(int_attr("axis", 0), x.size(), label));
      require_not_batch(x, axis, "gathered");
      const auto n = static_cast<std::int64_t>(x[axis].factor);
      std::vector<std::int64_t> norm;
      for (const IntDim& d : idx) {
        if (d.batch || d.factor < -n || d.factor >= n) {
          throw std::invalid_argument(label + ": index " + int_dim_text(d.factor, d.batch) +
                                      " is out of range [" + std::to_string(-n) + ", " +
                                      std::to_string(n - 1) + "] for axis " + std::to_string(axis) +
                                      " of " + quoted(0) + " " + format_shape(x));
        }
        norm.push_back(d.factor < 0 ? d.factor + n : d.factor);
      }
      SymbolicShape out(x.begin(), x.begin() + static_cast<std::ptrdiff_t>(axis));
      out.insert(out.end(), idx_shape.begin(), idx_shape.end());
      out.insert(out.end(), x.begin() + static_cast<std::ptrdiff_t>(axis) + 1, x.end());
      if (ints_in(0)) {
        if (x.size() != 1) {
          throw std::invalid_argument(label + ": integer data " + quoted(0) + " has shape " +
                                      format_shape(x) + "; only 1-D integer data can be gathered");
        }
        std::vector<IntDim> ints;
        for (std::int64_t i : norm) ints.push_back(value(0).ints[static_cast<std::size_t>(i)]);
        return fold_to(out, std::move(ints));
      }
      if (value(0).boolean) refuse_non_float(node, 1);
      node.axis = static_cast<std::int64_t>(axis);
      node.index = std::move(norm);
      return out;
    }

    case Op::kSlice: {
      const SymbolicShape& x = shape_of(0);
      bool has_starts = false, has_ends = false, has_axes = false, has_steps = false;
      const std::vector<std::int64_t> starts = int_list(1, "starts", "starts", &has_starts);
      const std::vector<std::int64_t> ends = int_list(2, "ends", "ends", &has_ends);
      std::vector<std::int64_t> axes = int_list(3, "axes", "axes", &has_axes);
      std::vector<std::int64_t> steps = int_list(4, "", "steps", &has_steps);
      if (!has_starts || !has_ends) {
        throw std::invalid_argument(label + ": starts and ends are required");
      }
      if (!has_axes) {
        for (std::size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<std::int64_t>(i));
      }
      if (!has_steps) steps.assign(starts.size(), 1);
      if (ends.size() != starts.size() || axes.size() != starts.size() ||
          steps.size() != starts.size()) {
        throw std::invalid_argument(label + ": starts " + ints_text(starts) + ", ends " +
                                    ints_text(ends) + ", axes " + ints_text(axes) + " and steps " +
                                    ints_text(steps) + " differ in length");
      }
      const std::size_t rank = x.size();
      std::vector<std::int64_t> first(rank, 0), step(rank, 1);
      SymbolicShape out = x;
      std::vector<bool> seen(rank, false);
      for (std::size_t i = 0; i < axes.size(); ++i) {
        const auto a = static_cast<std::size_t>(normalise_axis(axes[i], rank, label));
        if (seen[a]) throw std::invalid_argument(label + ": axis " + std::to_string(a) + " is sliced twice");
        seen[a] = true;
        if (steps[i] == 0) throw std::invalid_argument(label + ": steps must not be 0");
        if (x[a].batch) {  // only the whole batch
          if (starts[i] != 0 || steps[i] != 1 || ends[i] < std::numeric_limits<std::int32_t>::max()) {
            throw std::invalid_argument(label + ": slicing axis " + std::to_string(a) +
                                        " of input " + quoted(0) + " " + format_shape(x) +
                                        " (the batch dimension) from " + std::to_string(starts[i]) +
                                        " to " + std::to_string(ends[i]) +
                                        "; only the whole batch is supported");
          }
          continue;
        }
        const auto d = static_cast<std::int64_t>(x[a].factor);
        std::int64_t s = starts[i], e = ends[i];
        const std::int64_t st = steps[i];
        if (s < 0) s += d;
        if (e < 0) e += d;
        if (st > 0) {
          s = std::clamp<std::int64_t>(s, 0, d);
          e = std::clamp<std::int64_t>(e, 0, d);
        } else {
          s = std::clamp<std::int64_t>(s, 0, d - 1);
          e = std::clamp<std::int64_t>(e, -1, d - 1);
        }
        const std::int64_t n = st > 0 ? (e - s + st - 1) / st : (s - e + (-st) - 1) / (-st);
        if (n <= 0) {
          throw std::invalid_argument(label + ": slicing axis " + std::to_string(a) + " of " +
                                      quoted(0) + " " + format_shape(x) + " from " +
                                      std::to_string(starts[i]) + " to " + std::to_string(ends[i]) +
                                      " step " + std::to_string(st) + " leaves no elements");
        }
        first[a] = s;
        step[a] = st;
        out[a] = Dim{static_cast<std::size_t>(n), false};
      }
      if (ints_in(0)) {
        if (rank != 1) {
          throw std::invalid_argument(label + ": integer data " + quoted(0) + " has shape " +
                                      format_shape(x) + "; only 1-D integer data can be sliced");
        }
        std::vector<IntDim> ints;
        for (std::size_t i = 0; i < out[0].factor; ++i) {
          ints.push_back(value(0).ints[static_cast<std::size_t>(first[0] + static_cast<std::int64_t>(i) * step[0])]);
        }
        return fold_to(out, std::move(ints));
      }
      refuse_non_float(node, 1);
      node.index = first;
      node.index.insert(node.index.end(), step.begin(), step.end());
      return out;
    }

    case Op::kReshape: {
      const std::vector<IntDim>& target = int_input(node, 1, "shape");
      const SymbolicShape& x = shape_of(0);
      const bool allow_zero = int_attr("allowzero", 0) != 0;
      const Dim total = detail::shape_product(x, 0, x.size(), label);
      SymbolicShape out(target.size());
      int infer = -1;
      Dim known;  // the product of the dims given
      const auto fail = [&](const std::string& why) {
        std::string t = "[";
        for (std::size_t i = 0; i < target.size(); ++i) t += (i ? ", " : "") + int_dim_text(target[i].factor, target[i].batch);
        return std::invalid_argument(label + ": cannot reshape " + quoted(0) + " " +
                                     format_shape(x) + " to " + t + "]: " + why);
      };
      for (std::size_t i = 0; i < target.size(); ++i) {
        const IntDim& d = target[i];
        if (!d.batch && d.factor == -1) {
          if (infer >= 0) throw fail("more than one -1");
          infer = static_cast<int>(i);
          continue;
        }
        if (!d.batch && d.factor == 0 && !allow_zero) {
          if (i >= x.size()) throw fail("0 copies dimension " + std::to_string(i) + ", which the input lacks");
          out[i] = x[i];
        } else if (d.factor <= 0) {
          throw fail("dimension " + std::to_string(i) + " is " + int_dim_text(d.factor, d.batch));
        } else {
          out[i] = Dim{static_cast<std::size_t>(d.factor), d.batch};
        }
        if (out[i].batch && known.batch) throw fail("the batch size appears twice");
        known.batch = known.batch || out[i].batch;
        known.factor *= out[i].factor;
      }
      if (infer >= 0) {
        if (known.batch && !total.batch) throw fail("the batch size appears in the shape only");
        if (known.factor == 0 || total.factor % known.factor != 0) {
          throw fail(std::to_string(total.factor) + " is not a multiple of " + std::to_string(known.factor));
        }
        out[static_cast<std::size_t>(infer)] = Dim{total.factor / known.factor, total.batch && !known.batch};
      } else if (!(known == total)) {
        throw fail("it holds " + detail::format_dim_of(known) + " elements, the input " +
                   detail::format_dim_of(total));
      }
      if (ints_in(0)) return fold_to(concrete_shape(out), value(0).ints);
      refuse_non_float(node, 1);
      return out;
    }

    case Op::kSqueeze:
    case Op::kUnsqueeze: {
      const SymbolicShape& x = shape_of(0);
      bool given = false;
      std::vector<std::int64_t> axes = int_list(1, "axes", "axes", &given);
      SymbolicShape out;
      if (node.op == Op::kSqueeze) {
        std::vector<bool> drop(x.size(), false);
        if (!given) {
          for (std::size_t d = 0; d < x.size(); ++d) drop[d] = !x[d].batch && x[d].factor == 1;
        }
        for (std::int64_t a : axes) {
          const auto d = static_cast<std::size_t>(normalise_axis(a, x.size(), label));
          if (x[d].batch || x[d].factor != 1) {
            throw std::invalid_argument(label + ": cannot squeeze axis " + std::to_string(d) +
                                        " of " + quoted(0) + " " + format_shape(x) +
                                        ": its size is " + detail::format_dim_of(x[d]) + ", not 1");
          }
          drop[d] = true;
        }
        for (std::size_t d = 0; d < x.size(); ++d) {
          if (!drop[d]) out.push_back(x[d]);
        }
      } else {
        if (!given) throw std::invalid_argument(label + ": axes are required");
        const std::size_t rank = x.size() + axes.size();
        std::vector<bool> insert(rank, false);
        for (std::int64_t a : axes) {
          const auto d = static_cast<std::size_t>(normalise_axis(a, rank, label));
          if (insert[d]) throw std::invalid_argument(label + ": axis " + std::to_string(d) + " is given twice");
          insert[d] = true;
        }
        std::size_t next = 0;
        for (std::size_t d = 0; d < rank; ++d) out.push_back(insert[d] ? Dim{1, false} : x[next++]);
      }
      if (ints_in(0)) return fold_to(out, value(0).ints);
      refuse_non_float(node, 1);
      return out;
    }

    case Op::kDropout: {
      if (value(0).kind == Kind::kInts || value(0).boolean) refuse_non_float(node, 1);
      // training_mode: an input (opset 12+), false when omitted (always
      // before opset 12); ratio: an input (opset 12+) or an attribute.
      bool training = false;
      if (has_input(2)) {
        const Value& t = value(2);
        if (t.kind != Kind::kInts || t.ints.size() != 1 || t.ints[0].batch) {
          throw std::invalid_argument(label + ": training_mode " + quoted(2) +
                                      " must be a one-element boolean constant");
        }
        training = t.ints[0].factor != 0;
      }
      if (!training) return shape_of(0);
      float ratio = float_attr("ratio", 0.5f);
      std::string ratio_text;
      if (has_input(1)) {
        const Value& r = value(1);
        if (r.kind != Kind::kConstant || !scalar_of(constants_[r.constant], ratio)) {
          ratio_text = quoted(1);  // a parameter: its value is not fixed
        }
      }
      if (ratio_text.empty()) {
        if (ratio <= 0.0f) return shape_of(0);  // nothing is dropped
        ratio_text = detail::format_number(ratio);
      }
      throw std::invalid_argument(
          label + ": dropout is active (training_mode true, ratio " + ratio_text +
          "): the model was exported in training mode and would drop random activations at "
          "every call; export it after model.eval()");
    }

    case Op::kCast: {
      if (!attributes.ints.count("to")) throw std::invalid_argument(label + ": attribute to is required");
      const std::int64_t to = int_attr("to", 0);
      constexpr std::int64_t kFloat = 1, kInt32 = 6, kInt64 = 7, kBool = 9;
      if (to != kFloat && to != kInt32 && to != kInt64 && to != kBool) {
        throw std::invalid_argument(label + ": cast to ONNX type " + std::to_string(to) +
                                    " is not supported (only FLOAT, INT32, INT64 and BOOL)");
      }
      if (ints_in(0)) {
        const std::vector<IntDim>& in = value(0).ints;
        if (to != kFloat) {
          std::vector<IntDim> out = in;
          if (to == kBool) {
            for (IntDim& d : out) d = IntDim{d.factor != 0 || d.batch ? 1 : 0, false};
          }
          return fold_to(shape_of(0), std::move(out));
        }
        std::vector<float> data;
        for (const IntDim& d : in) {
          if (d.batch) {
            throw std::invalid_argument(label + ": casting " + quoted(0) +
                                        " to FLOAT: it depends on the batch size");
          }
          data.push_back(static_cast<float>(d.factor));
        }
        folded.kind = Kind::kConstant;
        folded.constant = constants_.size();
        constants_.push_back(std::move(data));
        return shape_of(0);
      }
      if (to != kFloat) {
        throw std::invalid_argument(label + ": casts the float tensor " + quoted(0) +
                                    " to an integer type; the native policy computes on FLOAT "
                                    "tensors only");
      }
      refuse_non_float(node, 1);
      return shape_of(0);
    }

    case Op::kShape: {
      const SymbolicShape& x = shape_of(0);
      const auto rank = static_cast<std::int64_t>(x.size());
      const auto clamp = [&](std::int64_t v) {
        if (v < 0) v += rank;
        return std::clamp<std::int64_t>(v, 0, rank);
      };
      const std::int64_t start = clamp(int_attr("start", 0));
      const std::int64_t end = clamp(int_attr("end", rank));
      std::vector<IntDim> dims;
      for (std::int64_t d = start; d < end; ++d) {
        const Dim& dim = x[static_cast<std::size_t>(d)];
        dims.push_back(IntDim{static_cast<std::int64_t>(dim.factor), dim.batch});
      }
      const std::size_t n = dims.size();
      return fold_to({Dim{n, false}}, std::move(dims));
    }

    default:
      break;
  }
  throw std::logic_error(label + ": unhandled op");  // unreachable
}

// ---- planning and running -------------------------------------------------

bool PolicyGraph::Ops::unary_of(Op op, bool tanh_form, detail::Unary& out) noexcept {
  using detail::Unary;
  switch (op) {
    case Op::kGelu: out = tanh_form ? Unary::kGeluTanh : Unary::kGelu; return true;
    case Op::kErf: out = Unary::kErf; return true;
    case Op::kLeakyRelu: out = Unary::kLeakyRelu; return true;
    case Op::kElu: out = Unary::kElu; return true;
    case Op::kSelu: out = Unary::kSelu; return true;
    case Op::kSoftplus: out = Unary::kSoftplus; return true;
    case Op::kMish: out = Unary::kMish; return true;
    case Op::kSqrt: out = Unary::kSqrt; return true;
    default: return false;
  }
}

bool PolicyGraph::Ops::is_alias(Op op) noexcept {
  return op == Op::kReshape || op == Op::kSqueeze || op == Op::kUnsqueeze ||
         op == Op::kDropout || op == Op::kCast;
}

detail::View PolicyGraph::Ops::view(const Plan::Operand& op, const Context& ctx) noexcept {
  using Source = Plan::Source;
  switch (op.source) {
    case Source::kObs: return detail::View{ctx.obs + op.offset, nullptr, 0.0f};
    case Source::kParam:
      return detail::View{ctx.params.base + op.offset,
                          ctx.params.noise != nullptr ? ctx.params.noise + op.offset : nullptr,
                          ctx.params.scale};
    case Source::kConstant: return detail::View{op.constant, nullptr, 0.0f};
    case Source::kState: return detail::View{ctx.state + op.offset, nullptr, 0.0f};
    case Source::kWork: break;
  }
  return detail::View{ctx.workspace + op.offset, nullptr, 0.0f};
}

namespace {

// Row-major strides of `shape` aligned right to `out`, 0 on broadcast dims.
std::vector<std::size_t> strides_for(const std::vector<std::size_t>& shape,
                                     const std::vector<std::size_t>& out) {
  std::vector<std::size_t> strides(out.size(), 0);
  std::size_t stride = 1;
  for (std::size_t k = 0; k < shape.size(); ++k) {
    const std::size_t i = shape.size() - 1 - k, o = out.size() - 1 - k;
    strides[o] = (shape[i] == 1 && out[o] != 1) ? 0 : stride;
    stride *= shape[i];
  }
  return strides;
}

}  // namespace

void PolicyGraph::Ops::plan(const Node& node, Plan::Step& step,
                            const std::vector<std::vector<std::size_t>>& shapes,
                            const std::vector<Plan::Operand>& where,
                            const std::function<Plan::Operand(int)>& plain) {
  const auto in_shape = [&](std::size_t i) -> const std::vector<std::size_t>& {
    return shapes[static_cast<std::size_t>(node.inputs[i])];
  };
  const auto at = [&](std::size_t i) { return where[static_cast<std::size_t>(node.inputs[i])]; };
  const std::vector<std::size_t>& out = shapes[static_cast<std::size_t>(node.output)];
  detail::Unary unary;
  if (unary_of(node.op, node.trans_a, unary)) {
    step.in[0] = plain(node.inputs[0]);
    step.lo = node.alpha;
    step.hi = node.gamma;
    step.trans_a = node.trans_a;
    return;
  }
  switch (node.op) {
    case Op::kWhere: {
      if (out.size() > 16) {
        throw std::invalid_argument(node.label + ": broadcasting over more than 16 dimensions is not supported");
      }
      for (std::size_t i = 0; i < 3; ++i) step.in[i] = at(i);
      step.out_shape = out;
      step.stride_a = strides_for(in_shape(0), out);
      step.stride_b = strides_for(in_shape(1), out);
      step.stride_c = strides_for(in_shape(2), out);
      break;
    }
    case Op::kLayerNorm: {
      const std::vector<std::size_t>& x = in_shape(0);
      const auto axis = static_cast<std::size_t>(node.axis);
      step.in[0] = plain(node.inputs[0]);
      step.in[1] = at(1);
      step.has_c = node.inputs.size() == 3 && node.inputs[2] >= 0;
      if (step.has_c) step.in[2] = at(2);
      step.n = count(std::vector<std::size_t>(x.begin() + static_cast<std::ptrdiff_t>(axis), x.end()));
      step.m = step.n == 0 ? 0 : count(x) / step.n;
      step.alpha = node.alpha;
      break;
    }
    case Op::kReduceMean:
    case Op::kReduceSum: {
      const std::vector<std::size_t>& x = in_shape(0);
      const auto a0 = static_cast<std::size_t>(node.index.at(0));
      const auto a1 = static_cast<std::size_t>(node.index.at(1));
      step.in[0] = plain(node.inputs[0]);
      step.m = count(std::vector<std::size_t>(x.begin(), x.begin() + static_cast<std::ptrdiff_t>(a0)));
      step.k = count(std::vector<std::size_t>(x.begin() + static_cast<std::ptrdiff_t>(a0),
                                              x.begin() + static_cast<std::ptrdiff_t>(a1) + 1));
      step.n = count(std::vector<std::size_t>(x.begin() + static_cast<std::ptrdiff_t>(a1) + 1, x.end()));
      break;
    }
    case Op::kConcat: {
      const auto axis = static_cast<std::size_t>(node.axis);
      step.m = count(std::vector<std::size_t>(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(axis)));
      for (std::size_t i = 0; i < node.inputs.size(); ++i) {
        const std::vector<std::size_t>& s = in_shape(i);
        step.more.push_back(at(i));
        step.stride_b.push_back(count(std::vector<std::size_t>(s.begin() + static_cast<std::ptrdiff_t>(axis), s.end())));
      }
      break;
    }
    case Op::kGather: {
      const std::vector<std::size_t>& x = in_shape(0);
      const auto axis = static_cast<std::size_t>(node.axis);
      step.in[0] = at(0);
      step.m = count(std::vector<std::size_t>(x.begin(), x.begin() + static_cast<std::ptrdiff_t>(axis)));
      step.k = x[axis];
      step.n = count(std::vector<std::size_t>(x.begin() + static_cast<std::ptrdiff_t>(axis) + 1, x.end()));
      step.index = node.index;
      break;
    }
    case Op::kSlice: {
      const std::vector<std::size_t>& x = in_shape(0);
      if (out.size() > 16) {
        throw std::invalid_argument(node.label + ": slicing more than 16 dimensions is not supported");
      }
      step.in[0] = at(0);
      step.out_shape = out;
      step.stride_a = strides_for(x, x);
      step.index = node.index;  // starts, then steps
      break;
    }
    default:
      break;
  }
}

void PolicyGraph::Ops::run(const Plan::Step& step, const Context& ctx, float* y) noexcept {
  const std::size_t size = step.size;
  detail::Unary unary;
  if (unary_of(step.op, step.trans_a, unary)) {
    detail::unary_block(unary, step.lo, step.hi, view(step.in[0], ctx).base, y, size);
    return;
  }
  switch (step.op) {
    case Op::kWhere: {
      const detail::View c = view(step.in[0], ctx), a = view(step.in[1], ctx), b = view(step.in[2], ctx);
      const std::size_t rank = step.out_shape.size();
      std::size_t index[16] = {};
      std::size_t ic = 0, ia = 0, ib = 0;
      for (std::size_t i = 0; i < size; ++i) {
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
      break;
    }
    case Op::kLayerNorm: {
      const detail::View scale = view(step.in[1], ctx);
      const detail::View bias = step.has_c ? view(step.in[2], ctx) : detail::View{};
      detail::layer_norm(view(step.in[0], ctx).base, step.m, step.n, step.alpha, scale,
                         step.has_c ? &bias : nullptr, y);
      break;
    }
    case Op::kReduceMean:
    case Op::kReduceSum:
      detail::reduce(view(step.in[0], ctx).base, step.m, step.k, step.n, step.op == Op::kReduceMean, y);
      break;
    case Op::kConcat: {
      // Row r of the output: each input's row r in turn.
      float* dst = y;
      for (std::size_t r = 0; r < step.m; ++r) {
        for (std::size_t i = 0; i < step.more.size(); ++i) {
          const detail::View v = view(step.more[i], ctx);
          const std::size_t chunk = step.stride_b[i];
          const std::size_t from = r * chunk;
          if (v.noise == nullptr) {
            std::copy(v.base + from, v.base + from + chunk, dst);
          } else {
            for (std::size_t j = 0; j < chunk; ++j) dst[j] = v[from + j];
          }
          dst += chunk;
        }
      }
      break;
    }
    case Op::kGather: {
      const detail::View v = view(step.in[0], ctx);
      float* dst = y;
      for (std::size_t o = 0; o < step.m; ++o) {
        for (const std::int64_t idx : step.index) {
          const std::size_t from = (o * step.k + static_cast<std::size_t>(idx)) * step.n;
          for (std::size_t j = 0; j < step.n; ++j) dst[j] = v[from + j];
          dst += step.n;
        }
      }
      break;
    }
    case Op::kSlice: {
      const detail::View v = view(step.in[0], ctx);
      const std::size_t rank = step.out_shape.size();
      const std::int64_t* first = step.index.data();
      const std::int64_t* stride = step.index.data() + rank;
      std::size_t index[16] = {};
      std::int64_t from = 0;
      for (std::size_t k = 0; k < rank; ++k) from += first[k] * static_cast<std::int64_t>(step.stride_a[k]);
      for (std::size_t i = 0; i < size; ++i) {
        y[i] = v[static_cast<std::size_t>(from)];
        for (std::size_t k = rank; k-- > 0;) {
          const auto s = stride[k] * static_cast<std::int64_t>(step.stride_a[k]);
          if (++index[k] < step.out_shape[k]) {
            from += s;
            break;
          }
          from -= s * static_cast<std::int64_t>(step.out_shape[k] - 1);
          index[k] = 0;
        }
      }
      break;
    }
    default:
      break;
  }
}

}  // namespace evokit
