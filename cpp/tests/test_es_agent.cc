// ESAgent over a Gaussian solver (a StrategySolver over GaussianStrategy):
// clones and antithetic pairing, key reproducibility, perturbation, the
// update (plain and with samples from older iterations) against hand-computed double references built from
// sampler.noise(), validation (messages, and nothing changes on error),
// thread-count invariance, misuse. ESAgent over the other families, and the
// solvers' state, are in test_solver.cc.
#include "evokit/es_agent.h"
#include "evokit/gaussian_solver.h"
#include "evokit/strategy_solver.h"

#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "test_util.h"

namespace evokit {
namespace {

using ::evokit::testing::MessageOf;
using ::evokit::testing::SameBits;
using ::evokit::testing::Noise;
using ::evokit::testing::RandomVector;

constexpr float kNan = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr std::size_t kParams = 7;

// The agent's solver: every agent in this file is made from
// GaussianSolverOptions, so it is a StrategySolver over a GaussianStrategy.
StrategySolver& SolverOf(ESAgent& agent) { return static_cast<StrategySolver&>(agent.solver()); }
GaussianStrategy& Gaussian(ESAgent& agent) { return SolverOf(agent).strategy<GaussianStrategy>(); }

GaussianSolverOptions Options(bool cached = true,
                              OptimizerOptions::Type type = OptimizerOptions::Type::kSGD) {
  GaussianSolverOptions o;
  o.sampling.seed = 77;
  o.sampling.sigma = 0.1f;
  o.sampling.cached = cached;
  o.sampling.cache_size = 5000;
  o.sampling.num_threads = 1;
  o.optimizer.type = type;
  o.optimizer.learning_rate = 0.05f;
  o.antithetic = true;
  o.fitness_shaping = FitnessShaping::kCenteredRank;
  o.weight_decay = 0.0f;
  o.num_threads = 1;
  return o;
}

std::vector<std::unique_ptr<ESAgent>> Clones(ESAgent& agent, int count) {
  std::vector<std::unique_ptr<ESAgent>> clones;
  for (int c = 0; c < count; ++c) clones.push_back(agent.clone());
  return clones;
}

std::vector<SamplingInfo> AddNoise(std::vector<std::unique_ptr<ESAgent>>& clones) {
  std::vector<SamplingInfo> infos;
  for (auto& c : clones) infos.push_back(c->add_noise());
  return infos;
}

void ExpectNear(const std::vector<float>& got, const std::vector<double>& want, double tol,
                const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t j = 0; j < got.size(); ++j) {
    EXPECT_NEAR(got[j], want[j], tol * std::max(1.0, std::fabs(want[j])))
        << what << "[" << j << "]";
  }
}

// The descent direction of the header's formula, in double:
//   eps'_i = s_i eps(k_i) + (theta_{t_i} - theta_t) / sigma
//   d      = -1 / (N sigma) sum_i w_i eps'_i + weight_decay * theta_t
// `centres` maps an iteration to its centre parameters (theta_t included).
std::vector<double> ReferenceDirection(const GaussianSampler& sampler,
                                       const std::vector<SamplingInfo>& infos,
                                       const std::vector<double>& weights,
                                       const std::map<std::int64_t, std::vector<float>>& centres,
                                       std::int64_t t, double weight_decay) {
  const std::size_t p = sampler.num_params();
  const double sigma = sampler.sigma();
  const double n = static_cast<double>(infos.size());
  const std::vector<float>& theta = centres.at(t);
  std::vector<double> g(p, 0.0);
  for (std::size_t i = 0; i < infos.size(); ++i) {
    const std::vector<float> eps = Noise(sampler, infos[i].key.at(0));
    const double s = infos[i].mirrored ? -1.0 : 1.0;
    const std::vector<float>& theta_i = centres.at(infos[i].model_iter_id);
    for (std::size_t j = 0; j < p; ++j) {
      const double eps_prime = s * eps[j] + (static_cast<double>(theta_i[j]) - theta[j]) / sigma;
      g[j] += weights[i] * eps_prime / (n * sigma);
    }
  }
  std::vector<double> d(p);
  for (std::size_t j = 0; j < p; ++j) d[j] = -g[j] + weight_decay * theta[j];
  return d;
}

std::vector<double> SgdStep(const std::vector<float>& theta, const std::vector<double>& d,
                            double lr) {
  std::vector<double> out(theta.size());
  for (std::size_t j = 0; j < theta.size(); ++j) out[j] = theta[j] - lr * d[j];
  return out;
}

// ---------------------------------------------------------------------------
// Clones and keys

TEST(ESAgentClone, IdsCountUpAndStateIsShared) {
  ESAgent agent(Options(), RandomVector(kParams, 1));
  EXPECT_FALSE(agent.is_clone());
  EXPECT_EQ(agent.clone_id(), -1);
  EXPECT_FALSE(agent.has_noise());
  auto clones = Clones(agent, 3);
  for (int c = 0; c < 3; ++c) {
    EXPECT_TRUE(clones[c]->is_clone());
    EXPECT_EQ(clones[c]->clone_id(), c);
    EXPECT_FALSE(clones[c]->has_noise());
    EXPECT_EQ(clones[c]->num_params(), kParams);
    EXPECT_EQ(&clones[c]->center(), &agent.center());
    EXPECT_EQ(clones[c]->params().data(), agent.center().data());  // no noise: the centre
    EXPECT_EQ(&clones[c]->solver(), &agent.solver());
    EXPECT_EQ(&Gaussian(*clones[c]).sampler(), &Gaussian(agent).sampler());
  }
  // a clone of a clone continues the count
  EXPECT_EQ(clones[1]->clone()->clone_id(), 3);
  EXPECT_EQ(Gaussian(agent).options().sampling.num_params, kParams);
}

TEST(ESAgentClone, ConcurrentClonesGetDistinctIds) {
  ESAgent agent(Options(), RandomVector(kParams, 1));
  constexpr int kCount = 64;
  std::vector<int> ids(kCount, -1);
#pragma omp parallel for num_threads(4)
  for (int i = 0; i < kCount; ++i) ids[i] = agent.clone()->clone_id();
  std::sort(ids.begin(), ids.end());
  for (int i = 0; i < kCount; ++i) EXPECT_EQ(ids[i], i);
}

TEST(ESAgentKeys, AntitheticPairsShareKeysWithOppositeSigns) {
  ESAgent agent(Options(), RandomVector(kParams, 2));
  auto clones = Clones(agent, 4);
  const auto infos = AddNoise(clones);
  ASSERT_EQ(infos[0].key.size(), 1u);
  EXPECT_EQ(infos[0].key, infos[1].key);
  EXPECT_EQ(infos[2].key, infos[3].key);
  EXPECT_NE(infos[0].key, infos[2].key);
  EXPECT_FALSE(infos[0].mirrored);
  EXPECT_TRUE(infos[1].mirrored);
  EXPECT_FALSE(infos[2].mirrored);
  EXPECT_TRUE(infos[3].mirrored);
  for (const auto& info : infos) EXPECT_EQ(info.model_iter_id, 0);
  // The header's formula: key = draw_key(t, clone / 2, n, stream).
  EXPECT_EQ(infos[2].key[0], Gaussian(agent).sampler().draw_key(0, 1, 0, 0));
  // The second draw of a clone uses the next counter.
  const SamplingInfo second = clones[0]->add_noise();
  EXPECT_NE(second.key, infos[0].key);
  EXPECT_EQ(second.key[0], Gaussian(agent).sampler().draw_key(0, 0, 1, 0));
  EXPECT_EQ(clones[1]->add_noise().key, second.key);
}

TEST(ESAgentKeys, WithoutAntitheticEveryCloneHasItsOwnKey) {
  GaussianSolverOptions o = Options();
  o.antithetic = false;
  ESAgent agent(o, RandomVector(kParams, 2));
  auto clones = Clones(agent, 4);
  const auto infos = AddNoise(clones);
  std::set<std::int64_t> keys;
  for (int c = 0; c < 4; ++c) {
    EXPECT_FALSE(infos[c].mirrored);
    EXPECT_EQ(infos[c].key[0],
              Gaussian(agent).sampler().draw_key(0, static_cast<std::uint64_t>(c), 0, 0));
    keys.insert(infos[c].key[0]);
  }
  EXPECT_EQ(keys.size(), 4u);
}

TEST(ESAgentKeys, ReproducibleAcrossAgentsAndSaltedByTheStream) {
  for (bool cached : {true, false}) {
    ESAgent a(Options(cached), RandomVector(kParams, 3));
    ESAgent b(Options(cached), RandomVector(kParams, 4));  // parameters do not matter
    auto ca = Clones(a, 4);
    auto cb = Clones(b, 4);
    std::vector<std::int64_t> ka, kb;
    for (int round = 0; round < 2; ++round) {
      for (auto& c : ca) ka.push_back(c->add_noise().key.at(0));
      for (auto& c : cb) kb.push_back(c->add_noise().key.at(0));
    }
    EXPECT_EQ(ka, kb) << "cached " << cached;

    ESAgent s(Options(cached), RandomVector(kParams, 3));
    EXPECT_EQ(s.sampling_stream(), 0u);
    auto before = s.clone();  // made before the stream is set: keeps stream 0
    s.set_sampling_stream(9);
    EXPECT_EQ(s.sampling_stream(), 9u);
    auto cs = Clones(s, 4);
    std::vector<std::int64_t> ks;
    for (auto& c : cs) ks.push_back(c->add_noise().key.at(0));
    EXPECT_EQ(ks[0], Gaussian(s).sampler().draw_key(0, 0, 0, 9));
    EXPECT_NE(ks[0], ka[0]);
    EXPECT_NE(ks[2], ka[2]);
    EXPECT_EQ(before->add_noise().key.at(0), ka[0]);
  }
}

TEST(ESAgentKeys, KeysDependOnTheIteration) {
  ESAgent agent(Options(), RandomVector(kParams, 5));
  auto clones = Clones(agent, 2);
  const auto infos = AddNoise(clones);
  agent.update(infos, {1.0f, 0.0f});
  const SamplingInfo next = clones[0]->add_noise();
  EXPECT_EQ(next.model_iter_id, 1);
  EXPECT_EQ(next.key[0], Gaussian(agent).sampler().draw_key(1, 0, 1, 0));
  EXPECT_NE(next.key, infos[0].key);
}

// ---------------------------------------------------------------------------
// Perturbation

TEST(ESAgentNoise, CloneParamsAreTheCentrePlusSignSigmaEps) {
  for (bool cached : {true, false}) {
    const std::vector<float> theta = RandomVector(kParams, 6);
    ESAgent agent(Options(cached), theta);
    auto clones = Clones(agent, 2);
    const float* buffer0 = nullptr;
    for (int round = 0; round < 2; ++round) {
      const auto infos = AddNoise(clones);
      for (int c = 0; c < 2; ++c) {
        EXPECT_TRUE(clones[c]->has_noise());
        const std::vector<float> eps = Noise(Gaussian(agent).sampler(), infos[c].key[0]);
        const double s = c == 1 ? -1.0 : 1.0;
        std::vector<double> want(kParams);
        for (std::size_t j = 0; j < kParams; ++j) want[j] = theta[j] + s * 0.1 * eps[j];
        ExpectNear(clones[c]->params(), want, 1e-6, "clone " + std::to_string(c));
      }
      // the clone's buffer never moves and is not the centre
      if (round == 0) buffer0 = clones[0]->params().data();
      EXPECT_EQ(clones[0]->params().data(), buffer0);
      EXPECT_NE(clones[0]->params().data(), agent.center().data());
    }
    EXPECT_TRUE(SameBits(agent.center(), theta));  // add_noise leaves the centre alone
    EXPECT_TRUE(SameBits(agent.params(), theta));
  }
}

// Clones materialise their parameters into a pool of at most
// params_pool_bytes / (4 num_params) buffers, shared by all clones.
TEST(ESAgentPool, ManyClonesShareABoundedPoolAndEachSeesItsOwnParameters) {
  for (bool cached : {true, false}) {
    GaussianSolverOptions options = Options(cached);
    options.params_pool_bytes = 2 * kParams * sizeof(float) + 3;  // 2 buffers
    const std::vector<float> theta = RandomVector(kParams, 9);
    ESAgent agent(options, theta);
    EXPECT_EQ(agent.param_buffer_capacity(), 2u);
    auto clones = Clones(agent, 6);
    const auto infos = AddNoise(clones);
    EXPECT_EQ(agent.num_param_buffers(), 0u);  // add_noise materialises nothing
    for (int round = 0; round < 3; ++round) {
      for (int c = 0; c < 6; ++c) {
        std::vector<float> want(kParams);
        Gaussian(agent).sampler().perturb(agent.center().data(), infos[c].key[0],
                                          infos[c].mirrored ? -1.0f : 1.0f, want.data(), 1);
        EXPECT_TRUE(SameBits(clones[c]->params(), want)) << "round " << round << " clone " << c;
        EXPECT_LE(agent.num_param_buffers(), 2u);
      }
    }
    EXPECT_EQ(agent.num_param_buffers(), 2u);
    // The least recently used buffer is the one taken: clones 4 and 5 hold
    // the two buffers now, so asking clone 5 again neither moves nor refills.
    const float* five = clones[5]->params().data();
    EXPECT_EQ(clones[5]->params().data(), five);
    // A new centre makes every buffer stale.
    std::vector<float> centre(kParams, 0.5f);
    SolverOf(agent).set_center(centre);
    std::vector<float> want(kParams);
    Gaussian(agent).sampler().perturb(centre.data(), infos[5].key[0],
                                      infos[5].mirrored ? -1.0f : 1.0f, want.data(), 1);
    EXPECT_TRUE(SameBits(clones[5]->params(), want));
  }
}

// A lease pins its buffer: no other clone takes it, however small the pool;
// when every buffer is leased the pool grows beyond its capacity, and shrinks
// back when it next needs a buffer.
TEST(ESAgentPool, ALeasedBufferIsNeverTakenAndThePoolShrinksBack) {
  GaussianSolverOptions options = Options();
  options.params_pool_bytes = kParams * sizeof(float);  // 1 buffer
  ESAgent agent(options, RandomVector(kParams, 10));
  auto clones = Clones(agent, 4);
  AddNoise(clones);
  std::vector<std::vector<float>> want;
  for (auto& clone : clones) want.push_back(clone->params());  // serially, 1 buffer
  EXPECT_EQ(agent.num_param_buffers(), 1u);
  {
    const ESAgent::ParamsLease lease = clones[0]->lease_params();
    const float* held = lease.params().data();
    for (int c = 1; c < 4; ++c) EXPECT_TRUE(SameBits(clones[c]->params(), want[c])) << c;
    EXPECT_EQ(agent.num_param_buffers(), 2u);  // the leased one and one more
    EXPECT_EQ(lease.params().data(), held);
    EXPECT_TRUE(SameBits(lease.params(), want[0]));
    // A second lease of the same clone shares the buffer.
    ESAgent::ParamsLease again = clones[0]->lease_params();
    EXPECT_EQ(again.params().data(), held);
    // A lease moved keeps the pin.
    ESAgent::ParamsLease moved(std::move(again));
    EXPECT_TRUE(SameBits(clones[1]->params(), want[1]));
    EXPECT_EQ(moved.params().data(), held);
  }
  EXPECT_TRUE(SameBits(clones[2]->params(), want[2]));  // needs a buffer: trims the other
  EXPECT_EQ(agent.num_param_buffers(), 1u);
  // The centre's lease holds nothing.
  const ESAgent::ParamsLease centre = agent.lease_params();
  EXPECT_EQ(centre.params().data(), agent.center().data());
}

TEST(ESAgentPool, SetParamsPoolBytesGrowsAndShrinksThePool) {
  GaussianSolverOptions options = Options();
  options.params_pool_bytes = 2 * kParams * sizeof(float);
  ESAgent agent(options, RandomVector(kParams, 11));
  auto clones = Clones(agent, 6);
  AddNoise(clones);
  EXPECT_EQ(agent.param_buffer_capacity(), 2u);
  agent.set_params_pool_bytes(6 * kParams * sizeof(float) + 1);
  EXPECT_EQ(agent.param_buffer_capacity(), 6u);
  std::vector<const float*> buffers;
  for (auto& clone : clones) buffers.push_back(clone->params().data());
  EXPECT_EQ(agent.num_param_buffers(), 6u);
  for (int c = 0; c < 6; ++c) EXPECT_EQ(clones[c]->params().data(), buffers[c]);  // all kept
  agent.set_params_pool_bytes(0);
  EXPECT_EQ(agent.param_buffer_capacity(), 1u);
  EXPECT_EQ(agent.num_param_buffers(), 1u);  // the most recently used one kept
  EXPECT_EQ(clones[5]->params().data(), buffers[5]);
  EXPECT_THROW(clones[0]->set_params_pool_bytes(1), std::logic_error);
}

// Threads leasing the parameters of many clones from a pool of 2 buffers,
// on distinct clones and on the same ones, read exactly the serial bits.
TEST(ESAgentPool, ThreadsLeasingManyClonesReadTheSerialBits) {
  for (bool cached : {true, false}) {
    GaussianSolverOptions options = Options(cached);
    options.params_pool_bytes = 2 * kParams * sizeof(float);
    ESAgent agent(options, RandomVector(kParams, 12));
    auto clones = Clones(agent, 16);
    AddNoise(clones);
    std::vector<std::vector<float>> want;
    for (auto& clone : clones) want.push_back(clone->params());
    std::atomic<int> mismatches{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&, t] {
        for (int r = 0; r < 50; ++r) {
          for (int i = 0; i < 16; ++i) {
            const int c = (i + 5 * t) % 16;
            const ESAgent::ParamsLease lease = clones[c]->lease_params();
            if (!SameBits(lease.params(), want[c])) mismatches.fetch_add(1);
          }
        }
      });
    }
    for (auto& th : threads) th.join();
    EXPECT_EQ(mismatches.load(), 0) << (cached ? "cached" : "counter-based");
    EXPECT_LE(agent.num_param_buffers(), 6u);  // 2, and at most one more per thread
  }
}

