#include "evokit/io/onnx_model.h"

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "evokit/io/errors.h"
#include "evokit/io/es_agent.h"
#include "io_test_util.h"

namespace evokit::io {
namespace {

using testing::data_path;
using testing::expected_floats;
using testing::TempDir;

void ExpectClose(const std::vector<float>& actual, const std::vector<float>& expected,
                 float tol = 2e-6f) {
  ASSERT_EQ(actual.size(), expected.size());
  for (std::size_t i = 0; i < actual.size(); ++i) {
    EXPECT_NEAR(actual[i], expected[i], tol) << "at index " << i;
  }
}

std::vector<float> run(const OnnxModel& model, const std::vector<float>& obs,
                       const std::vector<float>& params) {
  const PolicyGraph g = model.graph();
  return g.run(obs.data(), obs.size() / g.obs_size(), params.data(), params.size());
}

// A small model built in code: obs [batch, 2] -> op chain -> "y".
struct Builder {
  onnx::ModelProto model;
  onnx::GraphProto* graph;

  explicit Builder(std::int64_t ir_version = 8, std::int64_t opset = 17) {
    model.set_ir_version(ir_version);
    model.set_producer_name("evokit-test");
    auto* op = model.add_opset_import();
    op->set_domain("");
    op->set_version(opset);
    graph = model.mutable_graph();
    graph->set_name("g");
    add_value(graph->add_input(), "obs", 2);
  }
  static void add_value(onnx::ValueInfoProto* vi, const std::string& name, std::int64_t n,
                        int elem_type = onnx::TensorProto::FLOAT) {
    vi->set_name(name);
    auto* t = vi->mutable_type()->mutable_tensor_type();
    t->set_elem_type(elem_type);
    t->mutable_shape()->add_dim()->set_dim_param("batch");
    t->mutable_shape()->add_dim()->set_dim_value(n);
  }
  onnx::TensorProto* init(const std::string& name, std::vector<std::int64_t> dims,
                          const std::vector<float>& values, bool raw = false) {
    auto* t = graph->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    for (auto d : dims) t->add_dims(d);
    if (raw) {
      t->set_raw_data(std::string(reinterpret_cast<const char*>(values.data()),
                                  values.size() * sizeof(float)));
    } else {
      for (float v : values) t->add_float_data(v);
    }
    return t;
  }
  onnx::NodeProto* node(const std::string& op, std::vector<std::string> in,
                        const std::string& out, const std::string& name = "") {
    auto* n = graph->add_node();
    n->set_op_type(op);
    n->set_name(name);
    for (const auto& i : in) n->add_input(i);
    n->add_output(out);
    return n;
  }
  onnx::NodeProto* constant(const std::string& out, const std::string& name = "") {
    return node("Constant", {}, out, name);
  }
  static onnx::AttributeProto* attribute(onnx::NodeProto* n, const std::string& name,
                                         onnx::AttributeProto::AttributeType type) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(type);
    return a;
  }
  void output(const std::string& name, std::int64_t n) { add_value(graph->add_output(), name, n); }
  OnnxModel load(const std::string& pattern = ".*") const {
    return OnnxModel::from_bytes(model.SerializeAsString(), pattern, "test.onnx");
  }
};

TEST(OnnxModel, LoadsTheModelEvokitInitModelWrites) {
  const OnnxModel m = OnnxModel::load(data_path("cartpole_h8.onnx"));
  EXPECT_EQ(m.ir_version(), 8);
  EXPECT_EQ(m.opset(), 17);
  EXPECT_EQ(m.input_name(), "obs");
  EXPECT_EQ(m.output_name(), "action");
  EXPECT_EQ(m.num_params(), 4u * 8 + 8 + 8 * 2 + 2);
  ASSERT_EQ(m.param_names().size(), 4u);
  EXPECT_EQ(m.param_offsets(), (std::vector<std::size_t>{0, 32, 40, 56}));
  EXPECT_EQ(m.param_shapes()[0], (std::vector<std::size_t>{4, 8}));  // Gemm weight (in, out)
  const PolicyGraph g = m.graph();
  EXPECT_EQ(g.obs_size(), 4u);
  EXPECT_EQ(g.num_params(), m.num_params());
  EXPECT_EQ(g.output_shape(3), (std::vector<std::size_t>{3, 2}));
}

TEST(OnnxModel, NativeForwardPassMatchesOnnxruntime) {
  const std::vector<float> obs = expected_floats("obs");
  const OnnxModel m = OnnxModel::load(data_path("cartpole_h8.onnx"));
  ExpectClose(run(m, obs, m.parameters()), expected_floats("predict"));
  // A model exported by PyTorch (Gemm transB=1, Relu, Tanh).
  const OnnxModel torch =
      OnnxModel::load(std::string(EVOKIT_SOURCE_DIR) + "/tests/fixtures/torch_mlp.onnx");
  ExpectClose(run(torch, obs, torch.parameters()), expected_floats("torch_predict"), 1e-5f);
}

TEST(OnnxModel, ParamPatternSelectsParameters) {
  const OnnxModel all = OnnxModel::load(data_path("cartpole_h8.onnx"));
  const OnnxModel weights = OnnxModel::load(data_path("cartpole_h8.onnx"), ".*weight");
  EXPECT_EQ(weights.num_params(), 4u * 8 + 8 * 2);
  for (const std::string& name : weights.param_names()) {
    EXPECT_NE(name.find("weight"), std::string::npos) << name;
  }
  // The biases became constants: the same function of the observation.
  const std::vector<float> obs = expected_floats("obs");
  ExpectClose(run(weights, obs, weights.parameters()), run(all, obs, all.parameters()), 0.0f);
  // A full match: "weight" alone matches nothing.
  EXPECT_THROW_WITH(OnnxModel::load(data_path("cartpole_h8.onnx"), "weight"), ModelError,
                    "no float32 initializer matches param_pattern 'weight' (float32 "
                    "initializers: ");
  EXPECT_THROW_WITH(OnnxModel::load(data_path("cartpole_h8.onnx"), "("), ModelError,
                    "invalid param_pattern '('");
}

TEST(OnnxModel, ReadsFloatDataAndRawData) {
  Builder b;
  b.init("W", {2, 3}, {1, 2, 3, 4, 5, 6}, /*raw=*/false);
  b.init("bias", {3}, {0.5f, -0.5f, 1}, /*raw=*/true);
  b.node("MatMul", {"obs", "W"}, "h", "mm");
  b.node("Add", {"h", "bias"}, "y", "add");
  b.output("y", 3);
  const OnnxModel m = b.load();
  EXPECT_EQ(m.parameters(), (std::vector<float>{1, 2, 3, 4, 5, 6, 0.5f, -0.5f, 1}));
  // [1, -1] x W = [-3, -3, -3]; + bias
  ExpectClose(run(m, {1, -1}, m.parameters()), {-2.5f, -3.5f, -2});
}

TEST(OnnxModel, SaveReplacesTheParametersOnly) {
  TempDir dir;
  const OnnxModel m = OnnxModel::load(data_path("cartpole_h8.onnx"));
  std::vector<float> params = m.parameters();
  for (float& p : params) p = p * 2 + 1;
  const std::string path = dir.file("sub/model.onnx");  // parent created
  m.save(path, params);
  const OnnxModel back = OnnxModel::load(path);
  EXPECT_TRUE(evokit::testing::SameBits(back.parameters(), params));
  EXPECT_EQ(back.param_names(), m.param_names());
  // Everything but the initializers' data is the original model.
  onnx::ModelProto a = m.proto(), c = back.proto();
  a.mutable_graph()->clear_initializer();
  c.mutable_graph()->clear_initializer();
  EXPECT_EQ(a.SerializeAsString(), c.SerializeAsString());
  // No temporary file is left behind.
  std::size_t files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir.file("sub"))) {
    (void)e;
    ++files;
  }
  EXPECT_EQ(files, 1u);
  // Saving over an existing file replaces it.
  m.save(path, m.parameters());
  EXPECT_TRUE(evokit::testing::SameBits(OnnxModel::load(path).parameters(), m.parameters()));
}

