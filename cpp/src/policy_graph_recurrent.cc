// PolicyGraph: recurrent state, the recurrent ops LSTM and GRU, and the
// layout ops exported graphs put around them (Transpose, Squeeze,
// Unsqueeze, Slice, Reshape): building and their kernels. compile() plans
// them in policy_graph_plan.cc, execute() runs them in policy_graph.cc.
//
// Op semantics follow the ONNX operator specs (opset 13+; Squeeze's and
// Unsqueeze's axes also as the attribute of opsets < 13):
//   LSTM  layout 0, direction forward, default activations (sigmoid, tanh,
//         tanh), gates i, o, f, c in W, R and B; no peepholes, clip or
//         sequence_lens. Y (seq, 1, batch, hidden), Y_h and Y_c (1, batch,
//         hidden).
//   GRU   the same with gates z, r, h, linear_before_reset 0 or 1 (PyTorch
//         exports 1).
//   Transpose, Squeeze, Unsqueeze, Reshape (allowzero, one -1), Slice (step
//         1; the batch dimension only whole).
// Integer operands (axes, starts, ends, shapes) must be integer constants:
// they are read when the graph is built. Every attribute value outside
// these is refused naming the node.
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
#include "policy_recurrent.h"

namespace evokit {

namespace {

bool is_one(const Dim& d) { return !d.batch && d.factor == 1; }

std::string join_ints(const std::vector<std::int64_t>& v) {
  std::string out = "[";
  for (std::size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + std::to_string(v[i]);
  return out + "]";
}

std::string join_strings(const std::vector<std::string>& v) {
  std::string out = "[";
  for (std::size_t i = 0; i < v.size(); ++i) out += (i ? ", '" : "'") + v[i] + "'";
  return out + "]";
}

// Refuses attributes outside `ints`, `floats`, `int_lists`, `strings`.
void check_known(const NodeAttributes& a, const std::string& label,
                 std::initializer_list<const char*> ints,
                 std::initializer_list<const char*> int_lists,
                 std::initializer_list<const char*> strings) {
  const auto known = [](std::initializer_list<const char*> names, const std::string& key) {
    return std::any_of(names.begin(), names.end(), [&](const char* n) { return key == n; });
  };
  for (const auto& kv : a.ints) {
    if (!known(ints, kv.first)) {
      throw std::invalid_argument(label + ": unknown integer attribute '" + kv.first + "'");
    }
  }
  for (const auto& kv : a.floats) {
    throw std::invalid_argument(label + ": attribute '" + kv.first + "' is not supported");
  }
  for (const auto& kv : a.int_lists) {
    if (!known(int_lists, kv.first)) {
      throw std::invalid_argument(label + ": unknown integer list attribute '" + kv.first + "'");
    }
  }
  for (const auto& kv : a.strings) {
    if (!known(strings, kv.first)) {
      throw std::invalid_argument(label + ": unknown string attribute '" + kv.first + "'");
    }
  }
}

std::int64_t int_or(const NodeAttributes& a, const char* key, std::int64_t fallback) {
  const auto it = a.ints.find(key);
  return it == a.ints.end() ? fallback : it->second;
}

// Normalises axis (negative counts from the end) into [0, rank).
std::size_t norm_axis(std::int64_t axis, std::size_t rank, const std::string& label) {
  const auto r = static_cast<std::int64_t>(rank);
  if (axis < -r || axis >= r) {
    throw std::invalid_argument(label + ": axis " + std::to_string(axis) +
                                " is out of range for rank " + std::to_string(rank));
  }
  return static_cast<std::size_t>(axis < 0 ? axis + r : axis);
}

}  // namespace

// ---- state --------------------------------------------------------------

void PolicyGraph::add_int_constant(const std::string& name, const std::vector<std::size_t>& shape,
                                   std::vector<std::int64_t> data) {
  const std::string label = "constant '" + name + "'";
  std::size_t size = 1;
  for (std::size_t d : shape) size *= d;
  if (data.size() != size) {
    throw std::invalid_argument(label + ": shape " + format_shape(shape) + " holds " +
                                std::to_string(size) + " values, got " +
                                std::to_string(data.size()));
  }
  Value v{name, Kind::kIntConstant, {}};
  for (std::size_t d : shape) v.shape.push_back(Dim{d, false});
  v.constant = int_constants_.size();
  define(std::move(v), label);
  int_batch_.emplace_back(data.size(), false);
  int_constants_.push_back(std::move(data));
}

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

const std::vector<std::int64_t>& PolicyGraph::int_constant(const Node& node, std::size_t input,
                                                           const char* what,
                                                           const std::vector<bool>** batch) const {
  const Value& v = values_[static_cast<std::size_t>(node.inputs[input])];
  if (v.kind != Kind::kIntConstant) {
    throw std::invalid_argument(node.label + ": " + what + " '" + v.name +
                                "' must be an integer constant (an int64 initializer or "
                                "Constant), known when the graph is built");
  }
  const std::vector<bool>& flags = int_batch_[v.constant];
  if (batch != nullptr) {
    *batch = &flags;
  } else if (std::find(flags.begin(), flags.end(), true) != flags.end()) {
    throw std::invalid_argument(node.label + ": " + what + " '" + v.name +
                                "' depends on the batch size");
  }
  return int_constants_[v.constant];
}

bool PolicyGraph::fold_shape_arithmetic(const std::string& op_type,
                                        const std::vector<std::string>& inputs,
                                        const std::vector<std::string>& outputs,
                                        const NodeAttributes& attributes,
                                        const std::string& label) {
  static const char* const kFolded[] = {"Shape", "Concat", "Slice", "Mul", "Reshape",
                                        "Squeeze", "Unsqueeze", "Identity"};
  if (std::none_of(std::begin(kFolded), std::end(kFolded),
                   [&](const char* op) { return op_type == op; })) {
    return false;
  }
  // Integer inputs only (Shape: any first input); else the float op, if any.
  std::vector<int> ids;
  for (const std::string& in : inputs) ids.push_back(in.empty() ? -1 : find_value(in));
  const auto is_int = [&](int id) {
    return id >= 0 && values_[static_cast<std::size_t>(id)].kind == Kind::kIntConstant;
  };
  if (op_type != "Shape" && (ids.empty() || !is_int(ids[0]))) {
    if (op_type == "Concat") {
      throw std::invalid_argument(label + ": only integer shape arithmetic is supported (input '" +
                                  (inputs.empty() ? std::string() : inputs[0]) +
                                  "' is not an integer constant)");
    }
    return false;
  }
  if (outputs.size() != 1 || outputs[0].empty()) {
    throw std::invalid_argument(label + ": expected 1 output, got " + std::to_string(outputs.size()));
  }
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 && !inputs[i].empty()) {
      throw std::invalid_argument(label + ": input '" + inputs[i] + "' is not defined");
    }
  }
  Node node;  // for int_constant's messages
  node.label = label;
  node.inputs = ids;
  std::vector<std::int64_t> values;
  std::vector<bool> batch;
  SymbolicShape shape;
  const auto input_of = [&](std::size_t i) -> const Value& {
    return values_[static_cast<std::size_t>(ids[i])];
  };
  const auto data = [&](std::size_t i) -> std::pair<const std::vector<std::int64_t>*,
                                                    const std::vector<bool>*> {
    const Value& v = input_of(i);
    return {&int_constants_[v.constant], &int_batch_[v.constant]};
  };
  if (op_type == "Shape") {
    if (ids.size() != 1 || ids[0] < 0) {
      throw std::invalid_argument(label + ": expected 1 input, got " + std::to_string(ids.size()));
    }
    check_known(attributes, label, {"start", "end"}, {}, {});
    const SymbolicShape& x = input_of(0).shape;
    const auto rank = static_cast<std::int64_t>(x.size());
    const auto clamp = [rank](std::int64_t v) {
      if (v < 0) v += rank;
      return std::min(std::max<std::int64_t>(v, 0), rank);
    };
    const std::int64_t lo = clamp(int_or(attributes, "start", 0));
    const std::int64_t hi = clamp(int_or(attributes, "end", rank));
    for (std::int64_t i = lo; i < hi; ++i) {
      values.push_back(static_cast<std::int64_t>(x[static_cast<std::size_t>(i)].factor));
      batch.push_back(x[static_cast<std::size_t>(i)].batch);
    }
    shape = {Dim{values.size(), false}};
  } else if (op_type == "Concat") {
    check_known(attributes, label, {"axis"}, {}, {});
    for (std::size_t i = 0; i < ids.size(); ++i) {
      if (!is_int(ids[i]) || input_of(i).shape.size() != 1) {
        throw std::invalid_argument(label + ": only the concatenation of 1-D integer constants is "
                                    "supported (input '" + inputs[i] + "')");
      }
      const auto [v, b] = data(i);
      values.insert(values.end(), v->begin(), v->end());
      batch.insert(batch.end(), b->begin(), b->end());
    }
    shape = {Dim{values.size(), false}};
  } else if (op_type == "Mul") {
    if (ids.size() != 2 || !is_int(ids[1])) return false;
    check_known(attributes, label, {}, {}, {});
    const auto [a, ab] = data(0);
    const auto [b, bb] = data(1);
    if (a->size() != b->size() && a->size() != 1 && b->size() != 1) {
      throw std::invalid_argument(label + ": integer operands of " + std::to_string(a->size()) +
                                  " and " + std::to_string(b->size()) + " elements");
    }
    const std::size_t n = std::max(a->size(), b->size());
    for (std::size_t i = 0; i < n; ++i) {
      const std::size_t ia = a->size() == 1 ? 0 : i, ib = b->size() == 1 ? 0 : i;
      if ((*ab)[ia] && (*bb)[ib]) {
        throw std::invalid_argument(label + ": multiplies the batch size by itself");
      }
      values.push_back((*a)[ia] * (*b)[ib]);
      batch.push_back((*ab)[ia] || (*bb)[ib]);
    }
    shape = a->size() >= b->size() ? input_of(0).shape : input_of(1).shape;
  } else {  // Slice, Reshape, Squeeze, Unsqueeze, Identity of an integer tensor
    const auto [v, b] = data(0);
    values = *v;
    batch = *b;
    shape = input_of(0).shape;
    if (op_type == "Slice") {
      check_known(attributes, label, {}, {}, {});
      if (shape.size() != 1 || ids.size() < 3) {
        throw std::invalid_argument(label + ": only slices of 1-D integer tensors are supported");
      }
      const auto dim = static_cast<std::int64_t>(values.size());
      const auto clamp = [dim](std::int64_t x) {
        if (x < 0) x += dim;
        return std::min(std::max<std::int64_t>(x, 0), dim);
      };
      const std::int64_t lo = clamp(int_constant(node, 1, "starts").at(0));
      const std::int64_t hi = std::max(lo, clamp(int_constant(node, 2, "ends").at(0)));
      if (ids.size() > 4 && ids[4] >= 0 && int_constant(node, 4, "steps").at(0) != 1) {
        throw std::invalid_argument(label + ": only step 1 is supported");
      }
      values.assign(v->begin() + lo, v->begin() + hi);
      batch.assign(b->begin() + lo, b->begin() + hi);
      shape = {Dim{values.size(), false}};
    } else if (op_type == "Reshape" || op_type == "Squeeze" || op_type == "Unsqueeze") {
      // The same elements; a rank of 0 or 1 (a scalar or a vector).
      shape = values.size() == 1 && op_type == "Squeeze" ? SymbolicShape{}
                                                         : SymbolicShape{Dim{values.size(), false}};
    }
  }
  Value out{outputs[0], Kind::kIntConstant, shape};
  out.constant = int_constants_.size();
  define(std::move(out), label);
  int_constants_.push_back(std::move(values));
  int_batch_.push_back(std::move(batch));
  return true;
}