TEST(ESAgentNoise, SetNoiseRebuildsTheSamePerturbation) {
  ESAgent agent(Options(), RandomVector(kParams, 7));
  auto clones = Clones(agent, 3);
  const SamplingInfo info = clones[1]->add_noise();  // mirrored
  ASSERT_TRUE(info.mirrored);
  clones[2]->set_noise(info);
  EXPECT_TRUE(clones[2]->has_noise());
  EXPECT_TRUE(SameBits(clones[2]->params(), clones[1]->params()));
  // the info is taken to be of the current iteration, whatever it says
  SamplingInfo stale = info;
  stale.model_iter_id = 5;
  clones[0]->set_noise(stale);
  EXPECT_TRUE(clones[0]->has_noise());
  EXPECT_TRUE(SameBits(clones[0]->params(), clones[1]->params()));
}

TEST(ESAgentNoise, SetNoiseValidatesAndKeepsTheOldNoise) {
  ESAgent agent(Options(), RandomVector(kParams, 8));
  auto clone = agent.clone();
  const SamplingInfo info = clone->add_noise();
  const std::vector<float> before = clone->params();
  EXPECT_EQ(MessageOf<std::invalid_argument>([&] { clone->set_noise(SamplingInfo{}); }),
            "sampling info has no key");
  const SamplingInfo two_keys{{1, 2}, 0, false};
  EXPECT_EQ(MessageOf<std::invalid_argument>([&] { clone->set_noise(two_keys); }),
            "sampling info has 2 keys, Gaussian sampling uses exactly 1");
  const std::int64_t too_big = static_cast<std::int64_t>(5000 - kParams + 1);
  EXPECT_THROW_WITH(clone->set_noise(SamplingInfo{{too_big}, 0, false}), std::out_of_range,
                    "key " + std::to_string(too_big) + " is outside the noise table");
  EXPECT_THROW_WITH(clone->set_noise(SamplingInfo{{-1}, 0, false}), std::out_of_range,
                    "key -1 is outside the noise table");
  EXPECT_TRUE(clone->has_noise());
  EXPECT_TRUE(SameBits(clone->params(), before));
  (void)info;
}

