// PolicyGraph's recurrent state and its LSTM / GRU and layout ops: against a
// reference written out here in double precision from the ONNX equations,
// state carried step by step (one step at a time = one sequence), per member
// in a population, reset at each episode of a rollout, and the refusals.
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <vector>

#include "evokit/policy_graph.h"
#include "evokit/population.h"
#include "evokit/rollout.h"
#include "test_util.h"

namespace evokit {
namespace {

constexpr std::size_t kIn = 3, kHidden = 4;

double sig(double x) { return 1.0 / (1.0 + std::exp(-x)); }

std::vector<float> Params(std::size_t n, float scale, unsigned seed) {
  std::vector<float> p(n);
  unsigned s = seed;
  for (float& v : p) {
    s = s * 1103515245u + 12345u;
    v = scale * (static_cast<float>((s >> 8) % 2001) / 1000.0f - 1.0f);
  }
  return p;
}

// obs (batch, 3) -> Unsqueeze(0) -> LSTM or GRU(h0[, c0]) -> Squeeze(0, 1)
// -> y (batch, 4); hn[, cn] paired with h0[, c0]. W, R, B are parameters.
PolicyGraph RecurrentGraph(bool lstm, bool linear_before_reset = true) {
  const std::size_t gates = lstm ? 4 : 3;
  PolicyGraph g;
  g.add_input("obs", {kIn});
  g.add_state_input("h0", {1, 1, kHidden}, 1);
  if (lstm) g.add_state_input("c0", {1, 1, kHidden}, 1);
  g.add_param("W", 0, {1, gates * kHidden, kIn});
  g.add_param("R", gates * kHidden * kIn, {1, gates * kHidden, kHidden});
  g.add_param("B", gates * kHidden * (kIn + kHidden), {1, 2 * gates * kHidden});
  g.add_int_constant("axes0", {1}, {0});
  g.add_int_constant("axes01", {2}, {0, 1});
  g.add_node("Unsqueeze", {"obs", "axes0"}, {"x"});
  NodeAttributes a;
  a.ints["hidden_size"] = kHidden;
  a.strings["direction"] = {"forward"};
  if (lstm) {
    g.add_node("LSTM", {"x", "W", "R", "B", "", "h0", "c0"}, {"Y", "hn", "cn"}, a, "rnn");
  } else {
    a.ints["linear_before_reset"] = linear_before_reset ? 1 : 0;
    g.add_node("GRU", {"x", "W", "R", "B", "", "h0"}, {"Y", "hn"}, a, "rnn");
  }
  g.add_node("Squeeze", {"Y", "axes01"}, {"y"});
  g.add_output("y");
  g.add_state_output("h0", "hn");
  if (lstm) g.add_state_output("c0", "cn");
  return g;
}

// One step of the ONNX LSTM / GRU for one observation, in double.
void ReferenceStep(bool lstm, bool lbr, const std::vector<float>& p, const float* x,
                   std::vector<double>& h, std::vector<double>& c) {
  const std::size_t H = kHidden, G = lstm ? 4 : 3;
  const float* W = p.data();
  const float* R = W + G * H * kIn;
  const float* B = R + G * H * H;
  const auto xw = [&](std::size_t row) {
    double s = B[row];
    for (std::size_t k = 0; k < kIn; ++k) s += double(W[row * kIn + k]) * x[k];
    return s;
  };
  const auto hr = [&](std::size_t row, const std::vector<double>& v) {
    double s = B[G * H + row];
    for (std::size_t k = 0; k < H; ++k) s += double(R[row * H + k]) * v[k];
    return s;
  };
  std::vector<double> nh(H), nc(H);
  for (std::size_t j = 0; j < H; ++j) {
    if (lstm) {  // gates i, o, f, c
      const double i = sig(xw(j) + hr(j, h)), o = sig(xw(H + j) + hr(H + j, h));
      const double f = sig(xw(2 * H + j) + hr(2 * H + j, h));
      const double g = std::tanh(xw(3 * H + j) + hr(3 * H + j, h));
      nc[j] = f * c[j] + i * g;
      nh[j] = o * std::tanh(nc[j]);
    } else {  // gates z, r, h
      const double z = sig(xw(j) + hr(j, h)), r = sig(xw(H + j) + hr(H + j, h));
      double cand;
      if (lbr) {
        cand = std::tanh(xw(2 * H + j) + r * hr(2 * H + j, h));
      } else {
        std::vector<double> rh(H);
        for (std::size_t k = 0; k < H; ++k) rh[k] = sig(xw(H + k) + hr(H + k, h)) * h[k];
        cand = std::tanh(xw(2 * H + j) + hr(2 * H + j, rh));
      }
      nh[j] = (1 - z) * cand + z * h[j];
    }
  }
  h = nh;
  if (lstm) c = nc;
}

struct Case {
  bool lstm, lbr;
};

class RecurrentOps : public ::testing::TestWithParam<Case> {};

TEST_P(RecurrentOps, StepsMatchTheReferenceWithTheStateCarried) {
  const Case k = GetParam();
  const PolicyGraph g = RecurrentGraph(k.lstm, k.lbr);
  const std::vector<float> p = Params(g.num_params(), 0.8f, k.lstm ? 3u : (k.lbr ? 5u : 7u));
  const std::size_t batch = 2;
  ASSERT_EQ(g.state_size(), (k.lstm ? 2u : 1u) * kHidden);
  std::vector<float> state(batch * g.state_size(), 0.0f);
  std::vector<std::vector<double>> h(batch, std::vector<double>(kHidden)), c = h;
  const std::vector<float> obs = Params(10 * batch * kIn, 2.0f, 11u);
  for (std::size_t t = 0; t < 10; ++t) {
    const float* x = obs.data() + t * batch * kIn;
    const std::vector<float> y = g.run(x, batch, p.data(), p.size(), state.data());
    for (std::size_t b = 0; b < batch; ++b) {
      ReferenceStep(k.lstm, k.lbr, p, x + b * kIn, h[b], c[b]);
      for (std::size_t j = 0; j < kHidden; ++j) {
        EXPECT_NEAR(y[b * kHidden + j], h[b][j], 2e-6) << "step " << t << " row " << b;
        // The state buffer: h (1, batch, 4), then c.
        EXPECT_NEAR(state[b * kHidden + j], h[b][j], 2e-6);
        if (k.lstm) EXPECT_NEAR(state[batch * kHidden + b * kHidden + j], c[b][j], 2e-6);
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Cells, RecurrentOps,
                         ::testing::Values(Case{true, false}, Case{false, true},
                                           Case{false, false}));

TEST(RecurrentState, PopulationRowsAreEachMembersOwnState) {
  const PolicyGraph g = RecurrentGraph(true);
  const std::size_t n = 3, p = g.num_params();
  std::vector<float> params;
  for (unsigned i = 0; i < n; ++i) {
    const std::vector<float> row = Params(p, 0.7f, 20u + i);
    params.insert(params.end(), row.begin(), row.end());
  }
  const Population pop(params, n, p);
  const std::vector<float> obs = Params(n * kIn, 1.5f, 4u);
  std::vector<float> state(n * g.state_size(), 0.0f), out(n * kHidden);
  const unsigned char active[] = {1, 0, 1};
  for (int t = 0; t < 4; ++t) run_population(g, pop, obs.data(), out.data(), active, 2, state.data());
  for (std::size_t i = 0; i < n; ++i) {  // each row: the member run alone
    std::vector<float> alone(g.state_size(), 0.0f);
    std::vector<float> y;
    const std::vector<float> mine(params.begin() + i * p, params.begin() + (i + 1) * p);
    for (int t = 0; t < 4; ++t) y = g.run(obs.data() + i * kIn, 1, mine.data(), p, alone.data());
    for (std::size_t j = 0; j < g.state_size(); ++j) {
      EXPECT_EQ(state[i * g.state_size() + j], active[i] ? alone[j] : 0.0f) << i << " " << j;
    }
  }
  EXPECT_THROW_WITH(run_population(g, pop, obs.data(), out.data()), std::invalid_argument,
                    "state must not be null");
}

TEST(RecurrentState, EveryEpisodeStartsFromZero) {
  const PolicyGraph g = RecurrentGraph(false);
  const std::size_t p = g.num_params();
  const Population pop(Params(p, 0.5f, 9u), 1, p);
  const PolicyGraph::Plan plan = prepare_rollouts(g, pop, nullptr, 0, 1, 1);
  EpisodePolicy policy(g, plan, pop);
  const float obs[kIn] = {0.5f, -1.0f, 2.0f};
  std::vector<float> first(kHidden), second(kHidden), again(kHidden);
  policy.load(0);
  policy.act(obs, first.data());
  policy.act(obs, second.data());
  EXPECT_NE(first, second);  // the state moved on
  policy.load(0);            // a new episode
  policy.act(obs, again.data());
  EXPECT_EQ(first, again);
}

TEST(RecurrentState, RefusalsNameTheNodeOrState) {
  PolicyGraph g = RecurrentGraph(true);
  EXPECT_THROW_WITH(g.run(nullptr, 1, nullptr, 0), std::invalid_argument,
                    "the graph is recurrent (state input 'h0'): run it with a state buffer");
  EXPECT_THROW_WITH(g.add_state_output("h0", "y"), std::invalid_argument,
                    "state input 'h0' is already paired with output 'hn'");
  PolicyGraph unpaired;
  unpaired.add_input("obs", {2});
  unpaired.add_state_input("s", {1, 1, 2}, 1);
  unpaired.add_node("Identity", {"obs"}, {"y"});
  unpaired.add_output("y");
  EXPECT_THROW_WITH(unpaired.compile(1), std::invalid_argument,
                    "state input 's' has no output paired with it (add_state_output)");
  EXPECT_THROW_WITH(unpaired.add_state_output("s", "y"), std::invalid_argument,
                    "state output 'y' has shape (batch, 2), its state input 's' has shape "
                    "(1, batch, 2)");
  PolicyGraph bidi;
  bidi.add_input("obs", {kIn});
  bidi.add_param("W", 0, {2, 16, kIn});
  bidi.add_param("R", 96, {2, 16, kHidden});
  bidi.add_int_constant("axes0", {1}, {0});
  bidi.add_node("Unsqueeze", {"obs", "axes0"}, {"x"});
  NodeAttributes a;
  a.ints["hidden_size"] = kHidden;
  a.strings["direction"] = {"bidirectional"};
  EXPECT_THROW_WITH(bidi.add_node("LSTM", {"x", "W", "R"}, {"Y"}, a, "rnn"), std::invalid_argument,
                    "node 'rnn' (LSTM): direction ['bidirectional'] is not supported (only "
                    "'forward')");
  a.strings.clear();
  EXPECT_THROW_WITH(bidi.add_node("LSTM", {"x", "W", "R"}, {"Y"}, a, "rnn"), std::invalid_argument,
                    "node 'rnn' (LSTM): input W 'W' has shape (2, 16, 3), expected (1, 16, 3)");
  EXPECT_THROW_WITH(bidi.add_node("Add", {"x", "axes0"}, {"z"}, {}, "add"), std::invalid_argument,
                    "node 'add' (Add): input 'axes0' is an integer tensor (shapes, axes and "
                    "indices only); the native policy computes on FLOAT tensors only");
}

TEST(LayoutOps, TransposeAndSliceMoveDataReshapeKeepsIt) {
  PolicyGraph g;
  g.add_input("obs", {2, 3});
  g.add_int_constant("starts", {1}, {1});
  g.add_int_constant("ends", {1}, {3});
  g.add_int_constant("axes", {1}, {2});
  g.add_int_constant("shape", {2}, {-1, 4});
  NodeAttributes perm;
  perm.int_lists["perm"] = {0, 2, 1};
  g.add_node("Transpose", {"obs"}, {"t"}, perm);          // (batch, 3, 2)
  g.add_node("Slice", {"obs", "starts", "ends", "axes"}, {"s"});  // (batch, 2, 2)
  g.add_node("Reshape", {"s", "shape"}, {"r"});            // (batch, 4)
  g.add_node("Flatten", {"t"}, {"tf"});
  g.add_node("Add", {"tf", "tf"}, {"y"});
  g.add_output("y");
  g.add_output("r");
  const float obs[] = {1, 2, 3, 4, 5, 6};
  const std::vector<float> y = g.run(obs, 1, nullptr, 0);
  EXPECT_EQ(y, (std::vector<float>{2, 8, 4, 10, 6, 12}));
  PolicyGraph slice;
  slice.add_input("obs", {2, 3});
  slice.add_int_constant("starts", {1}, {1});
  slice.add_int_constant("ends", {1}, {3});
  slice.add_int_constant("axes", {1}, {2});
  slice.add_node("Slice", {"obs", "starts", "ends", "axes"}, {"y"});
  slice.add_output("y");
  EXPECT_EQ(slice.run(obs, 1, nullptr, 0), (std::vector<float>{2, 3, 5, 6}));
  EXPECT_THROW_WITH(slice.add_node("Reshape", {"y", "shape"}, {"z"}, {}, "rs"),
                    std::invalid_argument, "node 'rs' (Reshape): input 'shape' is not defined");
  slice.add_int_constant("fixed", {2}, {2, 2});
  EXPECT_THROW_WITH(slice.add_node("Reshape", {"y", "fixed"}, {"z"}, {}, "rs"),
                    std::invalid_argument,
                    "node 'rs' (Reshape): cannot reshape 'y' (batch, 2, 2) to [2, 2]: it holds 4 "
                    "elements, the input 4*batch");
}

TEST(LayoutOps, ShapeArithmeticIsEvaluatedWithTheBatchSymbolic) {
  // obs (batch, 2, 3) -> Reshape to Concat(Shape(obs)[0:1], [6]) = (batch, 6).
  PolicyGraph g;
  g.add_input("obs", {2, 3});
  g.add_int_constant("zero", {1}, {0});
  g.add_int_constant("one", {1}, {1});
  g.add_int_constant("six", {1}, {6});
  g.add_node("Shape", {"obs"}, {"shape"});
  g.add_node("Slice", {"shape", "zero", "one"}, {"batch"});
  NodeAttributes axis0;
  axis0.ints["axis"] = 0;
  g.add_node("Concat", {"batch", "six"}, {"target"}, axis0);
  g.add_node("Reshape", {"obs", "target"}, {"flat"});
  g.add_node("Identity", {"flat"}, {"y"});
  g.add_output("y");
  EXPECT_EQ(g.output_shape(3), (std::vector<std::size_t>{3, 6}));
  // The arithmetic was evaluated when built, Reshape and Identity are
  // aliases: nothing runs.
  EXPECT_EQ(g.compile(2).workspace_size(), 0u);
  const std::vector<float> obs(12, 1.5f);
  EXPECT_EQ(g.run(obs.data(), 2, nullptr, 0), obs);
  EXPECT_THROW_WITH(g.add_node("Mul", {"batch", "batch"}, {"sq"}, {}, "sq"), std::invalid_argument,
                    "node 'sq' (Mul): cannot compute batch * batch for every batch size");
  EXPECT_THROW_WITH(g.add_node("Unsqueeze", {"obs", "batch"}, {"u"}, {}, "u"),
                    std::invalid_argument, "node 'u' (Unsqueeze): axes 'batch' depends on the "
                                           "batch size");
  EXPECT_THROW_WITH(g.add_node("Concat", {"obs", "six"}, {"c"}, axis0, "c"), std::invalid_argument,
                    "node 'c' (Concat): input 'six' is an integer tensor (shapes, axes and indices "
                    "only); the native policy computes on FLOAT tensors only");
}

}  // namespace
}  // namespace evokit
