// PolicyGraph: every op against hand-computed results, parameter windows,
// shape checks and error messages.
#include "evokit/policy_graph.h"

#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <vector>

#include "test_util.h"

namespace evokit {
namespace {

using Shape = std::vector<std::size_t>;

void ExpectNear(const std::vector<float>& actual, const std::vector<float>& expected,
                float tol = 1e-6f) {
  ASSERT_EQ(actual.size(), expected.size());
  for (std::size_t i = 0; i < actual.size(); ++i) {
    EXPECT_NEAR(actual[i], expected[i], tol) << "at index " << i;
  }
}

// obs (batch, 3) -> Gemm(transB) with W (2, 3) at offset 0 and b (2,) at 6.
PolicyGraph LinearGraph() {
  PolicyGraph g;
  g.add_input("obs", {3});
  g.add_param("W", 0, {2, 3});
  g.add_param("b", 6, {2});
  NodeAttributes attrs;
  attrs.ints["transB"] = 1;
  g.add_node("Gemm", {"obs", "W", "b"}, {"y"}, attrs, "fc");
  g.add_output("y");
  return g;
}

TEST(PolicyGraph, GemmTransBWithBias) {
  const PolicyGraph g = LinearGraph();
  EXPECT_EQ(g.num_params(), 8u);
  EXPECT_EQ(g.obs_size(), 3u);
  // W = [[1, 2, 3], [4, 5, 6]], b = [0.5, -1]
  const std::vector<float> params{1, 2, 3, 4, 5, 6, 0.5f, -1};
  const std::vector<float> obs{1, 0, -1,   // y = [1 - 3 + 0.5, 4 - 6 - 1] = [-1.5, -3]
                               2, 1, 0};   // y = [2 + 2 + 0.5, 8 + 5 - 1] = [4.5, 12]
  ExpectNear(g.run(obs.data(), 2, params.data(), params.size()), {-1.5f, -3, 4.5f, 12});
  EXPECT_EQ(g.output_shape(2), (Shape{2, 2}));
  EXPECT_EQ(format_shape(g.symbolic_output_shape()), "(batch, 2)");
}

TEST(PolicyGraph, ParamsAreReadAtRunTimeWithoutCopies) {
  const PolicyGraph g = LinearGraph();
  std::vector<float> params{1, 2, 3, 4, 5, 6, 0.5f, -1};
  const std::vector<float> obs{1, 1, 1};
  ExpectNear(g.run(obs.data(), 1, params.data(), params.size()), {6.5f, 14});
  // Another vector (a perturbed clone) through the same graph.
  std::vector<float> other(8, 0.0f);
  other[6] = 7;
  ExpectNear(g.run(obs.data(), 1, other.data(), other.size()), {7, 0});
  // The same buffer changed in place: the graph sees the new values.
  params[0] = 10;
  ExpectNear(g.run(obs.data(), 1, params.data(), params.size()), {15.5f, 14});
}

TEST(PolicyGraph, GemmAlphaBetaAndRowBroadcastC) {
  // (batch, 3) x B (3, 2), C (1, 2) broadcast over rows.
  PolicyGraph g;
  g.add_input("x", {3});
  g.add_node("Flatten", {"x"}, {"xf"}, {}, "flat");
  g.add_constant("B", {3, 2}, {1, 0, 0, 1, 1, 1});
  g.add_constant("C", {1, 2}, {10, 20});
  NodeAttributes attrs;
  attrs.floats["alpha"] = 2.0f;
  attrs.floats["beta"] = 0.5f;
  g.add_node("Gemm", {"xf", "B", "C"}, {"y"}, attrs);
  g.add_output("y");
  const std::vector<float> obs{1, 2, 3};
  // xB = [1 + 3, 2 + 3] = [4, 5]; y = 2 * [4, 5] + 0.5 * [10, 20] = [13, 20]
  ExpectNear(g.run(obs.data(), 1, nullptr, 0), {13, 20});
}

TEST(PolicyGraph, GemmTransposedLeftOperandAndColumnBias) {
  // y = A^T obs^T + C: the batch becomes the column dimension.
  PolicyGraph g;
  g.add_input("x", {2});                               // (batch, 2)
  g.add_constant("A", {2, 3}, {1, 2, 3, 4, 5, 6});     // A^T (3, 2)
  g.add_constant("C", {3, 1}, {100, 200, 300});        // column broadcast
  NodeAttributes attrs;
  attrs.ints["transA"] = 1;
  attrs.ints["transB"] = 1;
  g.add_node("Gemm", {"A", "x", "C"}, {"y"}, attrs);   // (3, 2) x (2, batch) -> (3, batch)
  g.add_output("y");
  EXPECT_EQ(format_shape(g.symbolic_output_shape()), "(3, batch)");
  const std::vector<float> obs{1, 0,    // column 0: A^T [1, 0] = [1, 2, 3]
                               0, 1};   // column 1: A^T [0, 1] = [4, 5, 6]
  ExpectNear(g.run(obs.data(), 2, nullptr, 0), {101, 104, 202, 205, 303, 306});
}

TEST(PolicyGraph, MatMulAddBroadcastRelu) {
  PolicyGraph g;
  g.add_input("obs", {2});
  g.add_param("W", 0, {2, 3});
  g.add_param("b", 6, {3});
  g.add_node("MatMul", {"obs", "W"}, {"h"});
  g.add_node("Add", {"h", "b"}, {"z"});
  g.add_node("Relu", {"z"}, {"y"});
  g.add_output("y");
  // W = [[1, -1, 0], [2, 0, -3]], b = [0, 1, 2]
  const std::vector<float> params{1, -1, 0, 2, 0, -3, 0, 1, 2};
  const std::vector<float> obs{1, 1,    // h = [3, -1, -3], z = [3, 0, -1] -> [3, 0, 0]
                               -1, 2};  // h = [3, 1, -6], z = [3, 2, -4] -> [3, 2, 0]
  ExpectNear(g.run(obs.data(), 2, params.data(), params.size()), {3, 0, 0, 3, 2, 0});
}

TEST(PolicyGraph, AddBroadcastsBothWays) {
  // (batch, 2, 1) + (3,) -> (batch, 2, 3)
  PolicyGraph g;
  g.add_input("x", {2, 1});
  g.add_constant("c", {3}, {10, 20, 30});
  g.add_node("Add", {"x", "c"}, {"y"});
  g.add_output("y");
  EXPECT_EQ(format_shape(g.symbolic_output_shape()), "(batch, 2, 3)");
  const std::vector<float> obs{1, 2, 3, 4};
  ExpectNear(g.run(obs.data(), 2, nullptr, 0),
             {11, 21, 31, 12, 22, 32, 13, 23, 33, 14, 24, 34});
  // Scalar constant on the left.
  PolicyGraph s;
  s.add_input("x", {2});
  s.add_constant("one", {}, {1});
  s.add_node("Add", {"one", "x"}, {"y"});
  s.add_output("y");
  ExpectNear(s.run(obs.data(), 2, nullptr, 0), {2, 3, 4, 5});
}

TEST(PolicyGraph, Activations) {
  const std::vector<float> obs{0, 1, -1, 30, -30, -100};
  const auto run_op = [&](const char* op) {
    PolicyGraph g;
    g.add_input("x", {6});
    g.add_node(op, {"x"}, {"y"});
    g.add_output("y");
    return g.run(obs.data(), 1, nullptr, 0);
  };
  ExpectNear(run_op("Relu"), {0, 1, 0, 30, 0, 0});
  ExpectNear(run_op("Identity"), obs);
  ExpectNear(run_op("Tanh"), {0, 0.7615941559557649f, -0.7615941559557649f, 1, -1, -1});
  // 1 / (1 + e^-x); no overflow for large |x|.
  ExpectNear(run_op("Sigmoid"),
             {0.5f, 0.7310585786300049f, 0.2689414213699951f, 1, 9.357622968840175e-14f, 0});
}

TEST(PolicyGraph, SoftmaxOverTheLastAxis) {
  PolicyGraph g;
  g.add_input("x", {3});
  NodeAttributes attrs;
  attrs.ints["axis"] = 1;  // the last axis of a rank-2 input, as -1
  g.add_node("Softmax", {"x"}, {"y"}, attrs);
  g.add_output("y");
  // softmax([1, 2, 3]) = e^(x - 3) / sum; large inputs do not overflow.
  const std::vector<float> obs{1, 2, 3, 1000, 1000, 1000};
  ExpectNear(g.run(obs.data(), 2, nullptr, 0),
             {0.09003057317038046f, 0.24472847105479767f, 0.6652409557748219f, 1.0f / 3,
              1.0f / 3, 1.0f / 3});
}

TEST(PolicyGraph, FlattenShapes) {
  PolicyGraph g;
  g.add_input("x", {2, 3});
  g.add_node("Flatten", {"x"}, {"f1"});
  NodeAttributes axis0;
  axis0.ints["axis"] = 0;
  g.add_node("Flatten", {"x"}, {"f0"}, axis0);
  NodeAttributes axis_last;
  axis_last.ints["axis"] = -1;
  g.add_node("Flatten", {"x"}, {"f2"}, axis_last);
  g.add_output("f0");
  g.add_output("f1");
  EXPECT_EQ(format_shape(g.symbolic_output_shape()), "(1, 6*batch)");
  EXPECT_EQ(g.output_shape(3), (Shape{1, 18}));
  // Flatten keeps the bytes.
  std::vector<float> obs(12);
  for (std::size_t i = 0; i < obs.size(); ++i) obs[i] = static_cast<float>(i);
  EXPECT_TRUE(testing::SameBits(g.run(obs.data(), 2, nullptr, 0), obs));
}

TEST(PolicyGraph, TwoLayerMlp) {
  // obs (batch, 2) -> Gemm(transB) 2x2 -> Tanh -> Gemm(transB) 1x2 -> Sigmoid
  PolicyGraph g;
  g.add_input("obs", {2});
  g.add_param("w1", 0, {2, 2});
  g.add_param("b1", 4, {2});
  g.add_param("w2", 6, {1, 2});
  g.add_param("b2", 8, {1});
  NodeAttributes tb;
  tb.ints["transB"] = 1;
  g.add_node("Gemm", {"obs", "w1", "b1"}, {"h"}, tb);
  g.add_node("Tanh", {"h"}, {"a"});
  g.add_node("Gemm", {"a", "w2", "b2"}, {"z"}, tb);
  g.add_node("Sigmoid", {"z"}, {"y"});
  g.add_output("y");
  const std::vector<float> params{1, 0, 0, 1, 0, 0, 1, 1, 0};
  const std::vector<float> obs{0.5f, -0.25f};
  const double z = std::tanh(0.5) + std::tanh(-0.25);
  ExpectNear(g.run(obs.data(), 1, params.data(), params.size()),
             {static_cast<float>(1.0 / (1.0 + std::exp(-z)))});
}

TEST(PolicyGraph, ConcurrentRunsAgree) {
  const PolicyGraph g = LinearGraph();
  const std::vector<float> params{1, 2, 3, 4, 5, 6, 0.5f, -1};
  const std::vector<float> obs{0.1f, 0.2f, 0.3f};
  const std::vector<float> expected = g.run(obs.data(), 1, params.data(), params.size());
  std::vector<std::vector<float>> results(16);
#pragma omp parallel for num_threads(4)
  for (int i = 0; i < 16; ++i) {
    results[static_cast<std::size_t>(i)] = g.run(obs.data(), 1, params.data(), params.size());
  }
  for (const auto& r : results) EXPECT_TRUE(testing::SameBits(r, expected));
}

TEST(PolicyGraph, SubMulDivClipNormaliseObservations) {
  // clip((x - mean) / std, -2, 2) * w: the observation-normalisation prefix.
  PolicyGraph g;
  g.add_input("x", {3});
  g.add_constant("mean", {3}, {1, -2, 0.5f});
  g.add_constant("std", {3}, {2, 0.5f, 4});
  g.add_constant("lo", {}, {-2});
  g.add_constant("hi", {1}, {2});
  g.add_param("w", 0, {1, 3});
  g.add_node("Sub", {"x", "mean"}, {"c"});
  g.add_node("Div", {"c", "std"}, {"s"});
  g.add_node("Clip", {"s", "lo", "hi"}, {"n"});
  g.add_node("Mul", {"w", "n"}, {"y"});  // parameter on the left, broadcast over rows
  g.add_output("y");
  const std::vector<float> params{1, -1, 10};
  const std::vector<float> obs{3, -2, 4.5f,     // (1, 0, 1)        -> (1, -0, 10)
                               -9, 0, -1.5f};   // (-5 -> -2, 4 -> 2, -0.5) -> (-2, -2, -5)
  ExpectNear(g.run(obs.data(), 2, params.data(), params.size()), {1, 0, 10, -2, -2, -5});
  // Clip with only a max (min omitted), and general broadcasting for Sub.
  PolicyGraph h;
  h.add_input("x", {2, 1});
  h.add_constant("c", {3}, {1, 2, 3});
  h.add_constant("hi", {}, {0});
  h.add_node("Sub", {"c", "x"}, {"d"});
  h.add_node("Clip", {"d", "", "hi"}, {"y"});
  h.add_output("y");
  const std::vector<float> x{2, 0};  // c - 2 = (-1, 0, 1), c - 0 = (1, 2, 3)
  ExpectNear(h.run(x.data(), 1, nullptr, 0), {-1, 0, 0, 0, 0, 0});
}

TEST(PolicyGraphErrors, ClipBoundsMustBeOneElementConstants) {
  PolicyGraph g;
  g.add_input("x", {2});
  g.add_param("p", 0, {1});
  g.add_constant("two", {2}, {0, 1});
  g.add_constant("lo", {}, {1});
  g.add_constant("hi", {}, {0});
  EXPECT_THROW_WITH(g.add_node("Clip", {"x", "p"}, {"y"}, {}, "clip"), std::invalid_argument,
                    "node 'clip' (Clip): min 'p' must be a constant with one element, got a "
                    "non-constant of shape (1,)");
  EXPECT_THROW_WITH(g.add_node("Clip", {"x", "", "two"}, {"y"}), std::invalid_argument,
                    "max 'two' must be a constant with one element, got a constant of shape (2,)");
  EXPECT_THROW_WITH(g.add_node("Clip", {"x", "lo", "hi"}, {"y"}), std::invalid_argument,
                    "min 1.000000 > max 0.000000");
}

// ---- errors -----------------------------------------------------------------

TEST(PolicyGraphErrors, UnsupportedOpIsNamed) {
  PolicyGraph g;
  g.add_input("x", {4});
  EXPECT_THROW_WITH(g.add_node("Conv", {"x"}, {"y"}, {}, "conv1"), std::invalid_argument,
                    "node 'conv1' (Conv): unsupported op Conv (supported: Gemm, MatMul, Add");
}

TEST(PolicyGraphErrors, ShapeMismatchGivesExpectedAndActual) {
  PolicyGraph g;
  g.add_input("obs", {4});
  g.add_param("W", 0, {3, 2});
  EXPECT_THROW_WITH(g.add_node("MatMul", {"obs", "W"}, {"y"}, {}, "mm"), std::invalid_argument,
                    "node 'mm' (MatMul): inner dimensions differ: 'obs' (batch, 4) x 'W' (3, 2) "
                    "(expected 'W' to have 4 rows, got 3)");
  NodeAttributes tb;
  tb.ints["transB"] = 1;
  EXPECT_THROW_WITH(g.add_node("Gemm", {"obs", "W"}, {"y"}, tb, "fc"), std::invalid_argument,
                    "expected B to have 4 columns, got 2");
  g.add_param("b", 6, {3});
  EXPECT_THROW_WITH(g.add_node("Add", {"obs", "b"}, {"y"}), std::invalid_argument,
                    "node #0 (Add): shapes (batch, 4) and (3,) cannot be broadcast together "
                    "(dimension 1: 4 vs 3)");
  g.add_param("W2", 0, {4, 2});
  g.add_param("c", 0, {3});
  EXPECT_THROW_WITH(g.add_node("Gemm", {"obs", "W2", "c"}, {"y"}), std::invalid_argument,
                    "input C 'c' of shape (3,) cannot be broadcast to the output (batch, 2)");
}

TEST(PolicyGraphErrors, BadNodes) {
  PolicyGraph g;
  g.add_input("x", {2});
  EXPECT_THROW_WITH(g.add_node("Relu", {"nope"}, {"y"}), std::invalid_argument,
                    "input 'nope' is not defined");
  EXPECT_THROW_WITH(g.add_node("Relu", {"x"}, {"x"}), std::invalid_argument,
                    "value 'x' is already defined");
  EXPECT_THROW_WITH(g.add_node("Add", {"x"}, {"y"}), std::invalid_argument,
                    "expected 2 inputs, got 1");
  EXPECT_THROW_WITH(g.add_node("Relu", {"x"}, {"y", "z"}), std::invalid_argument,
                    "expected 1 output, got 2");
  NodeAttributes extra;
  extra.floats["slope"] = 0.1f;
  EXPECT_THROW_WITH(g.add_node("Relu", {"x"}, {"y"}, extra), std::invalid_argument,
                    "unknown float attribute 'slope'");
  NodeAttributes axis0;
  axis0.ints["axis"] = 0;
  EXPECT_THROW_WITH(g.add_node("Softmax", {"x"}, {"y"}, axis0), std::invalid_argument,
                    "axis 0 is not supported");
  NodeAttributes bad_trans;
  bad_trans.ints["transA"] = 2;
  g.add_param("W", 0, {2, 2});
  EXPECT_THROW_WITH(g.add_node("Gemm", {"x", "W"}, {"y"}, bad_trans), std::invalid_argument,
                    "attribute transA must be 0 or 1, got 2");
  EXPECT_THROW_WITH(g.add_node("Gemm", {"", "W"}, {"y"}), std::invalid_argument,
                    "input 0 is required but was omitted");
  EXPECT_THROW_WITH(g.add_input("x2", {2}), std::invalid_argument,
                    "already has input 'x'");
  EXPECT_THROW_WITH(g.add_constant("k", {2, 2}, {1, 2, 3}), std::invalid_argument,
                    "constant 'k': shape (2, 2) holds 4 values, got 3");
  EXPECT_THROW_WITH(g.add_output("nope"), std::invalid_argument, "output 'nope'");
  // A failed add_node defines nothing.
  g.add_node("Relu", {"x"}, {"y"});
  g.add_output("y");
  EXPECT_EQ(g.num_nodes(), 1u);
}

TEST(PolicyGraphErrors, BadRunArguments) {
  const PolicyGraph g = LinearGraph();
  const std::vector<float> params(8, 0.0f);
  const std::vector<float> obs(3, 0.0f);
  EXPECT_THROW_WITH(g.run(obs.data(), 1, params.data(), 7), std::invalid_argument,
                    "params holds 7 values, the graph expects num_params = 8");
  EXPECT_THROW_WITH(g.run(obs.data(), 0, params.data(), 8), std::invalid_argument,
                    "batch must be >= 1, got 0");
  EXPECT_THROW_WITH(g.run(nullptr, 1, params.data(), 8), std::invalid_argument,
                    "obs must not be null");
  PolicyGraph empty;
  EXPECT_THROW_WITH(empty.run(obs.data(), 1, nullptr, 0), std::invalid_argument,
                    "the graph has no input");
  EXPECT_THROW_WITH(empty.output_shape(1), std::invalid_argument, "the graph has no output");
}

}  // namespace
}  // namespace evokit