// ---------------------------------------------------------------------------
// Update

TEST(ESAgentUpdate, SgdMatchesTheHandComputedStep) {
  GaussianSolverOptions o = Options();
  o.weight_decay = 0.1f;
  const std::vector<float> theta = RandomVector(kParams, 9);
  ESAgent agent(o, theta);
  auto clones = Clones(agent, 6);
  const auto infos = AddNoise(clones);
  const std::vector<double> rewards = {1.0f, 5.0f, 3.0f, 5.0f, -2.0f, 0.0f};
  // centered ranks by hand: ranks 2, 4.5, 3, 4.5, 0, 1 over n - 1 = 5, minus 0.5
  const std::vector<double> w = {-0.1, 0.4, 0.1, 0.4, -0.5, -0.3};
  const std::vector<float>* theta_ptr = &agent.center();
  const float* data = agent.center().data();

  const UpdateStats stats = agent.update(infos, rewards);
  EXPECT_EQ(stats.num_samples, 6u);
  EXPECT_EQ(stats.num_corrected, 0u);
  EXPECT_EQ(stats.model_iter_id, 1);
  EXPECT_EQ(agent.model_iter_id(), 1);

  const auto d = ReferenceDirection(Gaussian(agent).sampler(), infos, w, {{0, theta}}, 0, 0.1);
  ExpectNear(agent.center(), SgdStep(theta, d, 0.05), 1e-6, "theta");
  EXPECT_FALSE(SameBits(agent.center(), theta));
  // updated in place
  EXPECT_EQ(&agent.center(), theta_ptr);
  EXPECT_EQ(agent.center().data(), data);
}

