// ONNX policy models (formats/onnx_model.h) over ONNX's wire format (wire.h).
#include "evokit/formats/onnx_model.h"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <utility>

#include "evokit/formats/config.h"  // python_repr
#include "evokit/formats/param_pattern.h"
#include "evokit/formats/tensor_data.h"
#include "wire.h"

namespace evokit::formats {

namespace {

using wire::Message;

[[noreturn]] void refuse(const std::string& message) { throw std::invalid_argument(message); }

std::string quoted(std::string_view name) { return python_repr(std::string(name)); }

// "'a', 'b', ... (7 in all)", "none".
std::string few(const std::vector<std::string>& names, std::size_t n = 5) {
  if (names.empty()) return "none";
  std::string out;
  for (std::size_t i = 0; i < names.size() && i < n; ++i) out += (i > 0 ? ", " : "") + quoted(names[i]);
  if (names.size() > n) out += ", ... (" + std::to_string(names.size()) + " in all)";
  return out;
}

// "(1, ?, 8)", "(4,)", "()".
std::string format_dims(const std::vector<std::int64_t>& dims) {
  std::string out = "(";
  for (std::size_t i = 0; i < dims.size(); ++i) {
    out += (i ? ", " : "") + (dims[i] < 0 ? std::string("?") : std::to_string(dims[i]));
  }
  return out + (dims.size() == 1 ? ",)" : ")");
}

std::string float_text(float v) {
  char text[64];
  const auto end = std::to_chars(text, text + sizeof(text), v).ptr;
  return std::string(text, end);
}

float float_of(std::uint64_t bits) {
  const auto b = static_cast<std::uint32_t>(bits);
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}

bool default_domain(std::string_view domain) { return domain.empty() || domain == "ai.onnx"; }

std::string node_label(const Message& node, int index) {
  const std::string_view name = node.bytes(wire::node::kName);
  const std::string who = name.empty() ? "node #" + std::to_string(index) : "node " + quoted(name);
  return who + " (" + std::string(node.bytes(wire::node::kOpType)) + ")";
}

std::string initializer_label(const Message& t) { return "initializer " + quoted(t.bytes(wire::tensor::kName)); }

std::vector<std::size_t> dims_of(const Message& t, const std::string& source, const std::string& what) {
  const std::vector<std::uint64_t> raw = t.repeated_scalars(wire::tensor::kDims, 0);
  return tensor_dims(std::vector<std::int64_t>(raw.begin(), raw.end()), source, what);
}

std::size_t element_count(const std::vector<std::size_t>& dims) {
  std::size_t n = 1;
  for (const std::size_t d : dims) n *= d;
  return n;
}

DeclaredValue declared(const Message& value_info) {
  namespace tt = wire::tensor_type;
  DeclaredValue d;
  d.name = std::string(value_info.bytes(wire::value_info::kName));
  const Message type = value_info.message(wire::value_info::kType);
  if (type.which({wire::type_proto::kTensorType, wire::type_proto::kSequenceType, wire::type_proto::kMapType,
                  wire::type_proto::kOpaqueType, wire::type_proto::kSparseTensorType,
                  wire::type_proto::kOptionalType}) != wire::type_proto::kTensorType) {
    return d;
  }
  const Message tensor_type = type.message(wire::type_proto::kTensorType);
  d.elem_type = tensor_type.int32(tt::kElemType);
  if (!tensor_type.has(tt::kShape)) return d;
  d.has_shape = true;
  for (const Message& dim : tensor_type.message(tt::kShape).repeated_messages(wire::shape::kDim)) {
    const std::uint32_t which = dim.which({wire::dim::kValue, wire::dim::kParam});
    d.dims.push_back(which == wire::dim::kValue ? dim.int64(wire::dim::kValue) : -1);
    d.dim_params.emplace_back(which == wire::dim::kParam ? dim.bytes(wire::dim::kParam) : std::string_view());
  }
  return d;
}

bool same_declared(const DeclaredValue& a, const DeclaredValue& b) {
  return a.has_shape && b.has_shape && a.elem_type == b.elem_type && a.dims == b.dims;
}

// `name` without one of `suffixes` ("" if it has none).
std::string stem(const std::string& name, std::initializer_list<const char*> suffixes) {
  for (const char* suffix : suffixes) {
    const std::size_t n = std::strlen(suffix);
    if (name.size() > n && name.compare(name.size() - n, n, suffix) == 0) return name.substr(0, name.size() - n);
  }
  return "";
}

// Refuses a Dropout node whose training_mode input (opset 12+) is a constant
// true and whose ratio is above 0.
void refuse_active_dropout(const Message& graph, const std::string& source) {
  std::map<std::string, float, std::less<>> consts;  // one-element BOOL and FLOAT constants
  const auto scalar = [&](std::string_view t, const std::string& name, const std::string& what) {
    const Message m(t);
    const std::int64_t type = m.int32(wire::tensor::kDataType);
    if (element_count(dims_of(m, source, what)) != 1) return;
    if (type == wire::tensor::FLOAT) consts[name] = float_tensor_values(t, source, what)[0];
    if (type == wire::tensor::BOOL) consts[name] = static_cast<float>(int_tensor_values(t, source, what)[0]);
  };
  for (const std::string_view t : graph.repeated_bytes(wire::graph::kInitializer)) {
    const Message m(t);
    scalar(t, std::string(m.bytes(wire::tensor::kName)), initializer_label(m));
  }
  const std::vector<Message> nodes = graph.repeated_messages(wire::graph::kNode);
  for (std::size_t index = 0; index < nodes.size(); ++index) {
    const Message& node = nodes[index];
    const bool in_default = default_domain(node.bytes(wire::node::kDomain));
    const std::string_view op = node.bytes(wire::node::kOpType);
    const std::vector<std::string_view> inputs = node.repeated_bytes(wire::node::kInput);
    const std::vector<std::string_view> outputs = node.repeated_bytes(wire::node::kOutput);
    if (op == "Constant" && in_default && !outputs.empty()) {
      for (const Message& a : node.repeated_messages(wire::node::kAttribute)) {
        const std::string_view name = a.bytes(wire::attr::kName);
        const std::int64_t type = a.int32(wire::attr::kType);
        if (name == "value" && type == wire::attr::TENSOR) {
          scalar(a.bytes(wire::attr::kT), std::string(outputs[0]), node_label(node, static_cast<int>(index)) + ": value");
        } else if (name == "value_float" && type == wire::attr::FLOAT) {
          consts[std::string(outputs[0])] = float_of(a.scalar(wire::attr::kF, 5));
        }
      }
    }
    if (op != "Dropout" || !in_default) continue;
    const auto training = inputs.size() > 2 ? consts.find(inputs[2]) : consts.end();
    float ratio = 0.5f;
    for (const Message& a : node.repeated_messages(wire::node::kAttribute)) {
      if (a.bytes(wire::attr::kName) == "ratio" && a.int32(wire::attr::kType) == wire::attr::FLOAT) {
        ratio = float_of(a.scalar(wire::attr::kF, 5));
      }
    }
    if (inputs.size() > 1 && !inputs[1].empty()) {
      const auto it = consts.find(inputs[1]);
      ratio = it != consts.end() ? it->second : 0.5f;
    }
    if (training != consts.end() && training->second != 0.0f && ratio > 0.0f) {
      refuse(source + ": " + node_label(node, static_cast<int>(index)) +
             ": dropout is active (training_mode true, ratio " + float_text(ratio) +
             "): the model was exported in training mode and would drop random activations at every call; "
             "export it after model.eval()");
    }
  }
}

// The recurrent state: each input after the observation paired with its output.
void pair_state(const Message& graph, const std::vector<DeclaredValue>& inputs, OnnxLayout& layout) {
  const std::string& src = layout.source;
  std::vector<DeclaredValue> outputs;
  std::vector<std::string> output_names;
  const std::vector<Message> graph_outputs = graph.repeated_messages(wire::graph::kOutput);
  for (std::size_t i = 1; i < graph_outputs.size(); ++i) {
    outputs.push_back(declared(graph_outputs[i]));
    output_names.push_back(outputs.back().name);
  }
  std::map<std::string, std::string> taken;  // output -> the state input paired with it
  for (const DeclaredValue& in : inputs) {
    const std::string in_stem = stem(in.name, {"_in", ".in", "in", "_0", "0"});
    std::vector<const DeclaredValue*> by_name, by_shape;
    for (const DeclaredValue& o : outputs) {
      if (!in_stem.empty() && stem(o.name, {"_out", ".out", "out", "_n", "n"}) == in_stem) by_name.push_back(&o);
      if (same_declared(in, o)) by_shape.push_back(&o);
    }
    const DeclaredValue* out = nullptr;
    if (by_name.size() == 1) {
      out = by_name[0];
      if (!same_declared(in, *out)) {
        refuse(src + ": state input " + quoted(in.name) + " pairs by name with output " + quoted(out->name) +
               ", but their declared shapes or types differ: " + format_dims(in.dims) + " vs " +
               format_dims(out->dims));
      }
    } else if (by_shape.empty()) {
      refuse(src + ": input " + quoted(in.name) +
             " is neither the observation nor recurrent state: no output pairs with it by name (h0 -> hn, "
             "x_in -> x_out) or by shape (outputs after the first: " + few(output_names) +
             "); a policy takes one observation input, then state inputs");
    } else if (by_shape.size() > 1) {
      std::vector<std::string> names;
      for (const DeclaredValue* o : by_shape) names.push_back(o->name);
      refuse(src + ": state input " + quoted(in.name) + " matches outputs " + few(names) +
             " by shape; name the pair by the convention (h0 -> hn, x_in -> x_out) to say which");
    } else {
      out = by_shape[0];
    }
    const auto [it, fresh] = taken.emplace(out->name, in.name);
    if (!fresh) {
      refuse(src + ": state inputs " + quoted(it->second) + " and " + quoted(in.name) + " both pair with output " +
             quoted(out->name));
    }
    if (in.elem_type != wire::tensor::FLOAT) {
      refuse(src + ": state input " + quoted(in.name) + " has type " + onnx_data_type_name(in.elem_type) +
             ", expected FLOAT");
    }
    if (!in.has_shape || in.dims.empty()) {
      refuse(src + ": state input " + quoted(in.name) + " declares no shape; a state needs one, e.g. (1, batch, hidden)");
    }
    std::vector<std::size_t> symbolic, ones;
    for (std::size_t i = 0; i < in.dims.size(); ++i) {
      if (in.dims[i] < 0) symbolic.push_back(i);
      if (in.dims[i] == 1 && i + 1 < in.dims.size()) ones.push_back(i);
    }
    if (symbolic.size() > 1) {
      refuse(src + ": state input " + quoted(in.name) + " has shape " + format_dims(in.dims) + " with " +
             std::to_string(symbolic.size()) + " symbolic dimensions; expected one, the batch");
    }
    if (symbolic.empty() && ones.empty()) {
      refuse(src + ": state input " + quoted(in.name) + " has fixed shape " + format_dims(in.dims) +
             " with no batch dimension (no symbolic or size-1 dimension before the last)");
    }
    const std::size_t axis = symbolic.empty() ? ones.back() : symbolic[0];
    std::vector<std::size_t> shape;
    for (std::size_t i = 0; i < in.dims.size(); ++i) shape.push_back(i == axis ? 1 : static_cast<std::size_t>(in.dims[i]));
    layout.state_names.push_back(in.name);
    layout.state_output_names.push_back(out->name);
    layout.state_shapes.push_back(std::move(shape));
    layout.state_axes.push_back(axis);
  }
}

Message parse_model(std::string_view bytes, const std::string& source) {
  try {
    return Message(bytes);
  } catch (const wire::BadWire&) {
    refuse(source + ": not a valid ONNX model (the bytes do not parse as an ONNX ModelProto)");
  }
}

// ---- the native graph -------------------------------------------------------------------

[[noreturn]] void unsupported(const std::string& source, const std::string& message) {
  throw UnsupportedModel(source + ": native backend: " + message);
}

// A Constant node's tensor: FLOAT (`value`, `value_float`, `value_floats`),
// or integer and BOOL (`value` of such a type, `value_int`, `value_ints`);
// the first such attribute counts.
struct ConstantValue {
  std::vector<std::size_t> shape;
  std::vector<float> values;
  std::vector<std::int64_t> ints;
  bool is_int = false;
};

ConstantValue constant_value(const Message& node, const std::string& label, const std::string& source) {
  namespace attr = wire::attr;
  std::string names;
  for (const Message& a : node.repeated_messages(wire::node::kAttribute)) {
    const std::string_view name = a.bytes(attr::kName);
    const std::int64_t type = a.int32(attr::kType);
    names += (names.empty() ? "" : ", ") + std::string(name);
    if (name == "value" && type == attr::TENSOR) {
      const std::string_view t = a.bytes(attr::kT);
      const Message m(t);
      const std::string what = label + ": value";
      const std::int64_t data_type = m.int32(wire::tensor::kDataType);
      if (data_type == wire::tensor::FLOAT) return {dims_of(m, source, what), float_tensor_values(t, source, what), {}, false};
      if (is_int_tensor_type(data_type)) return {dims_of(m, source, what), {}, int_tensor_values(t, source, what), true};
      unsupported(source, label + ": a " + onnx_data_type_name(data_type) +
                              " constant; only FLOAT, integer and BOOL tensors are supported");
    }
    if (name == "value_float" && type == attr::FLOAT) return {{}, {float_of(a.scalar(attr::kF, 5))}, {}, false};
    if (name == "value_floats" && type == attr::FLOATS) {
      std::vector<float> values;
      for (const std::uint64_t bits : a.repeated_scalars(attr::kFloats, 5)) values.push_back(float_of(bits));
      return {{values.size()}, values, {}, false};
    }
    if (name == "value_int" && type == attr::INT) return {{}, {}, {a.int64(attr::kI)}, true};
    if (name == "value_ints" && type == attr::INTS) {
      std::vector<std::int64_t> ints;
      for (const std::uint64_t v : a.repeated_scalars(attr::kInts, 0)) ints.push_back(static_cast<std::int64_t>(v));
      return {{ints.size()}, {}, ints, true};
    }
  }
  unsupported(source, label + ": only tensor, float and integer constants are supported (attributes: " +
                          (names.empty() ? "none" : names) + ")");
}

NodeAttributes node_attributes(const Message& node, const std::string& label, const std::string& source) {
  namespace attr = wire::attr;
  NodeAttributes out;
  for (const Message& a : node.repeated_messages(wire::node::kAttribute)) {
    const std::string name(a.bytes(attr::kName));
    const std::int64_t type = a.int32(attr::kType);
    if (type == attr::INT) {
      out.ints[name] = a.int64(attr::kI);
    } else if (type == attr::FLOAT) {
      out.floats[name] = float_of(a.scalar(attr::kF, 5));
    } else if (type == attr::INTS) {
      auto& list = out.int_lists[name];
      for (const std::uint64_t v : a.repeated_scalars(attr::kInts, 0)) list.push_back(static_cast<std::int64_t>(v));
    } else if (type == attr::STRING) {
      out.strings[name] = {std::string(a.bytes(attr::kS))};
    } else if (type == attr::STRINGS) {
      auto& list = out.strings[name];
      for (const std::string_view s : a.repeated_bytes(attr::kStrings)) list.emplace_back(s);
    } else {
      const std::string type_name = type >= 0 && type < static_cast<std::int64_t>(std::size(attr::kTypeNames))
                                        ? attr::kTypeNames[type]
                                        : "UNKNOWN(" + std::to_string(type) + ")";
      unsupported(source, label + ": attribute " + quoted(name) + " has type " + type_name +
                              "; only INT, FLOAT, INTS, STRING and STRINGS attributes are supported");
    }
  }
  return out;
}

// "Gemm, MatMul, ..., Constant": the ops the native graph runs.
std::string supported_ops() {
  std::string out;
  for (const std::string& op : PolicyGraph::supported_ops()) out += op + ", ";
  return out + "Constant";
}

}  // namespace

std::string onnx_data_type_name(std::int64_t type) {
  static const char* const kNames[] = {
      "UNDEFINED",  "FLOAT",        "UINT8",          "INT8",       "UINT16",         "INT16",
      "INT32",      "INT64",        "STRING",         "BOOL",       "FLOAT16",        "DOUBLE",
      "UINT32",     "UINT64",       "COMPLEX64",      "COMPLEX128", "BFLOAT16",       "FLOAT8E4M3FN",
      "FLOAT8E4M3FNUZ", "FLOAT8E5M2", "FLOAT8E5M2FNUZ", "UINT4",    "INT4",           "FLOAT4E2M1",
      "FLOAT8E8M0", "UINT2",        "INT2",           "FLOAT6E2M3", "FLOAT6E3M2"};
  if (type < 0 || type >= static_cast<std::int64_t>(std::size(kNames))) return "UNKNOWN(" + std::to_string(type) + ")";
  return kNames[type];
}

OnnxLayout read_onnx_layout(std::string_view bytes, const std::string& param_pattern, const std::string& source,
                            const std::function<void(std::int64_t)>& check) {
  OnnxLayout layout;
  layout.source = source;
  layout.param_pattern = param_pattern;
  std::optional<ParamPattern> pattern;
  try {
    pattern.emplace(param_pattern);
  } catch (const std::invalid_argument& e) {
    refuse(source + ": invalid param_pattern " + python_repr(param_pattern) + ": " + e.what());
  }
  try {
    const Message model = parse_model(bytes, source);
    const Message graph = model.message(wire::model::kGraph);
    // Counted as messages: a field of another wire type under the number is no node or output.
    if (graph.repeated_bytes(wire::graph::kNode).empty()) refuse(source + ": not a valid ONNX model (no graph nodes)");
    const std::vector<Message> outputs = graph.repeated_messages(wire::graph::kOutput);
    if (outputs.empty()) refuse(source + ": not a valid ONNX model (graph has no outputs)");
    layout.ir_version = model.int64(wire::model::kIrVersion);
    for (const Message& op : model.repeated_messages(wire::model::kOpsetImport)) {
      if (default_domain(op.bytes(wire::opset::kDomain))) {
        layout.opset = std::max(layout.opset, op.int64(wire::opset::kVersion));
      }
    }
    if (check) check(layout.ir_version);

    std::set<std::string, std::less<>> seen;
    std::vector<std::string> float_names, all_names;
    std::size_t offset = 0;
    for (const std::string_view t : graph.repeated_bytes(wire::graph::kInitializer)) {
      const Message m(t);
      const std::string name(m.bytes(wire::tensor::kName));
      if (!seen.insert(name).second) refuse(source + ": duplicate initializer name " + quoted(name));
      all_names.push_back(name);
      if (m.scalar(wire::tensor::kDataLocation, 0) == wire::tensor::kExternal) {
        refuse(source + ": initializer " + quoted(name) +
               " stores its data in an external file, which is not supported");
      }
      if (m.int32(wire::tensor::kDataType) != wire::tensor::FLOAT) continue;
      float_names.push_back(name);
      if (!pattern->matches(name)) continue;
      const std::vector<float> values = float_tensor_values(t, source, initializer_label(m));
      layout.param_names.push_back(name);
      layout.param_shapes.push_back(dims_of(m, source, initializer_label(m)));
      layout.param_offsets.push_back(offset);
      offset += values.size();
      layout.parameters.insert(layout.parameters.end(), values.begin(), values.end());
    }
    if (float_names.empty()) {
      refuse(source + ": model has no float32 initializers to train (initializers: " + few(all_names) + ")");
    }
    if (layout.param_names.empty()) {
      refuse(source + ": no float32 initializer matches param_pattern " + python_repr(param_pattern) +
             " (float32 initializers: " + few(float_names) + ")");
    }

    std::vector<DeclaredValue> data_inputs;
    for (const Message& vi : graph.repeated_messages(wire::graph::kInput)) {
      if (seen.count(vi.bytes(wire::value_info::kName)) == 0) data_inputs.push_back(declared(vi));
    }
    if (data_inputs.empty()) refuse(source + ": model has no observation input");
    refuse_active_dropout(graph, source);
    layout.input = data_inputs[0];
    if (layout.input.has_shape && layout.input.dims.empty()) {
      refuse(source + ": observation input " + quoted(layout.input.name) +
             " is a scalar; expected shape (batch, ...)");
    }
    layout.output_name = std::string(outputs[0].bytes(wire::value_info::kName));
    pair_state(graph, std::vector<DeclaredValue>(data_inputs.begin() + 1, data_inputs.end()), layout);
  } catch (const wire::BadWire&) {
    refuse(source + ": not a valid ONNX model (the bytes do not parse as an ONNX ModelProto)");
  }
  return layout;
}

PolicyGraph onnx_policy_graph(std::string_view bytes, const OnnxLayout& layout) {
  const std::string& src = layout.source;
  PolicyGraph g;
  try {
    const Message graph = parse_model(bytes, src).message(wire::model::kGraph);

    // The observation input: [batch, *features], the features fixed.
    const DeclaredValue& input = layout.input;
    const std::string what = "observation input " + quoted(input.name);
    if (!input.has_shape) unsupported(src, what + " declares no shape; the native backend needs [batch, features...]");
    if (input.elem_type != wire::tensor::FLOAT) {
      unsupported(src, what + " has type " + onnx_data_type_name(input.elem_type) +
                           ", the native backend takes FLOAT observations");
    }
    std::vector<std::size_t> features;
    for (std::size_t i = 1; i < input.dims.size(); ++i) {
      if (input.dims[i] < 1) {
        const std::string name = input.dim_params[i].empty() ? "?" : quoted(input.dim_params[i]);
        unsupported(src, what + " has a symbolic or empty dimension " + std::to_string(i) + " (" + name +
                             "); the native backend needs fixed feature sizes");
      }
      features.push_back(static_cast<std::size_t>(input.dims[i]));
    }

    std::map<std::string, std::string, std::less<>> other_initializers;  // name -> data type
    const auto build = [&](auto&& add) {  // the core's refusals of a graph it cannot run
      try {
        add();
      } catch (const UnsupportedModel&) {
        throw;
      } catch (const std::invalid_argument& e) {
        unsupported(src, e.what());
      }
    };
    build([&] {
      g.add_input(input.name, features);
      for (std::size_t k = 0; k < layout.state_names.size(); ++k) {
        g.add_state_input(layout.state_names[k], layout.state_shapes[k], layout.state_axes[k]);
      }
    });
    std::size_t p = 0;
    for (const std::string_view t : graph.repeated_bytes(wire::graph::kInitializer)) {
      const Message m(t);
      const std::string name(m.bytes(wire::tensor::kName));
      const std::int64_t type = m.int32(wire::tensor::kDataType);
      if (p < layout.param_names.size() && name == layout.param_names[p]) {
        build([&] { g.add_param(name, layout.param_offsets[p], layout.param_shapes[p]); });
        ++p;
      } else if (type == wire::tensor::FLOAT) {
        std::vector<std::size_t> dims = dims_of(m, src, initializer_label(m));
        std::vector<float> values = float_tensor_values(t, src, initializer_label(m));
        build([&] { g.add_constant(name, dims, std::move(values)); });
      } else if (is_int_tensor_type(type)) {
        std::vector<std::size_t> dims = dims_of(m, src, initializer_label(m));
        std::vector<std::int64_t> values = int_tensor_values(t, src, initializer_label(m));
        build([&] { g.add_int_constant(name, dims, std::move(values)); });
      } else {
        other_initializers.emplace(name, onnx_data_type_name(type));
      }
    }

    const std::vector<Message> nodes = graph.repeated_messages(wire::graph::kNode);
    const auto& ops = PolicyGraph::supported_ops();
    for (std::size_t index = 0; index < nodes.size(); ++index) {
      const Message& node = nodes[index];
      const std::string label = node_label(node, static_cast<int>(index));
      const std::string op(node.bytes(wire::node::kOpType));
      const std::string_view domain = node.bytes(wire::node::kDomain);
      std::vector<std::string> inputs, outputs;
      for (const std::string_view s : node.repeated_bytes(wire::node::kInput)) inputs.emplace_back(s);
      for (const std::string_view s : node.repeated_bytes(wire::node::kOutput)) outputs.emplace_back(s);
      if (!default_domain(domain)) {
        unsupported(src, label + ": op " + std::string(domain) + "." + op + " is outside the default ONNX domain");
      }
      if (op == "Constant") {
        ConstantValue c = constant_value(node, label, src);
        if (outputs.size() != 1) {
          unsupported(src, label + ": expected 1 output, got " + std::to_string(outputs.size()));
        }
        build([&] {
          if (c.is_int) {
            g.add_int_constant(outputs[0], c.shape, std::move(c.ints));
          } else {
            g.add_constant(outputs[0], c.shape, std::move(c.values));
          }
        });
        continue;
      }
      if (std::find(ops.begin(), ops.end(), op) == ops.end()) {
        unsupported(src, label + ": op " + op + " is not supported (supported: " + supported_ops() + ")");
      }
      for (const std::string& in : inputs) {
        const auto it = other_initializers.find(in);
        if (it != other_initializers.end()) {
          unsupported(src, label + ": input " + quoted(in) + " is a " + it->second +
                               " initializer; the native backend computes on FLOAT tensors (and integer ones for "
                               "shapes) only");
        }
      }
      NodeAttributes attributes = node_attributes(node, label, src);
      // Before opset 13 Softmax's axis defaulted to 1 (and coerced to 2-D).
      if (op == "Softmax" && layout.opset < 13 && attributes.ints.count("axis") == 0) attributes.ints["axis"] = 1;
      const std::string name(node.bytes(wire::node::kName));
      try {
        g.add_node(op, inputs, outputs, attributes, name);
      } catch (const std::invalid_argument& e) {
        // PolicyGraph numbers unnamed nodes among its own nodes, which leave
        // out the Constants: name them by their index in the ONNX graph.
        std::string message = e.what();
        const std::string core_label = "node #" + std::to_string(g.num_nodes()) + " (" + op + ")";
        if (name.empty() && message.rfind(core_label, 0) == 0) message = label + message.substr(core_label.size());
        unsupported(src, message);
      }
    }
    const std::vector<Message> graph_outputs = graph.repeated_messages(wire::graph::kOutput);
    std::vector<std::size_t> one, two;  // the first output's shape for 1 and 2 observations
    build([&] {
      for (const Message& out : graph_outputs) g.add_output(std::string(out.bytes(wire::value_info::kName)));
      for (std::size_t k = 0; k < layout.state_names.size(); ++k) {
        g.add_state_output(layout.state_names[k], layout.state_output_names[k]);
      }
      one = g.output_shape(1);
      two = g.output_shape(2);
    });
    if (one.empty() || two.empty() || one[0] != 1 || two[0] != 2) {
      unsupported(src, "output " + quoted(layout.output_name) + " has shape " + format_shape(one) +
                           " for one observation: it does not start with the batch dimension");
    }
  } catch (const wire::BadWire&) {
    refuse(src + ": not a valid ONNX model (the bytes do not parse as an ONNX ModelProto)");
  }
  return g;
}

}  // namespace evokit::formats
