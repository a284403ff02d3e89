// PolicyGraph: building, with symbolic shape checks (policy_graph_plan.cc
// compiles a built graph for a batch size, policy_graph.cc runs it).
//
// Op semantics follow the ONNX operator specs (opset 13+):
//   Gemm     Y = alpha * A' B' + beta * C, A' = transA ? A^T : A, B' likewise,
//            C unidirectionally broadcast to (M, N)
//   MatMul   numpy matmul with a 2-D right operand: (..., m, k) x (k, n)
//   Add, Sub, Mul, Div   numpy broadcasting
//   Clip     min(max(x, min), max), min and max one-element constants (or omitted)
//   Softmax  over the last axis, exp(x - max) / sum
//   Flatten  (d0..d_{axis-1}, d_axis..) -> (prod, prod)
#include "evokit/policy_graph.h"

#include "policy_graph_ops.h"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <utility>

namespace evokit {

namespace {

struct OpInfo {
  const char* name;
  int min_inputs;
  int max_inputs;
};

// In the order of PolicyGraph::Op.
constexpr OpInfo kOps[] = {
    {"Gemm", 2, 3},    {"MatMul", 2, 2},  {"Add", 2, 2},      {"Relu", 1, 1},    {"Tanh", 1, 1},
    {"Sigmoid", 1, 1}, {"Softmax", 1, 1}, {"Identity", 1, 1}, {"Flatten", 1, 1},
    {"Sub", 2, 2},     {"Mul", 2, 2},     {"Div", 2, 2},      {"Clip", 1, 3},
    // policy_graph_ops.cc
    {"LayerNormalization", 2, 3},
    {"Gelu", 1, 1},
    {"Erf", 1, 1},
    {"LeakyRelu", 1, 1},
    {"Elu", 1, 1},
    {"Selu", 1, 1},
    {"Softplus", 1, 1},
    {"Mish", 1, 1},
    {"Sqrt", 1, 1},
    {"Pow", 2, 2},
    {"ReduceMean", 1, 2},
    {"Greater", 2, 2},
    {"Less", 2, 2},
    {"Where", 3, 3},
    {"Concat", 1, 1024},
    {"Gather", 2, 2},
    {"Slice", 1, 5},
    {"Reshape", 2, 2},
    {"Squeeze", 1, 2},
    {"Unsqueeze", 1, 2},
    {"Dropout", 1, 3},
    {"Cast", 1, 1},
    {"Shape", 1, 1},
    {"ReduceSum", 1, 2},
    // policy_graph_recurrent.cc
    {"LSTM", 3, 8},
    {"GRU", 3, 6},
    {"Transpose", 1, 1},
};

// LSTM gives Y, Y_h, Y_c; GRU Y, Y_h; every other op one output.
std::size_t max_outputs(const std::string& op_type) {
  return op_type == "LSTM" ? 3 : op_type == "GRU" ? 2 : 1;
}

std::size_t checked_mul(std::size_t a, std::size_t b, const std::string& what) {
  if (a != 0 && b > std::numeric_limits<std::size_t>::max() / a) {
    throw std::invalid_argument(what + ": size overflows");
  }
  return a * b;
}

std::size_t product(const std::vector<std::size_t>& shape, const std::string& what) {
  std::size_t n = 1;
  for (std::size_t d : shape) n = checked_mul(n, d, what);
  return n;
}

std::string format_dim(const Dim& d) {
  if (!d.batch) return std::to_string(d.factor);
  return d.factor == 1 ? std::string("batch") : std::to_string(d.factor) + "*batch";
}

bool is_one(const Dim& d) { return !d.batch && d.factor == 1; }

SymbolicShape concrete(const std::vector<std::size_t>& shape) {
  SymbolicShape out;
  for (std::size_t d : shape) out.push_back(Dim{d, false});
  return out;
}

// The product of dims [begin, end); throws if the batch size would appear twice.
Dim dim_product(const SymbolicShape& shape, std::size_t begin, std::size_t end,
                const std::string& label) {
  Dim out;
  for (std::size_t i = begin; i < end; ++i) {
    if (shape[i].batch && out.batch) {
      throw std::invalid_argument(label + ": flattening " + format_shape(shape) +
                                  " would multiply the batch size by itself");
    }
    out.batch = out.batch || shape[i].batch;
    out.factor = checked_mul(out.factor, shape[i].factor, label);
  }
  return out;
}

// numpy broadcasting of two symbolic shapes.
SymbolicShape broadcast(const SymbolicShape& a, const SymbolicShape& b, const std::string& label) {
  const std::size_t rank = std::max(a.size(), b.size());
  SymbolicShape out(rank);
  for (std::size_t i = 0; i < rank; ++i) {
    const Dim da = i < rank - a.size() ? Dim{} : a[i - (rank - a.size())];
    const Dim db = i < rank - b.size() ? Dim{} : b[i - (rank - b.size())];
    if (da == db || is_one(db)) {
      out[i] = da;
    } else if (is_one(da)) {
      out[i] = db;
    } else {
      throw std::invalid_argument(label + ": shapes " + format_shape(a) + " and " +
                                  format_shape(b) + " cannot be broadcast together (dimension " +
                                  std::to_string(i) + ": " + format_dim(da) + " vs " +
                                  format_dim(db) + ")");
    }
  }
  return out;
}

}  // namespace

namespace detail {
// For policy_graph_ops.cc (declared in policy_graph_ops.h).
SymbolicShape broadcast_shapes(const SymbolicShape& a, const SymbolicShape& b,
                               const std::string& label) {
  return broadcast(a, b, label);
}
Dim shape_product(const SymbolicShape& shape, std::size_t begin, std::size_t end,
                  const std::string& label) {
  return dim_product(shape, begin, end, label);
}
std::string format_dim_of(const Dim& d) { return format_dim(d); }
}  // namespace detail

std::string format_shape(const SymbolicShape& shape) {
  std::string out = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) out += ", ";
    out += format_dim(shape[i]);
  }
  if (shape.size() == 1) out += ",";
  return out + ")";
}