TEST(ESAgentUpdate, RawFitnessSignConvention) {
  // One sample with reward +1 along +eps: SGD moves theta by +lr/sigma * eps.
  GaussianSolverOptions o = Options();
  o.fitness_shaping = FitnessShaping::kRaw;
  o.antithetic = false;
  const std::vector<float> theta(kParams, 0.5f);
  ESAgent agent(o, theta);
  auto clone = agent.clone();
  const SamplingInfo info = clone->add_noise();
  agent.update({info}, {1.0f});
  const std::vector<float> eps = Noise(Gaussian(agent).sampler(), info.key[0]);
  std::vector<double> want(kParams);
  for (std::size_t j = 0; j < kParams; ++j) want[j] = 0.5 + 0.05 / 0.1 * eps[j];
  ExpectNear(agent.center(), want, 1e-6, "theta");
}

TEST(ESAgentUpdate, ZScoreWeights) {
  GaussianSolverOptions o = Options();
  o.fitness_shaping = FitnessShaping::kZScore;
  const std::vector<float> theta = RandomVector(kParams, 10);
  ESAgent agent(o, theta);
  auto clones = Clones(agent, 4);
  const auto infos = AddNoise(clones);
  // rewards 1, 2, 3, 6: mean 3, population std sqrt(14 / 4)
  const double sd = std::sqrt(3.5);
  const std::vector<double> w = {-2 / sd, -1 / sd, 0.0, 3 / sd};
  agent.update(infos, {1.0f, 2.0f, 3.0f, 6.0f});
  const auto d = ReferenceDirection(Gaussian(agent).sampler(), infos, w, {{0, theta}}, 0, 0.0);
  ExpectNear(agent.center(), SgdStep(theta, d, 0.05), 1e-6, "theta");
}

TEST(ESAgentUpdate, UpdateDropsEveryClonesNoise) {
  ESAgent agent(Options(), RandomVector(kParams, 11));
  auto clones = Clones(agent, 2);
  const auto infos = AddNoise(clones);
  EXPECT_TRUE(clones[0]->has_noise());
  agent.update(infos, {0.0f, 1.0f});
  for (auto& c : clones) {
    EXPECT_FALSE(c->has_noise());
    EXPECT_EQ(c->params().data(), agent.center().data());  // predicts with the new centre
    EXPECT_EQ(c->model_iter_id(), 1);
  }
  clones[0]->add_noise();
  EXPECT_TRUE(clones[0]->has_noise());
  EXPECT_FALSE(clones[1]->has_noise());
}

TEST(ESAgentUpdate, SamplesFromAnOlderIterationAreCorrected) {
  for (bool cached : {true, false}) {
    GaussianSolverOptions o = Options(cached);
    o.weight_decay = 0.05f;
    std::map<std::int64_t, std::vector<float>> centres;
    centres[0] = RandomVector(kParams, 12);
    ESAgent agent(o, centres[0]);
    auto clones = Clones(agent, 4);
    const auto old_infos = AddNoise(clones);  // drawn at iteration 0
    agent.update(old_infos, {3.0f, 1.0f, 2.0f, 0.0f});
    centres[1] = agent.center();  // copy of theta_1

    // At iteration 1: two fresh pairs plus three late samples from iteration 0.
    auto fresh = AddNoise(clones);
    std::vector<SamplingInfo> infos = fresh;
    infos.push_back(old_infos[0]);
    infos.push_back(old_infos[3]);
    infos.push_back(old_infos[2]);
    const std::vector<double> rewards = {0.5f, 2.0f, -1.0f, 4.0f, 3.0f, 1.0f, 2.5f};
    // centered ranks by hand (n - 1 = 6): ranks 1, 3, 0, 6, 5, 2, 4
    const std::vector<double> w = {1.0 / 6 - 0.5, 0.0, -0.5, 0.5, 5.0 / 6 - 0.5, 2.0 / 6 - 0.5,
                                   4.0 / 6 - 0.5};
    int lookups = 0;
    const UpdateStats stats =
        agent.update(infos, rewards, [&](std::int64_t t) -> const std::vector<float>* {
          ++lookups;
          return t == 0 ? &centres[0] : nullptr;
        });
    EXPECT_EQ(stats.num_samples, 7u);
    EXPECT_EQ(stats.num_corrected, 3u);
    EXPECT_EQ(stats.model_iter_id, 2);
    EXPECT_GE(lookups, 1);

    const auto d = ReferenceDirection(Gaussian(agent).sampler(), infos, w, centres, 1, 0.05);
    const auto want = SgdStep(centres[1], d, 0.05);
    ExpectNear(agent.center(), want, 1e-6, "theta");

    // The correction matters: without it the result is measurably different.
    std::map<std::int64_t, std::vector<float>> uncorrected = {{0, centres[1]}, {1, centres[1]}};
    const auto d0 = ReferenceDirection(Gaussian(agent).sampler(), infos, w, uncorrected, 1, 0.05);
    const auto no_correction = SgdStep(centres[1], d0, 0.05);
    double diff = 0.0;
    for (std::size_t j = 0; j < kParams; ++j) {
      diff = std::max(diff, std::fabs(no_correction[j] - want[j]));
    }
    EXPECT_GT(diff, 1e-3) << "cached " << cached;
  }
}

