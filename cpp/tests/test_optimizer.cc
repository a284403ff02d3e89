// SGD, Momentum and Adam against hand-computed steps, plus validation,
// state access and thread-count invariance.
#include "evokit/optimizer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "test_util.h"

namespace evokit {
namespace {

using ::evokit::testing::MessageOf;
using ::evokit::testing::SameBits;

constexpr float kNan = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

void Step(Optimizer& opt, std::vector<float>& params, const std::vector<float>& grad,
          int threads = 1) {
  opt.step(params.data(), grad.data(), grad.size(), threads);
}

void ExpectNear(const std::vector<float>& got, const std::vector<double>& want, double tol,
                const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t i = 0; i < got.size(); ++i) {
    EXPECT_NEAR(got[i], want[i], tol) << what << "[" << i << "]";
  }
}

void ExpectRelNear(const std::vector<float>& got, const std::vector<double>& want, double rel,
                   const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t i = 0; i < got.size(); ++i) {
    EXPECT_NEAR(got[i], want[i], rel * std::fabs(want[i])) << what << "[" << i << "]";
  }
}

// ---------------------------------------------------------------------------
// Hand-computed steps

TEST(SGD, HandComputedSteps) {
  SGD opt(0.1f, 3);
  std::vector<float> p = {1.0f, -2.0f, 0.5f};
  const std::vector<float> g = {0.5f, -1.0f, 2.0f};
  Step(opt, p, g);  // p - 0.1 g
  ExpectNear(p, {0.95, -1.9, 0.3}, 1e-6, "step 1");
  Step(opt, p, g);
  ExpectNear(p, {0.9, -1.8, 0.1}, 1e-6, "step 2");
  EXPECT_EQ(opt.steps(), 2);
  EXPECT_EQ(opt.name(), "SGD");
  EXPECT_TRUE(opt.state_names().empty());
}

// lr 0.1, mu 0.9, constant gradient (1, -2) from (1, -1):
//   v1 = (1, -2)       p1 = (1 - 0.1, -1 + 0.2)       = (0.9, -0.8)
//   v2 = (1.9, -3.8)   p2 = (0.9 - 0.19, -0.8 + 0.38)  = (0.71, -0.42)
//   v3 = (2.71, -5.42) p3 = (0.71 - 0.271, -0.42 + 0.542) = (0.439, 0.122)
TEST(Momentum, HandComputedSteps) {
  Momentum opt(0.1f, 0.9f, 2);
  std::vector<float> p = {1.0f, -1.0f};
  const std::vector<float> g = {1.0f, -2.0f};
  Step(opt, p, g);
  ExpectNear(p, {0.9, -0.8}, 1e-6, "p1");
  ExpectNear(opt.state("velocity"), {1.0, -2.0}, 1e-6, "v1");
  Step(opt, p, g);
  ExpectNear(p, {0.71, -0.42}, 1e-6, "p2");
  ExpectNear(opt.state("velocity"), {1.9, -3.8}, 1e-6, "v2");
  Step(opt, p, g);
  ExpectNear(p, {0.439, 0.122}, 1e-6, "p3");
  ExpectNear(opt.state("velocity"), {2.71, -5.42}, 1e-6, "v3");
  EXPECT_EQ(opt.steps(), 3);
  EXPECT_EQ(opt.name(), "MOMENTUM");
  EXPECT_EQ(opt.momentum(), 0.9f);
  EXPECT_EQ(opt.state_names(), (std::vector<std::string>{"velocity"}));
}

TEST(Momentum, ZeroMomentumIsSGD) {
  Momentum momentum(0.1f, 0.0f, 3);
  SGD sgd(0.1f, 3);
  std::vector<float> a = {1.0f, 2.0f, 3.0f}, b = a;
  for (const std::vector<float>& g : {std::vector<float>{1, -1, 0.5f}, {0.25f, 3, -2}}) {
    Step(momentum, a, g);
    Step(sgd, b, g);
  }
  EXPECT_TRUE(SameBits(a, b));
}

