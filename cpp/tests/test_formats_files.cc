// formats/: the state-file trailer, solver.pb's layout and the fingerprint's
// reading of the ONNX wire format. The files themselves are tested against
// the committed fixtures of every kind (tests/fixtures/files, through
// Python and the C++ io library).
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "evokit/formats/fingerprint.h"
#include "evokit/formats/onnx_model.h"
#include "evokit/formats/solver_file.h"
#include "evokit/formats/state_file.h"
#include "test_util.h"

namespace evokit::formats {
namespace {

using evokit::testing::MessageOf;

std::string varint(std::uint64_t v) {
  std::string out;
  do {
    out += static_cast<char>((v & 0x7F) | (v > 0x7F ? 0x80 : 0));
    v >>= 7;
  } while (v != 0);
  return out;
}
std::string field(std::uint32_t number, const std::string& bytes) { return varint(number << 3 | 2) + varint(bytes.size()) + bytes; }
std::string field_varint(std::uint32_t number, std::uint64_t v) { return varint(number << 3) + varint(v); }

// A model with one initializer "w" of dims (2, 3), written with its dims
// packed or not, and its graph given whole or in two parts (protobuf merges).
std::string model(bool packed, bool split_graph) {
  const std::string dims = packed ? field(1, varint(2) + varint(3)) : field_varint(1, 2) + field_varint(1, 3);
  const std::string w = dims + field_varint(2, 1) + field(8, "w") + field(9, std::string(24, '\0'));
  const std::string node = field(1, "x") + field(1, "w") + field(2, "y") + field(4, "MatMul");
  const std::string part1 = field(1, node) + field(5, w);
  const std::string part2 = field(11, field(1, "x")) + field(12, field(1, "y"));
  const std::string opset = field(8, field(1, "") + field_varint(2, 17));
  return split_graph ? opset + field(7, part1) + field(7, part2) : opset + field(7, part1 + part2);
}

TEST(FormatsFingerprint, ReadsTheWireAsProtobufDoes) {
  const std::string a = model_fingerprint(model(false, false), {"w"}, "m");
  EXPECT_EQ(a.size(), 64u);
  EXPECT_EQ(model_fingerprint(model(true, false), {"w"}, "m"), a);
  EXPECT_EQ(model_fingerprint(model(false, true), {"w"}, "m"), a);
  EXPECT_NE(model_fingerprint(model(false, false), {}, "m"), a);  // w a fixed initializer, not a parameter
  EXPECT_EQ(MessageOf<std::invalid_argument>([] { model_fingerprint(model(false, false), {"v"}, "m"); }),
            "m: parameter 'v' is not an initializer");
  const std::string cut = model(false, false).substr(0, 20);
  EXPECT_EQ(MessageOf<std::invalid_argument>([&] { model_fingerprint(cut, {}, "m"); }),
            "m: not a valid ONNX model (the bytes do not parse as a protobuf message)");
}

// ---- ONNX policy models ------------------------------------------------------------

std::string fixed32(float v) {
  std::uint32_t bits;
  std::memcpy(&bits, &v, 4);
  std::string out;
  for (int i = 0; i < 4; ++i) out += static_cast<char>((bits >> (8 * i)) & 0xFF);
  return out;
}
// A FLOAT tensor value's type: (dims...), a negative one symbolic ("batch").
std::string float_type(const std::vector<int>& dims) {
  std::string shape;
  for (const int d : dims) shape += field(1, d < 0 ? field(2, "batch") : field_varint(1, static_cast<std::uint64_t>(d)));
  return field(1, field_varint(1, 1) + field(2, shape));
}
std::string value_info(const std::string& name, const std::vector<int>& dims) {
  return field(1, name) + field(2, float_type(dims));
}
std::string float_tensor(const std::string& name, const std::vector<int>& dims, const std::vector<float>& values) {
  std::string out, raw;
  for (const int d : dims) out += field_varint(1, static_cast<std::uint64_t>(d));
  for (const float v : values) raw += fixed32(v);
  return out + field_varint(2, 1) + field(8, name) + field(9, raw);
}
std::string node(const std::string& op, const std::vector<std::string>& in, const std::string& out,
                 const std::string& name = "") {
  std::string n;
  for (const std::string& i : in) n += field(1, i);
  return n + field(2, out) + (name.empty() ? "" : field(3, name)) + field(4, op);
}
// y = x @ w + b, x of shape (batch, 2); with `state`, an Identity carries h0 to hn.
std::string policy_model(const std::string& op = "MatMul", bool state = false, bool duplicate = false) {
  std::string graph = field(1, node(op, {"x", "w"}, "h")) + field(1, node("Add", {"h", "b"}, "y", "add")) +
                      field(5, float_tensor("w", {2, 3}, {1, 2, 3, 4, 5, 6})) +
                      field(5, float_tensor("b", {3}, {0.5f, 0.25f, 0.125f})) + field(11, value_info("x", {-1, 2})) +
                      field(12, value_info("y", {-1, 3}));
  if (state) {
    graph += field(1, node("Identity", {"h0"}, "hn")) + field(11, value_info("h0", {1, -1, 4})) +
             field(12, value_info("hn", {1, -1, 4}));
  }
  if (duplicate) graph += field(5, float_tensor("b", {1}, {0}));
  return field_varint(1, 8) + field(8, field(1, "") + field_varint(2, 17)) + field(7, graph);
}

TEST(FormatsOnnxModel, LayoutAndGraphFromTheWire) {
  const OnnxLayout layout = read_onnx_layout(policy_model(), "w", "m.onnx");
  EXPECT_EQ(layout.ir_version, 8);
  EXPECT_EQ(layout.opset, 17);
  EXPECT_EQ(layout.param_names, std::vector<std::string>{"w"});  // b: a constant, not matched
  EXPECT_EQ(layout.param_shapes, (std::vector<std::vector<std::size_t>>{{2, 3}}));
  EXPECT_EQ(layout.parameters, (std::vector<float>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(layout.input.name, "x");
  EXPECT_EQ(layout.input.dims, (std::vector<std::int64_t>{-1, 2}));
  EXPECT_EQ(layout.input.dim_params, (std::vector<std::string>{"batch", ""}));
  EXPECT_EQ(layout.output_name, "y");
  EXPECT_TRUE(layout.state_names.empty());
  const PolicyGraph g = onnx_policy_graph(policy_model(), layout);
  const std::vector<float> obs{1, 1}, params{1, 2, 3, 4, 5, 6};
  EXPECT_EQ(g.run(obs.data(), 1, params.data(), params.size()), (std::vector<float>{5.5f, 7.25f, 9.125f}));
  EXPECT_EQ(read_onnx_layout(policy_model(), ".*", "m.onnx").param_names, (std::vector<std::string>{"w", "b"}));
}

TEST(FormatsOnnxModel, StatePairsByNameWithItsBatchAxis) {
  const OnnxLayout layout = read_onnx_layout(policy_model("MatMul", true), ".*", "m.onnx");
  EXPECT_EQ(layout.state_names, std::vector<std::string>{"h0"});
  EXPECT_EQ(layout.state_output_names, std::vector<std::string>{"hn"});
  EXPECT_EQ(layout.state_shapes, (std::vector<std::vector<std::size_t>>{{1, 1, 4}}));
  EXPECT_EQ(layout.state_axes, std::vector<std::size_t>{1});
}

TEST(FormatsOnnxModel, RefusalsNameTheModelAndWhat) {
  bool checked = false;
  read_onnx_layout(policy_model(), ".*", "m.onnx", [&](std::int64_t ir) { checked = ir == 8; });
  EXPECT_TRUE(checked);
  EXPECT_EQ(MessageOf<std::invalid_argument>([] { read_onnx_layout(policy_model("MatMul", false, true), ".*", "m.onnx"); }),
            "m.onnx: duplicate initializer name 'b'");
  EXPECT_EQ(MessageOf<std::invalid_argument>([] { read_onnx_layout(policy_model(), "v", "m.onnx"); }),
            "m.onnx: no float32 initializer matches param_pattern 'v' (float32 initializers: 'w', 'b')");
  EXPECT_EQ(MessageOf<std::invalid_argument>([] { read_onnx_layout("", ".*", "m.onnx"); }),
            "m.onnx: not a valid ONNX model (no graph nodes)");
  // Outputs of another wire type under the outputs' field number are no outputs.
  const std::string varint_outputs = field(7, field(1, node("Relu", {"x"}, "y")) + field_varint(12, 1));
  EXPECT_EQ(MessageOf<std::invalid_argument>([&] { read_onnx_layout(varint_outputs, ".*", "m.onnx"); }),
            "m.onnx: not a valid ONNX model (graph has no outputs)");
  EXPECT_EQ(MessageOf<std::invalid_argument>([] { read_onnx_layout(policy_model().substr(0, 30), ".*", "m.onnx"); }),
            "m.onnx: not a valid ONNX model (the bytes do not parse as an ONNX ModelProto)");
  // The native backend cannot run it: UnsupportedModel, so that Python falls back to onnxruntime.
  const std::string sin = policy_model("Sin");
  const OnnxLayout layout = read_onnx_layout(sin, ".*", "m.onnx");
  const std::string message = MessageOf<UnsupportedModel>([&] { onnx_policy_graph(sin, layout); });
  EXPECT_EQ(message.rfind("m.onnx: native backend: node #0 (Sin): op Sin is not supported (supported: Gemm, ", 0), 0u)
      << message;
}

TEST(FormatsStateFile, TrailerSealsAndRefusesDamage) {
  const std::string sealed = seal_state("body");
  EXPECT_EQ(sealed.size(), 4 + kStateTrailerSize);
  EXPECT_TRUE(has_state_trailer(sealed));
  EXPECT_EQ(unseal_state("s.pb", sealed), "body");
  std::string damaged = sealed;
  damaged[0] = 'B';
  EXPECT_NE(MessageOf<std::invalid_argument>([&] { unseal_state("s.pb", damaged); })
                .find("s.pb: damaged: the sha256 of its first 4 bytes is "),
            std::string::npos);
  EXPECT_EQ(MessageOf<std::invalid_argument>([] { unseal_state("s.pb", ""); }),
            "s.pb: empty file, expected a state file ending with its sha256 trailer");
}

TEST(FormatsSolverFile, RoundTripsAndRefusesLayoutsItDoesNotRead) {
  SolverState s;
  s.family = "GAUSSIAN_SAMPLING";
  s.model_iter_id = 3;
  s.noise_version = 4;
  s.floats["optimizer.m"] = {1.0f, -2.0f};
  s.ints["draws.counters"] = {5};
  const StoredSolverState stored = encode_solver_state(s);
  ASSERT_EQ(stored.vectors.size(), 2u);
  EXPECT_EQ(stored.vectors[0].data, std::string("\x00\x00\x80\x3f\x00\x00\x00\xc0", 8));
  const SolverState back = decode_solver_state(stored, "s.pb");
  EXPECT_EQ(back.floats.at("optimizer.m"), s.floats.at("optimizer.m"));
  EXPECT_EQ(back.ints.at("draws.counters"), s.ints.at("draws.counters"));
  EXPECT_EQ(back.model_iter_id, 3);

  StoredSolverState bad = stored;
  bad.vectors.push_back(bad.vectors[0]);
  EXPECT_EQ(MessageOf<std::invalid_argument>([&] { decode_solver_state(bad, "s.pb"); }),
            "s.pb: state vector 'optimizer.m' appears twice");
  bad = stored;
  bad.vectors[0].type.reset();
  EXPECT_EQ(MessageOf<std::invalid_argument>([&] { decode_solver_state(bad, "s.pb"); }),
            "s.pb: state vector 'optimizer.m' has no element type this EvoKit knows (FLOAT32, FLOAT64, INT64): "
            "a newer EvoKit wrote it?");
  bad = stored;
  bad.state_version = 3;
  EXPECT_EQ(MessageOf<std::invalid_argument>([&] { decode_solver_state(bad, "s.pb"); }),
            "s.pb: solver state version 3, this EvoKit reads versions 1 and 2 (a newer EvoKit wrote it)");
}

}  // namespace
}  // namespace evokit::formats