TEST(OnnxModel, SaveChecksItsArguments) {
  TempDir dir;
  const OnnxModel m = OnnxModel::load(data_path("cartpole_h8.onnx"));
  EXPECT_THROW_WITH(m.save(dir.file("m.onnx"), std::vector<float>(3)), std::invalid_argument,
                    "params holds 3 values, the model has num_params = 58");
  EXPECT_THROW_WITH(m.save(dir.path(), m.parameters()), ModelError, "is a directory");
}

TEST(OnnxModelErrors, BadFiles) {
  TempDir dir;
  EXPECT_THROW_WITH(OnnxModel::load(dir.file("none.onnx")), ModelError,
                    "none.onnx: no such file");
  EXPECT_THROW_WITH(OnnxModel::load(dir.path()), ModelError, ": is a directory");
  testing::write_bytes(dir.file("junk.onnx"), "this is not a model \xff\xfe");
  EXPECT_THROW_WITH(OnnxModel::load(dir.file("junk.onnx")), ModelError,
                    "junk.onnx: not a valid ONNX model");
  // A truncated copy of a good model.
  const std::string good = testing::read_bytes(data_path("cartpole_h8.onnx"));
  testing::write_bytes(dir.file("cut.onnx"), good.substr(0, good.size() / 2));
  EXPECT_THROW_WITH(OnnxModel::load(dir.file("cut.onnx")), ModelError, "cut.onnx: ");
  testing::write_bytes(dir.file("empty.onnx"), "");
  EXPECT_THROW_WITH(OnnxModel::load(dir.file("empty.onnx")), ModelError,
                    "empty.onnx: not a valid ONNX model");
}

