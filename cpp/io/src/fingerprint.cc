#include "evokit/io/fingerprint.h"

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <unordered_set>
#include <utility>

#include "evokit/io/errors.h"
#include "evokit/io/sha256.h"
#include "evokit/io/solver_state.h"

namespace evokit::io {

namespace {

using onnx::AttributeProto;
using onnx::GraphProto;
using onnx::TensorProto;
using onnx::ValueInfoProto;

constexpr std::string_view kMagic{"evokit-model-fingerprint-v2\0", 28};

std::string domain_of(const std::string& domain) { return domain.empty() ? "ai.onnx" : domain; }

// Appends the primitives of the encoding (proto/evokit.proto) to a hash.
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
  template <class Strings>
  void put_strs(const Strings& items) {
    put_int(static_cast<std::int64_t>(items.size()));
    for (const auto& s : items) put_bytes(s);
  }
  template <class Ints>
  void put_ints(const Ints& items) {
    put_int(static_cast<std::int64_t>(items.size()));
    for (const auto v : items) put_int(static_cast<std::int64_t>(v));
  }
  // Little-endian values of `width` bytes (the low bytes of each value).
  template <class Values>
  void put_le(const Values& values, int width) {
    std::string out;
    out.reserve(values.size() * static_cast<std::size_t>(width));
    for (const auto v : values) {
      std::uint64_t u;
      if constexpr (sizeof(v) == 8) {
        std::memcpy(&u, &v, 8);
      } else {
        std::uint32_t w;
        static_assert(sizeof(v) == 4);
        std::memcpy(&w, &v, 4);
        u = w;
      }
      for (int i = 0; i < width; ++i) out += static_cast<char>((u >> (8 * i)) & 0xFFu);
    }
    put_bytes(out);
  }

  void tensor(const TensorProto& t, const std::string& where) {
    put_bytes(t.name());
    put_int(t.data_type());
    put_ints(t.dims());
    if (t.data_location() == TensorProto::EXTERNAL) {
      throw ModelError(where + ": tensor '" + t.name() + "' keeps its data in an external file");
    }
    if (t.data_type() == TensorProto::STRING) {
      put_strs(t.string_data());
      return;
    }
    if (t.has_raw_data()) {
      put_bytes(t.raw_data());
      return;
    }
    switch (t.data_type()) {
      case TensorProto::FLOAT:
      case TensorProto::COMPLEX64:
        return put_le(t.float_data(), 4);
      case TensorProto::DOUBLE:
      case TensorProto::COMPLEX128:
        return put_le(t.double_data(), 8);
      case TensorProto::INT32:
        return put_le(t.int32_data(), 4);
      case TensorProto::INT16:
      case TensorProto::UINT16:
      case TensorProto::FLOAT16:
      case TensorProto::BFLOAT16:
        return put_le(t.int32_data(), 2);
      case TensorProto::INT8:
      case TensorProto::UINT8:
      case TensorProto::BOOL:
        return put_le(t.int32_data(), 1);
      case TensorProto::INT64:
        return put_le(t.int64_data(), 8);
      case TensorProto::UINT32:
        return put_le(t.uint64_data(), 4);
      case TensorProto::UINT64:
        return put_le(t.uint64_data(), 8);
      default:
        break;
    }
    if (t.float_data_size() + t.double_data_size() + t.int32_data_size() + t.int64_data_size() +
            t.uint64_data_size() + t.string_data_size() >
        0) {
      throw ModelError(where + ": tensor '" + t.name() + "' of data type " +
                       std::to_string(t.data_type()) +
                       " stores typed data the fingerprint cannot read (use raw_data)");
    }
    put_bytes("");
  }

  void value_info(const ValueInfoProto& vi, const std::string& where) {
    put_bytes(vi.name());
    if (!vi.has_type() || vi.type().value_case() == onnx::TypeProto::VALUE_NOT_SET) {
      put_int(0);
      return;
    }
    if (vi.type().value_case() != onnx::TypeProto::kTensorType) {
      throw ModelError(where + ": value '" + vi.name() +
                       "' has a non-tensor type; the fingerprint covers tensor types only");
    }
    const auto& tt = vi.type().tensor_type();
    put_int(1);
    put_int(tt.elem_type());
    if (!tt.has_shape()) {
      put_int(0);
      return;
    }
    put_int(1);
    put_int(tt.shape().dim_size());
    for (const auto& d : tt.shape().dim()) {
      if (d.value_case() == onnx::TensorShapeProto::Dimension::kDimValue) {
        put_int(1);
        put_int(d.dim_value());
      } else if (d.value_case() == onnx::TensorShapeProto::Dimension::kDimParam) {
        put_int(2);
        put_bytes(d.dim_param());
      } else {
        put_int(0);
      }
    }
  }

