// PolicyGraph: the ops PyTorch exports add (policy_ops_*.cc) against
// double-precision references, the build-time evaluation of shape
// arithmetic, perturbed parameters read in place, and every refusal.
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <vector>

#include "evokit/policy_graph.h"
#include "test_util.h"

namespace evokit {
namespace {

using Shape = std::vector<std::size_t>;

std::vector<float> Inputs() {  // -8 .. 8, and values where exp overflows
  std::vector<float> x;
  for (int i = -40; i <= 40; ++i) x.push_back(0.2f * static_cast<float>(i) + 0.013f);
  x.push_back(60.0f);
  x.push_back(-60.0f);
  return x;
}

// One op over obs (batch, n) with the attributes given, run on `x`.
std::vector<float> RunUnary(const std::string& op, const std::vector<float>& x,
                            const NodeAttributes& attrs = {}) {
  PolicyGraph g;
  g.add_input("obs", {x.size()});
  g.add_node(op, {"obs"}, {"y"}, attrs, "act");
  g.add_output("y");
  return g.run(x.data(), 1, nullptr, 0);
}

void ExpectClose(const std::vector<float>& got, const std::vector<double>& want, double rtol = 2e-6,
                 double atol = 1e-7) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    EXPECT_NEAR(got[i], want[i], atol + rtol * std::fabs(want[i])) << "at index " << i;
  }
}

std::vector<double> Reference(const std::vector<float>& x, double (*f)(double)) {
  std::vector<double> out;
  for (float v : x) out.push_back(f(v));
  return out;
}

double Softplus(double x) { return x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x)); }

TEST(PolicyGraphOps, ActivationsMatchDoublePrecision) {
  const std::vector<float> x = Inputs();
  ExpectClose(RunUnary("Erf", x), Reference(x, [](double v) { return std::erf(v); }));
  ExpectClose(RunUnary("Gelu", x),
              Reference(x, [](double v) { return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))); }));
  NodeAttributes tanh_form;
  tanh_form.strings["approximate"] = {"tanh"};
  // Gelu's tanh form and Mish use the graph's Tanh (absolute error < 1e-6).
  ExpectClose(RunUnary("Gelu", x, tanh_form), Reference(x, [](double v) {
                return 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
              }), 1e-5, 1e-6);
  ExpectClose(RunUnary("LeakyRelu", x), Reference(x, [](double v) { return v >= 0 ? v : 0.01 * v; }));
  NodeAttributes alpha;
  alpha.floats["alpha"] = 0.5f;
  ExpectClose(RunUnary("Elu", x, alpha),
              Reference(x, [](double v) { return v >= 0 ? v : 0.5 * std::expm1(v); }), 2e-6, 2e-7);
  ExpectClose(RunUnary("Selu", x), Reference(x, [](double v) {
                const double a = 1.6732632423543772, g = 1.0507009873554805;
                return g * (v > 0 ? v : a * std::expm1(v));
              }), 2e-6, 3e-7);
  ExpectClose(RunUnary("Softplus", x), Reference(x, Softplus));
  ExpectClose(RunUnary("Mish", x), Reference(x, [](double v) { return v * std::tanh(Softplus(v)); }),
              1e-5, 1e-6);
  std::vector<float> positive;
  for (float v : x) positive.push_back(std::fabs(v));
  ExpectClose(RunUnary("Sqrt", positive), Reference(positive, [](double v) { return std::sqrt(v); }));
}

// obs (batch, 2, 3) -> LayerNormalization over the last two dims with Scale
// (2, 3) and B (1, 2, 3) parameters at offsets 0 and 6; y its output if
// `output`.
PolicyGraph LayerNormGraph(bool output = true) {
  PolicyGraph g;
  g.add_input("obs", {2, 3});
  g.add_param("scale", 0, {2, 3});
  g.add_param("bias", 6, {1, 2, 3});
  NodeAttributes attrs;
  attrs.ints["axis"] = 1;
  attrs.floats["epsilon"] = 1e-3f;
  g.add_node("LayerNormalization", {"obs", "scale", "bias"}, {"y"}, attrs, "ln");
  if (output) g.add_output("y");
  return g;
}

