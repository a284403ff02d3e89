// The fingerprint (formats/fingerprint.h) over ONNX's wire format (wire.h);
// an enum value the schema does not know reads as the default, as proto2's
// closed enums do.
#include "evokit/formats/fingerprint.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>

#include "evokit/formats/config.h"  // python_repr
#include "evokit/formats/sha256.h"
#include "wire.h"

namespace evokit::formats {

namespace {

using namespace wire;  // NOLINT: the reader and ONNX's field numbers

std::string domain_of(std::string_view domain) {
  return domain.empty() || domain == "ai.onnx" ? std::string("ai.onnx") : std::string(domain);
}

// ---- the encoding ---------------------------------------------------------------------

constexpr std::string_view kMagic{"evokit-model-fingerprint-v2\0", 28};

class Encoder {
 public:
  Encoder() { hash_.update(kMagic); }
  std::string hex_digest() { return hash_.hex_digest(); }

  void put_int(std::int64_t v) {
    const auto u = static_cast<std::uint64_t>(v);
    unsigned char b[8];
    for (int i = 0; i < 8; ++i) b[i] = static_cast<unsigned char>(u >> (8 * i));
    hash_.update(b, 8);
  }
  void put_bytes(std::string_view s) {
    put_int(static_cast<std::int64_t>(s.size()));
    hash_.update(s);
  }
  void put_strs(const std::vector<std::string_view>& items) {
    put_int(static_cast<std::int64_t>(items.size()));
    for (const auto& s : items) put_bytes(s);
  }
  void put_ints(const std::vector<std::uint64_t>& items) {
    put_int(static_cast<std::int64_t>(items.size()));
    for (const std::uint64_t v : items) put_int(static_cast<std::int64_t>(v));
  }
  // The low `width` bytes of each value, little-endian, as one bytes value.
  void put_le(const std::vector<std::uint64_t>& values, int width) {
    std::string out;
    out.reserve(values.size() * static_cast<std::size_t>(width));
    for (const std::uint64_t u : values) {
      for (int i = 0; i < width; ++i) out += static_cast<char>((u >> (8 * i)) & 0xFFu);
    }
    put_bytes(out);
  }

  void tensor(const Message& t, const std::string& where) {
    using namespace tensor;
    const std::string_view name = t.bytes(kName);
    const std::int64_t type = t.int32(kDataType);
    put_bytes(name);
    put_int(type);
    put_ints(t.repeated_scalars(kDims, 0));
    if (t.scalar(kDataLocation, 0) == kExternal) {
      refuse(where + ": tensor " + quoted(name) + " keeps its data in an external file");
    }
    if (type == STRING) return put_strs(t.repeated_bytes(kStringData));
    if (t.has(kRawData)) return put_bytes(t.bytes(kRawData));
    switch (type) {
      case FLOAT:
      case COMPLEX64:
        return put_le(t.repeated_scalars(kFloatData, 5), 4);
      case DOUBLE:
      case COMPLEX128:
        return put_le(t.repeated_scalars(kDoubleData, 1), 8);
      case INT32:
        return put_le(t.repeated_scalars(kInt32Data, 0), 4);
      case INT16:
      case UINT16:
      case FLOAT16:
      case BFLOAT16:
        return put_le(t.repeated_scalars(kInt32Data, 0), 2);
      case INT8:
      case UINT8:
      case BOOL:
        return put_le(t.repeated_scalars(kInt32Data, 0), 1);
      case INT64:
        return put_le(t.repeated_scalars(kInt64Data, 0), 8);
      case UINT32:
        return put_le(t.repeated_scalars(kUint64Data, 0), 4);
      case UINT64:
        return put_le(t.repeated_scalars(kUint64Data, 0), 8);
      default:
        break;
    }
    for (const std::uint32_t f : {kFloatData, kDoubleData, kInt32Data, kInt64Data, kUint64Data, kStringData}) {
      if (t.has(f)) {
        refuse(where + ": tensor " + quoted(name) + " of data type " + std::to_string(type) +
               " stores typed data the fingerprint cannot read (use raw_data)");
      }
    }
    put_bytes("");
  }