TEST(OnnxModelErrors, UnsupportedOpNamesOpAndNode) {
  Builder b;
  b.init("W", {2, 2}, {1, 0, 0, 1});
  b.node("MatMul", {"obs", "W"}, "h", "mm");
  b.node("Sin", {"h"}, "y", "sin");
  b.output("y", 2);
  const OnnxModel m = b.load();  // loading is fine: only graph() runs it
  EXPECT_THROW_WITH(m.graph(), ModelError, "test.onnx: native backend: node 'sin' (Sin): op Sin is not supported (supported: Gemm, ");
}

TEST(OnnxModelErrors, DropoutInTrainingModeIsRefusedAtLoad) {
  // PyTorch's exports in training mode (tests/fixtures/torch_ops): refused
  // by load(), naming the node, as by Python's OnnxPolicy on both backends.
  const std::string dir = std::string(EVOKIT_SOURCE_DIR) + "/tests/fixtures/torch_ops/";
  EXPECT_THROW_WITH(OnnxModel::load(dir + "dropout_train-opset17.onnx"), ModelError,
                    dir + "dropout_train-opset17.onnx: node '/2/Dropout' (Dropout): dropout is "
                    "active (training_mode true, ratio 0.2): the model was exported in training "
                    "mode and would drop random activations at every call; export it after "
                    "model.eval()");
  EXPECT_THROW_WITH(OnnxModel::load(dir + "dropout_train-opset20.onnx"), ModelError,
                    "node 'node_native_dropout__1' (Dropout): dropout is active (training_mode true, ratio 0.2)");
  // training_mode false, or a ratio of 0: an identity.
  for (const bool training : {false, true}) {
    Builder b(8, 17);
    b.init("W", {2, 2}, {1, 2, 3, 4});
    b.node("MatMul", {"obs", "W"}, "h", "mm");
    Builder::attribute(b.constant("r"), "value_float", onnx::AttributeProto::FLOAT)
        ->set_f(training ? 0.0f : 0.5f);
    onnx::TensorProto* t =
        Builder::attribute(b.constant("t"), "value", onnx::AttributeProto::TENSOR)->mutable_t();
    t->set_data_type(onnx::TensorProto::BOOL);
    t->add_int32_data(training ? 1 : 0);
    b.node("Dropout", {"h", "r", "t"}, "y", "drop");
    b.output("y", 2);
    const OnnxModel m = b.load();
    EXPECT_TRUE(evokit::testing::SameBits(run(m, {1, -1}, m.parameters()), {-2, -2}));
  }
}