TEST(ESAgentUpdate, TwoOlderIterationsAreCorrectedSeparately) {
  GaussianSolverOptions o = Options();
  o.optimizer.type = OptimizerOptions::Type::kSGD;
  std::map<std::int64_t, std::vector<float>> centres;
  centres[0] = RandomVector(kParams, 13);
  ESAgent agent(o, centres[0]);
  auto clones = Clones(agent, 2);
  const auto at0 = AddNoise(clones);
  agent.update(at0, {1.0f, 0.0f});
  centres[1] = agent.center();
  const auto at1 = AddNoise(clones);
  agent.update(at1, {0.0f, 1.0f});
  centres[2] = agent.center();
  const auto at2 = AddNoise(clones);

  const std::vector<SamplingInfo> infos = {at2[0], at1[1], at0[0], at2[1], at0[1], at1[0]};
  const std::vector<double> rewards = {2.0f, 5.0f, 1.0f, 0.0f, 3.0f, 4.0f};
  const std::vector<double> w = {-0.1, 0.5, -0.3, -0.5, 0.1, 0.3};  // ranks 2 5 1 0 3 4 over 5
  std::vector<std::int64_t> asked;
  const auto stats = agent.update(infos, rewards, [&](std::int64_t t) -> const std::vector<float>* {
    asked.push_back(t);
    return &centres.at(t);
  });
  EXPECT_EQ(stats.num_corrected, 4u);
  std::sort(asked.begin(), asked.end());
  EXPECT_EQ(asked, (std::vector<std::int64_t>{0, 1}));  // each older iteration looked up once
  const auto d = ReferenceDirection(Gaussian(agent).sampler(), infos, w, centres, 2, 0.0);
  ExpectNear(agent.center(), SgdStep(centres[2], d, 0.05), 1e-6, "theta");
}

TEST(ESAgentUpdate, MomentumAndAdamTakeTheEsDirection) {
  // Two updates; the optimizer recursion is written out here in double.
  for (auto type : {OptimizerOptions::Type::kMomentum, OptimizerOptions::Type::kAdam}) {
    GaussianSolverOptions o = Options(true, type);
    o.optimizer.momentum = 0.8f;
    o.optimizer.beta1 = 0.9f;
    o.optimizer.beta2 = 0.99f;
    o.optimizer.epsilon = 1e-8f;
    std::vector<float> theta = RandomVector(kParams, 14);
    ESAgent agent(o, theta);
    auto clones = Clones(agent, 4);
    std::vector<double> ref(theta.begin(), theta.end()), v(kParams, 0.0), m(kParams, 0.0);
    for (int step = 1; step <= 2; ++step) {
      const std::vector<float> centre = agent.center();
      const auto infos = AddNoise(clones);
      agent.update(infos, {0.0f, 3.0f, 1.0f, 2.0f});
      const std::vector<double> w = {-0.5, 0.5, -1.0 / 6, 1.0 / 6};
      const auto d = ReferenceDirection(Gaussian(agent).sampler(), infos, w,
                                        {{step - 1, centre}}, step - 1, 0.0);
      for (std::size_t j = 0; j < kParams; ++j) {
        if (type == OptimizerOptions::Type::kMomentum) {
          v[j] = 0.8 * v[j] + d[j];
          ref[j] -= 0.05 * v[j];
        } else {
          m[j] = 0.9 * m[j] + 0.1 * d[j];
          v[j] = 0.99 * v[j] + 0.01 * d[j] * d[j];
          const double m_hat = m[j] / (1 - std::pow(0.9, step));
          const double v_hat = v[j] / (1 - std::pow(0.99, step));
          ref[j] -= 0.05 * m_hat / (std::sqrt(v_hat) + 1e-8);
        }
      }
      ExpectNear(agent.center(), ref, 1e-5, "step " + std::to_string(step));
    }
    EXPECT_EQ(Gaussian(agent).optimizer().steps(), 2);
  }
}

TEST(ESAgentUpdate, ResultsDoNotDependOnTheThreadCount) {
  constexpr std::size_t kBig = 10007;  // several 4096-float blocks and a ragged one
  for (bool cached : {true, false}) {
    std::vector<std::vector<float>> results;
    std::vector<std::vector<float>> noisy;
    for (int threads : {1, 3}) {
      GaussianSolverOptions o = Options(cached, OptimizerOptions::Type::kAdam);
      o.sampling.cache_size = 50000;
      o.sampling.num_threads = threads;
      o.num_threads = threads;
      o.weight_decay = 0.01f;
      std::vector<float> theta0 = RandomVector(kBig, 15);
      ESAgent agent(o, theta0);
      auto clones = Clones(agent, 6);
      const auto at0 = AddNoise(clones);
      agent.update(at0, {1, 2, 3, 4, 5, 6});
      auto infos = AddNoise(clones);
      noisy.push_back(clones[3]->params());
      infos.push_back(at0[1]);
      infos.push_back(at0[4]);
      agent.update(infos, {6, 1, 5, 2, 4, 3, 0, 7},
                   [&](std::int64_t t) { return t == 0 ? &theta0 : nullptr; });
      results.push_back(agent.center());
    }
    EXPECT_TRUE(SameBits(results[0], results[1])) << "cached " << cached;
    EXPECT_TRUE(SameBits(noisy[0], noisy[1])) << "cached " << cached;
  }
}

// ---------------------------------------------------------------------------
// Update validation: the message, and nothing changes

class ESAgentUpdateErrors : public ::testing::Test {
 protected:
  void SetUp() override {
    agent_ = std::make_unique<ESAgent>(Options(true, OptimizerOptions::Type::kMomentum),
                                       RandomVector(kParams, 16));
    clones_ = Clones(*agent_, 4);
    old_ = AddNoise(clones_);
    agent_->update(old_, {1, 2, 3, 4});  // now at iteration 1, velocity != 0
    theta0_ = RandomVector(kParams, 16);
    infos_ = AddNoise(clones_);
  }

  // f() throws an E whose message contains `needle`, and the agent is as it was.
  template <class E, class F>
  void ExpectRefused(F&& f, const std::string& needle) {
    const std::vector<float> centre = agent_->center();
    const std::vector<float> velocity = Gaussian(*agent_).optimizer().state("velocity");
    EXPECT_TRUE(::evokit::testing::ThrowsWithMessage<E>(f, needle));
    EXPECT_TRUE(SameBits(agent_->center(), centre)) << needle;
    EXPECT_TRUE(SameBits(Gaussian(*agent_).optimizer().state("velocity"), velocity)) << needle;
    EXPECT_EQ(agent_->model_iter_id(), 1) << needle;
    EXPECT_TRUE(clones_[0]->has_noise()) << needle;
  }

