// The Solver interface (solver.h) over its three families, and ESAgent over
// each: save() / load() continue bit for bit (mid-generation included, the
// Gaussian draw counters included, and a test that shows the check can
// fail); load() refuses a bad state by name and changes nothing; the
// registry (make_solver, validate_solver_options and its messages); a
// clone's parameters, Population rows and draw_members() against the
// solver's own rebuild() and draws; set_noise() of a CMA / GA sample of
// another iteration; thread-count invariance. The tests parametrised over
// solver_families() cover a new family without a change here.
#include "evokit/solver.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "evokit/cma_es.h"
#include "evokit/distribution.h"
#include "evokit/es_agent.h"
#include "evokit/ga.h"
#include "evokit/gaussian_solver.h"
#include "evokit/noise.h"
#include "evokit/policy_graph.h"
#include "evokit/population.h"
#include "evokit/strategy_solver.h"
#include "proto_defaults.h"
#include "test_util.h"

namespace evokit {
namespace {

using ::evokit::testing::MessageOf;
using ::evokit::testing::Noise;
using ::evokit::testing::RandomVector;
using ::evokit::testing::SameBits;
using ::evokit::testing::ThrowsWithMessage;

constexpr char kGaussian[] = "GAUSSIAN_SAMPLING";
constexpr char kCMA[] = "CMA_SAMPLING";
constexpr char kGA[] = "GA_SAMPLING";
constexpr char kARS[] = "ARS_SAMPLING";

// Whether the family samples mirrored pairs (solver.antithetic must be true).
bool Mirrored(const std::string& family) { return family == kGaussian || family == kARS; }

// The parameters of TinyMlp(): obs 3 -> Gemm 4 -> Tanh -> Gemm 2.
constexpr std::size_t kParams = 26;
constexpr std::size_t kObs = 3;
constexpr std::size_t kOut = 2;

PolicyGraph TinyMlp() {
  PolicyGraph g;
  g.add_input("obs", {kObs});
  g.add_param("w1", 0, {3, 4});
  g.add_param("b1", 12, {4});
  g.add_param("w2", 16, {4, 2});
  g.add_param("b2", 24, {2});
  g.add_node("Gemm", {"obs", "w1", "b1"}, {"h"});
  g.add_node("Tanh", {"h"}, {"a"});
  g.add_node("Gemm", {"a", "w2", "b2"}, {"y"});
  g.add_output("y");
  return g;
}

// ---- options ------------------------------------------------------------------

OptionSet::Value Int(std::int64_t v) { return v; }
OptionSet::Value Real(double v) { return v; }
OptionSet::Value Text(const char* v) { return std::string(v); }

}  // namespace

namespace testing {

// Every field of a default SolverConfig by dotted name, read from
// proto/evokit.proto (proto_defaults.h), for sampling family `type`.
OptionSet DefaultOptions(const std::string& type) {
  OptionSet o = ProtoDefaults("SolverConfig");
  o.set("sampling.type", OptionSet::Value(type));
  return o;
}

}  // namespace testing

namespace {

using testing::DefaultOptions;

// Small valid options of any family: 6 members, Adam, cached Gaussian noise
// with antithetic pairs; a family other than Gaussian sampling has no
// mirrored pairs.
OptionSet FamilyOptions(const std::string& family) {
  OptionSet o = DefaultOptions(family);
  o.set("population_size", Int(6));
  o.set("optimizer.type", Text("ADAM"));
  o.set("optimizer.base_lr", Real(0.05));
  o.set("sampling.gaussian_sampling.std", Real(0.1));
  o.set("sampling.gaussian_sampling.cached", true);
  o.set("sampling.gaussian_sampling.cache_size", Int(5000));
  o.set("sampling.cma_sampling.sigma0", Real(0.3));
  o.set("sampling.ga_sampling.truncation_size", Int(3));
  o.set("sampling.ga_sampling.mutation_power", Real(0.05));
  o.set("sampling.ga_sampling.init_sigma", Real(0.1));
  o.set("sampling.ga_sampling.elite_candidates", Int(2));
  o.set("sampling.ars_sampling.std", Real(0.1));
  o.set("sampling.ars_sampling.cached", true);
  o.set("sampling.ars_sampling.cache_size", Int(5000));
  o.set("sampling.ars_sampling.top_directions", Int(2));
  if (!Mirrored(family)) o.set("antithetic", false);
  return o;
}

// GA with elite re-evaluation: 2 candidates (3 with the last elite) times 2
// evaluations fit in a generation of 8.
OptionSet ReevaluatingGAOptions() {
  OptionSet o = FamilyOptions(kGA);
  o.set("population_size", Int(8));
  o.set("sampling.ga_sampling.elite_candidates", Int(2));
  o.set("sampling.ga_sampling.elite_evaluations", Int(2));
  return o;
}

GaussianSolverOptions GaussianOptions(bool cached) {
  GaussianSolverOptions o;
  o.sampling.seed = 77;
  o.sampling.sigma = 0.1f;
  o.sampling.cached = cached;
  o.sampling.cache_size = 5000;
  o.optimizer.type = OptimizerOptions::Type::kAdam;
  o.optimizer.learning_rate = 0.05f;
  o.antithetic = true;
  return o;
}

// ---- agents -------------------------------------------------------------------

// A toy reward, larger is better.
double Reward(const std::vector<float>& p) {
  double s = 0.0;
  for (float x : p) s += (x - 0.5) * (x - 0.5);
  return -s;
}

std::vector<std::unique_ptr<ESAgent>> Clones(ESAgent& agent, std::size_t count) {
  std::vector<std::unique_ptr<ESAgent>> clones;
  for (std::size_t c = 0; c < count; ++c) clones.push_back(agent.clone());
  return clones;
}

std::vector<float> Rebuilt(const Solver& solver, const SamplingInfo& info) {
  std::vector<float> out(solver.num_params());
  solver.rebuild(info, out.data(), 1);
  return out;
}

std::string Describe(const SamplingInfo& info) {
  std::string s = "[";
  for (std::size_t i = 0; i < info.key.size(); ++i) {
    s += (i ? ", " : "") + std::to_string(info.key[i]);
  }
  return s + "] at " + std::to_string(info.model_iter_id) + (info.mirrored ? " mirrored" : "");
}

// The samples of one update, and their rewards (each clone's own params).
struct Batch {
  std::vector<SamplingInfo> infos;
  std::vector<double> rewards;
  std::vector<std::vector<float>> params;
};

// Clones [begin, end) draw a member each and are evaluated.
void Draw(std::vector<std::unique_ptr<ESAgent>>& clones, std::size_t begin, std::size_t end,
          Batch& batch) {
  for (std::size_t c = begin; c < end; ++c) {
    batch.infos.push_back(clones[c]->add_noise());
    batch.params.push_back(clones[c]->params());
    batch.rewards.push_back(Reward(batch.params.back()));
  }
}

// Rounds of every clone drawing, until the solver has enough for an update.
void Complete(ESAgent& agent, std::vector<std::unique_ptr<ESAgent>>& clones, Batch& batch) {
  while (!agent.shortfall(batch.infos, batch.rewards).empty()) {
    Draw(clones, 0, clones.size(), batch);
  }
}

Batch Generation(ESAgent& agent, std::vector<std::unique_ptr<ESAgent>>& clones) {
  Batch batch;
  Complete(agent, clones, batch);
  agent.update(batch.infos, batch.rewards);
  return batch;
}

// Two batches drawn side by side are the same: infos, parameters, rewards.
void ExpectSameBatch(const Batch& a, const Batch& b, const std::string& what) {
  ASSERT_EQ(a.infos.size(), b.infos.size()) << what;
  for (std::size_t i = 0; i < a.infos.size(); ++i) {
    EXPECT_EQ(Describe(a.infos[i]), Describe(b.infos[i])) << what << ", sample " << i;
    EXPECT_TRUE(SameBits(a.params[i], b.params[i])) << what << ", sample " << i;
  }
}

// ---- states -------------------------------------------------------------------

template <class T>
std::string ArraysDiff(const std::map<std::string, std::vector<T>>& a,
                       const std::map<std::string, std::vector<T>>& b, const char* type) {
  std::set<std::string> names;
  for (const auto& e : a) names.insert(e.first);
  for (const auto& e : b) names.insert(e.first);
  for (const std::string& name : names) {
    const auto ia = a.find(name);
    const auto ib = b.find(name);
    if (ia == a.end() || ib == b.end()) return std::string(type) + " '" + name + "' in one only";
    const auto& va = ia->second;
    const auto& vb = ib->second;
    if (va.size() != vb.size() ||
        (!va.empty() && std::memcmp(va.data(), vb.data(), va.size() * sizeof(T)) != 0)) {
      return std::string(type) + " '" + name + "' differs";
    }
  }
  return "";
}

// "" when the two states are the same, bit for bit; else what differs first.
std::string StateDiff(const SolverState& a, const SolverState& b) {
  if (a.family != b.family) return "family " + a.family + " vs " + b.family;
  if (a.model_iter_id != b.model_iter_id) return "model_iter_id differs";
  if (a.noise_version != b.noise_version) return "noise_version differs";
  std::string d = ArraysDiff(a.floats, b.floats, "float32");
  if (d.empty()) d = ArraysDiff(a.doubles, b.doubles, "float64");
  if (d.empty()) d = ArraysDiff(a.ints, b.ints, "int64");
  return d;
}

template <class T>
std::set<std::string> Names(const std::map<std::string, std::vector<T>>& arrays) {
  std::set<std::string> names;
  for (const auto& e : arrays) names.insert(e.first);
  return names;
}

// ===========================================================================
// Gaussian: an agent rebuilt from the saved state continues bit for bit

// Agent A runs three generations (clones 0 and 1 draw an extra member in
// the second, so the clones' counters differ); B is a Gaussian solver made
// from the same options and A's centre (the state does not hold the centre:
// it is the model's) that loads A's state.
struct GaussianPair {
  std::unique_ptr<ESAgent> a, b;
  std::vector<std::unique_ptr<ESAgent>> ca, cb;
  SolverState state;
};

GaussianPair SaveAfterThreeGenerations(bool cached, bool keep_counters) {
  GaussianPair p;
  const GaussianSolverOptions options = GaussianOptions(cached);
  p.a = std::make_unique<ESAgent>(options, RandomVector(kParams, 31));
  p.ca = Clones(*p.a, 6);
  for (int g = 0; g < 3; ++g) {
    if (g == 1) {
      for (int c : {0, 1}) p.ca[c]->add_noise();  // a pair: still mirrored pairs
    }
    Generation(*p.a, p.ca);
  }
  p.state = p.a->solver().save();
  if (!keep_counters) p.state.ints["draws.counters"].clear();  // as a version 1 state loads
  p.b = std::make_unique<ESAgent>(std::make_unique<StrategySolver>(
      kGaussian, std::make_unique<GaussianStrategy>(options, p.a->center())));
  p.b->solver().load(p.state);
  p.cb = Clones(*p.b, 6);
  return p;
}

TEST(GaussianSolverState, TheStateHoldsTheOptimizerAndEveryClonesDrawCount) {
  GaussianPair p = SaveAfterThreeGenerations(true, true);
  EXPECT_EQ(p.state.family, kGaussian);
  EXPECT_EQ(p.state.model_iter_id, 3);
  EXPECT_EQ(p.state.noise_version, kNoiseVersion);
  EXPECT_EQ(Names(p.state.floats), (std::set<std::string>{"optimizer.m", "optimizer.v"}));
  EXPECT_TRUE(p.state.doubles.empty());
  EXPECT_EQ(Names(p.state.ints), (std::set<std::string>{"draws.counters"}));
  EXPECT_EQ(p.state.ints.at("draws.counters"), (std::vector<std::int64_t>{4, 4, 3, 3, 3, 3}));
  auto& solver = static_cast<StrategySolver&>(p.a->solver()).strategy<GaussianStrategy>();
  EXPECT_EQ(solver.draws(0), 4u);
  EXPECT_EQ(solver.draws(5), 3u);
  EXPECT_EQ(solver.draws(6), 0u);  // a clone that never drew
  EXPECT_TRUE(SameBits(p.state.floats.at("optimizer.m"), solver.optimizer().state("m")));
  // B holds the same state, and A's centre
  EXPECT_EQ(StateDiff(p.b->solver().save(), p.state), "");
  EXPECT_TRUE(SameBits(p.b->center(), p.a->center()));
  EXPECT_EQ(p.b->model_iter_id(), 3);
}

TEST(GaussianSolverState, AnAgentRebuiltFromTheStateContinuesBitForBit) {
  for (bool cached : {true, false}) {
    SCOPED_TRACE(cached ? "cached" : "uncached");
    GaussianPair p = SaveAfterThreeGenerations(cached, true);
    for (int g = 0; g < 4; ++g) {
      const Batch a = Generation(*p.a, p.ca);
      const Batch b = Generation(*p.b, p.cb);
      ExpectSameBatch(a, b, "generation " + std::to_string(g));
      ASSERT_TRUE(SameBits(p.a->center(), p.b->center())) << "generation " << g;
    }
    EXPECT_EQ(p.b->model_iter_id(), 7);
    EXPECT_EQ(StateDiff(p.a->solver().save(), p.b->solver().save()), "");
  }
}

// The test above can fail: without the counters B's clones start counting
// again and draw other keys (and the agents part ways).
TEST(GaussianSolverState, WithoutTheCountersTheKeysDiffer) {
  for (bool cached : {true, false}) {
    SCOPED_TRACE(cached ? "cached" : "uncached");
    GaussianPair p = SaveAfterThreeGenerations(cached, false);
    const auto& sampler =
        static_cast<const StrategySolver&>(p.b->solver()).strategy<GaussianStrategy>().sampler();
    const Batch a = Generation(*p.a, p.ca);
    const Batch b = Generation(*p.b, p.cb);
    ASSERT_EQ(a.infos.size(), b.infos.size());
    for (std::size_t c = 0; c < a.infos.size(); ++c) {
      EXPECT_NE(a.infos[c].key, b.infos[c].key) << "clone " << c;
      EXPECT_EQ(b.infos[c].key[0], sampler.draw_key(3, c / 2, 0, 0)) << "clone " << c;
    }
    EXPECT_FALSE(SameBits(p.a->center(), p.b->center()));
  }
}

// ===========================================================================
// CMA and GA: the same continuation, saved in the middle of a generation

// A (over make_solver(options)) makes `updates` updates, then `drawn` clones
// draw a member of the next one; its state is saved and loaded into B, made
// from the same options but another x0 (the state holds the distribution;
// for Gaussian sampling, which keeps the centre out of its state, A's
// centre). B's first `drawn` clones take A's members with set_noise; then
// both finish the update and make `more` more, side by side. `saved` (if
// given) receives the state.
void ExpectContinuation(const OptionSet& options, int updates, std::size_t drawn, int more,
                        std::size_t num_params = kParams, SolverState* saved = nullptr) {
  const std::size_t n = static_cast<std::size_t>(options.integer("population_size"));
  const std::string family = options.text("sampling.type");
  ESAgent a(make_solver(options, RandomVector(num_params, 41), 1));
  auto ca = Clones(a, n);
  for (int u = 0; u < updates; ++u) Generation(a, ca);
  Batch before;
  Draw(ca, 0, drawn, before);
  const SolverState state = a.solver().save();
  if (saved != nullptr) *saved = state;
  if (!Mirrored(family)) {
    EXPECT_EQ(state.ints.at("draws"), std::vector<std::int64_t>{static_cast<std::int64_t>(drawn)});
  }

  const std::vector<float> x0 =
      Mirrored(family) ? a.center() : std::vector<float>(num_params, 0.25f);
  ESAgent b(make_solver(options, x0, 1));
  b.solver().load(state);
  EXPECT_EQ(StateDiff(b.solver().save(), state), "");
  EXPECT_TRUE(SameBits(b.center(), a.center()));
  EXPECT_EQ(b.model_iter_id(), a.model_iter_id());
  auto cb = Clones(b, n);
  for (std::size_t c = 0; c < drawn; ++c) {
    cb[c]->set_noise(before.infos[c]);
    EXPECT_TRUE(SameBits(cb[c]->params(), before.params[c])) << "clone " << c;
  }

  Batch ba = before, bb = before;
  Draw(ca, drawn, n, ba);
  Draw(cb, drawn, n, bb);
  Complete(a, ca, ba);
  Complete(b, cb, bb);
  ExpectSameBatch(ba, bb, "the update saved in");
  a.update(ba.infos, ba.rewards);
  b.update(bb.infos, bb.rewards);
  ASSERT_TRUE(SameBits(a.center(), b.center()));
  for (int u = 0; u < more; ++u) {
    const Batch na = Generation(a, ca);
    const Batch nb = Generation(b, cb);
    ExpectSameBatch(na, nb, "update " + std::to_string(u) + " after the load");
    ASSERT_TRUE(SameBits(a.center(), b.center())) << "update " << u << " after the load";
  }
  EXPECT_EQ(StateDiff(a.solver().save(), b.solver().save()), "");
}

TEST(SolverState, EveryFamilyContinuesBitForBitFromAStateSavedMidGeneration) {
  for (const std::string& family : solver_families()) {
    SCOPED_TRACE(family);
    ExpectContinuation(FamilyOptions(family), 2, 3, 3);
  }
}

TEST(StrategySolverState, CMAContinuesBitForBitFromAStateSavedMidGeneration) {
  for (bool separable : {false, true}) {
    SCOPED_TRACE(separable ? "sep-CMA-ES" : "CMA-ES");
    OptionSet o = FamilyOptions(kCMA);
    o.set("sampling.cma_sampling.separable", separable);
    ExpectContinuation(o, 2, 3, 3);
    ExpectContinuation(o, 0, 0, 2);  // at the start of a generation
  }
  // A larger model: CMA-ES decomposes C lazily, so the state saved holds
  // eigenvectors older than C (and the continuation crosses a decomposition).
  SolverState state;
  ExpectContinuation(FamilyOptions(kCMA), 5, 2, 4, 100, &state);
  EXPECT_LT(state.ints.at("cma.eigen_generation")[0], state.ints.at("cma.generation")[0]);
}

TEST(StrategySolverState, GAContinuesBitForBitFromAStateSavedMidGeneration) {
  ExpectContinuation(FamilyOptions(kGA), 2, 4, 3);
}

TEST(StrategySolverState, GAWithEliteReevaluationContinuesFromEitherPhase) {
  const OptionSet o = ReevaluatingGAOptions();
  {
    SCOPED_TRACE("saved while the elite candidates are re-evaluated");
    // updates 0, 2: fitness; 1, 3: elite scores. After 3 updates the
    // candidates of generation 1 (the previous elite among them) are out.
    ExpectContinuation(o, 3, 3, 4);
  }
  {
    SCOPED_TRACE("saved while the individuals are evaluated");
    ExpectContinuation(o, 2, 5, 4);
  }
}

TEST(StrategySolverState, TheStatesHoldTheDocumentedEntries) {
  ESAgent cma(make_solver(FamilyOptions(kCMA), RandomVector(kParams, 42), 1));
  auto cc = Clones(cma, 6);
  Generation(cma, cc);
  cc[0]->add_noise();
  const SolverState s = cma.solver().save();
  EXPECT_EQ(s.family, kCMA);
  EXPECT_EQ(s.model_iter_id, 1);
  EXPECT_EQ(s.noise_version, kNoiseVersion);
  EXPECT_TRUE(s.floats.empty());
  EXPECT_EQ(Names(s.doubles),
            (std::set<std::string>{"cma.cov", "cma.eigenvalues", "cma.eigenvectors", "cma.householder",
                                   "cma.householder_tau", "cma.mean", "cma.p_c", "cma.p_sigma", "cma.sigma"}));
  EXPECT_EQ(Names(s.ints), (std::set<std::string>{"cma.eigen_generation", "cma.generation",
                                                  "draws"}));
  EXPECT_EQ(s.ints.at("draws"), std::vector<std::int64_t>{1});
  EXPECT_EQ(s.doubles.at("cma.cov").size(), kParams * kParams);

  ESAgent ga(make_solver(ReevaluatingGAOptions(), RandomVector(kParams, 43), 1));
  auto cg = Clones(ga, 8);
  Generation(ga, cg);  // now re-evaluating the elite candidates
  const SolverState g = ga.solver().save();
  EXPECT_EQ(g.family, kGA);
  EXPECT_EQ(Names(g.floats), std::set<std::string>{"ga.x0"});
  EXPECT_EQ(Names(g.doubles), std::set<std::string>{"ga.elite_scores"});
  EXPECT_EQ(Names(g.ints),
            (std::set<std::string>{"draws", "ga.elites", "ga.elites.iterations",
                                   "ga.elites.lengths", "ga.generation", "ga.order",
                                   "ga.population", "ga.population.iterations",
                                   "ga.population.lengths"}));
  EXPECT_EQ(g.ints.at("ga.order").size(), 8u);  // the pending ranking
  EXPECT_EQ(g.ints.at("ga.population.lengths").size(), 8u);
}

// A replica (an evaluation worker) made from any x0 rebuilds the members of
// the original from its sampling_state().
TEST(SolverSamplingState, AReplicaRebuildsTheOriginalsMembers) {
  for (const std::string& family : solver_families()) {
    SCOPED_TRACE(family);
    const OptionSet o = FamilyOptions(family);
    ESAgent agent(make_solver(o, RandomVector(kParams, 44), 1));
    auto clones = Clones(agent, 6);
    Generation(agent, clones);
    const std::vector<SamplingInfo> infos = agent.draw_members(6);
    auto replica = make_solver(o, std::vector<float>(kParams, 0.0f), 1);
    replica->load_sampling_state(agent.solver().sampling_state());
    EXPECT_TRUE(SameBits(replica->center(), agent.center()));
    EXPECT_EQ(replica->model_iter_id(), 1);
    for (const SamplingInfo& info : infos) {
      EXPECT_TRUE(SameBits(Rebuilt(*replica, info), Rebuilt(agent.solver(), info)))
          << Describe(info);
    }
  }
}

// A CMA worker gets the generation's member rows, not the O(n^2) distribution:
// lambda * n floats whatever the covariance; the replica refuses to update,
// and a full load() makes it a whole solver again.
TEST(StrategySolverSetCenter, OnlyTheGaussianFamiliesReplaceTheirCentre) {
  auto cma = make_solver(FamilyOptions(kCMA), RandomVector(kParams, 43), 1);
  auto& solver = static_cast<StrategySolver&>(*cma);
  const std::vector<float> centre = solver.center();
  EXPECT_EQ(MessageOf<std::logic_error>([&] { solver.set_center(RandomVector(kParams, 44)); }),
            "set_center(): the CMA strategy's centre follows from its state; it cannot be "
            "replaced");
  EXPECT_TRUE(SameBits(solver.center(), centre));
}

TEST(SolverSamplingState, ACMAReplicaGetsTheMemberRowsAndCannotUpdate) {
  const OptionSet o = FamilyOptions(kCMA);
  const std::size_t lambda = static_cast<std::size_t>(o.integer("population_size"));
  ESAgent agent(make_solver(o, RandomVector(kParams, 45), 1));
  auto clones = Clones(agent, lambda);
  Generation(agent, clones);
  const SolverState sampling = agent.solver().sampling_state();
  EXPECT_EQ(sampling.floats.at("members.rows").size(), lambda * kParams);
  EXPECT_EQ(sampling.doubles.count("cma.cov"), 0u);
  auto replica = make_solver(o, std::vector<float>(kParams, 0.0f), 1);
  replica->load_sampling_state(sampling);
  const std::vector<SamplingInfo> infos = agent.draw_members(lambda);
  EXPECT_EQ(MessageOf<std::logic_error>([&] {
              replica->update(infos, std::vector<double>(lambda, 1.0));
            }),
            "CMA replica (loaded from a sampling state) rebuilds members only; updates belong "
            "to the solver that owns the state");
  replica->load(agent.solver().save());
  replica->update(infos, std::vector<double>(lambda, 1.0));
  EXPECT_EQ(replica->model_iter_id(), 2);
}

// ===========================================================================
// load() refuses a bad state, naming the problem, and changes nothing

// solver.load(state) throws std::invalid_argument with `message` (or, not
// exact, a message containing it), and the solver is as it was.
void ExpectLoadRefused(Solver& solver, const SolverState& state, const std::string& message,
                       bool exact = true) {
  const SolverState before = solver.save();
  const std::vector<float> centre = solver.center();
  const std::uint64_t version = solver.center_version();
  if (exact) {
    EXPECT_EQ(MessageOf<std::invalid_argument>([&] { solver.load(state); }), message);
  } else {
    EXPECT_TRUE(ThrowsWithMessage<std::invalid_argument>([&] { solver.load(state); }, message));
  }
  EXPECT_EQ(StateDiff(solver.save(), before), "") << message;
  EXPECT_TRUE(SameBits(solver.center(), centre)) << message;
  EXPECT_EQ(solver.center_version(), version) << message;
}

// A valid state other than the solver's own: a later iteration, other draw
// counts, other optimizer moments. Refused states are made from it, so that
// a load() that assigned part of a state before it refused the rest would
// show in the solver's save().
SolverState Shifted(SolverState state) {
  state.model_iter_id += 5;
  for (auto& [name, values] : state.ints) {
    if (name == "draws" || name == "draws.counters") {
      for (std::int64_t& v : values) v += 2;
    }
  }
  for (auto& [name, values] : state.floats) {
    if (name.rfind("optimizer.", 0) == 0) {
      for (float& v : values) v *= 0.5f;
    }
  }
  return state;
}

// The start of the message refusing a CMA / GA state of another noise
// version: it names both versions.
std::string OtherNoiseVersion(int version) {
  return "the state refers to noise version " + std::to_string(version) + " (" +
         noise_version_name(version) + "), this EvoKit rebuilds noise version " +
         std::to_string(kNoiseVersion) + " (" + noise_version_name(kNoiseVersion) +
         "): its keys would give different noise";
}

TEST(SolverLoad, GaussianRefusesABadState) {
  GaussianPair p = SaveAfterThreeGenerations(true, true);
  Solver& solver = p.a->solver();
  const SolverState good = Shifted(p.state);
  SolverState s = good;
  s.family = kCMA;
  ExpectLoadRefused(solver, s, "the state is of CMA_SAMPLING, this solver is GAUSSIAN_SAMPLING");
  s.family = "";
  ExpectLoadRefused(solver, s, "the state is of no family, this solver is GAUSSIAN_SAMPLING");
  s = good;
  s.floats.erase("optimizer.m");
  ExpectLoadRefused(solver, s, "state entry 'optimizer.m' (float32) is missing");
  s = good;
  s.floats["optimizer.v"].resize(3);
  ExpectLoadRefused(solver, s, "state entry 'optimizer.v' holds 3 values, expected 26");
  s = good;
  s.floats["optimizer.velocity"] = std::vector<float>(kParams, 0.0f);
  ExpectLoadRefused(solver, s,
                    "state vector 'optimizer.velocity' is not a state of the ADAM optimizer");
  s = good;
  s.ints["draws.counters"][1] = -2;
  ExpectLoadRefused(solver, s, "draws.counters[1] must be >= 0, got -2");
  s = good;
  s.model_iter_id = -1;
  ExpectLoadRefused(solver, s, "model_iter_id must be >= 0, got -1");
  // A Gaussian state does not depend on the noise definition: it loads.
  s = good;
  s.noise_version = kNoiseVersion - 1;
  EXPECT_NO_THROW(solver.load(s));
  s.noise_version = kNoiseVersion;
  EXPECT_EQ(StateDiff(solver.save(), s), "");
  EXPECT_EQ(solver.model_iter_id(), 8);
}

TEST(SolverLoad, GaussianSamplingStateRefusesABadCentre) {
  ESAgent agent(GaussianOptions(true), RandomVector(kParams, 45));
  Solver& solver = agent.solver();
  const SolverState good = solver.sampling_state();
  EXPECT_EQ(Names(good.floats), std::set<std::string>{"center"});
  const auto refused = [&](const SolverState& s, const std::string& message) {
    const std::vector<float> centre = solver.center();
    EXPECT_EQ(MessageOf<std::invalid_argument>([&] { solver.load_sampling_state(s); }), message);
    EXPECT_TRUE(SameBits(solver.center(), centre)) << message;
    EXPECT_EQ(solver.model_iter_id(), 0) << message;
  };
  SolverState s = good;
  s.model_iter_id = 4;
  s.floats.erase("center");
  refused(s, "state entry 'center' (float32) is missing");
  s.floats["center"] = std::vector<float>(5, 0.0f);
  refused(s, "state entry 'center' holds 5 values, expected 26");
  s.floats["center"] = std::vector<float>(kParams, 0.0f);
  s.floats["center"][2] = std::numeric_limits<float>::quiet_NaN();
  refused(s, "center[2] is nan");
  s = good;
  s.family = kGA;
  refused(s, "the state is of GA_SAMPLING, this solver is GAUSSIAN_SAMPLING");
}

TEST(SolverLoad, CMARefusesABadState) {
  ESAgent agent(make_solver(FamilyOptions(kCMA), RandomVector(kParams, 46), 1));
  auto clones = Clones(agent, 6);
  Generation(agent, clones);
  Generation(agent, clones);
  clones[0]->add_noise();
  clones[1]->add_noise();
  Solver& solver = agent.solver();
  const SolverState good = Shifted(solver.save());
  SolverState s = good;
  s.family = kGA;
  ExpectLoadRefused(solver, s, "the state is of GA_SAMPLING, this solver is CMA_SAMPLING");
  for (int version : {kNoiseVersion - 1, kNoiseVersion + 1, 0}) {
    s = good;
    s.noise_version = version;
    ExpectLoadRefused(solver, s, OtherNoiseVersion(version), false);
  }
  s = good;
  s.doubles.erase("cma.mean");
  ExpectLoadRefused(solver, s, "state entry 'cma.mean' (float64) is missing");
  s = good;
  s.doubles["cma.cov"].resize(3);
  ExpectLoadRefused(solver, s, "state entry 'cma.cov' holds 3 values, expected "
                               "676");
  s = good;
  s.doubles["cma.sigma"] = {-1.0};
  ExpectLoadRefused(solver, s, "state.sigma must be > 0 and finite", false);
  s = good;
  s.ints["draws"] = {-1};
  ExpectLoadRefused(solver, s, "draws must be >= 0, got -1");
  s.ints.erase("draws");
  ExpectLoadRefused(solver, s, "state entry 'draws' (int64) is missing");
  s = good;
  s.model_iter_id = -3;
  ExpectLoadRefused(solver, s, "model_iter_id must be >= 0, got -3");
  // and the good state still loads
  EXPECT_NO_THROW(solver.load(good));
  EXPECT_EQ(StateDiff(solver.save(), good), "");
}

TEST(SolverLoad, GARefusesABadState) {
  ESAgent agent(make_solver(ReevaluatingGAOptions(), RandomVector(kParams, 47), 1));
  auto clones = Clones(agent, 8);
  Generation(agent, clones);
  Generation(agent, clones);
  Generation(agent, clones);  // generation 1's elite candidates
  clones[0]->add_noise();
  Solver& solver = agent.solver();
  const SolverState good = Shifted(solver.save());
  SolverState s = good;
  s.family = kCMA;
  ExpectLoadRefused(solver, s, "the state is of CMA_SAMPLING, this solver is GA_SAMPLING");
  for (int version : {kNoiseVersion - 1, 1}) {
    s = good;
    s.noise_version = version;
    ExpectLoadRefused(solver, s, OtherNoiseVersion(version), false);
  }
  s = good;
  s.ints.erase("ga.population");
  ExpectLoadRefused(solver, s, "state entry 'ga.population' (int64) is missing");
  s = good;
  s.floats["ga.x0"].resize(3);
  ExpectLoadRefused(solver, s, "state entry 'ga.x0' holds 3 values, expected 26");
  s = good;
  s.ints["ga.order"][0] = -1;
  ExpectLoadRefused(solver, s, "ga.order[0] must be >= 0, got -1");
  s = good;
  const std::size_t keys = s.ints["ga.population"].size();
  s.ints["ga.population.lengths"][0] = 1000;
  ExpectLoadRefused(solver, s,
                    "ga.population.lengths[0] = 1000 runs past the " +
                        std::to_string(keys) + " keys of ga.population");
  s = good;
  s.ints["ga.population.iterations"].pop_back();
  ExpectLoadRefused(solver, s,
                    "state entry 'ga.population.iterations' holds 7 values, "
                    "expected 8");
  s = good;  // one individual fewer
  const std::int64_t last = s.ints["ga.population.lengths"].back();
  s.ints["ga.population.lengths"].pop_back();
  s.ints["ga.population.iterations"].pop_back();
  s.ints["ga.population"].resize(keys - static_cast<std::size_t>(last));
  ExpectLoadRefused(solver, s, "population holds 7 individuals, expected 8", false);
  s = good;
  s.ints["draws"] = {-5};
  ExpectLoadRefused(solver, s, "draws must be >= 0, got -5");
  EXPECT_NO_THROW(solver.load(good));
  EXPECT_EQ(StateDiff(solver.save(), good), "");
}

// ===========================================================================
// The registry

TEST(SolverRegistry, TheFamiliesInSamplingConfigTypeOrder) {
  std::vector<std::string> expected{kGaussian, kCMA, kGA, kARS};
  for (const DistributionFamily& d : distribution_families()) {
    if (d.sampling_type != nullptr) expected.push_back(d.sampling_type);
  }
  EXPECT_EQ(solver_families(), expected);
  EXPECT_EQ(expected[4], "SNES_SAMPLING");
}

TEST(SolverRegistry, MakeSolverGivesTheFamilysSolverWithItsOptions) {
  const std::vector<float> x0 = RandomVector(kParams, 51);
  {
    OptionSet o = FamilyOptions(kGaussian);
    o.set("fitness_shaping", Text("Z_SCORE"));
    o.set("weight_decay", Real(0.25));
    auto solver = make_solver(o, x0, 2);
    EXPECT_EQ(solver->family(), kGaussian);
    const auto* s = dynamic_cast<const StrategySolver*>(solver.get());
    ASSERT_NE(s, nullptr);
    const auto* g = &s->strategy<GaussianStrategy>();
    EXPECT_TRUE(SameBits(s->center(), x0));
    EXPECT_EQ(s->model_iter_id(), 0);
    EXPECT_EQ(g->sampler().sigma(), 0.1f);
    EXPECT_EQ(g->sampler().num_params(), kParams);
    EXPECT_EQ(g->optimizer().name(), "ADAM");
    EXPECT_EQ(g->optimizer().learning_rate(), 0.05f);
    EXPECT_TRUE(g->options().antithetic);
    EXPECT_EQ(g->options().fitness_shaping, FitnessShaping::kZScore);
    EXPECT_EQ(g->options().weight_decay, 0.25f);
    EXPECT_EQ(g->options().num_threads, 2);
    EXPECT_EQ(g->options().sampling.seed, 1024u);
    EXPECT_EQ(g->options().sampling.cache_size, 5000u);
  }
  {
    OptionSet o = FamilyOptions(kCMA);
    o.set("sampling.cma_sampling.separable", true);
    auto solver = make_solver(o, x0, 1);
    EXPECT_EQ(solver->family(), kCMA);
    const auto* c = dynamic_cast<const StrategySolver*>(solver.get());
    ASSERT_NE(c, nullptr);
    EXPECT_EQ(c->kind(), "CMA");
    EXPECT_NE(dynamic_cast<const SepCMAES*>(&c->strategy<CMABase>()), nullptr);
    EXPECT_EQ(c->strategy<CMABase>().population_size(), 6u);
    EXPECT_EQ(c->strategy<CMABase>().state().sigma, 0.3);
    EXPECT_TRUE(SameBits(c->center(), x0));  // the mean, x0 through double
    EXPECT_EQ(c->member_keys().size(), 6u);
    o.set("sampling.cma_sampling.separable", false);
    EXPECT_NE(dynamic_cast<const CMAES*>(&dynamic_cast<StrategySolver&>(*make_solver(o, x0, 1)).strategy<CMABase>()),
              nullptr);
  }
  {
    OptionSet o = ReevaluatingGAOptions();
    auto solver = make_solver(o, x0, 3);
    EXPECT_EQ(solver->family(), kGA);
    const auto* g = dynamic_cast<const StrategySolver*>(solver.get());
    ASSERT_NE(g, nullptr);
    EXPECT_EQ(g->kind(), "GA");
    const GeneticAlgorithmOptions& ga = g->strategy<GeneticAlgorithm>().options();
    EXPECT_EQ(ga.population_size, 8u);
    EXPECT_EQ(ga.truncation_size, 3u);
    EXPECT_EQ(ga.num_elites, 1u);
    EXPECT_EQ(ga.mutation_power, 0.05f);
    EXPECT_EQ(ga.init_sigma, 0.1f);
    EXPECT_EQ(ga.elite_candidates, 2u);
    EXPECT_EQ(ga.elite_evaluations, 2u);
    EXPECT_EQ(ga.seed, 1024u);
    EXPECT_EQ(ga.num_threads, 3);
    EXPECT_TRUE(SameBits(g->center(), x0));  // no elite yet: x0
    EXPECT_EQ(g->member_keys().size(), 8u);
  }
}

TEST(SolverRegistry, TheDefaultsOfEveryFamilyAreValid) {
  for (const std::string& family : solver_families()) {
    OptionSet o = DefaultOptions(family);
    if (!Mirrored(family)) o.set("antithetic", false);
    EXPECT_NO_THROW(validate_solver_options(o)) << family;
    EXPECT_NO_THROW(validate_solver_options(o, kParams)) << family;
  }
}

// validate_solver_options(options) throws std::invalid_argument `message`,
// and make_solver refuses the options with the same message.
void ExpectInvalid(const OptionSet& o, const std::string& message,
                   std::optional<std::size_t> num_params = std::nullopt) {
  EXPECT_EQ(MessageOf<std::invalid_argument>([&] { validate_solver_options(o, num_params); }),
            message);
  const std::vector<float> x0(num_params.value_or(kParams), 0.1f);
  EXPECT_EQ(MessageOf<std::invalid_argument>([&] { make_solver(o, x0, 1); }), message);
}

TEST(SolverRegistry, SharedOptionMessagesStartWithTheOptionsName) {
  for (const std::string& family : solver_families()) {
    SCOPED_TRACE(family);
    const OptionSet good = FamilyOptions(family);
    OptionSet o = good;
    o.set("population_size", Int(0));
    ExpectInvalid(o, "solver.population_size must be >= 1, got 0");
    o = good;
    o.set("weight_decay", Real(-1.0));
    ExpectInvalid(o, "solver.weight_decay must be >= 0, got -1");
    o = good;
    o.set("num_threads", Int(0));
    ExpectInvalid(o, "solver.num_threads must be >= 1, got 0");
    o = good;
    o.set("fitness_shaping", Text("RANK"));
    ExpectInvalid(o, "solver.fitness_shaping must be one of CENTERED_RANK, Z_SCORE, RAW, got RANK");
    o = good;
    o.set("optimizer.type", Text("RMSPROP"));
    ExpectInvalid(o, "solver.optimizer.type must be one of SGD, MOMENTUM, ADAM, got RMSPROP");
    o = good;
    o.set("optimizer.base_lr", Real(0.0));
    ExpectInvalid(o, "solver.optimizer.base_lr must be > 0, got 0");
    o = good;
    o.set("optimizer.momentum.momentum", Real(1.0));
    ExpectInvalid(o, "solver.optimizer.momentum.momentum must be in [0, 1), got 1");
    o = good;
    o.set("optimizer.adam.beta1", Real(-0.1));
    ExpectInvalid(o, "solver.optimizer.adam.beta1 must be in [0, 1), got -0.1");
    o = good;
    o.set("optimizer.adam.beta2", Real(1.5));
    ExpectInvalid(o, "solver.optimizer.adam.beta2 must be in [0, 1), got 1.5");
    o = good;
    o.set("optimizer.adam.epsilon", Real(0.0));
    ExpectInvalid(o, "solver.optimizer.adam.epsilon must be > 0, got 0");
  }
  OptionSet o = FamilyOptions(kGaussian);
  o.set("sampling.type", Text("X"));
  std::string known;
  for (const std::string& f : solver_families()) known += (known.empty() ? "" : ", ") + f;
  EXPECT_EQ(known.rfind("GAUSSIAN_SAMPLING, CMA_SAMPLING, GA_SAMPLING, ARS_SAMPLING, SNES_SAMPLING", 0),
            0u);
  ExpectInvalid(o, "solver.sampling.type must be one of " + known + ", got X");
}

TEST(SolverRegistry, GaussianOptionMessages) {
  const OptionSet good = FamilyOptions(kGaussian);
  OptionSet o = good;
  o.set("population_size", Int(5));
  ExpectInvalid(o, "solver.population_size must be even when solver.antithetic is true, got 5");
  o.set("antithetic", false);
  EXPECT_NO_THROW(validate_solver_options(o));
  o = good;
  o.set("sampling.gaussian_sampling.std", Real(0.0));
  ExpectInvalid(o, "solver.sampling.gaussian_sampling.std must be > 0, got 0");
  o = good;
  o.set("sampling.gaussian_sampling.cache_size", Int(0));
  ExpectInvalid(o, "solver.sampling.gaussian_sampling.cache_size must be >= 1, got 0");
  // smaller than the model: only known with num_params
  o = good;
  o.set("sampling.gaussian_sampling.cache_size", Int(50));
  EXPECT_NO_THROW(validate_solver_options(o));
  ExpectInvalid(o,
                "solver.sampling.gaussian_sampling.cache_size (50) is smaller than the model (100 "
                "parameters): raise solver.sampling.gaussian_sampling.cache_size to at least 100 "
                "(a table many times larger gives more distinct noise)",
                100);
  // uncached noise has no table
  o.set("sampling.gaussian_sampling.cached", false);
  EXPECT_NO_THROW(validate_solver_options(o, 100));
}

TEST(SolverRegistry, CMAAndGAOptionMessages) {
  for (const char* family : {kCMA, kGA}) {
    SCOPED_TRACE(family);
    OptionSet o = FamilyOptions(family);
    o.set("antithetic", true);
    ExpectInvalid(o, std::string("solver.antithetic must be false with ") + family +
                         " (mirrored pairs are a Gaussian-sampling scheme), got true");
    o = FamilyOptions(family);
    o.set("population_size", Int(1));
    ExpectInvalid(o, "solver.population_size must be >= 2, got 1");
  }
  OptionSet o = FamilyOptions(kCMA);
  o.set("sampling.cma_sampling.sigma0", Real(-0.5));
  ExpectInvalid(o, "solver.sampling.cma_sampling.sigma0 must be > 0, got -0.5");

  const OptionSet good = ReevaluatingGAOptions();  // population 8
  const std::string f = "sampling.ga_sampling.";
  struct Case {
    const char* option;
    OptionSet::Value value;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"truncation_size", Int(-1), "truncation_size must be >= 0, got -1"},
      {"truncation_size", Int(9),
       "truncation_size must be in [1, 8] (solver.population_size), got 9"},
      {"num_elites", Int(0), "num_elites must be in [1, 7] (solver.population_size - 1), got 0"},
      {"num_elites", Int(8), "num_elites must be in [1, 7] (solver.population_size - 1), got 8"},
      {"mutation_power", Real(0.0), "mutation_power must be > 0, got 0"},
      {"init_sigma", Real(-0.1), "init_sigma must be >= 0, got -0.1"},
      {"elite_evaluations", Int(-1), "elite_evaluations must be >= 0, got -1"},
      {"elite_candidates", Int(-1), "elite_candidates must be >= 0, got -1"},
      {"elite_candidates", Int(9),
       "elite_candidates must be in [1, 8] (num_elites to solver.population_size), got 9"},
      {"elite_evaluations", Int(3),
       "elite_evaluations (3) times the at most 3 candidates (elite_candidates + num_elites) is "
       "9, more than the 8 samples of a generation (solver.population_size)"},
  };
  for (const Case& c : cases) {
    o = good;
    o.set(f + c.option, c.value);
    ExpectInvalid(o, "solver." + f + c.message);
  }
  // 0 selects the formulas: max(1, 8 // 5) = 1 parent, min(10, 8) = 8
  // candidates, which 2 evaluations of 8 + 1 exceed
  o = good;
  o.set(f + "truncation_size", Int(0));
  EXPECT_NO_THROW(validate_solver_options(o));
  o.set(f + "elite_candidates", Int(0));
  ExpectInvalid(o, "solver." + f +
                       "elite_evaluations (2) times the at most 9 candidates (elite_candidates + "
                       "num_elites) is 18, more than the 8 samples of a generation "
                       "(solver.population_size)");
  // without re-evaluation the candidates are not checked
  o = good;
  o.set(f + "elite_evaluations", Int(0));
  o.set(f + "elite_candidates", Int(99));
  EXPECT_NO_THROW(validate_solver_options(o));
}

TEST(SolverRegistry, AMissingOrMistypedOptionIsNamed) {
  OptionSet o = FamilyOptions(kCMA);
  OptionSet missing;
  for (const auto& [name, value] : o.values()) {
    if (name != "sampling.cma_sampling.sigma0") missing.set(name, value);
  }
  ExpectInvalid(missing, "solver option 'sampling.cma_sampling.sigma0' is missing");
  EXPECT_EQ(MessageOf<std::invalid_argument>([] { validate_solver_options(OptionSet()); }),
            "solver option 'sampling.type' is missing");
  o.set("population_size", Real(6.0));
  ExpectInvalid(o, "solver option 'population_size' must be an integer");
  o = FamilyOptions(kCMA);
  o.set("antithetic", Int(0));
  ExpectInvalid(o, "solver option 'antithetic' must be a bool");
  o = FamilyOptions(kCMA);
  o.set("sampling.type", Int(1));
  ExpectInvalid(o, "solver option 'sampling.type' must be a string");
  // an integer is a number
  o = FamilyOptions(kCMA);
  o.set("sampling.cma_sampling.sigma0", Int(2));
  EXPECT_EQ(dynamic_cast<StrategySolver&>(*make_solver(o, RandomVector(kParams, 52), 1))
                .strategy<CMABase>()
                .state()
                .sigma,
            2.0);
  // and the solver's own thread count is checked too
  EXPECT_EQ(MessageOf<std::invalid_argument>(
                [&] { make_solver(FamilyOptions(kGA), RandomVector(kParams, 52), 0); }),
            "num_threads must be >= 1, got 0");
}

// ===========================================================================
// ESAgent over every family

class SolverFamily : public ::testing::TestWithParam<std::string> {
 protected:
  OptionSet Options() const { return FamilyOptions(GetParam()); }
  std::unique_ptr<Solver> Make(std::uint32_t seed, int threads = 1) const {
    return make_solver(Options(), RandomVector(kParams, seed), threads);
  }
};

TEST_P(SolverFamily, CloneParamsAreTheSolversRebuild) {
  ESAgent agent(Make(61));
  EXPECT_EQ(agent.solver().family(), GetParam());
  auto clones = Clones(agent, 6);
  EXPECT_TRUE(clones[0]->sampling_info().key.empty());
  for (int g = 0; g < 3; ++g) {
    Batch batch;
    Draw(clones, 0, 6, batch);
    for (std::size_t c = 0; c < 6; ++c) {
      EXPECT_TRUE(clones[c]->has_noise());
      EXPECT_EQ(Describe(clones[c]->sampling_info()), Describe(batch.infos[c]));
      EXPECT_EQ(batch.infos[c].model_iter_id, agent.model_iter_id());
      EXPECT_TRUE(SameBits(clones[c]->params(), Rebuilt(agent.solver(), batch.infos[c])))
          << "generation " << g << ", clone " << c;
      EXPECT_NE(clones[c]->params().data(), agent.center().data());
    }
    Complete(agent, clones, batch);
    const UpdateStats stats = agent.update(batch.infos, batch.rewards);
    EXPECT_EQ(stats.num_samples, batch.infos.size());
    EXPECT_EQ(stats.model_iter_id, g + 1);
    for (auto& c : clones) {
      EXPECT_FALSE(c->has_noise());
      EXPECT_EQ(c->params().data(), agent.center().data());
    }
  }
  // set_noise takes another clone's member, with its parameters
  const SamplingInfo info = clones[4]->add_noise();
  clones[0]->set_noise(info);
  EXPECT_EQ(Describe(clones[0]->sampling_info()), Describe(info));
  EXPECT_TRUE(SameBits(clones[0]->params(), clones[4]->params()));
}

TEST_P(SolverFamily, PopulationRowsAreTheRebuiltMembers) {
  ESAgent agent(Make(62));
  auto clones = Clones(agent, 6);
  Generation(agent, clones);
  const Solver& solver = agent.solver();
  const std::vector<SamplingInfo> infos = agent.draw_members(4);
  const std::vector<const SamplingInfo*> members = {&infos[0], nullptr, &infos[1], &infos[2],
                                                    &infos[3]};
  const Population pop = solver.population(members, 1);
  ASSERT_EQ(pop.size(), members.size());
  ASSERT_EQ(pop.num_params(), kParams);
  std::vector<std::vector<float>> rows;
  for (const SamplingInfo* m : members) rows.push_back(m ? Rebuilt(solver, *m) : solver.center());

  // The forward pass over the population is that of each rebuilt row.
  const PolicyGraph graph = TinyMlp();
  ASSERT_EQ(graph.num_params(), kParams);
  const std::vector<float> obs = RandomVector(members.size() * kObs, 63, 2.0f);
  std::vector<float> out(members.size() * kOut, -7.0f);
  run_population(graph, pop, obs.data(), out.data());
  for (std::size_t i = 0; i < members.size(); ++i) {
    const std::vector<float> want = graph.run(obs.data() + i * kObs, 1, rows[i].data(), kParams);
    const std::vector<float> got(out.begin() + static_cast<std::ptrdiff_t>(i * kOut),
                                 out.begin() + static_cast<std::ptrdiff_t>((i + 1) * kOut));
    EXPECT_TRUE(SameBits(got, want)) << "member " << i;
  }

  // And the views themselves: explicit rows are the rebuilt ones; Gaussian
  // members are the centre seen through +-sigma eps(key), which perturb()
  // materialises to the rebuilt row.
  for (std::size_t i = 0; i < members.size(); ++i) {
    const ParamView& view = pop.member(i);
    const std::vector<float> base(view.base, view.base + kParams);
    if (!Mirrored(GetParam()) || members[i] == nullptr) {
      EXPECT_EQ(view.noise, nullptr) << "member " << i;
      EXPECT_TRUE(SameBits(base, rows[i])) << "member " << i;
      continue;
    }
    const auto& g = static_cast<const StrategySolver&>(solver).strategy<GaussianStrategy>();
    const SamplingInfo& info = *members[i];
    const float sign = info.mirrored ? -1.0f : 1.0f;
    ASSERT_NE(view.noise, nullptr) << "member " << i;
    EXPECT_TRUE(SameBits(base, solver.center())) << "member " << i;
    EXPECT_TRUE(SameBits(std::vector<float>(view.noise, view.noise + kParams),
                         Noise(g.sampler(), info.key[0])))
        << "member " << i;
    EXPECT_EQ(view.scale, sign * g.sampler().sigma()) << "member " << i;
    std::vector<float> perturbed(kParams);
    g.sampler().perturb(solver.center().data(), info.key[0], sign, perturbed.data(), 1);
    EXPECT_TRUE(SameBits(perturbed, rows[i])) << "member " << i;
  }
}

TEST_P(SolverFamily, PopulationNamesABadMember) {
  ESAgent agent(Make(64));
  auto clones = Clones(agent, 6);
  Generation(agent, clones);
  const std::vector<SamplingInfo> infos = agent.draw_members(1);
  SamplingInfo bad = infos[0];
  if (Mirrored(GetParam())) {
    bad.key = {-1};
    EXPECT_TRUE(ThrowsWithMessage<std::out_of_range>(
        [&] { agent.solver().population({&infos[0], &bad}, 1); }, "member 1: key -1"));
  } else {
    bad.key = {42};
    EXPECT_EQ(MessageOf<std::invalid_argument>(
                  [&] { agent.solver().population({&infos[0], &bad}, 1); }),
              "sampling info 1: key [42] is not a member of iteration 1");
  }
}

// A draws with draw_members(), B with clones, side by side.
TEST_P(SolverFamily, DrawMembersIsWhatTheClonesWouldDraw) {
  for (std::uint64_t stream : {0u, 9u}) {
    SCOPED_TRACE("stream " + std::to_string(stream));
    ESAgent a(Make(65));
    ESAgent b(Make(65));
    a.set_sampling_stream(stream);
    b.set_sampling_stream(stream);
    auto cb = Clones(b, 6);
    for (int g = 0; g < 3; ++g) {
      // 6 members, then 4 more: the second call continues the counters
      std::vector<SamplingInfo> infos;
      for (std::size_t count : {6u, 4u}) {
        const std::vector<SamplingInfo> drawn = a.draw_members(count);
        ASSERT_EQ(drawn.size(), count);
        for (std::size_t c = 0; c < count; ++c) {
          const SamplingInfo info = cb[c]->add_noise();
          EXPECT_EQ(Describe(drawn[c]), Describe(info)) << "generation " << g << ", member " << c;
          infos.push_back(info);
        }
      }
      // the same update for both (all ten samples: two rewards for some members)
      std::vector<double> rewards;
      for (const SamplingInfo& info : infos) rewards.push_back(Reward(Rebuilt(b.solver(), info)));
      ASSERT_EQ(b.shortfall(infos, rewards), "");
      a.update(infos, rewards);
      b.update(infos, rewards);
      ASSERT_TRUE(SameBits(a.center(), b.center())) << "generation " << g;
    }
  }
  ESAgent agent(Make(65));
  EXPECT_TRUE(agent.draw_members(0).empty());
}

TEST_P(SolverFamily, ShortfallIsTheSolvers) {
  ESAgent agent(Make(66));
  auto clones = Clones(agent, 6);
  Batch batch;
  Draw(clones, 0, 3, batch);
  EXPECT_EQ(agent.shortfall(batch.infos, batch.rewards),
            agent.solver().shortfall(batch.infos, batch.rewards));
  EXPECT_EQ(clones[0]->shortfall(batch.infos, batch.rewards),
            agent.shortfall(batch.infos, batch.rewards));
  if (Mirrored(GetParam())) {
    EXPECT_EQ(agent.shortfall(batch.infos, batch.rewards), "");
    EXPECT_EQ(agent.shortfall({}, {}), "an update needs at least one sample");
  } else {
    const std::string kind = GetParam() == kCMA  ? std::string("CMA")
                             : GetParam() == kGA ? std::string("GA")
                                                 : distribution_family(GetParam()).name;
    const std::string what = GetParam() == kGA ? "individuals" : "members";
    EXPECT_EQ(agent.shortfall(batch.infos, batch.rewards),
              kind + " update needs 1 reward(s) for each of the 6 " + what +
                  " of iteration 0; 3 have fewer (first: member 3 with 0)");
  }
  EXPECT_EQ(MessageOf<std::invalid_argument>(
                [&] { agent.shortfall(batch.infos, std::vector<double>(2, 0.0)); }),
            "got 3 sampling infos and 2 rewards");
}

// corrects_older_samples() says whether update() takes a sample of an older
// iteration (with that iteration's centre from history).
TEST_P(SolverFamily, OnlyASolverThatCorrectsOlderSamplesTakesThem) {
  ESAgent agent(Make(69));
  const bool corrects = agent.solver().corrects_older_samples();
  EXPECT_EQ(corrects, Mirrored(GetParam()));
  auto clones = Clones(agent, 6);
  const std::vector<float> theta0 = agent.center();
  const Batch old = Generation(agent, clones);
  Batch batch;
  Complete(agent, clones, batch);
  batch.infos.push_back(old.infos[0]);
  batch.rewards.push_back(old.rewards[0]);
  const auto history = [&](std::int64_t t) { return t == 0 ? &theta0 : nullptr; };
  const std::size_t late = batch.infos.size() - 1;
  if (corrects) {
    EXPECT_EQ(agent.update(batch.infos, batch.rewards, history).num_corrected, 1u);
    return;
  }
  const SolverState before = agent.solver().save();
  const std::string kind = dynamic_cast<const StrategySolver&>(agent.solver()).kind();
  EXPECT_EQ(MessageOf<std::invalid_argument>(
                [&] { agent.update(batch.infos, batch.rewards, history); }),
            "sampling info " + std::to_string(late) + ": a " + kind +
                " sample of iteration 0 cannot be rebuilt at iteration 1: its distribution is "
                "gone (only samples of the current iteration are usable)");
  EXPECT_EQ(StateDiff(agent.solver().save(), before), "");
}

INSTANTIATE_TEST_SUITE_P(Families, SolverFamily, ::testing::ValuesIn(solver_families()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

// set_noise() checks the member with the solver: a CMA or GA sample is
// usable only at the iteration that drew it (unlike a Gaussian one, which
// set_noise takes at the current iteration).
TEST(StrategyAgent, SetNoiseRefusesASampleOfAnotherIteration) {
  for (const char* family : {kCMA, kGA}) {
    SCOPED_TRACE(family);
    ESAgent agent(make_solver(FamilyOptions(family), RandomVector(kParams, 67), 1));
    const std::string kind = dynamic_cast<const StrategySolver&>(agent.solver()).kind();
    auto clones = Clones(agent, 6);
    const Batch first = Generation(agent, clones);
    const SamplingInfo current = clones[2]->add_noise();
    const std::vector<float> params = clones[2]->params();
    EXPECT_EQ(MessageOf<std::invalid_argument>([&] { clones[2]->set_noise(first.infos[0]); }),
              "a " + kind +
                  " sample of iteration 0 cannot be rebuilt at iteration 1: its distribution is "
                  "gone (only samples of the current iteration are usable)");
    SamplingInfo stranger = current;
    stranger.key = {42};
    EXPECT_EQ(MessageOf<std::invalid_argument>([&] { clones[2]->set_noise(stranger); }),
              "key [42] is not a member of iteration 1");
    // the clone keeps its noise
    EXPECT_TRUE(clones[2]->has_noise());
    EXPECT_EQ(Describe(clones[2]->sampling_info()), Describe(current));
    EXPECT_TRUE(SameBits(clones[2]->params(), params));
    // and the solver refuses the old sample everywhere
    std::vector<float> out(kParams);
    EXPECT_THROW(agent.solver().rebuild(first.infos[0], out.data(), 1), std::invalid_argument);
    EXPECT_THROW(agent.solver().check_member(first.infos[0]), std::invalid_argument);
  }
}

// Updates and members are bit-identical for any thread count: problems
// large enough for the kernels to use every thread (full CMA-ES:
// n^2 >= 2^18 entries per covariance pass; sep-CMA-ES and the GA: draws of
// n * lambda >= 2^15 floats).
TEST(StrategyAgent, UpdatesDoNotDependOnTheThreadCount) {
  struct Case {
    const char* family;
    bool separable;
    std::size_t num_params;
  };
  for (const Case& k : {Case{kCMA, false, 600}, Case{kCMA, true, 6000}, Case{kGA, false, 6000}}) {
    SCOPED_TRACE(std::string(k.family) + (k.separable ? " separable" : ""));
    OptionSet o = FamilyOptions(k.family);
    o.set("sampling.cma_sampling.separable", k.separable);
    std::vector<std::vector<float>> centres, noisy;
    std::vector<SolverState> states;
    for (int threads : {1, 3}) {
      o.set("num_threads", Int(threads));
      ESAgent agent(make_solver(o, RandomVector(k.num_params, 68, 0.5f), threads), threads);
      auto clones = Clones(agent, 6);
      for (int g = 0; g < 3; ++g) Generation(agent, clones);
      clones[5]->add_noise();
      noisy.push_back(clones[5]->params());
      centres.push_back(agent.center());
      states.push_back(agent.solver().save());
    }
    EXPECT_TRUE(SameBits(centres[0], centres[1]));
    EXPECT_TRUE(SameBits(noisy[0], noisy[1]));
    EXPECT_EQ(StateDiff(states[0], states[1]), "");
  }
}

}  // namespace
}  // namespace evokit
