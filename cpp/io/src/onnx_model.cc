#include "evokit/io/onnx_model.h"

#include <onnx/checker.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <system_error>
#include <utility>

#include "evokit/formats/config.h"
#include "evokit/formats/param_pattern.h"
#include "evokit/formats/tensor_data.h"
#include "evokit/io/errors.h"
#include "file_util.h"

namespace evokit::io {

namespace {

using onnx::TensorProto;

std::string data_type_name(int type) {
  if (!TensorProto::DataType_IsValid(type)) return "UNKNOWN(" + std::to_string(type) + ")";
  return TensorProto::DataType_Name(static_cast<TensorProto::DataType>(type));
}

std::string few(const std::vector<std::string>& names, std::size_t n = 5) {
  if (names.empty()) return "none";
  std::string out;
  for (std::size_t i = 0; i < names.size() && i < n; ++i) {
    out += (i > 0 ? ", '" : "'") + names[i] + "'";
  }
  if (names.size() > n) out += ", ... (" + std::to_string(names.size()) + " in all)";
  return out;
}

// One line: the ONNX checker's messages span several.
std::string one_line(const std::string& text) {
  std::string out;
  bool space = false;
  for (char c : text) {
    if (c == '\n' || c == '\r' || c == '\t' || c == ' ') {
      space = !out.empty();
      continue;
    }
    if (space) out += ' ';
    space = false;
    out += c;
  }
  return out;
}

// "initializer 'W'": what holds a tensor, in errors.
std::string initializer_label(const TensorProto& t) { return "initializer '" + t.name() + "'"; }

// The tensor rules are the core's (formats/tensor_data.h), its refusals ModelError.
template <class F>
auto model_checked(F&& f) {
  return detail::core_checked<ModelError>(std::forward<F>(f));
}

std::vector<std::size_t> dims_of(const TensorProto& t, const std::string& source, const std::string& what) {
  return model_checked([&] {
    return formats::tensor_dims(std::vector<std::int64_t>(t.dims().begin(), t.dims().end()), source, what);
  });
}

std::size_t element_count(const std::vector<std::size_t>& dims) {
  std::size_t n = 1;
  for (std::size_t d : dims) n *= d;
  return n;
}

std::vector<float> float_values(const TensorProto& t, const std::string& source, const std::string& what) {
  return model_checked([&] { return formats::float_tensor_values(t.SerializeAsString(), source, what); });
}

// A value's declared shape as Python's _declared_shape gives it: -1 for a
// symbolic or unknown dimension; `known` false without a shape.
struct Declared {
  bool known = false;
  int elem = 0;
  std::vector<std::int64_t> dims;
  bool operator==(const Declared& o) const {
    return known && o.known && elem == o.elem && dims == o.dims;
  }
};

Declared declared(const onnx::ValueInfoProto& vi) {
  Declared d;
  d.elem = vi.type().tensor_type().elem_type();
  if (!vi.type().has_tensor_type() || !vi.type().tensor_type().has_shape()) return d;
  d.known = true;
  for (const auto& dim : vi.type().tensor_type().shape().dim()) {
    d.dims.push_back(dim.has_dim_value() ? dim.dim_value() : -1);
  }
  return d;
}

// "(1, ?, 8)", "(4,)": Python's _fmt_shape.
std::string format_declared(const Declared& d) {
  std::string out = "(";
  for (std::size_t i = 0; i < d.dims.size(); ++i) {
    out += (i ? ", " : "") + (d.dims[i] < 0 ? std::string("?") : std::to_string(d.dims[i]));
  }
  return out + (d.dims.size() == 1 ? ",)" : ")");
}

// `name` without one of `suffixes` ("" if it has none).
std::string stem(const std::string& name, std::initializer_list<const char*> suffixes) {
  for (const char* suffix : suffixes) {
    const std::size_t n = std::strlen(suffix);
    if (name.size() > n && name.compare(name.size() - n, n, suffix) == 0) {
      return name.substr(0, name.size() - n);
    }
  }
  return "";
}

// Integer tensor types the native graph reads as shapes, axes and indices.
bool is_int_type(int type) { return formats::is_int_tensor_type(type); }

std::vector<std::int64_t> int_values(const TensorProto& t, const std::string& source, const std::string& what) {
  return model_checked([&] { return formats::int_tensor_values(t.SerializeAsString(), source, what); });
}

std::string raw_bytes(const float* values, std::size_t n) {
  std::string out(n * 4, '\0');
  for (std::size_t i = 0; i < n; ++i) {
    std::uint32_t bits;
    std::memcpy(&bits, &values[i], 4);
    for (int k = 0; k < 4; ++k) out[4 * i + static_cast<std::size_t>(k)] = static_cast<char>((bits >> (8 * k)) & 0xFFu);
  }
  return out;
}

std::string node_label(const onnx::NodeProto& node, int index) {
  const std::string who = node.name().empty() ? "node #" + std::to_string(index)
                                              : "node '" + node.name() + "'";
  return who + " (" + node.op_type() + ")";
}

// The tensor a Constant node holds: a FLOAT tensor `value`, or the floats of
// `value_float` (a scalar) or `value_floats` (a vector); or an integer or
// BOOL tensor `value`, `value_int`, `value_ints` (then `is_int`); the first
// such attribute counts. Other constants are refused, as by Python's native
// backend (evokit/policy/native.py).
struct ConstantValue {
  std::vector<std::size_t> shape;
  std::vector<float> values;
  std::vector<std::int64_t> ints;
  bool is_int = false;  // an integer or BOOL constant: ints
};

ConstantValue constant_value(const onnx::NodeProto& node, const std::string& label,
                             const std::string& source) {
  using onnx::AttributeProto;
  for (const AttributeProto& a : node.attribute()) {
    if (a.name() == "value" && a.type() == AttributeProto::TENSOR) {
      const std::string what = label + ": value";
      if (a.t().data_type() == TensorProto::FLOAT) {
        return {dims_of(a.t(), source, what), float_values(a.t(), source, what), {}, false};
      }
      if (is_int_type(a.t().data_type())) {
        return {dims_of(a.t(), source, what), {}, int_values(a.t(), source, what), true};
      }
      throw ModelError(source + ": " + label + ": a " + data_type_name(a.t().data_type()) +
                       " constant; only FLOAT, integer and BOOL tensors are supported");
    }
    if (a.name() == "value_float" && a.type() == AttributeProto::FLOAT) return {{}, {a.f()}, {}, false};
    if (a.name() == "value_floats" && a.type() == AttributeProto::FLOATS) {
      return {{static_cast<std::size_t>(a.floats_size())},
              std::vector<float>(a.floats().begin(), a.floats().end()), {}, false};
    }
    if (a.name() == "value_int" && a.type() == AttributeProto::INT) return {{}, {}, {a.i()}, true};
    if (a.name() == "value_ints" && a.type() == AttributeProto::INTS) {
      return {{static_cast<std::size_t>(a.ints_size())}, {},
              std::vector<std::int64_t>(a.ints().begin(), a.ints().end()), true};
    }
  }
  std::string names;
  for (const AttributeProto& a : node.attribute()) names += (names.empty() ? "" : ", ") + a.name();
  throw ModelError(source + ": " + label +
                   ": only tensor, float and integer constants are supported (attributes: " +
                   (names.empty() ? "none" : names) + ")");
}

// "Gemm, MatMul, ..., Constant": what graph() runs.
std::string supported_ops() {
  std::string out;
  for (const std::string& op : PolicyGraph::supported_ops()) out += op + ", ";
  return out + "Constant";
}

// Refuses a Dropout node whose training_mode input (opset 12+) is a constant
// true and whose ratio is above 0: a model exported in training mode, which
// would drop random activations at every call. The same check and message
// as Python's OnnxPolicy (_refuse_active_dropout in onnx_policy.py).
void refuse_active_dropout(const onnx::GraphProto& graph, const std::string& source) {
  std::map<std::string, float> consts;  // one-element BOOL and FLOAT constants
  const auto scalar = [&](const TensorProto& t, const std::string& name, const std::string& what) {
    if (element_count(dims_of(t, source, what)) != 1) return;
    if (t.data_type() == TensorProto::FLOAT) consts[name] = float_values(t, source, what)[0];
    if (t.data_type() == TensorProto::BOOL) consts[name] = static_cast<float>(int_values(t, source, what)[0]);
  };
  for (const TensorProto& t : graph.initializer()) scalar(t, t.name(), initializer_label(t));
  for (int index = 0; index < graph.node_size(); ++index) {
    const onnx::NodeProto& node = graph.node(index);
    const bool default_domain = node.domain().empty() || node.domain() == "ai.onnx";
    if (node.op_type() == "Constant" && default_domain && node.output_size() > 0) {
      for (const onnx::AttributeProto& a : node.attribute()) {
        if (a.name() == "value" && a.type() == onnx::AttributeProto::TENSOR) {
          scalar(a.t(), node.output(0), node_label(node, index) + ": value");
        } else if (a.name() == "value_float" && a.type() == onnx::AttributeProto::FLOAT) {
          consts[node.output(0)] = a.f();
        }
      }
    }
    if (node.op_type() != "Dropout" || !default_domain) continue;
    const auto training = node.input_size() > 2 ? consts.find(node.input(2)) : consts.end();
    float ratio = 0.5f;
    for (const onnx::AttributeProto& a : node.attribute()) {
      if (a.name() == "ratio" && a.type() == onnx::AttributeProto::FLOAT) ratio = a.f();
    }
    if (node.input_size() > 1 && !node.input(1).empty()) {
      const auto it = consts.find(node.input(1));
      ratio = it != consts.end() ? it->second : 0.5f;
    }
    if (training != consts.end() && training->second != 0.0f && ratio > 0.0f) {
      char text[64];
      const auto end = std::to_chars(text, text + sizeof(text), ratio).ptr;
      throw ModelError(source + ": " + node_label(node, index) +
                       ": dropout is active (training_mode true, ratio " + std::string(text, end) +
                       "): the model was exported in training mode and would drop random "
                       "activations at every call; export it after model.eval()");
    }
  }
}

}  // namespace

OnnxModel OnnxModel::load(const std::string& path, const std::string& param_pattern) {
  std::string bytes, error;
  if (!detail::read_file(path, bytes, error)) throw ModelError(path + ": " + error);
  return from_bytes(bytes, param_pattern, path);
}

OnnxModel OnnxModel::from_bytes(const std::string& bytes, const std::string& param_pattern,
                                const std::string& source) {
  auto model = std::make_shared<onnx::ModelProto>();
  if (bytes.empty() || !model->ParseFromString(bytes)) {
    throw ModelError(source + ": not a valid ONNX model (the bytes do not parse as an ONNX "
                              "ModelProto)");
  }
  OnnxModel m;
  m.model_ = std::move(model);
  m.source_ = source;
  m.param_pattern_ = param_pattern;
  m.setup();
  return m;
}

void OnnxModel::setup() {
  const onnx::ModelProto& model = *model_;
  const std::string& src = source_;
  std::optional<formats::ParamPattern> pattern;  // the one dialect (formats/param_pattern.h)
  try {
    pattern.emplace(param_pattern_);
  } catch (const std::invalid_argument& e) {
    throw ModelError(src + ": invalid param_pattern " + formats::python_repr(param_pattern_) + ": " + e.what());
  }
  if (!model.has_graph() || model.graph().node_size() == 0) {
    throw ModelError(src + ": not a valid ONNX model (no graph nodes)");
  }
  const onnx::GraphProto& graph = model.graph();
  if (graph.output_size() == 0) {
    throw ModelError(src + ": not a valid ONNX model (graph has no outputs)");
  }
  ir_version_ = model.ir_version();
  for (const auto& op : model.opset_import()) {
    if (op.domain().empty() || op.domain() == "ai.onnx") opset_ = std::max(opset_, op.version());
  }
  // Newer IR versions than this libonnx knows are not checked (as in Python).
  if (ir_version_ <= onnx::Version::IR_VERSION) {
    try {
      onnx::checker::check_model(model);
    } catch (const std::exception& e) {
      throw ModelError(src + ": ONNX checker rejected the model: " + one_line(e.what()));
    }
  }

  std::set<std::string> seen;
  std::vector<std::string> float_names, all_names;
  std::size_t offset = 0;
  for (const TensorProto& t : graph.initializer()) {
    if (!seen.insert(t.name()).second) {
      throw ModelError(src + ": duplicate initializer name '" + t.name() + "'");
    }
    all_names.push_back(t.name());
    if (t.data_location() == TensorProto::EXTERNAL) {
      throw ModelError(src + ": initializer '" + t.name() +
                       "' stores its data in an external file, which is not supported");
    }
    if (t.data_type() != TensorProto::FLOAT) continue;
    float_names.push_back(t.name());
    if (!pattern->matches(t.name())) continue;
    std::vector<float> values = float_values(t, src, initializer_label(t));
    param_names_.push_back(t.name());
    param_shapes_.push_back(dims_of(t, src, initializer_label(t)));
    param_offsets_.push_back(offset);
    offset += values.size();
    parameters_.insert(parameters_.end(), values.begin(), values.end());
  }
  if (float_names.empty()) {
    throw ModelError(src + ": model has no float32 initializers to train (initializers: " +
                     few(all_names) + ")");
  }
  if (param_names_.empty()) {
    throw ModelError(src + ": no float32 initializer matches param_pattern " + formats::python_repr(param_pattern_) +
                     " (float32 initializers: " + few(float_names) + ")");
  }

  std::vector<const onnx::ValueInfoProto*> data_inputs;
  for (const auto& vi : graph.input()) {
    if (seen.count(vi.name()) == 0) data_inputs.push_back(&vi);
  }
  if (data_inputs.empty()) throw ModelError(src + ": model has no observation input");
  refuse_active_dropout(graph, src);
  input_name_ = data_inputs[0]->name();
  output_name_ = graph.output(0).name();
  pair_state(std::vector<const onnx::ValueInfoProto*>(data_inputs.begin() + 1, data_inputs.end()));
}

void OnnxModel::pair_state(const std::vector<const onnx::ValueInfoProto*>& inputs) {
  const onnx::GraphProto& graph = model_->graph();
  const std::string& src = source_;
  std::vector<const onnx::ValueInfoProto*> outputs;
  std::vector<std::string> output_names;
  for (int i = 1; i < graph.output_size(); ++i) {
    outputs.push_back(&graph.output(i));
    output_names.push_back(graph.output(i).name());
  }
  std::map<std::string, std::string> taken;  // output -> the state input paired with it
  for (const onnx::ValueInfoProto* vi : inputs) {
    const std::string in_stem = stem(vi->name(), {"_in", ".in", "in", "_0", "0"});
    std::vector<const onnx::ValueInfoProto*> by_name, by_shape;
    for (const onnx::ValueInfoProto* o : outputs) {
      if (!in_stem.empty() && stem(o->name(), {"_out", ".out", "out", "_n", "n"}) == in_stem) {
        by_name.push_back(o);
      }
      if (declared(*vi) == declared(*o)) by_shape.push_back(o);
    }
    const onnx::ValueInfoProto* out = nullptr;
    if (by_name.size() == 1) {
      out = by_name[0];
      if (!(declared(*vi) == declared(*out))) {
        throw ModelError(src + ": state input '" + vi->name() + "' pairs by name with output '" +
                         out->name() + "', but their declared shapes or types differ: " +
                         format_declared(declared(*vi)) + " vs " + format_declared(declared(*out)));
      }
    } else if (by_shape.empty()) {
      throw ModelError(src + ": input '" + vi->name() +
                       "' is neither the observation nor recurrent state: no output pairs with "
                       "it by name (h0 -> hn, x_in -> x_out) or by shape (outputs after the "
                       "first: " + few(output_names) +
                       "); a policy takes one observation input, then state inputs");
    } else if (by_shape.size() > 1) {
      std::vector<std::string> names;
      for (const auto* o : by_shape) names.push_back(o->name());
      throw ModelError(src + ": state input '" + vi->name() + "' matches outputs " + few(names) +
                       " by shape; name the pair by the convention (h0 -> hn, x_in -> x_out) to "
                       "say which");
    } else {
      out = by_shape[0];
    }
    const auto [it, fresh] = taken.emplace(out->name(), vi->name());
    if (!fresh) {
      throw ModelError(src + ": state inputs '" + it->second + "' and '" + vi->name() +
                       "' both pair with output '" + out->name() + "'");
    }
    // The batch axis: the one symbolic dimension, else the last size-1
    // dimension before the final one.
    const Declared d = declared(*vi);
    if (d.elem != TensorProto::FLOAT) {
      throw ModelError(src + ": state input '" + vi->name() + "' has type " +
                       data_type_name(d.elem) + ", expected FLOAT");
    }
    if (!d.known || d.dims.empty()) {
      throw ModelError(src + ": state input '" + vi->name() +
                       "' declares no shape; a state needs one, e.g. (1, batch, hidden)");
    }
    std::vector<std::size_t> symbolic, ones;
    for (std::size_t i = 0; i < d.dims.size(); ++i) {
      if (d.dims[i] < 0) symbolic.push_back(i);
      if (d.dims[i] == 1 && i + 1 < d.dims.size()) ones.push_back(i);
    }
    if (symbolic.size() > 1) {
      throw ModelError(src + ": state input '" + vi->name() + "' has shape " + format_declared(d) +
                       " with " + std::to_string(symbolic.size()) +
                       " symbolic dimensions; expected one, the batch");
    }
    if (symbolic.empty() && ones.empty()) {
      throw ModelError(src + ": state input '" + vi->name() + "' has fixed shape " +
                       format_declared(d) +
                       " with no batch dimension (no symbolic or size-1 dimension before the "
                       "last)");
    }
    const std::size_t axis = symbolic.empty() ? ones.back() : symbolic[0];
    std::vector<std::size_t> shape;
    for (std::size_t i = 0; i < d.dims.size(); ++i) {
      shape.push_back(i == axis ? 1 : static_cast<std::size_t>(d.dims[i]));
    }
    state_names_.push_back(vi->name());
    state_output_names_.push_back(out->name());
    state_shapes_.push_back(std::move(shape));
    state_axes_.push_back(axis);
  }
}

PolicyGraph OnnxModel::graph() const {
  const onnx::GraphProto& graph = model_->graph();
  const std::string& src = source_;
  PolicyGraph g;

  // The observation input: [batch, *features], the features fixed.
  const onnx::ValueInfoProto* input = nullptr;
  for (const auto& vi : graph.input()) {
    if (vi.name() == input_name_) input = &vi;
  }
  const std::string what = "observation input '" + input_name_ + "'";
  if (!input->type().has_tensor_type() || !input->type().tensor_type().has_shape()) {
    throw ModelError(src + ": " + what +
                     " declares no shape; the native policy needs [batch, features...]");
  }
  const auto& tensor_type = input->type().tensor_type();
  if (tensor_type.elem_type() != TensorProto::FLOAT) {
    throw ModelError(src + ": " + what + " has type " + data_type_name(tensor_type.elem_type()) +
                     ", the native policy takes FLOAT observations");
  }
  const auto& dims = tensor_type.shape().dim();
  if (dims.size() < 1) {
    throw ModelError(src + ": " + what + " is a scalar; expected shape [batch, features...]");
  }
  std::vector<std::size_t> features;
  for (int i = 1; i < dims.size(); ++i) {
    if (!dims[i].has_dim_value() || dims[i].dim_value() < 1) {
      const std::string name = dims[i].has_dim_param() ? "'" + dims[i].dim_param() + "'" : "?";
      throw ModelError(src + ": " + what + " has a symbolic or empty dimension " +
                       std::to_string(i) + " (" + name +
                       "); the native policy needs fixed feature sizes");
    }
    features.push_back(static_cast<std::size_t>(dims[i].dim_value()));
  }

  std::map<std::string, std::string> other_initializers;  // name -> data type
  try {
    g.add_input(input_name_, features);
    for (std::size_t k = 0; k < state_names_.size(); ++k) {
      g.add_state_input(state_names_[k], state_shapes_[k], state_axes_[k]);
    }
    std::size_t p = 0;
    for (const TensorProto& t : graph.initializer()) {
      if (p < param_names_.size() && t.name() == param_names_[p]) {
        g.add_param(t.name(), param_offsets_[p], param_shapes_[p]);
        ++p;
      } else if (t.data_type() == TensorProto::FLOAT) {
        g.add_constant(t.name(), dims_of(t, src, initializer_label(t)),
                       float_values(t, src, initializer_label(t)));
      } else if (is_int_type(t.data_type())) {
        g.add_int_constant(t.name(), dims_of(t, src, initializer_label(t)),
                           int_values(t, src, initializer_label(t)));
      } else {
        other_initializers.emplace(t.name(), data_type_name(t.data_type()));
      }
    }
  } catch (const ModelError&) {
    throw;
  } catch (const std::invalid_argument& e) {
    throw ModelError(src + ": " + e.what());
  }

  for (int index = 0; index < graph.node_size(); ++index) {
    const onnx::NodeProto& node = graph.node(index);
    const std::string label = node_label(node, index);
    if (!node.domain().empty() && node.domain() != "ai.onnx") {
      throw ModelError(src + ": " + label + ": unsupported op " + node.domain() + "." +
                       node.op_type() + " (only the default ONNX domain is supported)");
    }
    if (node.op_type() == "Constant") {
      ConstantValue c = constant_value(node, label, src);
      if (node.output_size() != 1) {
        throw ModelError(src + ": " + label + ": expected 1 output, got " +
                         std::to_string(node.output_size()));
      }
      try {
        if (c.is_int) {
          g.add_int_constant(node.output(0), c.shape, std::move(c.ints));
        } else {
          g.add_constant(node.output(0), c.shape, std::move(c.values));
        }
      } catch (const std::invalid_argument& e) {
        throw ModelError(src + ": " + e.what());
      }
      continue;
    }
    const auto& ops = PolicyGraph::supported_ops();
    if (std::find(ops.begin(), ops.end(), node.op_type()) == ops.end()) {
      throw ModelError(src + ": " + label + ": unsupported op " + node.op_type() + " (supported: " +
                       supported_ops() + ")");
    }
    std::vector<std::string> inputs(node.input().begin(), node.input().end());
    for (const std::string& in : inputs) {
      const auto it = other_initializers.find(in);
      if (it != other_initializers.end()) {
        throw ModelError(src + ": " + label + ": input '" + in + "' is a " + it->second +
                         " initializer; the native policy computes on FLOAT tensors (and "
                         "integer ones for shapes) only");
      }
    }
    NodeAttributes attributes;
    for (const onnx::AttributeProto& a : node.attribute()) {
      if (a.type() == onnx::AttributeProto::INT) {
        attributes.ints[a.name()] = a.i();
      } else if (a.type() == onnx::AttributeProto::FLOAT) {
        attributes.floats[a.name()] = a.f();
      } else if (a.type() == onnx::AttributeProto::INTS) {
        attributes.int_lists[a.name()].assign(a.ints().begin(), a.ints().end());
      } else if (a.type() == onnx::AttributeProto::STRING) {
        attributes.strings[a.name()] = {a.s()};
      } else if (a.type() == onnx::AttributeProto::STRINGS) {
        attributes.strings[a.name()].assign(a.strings().begin(), a.strings().end());
      } else {
        throw ModelError(src + ": " + label + ": attribute '" + a.name() + "' has type " +
                         onnx::AttributeProto::AttributeType_Name(a.type()) +
                         "; only INT, FLOAT, INTS, STRING and STRINGS attributes are supported");
      }
    }
    // Before opset 13 Softmax's axis defaulted to 1 (and coerced to 2-D).
    if (node.op_type() == "Softmax" && opset_ < 13 && attributes.ints.count("axis") == 0) {
      attributes.ints["axis"] = 1;
    }
    std::vector<std::string> outputs(node.output().begin(), node.output().end());
    try {
      g.add_node(node.op_type(), inputs, outputs, attributes, node.name());
    } catch (const std::invalid_argument& e) {
      // PolicyGraph numbers unnamed nodes among its own nodes, which leave
      // out the Constants: name them by their index in the ONNX graph.
      std::string message = e.what();
      const std::string core_label =
          "node #" + std::to_string(g.num_nodes()) + " (" + node.op_type() + ")";
      if (node.name().empty() && message.rfind(core_label, 0) == 0) {
        message = label + message.substr(core_label.size());
      }
      throw ModelError(src + ": " + message);
    }
  }
  std::vector<std::size_t> one, two;  // the first output's shape for 1 and 2 observations
  try {
    for (const auto& out : graph.output()) g.add_output(out.name());
    for (std::size_t k = 0; k < state_names_.size(); ++k) {
      g.add_state_output(state_names_[k], state_output_names_[k]);
    }
    one = g.output_shape(1);
    two = g.output_shape(2);
  } catch (const std::invalid_argument& e) {
    throw ModelError(src + ": " + e.what());
  }
  if (one.empty() || one[0] != 1 || two[0] != 2) {
    throw ModelError(src + ": output '" + graph.output(0).name() + "' has shape " +
                     format_shape(one) +
                     " for one observation: it does not start with the batch dimension");
  }
  return g;
}

std::string OnnxModel::serialize(const std::vector<float>& params) const {
  if (params.size() != num_params()) {
    throw std::invalid_argument(source_ + ": params holds " + std::to_string(params.size()) +
                                " values, the model has num_params = " +
                                std::to_string(num_params()));
  }
  onnx::ModelProto copy(*model_);
  std::size_t p = 0;
  for (TensorProto& t : *copy.mutable_graph()->mutable_initializer()) {
    if (p < param_names_.size() && t.name() == param_names_[p]) {
      const std::size_t n = element_count(param_shapes_[p]);
      t.clear_float_data();
      t.set_raw_data(raw_bytes(params.data() + param_offsets_[p], n));
      ++p;
    }
  }
  std::string bytes;
  if (!copy.SerializeToString(&bytes)) {
    throw ModelError(source_ + ": cannot serialize the model");
  }
  return bytes;
}

void OnnxModel::save(const std::string& path, const std::vector<float>& params) const {
  const std::string bytes = serialize(params);
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw ModelError(path + ": is a directory");
  detail::atomic_write(path, bytes);
}

}  // namespace evokit::io
