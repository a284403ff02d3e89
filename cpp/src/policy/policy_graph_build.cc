// PolicyGraph: building, with symbolic shape checks (policy_graph_plan.cc
// compiles a built graph for a batch size, policy_graph.cc runs it). A node
// is checked against its op's row of the op table (policy_op_table.cc:
// input and output counts, attributes), then the row's build function gives
// its output shape.
#include "evokit/policy_graph.h"

#include "policy/policy_op_table.h"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <utility>

namespace evokit {

namespace {

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

// Refuses a constant of `count` values whose shape holds another number.
void require_filled(const std::vector<std::size_t>& shape, std::size_t count,
                    const std::string& label) {
  const std::size_t size = product(shape, label);
  if (count != size) {
    throw std::invalid_argument(label + ": shape " + format_shape(shape) + " holds " +
                                std::to_string(size) + " values, got " + std::to_string(count));
  }
}

bool is_one(const Dim& d) { return !d.batch && d.factor == 1; }

SymbolicShape concrete(const std::vector<std::size_t>& shape) {
  SymbolicShape out;
  for (std::size_t d : shape) out.push_back(Dim{d, false});
  return out;
}

}  // namespace

Dim ops::shape_product(const SymbolicShape& shape, std::size_t begin, std::size_t end,
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

SymbolicShape ops::broadcast_shapes(const SymbolicShape& a, const SymbolicShape& b,
                                    const std::string& label) {
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
                                  std::to_string(i) + ": " + ops::format_dim(da) + " vs " +
                                  ops::format_dim(db) + ")");
    }
  }
  return out;
}

std::string format_shape(const SymbolicShape& shape) {
  std::string out = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) out += ", ";
    out += ops::format_dim(shape[i]);
  }
  if (shape.size() == 1) out += ",";
  return out + ")";
}

std::string format_shape(const std::vector<std::size_t>& shape) {
  return format_shape(concrete(shape));
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
  require_filled(shape, data.size(), label);
  Value v{name, Kind::kConstant, concrete(shape)};
  v.constant = constants_.size();
  define(std::move(v), label);
  constants_.push_back(std::move(data));
}

void PolicyGraph::add_int_constant(const std::string& name, const std::vector<std::size_t>& shape,
                                   std::vector<std::int64_t> data) {
  const std::string label = "constant '" + name + "'";
  require_filled(shape, data.size(), label);
  Value v{name, Kind::kInts, {}};
  for (std::size_t d : shape) v.shape.push_back(Dim{d, false});
  for (std::int64_t x : data) v.ints.push_back(IntDim{x, false});
  define(std::move(v), label);
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

  const OpDef* def = ops::find(op_type);
  if (def == nullptr) {
    std::string supported;
    for (const std::string& op : supported_ops()) supported += (supported.empty() ? "" : ", ") + op;
    throw std::invalid_argument(label + ": unsupported op " + op_type + " (supported: " +
                                supported + ")");
  }
  const OpDef& info = *def;
  const int n_in = static_cast<int>(inputs.size());
  if (n_in < info.min_inputs || n_in > info.max_inputs) {
    const std::string expected =
        info.min_inputs == info.max_inputs
            ? std::to_string(info.min_inputs)
            : std::to_string(info.min_inputs) + " to " + std::to_string(info.max_inputs);
    throw std::invalid_argument(label + ": expected " + expected + " inputs, got " +
                                std::to_string(n_in));
  }
  const auto max_outputs = static_cast<std::size_t>(info.max_outputs);
  if (outputs.empty() || outputs.size() > max_outputs) {
    throw std::invalid_argument(label + ": expected " +
                                (max_outputs == 1 ? std::string("1 output")
                                                  : "1 to " + std::to_string(max_outputs) + " outputs") +
                                ", got " + std::to_string(outputs.size()));
  }

  Node node;
  node.label = label;
  node.op = def;
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
  ops::check_attributes(info, label, attributes);
  Ops::Build build{*this, node, attributes, v, more};
  v.shape = info.build(build);
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

SymbolicShape PolicyGraph::symbolic_output_shape() const {
  if (outputs_.empty()) throw std::invalid_argument("the graph has no output");
  return values_[static_cast<std::size_t>(find_value(outputs_[0]))].shape;
}

}  // namespace evokit