TEST(OnnxModel, TorchExportsRunNatively) {
  // Every PyTorch export of tests/fixtures/torch_ops (LayerNorm, GELU, ...,
  // opsets 13, 17, 20) builds a native graph; their values against Python's
  // are checked through native_cases (AcceptsAndRefusesWhatPythonsNativeBackendDoes).
  std::size_t models = 0;
  for (const auto& entry : std::filesystem::directory_iterator(std::string(EVOKIT_SOURCE_DIR) +
                                                              "/tests/fixtures/torch_ops")) {
    const std::string name = entry.path().filename().string();
    if (entry.path().extension() != ".onnx" || name.rfind("dropout_train", 0) == 0) continue;
    SCOPED_TRACE(name);
    const OnnxModel m = OnnxModel::load(entry.path().string());
    const PolicyGraph g = m.graph();
    EXPECT_EQ(g.output_shape(5)[0], 5u);
    ++models;
  }
  EXPECT_EQ(models, 45u);
}

TEST(OnnxModelErrors, ShapeMismatchNamesTheNode) {
  for (const bool after_constant : {false, true}) {
    Builder b;
    b.init("W", {3, 2}, {1, 2, 3, 4, 5, 6});
    if (after_constant) {  // numbered in the ONNX graph, Constants counted
      Builder::attribute(b.constant("c"), "value_float", onnx::AttributeProto::FLOAT)->set_f(1.0f);
    }
    b.node("MatMul", {"obs", "W"}, "y");
    b.output("y", 2);
    EXPECT_THROW_WITH(b.load().graph(), ModelError,
                      "test.onnx: native backend: node #" + std::to_string(after_constant ? 1 : 0) +
                          " (MatMul): inner dimensions differ: 'obs' (batch, 2) x 'W' (3, 2)");
  }
}

TEST(OnnxModelErrors, NonFloatInitializerInput) {
  Builder b;
  b.init("W", {2, 2}, {1, 0, 0, 1});
  auto* t = b.graph->add_initializer();
  t->set_name("shape");
  t->set_data_type(onnx::TensorProto::INT64);
  t->add_dims(2);
  t->add_int64_data(1);
  t->add_int64_data(2);
  b.node("MatMul", {"obs", "W"}, "h");
  b.node("Add", {"h", "shape"}, "y", "add");
  b.output("y", 2);
  // An integer initializer is a shape for the core: no operand of Add.
  EXPECT_THROW_WITH(b.load().graph(), ModelError,
                    "node 'add' (Add): input 'shape' is an integer tensor (shapes, axes and "
                    "indices only); the native policy computes on FLOAT tensors only");
  t->set_data_type(onnx::TensorProto::DOUBLE);
  t->clear_int64_data();
  t->add_double_data(1);
  t->add_double_data(2);
  EXPECT_THROW_WITH(b.load().graph(), ModelError,
                    "test.onnx: native backend: node 'add' (Add): input 'shape' is a DOUBLE initializer; the native backend "
                    "computes on FLOAT tensors (and integer ones for shapes) only");
}