  std::unique_ptr<ESAgent> agent_;
  std::vector<std::unique_ptr<ESAgent>> clones_;
  std::vector<SamplingInfo> old_, infos_;
  std::vector<float> theta0_;
};

TEST_F(ESAgentUpdateErrors, SizesMustMatch) {
  std::vector<SamplingInfo> three(infos_.begin(), infos_.begin() + 3);
  ExpectRefused<std::invalid_argument>(
      [&] { agent_->update(three, {1, 2}); },
      "update() got 3 sampling infos but 2 rewards; they must pair up one to one");
  ExpectRefused<std::invalid_argument>([&] { agent_->update({}, {}); },
                                       "update() needs at least one sample, got none");
}

TEST_F(ESAgentUpdateErrors, Keys) {
  auto infos = infos_;
  infos[1].key.clear();
  ExpectRefused<std::invalid_argument>([&] { agent_->update(infos, {1, 2, 3, 4}); },
                                       "sampling info 1 has no key");
  infos = infos_;
  infos[2].key.push_back(5);
  ExpectRefused<std::invalid_argument>(
      [&] { agent_->update(infos, {1, 2, 3, 4}); },
      "sampling info 2 has 2 keys, Gaussian sampling uses exactly 1");
  infos = infos_;
  infos[3].key = {99999};
  const std::string message =
      MessageOf<std::out_of_range>([&] { agent_->update(infos, {1, 2, 3, 4}); });
  EXPECT_EQ(message.rfind("sampling info 3: key 99999 is outside the noise table", 0), 0u)
      << message;
  ExpectRefused<std::out_of_range>([&] { agent_->update(infos, {1, 2, 3, 4}); },
                                   "key + num_params (7) must be <= cache_size (5000)");
  infos[3].key = {-3};
  ExpectRefused<std::out_of_range>([&] { agent_->update(infos, {1, 2, 3, 4}); },
                                   "sampling info 3: key -3 is outside the noise table");
}

TEST_F(ESAgentUpdateErrors, Iterations) {
  auto infos = infos_;
  infos[0].model_iter_id = 7;
  ExpectRefused<std::invalid_argument>(
      [&] { agent_->update(infos, {1, 2, 3, 4}); },
      "sampling info 0 was drawn at model iteration 7 but the agent is at iteration 1");
  infos = infos_;
  infos[2] = old_[2];  // iteration 0
  const std::string unavailable =
      "sampling info 2 was drawn at model iteration 0, which is not available (pass its "
      "parameters to correct for it)";
  ExpectRefused<std::invalid_argument>([&] { agent_->update(infos, {1, 2, 3, 4}); }, unavailable);
  ExpectRefused<std::invalid_argument>(
      [&] {
        agent_->update(infos, {1, 2, 3, 4}, [](std::int64_t) -> const std::vector<float>* {
          return nullptr;
        });
      },
      unavailable);
  const std::vector<float> short_params(3, 0.0f);
  ExpectRefused<std::invalid_argument>(
      [&] {
        agent_->update(infos, {1, 2, 3, 4}, [&](std::int64_t) { return &short_params; });
      },
      "sampling info 2 was drawn at model iteration 0, which is not available: history gave 3 "
      "parameters for it, expected num_params 7");
  std::vector<float> bad = theta0_;
  bad[4] = kNan;
  ExpectRefused<std::invalid_argument>(
      [&] { agent_->update(infos, {1, 2, 3, 4}, [&](std::int64_t) { return &bad; }); },
      "sampling info 2 was drawn at model iteration 0, whose parameters from history hold nan at "
      "index 4");
  infos[2].model_iter_id = -1;
  ExpectRefused<std::invalid_argument>(
      [&] {
        agent_->update(infos, {1, 2, 3, 4},
                       [&](std::int64_t t) { return t == 0 ? &theta0_ : nullptr; });
      },
      "sampling info 2 was drawn at model iteration -1, which is not available");
}

TEST_F(ESAgentUpdateErrors, Rewards) {
  ExpectRefused<std::invalid_argument>([&] { agent_->update(infos_, {1, 2, kNan, 4}); },
                                       "reward of sample 2 is nan");
  ExpectRefused<std::invalid_argument>([&] { agent_->update(infos_, {-kInf, 2, 3, 4}); },
                                       "reward of sample 0 is -inf");
  // infos are checked before rewards
  auto infos = infos_;
  infos[3].key.clear();
  ExpectRefused<std::invalid_argument>([&] { agent_->update(infos, {kNan, 2, 3, 4}); },
                                       "sampling info 3 has no key");
}

TEST_F(ESAgentUpdateErrors, NonFiniteDirectionChangesNothing) {
  // Raw rewards near the float limit overflow the gradient: the optimizer
  // refuses the direction before it takes a step.
  GaussianSolverOptions o = Options(true, OptimizerOptions::Type::kAdam);
  o.fitness_shaping = FitnessShaping::kRaw;
  o.antithetic = false;
  ESAgent agent(o, RandomVector(50, 17));
  auto clones = Clones(agent, 2);
  const auto infos = AddNoise(clones);
  const std::vector<float> centre = agent.center();
  EXPECT_THROW_WITH(agent.update(infos, {3e38f, 3e38f}), std::invalid_argument, "grad[");
  EXPECT_TRUE(SameBits(agent.center(), centre));
  EXPECT_EQ(agent.model_iter_id(), 0);
  EXPECT_TRUE(SameBits(Gaussian(agent).optimizer().state("m"), std::vector<float>(50, 0.0f)));
  EXPECT_TRUE(clones[0]->has_noise());
}

// ---------------------------------------------------------------------------
// Construction, misuse, set_center, moves