  void value_info(const Message& vi, const std::string& where) {
    const std::string_view name = vi.bytes(value_info::kName);
    put_bytes(name);
    using namespace type_proto;
    const Message type = vi.message(value_info::kType);
    const std::uint32_t which = vi.has(value_info::kType)
                                    ? type.which({kTensorType, kSequenceType, kMapType, kOpaqueType, kSparseTensorType,
                                                  kOptionalType})
                                    : 0;
    if (which == 0) return put_int(0);
    if (which != kTensorType) {
      static const std::map<std::uint32_t, const char*> kNames = {{kSequenceType, "sequence_type"},
                                                                   {kMapType, "map_type"},
                                                                   {kOpaqueType, "opaque_type"},
                                                                   {kSparseTensorType, "sparse_tensor_type"},
                                                                   {kOptionalType, "optional_type"}};
      refuse(where + ": value " + quoted(name) + " has type " + kNames.at(which) +
             "; the fingerprint covers tensor types only");
    }
    const Message tt = type.message(kTensorType);
    put_int(1);
    put_int(tt.int32(tensor_type::kElemType));
    if (!tt.has(tensor_type::kShape)) return put_int(0);
    put_int(1);
    const std::vector<Message> dims = tt.message(tensor_type::kShape).repeated_messages(shape::kDim);
    put_int(static_cast<std::int64_t>(dims.size()));
    for (const Message& d : dims) {
      switch (d.which({dim::kValue, dim::kParam})) {
        case dim::kValue:
          put_int(1);
          put_int(d.int64(dim::kValue));
          break;
        case dim::kParam:
          put_int(2);
          put_bytes(d.bytes(dim::kParam));
          break;
        default:
          put_int(0);
      }
    }
  }

  void attribute(const Message& a, const std::string& where) {
    using namespace attr;
    const std::string_view name = a.bytes(kName);
    std::uint64_t type = a.scalar(kType, 0);
    if (type > TYPE_PROTOS) type = UNDEFINED;  // a value the closed enum does not know
    put_bytes(name);
    put_int(static_cast<std::int64_t>(type));
    switch (type) {
      case FLOAT: {
        const std::uint64_t bits = a.scalar(kF, 5);
        const unsigned char b[4] = {static_cast<unsigned char>(bits), static_cast<unsigned char>(bits >> 8),
                                    static_cast<unsigned char>(bits >> 16), static_cast<unsigned char>(bits >> 24)};
        hash_.update(b, 4);
        return;
      }
      case INT:
        return put_int(a.int64(kI));
      case STRING:
        return put_bytes(a.bytes(kS));
      case TENSOR:
        return tensor(a.message(kT), where);
      case GRAPH:
        return graph(a.message(kG), {}, where);
      case FLOATS:
        return put_le(a.repeated_scalars(kFloats, 5), 4);
      case INTS:
        return put_ints(a.repeated_scalars(kInts, 0));
      case STRINGS:
        return put_strs(a.repeated_bytes(kStrings));
      case TENSORS: {
        const std::vector<Message> tensors = a.repeated_messages(kTensors);
        put_int(static_cast<std::int64_t>(tensors.size()));
        for (const Message& t : tensors) tensor(t, where);
        return;
      }
      case GRAPHS: {
        const std::vector<Message> graphs = a.repeated_messages(kGraphs);
        put_int(static_cast<std::int64_t>(graphs.size()));
        for (const Message& g : graphs) graph(g, {}, where);
        return;
      }
      default:
        break;
    }
    refuse(where + ": attribute " + quoted(name) + " has type " + kTypeNames[type] +
           "; the fingerprint covers FLOAT(S), INT(S), STRING(S), TENSOR(S), GRAPH(S)");
  }