TEST(OnnxModelErrors, CheckerAndStructure) {
  {  // Gemm with one input: the ONNX checker refuses it (IR 8 is checked).
    Builder b;
    b.init("W", {2, 2}, {1, 0, 0, 1});
    b.node("Gemm", {"obs"}, "y", "bad");
    b.output("y", 2);
    EXPECT_THROW_WITH(b.load(), ModelError, "test.onnx: ONNX checker rejected the model: ");
  }
  {  // IR 9 is newer than Debian's libonnx: not checked, loads.
    Builder b(9);
    b.init("W", {2, 2}, {1, 0, 0, 1});
    b.node("MatMul", {"obs", "W"}, "y");
    b.output("y", 2);
    EXPECT_EQ(b.load().ir_version(), 9);
  }
  {  // Two observation inputs.
    Builder b;
    Builder::add_value(b.graph->add_input(), "obs2", 2);
    b.init("W", {2, 2}, {1, 0, 0, 1});
    b.node("MatMul", {"obs", "W"}, "h");
    b.node("Add", {"h", "obs2"}, "y");
    b.output("y", 2);
    EXPECT_THROW_WITH(b.load(), ModelError,
                      "input 'obs2' is neither the observation nor recurrent state: no output "
                      "pairs with it by name (h0 -> hn, x_in -> x_out) or by shape (outputs after "
                      "the first: none); a policy takes one observation input, then state inputs");
  }
  {  // No float initializer at all.
    Builder b;
    b.node("Relu", {"obs"}, "y");
    b.output("y", 2);
    EXPECT_THROW_WITH(b.load(), ModelError, "model has no float32 initializers to train");
  }
  {  // Data size disagrees with the shape.
    Builder b;
    b.init("W", {2, 2}, {1, 0, 0});
    b.node("MatMul", {"obs", "W"}, "y");
    b.output("y", 2);
    EXPECT_THROW_WITH(b.load(), ModelError, "initializer 'W' holds 3 values, its shape needs 4");
  }
  {  // A symbolic feature dimension.
    Builder b;
    b.graph->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape()
        ->mutable_dim(1)->set_dim_param("n");
    b.init("W", {2, 2}, {1, 0, 0, 1});
    b.node("MatMul", {"obs", "W"}, "y");
    b.output("y", 2);
    EXPECT_THROW_WITH(b.load().graph(), ModelError,
                      "observation input 'obs' has a symbolic or empty dimension 1 ('n')");
  }
}

TEST(OnnxModel, SoftmaxBeforeOpset13DefaultsToAxis1) {
  Builder b(7, 11);
  b.init("W", {2, 2}, {1, 0, 0, 1});
  b.node("MatMul", {"obs", "W"}, "h");
  b.node("Softmax", {"h"}, "y");
  b.output("y", 2);
  const OnnxModel m = b.load();
  ExpectClose(run(m, {0, 0, 1, 2}, m.parameters()),
              {0.5f, 0.5f, 0.2689414213699951f, 0.7310585786300049f});
}

// ---- what Python's native backend accepts (evokit/native.py) -----------------

TEST(OnnxModel, ServesAPolicyTrainedWithObservationNormalisation) {
  // `evokit train` with train.observation_normalization: Constant nodes
  // obs_norm/{mean,std,min,max}, then Sub, Div, Clip, then the MLP.
  const std::string path = data_path("obs_norm_h8.onnx");
  const OnnxModel m = OnnxModel::load(path);
  const onnx::GraphProto& graph = m.proto().graph();
  ASSERT_GE(graph.node_size(), 7);
  EXPECT_EQ(graph.node(0).name(), "obs_norm/mean");
  for (int i = 0; i < 4; ++i) EXPECT_EQ(graph.node(i).op_type(), "Constant");
  EXPECT_EQ(m.num_params(), 4u * 8 + 8 + 8 * 2 + 2);  // the constants are no parameters
  // The very bits of Python's native backend.
  const std::vector<float> obs = expected_floats("obs");
  const std::vector<float> want = expected_floats("obs_norm_predict");
  EXPECT_TRUE(evokit::testing::SameBits(run(m, obs, m.parameters()), want));
  ESAgent agent;  // as a service loads it
  agent.load_inference_model(path);
  EXPECT_TRUE(evokit::testing::SameBits(agent.predict(obs, 3), want));
}