TEST(ESAgentOptions, Validation) {
  const auto params = RandomVector(kParams, 18);
  GaussianSolverOptions o = Options();
  EXPECT_EQ(MessageOf<std::invalid_argument>([&] { ESAgent a(o, {}); }),
            "params must not be empty (num_params must be > 0, got 0)");
  auto nan_params = params;
  nan_params[3] = kNan;
  EXPECT_EQ(MessageOf<std::invalid_argument>([&] { ESAgent a(o, nan_params); }),
            "params[3] is nan");

  o.weight_decay = -1.0f;
  EXPECT_EQ(MessageOf<std::invalid_argument>([&] { ESAgent a(o, params); }),
            "weight_decay must be >= 0 and finite, got -1");
  o.weight_decay = kInf;
  EXPECT_EQ(MessageOf<std::invalid_argument>([&] { ESAgent a(o, params); }),
            "weight_decay must be >= 0 and finite, got inf");
  o = Options();
  o.num_threads = 0;
  EXPECT_EQ(MessageOf<std::invalid_argument>([&] { ESAgent a(o, params); }),
            "num_threads must be >= 1, got 0");
  o = Options();
  o.fitness_shaping = static_cast<FitnessShaping>(9);
  EXPECT_THROW_WITH(ESAgent a(o, params), std::invalid_argument,
                    "fitness_shaping: unknown value 9");
  o = Options();
  o.sampling.sigma = -0.5f;
  EXPECT_EQ(MessageOf<std::invalid_argument>([&] { ESAgent a(o, params); }),
            "gaussian_sampling.std must be > 0 and finite, got -0.5");
  o = Options();
  o.sampling.cache_size = 5;
  EXPECT_THROW_WITH(ESAgent a(o, params), std::invalid_argument,
                    "gaussian_sampling.cache_size (5) must be >= the number of parameters (7)");
  o = Options();
  o.optimizer.learning_rate = 0.0f;
  EXPECT_THROW_WITH(ESAgent a(o, params), std::invalid_argument,
                    "learning rate (optimizer.base_lr) must be > 0 and finite, got 0");
  o = Options(true, OptimizerOptions::Type::kMomentum);
  o.optimizer.momentum = 1.5f;
  EXPECT_THROW_WITH(ESAgent a(o, params), std::invalid_argument, "momentum");
  o = Options();
  o.optimizer.type = static_cast<OptimizerOptions::Type>(7);
  EXPECT_THROW_WITH(ESAgent a(o, params), std::invalid_argument,
                    "optimizer.type: unknown value 7, expected one of SGD, MOMENTUM, ADAM");
  // num_params is taken from the parameters
  o = Options();
  o.sampling.num_params = 3;
  ESAgent a(o, params);
  EXPECT_EQ(a.num_params(), kParams);
  EXPECT_EQ(Gaussian(a).sampler().num_params(), kParams);
  EXPECT_EQ(Gaussian(a).options().sampling.num_params, kParams);
}

TEST(ESAgentOptions, MakeOptimizer) {
  OptimizerOptions o;
  o.learning_rate = 0.3f;
  o.type = OptimizerOptions::Type::kSGD;
  auto sgd = make_optimizer(o, 4);
  EXPECT_EQ(sgd->name(), "SGD");
  EXPECT_EQ(sgd->learning_rate(), 0.3f);
  EXPECT_EQ(sgd->num_params(), 4u);
  o.type = OptimizerOptions::Type::kMomentum;
  o.momentum = 0.7f;
  auto momentum = make_optimizer(o, 4);
  ASSERT_NE(dynamic_cast<Momentum*>(momentum.get()), nullptr);
  EXPECT_EQ(dynamic_cast<Momentum&>(*momentum).momentum(), 0.7f);
  o.type = OptimizerOptions::Type::kAdam;
  o.beta1 = 0.8f;
  o.beta2 = 0.95f;
  o.epsilon = 1e-6f;
  auto adam = make_optimizer(o, 4);
  ASSERT_NE(dynamic_cast<Adam*>(adam.get()), nullptr);
  const auto& a = dynamic_cast<Adam&>(*adam);
  EXPECT_EQ(a.beta1(), 0.8f);
  EXPECT_EQ(a.beta2(), 0.95f);
  EXPECT_EQ(a.epsilon(), 1e-6f);
  EXPECT_THROW_WITH(make_optimizer(o, 0), std::invalid_argument, "num_params must be > 0");
}

// A std::logic_error that is not one of its std::invalid_argument/out_of_range children.
template <class F>
std::string PlainLogicError(F&& f) {
  try {
    f();
  } catch (const std::invalid_argument&) {
    return "(invalid_argument)";
  } catch (const std::out_of_range&) {
    return "(out_of_range)";
  } catch (const std::logic_error& e) {
    return e.what();
  }
  return "(nothing thrown)";
}

TEST(ESAgentMisuse, LogicErrors) {
  ESAgent agent(Options(), RandomVector(kParams, 19));
  auto clone = agent.clone();
  const SamplingInfo info = clone->add_noise();
  EXPECT_EQ(PlainLogicError([&] { agent.add_noise(); }),
            "add_noise() is for sampling agents: call it on a clone, not on the agent that owns "
            "the solver");
  EXPECT_EQ(PlainLogicError([&] { agent.set_noise(info); }),
            "set_noise() is for sampling agents: call it on a clone, not on the agent that owns "
            "the solver");
  EXPECT_EQ(PlainLogicError([&] { clone->update({info}, {1.0f}); }),
            "update() must be called on the agent that owns the solver, not on a clone");
  // optimizer() and set_center() went to the solver, which clones share by
  // design; drawing a generation without clones is the original's.
  EXPECT_EQ(PlainLogicError([&] { clone->draw_members(2); }),
            "draw_members() must be called on the agent that owns the solver, not on a clone");
  EXPECT_EQ(&clone->solver(), &agent.solver());
  EXPECT_EQ(agent.model_iter_id(), 0);
}

TEST(ESAgentCenter, SetCenterCopiesInPlaceAndKeepsTheOptimizer) {
  ESAgent agent(Options(true, OptimizerOptions::Type::kAdam), RandomVector(kParams, 20));
  auto clones = Clones(agent, 2);
  agent.update(AddNoise(clones), {0.0f, 1.0f});
  const std::vector<float> m = Gaussian(agent).optimizer().state("m");
  const float* data = agent.center().data();
  const auto replacement = RandomVector(kParams, 21);
  SolverOf(agent).set_center(replacement);
  EXPECT_TRUE(SameBits(agent.center(), replacement));
  EXPECT_EQ(agent.center().data(), data);
  EXPECT_EQ(clones[0]->center().data(), data);
  EXPECT_EQ(agent.model_iter_id(), 1);
  EXPECT_TRUE(SameBits(Gaussian(agent).optimizer().state("m"), m));

  EXPECT_EQ(MessageOf<std::invalid_argument>([&] { SolverOf(agent).set_center({1.0f, 2.0f}); }),
            "set_center() got 2 parameters, expected num_params 7");
  auto bad = replacement;
  bad[6] = kInf;
  EXPECT_EQ(MessageOf<std::invalid_argument>([&] { SolverOf(agent).set_center(bad); }),
            "params[6] is inf");
  EXPECT_TRUE(SameBits(agent.center(), replacement));
}

TEST(ESAgentCenter, ModelIterIdFollowsTheOptimizerSteps) {
  ESAgent agent(Options(), RandomVector(kParams, 22));
  auto clone = agent.clone();
  clone->add_noise();
  Gaussian(agent).optimizer().set_steps(5);
  EXPECT_EQ(agent.model_iter_id(), 5);
  EXPECT_EQ(clone->model_iter_id(), 5);
  EXPECT_FALSE(clone->has_noise());
  EXPECT_EQ(clone->add_noise().model_iter_id, 5);
}

