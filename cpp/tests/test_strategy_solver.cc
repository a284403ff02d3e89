// StrategySolver over CMA-ES and the GA: members handed out and rebuilt as
// the strategies themselves draw them, updates equal to the strategies' own
// tell, reward grouping, elite re-evaluation, and the messages of bad
// samples (with the state unchanged). Their save() / load() and the ESAgent
// over them are in test_solver.cc.
#include "evokit/strategy_solver.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "evokit/cma_es.h"
#include "evokit/ga.h"
#include "test_util.h"

namespace evokit {
namespace {

using ::evokit::testing::MessageOf;

std::vector<float> X0() { return {0.1f, -0.2f, 0.3f, 0.05f, -0.4f}; }

// A toy reward, larger is better.
double Reward(const std::vector<float>& p) {
  double s = 0.0;
  for (float x : p) s += (x - 0.5) * (x - 0.5);
  return -s;
}

std::vector<double> Rewards(StrategySolver& s, std::vector<SamplingInfo>& infos,
                            std::size_t count) {
  std::vector<double> rewards;
  std::vector<float> p(s.num_params());
  infos.clear();
  for (std::size_t i = 0; i < count; ++i) {
    infos.push_back(s.draw(0, 0));
    s.rebuild(infos.back(), p.data(), 1);
    rewards.push_back(Reward(p));
  }
  return rewards;
}

TEST(CMAStrategySolver, KeepsCSAAtAnyDimension) {
  // Members are rebuilt from their keys, which TPA's mirrored pair is not:
  // the policy CMA keeps CSA where the ask/tell default ('auto') is TPA.
  for (bool separable : {false, true}) {
    StrategySolver s("CMA_SAMPLING", make_policy_cma(std::vector<float>(kTPADimension + 1, 0.0f), 0.3, 8, separable, 7, 1));
    EXPECT_FALSE(s.strategy<CMABase>().tpa());
  }
}

TEST(CMAStrategySolver, IsTheCMAOfItsOptionsStepForStep) {
  for (bool separable : {false, true}) {
    StrategySolver s("CMA_SAMPLING", make_policy_cma(X0(), 0.3, 8, separable, 7, 1));
    CMAESOptions o;
    o.population_size = 8;
    o.seed = 7;
    o.tolfun = o.tolfunhist = o.tolx = 0.0;
    o.noeffectaxis = o.noeffectcoord = false;
    const std::vector<float> start = X0();
    const std::vector<double> x0(start.begin(), start.end());
    std::unique_ptr<CMABase> ref;
    if (separable) {
      ref = std::make_unique<SepCMAES>(x0, 0.3, o);
    } else {
      ref = std::make_unique<CMAES>(x0, 0.3, o);
    }
    for (int it = 0; it < 4; ++it) {
      const std::vector<double> solutions = ref->ask();
      std::vector<SamplingInfo> infos;
      const std::vector<double> rewards = Rewards(s, infos, 8);
      std::vector<float> p(5);
      for (std::size_t k = 0; k < 8; ++k) {
        ASSERT_EQ(infos[k].key, std::vector<std::int64_t>{ref->sample_key(k)});
        EXPECT_EQ(infos[k].model_iter_id, it);
        s.rebuild(infos[k], p.data(), 1);
        for (std::size_t j = 0; j < 5; ++j) {
          ASSERT_EQ(p[j], static_cast<float>(solutions[k * 5 + j]));
        }
      }
      std::vector<double> values;
      for (double r : rewards) values.push_back(-r);
      ref->tell(values.data(), values.size());
      EXPECT_EQ(s.update(infos, rewards).model_iter_id, it + 1);
      const std::vector<double> mean = ref->mean_solution();
      for (std::size_t j = 0; j < 5; ++j) ASSERT_EQ(s.center()[j], static_cast<float>(mean[j]));
      EXPECT_EQ(s.strategy<CMABase>().state().sigma, ref->state().sigma);
      EXPECT_EQ(s.draws(), 0);
    }
  }
}

TEST(CMAStrategySolver, BadSamplesAreNamedAndChangeNothing) {
  StrategySolver s("CMA_SAMPLING", make_policy_cma(X0(), 0.3, 6, false, 7, 1));
  std::vector<SamplingInfo> infos;
  std::vector<double> rewards = Rewards(s, infos, 6);
  const std::vector<SamplingInfo> four(infos.begin(), infos.begin() + 4);
  EXPECT_EQ(MessageOf<std::invalid_argument>(
                [&] { s.update(four, std::vector<double>(rewards.begin(), rewards.begin() + 4)); }),
            "CMA update needs 1 reward(s) for each of the 6 members of iteration 0; 2 have fewer "
            "(first: member 4 with 0)");
  std::vector<SamplingInfo> stranger = infos;
  stranger[2].key = {42};
  EXPECT_EQ(MessageOf<std::invalid_argument>([&] { s.update(stranger, rewards); }),
            "sampling info 2: key [42] is not a member of iteration 0");
  std::vector<double> nan = rewards;
  nan[3] = std::numeric_limits<double>::quiet_NaN();
  EXPECT_EQ(MessageOf<std::invalid_argument>([&] { s.update(infos, nan); }),
            "reward 3 is nan, expected a finite value");
  EXPECT_EQ(s.model_iter_id(), 0);
  EXPECT_EQ(s.shortfall(four, std::vector<double>(4, 0.0)).substr(0, 18), "CMA update needs 1");
  EXPECT_EQ(s.shortfall(infos, rewards), "");
  s.update(infos, rewards);
  std::vector<float> p(5);
  EXPECT_EQ(MessageOf<std::invalid_argument>([&] { s.rebuild(infos[0], p.data(), 1); }),
            "a CMA sample of iteration 0 cannot be rebuilt at iteration 1: its distribution is "
            "gone (only samples of the current iteration are usable)");
  EXPECT_FALSE(s.is_member(infos[0]));
}

TEST(GAStrategySolver, IsTheGAAndReevaluatesItsEliteCandidates) {
  GeneticAlgorithmOptions o;
  o.population_size = 9;
  o.truncation_size = 3;
  o.num_elites = 1;
  o.mutation_power = 0.05f;
  o.init_sigma = 0.2f;
  o.elite_candidates = 2;
  o.elite_evaluations = 2;
  o.seed = 11;
  StrategySolver s("GA_SAMPLING", std::make_unique<GeneticAlgorithm>(o, X0()));
  GeneticAlgorithm ref(o, X0());
  for (std::size_t j = 0; j < 5; ++j) EXPECT_EQ(s.center()[j], X0()[j]);
  std::vector<SamplingInfo> infos;
  std::vector<double> rewards = Rewards(s, infos, 9);
  for (std::size_t i = 0; i < 9; ++i) EXPECT_EQ(infos[i].key, ref.ask()[i].key);
  s.update(infos, rewards);
  ref.tell(rewards);
  // the members are now the elite candidates, handed out in turn
  const auto candidates = ref.ask_elite_candidates();
  rewards = Rewards(s, infos, 2 * candidates.size() + 1);  // one extra for candidate 0
  for (std::size_t i = 0; i < infos.size(); ++i) {
    EXPECT_EQ(infos[i].key, candidates[i % candidates.size()].key);
  }
  s.update(infos, rewards);
  std::vector<double> scores;  // candidate-major, the first two of each
  for (std::size_t c = 0; c < candidates.size(); ++c) {
    scores.push_back(rewards[c]);
    scores.push_back(rewards[c + candidates.size()]);
  }
  ref.tell_elite_candidates(scores);
  EXPECT_EQ(s.model_iter_id(), 2);
  EXPECT_EQ(s.strategy<GeneticAlgorithm>().elites()[0].key, ref.elites()[0].key);
  const std::vector<float> best = ref.rebuild(ref.elites()[0].key);
  for (std::size_t j = 0; j < 5; ++j) EXPECT_EQ(s.center()[j], best[j]);
}

// reset(x0) is gone: a new x0 comes with a state through load(), which
// keeps the options and checks the size.
TEST(GAStrategySolver, LoadKeepsTheOptionsAndChecksTheSize) {
  GeneticAlgorithmOptions o;
  o.population_size = 4;
  o.truncation_size = 2;
  o.elite_evaluations = 0;
  StrategySolver s("GA_SAMPLING", std::make_unique<GeneticAlgorithm>(o, X0()));
  SolverState state = s.save();
  state.floats["ga.x0"] = {1.0f};
  EXPECT_EQ(MessageOf<std::invalid_argument>([&] { s.load(state); }),
            "state entry 'ga.x0' holds 1 values, expected 5");
  EXPECT_EQ(s.center()[0], X0()[0]);
  state.floats["ga.x0"] = std::vector<float>(5, 1.0f);
  s.load(state);
  EXPECT_EQ(s.strategy<GeneticAlgorithm>().options().population_size, 4u);
  EXPECT_EQ(s.center()[0], 1.0f);
}

}  // namespace
}  // namespace evokit