// native_cases.txt (make_fixtures.py): per model of native_cases/, Python's
// observations and output, or its refusal.
struct NativeCase {
  std::vector<float> obs, out;
  std::string refused;  // Python's message after "native backend: "
};

std::map<std::string, NativeCase> native_cases() {
  std::map<std::string, NativeCase> cases;
  for (const auto& [name, rest] : testing::fixture_lines("native_cases.txt")) {
    const std::size_t space = rest.find(' ');
    const std::string kind = rest.substr(0, space);
    NativeCase& c = cases[name];
    if (kind == "refused") {
      c.refused = rest.substr(space + 1);
      continue;
    }
    std::istringstream fields(rest.substr(space + 1));
    float v;
    while (fields >> v) (kind == "obs" ? c.obs : c.out).push_back(v);
  }
  return cases;
}

TEST(OnnxModel, AcceptsAndRefusesWhatPythonsNativeBackendDoes) {
  const std::map<std::string, NativeCase> cases = native_cases();
  std::size_t files = 0, refused = 0;
  for (const auto& entry : std::filesystem::directory_iterator(data_path("native_cases"))) {
    ++files;
    const std::string name = entry.path().stem().string();
    SCOPED_TRACE(name);
    ASSERT_EQ(cases.count(name), 1u);
    const NativeCase& c = cases.at(name);
    const OnnxModel m = OnnxModel::load(entry.path().string());
    if (c.refused.empty()) {
      // Python's output bit for bit: the same core runs the same graph.
      EXPECT_TRUE(evokit::testing::SameBits(run(m, c.obs, m.parameters()), c.out));
      continue;
    }
    ++refused;
    // Python's refusal to the letter: the translation is the core's, for both.
    EXPECT_THROW_WITH(m.graph(), ModelError, entry.path().string() + ": native backend: " + c.refused);
  }
  EXPECT_EQ(files, cases.size());
  EXPECT_GE(refused, 5u);
  EXPECT_GE(files - refused, 5u);
}

TEST(OnnxModel, ConstantNodes) {
  // value (float_data), value_float (a scalar), value_floats: [1, -1] x W
  // = [1, -1], then + c, * s, - v.
  using A = onnx::AttributeProto;
  Builder b;
  b.init("W", {2, 2}, {1, 0, 0, 1});
  b.node("MatMul", {"obs", "W"}, "h", "mm");
  onnx::TensorProto* c = Builder::attribute(b.constant("c"), "value", A::TENSOR)->mutable_t();
  c->set_data_type(onnx::TensorProto::FLOAT);
  c->add_dims(2);
  c->add_float_data(0.5f);
  c->add_float_data(2.0f);
  Builder::attribute(b.constant("s"), "value_float", A::FLOAT)->set_f(3.0f);
  A* v = Builder::attribute(b.constant("v"), "value_floats", A::FLOATS);
  v->add_floats(1.0f);
  v->add_floats(-1.0f);
  b.node("Add", {"h", "c"}, "h2");
  b.node("Mul", {"h2", "s"}, "h3");
  b.node("Sub", {"h3", "v"}, "y");
  b.output("y", 2);
  const OnnxModel m = b.load();
  EXPECT_EQ(m.num_params(), 4u);
  ExpectClose(run(m, {1, -1}, m.parameters()), {(1 + 0.5f) * 3 - 1, (-1 + 2.0f) * 3 + 1}, 0.0f);
}