TEST(PolicyGraphOps, LayerNormalizationOverTrailingDims) {
  const PolicyGraph g = LayerNormGraph();
  const std::vector<float> params{1, 2, 0.5f, -1, 1, 3, 0.1f, 0.2f, 0.3f, -0.1f, 0, 1};
  const std::vector<float> obs{1, 2, 3, 4, 5, 9, -3, 0.5f, 0, 0, 2, 7};
  const std::vector<float> got = g.run(obs.data(), 2, params.data(), params.size());
  std::vector<double> want;
  for (int r = 0; r < 2; ++r) {
    double mean = 0, var = 0;
    for (int j = 0; j < 6; ++j) mean += obs[r * 6 + j] / 6.0;
    for (int j = 0; j < 6; ++j) var += (obs[r * 6 + j] - mean) * (obs[r * 6 + j] - mean) / 6.0;
    for (int j = 0; j < 6; ++j) {
      want.push_back((obs[r * 6 + j] - mean) / std::sqrt(var + 1e-3) * params[j] + params[6 + j]);
    }
  }
  ExpectClose(got, want, 1e-5, 1e-6);
}

TEST(PolicyGraphOps, PerturbedParametersAreReadInPlace) {
  // A ParamView (base + scale * noise) through LayerNormalization's Scale and
  // B, a Slice times a parameter (general broadcasting), Concat and Gather:
  // the bits of the materialised vector.
  PolicyGraph g = LayerNormGraph(false);
  g.add_param("extra", 12, {2, 2});
  g.add_int_constant("starts", {1}, {1});
  g.add_int_constant("ends", {1}, {3});
  g.add_int_constant("axes", {1}, {2});
  g.add_node("Slice", {"y", "starts", "ends", "axes"}, {"part"}, {}, "slice");
  g.add_node("Mul", {"part", "extra"}, {"scaled"}, {}, "mul");
  g.add_node("Concat", {"y", "scaled"}, {"cat"}, [] {
    NodeAttributes a;
    a.ints["axis"] = -1;
    return a;
  }(), "cat");
  g.add_int_constant("ix", {3}, {4, 0, -1});
  g.add_node("Gather", {"cat", "ix"}, {"picked"}, [] {
    NodeAttributes a;
    a.ints["axis"] = 2;
    return a;
  }(), "gather");
  g.add_output("picked");
  EXPECT_EQ(format_shape(g.symbolic_output_shape()), "(batch, 2, 3)");
  std::vector<float> base(16), noise(16);
  for (std::size_t i = 0; i < 16; ++i) {
    base[i] = 0.3f * static_cast<float>(i) - 2.0f;
    noise[i] = std::sin(static_cast<float>(i));
  }
  const float scale = 0.37f;
  std::vector<float> materialised(16);
  for (std::size_t i = 0; i < 16; ++i) materialised[i] = base[i] + scale * noise[i];
  const std::vector<float> obs{1, -2, 3, 0.5f, 5, 9, -3, 0.5f, 0, 0, 2, 7};
  const PolicyGraph::Plan plan = g.compile(2);
  std::vector<float> work(plan.workspace_size()), out(plan.output_size());
  g.execute(plan, obs.data(), ParamView{base.data(), noise.data(), scale}, work.data(), out.data());
  const std::vector<float> want = g.run(obs.data(), 2, materialised.data(), 16);
  EXPECT_TRUE(testing::SameBits(out, want));
  // Gather picked columns 4 (y[.., 2] * extra), 0 and 4 again (index -1).
  const std::vector<float> y = LayerNormGraph().run(obs.data(), 2, materialised.data(), 12);
  EXPECT_EQ(out[1], y[0]);
  EXPECT_EQ(out[0], out[2]);
  EXPECT_EQ(out[0], y[2] * materialised[13]);
}