// lr 0.1, beta1 0.9, beta2 0.999, eps 1e-8, from p0 = (1, -1, 0.5).
//
// Step 1, g = (0.5, -2, 0): m = 0.1 g, v = 0.001 g^2, and the corrections
// 1 - 0.9 = 0.1, 1 - 0.999 = 0.001 give m_hat = g, v_hat = g^2, so each
// parameter moves by lr g / (|g| + eps) ~ lr sign(g); a zero gradient moves
// nothing:
//   p1 = (1 - 0.1 * 0.5 / 0.50000001, -1 + 0.1 * 2 / 2.00000001, 0.5)
//      = (0.900000002, -0.9000000005, 0.5)
// Step 2 (t = 2, corrections 0.19 and 0.001999), g = (-0.5, -2, 1):
//   m = (-0.005, -0.38, 0.1), v = (0.00049975, 0.007996, 0.001)
//   m_hat = (-0.0263157895, -2, 0.5263157895), v_hat = (0.25, 4, 0.5002501251)
//   p2 = p1 - 0.1 m_hat / (sqrt(v_hat) + eps)
//      = (0.9052631598, -0.8000000010, 0.4255863187)
// Step 3 (t = 3, corrections 0.271 and 0.002997001), g = (0.25, -2, 1):
//   m = (0.0205, -0.542, 0.19), v = (0.00056175025, 0.011988004, 0.001999)
//   p3 = (0.8877906068, -0.7000000015, 0.3397400642)
// The stored moments differ from these decimal values by the float rounding
// of the betas: 0.999f is 0.99900001287, so 1 - beta2 = 0.00099998713 (a
// relative 1.3e-5 below 0.001). The bias corrections use the same float betas,
// so m_hat, v_hat and the parameters are not affected.
TEST(Adam, HandComputedSteps) {
  Adam opt(0.1f, 0.9f, 0.999f, 1e-8f, 3);
  std::vector<float> p = {1.0f, -1.0f, 0.5f};
  Step(opt, p, {0.5f, -2.0f, 0.0f});
  ExpectNear(p, {0.900000002, -0.9000000005, 0.5}, 1e-6, "p1");
  ExpectNear(opt.state("m"), {0.05, -0.2, 0.0}, 1e-6, "m1");
  ExpectRelNear(opt.state("v"), {0.00025, 0.004, 0.0}, 2e-5, "v1");
  EXPECT_EQ(p[2], 0.5f);
  Step(opt, p, {-0.5f, -2.0f, 1.0f});
  ExpectNear(p, {0.9052631598, -0.8000000010, 0.4255863187}, 2e-6, "p2");
  ExpectNear(opt.state("m"), {-0.005, -0.38, 0.1}, 1e-6, "m2");
  ExpectRelNear(opt.state("v"), {0.00049975, 0.007996, 0.001}, 2e-5, "v2");
  Step(opt, p, {0.25f, -2.0f, 1.0f});
  ExpectNear(p, {0.8877906068, -0.7000000015, 0.3397400642}, 2e-6, "p3");
  ExpectNear(opt.state("m"), {0.0205, -0.542, 0.19}, 1e-6, "m3");
  ExpectRelNear(opt.state("v"), {0.00056175025, 0.011988004, 0.001999}, 2e-5, "v3");
  EXPECT_EQ(opt.steps(), 3);
  EXPECT_EQ(opt.name(), "ADAM");
  EXPECT_EQ(opt.state_names(), (std::vector<std::string>{"m", "v"}));
}

TEST(Adam, FirstStepMovesEachParameterByAboutLr) {
  Adam opt(0.01f, 0.9f, 0.999f, 1e-8f, 4);
  std::vector<float> p = {0.0f, 0.0f, 0.0f, 0.0f};
  Step(opt, p, {1e-3f, -5.0f, 100.0f, -0.25f});
  ExpectNear(p, {-0.01, 0.01, -0.01, 0.01}, 1e-6, "p1");
}