  // `params`: (name, dims) of the parameters, empty for subgraphs.
  void graph(const Message& g, const std::vector<std::pair<std::string, std::vector<std::uint64_t>>>& params,
             const std::string& where) {
    if (g.has(graph::kSparseInitializer)) {
      refuse(where + ": graph " + quoted(g.bytes(graph::kName)) +
             " has sparse initializers; the fingerprint does not cover them");
    }
    const std::vector<Message> nodes = g.repeated_messages(graph::kNode);
    put_int(static_cast<std::int64_t>(nodes.size()));
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      const Message& n = nodes[i];
      const std::string_view op_type = n.bytes(node::kOpType);
      const std::string at = where + ": node " + std::to_string(i) + " (" + std::string(op_type) + " " +
                             quoted(n.bytes(node::kName)) + ")";
      put_bytes(op_type);
      put_bytes(domain_of(n.bytes(node::kDomain)));
      put_strs(n.repeated_bytes(node::kInput));
      put_strs(n.repeated_bytes(node::kOutput));
      std::vector<Message> attrs = n.repeated_messages(node::kAttribute);
      std::stable_sort(attrs.begin(), attrs.end(), [](const Message& x, const Message& y) {
        return x.bytes(attr::kName) < y.bytes(attr::kName);
      });
      put_int(static_cast<std::int64_t>(attrs.size()));
      for (const Message& a : attrs) attribute(a, at);
    }
    const std::vector<Message> initializers = g.repeated_messages(graph::kInitializer);
    std::set<std::string_view> init_names;
    for (const Message& t : initializers) init_names.insert(t.bytes(tensor::kName));
    std::vector<Message> inputs;
    for (Message& vi : g.repeated_messages(graph::kInput)) {
      if (init_names.count(vi.bytes(value_info::kName)) == 0) inputs.push_back(std::move(vi));
    }
    put_int(static_cast<std::int64_t>(inputs.size()));
    for (const Message& vi : inputs) value_info(vi, where);
    put_int(static_cast<std::int64_t>(params.size()));
    std::set<std::string_view> param_names;
    for (const auto& [name, dims] : params) {
      put_bytes(name);
      put_ints(dims);
      param_names.insert(name);
    }
    std::vector<const Message*> fixed;
    for (const Message& t : initializers) {
      if (param_names.count(t.bytes(tensor::kName)) == 0) fixed.push_back(&t);
    }
    put_int(static_cast<std::int64_t>(fixed.size()));
    for (const Message* t : fixed) tensor(*t, where);
    const std::vector<Message> outputs = g.repeated_messages(graph::kOutput);
    put_int(static_cast<std::int64_t>(outputs.size()));
    for (const Message& vi : outputs) value_info(vi, where);
  }

  [[noreturn]] static void refuse(const std::string& message) { throw std::invalid_argument(message); }
  static std::string quoted(std::string_view s) { return python_repr(std::string(s)); }

 private:
  Sha256 hash_;
};

}  // namespace

std::string model_fingerprint(std::string_view model_bytes, const std::vector<std::string>& param_names,
                              const std::string& source) {
  try {
    const Message model(model_bytes);
    Encoder enc;
    std::vector<std::pair<std::string, std::int64_t>> opsets;
    for (const Message& o : model.repeated_messages(model::kOpsetImport)) {
      opsets.emplace_back(domain_of(o.bytes(opset::kDomain)), o.int64(opset::kVersion));
    }
    std::sort(opsets.begin(), opsets.end());
    enc.put_int(static_cast<std::int64_t>(opsets.size()));
    for (const auto& [domain, version] : opsets) {
      enc.put_bytes(domain);
      enc.put_int(version);
    }
    const Message graph = model.message(model::kGraph);
    std::map<std::string_view, std::vector<std::uint64_t>> dims_of;  // the last initializer of a name
    for (const Message& t : graph.repeated_messages(graph::kInitializer)) {
      dims_of[t.bytes(tensor::kName)] = t.repeated_scalars(tensor::kDims, 0);
    }
    std::vector<std::pair<std::string, std::vector<std::uint64_t>>> params;
    for (const std::string& name : param_names) {
      const auto it = dims_of.find(name);
      if (it == dims_of.end()) {
        throw std::invalid_argument(source + ": parameter " + python_repr(name) + " is not an initializer");
      }
      params.emplace_back(name, it->second);
    }
    enc.graph(graph, params, source);
    return enc.hex_digest();
  } catch (const BadWire&) {
    throw std::invalid_argument(source + ": not a valid ONNX model (the bytes do not parse as a protobuf message)");
  }
}

std::string params_fingerprint(const std::string& model_fingerprint, const float* params, std::size_t n) {
  Sha256 h;
  h.update(model_fingerprint);
  std::string bytes(4 * n, '\0');
  for (std::size_t i = 0; i < n; ++i) {
    std::uint32_t u;
    std::memcpy(&u, &params[i], 4);
    for (int k = 0; k < 4; ++k) bytes[4 * i + static_cast<std::size_t>(k)] = static_cast<char>((u >> (8 * k)) & 0xFF);
  }
  h.update(bytes);
  return h.hex_digest();
}

}  // namespace evokit::formats