std::string format_shape(const std::vector<std::size_t>& shape) {
  return format_shape(concrete(shape));
}

const std::vector<std::string>& PolicyGraph::supported_ops() {
  static const std::vector<std::string> ops = [] {
    std::vector<std::string> names;
    for (const OpInfo& op : kOps) names.emplace_back(op.name);
    return names;
  }();
  return ops;
}

int PolicyGraph::find_value(const std::string& name) const {
  const auto it = value_ids_.find(name);
  return it == value_ids_.end() ? -1 : it->second;
}

int PolicyGraph::define(Value value, const std::string& label) {
  if (value.name.empty()) throw std::invalid_argument(label + ": a value name must not be empty");
  if (value_ids_.count(value.name) != 0) {
    throw std::invalid_argument(label + ": value '" + value.name + "' is already defined");
  }
  const int id = static_cast<int>(values_.size());
  value_ids_.emplace(value.name, id);
  values_.push_back(std::move(value));
  return id;
}

void PolicyGraph::add_input(const std::string& name,
                            const std::vector<std::size_t>& feature_shape) {
  const std::string label = "input '" + name + "'";
  if (!input_name_.empty()) {
    throw std::invalid_argument(label + ": the graph already has input '" + input_name_ +
                                "'; a policy takes exactly one observation input");
  }
  for (std::size_t i = 0; i < feature_shape.size(); ++i) {
    if (feature_shape[i] == 0) {
      throw std::invalid_argument(label + ": feature dimension " + std::to_string(i) +
                                  " must be >= 1, got 0");
    }
  }
  Value v{name, Kind::kInput, {Dim{1, true}}};
  for (std::size_t d : feature_shape) v.shape.push_back(Dim{d, false});
  const std::size_t size = product(feature_shape, label);
  define(std::move(v), label);
  input_name_ = name;
  feature_shape_ = feature_shape;
  obs_size_ = size;
}

void PolicyGraph::add_param(const std::string& name, std::size_t offset,
                            const std::vector<std::size_t>& shape) {
  const std::string label = "parameter '" + name + "'";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 0) {
      throw std::invalid_argument(label + ": dimension " + std::to_string(i) +
                                  " must be >= 1, got 0");
    }
  }
  const std::size_t size = product(shape, label);
  if (offset > std::numeric_limits<std::size_t>::max() - size) {
    throw std::invalid_argument(label + ": offset + size overflows");
  }
  Value v{name, Kind::kParam, concrete(shape)};
  v.offset = offset;
  define(std::move(v), label);
  num_params_ = std::max(num_params_, offset + size);
}

void PolicyGraph::add_constant(const std::string& name, const std::vector<std::size_t>& shape,
                               std::vector<float> data) {
  const std::string label = "constant '" + name + "'";
  const std::size_t size = product(shape, label);
  if (data.size() != size) {
    throw std::invalid_argument(label + ": shape " + format_shape(shape) + " holds " +
                                std::to_string(size) + " values, got " +
                                std::to_string(data.size()));
  }
  Value v{name, Kind::kConstant, concrete(shape)};
  v.constant = constants_.size();
  define(std::move(v), label);
  constants_.push_back(std::move(data));
}