// With a constant gradient the bias-corrected moments are exactly g and g^2
// at every step, but only if t is the number of steps: counting t once per
// parameter (or per state tensor) would break this from step 2 on. Each step
// must then move every parameter by lr g / (|g| + eps).
TEST(Adam, StepCounterAdvancesOncePerStep) {
  Adam opt(0.05f, 0.8f, 0.99f, 1e-8f, 5);
  std::vector<float> p(5, 0.0f);
  const std::vector<float> g = {0.3f, -0.7f, 2.0f, -4.0f, 0.01f};
  for (int k = 1; k <= 6; ++k) {
    Step(opt, p, g);
    EXPECT_EQ(opt.steps(), k);
    std::vector<double> want(5);
    for (std::size_t i = 0; i < 5; ++i) want[i] = -k * 0.05 * (g[i] > 0 ? 1.0 : -1.0);
    ExpectNear(p, want, 2e-5 * k, "after step " + std::to_string(k));
  }
}

TEST(Adam, ResumesFromSavedStateBitExactly) {
  std::mt19937 rng(1);
  std::normal_distribution<float> dist;
  std::vector<std::vector<float>> grads(6, std::vector<float>(33));
  for (auto& g : grads) {
    for (float& x : g) x = dist(rng);
  }
  Adam straight(0.01f, 0.9f, 0.999f, 1e-8f, 33);
  std::vector<float> p(33, 0.5f);
  for (const auto& g : grads) Step(straight, p, g);

  Adam first(0.01f, 0.9f, 0.999f, 1e-8f, 33);
  std::vector<float> q(33, 0.5f);
  for (int k = 0; k < 3; ++k) Step(first, q, grads[k]);
  Adam resumed(0.01f, 0.9f, 0.999f, 1e-8f, 33);
  resumed.state("m") = first.state("m");
  resumed.state("v") = first.state("v");
  resumed.set_steps(first.steps());
  for (int k = 3; k < 6; ++k) Step(resumed, q, grads[k]);
  EXPECT_TRUE(SameBits(p, q));
  EXPECT_EQ(resumed.steps(), 6);

  // Resuming without the step count (t restarts at 1) gives different results.
  Adam wrong(0.01f, 0.9f, 0.999f, 1e-8f, 33);
  std::vector<float> r(33, 0.5f);
  for (int k = 0; k < 3; ++k) Step(wrong, r, grads[k]);
  wrong.set_steps(0);
  for (int k = 3; k < 6; ++k) Step(wrong, r, grads[k]);
  EXPECT_FALSE(SameBits(p, r));
}

// ---------------------------------------------------------------------------
// Threads

std::vector<std::unique_ptr<Optimizer>> AllOptimizers(std::size_t n) {
  std::vector<std::unique_ptr<Optimizer>> all;
  all.push_back(std::make_unique<SGD>(0.01f, n));
  all.push_back(std::make_unique<Momentum>(0.01f, 0.9f, n));
  all.push_back(std::make_unique<Adam>(0.01f, 0.9f, 0.999f, 1e-8f, n));
  return all;
}

TEST(Optimizers, SameBitsForAnyThreadCount) {
  const std::size_t n = 50021;  // several parallel blocks, the last one ragged
  std::mt19937 rng(2);
  std::normal_distribution<float> dist;
  std::vector<std::vector<float>> grads(3, std::vector<float>(n));
  for (auto& g : grads) {
    for (float& x : g) x = dist(rng);
  }
  for (std::size_t kind = 0; kind < 3; ++kind) {
    std::vector<float> want;
    std::vector<std::vector<float>> want_states;
    for (int threads : {1, 2, 3, 8}) {
      auto opt = std::move(AllOptimizers(n)[kind]);
      std::vector<float> p(n, 1.0f);
      for (const auto& g : grads) Step(*opt, p, g, threads);
      std::vector<std::vector<float>> states;
      for (const std::string& name : opt->state_names()) states.push_back(opt->state(name));
      if (threads == 1) {
        want = p;
        want_states = states;
        continue;
      }
      EXPECT_TRUE(SameBits(p, want)) << opt->name() << ", " << threads << " threads";
      for (std::size_t k = 0; k < states.size(); ++k) {
        EXPECT_TRUE(SameBits(states[k], want_states[k]))
            << opt->name() << " state " << k << ", " << threads << " threads";
      }
    }
  }
}