  void attribute(const AttributeProto& a, const std::string& where) {
    put_bytes(a.name());
    put_int(a.type());
    switch (a.type()) {
      case AttributeProto::FLOAT: {
        const float f = a.f();
        std::uint32_t u;
        std::memcpy(&u, &f, 4);
        const unsigned char b[4] = {static_cast<unsigned char>(u), static_cast<unsigned char>(u >> 8),
                                    static_cast<unsigned char>(u >> 16),
                                    static_cast<unsigned char>(u >> 24)};
        hash_.update(b, 4);
        return;
      }
      case AttributeProto::INT:
        return put_int(a.i());
      case AttributeProto::STRING:
        return put_bytes(a.s());
      case AttributeProto::TENSOR:
        return tensor(a.t(), where);
      case AttributeProto::GRAPH:
        return graph(a.g(), {}, where);
      case AttributeProto::FLOATS:
        return put_le(a.floats(), 4);
      case AttributeProto::INTS:
        return put_ints(a.ints());
      case AttributeProto::STRINGS:
        return put_strs(a.strings());
      case AttributeProto::TENSORS:
        put_int(a.tensors_size());
        for (const auto& t : a.tensors()) tensor(t, where);
        return;
      case AttributeProto::GRAPHS:
        put_int(a.graphs_size());
        for (const auto& g : a.graphs()) graph(g, {}, where);
        return;
      default:
        break;
    }
    const std::string type = AttributeProto::AttributeType_IsValid(a.type())
                                 ? AttributeProto::AttributeType_Name(a.type())
                                 : std::to_string(a.type());
    throw ModelError(where + ": attribute '" + a.name() + "' has type " + type +
                     "; the fingerprint covers FLOAT(S), INT(S), STRING(S), TENSOR(S), GRAPH(S)");
  }

  // `params`: (name, dims) of the parameters, empty for subgraphs.
  void graph(const GraphProto& g,
             const std::vector<std::pair<std::string, std::vector<std::int64_t>>>& params,
             const std::string& where) {
    if (g.sparse_initializer_size() > 0) {
      throw ModelError(where + ": graph '" + g.name() +
                       "' has sparse initializers; the fingerprint does not cover them");
    }
    put_int(g.node_size());
    for (int i = 0; i < g.node_size(); ++i) {
      const onnx::NodeProto& node = g.node(i);
      const std::string at =
          where + ": node " + std::to_string(i) + " (" + node.op_type() + " '" + node.name() + "')";
      put_bytes(node.op_type());
      put_bytes(domain_of(node.domain()));
      put_strs(node.input());
      put_strs(node.output());
      std::vector<const AttributeProto*> attrs;
      for (const auto& a : node.attribute()) attrs.push_back(&a);
      std::sort(attrs.begin(), attrs.end(),
                [](const AttributeProto* x, const AttributeProto* y) { return x->name() < y->name(); });
      put_int(static_cast<std::int64_t>(attrs.size()));
      for (const AttributeProto* a : attrs) attribute(*a, at);
    }
    std::unordered_set<std::string> init_names;
    for (const auto& t : g.initializer()) init_names.insert(t.name());
    std::vector<const ValueInfoProto*> inputs;
    for (const auto& vi : g.input()) {
      if (init_names.count(vi.name()) == 0) inputs.push_back(&vi);
    }
    put_int(static_cast<std::int64_t>(inputs.size()));
    for (const ValueInfoProto* vi : inputs) value_info(*vi, where);
    put_int(static_cast<std::int64_t>(params.size()));
    std::unordered_set<std::string> param_names;
    for (const auto& [name, dims] : params) {
      put_bytes(name);
      put_ints(dims);
      param_names.insert(name);
    }
    std::vector<const TensorProto*> fixed;
    for (const auto& t : g.initializer()) {
      if (param_names.count(t.name()) == 0) fixed.push_back(&t);
    }
    put_int(static_cast<std::int64_t>(fixed.size()));
    for (const TensorProto* t : fixed) tensor(*t, where);
    put_int(g.output_size());
    for (const auto& vi : g.output()) value_info(vi, where);
  }

 private:
  Sha256 hash_;
};

}  // namespace

std::string model_fingerprint(const OnnxModel& model) {
  const onnx::ModelProto& proto = model.proto();
  Encoder enc;
  std::vector<std::pair<std::string, std::int64_t>> opsets;
  for (const auto& o : proto.opset_import()) opsets.emplace_back(domain_of(o.domain()), o.version());
  std::sort(opsets.begin(), opsets.end());
  enc.put_int(static_cast<std::int64_t>(opsets.size()));
  for (const auto& [domain, version] : opsets) {
    enc.put_bytes(domain);
    enc.put_int(version);
  }
  std::vector<std::pair<std::string, std::vector<std::int64_t>>> params;
  for (std::size_t i = 0; i < model.param_names().size(); ++i) {
    const auto& shape = model.param_shapes()[i];
    params.emplace_back(model.param_names()[i],
                        std::vector<std::int64_t>(shape.begin(), shape.end()));
  }
  enc.graph(proto.graph(), params, model.source());
  return enc.hex_digest();
}

std::string params_fingerprint(const std::string& model_fingerprint,
                               const std::vector<float>& params) {
  Sha256 h;
  h.update(model_fingerprint);
  h.update(encode_floats(params));
  return h.hex_digest();
}

}  // namespace evokit::io