void PolicyGraph::add_output(const std::string& name) {
  const int id = find_value(name);
  if (id < 0) {
    throw std::invalid_argument("output '" + name + "' is not a value of the graph");
  }
  const Value& v = values_[static_cast<std::size_t>(id)];
  if (v.kind == Kind::kInts || v.boolean) {
    throw std::invalid_argument("output '" + name + "' is " +
                                (v.boolean ? "a boolean" : "an integer") +
                                " tensor; a policy's output must be a float tensor");
  }
  outputs_.push_back(name);
}

void PolicyGraph::add_node(const std::string& op_type, const std::vector<std::string>& inputs,
                           const std::vector<std::string>& outputs,
                           const NodeAttributes& attributes, const std::string& name) {
  std::string label = name.empty() ? "node #" + std::to_string(nodes_.size())
                                   : "node '" + name + "'";
  label += " (" + op_type + ")";

  std::size_t op_index = 0;
  while (op_index < std::size(kOps) && op_type != kOps[op_index].name) ++op_index;
  if (op_index == std::size(kOps)) {
    std::string supported;
    for (const std::string& op : supported_ops()) supported += (supported.empty() ? "" : ", ") + op;
    throw std::invalid_argument(label + ": unsupported op " + op_type + " (supported: " +
                                supported + ")");
  }
  const OpInfo& info = kOps[op_index];
  const int n_in = static_cast<int>(inputs.size());
  if (n_in < info.min_inputs || n_in > info.max_inputs) {
    const std::string expected =
        info.min_inputs == info.max_inputs
            ? std::to_string(info.min_inputs)
            : std::to_string(info.min_inputs) + " to " + std::to_string(info.max_inputs);
    throw std::invalid_argument(label + ": expected " + expected + " inputs, got " +
                                std::to_string(n_in));
  }
  if (outputs.empty() || outputs.size() > max_outputs(op_type)) {
    throw std::invalid_argument(label + ": expected " +
                                (max_outputs(op_type) == 1
                                     ? std::string("1 output")
                                     : "1 to " + std::to_string(max_outputs(op_type)) + " outputs") +
                                ", got " + std::to_string(outputs.size()));
  }

  Node node;
  node.label = label;
  node.op = static_cast<Op>(op_index);
  for (int i = 0; i < n_in; ++i) {
    const std::string& in = inputs[static_cast<std::size_t>(i)];
    if (in.empty()) {
      if (i < info.min_inputs) {
        throw std::invalid_argument(label + ": input " + std::to_string(i) +
                                    " is required but was omitted");
      }
      node.inputs.push_back(-1);
      continue;
    }
    const int id = find_value(in);
    if (id < 0) {
      throw std::invalid_argument(label + ": input '" + in +
                                  "' is not defined (not the input, a parameter, a constant or "
                                  "the output of an earlier node)");
    }
    node.inputs.push_back(id);
  }

  // A node of integer values only, or one whose result is known now, is
  // evaluated here: its value is an integer value (kInts) or a constant. An
  // omitted first output (an LSTM's Y) still gets a value, by a name no ONNX
  // value can have.
  std::vector<SymbolicShape> more;  // the shapes of outputs 1, 2, ...
  Value v{outputs[0].empty() ? "\x01" + label + ":0" : outputs[0], Kind::kNode, {}};
  if (is_extended(node.op) || is_recurrent(node.op)) {
    check_extended_attributes(node, attributes);
  }
  if (is_extended(node.op)) {
    v.shape = infer_extended(node, attributes, v);
  } else if (is_recurrent(node.op)) {
    v.shape = infer_recurrent_shape(node, attributes, more);
  } else if (!fold_int_arithmetic(node, v)) {
    refuse_non_float(node);
    v.shape = infer_shape(node, attributes);
  }
  v.node = nodes_.size();
  node.output = define(std::move(v), label);
  for (std::size_t i = 1; i < outputs.size(); ++i) {
    if (outputs[i].empty()) {
      node.more_outputs.push_back(-1);
      continue;
    }
    Value extra{outputs[i], Kind::kNode, more.at(i - 1)};
    extra.node = nodes_.size();
    node.more_outputs.push_back(define(std::move(extra), label));
  }
  nodes_.push_back(std::move(node));
}