// The same through the solver's state, the way a replica or a resumed run
// sets the iteration.
TEST(ESAgentCenter, ModelIterIdFollowsALoadedState) {
  ESAgent agent(Options(), RandomVector(kParams, 22));
  auto clone = agent.clone();
  clone->add_noise();
  SolverState state = agent.solver().sampling_state();
  state.model_iter_id = 5;
  agent.solver().load_sampling_state(state);
  EXPECT_EQ(agent.model_iter_id(), 5);
  EXPECT_EQ(clone->model_iter_id(), 5);
  EXPECT_EQ(Gaussian(agent).optimizer().steps(), 5);
  EXPECT_FALSE(clone->has_noise());
  const SamplingInfo info = clone->add_noise();
  EXPECT_EQ(info.model_iter_id, 5);
  EXPECT_EQ(info.key[0], Gaussian(agent).sampler().draw_key(5, 0, 1, 0));
}

TEST(ESAgentMove, MovesKeepTheStorage) {
  ESAgent agent(Options(), RandomVector(kParams, 23));
  auto clone = agent.clone();
  clone->add_noise();
  const float* centre = agent.center().data();
  const float* noisy = clone->params().data();

  ESAgent moved(std::move(agent));
  EXPECT_EQ(moved.center().data(), centre);
  ESAgent moved_clone(std::move(*clone));
  EXPECT_TRUE(moved_clone.is_clone());
  EXPECT_EQ(moved_clone.clone_id(), 0);
  EXPECT_TRUE(moved_clone.has_noise());
  EXPECT_EQ(moved_clone.params().data(), noisy);

  ESAgent other(Options(), RandomVector(kParams, 24));
  other = std::move(moved);
  EXPECT_EQ(other.center().data(), centre);
  const SamplingInfo info = moved_clone.add_noise();
  other.update({info}, {1.0f});
  EXPECT_EQ(moved_clone.model_iter_id(), 1);
}

TEST(ESAgentLifetime, ClonesOutliveTheOriginal) {
  std::unique_ptr<ESAgent> clone;
  std::vector<float> theta = RandomVector(kParams, 25);
  {
    ESAgent agent(Options(), theta);
    clone = agent.clone();
  }
  const SamplingInfo info = clone->add_noise();
  EXPECT_TRUE(clone->has_noise());
  EXPECT_TRUE(SameBits(clone->center(), theta));
  EXPECT_EQ(info.model_iter_id, 0);
}

// ---------------------------------------------------------------------------
// GaussianStrategy by generations (member_keys, rebuild_member, tell_members)

// Runs `generations` generations of lambda members through the strategy's
// generation interface and, beside it, through ESAgent's training path
// (clones 0..lambda-1 draw at stream 0, update with their rewards): keys,
// members, centres, iterations and draw counters agree bit for bit.
void ExpectGenerationsAreTheTrainingPath(GaussianSolverOptions o, std::size_t lambda,
                                         int generations) {
  o.population_size = lambda;
  const std::vector<float> x0 = RandomVector(kParams, 61);
  ESAgent agent(o, x0);
  GaussianStrategy strategy(o, x0);
  std::vector<float> row(kParams), want(kParams), centre(kParams);
  for (int g = 0; g < generations; ++g) {
    SCOPED_TRACE("generation " + std::to_string(g));
    const std::vector<std::vector<std::int64_t>> keys = strategy.member_keys();
    const std::vector<SamplingInfo> infos = agent.draw_members(lambda);
    ASSERT_EQ(keys.size(), lambda);
    std::vector<double> values(lambda), rewards(lambda);
    for (std::size_t m = 0; m < lambda; ++m) {
      EXPECT_EQ(keys[m], (std::vector<std::int64_t>{infos[m].key[0], infos[m].mirrored ? 1 : 0}))
          << "member " << m;
      strategy.rebuild_member(keys[m], row.data());
      agent.solver().rebuild(infos[m], want.data(), 1);
      EXPECT_TRUE(SameBits(row, want)) << "member " << m;
      // A smooth reward with distinct values: minus the distance to 0.5.
      double reward = 0.0;
      for (float x : row) reward -= (static_cast<double>(x) - 0.5) * (static_cast<double>(x) - 0.5);
      rewards[m] = reward;
      values[m] = -reward;
    }
    strategy.tell_members(values);
    agent.update(infos, rewards);
    strategy.center_params(centre.data());
    EXPECT_TRUE(SameBits(centre, agent.center()));
    EXPECT_EQ(strategy.sample_iteration(), agent.model_iter_id());
    for (int c = 0; c <= static_cast<int>(lambda); ++c) {
      EXPECT_EQ(strategy.draws(c), Gaussian(agent).draws(c)) << "clone " << c;
    }
  }
  EXPECT_FALSE(SameBits(centre, x0));  // the centre moved
  EXPECT_EQ(agent.model_iter_id(), generations);
}

TEST(GaussianStrategyGenerations, OpenAiEsWithAdamIsTheTrainingPathBitForBit) {
  for (bool cached : {true, false}) {
    SCOPED_TRACE(cached ? "cached" : "uncached");
    ExpectGenerationsAreTheTrainingPath(Options(cached, OptimizerOptions::Type::kAdam), 6, 5);
  }
}

TEST(GaussianStrategyGenerations, OpenAiEsWithoutMirroringIsTheTrainingPathBitForBit) {
  GaussianSolverOptions o = Options(true, OptimizerOptions::Type::kAdam);
  o.antithetic = false;
  ExpectGenerationsAreTheTrainingPath(o, 5, 4);
}

TEST(GaussianStrategyGenerations, ArsIsTheTrainingPathBitForBit) {
  for (int top : {0, 2}) {
    SCOPED_TRACE("top_directions " + std::to_string(top));
    GaussianSolverOptions o = Options(true, OptimizerOptions::Type::kSGD);
    o.ars = true;
    o.top_directions = top;
    o.fitness_shaping = FitnessShaping::kRaw;
    ExpectGenerationsAreTheTrainingPath(o, 8, 5);
  }
}

TEST(GaussianStrategyGenerations, WithoutAPopulationSizeThereIsNoGeneration) {
  GaussianStrategy strategy(Options(), RandomVector(kParams, 62));
  EXPECT_EQ(MessageOf<std::logic_error>([&] { strategy.member_keys(); }),
            "Gaussian strategy with population_size 0 has no fixed generation: its members are "
            "drawn on demand (draw_member); give it a population_size to run it by generations");
  EXPECT_EQ(MessageOf<std::invalid_argument>([&] {
              std::vector<float> out(kParams);
              strategy.rebuild_member({1}, out.data());
            }),
            "a Gaussian member key is {noise key, mirrored (0 or 1)}, got 1 values");
}

}  // namespace
}  // namespace evokit