TEST(PolicyGraphOps, ShapeArithmeticIsEvaluatedWhenBuilt) {
  // PyTorch's x.reshape(x.shape[0], -1): Shape -> Gather -> Unsqueeze ->
  // Concat -> Reshape; the batch size stays symbolic.
  PolicyGraph g;
  g.add_input("obs", {3, 4});
  g.add_node("Shape", {"obs"}, {"shape"}, {}, "shape");
  g.add_int_constant("zero", {}, {0});
  NodeAttributes axis0;
  axis0.ints["axis"] = 0;
  g.add_node("Gather", {"shape", "zero"}, {"n"}, axis0, "gather");
  g.add_int_constant("axes", {1}, {0});
  g.add_node("Unsqueeze", {"n", "axes"}, {"n1"}, {}, "unsqueeze");
  g.add_int_constant("minus_one", {1}, {-1});
  g.add_node("Concat", {"n1", "minus_one"}, {"target"}, axis0, "concat");
  g.add_node("Reshape", {"obs", "target"}, {"flat"}, {}, "reshape");
  g.add_output("flat");
  EXPECT_EQ(format_shape(g.symbolic_output_shape()), "(batch, 12)");
  std::vector<float> obs(24);
  for (std::size_t i = 0; i < obs.size(); ++i) obs[i] = static_cast<float>(i);
  EXPECT_EQ(g.run(obs.data(), 2, nullptr, 0), obs);  // an alias: the same bytes
  EXPECT_EQ(g.compile(2).workspace_size(), 0u);     // no step runs
  // A shape value is no output.
  EXPECT_THROW_WITH(g.add_output("target"), std::invalid_argument,
                    "output 'target' is an integer tensor; a policy's output must be a float tensor");
}

TEST(PolicyGraphOps, SliceConcatReduceWhere) {
  PolicyGraph g;
  g.add_input("obs", {4});
  g.add_int_constant("s", {1}, {3});
  g.add_int_constant("e", {1}, {-100});
  g.add_int_constant("a", {1}, {1});
  g.add_int_constant("st", {1}, {-2});
  g.add_node("Slice", {"obs", "s", "e", "a", "st"}, {"rev"}, {}, "slice");  // x3, x1
  NodeAttributes axis1;
  axis1.ints["axis"] = 1;
  g.add_node("Concat", {"rev", "obs"}, {"cat"}, axis1, "cat");              // x3 x1 x0..x3
  g.add_int_constant("ax", {1}, {1});
  g.add_node("ReduceMean", {"cat", "ax"}, {"mean"}, {}, "mean");            // (batch, 1)
  g.add_node("ReduceSum", {"cat", "ax"}, {"sum"}, {}, "sum");
  g.add_node("Greater", {"obs", "mean"}, {"above"}, {}, "gt");
  g.add_node("Where", {"above", "obs", "sum"}, {"y"}, {}, "where");
  g.add_output("y");
  const std::vector<float> obs{1, 2, 3, 10, -1, 0, 0, 1};
  // row 0: cat = 10 2 1 2 3 10, mean 28/6, sum 28 -> [28, 28, 28, 10]
  // row 1: cat = 1 0 -1 0 0 1, mean 1/6, sum 1 -> [1, 1, 1, 1]
  EXPECT_EQ(g.run(obs.data(), 2, nullptr, 0), (std::vector<float>{28, 28, 28, 10, 1, 1, 1, 1}));
}

TEST(PolicyGraphOps, DropoutInInferenceIsTheIdentityAndInTrainingRefused) {
  PolicyGraph g;
  g.add_input("obs", {3});
  g.add_constant("ratio", {}, {0.25f});
  g.add_int_constant("off", {}, {0});
  g.add_int_constant("on", {}, {1});
  g.add_node("Dropout", {"obs", "ratio", "off"}, {"y"}, {}, "eval");
  g.add_output("y");
  const std::vector<float> obs{1, -2, 3};
  EXPECT_EQ(g.run(obs.data(), 1, nullptr, 0), obs);
  EXPECT_THROW_WITH(g.add_node("Dropout", {"obs", "ratio", "on"}, {"z"}, {}, "drop"),
                    std::invalid_argument,
                    "node 'drop' (Dropout): dropout is active (training_mode true, ratio 0.25): the "
                    "model was exported in training mode and would drop random activations at every "
                    "call; export it after model.eval()");
  g.add_constant("none", {}, {0.0f});
  g.add_node("Dropout", {"obs", "none", "on"}, {"z"}, {}, "ratio0");  // nothing dropped
}