SymbolicShape PolicyGraph::infer_recurrent_shape(Node& node, const NodeAttributes& attributes,
                                                 std::vector<SymbolicShape>& more) const {
  const std::string& label = node.label;
  const auto has = [&](std::size_t i) { return i < node.inputs.size() && node.inputs[i] >= 0; };
  const auto value = [&](std::size_t i) -> const Value& {
    return values_[static_cast<std::size_t>(node.inputs[i])];
  };
  const auto float_input = [&](std::size_t i, const char* what) -> const SymbolicShape& {
    if (value(i).kind == Kind::kIntConstant) {
      throw std::invalid_argument(label + ": " + what + " '" + value(i).name +
                                  "' is an integer tensor, expected a float tensor");
    }
    return value(i).shape;
  };
  // Axes from input 1 (opset 13+) or the attribute `axes`.
  const auto axes_of = [&]() -> std::vector<std::int64_t> {
    if (has(1)) return int_constant(node, 1, "axes");
    const auto it = attributes.int_lists.find("axes");
    return it == attributes.int_lists.end() ? std::vector<std::int64_t>{} : it->second;
  };

  switch (node.op) {
    case Op::kLSTM:
    case Op::kGRU: {
      const bool lstm = node.op == Op::kLSTM;
      if (lstm) {
        check_known(attributes, label, {"hidden_size", "layout", "input_forget"}, {},
                    {"direction", "activations"});
      } else {
        check_known(attributes, label, {"hidden_size", "layout", "linear_before_reset"}, {},
                    {"direction", "activations"});
      }
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
      check_known(attributes, label, {}, {"perm"}, {});
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
        throw std::invalid_argument(label + ": perm " + join_ints(perm) +
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

    case Op::kSqueeze: {
      check_known(attributes, label, {}, {"axes"}, {});
      const SymbolicShape& x = float_input(0, "input");
      std::vector<bool> drop(x.size(), false);
      const std::vector<std::int64_t> axes = axes_of();
      if (axes.empty()) {  // every dimension of size 1 (the batch size is not one of them)
        for (std::size_t i = 0; i < x.size(); ++i) drop[i] = is_one(x[i]);
      }
      for (std::int64_t a : axes) {
        const std::size_t i = norm_axis(a, x.size(), label);
        if (!is_one(x[i])) {
          throw std::invalid_argument(label + ": cannot squeeze axis " + std::to_string(a) +
                                      " of " + format_shape(x) + ": its size is not 1");
        }
        drop[i] = true;
      }
      SymbolicShape out;
      for (std::size_t i = 0; i < x.size(); ++i) {
        if (!drop[i]) out.push_back(x[i]);
      }
      return out;
    }

    case Op::kUnsqueeze: {
      check_known(attributes, label, {}, {"axes"}, {});
      const SymbolicShape& x = float_input(0, "input");
      const std::vector<std::int64_t> axes = axes_of();
      if (axes.empty()) throw std::invalid_argument(label + ": axes are required");
      const std::size_t rank = x.size() + axes.size();
      std::vector<bool> inserted(rank, false);
      for (std::int64_t a : axes) {
        const std::size_t i = norm_axis(a, rank, label);
        if (inserted[i]) {
          throw std::invalid_argument(label + ": axis " + std::to_string(a) + " is repeated");
        }
        inserted[i] = true;
      }
      SymbolicShape out;
      std::size_t next = 0;
      for (std::size_t i = 0; i < rank; ++i) out.push_back(inserted[i] ? Dim{} : x[next++]);
      return out;
    }

    case Op::kSlice: {
      check_known(attributes, label, {}, {}, {});
      const SymbolicShape& x = float_input(0, "input");
      const std::vector<std::int64_t>& starts = int_constant(node, 1, "starts");
      const std::vector<std::int64_t>& ends = int_constant(node, 2, "ends");
      std::vector<std::int64_t> axes;
      if (has(3)) {
        axes = int_constant(node, 3, "axes");
      } else {
        for (std::size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<std::int64_t>(i));
      }
      if (has(4)) {
        for (std::int64_t step : int_constant(node, 4, "steps")) {
          if (step != 1) {
            throw std::invalid_argument(label + ": step " + std::to_string(step) +
                                        " is not supported (only 1)");
          }
        }
      }
      if (starts.size() != ends.size() || axes.size() != starts.size()) {
        throw std::invalid_argument(label + ": starts " + join_ints(starts) + ", ends " +
                                    join_ints(ends) + " and axes " + join_ints(axes) +
                                    " must have the same length");
      }
      SymbolicShape out = x;
      node.starts.assign(x.size(), 0);
      node.ends.assign(x.size(), 0);
      for (std::size_t i = 0; i < x.size(); ++i) node.ends[i] = x[i].factor;
      for (std::size_t k = 0; k < axes.size(); ++k) {
        const std::size_t a = norm_axis(axes[k], x.size(), label);
        if (x[a].batch) {  // only the whole batch: start 0, end past it
          if (starts[k] != 0 || ends[k] < std::numeric_limits<std::int32_t>::max()) {
            throw std::invalid_argument(label + ": slicing the batch axis " +
                                        std::to_string(a) + " of " + format_shape(x) + " [" +
                                        std::to_string(starts[k]) + ", " +
                                        std::to_string(ends[k]) +
                                        ") is not supported (only the whole batch)");
          }
          continue;
        }
        const auto dim = static_cast<std::int64_t>(x[a].factor);
        const auto clamp = [dim](std::int64_t v) {
          if (v < 0) v += dim;
          return std::min(std::max<std::int64_t>(v, 0), dim);
        };
        const std::int64_t s = clamp(starts[k]), e = clamp(ends[k]);
        if (e <= s) {
          throw std::invalid_argument(label + ": axis " + std::to_string(a) + " sliced [" +
                                      std::to_string(starts[k]) + ", " + std::to_string(ends[k]) +
                                      ") of size " + std::to_string(dim) + " is empty");
        }
        node.starts[a] = static_cast<std::size_t>(s);
        node.ends[a] = static_cast<std::size_t>(e);
        out[a] = Dim{static_cast<std::size_t>(e - s), false};
      }
      return out;
    }

    case Op::kReshape: {
      check_known(attributes, label, {"allowzero"}, {}, {});
      const SymbolicShape& x = float_input(0, "data");
      const std::vector<bool>* target_batch = nullptr;  // elements that are batch multiples
      const std::vector<std::int64_t>& target = int_constant(node, 1, "shape", &target_batch);
      const bool allowzero = int_or(attributes, "allowzero", 0) != 0;
      Dim total;
      for (const Dim& d : x) {
        total.factor *= d.factor;
        total.batch = total.batch || d.batch;
      }
      SymbolicShape out(target.size());
      Dim known;
      std::size_t infer = target.size();
      for (std::size_t i = 0; i < target.size(); ++i) {
        const std::int64_t t = target[i];
        if (t == -1) {
          if (infer != target.size()) {
            throw std::invalid_argument(label + ": shape " + join_ints(target) +
                                        " has more than one -1");
          }
          infer = i;
          continue;
        }
        if ((*target_batch)[i]) {
          if (t < 1) throw std::invalid_argument(label + ": shape " + join_ints(target) + " is empty");
          out[i] = Dim{static_cast<std::size_t>(t), true};
        } else if (t == 0 && !allowzero) {
          if (i >= x.size()) {
            throw std::invalid_argument(label + ": shape " + join_ints(target) + " copies dimension " +
                                        std::to_string(i) + " of " + format_shape(x) +
                                        ", which has no such dimension");
          }
          out[i] = x[i];
        } else if (t < 1) {
          throw std::invalid_argument(label + ": shape " + join_ints(target) + " has dimension " +
                                      std::to_string(t) + " (expected >= 1, 0 or one -1)");
        } else {
          out[i] = Dim{static_cast<std::size_t>(t), false};
        }
        known.factor *= out[i].factor;
        known.batch = known.batch || out[i].batch;
      }
      const auto mismatch = [&]() {
        return std::invalid_argument(label + ": cannot reshape " + format_shape(x) + " to " +
                                     join_ints(target) + " for every batch size");
      };
      if (infer == target.size()) {
        if (known != total) throw mismatch();
        return out;
      }
      if ((known.batch && !total.batch) || total.factor % known.factor != 0) throw mismatch();
      out[infer] = Dim{total.factor / known.factor, total.batch && !known.batch};
      return out;
    }

    default:
      break;
  }
  throw std::logic_error(label + ": not a recurrent or layout op");  // unreachable
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

void strided_copy(const View& in, std::size_t start, const std::vector<std::size_t>& out_shape,
                  const std::vector<std::size_t>& strides, std::size_t total, float* out) noexcept {
  const std::size_t rank = out_shape.size();
  std::size_t index[16] = {};  // compile() refuses ranks above 16
  std::size_t at = start;
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