SymbolicShape PolicyGraph::infer_shape(Node& node, const NodeAttributes& attributes) const {
  const std::string& label = node.label;
  if (!attributes.int_lists.empty() || !attributes.strings.empty()) {
    const std::string key = !attributes.int_lists.empty() ? attributes.int_lists.begin()->first
                                                          : attributes.strings.begin()->first;
    throw std::invalid_argument(label + ": unknown " +
                                (!attributes.int_lists.empty() ? "integer list" : "string") +
                                " attribute '" + key + "'");
  }
  // Refuse attributes the op does not know rather than ignore them.
  std::vector<std::string> known_ints, known_floats;
  switch (node.op) {
    case Op::kGemm:
      known_ints = {"transA", "transB"};
      known_floats = {"alpha", "beta"};
      break;
    case Op::kSoftmax:
    case Op::kFlatten:
      known_ints = {"axis"};
      break;
    default:
      break;
  }
  for (const auto& [key, value] : attributes.ints) {
    (void)value;
    if (std::find(known_ints.begin(), known_ints.end(), key) == known_ints.end()) {
      throw std::invalid_argument(label + ": unknown integer attribute '" + key + "'");
    }
  }
  for (const auto& [key, value] : attributes.floats) {
    (void)value;
    if (std::find(known_floats.begin(), known_floats.end(), key) == known_floats.end()) {
      throw std::invalid_argument(label + ": unknown float attribute '" + key + "'");
    }
  }
  if (!attributes.int_lists.empty()) {
    throw std::invalid_argument(label + ": unknown integer list attribute '" +
                                attributes.int_lists.begin()->first + "'");
  }
  if (!attributes.strings.empty()) {
    throw std::invalid_argument(label + ": unknown string attribute '" +
                                attributes.strings.begin()->first + "'");
  }
  const auto int_attr = [&](const char* key, std::int64_t fallback) {
    return detail::attribute_or(attributes.ints, key, fallback);
  };
  const auto float_attr = [&](const char* key, float fallback) {
    return detail::attribute_or(attributes.floats, key, fallback);
  };
  const auto shape_of = [&](std::size_t i) -> const SymbolicShape& {
    return values_[static_cast<std::size_t>(node.inputs[i])].shape;
  };
  const auto input_name = [&](std::size_t i) {
    return "'" + values_[static_cast<std::size_t>(node.inputs[i])].name + "'";
  };

  switch (node.op) {
    case Op::kRelu:
    case Op::kTanh:
    case Op::kSigmoid:
    case Op::kIdentity:
      return shape_of(0);

    case Op::kAdd:
    case Op::kSub:
    case Op::kMul:
    case Op::kDiv:
      return broadcast(shape_of(0), shape_of(1), label);

    case Op::kClip: {
      // min and max (opset 11+ inputs) must be known when the graph is built.
      node.lo = -std::numeric_limits<float>::infinity();
      node.hi = std::numeric_limits<float>::infinity();
      for (std::size_t i = 1; i < node.inputs.size(); ++i) {
        if (node.inputs[i] < 0) continue;
        const Value& bound = values_[static_cast<std::size_t>(node.inputs[i])];
        if (bound.kind != Kind::kConstant || constants_[bound.constant].size() != 1) {
          throw std::invalid_argument(label + ": " + (i == 1 ? "min " : "max ") + input_name(i) +
                                      " must be a constant with one element, got a " +
                                      (bound.kind == Kind::kConstant ? "constant" : "non-constant") +
                                      " of shape " + format_shape(bound.shape));
        }
        (i == 1 ? node.lo : node.hi) = constants_[bound.constant][0];
      }
      if (node.lo > node.hi) {
        throw std::invalid_argument(label + ": min " + std::to_string(node.lo) + " > max " +
                                    std::to_string(node.hi));
      }
      return shape_of(0);
    }

    case Op::kSoftmax: {
      const SymbolicShape& x = shape_of(0);
      const auto rank = static_cast<std::int64_t>(x.size());
      const std::int64_t axis = int_attr("axis", -1);
      if (rank == 0) throw std::invalid_argument(label + ": input must have rank >= 1, got ()");
      if (axis != -1 && axis != rank - 1) {
        throw std::invalid_argument(label + ": axis " + std::to_string(axis) +
                                    " is not supported for input " + input_name(0) + " of shape " +
                                    format_shape(x) + "; only the last axis (-1 or " +
                                    std::to_string(rank - 1) + ")");
      }
      node.axis = rank - 1;
      return x;
    }

    case Op::kFlatten: {
      const SymbolicShape& x = shape_of(0);
      const auto rank = static_cast<std::int64_t>(x.size());
      std::int64_t axis = int_attr("axis", 1);
      if (axis < -rank || axis > rank) {
        throw std::invalid_argument(label + ": axis " + std::to_string(axis) +
                                    " is out of range [" + std::to_string(-rank) + ", " +
                                    std::to_string(rank) + "] for input of shape " +
                                    format_shape(x));
      }
      if (axis < 0) axis += rank;
      node.axis = axis;
      const auto split = static_cast<std::size_t>(axis);
      return {dim_product(x, 0, split, label), dim_product(x, split, x.size(), label)};
    }

    case Op::kMatMul: {
      const SymbolicShape& a = shape_of(0);
      const SymbolicShape& b = shape_of(1);
      if (b.size() != 2) {
        throw std::invalid_argument(label + ": the right operand " + input_name(1) +
                                    " must be 2-D (k, n), got shape " + format_shape(b));
      }
      if (a.empty()) {
        throw std::invalid_argument(label + ": the left operand " + input_name(0) +
                                    " must have rank >= 1, got shape ()");
      }
      if (a.back() != b[0]) {
        throw std::invalid_argument(label + ": inner dimensions differ: " + input_name(0) + " " +
                                    format_shape(a) + " x " + input_name(1) + " " +
                                    format_shape(b) + " (expected " + input_name(1) +
                                    " to have " + format_dim(a.back()) + " rows, got " +
                                    format_dim(b[0]) + ")");
      }
      SymbolicShape out(a.begin(), a.end() - 1);
      out.push_back(b[1]);
      return out;
    }

    case Op::kGemm: {
      const std::int64_t trans_a = int_attr("transA", 0);
      const std::int64_t trans_b = int_attr("transB", 0);
      for (const auto& [key, v] : {std::pair<const char*, std::int64_t>{"transA", trans_a},
                                   std::pair<const char*, std::int64_t>{"transB", trans_b}}) {
        if (v != 0 && v != 1) {
          throw std::invalid_argument(label + ": attribute " + key + " must be 0 or 1, got " +
                                      std::to_string(v));
        }
      }
      node.trans_a = trans_a == 1;
      node.trans_b = trans_b == 1;
      node.alpha = float_attr("alpha", 1.0f);
      node.beta = float_attr("beta", 1.0f);
      const SymbolicShape& a = shape_of(0);
      const SymbolicShape& b = shape_of(1);
      if (a.size() != 2) {
        throw std::invalid_argument(label + ": input A " + input_name(0) +
                                    " must be 2-D, got shape " + format_shape(a));
      }
      if (b.size() != 2) {
        throw std::invalid_argument(label + ": input B " + input_name(1) +
                                    " must be 2-D, got shape " + format_shape(b));
      }
      const Dim m = node.trans_a ? a[1] : a[0];
      const Dim k_a = node.trans_a ? a[0] : a[1];
      const Dim k_b = node.trans_b ? b[1] : b[0];
      const Dim n = node.trans_b ? b[0] : b[1];
      if (k_a != k_b) {
        throw std::invalid_argument(
            label + ": inner dimensions differ: A " + input_name(0) + " " + format_shape(a) +
            (node.trans_a ? " (transposed)" : "") + " x B " + input_name(1) + " " +
            format_shape(b) + (node.trans_b ? " (transposed)" : "") + ": expected B to have " +
            format_dim(k_a) + (node.trans_b ? " columns" : " rows") + ", got " + format_dim(k_b));
      }
      const SymbolicShape out{m, n};
      if (node.inputs.size() == 3 && node.inputs[2] >= 0) {
        const SymbolicShape& c = shape_of(2);
        bool ok = c.size() <= 2;
        for (std::size_t i = 0; ok && i < c.size(); ++i) {
          const Dim& want = out[2 - c.size() + i];
          ok = c[i] == want || is_one(c[i]);
        }
        if (!ok) {
          throw std::invalid_argument(label + ": input C " + input_name(2) + " of shape " +
                                      format_shape(c) + " cannot be broadcast to the output " +
                                      format_shape(out));
        }
      }
      return out;
    }
    default:
      break;  // the ops of policy_graph_ops.cc and policy_graph_recurrent.cc
  }
  throw std::logic_error(label + ": unhandled op");  // unreachable
}

SymbolicShape PolicyGraph::symbolic_output_shape() const {
  if (outputs_.empty()) throw std::invalid_argument("the graph has no output");
  return values_[static_cast<std::size_t>(find_value(outputs_[0]))].shape;
}

}  // namespace evokit