TEST(PolicyGraphOpsErrors, RefusalsNameTheNode) {
  PolicyGraph g;
  g.add_input("x", {2, 3});
  g.add_int_constant("k", {3}, {1, 2, 3});
  EXPECT_THROW_WITH(g.add_node("Add", {"x", "k"}, {"y"}, {}, "add"), std::invalid_argument,
                    "node 'add' (Add): input 'k' is an integer tensor (shapes, axes and indices "
                    "only); the native policy computes on FLOAT tensors only");
  g.add_node("Greater", {"x", "x"}, {"b"}, {}, "gt");
  EXPECT_THROW_WITH(g.add_node("Relu", {"b"}, {"y"}, {}, "relu"), std::invalid_argument,
                    "node 'relu' (Relu): input 'b' is a boolean tensor; only Where's condition may be one");
  EXPECT_THROW_WITH(g.add_output("b"), std::invalid_argument, "output 'b' is a boolean tensor");
  NodeAttributes bad_gelu;
  bad_gelu.strings["approximate"] = {"fast"};
  EXPECT_THROW_WITH(g.add_node("Gelu", {"x"}, {"y"}, bad_gelu, "gelu"), std::invalid_argument,
                    "node 'gelu' (Gelu): attribute approximate must be 'none' or 'tanh', got 'fast'");
  NodeAttributes list_on_relu;
  list_on_relu.int_lists["axes"] = {1};
  EXPECT_THROW_WITH(g.add_node("Relu", {"x"}, {"y"}, list_on_relu, "relu"), std::invalid_argument,
                    "node 'relu' (Relu): unknown integer list attribute 'axes'");
  g.add_int_constant("shape", {3}, {-1, -1, 2});
  EXPECT_THROW_WITH(g.add_node("Reshape", {"x", "shape"}, {"y"}, {}, "rs"), std::invalid_argument,
                    "node 'rs' (Reshape): cannot reshape 'x' (batch, 2, 3) to [-1, -1, 2]: more than one -1");
  g.add_node("Shape", {"x"}, {"s"}, {}, "shape_of");
  EXPECT_THROW_WITH(g.add_node("Mul", {"s", "s"}, {"s2"}, {}, "square"), std::invalid_argument,
                    "node 'square' (Mul): cannot compute batch * batch for every batch size");
  NodeAttributes axis0;
  axis0.ints["axis"] = 0;
  EXPECT_THROW_WITH(g.add_node("Gather", {"x", "k"}, {"y"}, axis0, "ga"), std::invalid_argument,
                    "node 'ga' (Gather): gathered axis 0 of input 'x' (batch, 2, 3) is the batch "
                    "dimension, which a policy never mixes");
  NodeAttributes to_double;
  to_double.ints["to"] = 11;
  EXPECT_THROW_WITH(g.add_node("Cast", {"x"}, {"y"}, to_double, "cast"), std::invalid_argument,
                    "node 'cast' (Cast): cast to ONNX type 11 is not supported (only FLOAT, INT32, "
                    "INT64 and BOOL)");
  NodeAttributes stash;
  stash.ints["stash_type"] = 0;
  g.add_constant("one", {3}, {1, 1, 1});
  EXPECT_THROW_WITH(g.add_node("LayerNormalization", {"x", "one"}, {"y"}, stash, "ln"),
                    std::invalid_argument,
                    "node 'ln' (LayerNormalization): stash_type 0 is not supported (only 1: float)");
}

}  // namespace
}  // namespace evokit