TEST(OnnxModelErrors, ConstantsRefusedAsInPython) {
  using A = onnx::AttributeProto;
  const auto with_constant = [](const std::function<void(onnx::NodeProto*)>& set) {
    Builder b;
    b.init("W", {2, 2}, {1, 0, 0, 1});
    b.node("MatMul", {"obs", "W"}, "y", "mm");
    set(b.constant("k", "k"));
    b.output("y", 2);
    return b.load();
  };
  // Integer constants are shapes, axes and indices: accepted.
  const OnnxModel int64 = with_constant([](onnx::NodeProto* n) {
    onnx::TensorProto* t = Builder::attribute(n, "value", A::TENSOR)->mutable_t();
    t->set_data_type(onnx::TensorProto::INT64);
    t->add_int64_data(7);
  });
  EXPECT_EQ(int64.graph().num_nodes(), 1u);
  const OnnxModel ints = with_constant(
      [](onnx::NodeProto* n) { Builder::attribute(n, "value_int", A::INT)->set_i(3); });
  EXPECT_EQ(ints.graph().num_nodes(), 1u);
  const OnnxModel doubles = with_constant([](onnx::NodeProto* n) {
    onnx::TensorProto* t = Builder::attribute(n, "value", A::TENSOR)->mutable_t();
    t->set_data_type(onnx::TensorProto::DOUBLE);
    t->add_double_data(7);
  });
  EXPECT_THROW_WITH(doubles.graph(), ModelError,
                    "test.onnx: native backend: node 'k' (Constant): a DOUBLE constant; only FLOAT, integer and "
                    "BOOL tensors are supported");
  const OnnxModel strings = with_constant(
      [](onnx::NodeProto* n) { Builder::attribute(n, "value_string", A::STRING)->set_s("x"); });
  EXPECT_THROW_WITH(strings.graph(), ModelError,
                    "test.onnx: native backend: node 'k' (Constant): only tensor, float and integer constants are "
                    "supported (attributes: value_string)");
  const OnnxModel short_data = with_constant([](onnx::NodeProto* n) {
    onnx::TensorProto* t = Builder::attribute(n, "value", A::TENSOR)->mutable_t();
    t->set_data_type(onnx::TensorProto::FLOAT);
    t->add_dims(3);
    t->add_float_data(1.0f);
  });
  EXPECT_THROW_WITH(short_data.graph(), ModelError,
                    "test.onnx: node 'k' (Constant): value holds 1 values, its shape needs 3");
}

// cartpole_h8.onnx (695 bytes) with initializer `index` claiming `dims`,
// its data kept (raw_data, or moved to float_data).
// With `ir_version` 99 (newer than libonnx knows) the ONNX checker leaves
// the model alone and the reader's own checks are all there is.
std::string cartpole_claiming(int index, const std::vector<std::int64_t>& dims,
                              bool float_data = false, std::int64_t ir_version = 8) {
  std::ifstream in(data_path("cartpole_h8.onnx"), std::ios::binary);
  onnx::ModelProto model;
  EXPECT_TRUE(model.ParseFromIstream(&in));
  model.set_ir_version(ir_version);
  onnx::TensorProto* t = model.mutable_graph()->mutable_initializer(index);
  if (float_data) {
    const std::string raw = t->raw_data();
    t->clear_raw_data();
    for (std::size_t i = 0; i < raw.size(); i += 4) {
      float v;
      std::memcpy(&v, raw.data() + i, 4);
      t->add_float_data(v);
    }
  }
  t->clear_dims();
  for (std::int64_t d : dims) t->add_dims(d);
  return model.SerializeAsString();
}