// ---------------------------------------------------------------------------
// Validation

TEST(Optimizers, ConstructorsValidateTheirArguments) {
  for (float lr : {0.0f, -1.0f, kNan, kInf}) {
    EXPECT_THROW_WITH(SGD(lr, 3), std::invalid_argument, "learning rate");
    EXPECT_THROW_WITH(Momentum(lr, 0.9f, 3), std::invalid_argument, "learning rate");
    EXPECT_THROW_WITH(Adam(lr, 0.9f, 0.999f, 1e-8f, 3), std::invalid_argument, "learning rate");
  }
  EXPECT_EQ(MessageOf<std::invalid_argument>([] { SGD(-1.0f, 3); }),
            "learning rate (optimizer.base_lr) must be > 0 and finite, got -1");
  EXPECT_THROW_WITH(SGD(0.1f, 0), std::invalid_argument, "num_params must be > 0");
  EXPECT_THROW_WITH(Adam(0.1f, 0.9f, 0.999f, 1e-8f, 0), std::invalid_argument, "num_params");

  for (float mu : {-0.1f, 1.0f, 1.5f, kNan}) {
    EXPECT_THROW_WITH(Momentum(0.1f, mu, 3), std::invalid_argument, "momentum");
  }
  EXPECT_EQ(MessageOf<std::invalid_argument>([] { Momentum(0.1f, 1.0f, 3); }),
            "momentum (optimizer.momentum.momentum) must be in [0, 1), got 1");
  EXPECT_NO_THROW(Momentum(0.1f, 0.0f, 3));

  for (float beta : {-0.1f, 1.0f, kNan}) {
    EXPECT_THROW_WITH(Adam(0.1f, beta, 0.999f, 1e-8f, 3), std::invalid_argument, "beta1");
    EXPECT_THROW_WITH(Adam(0.1f, 0.9f, beta, 1e-8f, 3), std::invalid_argument, "beta2");
  }
  EXPECT_EQ(MessageOf<std::invalid_argument>([] { Adam(0.1f, 0.9f, 1.0f, 1e-8f, 3); }),
            "beta2 (optimizer.adam.beta2) must be in [0, 1), got 1");
  for (float eps : {0.0f, -1e-8f, kNan, kInf}) {
    EXPECT_THROW_WITH(Adam(0.1f, 0.9f, 0.999f, eps, 3), std::invalid_argument, "epsilon");
  }
  EXPECT_NO_THROW(Adam(0.1f, 0.0f, 0.0f, 1e-8f, 3));
}

TEST(Optimizers, StepRejectsAWrongSize) {
  for (auto& opt : AllOptimizers(4)) {
    std::vector<float> p(4, 1.0f);
    const std::vector<float> g(3, 1.0f);
    EXPECT_EQ(MessageOf<std::invalid_argument>([&] { opt->step(p.data(), g.data(), 3, 1); }),
              "grad has 3 values but the optimizer has num_params 4");
    EXPECT_EQ(opt->steps(), 0);
  }
}

