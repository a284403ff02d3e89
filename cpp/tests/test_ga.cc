// GeneticAlgorithm (Such et al. 2017): rebuilding from seeds against the
// formula, determinism, thread-count invariance, the structure of a
// generation (elites carried over, children = parent from the top T + one
// seed), elitism on a toy fitness, elite re-evaluation, phases and
// validation messages.
#include "evokit/ga.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "evokit/gaussian_sampler.h"
#include "evokit/noise.h"
#include "proto_defaults.h"
#include "test_util.h"

namespace evokit {
namespace {

using ::evokit::testing::MessageOf;
using ::evokit::testing::SameBits;

constexpr double kNan = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

GeneticAlgorithmOptions Options() {
  GeneticAlgorithmOptions o;
  o.population_size = 12;
  o.truncation_size = 4;
  o.num_elites = 1;
  o.mutation_power = 0.05f;
  o.init_sigma = 0.3f;
  o.elite_candidates = 3;
  o.elite_evaluations = 0;
  o.seed = 2024;
  o.num_threads = 1;
  return o;
}

// The options' defaults are GASamplingConfig's (and SolverConfig's
// population_size), written once in proto/evokit.proto.
TEST(GeneticAlgorithmOptions, DefaultsAreTheProtos) {
  const OptionSet ga = ::evokit::testing::ProtoDefaults("GASamplingConfig");
  const GeneticAlgorithmOptions o;
  EXPECT_EQ(o.population_size,
            static_cast<std::size_t>(
                ::evokit::testing::ProtoDefaults("SolverConfig").integer("population_size")));
  EXPECT_EQ(o.truncation_size, static_cast<std::size_t>(ga.integer("truncation_size")));
  EXPECT_EQ(o.num_elites, static_cast<std::size_t>(ga.integer("num_elites")));
  EXPECT_EQ(o.mutation_power, static_cast<float>(ga.real("mutation_power")));
  EXPECT_EQ(o.init_sigma, static_cast<float>(ga.real("init_sigma")));
  EXPECT_EQ(o.elite_candidates, static_cast<std::size_t>(ga.integer("elite_candidates")));
  EXPECT_EQ(o.elite_evaluations, static_cast<std::size_t>(ga.integer("elite_evaluations")));
  EXPECT_EQ(o.seed, static_cast<std::uint64_t>(ga.integer("seed")));
}

// 0 selects the formulas the proto's comments give.
TEST(GeneticAlgorithmOptions, ZeroSelectsTheFormulas) {
  const std::vector<float> x0(3, 0.0f);
  for (std::size_t n : {2, 4, 9, 10, 50, 51, 200}) {
    GeneticAlgorithmOptions o;
    o.population_size = n;
    const GeneticAlgorithm ga(o, x0);
    EXPECT_EQ(ga.options().truncation_size, std::max<std::size_t>(1, n / 5)) << n;
    EXPECT_EQ(ga.options().elite_candidates, std::min<std::size_t>(10, n)) << n;
  }
  GeneticAlgorithmOptions given;
  given.population_size = 20;
  given.truncation_size = 7;
  given.elite_candidates = 3;
  const GeneticAlgorithm ga(given, x0);
  EXPECT_EQ(ga.options().truncation_size, 7u);
  EXPECT_EQ(ga.options().elite_candidates, 3u);
}

std::vector<float> Ramp(std::size_t n) {
  std::vector<float> v(n);
  for (std::size_t j = 0; j < n; ++j) v[j] = 0.001f * static_cast<float>(j % 1000) - 0.5f;
  return v;
}

std::vector<float> Eps(std::uint64_t seed, std::int64_t stream, std::size_t n) {
  std::vector<float> eps(n);
  fill_gaussian(seed, static_cast<std::uint64_t>(stream), 0, eps.data(), n);
  return eps;
}

// -||theta - 1||^2 in double: a toy fitness, larger is better.
double Fitness(const std::vector<float>& theta) {
  double s = 0.0;
  for (float x : theta) s += (x - 1.0) * (x - 1.0);
  return -s;
}

std::vector<double> Evaluate(const GeneticAlgorithm& ga) {
  std::vector<double> f;
  for (const SamplingInfo& info : ga.ask()) f.push_back(Fitness(ga.rebuild(info.key)));
  return f;
}

std::vector<std::vector<std::int64_t>> Keys(const std::vector<SamplingInfo>& infos) {
  std::vector<std::vector<std::int64_t>> keys;
  for (const SamplingInfo& info : infos) keys.push_back(info.key);
  return keys;
}

TEST(GeneticAlgorithm, RebuildIsInitialisationPlusSigmaTimesTheSumOfNoise) {
  const std::size_t n = 10001;  // three parameter blocks, the last one partial
  const GeneticAlgorithmOptions o = Options();
  const std::vector<float> x0 = Ramp(n);
  GeneticAlgorithm ga(o, x0);
  const std::vector<std::int64_t> seeds = {5, 9, 123456789012, kMaxStreamKey};
  const std::vector<float> got = ga.rebuild(seeds);

  // The documented float operations, in order: bit for bit.
  std::vector<float> want(n);
  const std::vector<float> eps0 = Eps(o.seed, seeds[0], n);
  for (std::size_t j = 0; j < n; ++j) want[j] = x0[j] + o.init_sigma * eps0[j];
  for (std::size_t k = 1; k < seeds.size(); ++k) {
    const std::vector<float> eps = Eps(o.seed, seeds[k], n);
    for (std::size_t j = 0; j < n; ++j) want[j] = want[j] + o.mutation_power * eps[j];
  }
  EXPECT_TRUE(SameBits(got, want));

  // And theta_0 + sigma * sum_k eps(tau_k) in double, to float rounding.
  for (std::size_t j = 0; j < n; j += 97) {
    double sum = 0.0;
    for (std::size_t k = 1; k < seeds.size(); ++k) {
      sum += gaussian_at(o.seed, static_cast<std::uint64_t>(seeds[k]), j);
    }
    const double theta0 = static_cast<double>(x0[j]) +
                          static_cast<double>(o.init_sigma) * gaussian_at(o.seed, 5, j);
    EXPECT_NEAR(got[j], theta0 + static_cast<double>(o.mutation_power) * sum, 1e-6) << j;
  }
}

TEST(GeneticAlgorithm, WithoutInitNoiseTheFirstSeedGivesX0Exactly) {
  GeneticAlgorithmOptions o = Options();
  o.init_sigma = 0.0f;
  const std::vector<float> x0 = Ramp(50);
  GeneticAlgorithm ga(o, x0);
  EXPECT_TRUE(SameBits(ga.rebuild({77}), x0));
  const std::vector<float> one = ga.rebuild({77, 3});
  const std::vector<float> eps = Eps(o.seed, 3, 50);
  for (std::size_t j = 0; j < 50; ++j) EXPECT_EQ(one[j], x0[j] + o.mutation_power * eps[j]);
}

TEST(GeneticAlgorithm, RebuildDoesNotDependOnTheThreadCount) {
  const std::size_t n = 9000;
  GeneticAlgorithmOptions o = Options();
  std::vector<std::vector<float>> populations;
  std::vector<SamplingInfo> individuals;
  for (int threads : {1, 2, 3, 5}) {
    o.num_threads = threads;
    GeneticAlgorithm ga(o, Ramp(n));
    for (int g = 0; g < 3; ++g) ga.tell(Evaluate(ga));
    if (individuals.empty()) individuals = ga.ask();
    std::vector<float> all(individuals.size() * n);
    ga.rebuild_population(individuals, all.data());
    populations.push_back(all);
    for (std::size_t i = 0; i < individuals.size(); ++i) {
      const std::vector<float> row(all.begin() + i * n, all.begin() + (i + 1) * n);
      EXPECT_TRUE(SameBits(ga.rebuild(individuals[i].key, threads), row)) << i;
      EXPECT_TRUE(SameBits(ga.rebuild(individuals[i].key, 1), row)) << i;
    }
  }
  for (std::size_t t = 1; t < populations.size(); ++t) {
    EXPECT_TRUE(SameBits(populations[t], populations[0])) << t;
  }
}

TEST(GeneticAlgorithm, SameSeedSameRunAndAnotherSeedAnotherRun) {
  auto run = [](std::uint64_t seed) {
    GeneticAlgorithmOptions o = Options();
    o.seed = seed;
    GeneticAlgorithm ga(o, Ramp(20));
    for (int g = 0; g < 6; ++g) ga.tell(Evaluate(ga));
    return Keys(ga.ask());
  };
  const auto a = run(11);
  EXPECT_EQ(a, run(11));
  EXPECT_NE(a, run(12));
  // Initialisation + one seed per generation of the lineage (elites skip some).
  for (const auto& key : a) {
    EXPECT_GE(key.size(), 2u);
    EXPECT_LE(key.size(), 7u);
  }
}

TEST(GeneticAlgorithm, ElitesAreCarriedAndChildrenMutateATopTParent) {
  GeneticAlgorithmOptions o = Options();
  o.population_size = 40;
  o.truncation_size = 5;
  o.num_elites = 2;
  GeneticAlgorithm ga(o, Ramp(8));
  std::set<std::size_t> chosen;
  for (int g = 0; g < 4; ++g) {
    const std::vector<SamplingInfo> before = ga.ask();
    for (const SamplingInfo& info : before) EXPECT_EQ(info.model_iter_id, g);
    const std::vector<double> f = Evaluate(ga);
    ga.tell(f);
    EXPECT_EQ(ga.generation(), g + 1);

    std::vector<std::size_t> order(f.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](auto a, auto b) { return f[a] > f[b]; });
    const std::vector<SamplingInfo>& after = ga.ask();
    ASSERT_EQ(after.size(), o.population_size);
    ASSERT_EQ(ga.elites().size(), 2u);
    for (std::size_t e = 0; e < 2; ++e) {
      EXPECT_EQ(after[e].key, before[order[e]].key);
      EXPECT_EQ(ga.elites()[e].key, before[order[e]].key);
      EXPECT_EQ(ga.elite_scores()[e], f[order[e]]);
    }
    for (std::size_t i = 2; i < after.size(); ++i) {
      const std::vector<std::int64_t> parent(after[i].key.begin(), after[i].key.end() - 1);
      bool found = false;
      for (std::size_t r = 0; r < o.truncation_size; ++r) {
        if (before[order[r]].key == parent) {
          found = true;
          chosen.insert(r);
        }
      }
      EXPECT_TRUE(found) << "child " << i << " of generation " << g + 1;
      EXPECT_GE(after[i].key.back(), 0);
      EXPECT_LE(after[i].key.back(), kMaxStreamKey);
    }
  }
  EXPECT_EQ(chosen.size(), o.truncation_size);  // every rank of the top T gets chosen
}

TEST(GeneticAlgorithm, TheBestNeverGetsWorseWithoutNoise) {
  GeneticAlgorithmOptions o = Options();
  o.population_size = 20;
  GeneticAlgorithm ga(o, std::vector<float>(10, 0.0f));
  double best = -kInf;
  double first = 0.0;
  for (int g = 0; g < 60; ++g) {
    const std::vector<double> f = Evaluate(ga);
    const double top = *std::max_element(f.begin(), f.end());
    if (g == 0) first = top;
    if (g > 0) {
      EXPECT_EQ(f[0], ga.elite_scores()[0]) << "the elite keeps its fitness";
      EXPECT_GE(top, best) << "generation " << g;
    }
    best = std::max(best, top);
    ga.tell(f);
  }
  EXPECT_GT(best, first + 5.0);  // from -10 towards 0
}

TEST(GeneticAlgorithm, EliteReevaluationPicksByTheReevaluatedMean) {
  GeneticAlgorithmOptions o = Options();
  o.population_size = 6;
  o.truncation_size = 3;
  o.num_elites = 1;
  o.elite_candidates = 2;
  o.elite_evaluations = 3;
  GeneticAlgorithm ga(o, Ramp(5));
  const std::vector<SamplingInfo> gen0 = ga.ask();
  ga.tell({0.0, 5.0, 1.0, 2.0, 9.0, 3.0});  // a lucky 9 for individual 4
  EXPECT_EQ(ga.phase(), GeneticAlgorithm::Phase::kEliteScores);
  EXPECT_EQ(ga.generation(), 0);
  ASSERT_EQ(ga.ask_elite_candidates().size(), 2u);
  EXPECT_EQ(ga.ask_elite_candidates()[0].key, gen0[4].key);
  EXPECT_EQ(ga.ask_elite_candidates()[1].key, gen0[1].key);
  EXPECT_EQ(Keys(ga.ask()), Keys(gen0)) << "the population stays until the generation ends";

  // Individual 4 re-evaluates to a mean of 1, individual 1 to 4.
  ga.tell_elite_candidates({1.0, 0.0, 2.0, 4.0, 3.0, 5.0});
  EXPECT_EQ(ga.generation(), 1);
  EXPECT_EQ(ga.phase(), GeneticAlgorithm::Phase::kFitness);
  ASSERT_EQ(ga.elites().size(), 1u);
  EXPECT_EQ(ga.elites()[0].key, gen0[1].key);
  EXPECT_EQ(ga.elite_scores()[0], 4.0);
  const std::vector<SamplingInfo> gen1 = ga.ask();
  EXPECT_EQ(gen1[0].key, gen0[1].key);
  // The parents are [elite 1, then 4, 5 by fitness]: every child extends one.
  for (std::size_t i = 1; i < gen1.size(); ++i) {
    const std::vector<std::int64_t> parent(gen1[i].key.begin(), gen1[i].key.end() - 1);
    EXPECT_TRUE(parent == gen0[1].key || parent == gen0[4].key || parent == gen0[5].key) << i;
  }

  // The previous elite is a candidate even when its new score is poor.
  ga.tell({-5.0, 1.0, 2.0, 3.0, 4.0, 0.0});
  const auto candidates = Keys(ga.ask_elite_candidates());
  ASSERT_EQ(candidates.size(), 3u);
  EXPECT_EQ(candidates[0], gen1[4].key);
  EXPECT_EQ(candidates[1], gen1[3].key);
  EXPECT_EQ(candidates[2], gen1[0].key);
  ga.tell_elite_candidates({0, 0, 0, 1, 1, 1, 2, 2, 2});
  EXPECT_EQ(ga.elites()[0].key, gen1[0].key);
  EXPECT_EQ(ga.ask()[0].key, gen1[0].key);
}

TEST(GeneticAlgorithm, PhasesAndBadScores) {
  GeneticAlgorithmOptions o = Options();
  o.elite_evaluations = 2;
  GeneticAlgorithm ga(o, Ramp(4));
  EXPECT_EQ(MessageOf<std::logic_error>([&] { ga.ask_elite_candidates(); }),
            "ask_elite_candidates: generation 0 has no elite candidates yet; tell the fitness "
            "of ask() first");
  EXPECT_EQ(MessageOf<std::invalid_argument>([&] { ga.tell({1.0, 2.0}); }),
            "tell: expected one fitness value per individual, 12, got 2");
  std::vector<double> f(12, 0.0);
  f[7] = kNan;
  EXPECT_EQ(MessageOf<std::invalid_argument>([&] { ga.tell(f); }),
            "fitness of individual 7 is nan");
  f[7] = -kInf;  // allowed: the worst possible
  ga.tell(f);
  EXPECT_EQ(MessageOf<std::logic_error>([&] { ga.tell(f); }),
            "tell: generation 0 waits for the re-evaluated scores of its elite candidates "
            "(tell_elite_candidates), not for fitness");
  EXPECT_EQ(MessageOf<std::invalid_argument>([&] { ga.tell_elite_candidates({1.0}); }),
            "tell_elite_candidates: expected elite_evaluations (2) scores for each of the 3 "
            "candidates, 6 in all, got 1");
  EXPECT_EQ(MessageOf<std::invalid_argument>(
                [&] { ga.tell_elite_candidates({0, 0, 0, kNan, 0, 0}); }),
            "score 1 of elite candidate 1 is nan");
  EXPECT_EQ(MessageOf<std::invalid_argument>(
                [&] { ga.tell_elite_candidates({0, 0, kInf, -kInf, 0, 0}); }),
            "the scores of elite candidate 1 hold both inf and -inf: their mean is undefined");
  EXPECT_EQ(ga.generation(), 0) << "nothing changes on error";
  ga.tell_elite_candidates({0, 0, 1, 1, 0, 0});
  EXPECT_EQ(ga.generation(), 1);

  GeneticAlgorithm plain(Options(), Ramp(4));
  EXPECT_EQ(MessageOf<std::logic_error>([&] { plain.ask_elite_candidates(); }),
            "ask_elite_candidates: elite re-evaluation is off (elite_evaluations = 0)");
}

TEST(GeneticAlgorithm, RebuildRefusesBadSeeds) {
  GeneticAlgorithm ga(Options(), Ramp(4));
  EXPECT_EQ(MessageOf<std::invalid_argument>([&] { ga.rebuild({}); }),
            "individual has no seeds (an individual needs at least its initialisation seed)");
  EXPECT_EQ(MessageOf<std::out_of_range>([&] { ga.rebuild({1, -3}); }),
            "individual: seed 1 is -3, seeds must be in [0, 4611686018427387903]");
  std::vector<SamplingInfo> infos(2);
  infos[0].key = {1};
  infos[1].key = {1, kMaxStreamKey + 1};
  std::vector<float> out(8);
  EXPECT_EQ(MessageOf<std::out_of_range>([&] { ga.rebuild_population(infos, out.data()); }),
            "individual 1: seed 1 is 4611686018427387904, seeds must be in [0, "
            "4611686018427387903]");
}

TEST(GeneticAlgorithm, ValidatesEveryOption) {
  struct Case {
    void (*change)(GeneticAlgorithmOptions&);
    const char* message;
  };
  const Case cases[] = {
      {[](auto& o) { o.population_size = 1; }, "population_size must be >= 2, got 1"},
      {[](auto& o) { o.truncation_size = 13; },
       "truncation_size must be in [1, population_size = 12], got 13"},
      {[](auto& o) { o.num_elites = 12; },
       "num_elites must be < population_size = 12 (at least one child per generation), got 12"},
      {[](auto& o) { o.mutation_power = 0.0f; }, "mutation_power must be > 0 and finite, got 0"},
      {[](auto& o) { o.mutation_power = std::numeric_limits<float>::infinity(); },
       "mutation_power must be > 0 and finite, got inf"},
      {[](auto& o) { o.init_sigma = -0.5f; }, "init_sigma must be >= 0 and finite, got -0.5"},
      {[](auto& o) { o.init_sigma = std::numeric_limits<float>::quiet_NaN(); },
       "init_sigma must be >= 0 and finite, got nan"},
      {[](auto& o) {
         o.elite_evaluations = 30;
         o.num_elites = 0;
       },
       "elite_evaluations = 30 re-evaluates elite candidates, which needs num_elites >= 1, got 0 "
       "(set elite_evaluations = 0 to turn re-evaluation off)"},
      {[](auto& o) {
         o.elite_evaluations = 30;
         o.num_elites = 2;
         o.elite_candidates = 1;
       },
       "elite_candidates must be in [num_elites = 2, population_size = 12], got 1"},
      {[](auto& o) {
         o.elite_evaluations = 30;
         o.elite_candidates = 13;
       },
       "elite_candidates must be in [num_elites = 1, population_size = 12], got 13"},
      {[](auto& o) { o.num_threads = 0; }, "num_threads must be >= 1, got 0"},
  };
  for (const Case& c : cases) {
    GeneticAlgorithmOptions o = Options();
    c.change(o);
    EXPECT_EQ(MessageOf<std::invalid_argument>([&] { GeneticAlgorithm ga(o, Ramp(3)); }),
              c.message);
  }
  EXPECT_EQ(MessageOf<std::invalid_argument>([&] { GeneticAlgorithm ga(Options(), {}); }),
            "x0 must not be empty");
  EXPECT_EQ(MessageOf<std::invalid_argument>([&] {
              GeneticAlgorithm ga(Options(), {0.0f, std::numeric_limits<float>::infinity()});
            }),
            "x0[1] is inf");
  // elite_candidates is not checked while re-evaluation is off.
  GeneticAlgorithmOptions off = Options();
  off.elite_candidates = 100;
  EXPECT_NO_THROW(GeneticAlgorithm(off, Ramp(3)));
}

// A run restored from (generation, ask(), elites, elite_scores, pending_order)
// at any point continues bit-identically, in either phase.
TEST(GeneticAlgorithm, SetStateContinuesBitIdentically) {
  GeneticAlgorithmOptions o = Options();
  o.elite_evaluations = 2;
  o.elite_candidates = 2;
  GeneticAlgorithm a(o, Ramp(6));
  auto step = [](GeneticAlgorithm& ga, int g) {
    if (ga.phase() == GeneticAlgorithm::Phase::kFitness) {
      ga.tell(Evaluate(ga));
    } else {
      std::vector<double> s;
      for (std::size_t i = 0; i < ga.ask_elite_candidates().size(); ++i) {
        s.push_back(g * 0.1 + static_cast<double>(i % 3));
        s.push_back(-static_cast<double>(i));
      }
      ga.tell_elite_candidates(s);
    }
  };
  for (int g = 0; g < 5; ++g) step(a, g);  // ends waiting for elite scores
  ASSERT_EQ(a.phase(), GeneticAlgorithm::Phase::kEliteScores);
  GeneticAlgorithm b(o, Ramp(6));
  b.set_state(a.generation(), a.ask(), a.elites(), a.elite_scores(), a.pending_order());
  EXPECT_EQ(b.phase(), GeneticAlgorithm::Phase::kEliteScores);
  EXPECT_EQ(Keys(b.ask_elite_candidates()), Keys(a.ask_elite_candidates()));
  for (int g = 5; g < 12; ++g) {
    step(a, g);
    step(b, g);
    ASSERT_EQ(Keys(a.ask()), Keys(b.ask())) << g;
    ASSERT_EQ(Keys(a.elites()), Keys(b.elites())) << g;
    EXPECT_EQ(a.generation(), b.generation());
  }
  EXPECT_TRUE(b.pending_order().empty() == (b.phase() == GeneticAlgorithm::Phase::kFitness));
}

TEST(GeneticAlgorithm, SetStateRefusesABadCheckpoint) {
  GeneticAlgorithm ga(Options(), Ramp(4));
  const std::vector<SamplingInfo> pop = ga.ask();
  EXPECT_EQ(MessageOf<std::invalid_argument>([&] { ga.set_state(1, {pop[0]}, {}, {}, {}); }),
            "GA state: population holds 1 individuals, expected 12");
  EXPECT_EQ(MessageOf<std::invalid_argument>([&] { ga.set_state(1, pop, {}, {}, {}); }),
            "GA state: elites holds 0 individuals, expected 1 at generation 1");
  std::vector<SamplingInfo> bad = pop;
  bad[3].key = {1, -2};
  EXPECT_EQ(MessageOf<std::invalid_argument>([&] { ga.set_state(0, bad, {}, {}, {}); }),
            "GA state: individual 3 has seed -2 outside [0, " + std::to_string(kMaxStreamKey) + "]");
  EXPECT_EQ(MessageOf<std::invalid_argument>([&] { ga.set_state(0, pop, {}, {}, {0, 1}); }),
            "GA state: order given, but elite re-evaluation is off");
  EXPECT_EQ(ga.generation(), 0) << "unchanged on error";
  EXPECT_EQ(Keys(ga.ask()), Keys(pop));
}

}  // namespace
}  // namespace evokit