TEST(OnnxModelErrors, DeclaredShapesAreCheckedAgainstTheDataBeforeAllocating) {
  // Issue 16: a 925-byte model made load() allocate 2.1 GB, dims[0] = 2**40
  // threw std::bad_alloc. The shape is checked against the bytes present
  // first (under ASan, an allocation of that size would abort the test).
  struct Case {
    std::vector<std::int64_t> dims;
    bool float_data;
    std::string message;
  };
  const std::int64_t two40 = std::int64_t{1} << 40;
  const std::int64_t two32 = std::int64_t{1} << 32;
  const std::vector<Case> cases = {
      {{std::int64_t{1} << 29}, false,
       "holds 128 bytes of raw data, its shape needs 2147483648"},
      {{two40, 1}, false, "holds 128 bytes of raw data, its shape needs 4398046511104"},
      {{two32, two32}, false,
       "holds 128 bytes of raw data, its shape needs more than 18446744073709551615"},
      {{two40}, true, "holds 32 values, its shape needs 1099511627776"},
      {{std::int64_t{1} << 62, 4}, true,
       "holds 32 values, its shape needs more than 18446744073709551615"},
      {{8, 3}, false, "holds 128 bytes of raw data, its shape needs 96"},
      {{-4, -8}, false, "has a negative dimension -4"},
  };
  for (const Case& c : cases) {
    const std::string bytes = cartpole_claiming(0, c.dims, c.float_data, 99);
    EXPECT_LT(bytes.size(), 1000u);
    EXPECT_THROW_WITH(OnnxModel::from_bytes(bytes, ".*", "huge.onnx"), ModelError,
                      "huge.onnx: initializer 'layer0.weight' " + c.message);
    // In IR 8 libonnx's checker refuses some first (a negative dimension;
    // a product beyond 64 bits, which it wraps to 0), naming the tensor.
    try {
      OnnxModel::from_bytes(cartpole_claiming(0, c.dims, c.float_data), ".*", "huge.onnx");
      ADD_FAILURE() << "accepted dims[0] = " << c.dims[0];
    } catch (const ModelError& e) {
      const std::string what = e.what();
      if (what.rfind("huge.onnx: ONNX checker rejected the model: ", 0) == 0) {
        EXPECT_NE(what.find("(tensor name: layer0.weight)"), std::string::npos) << what;
      } else {
        EXPECT_EQ(what, "huge.onnx: initializer 'layer0.weight' " + c.message);
      }
    }
  }
  // A float initializer that is no parameter: checked when graph() makes it a
  // constant.
  const OnnxModel biases_fixed =
      OnnxModel::from_bytes(cartpole_claiming(3, {two40, 2}), ".*weight", "huge.onnx");
  EXPECT_THROW_WITH(biases_fixed.graph(), ModelError,
                    "huge.onnx: initializer 'head.bias' holds 8 bytes of raw data, its shape "
                    "needs 8796093022208");
  // A Constant node's tensor.
  Builder b;
  onnx::TensorProto* t = Builder::attribute(b.constant("k", "k"), "value",
                                            onnx::AttributeProto::TENSOR)->mutable_t();
  t->set_data_type(onnx::TensorProto::FLOAT);
  t->add_dims(two40);
  t->set_raw_data(std::string(12, '\0'));
  b.init("W", {2, 2}, {1, 0, 0, 1});
  b.node("MatMul", {"obs", "W"}, "y");
  b.output("y", 2);
  EXPECT_THROW_WITH(b.load().graph(), ModelError,
                    "test.onnx: node 'k' (Constant): value holds 12 bytes of raw data, its shape "
                    "needs 4398046511104");
}

TEST(OnnxModelErrors, OutputMustStartWithTheBatchDimension) {
  Builder b;
  b.init("W", {2, 2}, {1, 0, 0, 1});
  b.node("MatMul", {"obs", "W"}, "h", "mm");
  onnx::NodeProto* flatten = b.node("Flatten", {"h"}, "y", "flat");
  Builder::attribute(flatten, "axis", onnx::AttributeProto::INT)->set_i(0);
  b.output("y", 2);
  EXPECT_THROW_WITH(b.load().graph(), ModelError,
                    "test.onnx: native backend: output 'y' has shape (1, 2) for one observation: it does not start "
                    "with the batch dimension");
}

TEST(OnnxModel, OpsetIsTheHighestDefaultDomainImport) {
  Builder b(9);  // IR 9: not checked by this libonnx, which may not like two imports
  auto* op = b.model.add_opset_import();
  op->set_domain("ai.onnx");
  op->set_version(11);
  b.init("W", {2, 2}, {1, 0, 0, 1});
  b.node("MatMul", {"obs", "W"}, "y");
  b.output("y", 2);
  EXPECT_EQ(b.load().opset(), 17);
}

}  // namespace
}  // namespace evokit::io