TEST(Optimizers, StepRejectsNonFiniteGradientsWithoutChangingAnything) {
  const std::size_t n = 40000;
  for (auto& opt : AllOptimizers(n)) {
    std::vector<float> p(n, 1.0f);
    Step(*opt, p, std::vector<float>(n, 0.5f));
    const std::vector<float> p_before = p;
    std::vector<std::vector<float>> states_before;
    for (const std::string& name : opt->state_names()) states_before.push_back(opt->state(name));

    std::vector<float> g(n, 0.25f);
    g[2] = kNan;
    EXPECT_EQ(MessageOf<std::invalid_argument>([&] { Step(*opt, p, g, 3); }), "grad[2] is nan")
        << opt->name();
    g[2] = 0.25f;
    g[39999] = -kInf;
    g[35000] = kInf;
    EXPECT_EQ(MessageOf<std::invalid_argument>([&] { Step(*opt, p, g, 3); }),
              "grad[35000] is inf")
        << opt->name();

    EXPECT_TRUE(SameBits(p, p_before)) << opt->name();
    EXPECT_EQ(opt->steps(), 1) << opt->name();
    for (std::size_t k = 0; k < states_before.size(); ++k) {
      EXPECT_TRUE(SameBits(opt->state(opt->state_names()[k]), states_before[k])) << opt->name();
    }
  }
}

TEST(Optimizers, StepRejectsBadPointersAndThreadCounts) {
  SGD opt(0.1f, 2);
  std::vector<float> p = {1.0f, 2.0f};
  const std::vector<float> g = {1.0f, 1.0f};
  EXPECT_THROW_WITH(opt.step(nullptr, g.data(), 2, 1), std::invalid_argument, "params");
  EXPECT_THROW_WITH(opt.step(p.data(), nullptr, 2, 1), std::invalid_argument, "grad");
  EXPECT_THROW_WITH(opt.step(p.data(), g.data(), 2, 0), std::invalid_argument,
                    "num_threads must be >= 1");
  EXPECT_EQ(opt.steps(), 0);
}

TEST(Optimizers, StateAccess) {
  Adam adam(0.1f, 0.9f, 0.999f, 1e-8f, 3);
  EXPECT_EQ(adam.state("m"), std::vector<float>(3, 0.0f));
  EXPECT_EQ(adam.state("v"), std::vector<float>(3, 0.0f));
  EXPECT_EQ(MessageOf<std::invalid_argument>([&] { adam.state("velocity"); }),
            "unknown state 'velocity' for optimizer ADAM; valid names: 'm', 'v'");
  Momentum momentum(0.1f, 0.5f, 3);
  EXPECT_THROW_WITH(momentum.state("m"), std::invalid_argument, "valid names: 'velocity'");
  SGD sgd(0.1f, 3);
  EXPECT_THROW_WITH(sgd.state("m"), std::invalid_argument, "SGD; it has no state vectors");

  // state() hands out the live vector: writes are seen by the next step.
  momentum.state("velocity") = {1.0f, 2.0f, 3.0f};
  std::vector<float> p = {0.0f, 0.0f, 0.0f};
  Step(momentum, p, {0.0f, 0.0f, 0.0f});  // v = 0.5 v, p -= 0.1 v
  ExpectNear(p, {-0.05, -0.1, -0.15}, 1e-7, "p");

  // A state vector of the wrong length is reported, not read out of bounds.
  adam.state("v").resize(2);
  std::vector<float> q(3, 0.0f);
  EXPECT_THROW_WITH(Step(adam, q, {1.0f, 1.0f, 1.0f}), std::invalid_argument,
                    "optimizer state 'v' has 2 values, expected num_params 3");
  EXPECT_EQ(adam.steps(), 0);
}

TEST(Optimizers, SetSteps) {
  Adam adam(0.1f, 0.9f, 0.999f, 1e-8f, 3);
  adam.set_steps(41);
  EXPECT_EQ(adam.steps(), 41);
  EXPECT_THROW_WITH(adam.set_steps(-1), std::invalid_argument, "steps must be >= 0, got -1");
  EXPECT_EQ(adam.steps(), 41);
  EXPECT_EQ(adam.learning_rate(), 0.1f);
  EXPECT_EQ(adam.num_params(), 3u);
  EXPECT_EQ(adam.beta1(), 0.9f);
  EXPECT_EQ(adam.beta2(), 0.999f);
  EXPECT_EQ(adam.epsilon(), 1e-8f);
}

}  // namespace
}  // namespace evokit
