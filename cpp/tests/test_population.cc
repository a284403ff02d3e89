// Population forward pass: every member bit-identical to PolicyGraph::run on
// its materialised parameters (GaussianSampler::perturb), over random MLPs;
// thread invariance; masking; noise read in place; errors. Also the Tanh
// approximation and Plan/execute against run(). And the native CartPole:
// numpy's seeding and gymnasium's dynamics (reference values computed with
// numpy 2.4 / gymnasium 1.4; tests/evaluation/test_cartpole_native.py
// compares against them directly), and rollouts against a step-by-step loop.
#include "evokit/population.h"
#include "evokit/cartpole.h"
#include "evokit/env.h"
#include "evokit/numpy_random.h"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstring>
#include <set>
#include <cstdint>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "evokit/gaussian_sampler.h"
#include "evokit/policy_graph.h"
#include "test_util.h"

namespace evokit {
namespace {

using testing::SameBits;
using testing::ThrowsWithMessage;

// A random MLP: per layer a Gemm (transB 0 or 1, bias (n,) or (1, n)) or a
// MatMul followed by an Add of the bias, then a random activation; optionally
// a Softmax head. Parameters are laid out layer by layer from offset 0.
struct RandomMlp {
  PolicyGraph graph;
  std::size_t obs_size = 0;
  std::size_t out_size = 0;
};

RandomMlp MakeRandomMlp(std::mt19937& rng) {
  std::uniform_int_distribution<int> width(1, 24), depth(0, 3), coin(0, 1), act(0, 3);
  RandomMlp mlp;
  mlp.obs_size = static_cast<std::size_t>(width(rng));
  PolicyGraph& g = mlp.graph;
  g.add_input("obs", {mlp.obs_size});
  std::string x = "obs";
  std::size_t in = mlp.obs_size, offset = 0;
  const int layers = depth(rng) + 1;
  for (int l = 0; l < layers; ++l) {
    const auto out = static_cast<std::size_t>(width(rng));
    const std::string p = "l" + std::to_string(l);
    const bool trans_b = coin(rng) == 1;
    const bool use_gemm = coin(rng) == 1 || trans_b;
    g.add_param(p + ".w", offset, trans_b ? std::vector<std::size_t>{out, in}
                                          : std::vector<std::size_t>{in, out});
    offset += in * out;
    g.add_param(p + ".b", offset, coin(rng) ? std::vector<std::size_t>{out}
                                            : std::vector<std::size_t>{1, out});
    offset += out;
    if (use_gemm) {
      NodeAttributes attrs;
      attrs.ints["transB"] = trans_b ? 1 : 0;
      g.add_node("Gemm", {x, p + ".w", p + ".b"}, {p + ".y"}, attrs);
    } else {
      g.add_node("MatMul", {x, p + ".w"}, {p + ".mm"});
      g.add_node("Add", {p + ".mm", p + ".b"}, {p + ".y"});
    }
    x = p + ".y";
    const bool last = l + 1 == layers;
    static const char* kActs[] = {"Tanh", "Relu", "Sigmoid", "Identity"};
    if (!last) {
      g.add_node(kActs[act(rng)], {x}, {p + ".a"});
      x = p + ".a";
    } else if (coin(rng)) {
      g.add_node("Softmax", {x}, {"probs"});
      x = "probs";
    }
    in = out;
  }
  g.add_output(x);
  mlp.out_size = in;
  return mlp;
}

std::vector<float> Normal(std::mt19937& rng, std::size_t n, float scale = 1.0f) {
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

GaussianSampler MakeSampler(std::size_t num_params, bool cached, float sigma = 0.1f) {
  GaussianSamplerOptions o;
  o.seed = 7;
  o.sigma = sigma;
  o.cached = cached;
  o.cache_size = num_params + 5000;
  o.num_params = num_params;
  return GaussianSampler(o);
}

// Member i run alone through PolicyGraph::run on its materialised parameters.
std::vector<float> Reference(const PolicyGraph& g, const GaussianSampler& sampler,
                             const std::vector<float>& centre, std::int64_t key, float sign,
                             const float* obs) {
  std::vector<float> params = centre;
  if (sign != 0.0f) sampler.perturb(centre.data(), key, sign, params.data(), 1);
  return g.run(obs, 1, params.data(), params.size());
}

class PopulationRandom : public ::testing::TestWithParam<bool> {};

TEST_P(PopulationRandom, EveryMemberHasTheBitsOfItsMaterialisedParameters) {
  const bool cached = GetParam();
  std::mt19937 rng(cached ? 11 : 12);
  for (int trial = 0; trial < 40; ++trial) {
    const RandomMlp mlp = MakeRandomMlp(rng);
    const PolicyGraph& g = mlp.graph;
    const GaussianSampler sampler = MakeSampler(g.num_params(), cached, trial % 2 ? 0.5f : 0.02f);
    const std::size_t n = 1 + rng() % 9;
    std::vector<std::int64_t> keys(n);
    std::vector<float> signs(n);
    for (std::size_t i = 0; i < n; ++i) {
      // antithetic pairs, and now and then the centre itself (sign 0)
      keys[i] = i % 2 == 1 ? keys[i - 1] : sampler.draw_key(trial, i, 0);
      signs[i] = i + 1 == n && trial % 3 == 0 ? 0.0f : (i % 2 == 1 ? -1.0f : 1.0f);
    }
    const std::vector<float> centre = Normal(rng, g.num_params(), 0.5f);
    const std::vector<float> obs = Normal(rng, n * mlp.obs_size, 2.0f);
    const Population pop(sampler, centre, keys, signs);
    std::vector<float> out(n * mlp.out_size, -7.0f);
    run_population(g, pop, obs.data(), out.data());
    for (std::size_t i = 0; i < n; ++i) {
      const std::vector<float> want =
          Reference(g, sampler, centre, keys[i], signs[i], obs.data() + i * mlp.obs_size);
      const std::vector<float> got(out.begin() + static_cast<std::ptrdiff_t>(i * mlp.out_size),
                                   out.begin() + static_cast<std::ptrdiff_t>((i + 1) * mlp.out_size));
      ASSERT_TRUE(SameBits(got, want)) << "trial " << trial << ", member " << i;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(CachedAndUncached, PopulationRandom, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "cached" : "uncached"; });

TEST(Population, ExplicitRowsMatchRun) {
  std::mt19937 rng(3);
  for (int trial = 0; trial < 20; ++trial) {
    const RandomMlp mlp = MakeRandomMlp(rng);
    const std::size_t n = 1 + rng() % 6, p = mlp.graph.num_params();
    const std::vector<float> params = Normal(rng, n * p);
    const std::vector<float> obs = Normal(rng, n * mlp.obs_size);
    const Population pop(params, n, p);
    std::vector<float> out(n * mlp.out_size);
    run_population(mlp.graph, pop, obs.data(), out.data());
    for (std::size_t i = 0; i < n; ++i) {
      const std::vector<float> want =
          mlp.graph.run(obs.data() + i * mlp.obs_size, 1, params.data() + i * p, p);
      const std::vector<float> got(out.begin() + static_cast<std::ptrdiff_t>(i * mlp.out_size),
                                   out.begin() + static_cast<std::ptrdiff_t>((i + 1) * mlp.out_size));
      ASSERT_TRUE(SameBits(got, want)) << "trial " << trial << ", member " << i;
    }
  }
}

// Keys and signs of n members in antithetic pairs (+1, -1), generation 1.
std::pair<std::vector<std::int64_t>, std::vector<float>> AntitheticPairs(const GaussianSampler& sampler,
                                                                         std::size_t n) {
  std::vector<std::int64_t> keys(n);
  std::vector<float> signs(n);
  for (std::size_t i = 0; i < n; ++i) {
    keys[i] = sampler.draw_key(1, i / 2, 0);
    signs[i] = i % 2 ? -1.0f : 1.0f;
  }
  return {keys, signs};
}

// A 4-64-64-2 tanh MLP of Gemms (init_mlp's layout), the benchmark's policy.
RandomMlp MakeWideMlp() {
  RandomMlp mlp;
  PolicyGraph& g = mlp.graph;
  g.add_input("obs", {4});
  std::string x = "obs";
  std::size_t in = 4, offset = 0;
  const std::size_t sizes[] = {64, 64, 2};
  for (std::size_t l = 0; l < 3; ++l) {
    const std::string p = "l" + std::to_string(l);
    g.add_param(p + ".w", offset, {in, sizes[l]});
    offset += in * sizes[l];
    g.add_param(p + ".b", offset, {sizes[l]});
    offset += sizes[l];
    g.add_node("Gemm", {x, p + ".w", p + ".b"}, {p + ".y"});
    x = p + ".y";
    if (l < 2) {
      g.add_node("Tanh", {x}, {p + ".a"});
      x = p + ".a";
    }
    in = sizes[l];
  }
  g.add_output(x);
  mlp.obs_size = 4;
  mlp.out_size = 2;
  return mlp;
}

TEST(Population, BitIdenticalForAnyThreadCount) {
  // Enough work (301 members x 4610 parameters) for teams of up to 5 threads.
  std::mt19937 rng(5);
  const RandomMlp mlp = MakeWideMlp();
  const GaussianSampler sampler = MakeSampler(mlp.graph.num_params(), true);
  const std::size_t n = 301;
  const auto [keys, signs] = AntitheticPairs(sampler, n);
  const Population pop(sampler, Normal(rng, mlp.graph.num_params()), keys, signs);
  const std::vector<float> obs = Normal(rng, n * mlp.obs_size);
  std::vector<float> one(n * mlp.out_size);
  run_population(mlp.graph, pop, obs.data(), one.data(), nullptr, 1);
  for (int threads : {2, 3, 8}) {
    std::vector<float> many(n * mlp.out_size);
    run_population(mlp.graph, pop, obs.data(), many.data(), nullptr, threads);
    EXPECT_TRUE(SameBits(one, many)) << threads << " threads";
  }
}

TEST(Population, InactiveMembersAreSkippedAndKeepTheirRows) {
  std::mt19937 rng(6);
  const RandomMlp mlp = MakeRandomMlp(rng);
  const std::size_t n = 6, p = mlp.graph.num_params();
  const Population pop(Normal(rng, n * p), n, p);
  const std::vector<float> obs = Normal(rng, n * mlp.obs_size);
  std::vector<float> all(n * mlp.out_size);
  run_population(mlp.graph, pop, obs.data(), all.data());
  const std::vector<unsigned char> active{1, 0, 0, 1, 0, 1};
  for (int threads : {1, 2}) {
    std::vector<float> masked(n * mlp.out_size, 42.0f);
    run_population(mlp.graph, pop, obs.data(), masked.data(), active.data(), threads);
    for (std::size_t i = 0; i < n; ++i) {
      for (std::size_t j = 0; j < mlp.out_size; ++j) {
        const float want = active[i] ? all[i * mlp.out_size + j] : 42.0f;
        EXPECT_EQ(masked[i * mlp.out_size + j], want) << "member " << i;
      }
    }
  }
  // No member active: nothing is written.
  const std::vector<unsigned char> none(n, 0);
  std::vector<float> untouched(n * mlp.out_size, 1.5f);
  run_population(mlp.graph, pop, obs.data(), untouched.data(), none.data(), 2);
  for (float v : untouched) EXPECT_EQ(v, 1.5f);
}

TEST(Population, CachedNoiseIsReadInPlaceAndTheCentreIsHeldOnce) {
  const GaussianSampler sampler = MakeSampler(10, true);
  Population pop(sampler, std::vector<float>(10, 1.0f), {3, 3, 50, 0}, {1, -1, 1, 0});
  ASSERT_EQ(pop.size(), 4u);
  const float* table = sampler.table()->data();
  EXPECT_EQ(pop.member(0).noise, table + 3);
  EXPECT_EQ(pop.member(1).noise, table + 3);
  EXPECT_EQ(pop.member(2).noise, table + 50);
  EXPECT_EQ(pop.member(3).noise, nullptr);  // the centre
  EXPECT_EQ(pop.member(0).scale, 0.1f);
  EXPECT_EQ(pop.member(1).scale, -0.1f);
  for (std::size_t i = 0; i < 4; ++i) EXPECT_EQ(pop.member(i).base, pop.member(0).base);
  EXPECT_THROW(pop.member(4), std::out_of_range);
  // Moving keeps the views valid.
  const Population moved(std::move(pop));
  EXPECT_EQ(moved.member(2).noise, table + 50);
  EXPECT_EQ(moved.member(3).base[0], 1.0f);
}

TEST(Population, UncachedNoiseIsGeneratedOncePerDistinctKey) {
  const GaussianSampler sampler = MakeSampler(10, false);
  const Population pop(sampler, std::vector<float>(10, 0.0f), {8, 8, 9}, {1, -1, 1});
  EXPECT_EQ(pop.member(0).noise, pop.member(1).noise);  // an antithetic pair shares it
  EXPECT_NE(pop.member(0).noise, pop.member(2).noise);
  std::vector<float> eps(10);
  sampler.noise(9, eps.data());
  EXPECT_TRUE(SameBits(std::vector<float>(pop.member(2).noise, pop.member(2).noise + 10), eps));
}

// A parameter where the kernels take a plain array (Gemm's A, an activation's
// input, the output itself) is copied, perturbed, into the workspace: the bits
// still match.
TEST(Population, ParametersOutsideTheFusedOperandsAreCopiedWithTheSameBits) {
  PolicyGraph g;
  g.add_input("obs", {3});
  g.add_param("a", 0, {1, 3});   // Gemm A from the parameters
  g.add_param("w", 3, {3, 3});
  g.add_param("bias", 12, {3});
  g.add_node("Tanh", {"bias"}, {"tb"});             // activation of a parameter
  g.add_node("Gemm", {"a", "w", "tb"}, {"row"});     // (1, 3)
  g.add_node("Add", {"obs", "row"}, {"y"});           // broadcast over the batch
  g.add_node("Identity", {"w"}, {"w_out"});
  g.add_output("y");
  const GaussianSampler sampler = MakeSampler(g.num_params(), true, 0.3f);
  std::mt19937 rng(8);
  const std::vector<float> centre = Normal(rng, g.num_params());
  const std::vector<std::int64_t> keys{17, 17, 400};
  const std::vector<float> signs{1, -1, 1};
  const Population pop(sampler, centre, keys, signs);
  const std::vector<float> obs = Normal(rng, 3 * 3);
  std::vector<float> out(3 * 3);
  run_population(g, pop, obs.data(), out.data(), nullptr, 2);
  for (std::size_t i = 0; i < 3; ++i) {
    const std::vector<float> want = Reference(g, sampler, centre, keys[i], signs[i], obs.data() + 3 * i);
    EXPECT_TRUE(SameBits(std::vector<float>(out.begin() + 3 * i, out.begin() + 3 * i + 3), want))
        << "member " << i;
  }
}

TEST(Population, Errors) {
  const GaussianSampler sampler = MakeSampler(8, true);
  const std::vector<float> centre(8, 0.0f);
  EXPECT_TRUE(ThrowsWithMessage<std::invalid_argument>(
      [&] { Population(sampler, std::vector<float>(7), {1}, {1}); },
      "centre holds 7 values, the sampler has num_params = 8"));
  EXPECT_TRUE(ThrowsWithMessage<std::invalid_argument>(
      [&] { Population(sampler, centre, {1, 2}, {1}); },
      "keys and signs must have the same length, got 2 keys and 1 signs"));
  EXPECT_TRUE(ThrowsWithMessage<std::invalid_argument>(
      [&] { Population(sampler, centre, {1, 2}, {1, 0.5f}); },
      "sign of member 1 must be +1, -1 or 0 (the centre), got 0.5"));
  EXPECT_TRUE(ThrowsWithMessage<std::out_of_range>(
      [&] { Population(sampler, centre, {1, 6000}, {1, -1}); }, "member 1: key 6000"));
  // The centre's key is not used, so it is not checked.
  EXPECT_NO_THROW(Population(sampler, centre, {-1}, {0}));
  EXPECT_TRUE(ThrowsWithMessage<std::invalid_argument>(
      [&] { Population(std::vector<float>(5), 2, 3); },
      "params holds 5 values, expected num_members * num_params = 2 * 3"));

  PolicyGraph g;
  g.add_input("obs", {2});
  g.add_param("w", 0, {2, 2});
  g.add_node("MatMul", {"obs", "w"}, {"y"});
  g.add_output("y");
  const Population wrong(sampler, centre, {1}, {1});
  const Population right(std::vector<float>(4, 1.0f), 1, 4);
  std::vector<float> obs(2, 1.0f), out(2);
  EXPECT_TRUE(ThrowsWithMessage<std::invalid_argument>(
      [&] { run_population(g, wrong, obs.data(), out.data()); },
      "the population's members have 8 parameters, the graph expects num_params = 4"));
  EXPECT_TRUE(ThrowsWithMessage<std::invalid_argument>(
      [&] { run_population(g, right, nullptr, out.data()); }, "obs must not be null"));
  EXPECT_TRUE(ThrowsWithMessage<std::invalid_argument>(
      [&] { run_population(g, right, obs.data(), nullptr); }, "out must not be null"));
  EXPECT_TRUE(ThrowsWithMessage<std::invalid_argument>(
      [&] { run_population(g, right, obs.data(), out.data(), nullptr, 0); },
      "num_threads must be >= 1, got 0"));
  EXPECT_TRUE(ThrowsWithMessage<std::invalid_argument>(
      [&] { run_population(g, obs.data(), 0, right.members().data(), out.data()); },
      "the population is empty"));
  PolicyGraph no_output;
  no_output.add_input("obs", {4});
  EXPECT_TRUE(ThrowsWithMessage<std::invalid_argument>(
      [&] { run_population(no_output, obs.data(), 1, right.members().data(), out.data()); },
      "the graph has no output"));
}

// ---- the kernels underneath ---------------------------------------------------

TEST(PolicyGraphPlan, ExecuteMatchesRunForBatches) {
  std::mt19937 rng(9);
  for (int trial = 0; trial < 20; ++trial) {
    const RandomMlp mlp = MakeRandomMlp(rng);
    const PolicyGraph& g = mlp.graph;
    const std::size_t batch = 1 + rng() % 7;
    const std::vector<float> params = Normal(rng, g.num_params());
    const std::vector<float> obs = Normal(rng, batch * mlp.obs_size);
    const PolicyGraph::Plan plan = g.compile(batch);
    EXPECT_EQ(plan.batch(), batch);
    EXPECT_EQ(plan.output_size(), batch * mlp.out_size);
    EXPECT_EQ(plan.output_shape(), g.output_shape(batch));
    std::vector<float> workspace(plan.workspace_size()), out(plan.output_size());
    g.execute(plan, obs.data(), ParamView{params.data(), nullptr, 0.0f}, workspace.data(),
              out.data());
    const std::vector<float> want = g.run(obs.data(), batch, params.data(), params.size());
    ASSERT_TRUE(SameBits(out, want)) << "trial " << trial;
    // Rows of a batch are independent: row r alone gives the same bits.
    for (std::size_t r = 0; r < batch; ++r) {
      const std::vector<float> row = g.run(obs.data() + r * mlp.obs_size, 1, params.data(), params.size());
      ASSERT_TRUE(SameBits(row, std::vector<float>(want.begin() + static_cast<std::ptrdiff_t>(r * mlp.out_size),
                                                   want.begin() + static_cast<std::ptrdiff_t>((r + 1) * mlp.out_size))))
          << "trial " << trial << ", row " << r;
    }
  }
}

TEST(PolicyGraphPlan, CompileErrors) {
  PolicyGraph g;
  EXPECT_TRUE(ThrowsWithMessage<std::invalid_argument>([&] { g.compile(1); }, "the graph has no input"));
  g.add_input("obs", {2});
  EXPECT_TRUE(ThrowsWithMessage<std::invalid_argument>([&] { g.compile(1); }, "the graph has no output"));
  g.add_output("obs");
  EXPECT_TRUE(ThrowsWithMessage<std::invalid_argument>([&] { g.compile(0); }, "batch must be >= 1, got 0"));
  EXPECT_EQ(g.compile(3).output_size(), 6u);
}

TEST(TanhApprox, WithinOneMillionthOfTanhEverywhere) {
  double worst = 0.0;
  for (int i = -120000; i <= 120000; ++i) {
    const float x = static_cast<float>(i) * 1e-4f;  // [-12, 12]
    const double err = std::fabs(static_cast<double>(detail::tanh_approx(x)) - std::tanh(static_cast<double>(x)));
    worst = std::max(worst, err);
  }
  EXPECT_LT(worst, 1e-6);
  // Small arguments keep their relative accuracy: tanh(x) = x below 0.0004.
  EXPECT_EQ(detail::tanh_approx(1e-30f), 1e-30f);
  EXPECT_EQ(detail::tanh_approx(0.0f), 0.0f);
  EXPECT_LT(std::fabs(detail::tanh_approx(0.001f) / std::tanh(0.001) - 1.0), 1e-6);
}

TEST(TanhApprox, OddBoundedAndSpecialValues) {
  std::mt19937 rng(1);
  std::normal_distribution<float> d(0.0f, 4.0f);
  for (int i = 0; i < 10000; ++i) {
    const float x = d(rng);
    const float y = detail::tanh_approx(x);
    EXPECT_EQ(detail::tanh_approx(-x), -y);
    EXPECT_LE(std::fabs(y), 1.0f);
  }
  EXPECT_EQ(detail::tanh_approx(INFINITY), 1.0f);
  EXPECT_EQ(detail::tanh_approx(-INFINITY), -1.0f);
  EXPECT_EQ(detail::tanh_approx(100.0f), 1.0f);
  EXPECT_TRUE(std::isnan(detail::tanh_approx(NAN)));
}

// ---- CartPole ------------------------------------------------------------------

std::uint64_t Bits(double x) {
  std::uint64_t b;
  std::memcpy(&b, &x, sizeof b);
  return b;
}

TEST(CartPole, SeedSequenceIsNumpys) {
  // np.random.SeedSequence(s).generate_state(4, np.uint64)
  const std::array<std::uint64_t, 4> s0 = detail::seed_sequence_state(0);
  EXPECT_EQ(s0, (std::array<std::uint64_t, 4>{0xdb2cd7e7b0f478beull, 0xabf4641a2c71ba49ull,
                                               0x20c6ed6d9d7b8d41ull, 0x2c4099de223c39d4ull}));
  const std::array<std::uint64_t, 4> s1 = detail::seed_sequence_state(1099511627783ull);  // 2 words
  EXPECT_EQ(s1, (std::array<std::uint64_t, 4>{0x0d8672e10e3d1a15ull, 0x9aef4ada4ecfa161ull,
                                               0x999c1c3b83dba903ull, 0x408927dc0dc8a316ull}));
}

TEST(CartPole, ResetIsGymnasiums) {
  // Generator(PCG64(12345)).uniform(-0.05, 0.05, 4)
  const CartPoleState s = cartpole_reset(12345);
  EXPECT_EQ(s.x, -0x1.bebb8fa85334dp-6);
  EXPECT_EQ(s.x_dot, -0x1.2c391f748d7b4p-6);
  EXPECT_EQ(s.theta, 0x1.e7341cdae81f8p-6);
  EXPECT_EQ(s.theta_dot, 0x1.20c6912a835f8p-6);
  const CartPoleState z = cartpole_reset(0);
  EXPECT_EQ(Bits(z.x), Bits(0x1.c0cbca647ced0p-7));
}

TEST(CartPole, StepIsGymnasiums) {
  CartPoleState s = cartpole_reset(0);
  for (int a : {1, 1, 0}) EXPECT_FALSE(cartpole_step(s, a));
  EXPECT_EQ(s.x, 0x1.8a32d4e6fd2a9p-6);
  EXPECT_EQ(s.x_dot, 0x1.64aa1b34b7386p-3);
  EXPECT_EQ(s.theta, -0x1.13528ddc5ed1dp-4);
  EXPECT_EQ(s.theta_dot, -0x1.8c50a0d5eebcdp-2);
  // Always pushing right drops the pole within a few dozen steps.
  int steps = 1;
  while (!cartpole_step(s, 1)) ++steps;
  EXPECT_LT(steps, 100);
  EXPECT_THROW_WITH(cartpole_step(s, 2), std::invalid_argument, "CartPole action must be 0 or 1, got 2");
}

TEST(CartPole, RolloutsEqualAStepByStepLoopForAnyThreadCount) {
  const RandomMlp mlp = MakeWideMlp();
  const GaussianSampler sampler = MakeSampler(mlp.graph.num_params(), true, 0.5f);
  std::vector<float> centre(mlp.graph.num_params(), 0.0f);
  const std::size_t n = 12;
  auto [keys, signs] = AntitheticPairs(sampler, n);
  signs[n - 1] = 0.0f;  // the centre
  const Population pop(sampler, centre, keys, signs);
  std::vector<std::size_t> members;
  std::vector<std::uint64_t> seeds;
  // 120 episodes x 4610 parameters: enough work for 2 threads (useful_threads).
  for (std::size_t e = 0; e < 120; ++e) {
    members.push_back(e % n);
    seeds.push_back(e * 7919);
  }
  const int max_steps = 200;
  std::vector<std::int64_t> want(members.size());
  const PolicyGraph::Plan plan = mlp.graph.compile(1);
  std::vector<float> workspace(plan.workspace_size());
  for (std::size_t e = 0; e < members.size(); ++e) {
    // The reference: PolicyGraph::run on the materialised member.
    std::vector<float> params(mlp.graph.num_params());
    if (signs[members[e]] == 0.0f) {
      params = centre;
    } else {
      sampler.perturb(centre.data(), keys[members[e]], signs[members[e]], params.data(), 1);
    }
    CartPoleState s = cartpole_reset(seeds[e]);
    std::int64_t steps = 0;
    while (steps < max_steps) {
      const std::array<float, 4> obs = cartpole_observation(s);
      const std::vector<float> out = mlp.graph.run(obs.data(), 1, params.data(), params.size());
      ++steps;
      if (cartpole_step(s, out[1] > out[0] ? 1 : 0)) break;
    }
    want[e] = steps;
  }
  std::set<std::int64_t> distinct(want.begin(), want.end());
  EXPECT_GT(distinct.size(), 3u);  // episodes of different lengths
  for (int threads : {1, 2, 3}) {
    std::vector<std::int64_t> got(members.size(), -1);
    std::vector<double> returns(members.size());
    env_rollouts(*make_env("CartPole-v1"), mlp.graph, pop, members.data(),
                 EpisodeStarts{seeds.data(), nullptr}, members.size(), max_steps, nullptr,
                 RolloutOutputs{returns.data(), got.data()}, threads);
    // A reward of 1 per step.
    EXPECT_EQ(std::vector<double>(got.begin(), got.end()), returns) << threads << " threads";
    EXPECT_EQ(got, want) << threads << " threads";
  }
}

TEST(CartPole, RolloutErrors) {
  const RandomMlp mlp = MakeWideMlp();
  const GaussianSampler sampler = MakeSampler(mlp.graph.num_params(), true);
  const Population pop(sampler, std::vector<float>(mlp.graph.num_params()), {0}, {0.0f});
  const std::shared_ptr<const Env> env = make_env("CartPole-v1");
  const std::size_t member = 1;
  const std::uint64_t seed = 0;
  const EpisodeStarts from_seed{&seed, nullptr};
  double ret = 0.0;
  std::int64_t length = 0;
  const RolloutOutputs out{&ret, &length};
  EXPECT_THROW_WITH(env_rollouts(*env, mlp.graph, pop, &member, from_seed, 1, 500, nullptr, out, 1),
                    std::out_of_range, "episode 0: member 1 is out of range for a population of 1");
  const std::size_t zero = 0;
  EXPECT_THROW_WITH(env_rollouts(*env, mlp.graph, pop, &zero, from_seed, 1, 0, nullptr, out, 1),
                    std::invalid_argument, "max_steps must be >= 1, got 0");
  EXPECT_THROW_WITH(env_rollouts(*env, mlp.graph, pop, &zero, from_seed, 1, 500, nullptr,
                                 RolloutOutputs{&ret, nullptr}, 1),
                    std::invalid_argument, "CartPole-v1: rollouts need returns, lengths");
  const double state[4] = {};
  EXPECT_THROW_WITH(env_rollouts(*env, mlp.graph, pop, &zero, EpisodeStarts{&seed, state}, 1, 500,
                                 nullptr, out, 1),
                    std::invalid_argument, "CartPole-v1: episodes start from seeds or from states, "
                                           "give exactly one");
}

}  // namespace
}  // namespace evokit
