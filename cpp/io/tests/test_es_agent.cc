#include "evokit/io/es_agent.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "evokit/io/config.h"
#include "evokit/io/errors.h"
#include "evokit/io/fingerprint.h"
#include "evokit/io/solver_state.h"
#include "io_test_util.h"

namespace evokit::io {
namespace {

using testing::data_path;
using testing::expected;
using testing::expected_floats;
using testing::TempDir;

// The agent a service has after loading iteration 1 of the fixtures.
ESAgent LoadIter1() {
  ESAgent agent;
  agent.load_config(data_path("adam.prototxt"));
  agent.load_inference_model(data_path("iter1"));  // a directory holding model.onnx
  agent.init_solver();
  agent.load_solver(data_path("iter1"));
  return agent;
}

// A refusal by the solver's load(): this component's prefix naming the
// file, then the core's message (its exact words are the core's, tested in
// cpp/tests), which ends with `tail`.
::testing::AssertionResult InvalidState(const std::string& message, const std::string& path,
                                        const std::string& tail) {
  const std::string prefix = path + ": invalid solver state: ";
  if (message.rfind(prefix, 0) == 0 && message.size() >= prefix.size() + tail.size() &&
      message.compare(message.size() - tail.size(), tail.size(), tail) == 0) {
    return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure() << "message \"" << message << "\" is not \"" << prefix
                                       << "...\" ending with \"" << tail << "\"";
}

TEST(IoESAgent, SamplesAndUpdatesExactlyLikePython) {
  ESAgent agent = LoadIter1();
  EXPECT_EQ(agent.model_iter_id(), 1);
  EXPECT_EQ(agent.num_params(), 58u);
  agent.set_sampling_stream(7);
  std::vector<ESAgent> clones;
  for (int i = 0; i < 4; ++i) clones.push_back(agent.clone());
  std::vector<proto::SamplingInfo> infos(4);
  for (int i = 0; i < 4; ++i) clones[static_cast<std::size_t>(i)].add_noise(&infos[static_cast<std::size_t>(i)]);

  // The same keys as Python's clones of the same agent (same core, same stream).
  const std::vector<double>& keys = expected().at("iter1_keys");
  const std::vector<double>& mirrored = expected().at("iter1_mirrored");
  for (std::size_t i = 0; i < 4; ++i) {
    ASSERT_EQ(infos[i].key_size(), 1);
    EXPECT_EQ(infos[i].key(0), static_cast<std::int64_t>(keys[i]));
    EXPECT_EQ(infos[i].mirrored(), mirrored[i] != 0.0);
    EXPECT_EQ(infos[i].model_iter_id(), 1);
  }
  // The native forward pass of a perturbed clone matches onnxruntime's.
  const std::vector<float> obs = expected_floats("obs");
  const std::vector<float> want = expected_floats("clone0_predict");
  const std::vector<float> got = clones[0].predict(obs, 3);
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 2e-6f);

  // The update gives Python's iteration-2 parameters bit for bit.
  const std::vector<float> rewards = expected_floats("iter1_rewards");
  const UpdateStats stats =
      agent.update(infos, std::vector<double>(rewards.begin(), rewards.end()));
  EXPECT_EQ(stats.num_samples, 4u);
  EXPECT_EQ(agent.model_iter_id(), 2);
  const OnnxModel iter2 = OnnxModel::load(data_path("iter2_model.onnx"));
  EXPECT_TRUE(evokit::testing::SameBits(agent.params(), iter2.parameters()));
  // Clones see the new centre at once (their noise was for iteration 1).
  EXPECT_TRUE(evokit::testing::SameBits(clones[1].params(), agent.params()));
}

TEST(IoESAgent, ParallelSamplingEqualsSerial) {
  const std::vector<float> obs = expected_floats("obs");
  const auto sample = [&](int threads) {
    ESAgent agent = LoadIter1();
    std::vector<ESAgent> clones;
    for (int i = 0; i < 8; ++i) clones.push_back(agent.clone());
    std::vector<std::vector<float>> out(8);
    std::vector<proto::SamplingInfo> infos(8);
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1)
    for (int i = 0; i < 8; ++i) {
      const auto k = static_cast<std::size_t>(i);
      clones[k].add_noise(&infos[k]);
      out[k] = clones[k].predict(obs, 3);
    }
    return std::make_pair(infos, out);
  };
  const auto serial = sample(1);
  const auto parallel = sample(2);
  for (std::size_t i = 0; i < 8; ++i) {
    EXPECT_EQ(serial.first[i].SerializeAsString(), parallel.first[i].SerializeAsString());
    EXPECT_TRUE(evokit::testing::SameBits(serial.second[i], parallel.second[i]));
  }
}

TEST(IoESAgent, SaveAndLoadRoundTrip) {
  TempDir dir;
  ESAgent agent = LoadIter1();
  // Saved right after loading: both fingerprints (computed here) equal Python's.
  agent.save_solver(dir.path());
  const proto::SolverState loaded = read_solver_state(data_path("iter1/solver.pb"));
  proto::SolverState saved = read_solver_state(dir.file("solver.pb"));
  EXPECT_EQ(saved.params_fingerprint(), loaded.params_fingerprint());
  EXPECT_EQ(saved.model_fingerprint(), loaded.model_fingerprint());
  EXPECT_EQ(saved.steps(), 1);
  EXPECT_EQ(saved.noise_version(), 4);  // the noise its keys refer to (evokit/noise.h)
  EXPECT_EQ(loaded.noise_version(), 4);  // and so do Python's files
  // Written in state version 2: the solver's entries, typed.
  EXPECT_EQ(saved.state_version(), 2);
  EXPECT_EQ(saved.family(), "GAUSSIAN_SAMPLING");
  std::vector<std::string> names;
  for (const proto::NamedVector& v : saved.vectors()) names.push_back(v.name());
  EXPECT_EQ(names, (std::vector<std::string>{"optimizer.m", "optimizer.v", "draws.counters"}));

  ESAgent c = agent.clone();
  agent.update({c.add_noise(), agent.clone().add_noise()}, {1.0, 2.0});
  EXPECT_EQ(agent.save_inference_model(dir.path()), dir.file("model.onnx"));
  EXPECT_EQ(agent.save_solver(dir.path()), dir.file("solver.pb"));
  saved = read_solver_state(dir.file("solver.pb"));
  EXPECT_EQ(saved.steps(), 2);
  EXPECT_EQ(saved.model_fingerprint(), loaded.model_fingerprint());  // same graph
  // New parameters: their fingerprint, computed in C++.
  EXPECT_NE(saved.params_fingerprint(), loaded.params_fingerprint());
  EXPECT_EQ(saved.params_fingerprint(),
            params_fingerprint(model_fingerprint(agent.model()), agent.params()));
  EXPECT_EQ(parse_config(saved.config()).SerializeAsString(),
            agent.config().SerializeAsString());

  ESAgent back;
  back.load_config(data_path("adam.prototxt"));
  back.load_inference_model(dir.file("model.onnx"));
  back.init_solver();
  back.load_solver(dir.path());
  EXPECT_EQ(back.model_iter_id(), 2);
  EXPECT_TRUE(evokit::testing::SameBits(back.params(), agent.params()));
  const evokit::SolverState want = agent.core().solver().save();
  const evokit::SolverState got = back.core().solver().save();
  for (const char* name : {"optimizer.m", "optimizer.v"}) {
    EXPECT_TRUE(evokit::testing::SameBits(got.float_array(name), want.float_array(name))) << name;
  }
  EXPECT_EQ(got.ints, want.ints);  // the clones' draw counters
  EXPECT_EQ(back.solver_state().SerializeAsString(), agent.solver_state().SerializeAsString());
}

// PARL EvoKit's online programs: load_config, load_inference_model,
// load_solver, without init_solver. The solver load_solver builds continues
// exactly as one init_solver built and load_solver restored.
TEST(IoESAgent, LoadSolverWithoutInitSolverContinuesIdentically) {
  TempDir dir;
  ESAgent agent = LoadIter1();
  agent.update({agent.clone().add_noise(), agent.clone().add_noise()}, {1.0, 2.0});
  agent.save_inference_model(dir.path());
  agent.save_solver(dir.path());
  const auto load = [&](bool init) {
    ESAgent a;
    a.load_config(data_path("adam.prototxt"));
    a.load_inference_model(dir.path());
    if (init) a.init_solver();
    a.load_solver(dir.path());
    return a;
  };
  ESAgent plain = load(false);
  ESAgent inited = load(true);
  ASSERT_TRUE(plain.has_solver());
  EXPECT_EQ(plain.model_iter_id(), 2);
  EXPECT_TRUE(evokit::testing::SameBits(plain.params(), agent.params()));
  EXPECT_EQ(plain.solver_state().SerializeAsString(), inited.solver_state().SerializeAsString());
  EXPECT_EQ(plain.solver_state().SerializeAsString(), agent.solver_state().SerializeAsString());
  // The same members drawn by both reloaded agents, and the same update from
  // all three (optimizer state restored): the same bits.
  const auto draw = [](ESAgent& a) {
    std::vector<ESAgent> clones;
    std::vector<proto::SamplingInfo> infos(4);
    for (std::size_t i = 0; i < 4; ++i) {
      clones.push_back(a.clone());
      clones[i].add_noise(&infos[i]);
    }
    return infos;
  };
  const std::vector<proto::SamplingInfo> infos = draw(plain);
  const std::vector<proto::SamplingInfo> again = draw(inited);
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(infos[i].SerializeAsString(), again[i].SerializeAsString());
  }
  for (ESAgent* a : {&plain, &inited, &agent}) a->update(infos, {0.1, 0.7, 0.3, 0.2});
  EXPECT_TRUE(evokit::testing::SameBits(plain.params(), agent.params()));
  EXPECT_EQ(plain.solver_state().SerializeAsString(), inited.solver_state().SerializeAsString());
}

TEST(IoESAgent, PredictBeforeTheSolverUsesTheModelsParameters) {
  ESAgent agent;
  agent.load_inference_model(data_path("cartpole_h8.onnx"));
  EXPECT_EQ(agent.obs_size(), 4u);
  const std::vector<float> got = agent.predict(expected_floats("obs"), 3);
  const std::vector<float> want = expected_floats("predict");
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 2e-6f);
  EXPECT_THROW_WITH(agent.predict({1, 2, 3}), std::invalid_argument,
                    "predict(): obs holds 3 values, expected batch * obs_size = 1 * 4 = 4");
  EXPECT_THROW_WITH(agent.predict({}, 0), std::invalid_argument, "batch must be >= 1");
}

// tests/fixtures/recurrent_reference.txt: torch's outputs of the
// PyTorch-exported recurrent policies, step by step (12 steps of 3
// observations), written by tests/fixtures/make_torch_recurrent.py.
std::map<std::string, std::vector<float>> RecurrentReference() {
  std::map<std::string, std::vector<float>> out;
  std::ifstream in(std::string(EVOKIT_SOURCE_DIR) + "/tests/fixtures/recurrent_reference.txt");
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    std::string name;
    fields >> name;
    float v;
    while (fields >> v) out[name].push_back(v);
  }
  return out;
}

TEST(IoESAgent, RecurrentPoliciesCarryTheStateLikeTorch) {
  const auto ref = RecurrentReference();
  for (const std::string name :
       {"recurrent_lstm", "recurrent_gru", "recurrent_lstm_bf", "recurrent_gru_bf"}) {
    SCOPED_TRACE(name);
    ESAgent agent;
    agent.load_inference_model(std::string(EVOKIT_SOURCE_DIR) + "/tests/fixtures/" + name + ".onnx");
    const OnnxModel& model = agent.model();
    ASSERT_TRUE(model.recurrent());
    EXPECT_EQ(model.state_names()[0], "h0");
    EXPECT_EQ(model.state_output_names()[0], "hn");
    const std::vector<float>& obs = ref.at(name + "_obs");
    const std::vector<float>& want = ref.at(name + "_action");
    const std::size_t batch = 3, steps = obs.size() / (batch * 4);
    ASSERT_EQ(steps, 12u);
    std::vector<float> state = agent.initial_state(batch);
    for (std::size_t t = 0; t < steps; ++t) {
      const std::vector<float> x(obs.begin() + t * batch * 4, obs.begin() + (t + 1) * batch * 4);
      const std::vector<float> y = agent.predict(x, state, batch);
      for (std::size_t i = 0; i < y.size(); ++i) {
        EXPECT_NEAR(y[i], want[t * batch * 2 + i], 1e-5f) << "step " << t;
      }
    }
    EXPECT_THROW_WITH(agent.predict(std::vector<float>(4, 0.0f)), std::invalid_argument,
                      "predict(): the model is recurrent (state input 'h0'): call "
                      "predict(obs, state, batch) with state = initial_state(batch) at each "
                      "episode start");
    std::vector<float> short_state(3);
    EXPECT_THROW_WITH(agent.predict(std::vector<float>(4, 0.0f), short_state), std::invalid_argument,
                      "predict(): state holds 3 values, expected batch * state_size = 1 * ");
  }
}

// predict() of one observation executes a plan compiled once (shared by the
// clones) instead of PolicyGraph::run's plan per call: the same bits as run()
// with the agent's parameters, for the centre and perturbed clones, call
// after call, and for a recurrent model step after step.
TEST(IoESAgent, PredictGivesTheBitsOfRunWithTheAgentsParameters) {
  ESAgent agent = LoadIter1();
  std::vector<ESAgent> agents;
  agents.push_back(agent.clone());  // no noise: the centre
  for (int i = 0; i < 3; ++i) {
    agents.push_back(agent.clone());
    agents.back().add_noise();
  }
  const PolicyGraph& g = agent.graph();
  for (std::size_t a = 0; a < agents.size(); ++a) {
    for (std::uint32_t j = 0; j < 5; ++j) {
      for (const std::size_t batch : {std::size_t{1}, std::size_t{3}}) {
        const std::vector<float> obs = evokit::testing::RandomVector(4 * batch, 50 + j);
        const std::vector<float>& p = agents[a].params();
        EXPECT_TRUE(evokit::testing::SameBits(agents[a].predict(obs, batch),
                                              g.run(obs.data(), batch, p.data(), p.size())))
            << "agent " << a << " obs " << j << " batch " << batch;
      }
    }
  }
  ESAgent recurrent;
  recurrent.load_inference_model(std::string(EVOKIT_SOURCE_DIR) + "/tests/fixtures/recurrent_gru.onnx");
  const PolicyGraph& rg = recurrent.graph();
  std::vector<float> state = recurrent.initial_state(1), run_state = state;
  for (std::uint32_t t = 0; t < 6; ++t) {
    const std::vector<float> obs = evokit::testing::RandomVector(4, 70 + t);
    const std::vector<float>& p = recurrent.params();
    EXPECT_TRUE(evokit::testing::SameBits(recurrent.predict(obs, state),
                                          rg.run(obs.data(), 1, p.data(), p.size(), run_state.data())))
        << "step " << t;
    EXPECT_TRUE(evokit::testing::SameBits(state, run_state)) << "step " << t;
  }
}

TEST(IoESAgentErrors, CallsOutOfOrderOrOnTheWrongAgent) {
  ESAgent agent;
  EXPECT_THROW_WITH(agent.init_solver(), std::logic_error, "call load_config() first");
  agent.load_config(data_path("adam.prototxt"));
  EXPECT_THROW_WITH(agent.init_solver(), std::logic_error, "call load_inference_model() first");
  EXPECT_THROW_WITH(agent.predict({0, 0, 0, 0}), std::logic_error, "no model loaded");
  agent.load_inference_model(data_path("cartpole_h8.onnx"));
  EXPECT_THROW_WITH(agent.clone(), std::logic_error,
                    "clone() needs the solver: call init_solver() or load_solver() first");
  agent.init_solver();
  EXPECT_THROW_WITH(agent.add_noise(), std::logic_error, "add_noise() is for sampling agents");
  ESAgent c = agent.clone();
  EXPECT_TRUE(c.is_clone());
  EXPECT_THROW_WITH(c.add_noise(nullptr), std::invalid_argument, "info must not be null");
  EXPECT_THROW_WITH(c.update({c.add_noise()}, {1.0}), std::logic_error,
                    "update() must be called on the original agent");
  EXPECT_THROW_WITH(c.load_config(data_path("adam.prototxt")), std::logic_error,
                    "load_config() must be called on the original agent");
  EXPECT_THROW_WITH(c.save_solver("/tmp"), std::logic_error, "original agent");
  EXPECT_THROW_WITH(agent.update({}, {}), std::invalid_argument, "at least one sample");
}

TEST(IoESAgentErrors, LoadSolverNeedsTheConfigAndTheModel) {
  ESAgent agent;
  EXPECT_THROW_WITH(agent.load_solver(data_path("iter1")), std::logic_error,
                    "load_solver() needs a config: call load_config() first");
  agent.load_config(data_path("adam.prototxt"));
  EXPECT_THROW_WITH(agent.load_solver(data_path("iter1")), std::logic_error,
                    "load_solver() needs a model: call load_inference_model() first");
  EXPECT_THROW_WITH(agent.load_solver_state(proto::SolverState()), std::logic_error,
                    "load_solver_state() needs a model: call load_inference_model() first");
  // A state that does not load leaves the agent without a solver.
  agent.load_inference_model(data_path("cartpole_h8.onnx"));  // not iter1's parameters
  EXPECT_THROW_WITH(agent.load_solver(data_path("iter1")), SolverFileError,
                    "its parameters are not those of the model");
  EXPECT_FALSE(agent.has_solver());
  EXPECT_THROW_WITH(agent.clone(), std::logic_error,
                    "clone() needs the solver: call init_solver() or load_solver() first");
  TempDir dir;
  testing::write_bytes(dir.file("sgd.prototxt"), "solver { optimizer { type: SGD } }");
  agent.load_config(dir.file("sgd.prototxt"));
  agent.load_inference_model(data_path("iter1"));
  EXPECT_THROW_WITH(agent.load_solver(data_path("iter1")), SolverFileError,
                    "iter1/solver.pb: solver state is for optimizer ADAM, the config asks for SGD");
  EXPECT_FALSE(agent.has_solver());
  agent.load_config(data_path("adam.prototxt"));
  agent.load_solver(data_path("iter1"));
  EXPECT_TRUE(agent.has_solver());
  EXPECT_EQ(agent.model_iter_id(), 1);
}

TEST(IoESAgentErrors, BadConfigValuesNameTheSource) {
  TempDir dir;
  testing::write_bytes(dir.file("c.prototxt"),
                       "solver { sampling { gaussian_sampling { std: -0.5 } } }");
  ESAgent agent;
  // load_config validates, as Python's does, naming the line
  EXPECT_THROW_WITH(agent.load_config(dir.file("c.prototxt")), ConfigError,
                    dir.file("c.prototxt") +
                        ":1: solver.sampling.gaussian_sampling.std must be > 0, got -0.5");
  // a config set unvalidated is checked by init_solver (no text: no line)
  agent.set_config(parse_config("solver { sampling { gaussian_sampling { std: -0.5 } } }"), "s.prototxt");
  agent.load_inference_model(data_path("cartpole_h8.onnx"));
  EXPECT_THROW_WITH(agent.init_solver(), ConfigError,
                    "s.prototxt: solver.sampling.gaussian_sampling.std must be > 0, got -0.5");
  // The cache must hold a whole parameter vector.
  testing::write_bytes(dir.file("d.prototxt"),
                       "solver { sampling { gaussian_sampling { cached: true cache_size: 10 } } }");
  agent.load_config(dir.file("d.prototxt"));
  agent.load_inference_model(data_path("cartpole_h8.onnx"));
  EXPECT_THROW_WITH(agent.init_solver(), ConfigError,
                    dir.file("d.prototxt") +
                        ":1: solver.sampling.gaussian_sampling.cache_size (10) is smaller than the "
                        "model (58 parameters)");
  EXPECT_FALSE(agent.has_solver());
}

// Refused as Python refuses them, naming the field (init_solver validates).
TEST(IoESAgentErrors, PopulationSizeRefusals) {
  const auto refusal = [](const std::string& text) {
    ESAgent agent;
    agent.set_config(parse_config(text), "p.prototxt");
    agent.load_inference_model(data_path("cartpole_h8.onnx"));
    return evokit::testing::MessageOf<ConfigError>([&] { agent.init_solver(); });
  };
  EXPECT_EQ(refusal("solver { population_size: 0 }"),
            "p.prototxt: solver.population_size must be >= 1, got 0");
  EXPECT_EQ(refusal("solver { population_size: 7 antithetic: true }"),
            "p.prototxt: solver.population_size must be even when solver.antithetic is true, "
            "got 7");
  EXPECT_EQ(refusal("solver { population_size: 1 antithetic: false "
                    "sampling { type: CMA_SAMPLING } }"),
            "p.prototxt: solver.population_size must be >= 2, got 1");
}

TEST(IoESAgentErrors, SolverFileMismatches) {
  TempDir dir;
  testing::write_bytes(dir.file("sgd.prototxt"), "solver { optimizer { type: SGD } }");
  ESAgent agent;
  agent.load_config(dir.file("sgd.prototxt"));
  agent.load_inference_model(data_path("iter1"));
  agent.init_solver();
  EXPECT_THROW_WITH(agent.load_solver(data_path("iter1")), SolverFileError,
                    "iter1/solver.pb: solver state is for optimizer ADAM, the config asks for SGD");
  EXPECT_THROW_WITH(agent.load_solver(dir.path()), SolverFileError,
                    dir.file("solver.pb") + ": no such solver file");
  EXPECT_EQ(agent.model_iter_id(), 0);

  // Another model (parameter count, then graph).
  ESAgent other;
  testing::write_bytes(dir.file("x.prototxt"),
                       "solver { optimizer { type: ADAM } param_pattern: \".*bias.*\" }");
  other.load_config(dir.file("x.prototxt"));
  other.load_inference_model(data_path("iter1"));
  other.init_solver();
  EXPECT_THROW_WITH(other.load_solver(data_path("iter1")), SolverFileError,
                    "iter1/solver.pb: solver state is for a model with 58 parameters, the loaded "
                    "model has " + std::to_string(other.num_params()));
}

// What the checks of load_solver_state refuse changes nothing: the same
// solver state bytes before and after.
TEST(IoESAgentErrors, BadGaussianStatesChangeNothing) {
  ESAgent agent = LoadIter1();
  const std::string before = agent.solver_state().SerializeAsString();
  const proto::SolverState good = read_solver_state(data_path("iter1/solver.pb"));
  const std::string path = "it/solver.pb";
  const auto refusal = [&](const proto::SolverState& s) {
    const std::string message = evokit::testing::MessageOf<SolverFileError>(
        [&] { agent.load_solver_state(s, path); });
    EXPECT_EQ(agent.solver_state().SerializeAsString(), before) << message;
    return message;
  };
  // The checks of this component, in Python's order and words.
  proto::SolverState s = good;
  s.clear_num_params();
  EXPECT_EQ(refusal(s), "it/solver.pb: not a solver state file (no num_params)");
  s = good;
  s.set_num_params(57);
  EXPECT_EQ(refusal(s), "it/solver.pb: solver state is for a model with 57 parameters, the loaded "
                        "model has 58");
  s = good;
  s.set_fingerprint_version(3);
  EXPECT_EQ(refusal(s), "it/solver.pb: solver state has fingerprint version 3, this library "
                        "verifies only version 2 (a newer EvoKit wrote it)");
  s = good;
  s.set_model_fingerprint(std::string(64, '0'));
  EXPECT_EQ(refusal(s), "it/solver.pb: solver state belongs to another model than " +
                        data_path("iter1/model.onnx") + " (graph fingerprint "
                        "000000000000, loaded model " + good.model_fingerprint().substr(0, 12) +
                        ", fingerprint version 2)");
  s = good;
  s.set_optimizer(proto::OptimizerConfig::MOMENTUM);
  EXPECT_EQ(refusal(s), "it/solver.pb: solver state is for optimizer MOMENTUM, the config asks "
                        "for ADAM");
  // Then the solver's own checks, wrapped.
  s = good;
  s.mutable_vectors()->RemoveLast();
  EXPECT_TRUE(InvalidState(refusal(s), path, "state entry 'optimizer.v' (float32) is missing"));
  s = good;
  s.mutable_vectors(0)->set_data("abcd");
  EXPECT_TRUE(
      InvalidState(refusal(s), path, "state entry 'optimizer.m' holds 1 values, expected 58"));
  s = good;
  s.mutable_vectors(1)->set_name("velocity");
  EXPECT_TRUE(InvalidState(refusal(s), path, "state entry 'optimizer.v' (float32) is missing"));
  s = good;
  *s.add_vectors() = good.vectors(1);
  s.mutable_vectors(2)->set_name("velocity");
  EXPECT_TRUE(InvalidState(
      refusal(s), path, "state vector 'optimizer.velocity' is not a state of the ADAM optimizer"));
  s = good;
  s.set_steps(-1);
  EXPECT_TRUE(InvalidState(refusal(s), path, "model_iter_id must be >= 0, got -1"));
  s = agent.solver_state();  // version 2
  s.set_family("CMA_SAMPLING");
  EXPECT_TRUE(InvalidState(refusal(s), path,
                           "the state is of CMA_SAMPLING, this solver is GAUSSIAN_SAMPLING"));
}

// ---- every family through the same agent --------------------------------------

struct FamilyCase {
  const char* name;
  const char* config;
};

// One config per sampling family, on the 58 parameters of cartpole_h8.onnx.
const FamilyCase kFamilies[] = {
    {"Gaussian",
     "solver { optimizer { type: ADAM base_lr: 0.05 } population_size: 6 "
     "sampling { gaussian_sampling { std: 0.1 cached: true cache_size: 5000 } } }"},
    {"CMA",
     "solver { sampling { type: CMA_SAMPLING cma_sampling { sigma0: 0.2 seed: 5 } } "
     "population_size: 8 antithetic: false }"},
    {"SepCMA",
     "solver { sampling { type: CMA_SAMPLING cma_sampling { sigma0: 0.2 separable: true } } "
     "population_size: 6 antithetic: false }"},
    // Elite re-evaluation on: a generation is two updates, and the state
    // holds the candidates' order between them.
    {"GA",
     "solver { sampling { type: GA_SAMPLING ga_sampling { truncation_size: 4 num_elites: 1 "
     "mutation_power: 0.05 init_sigma: 0.1 elite_candidates: 2 elite_evaluations: 2 seed: 9 } } "
     "population_size: 12 antithetic: false }"},
};

class IoESAgentFamilies : public ::testing::TestWithParam<FamilyCase> {
 protected:
  ESAgent MakeAgent(const std::string& model) const {
    ESAgent agent;
    agent.set_config(parse_config(GetParam().config), GetParam().name);
    agent.load_inference_model(model);
    agent.init_solver();
    return agent;
  }
};

// One generation: every clone draws (in clone order), predicts, and its
// reward is a function of its prediction; then the update.
struct GenerationResult {
  std::vector<proto::SamplingInfo> infos;
  std::vector<std::vector<float>> outputs;
  std::size_t perturbed = 0;  // members whose parameters differ from the centre
};

GenerationResult Generation(ESAgent& agent, std::vector<ESAgent>& clones) {
  const std::vector<float> obs = expected_floats("obs");
  GenerationResult out;
  std::vector<double> rewards;
  for (ESAgent& clone : clones) {
    out.infos.push_back(clone.add_noise());
    out.outputs.push_back(clone.predict(obs, 3));
    if (!evokit::testing::SameBits(clone.params(), agent.params())) ++out.perturbed;
    double reward = 0.0;
    for (std::size_t i = 0; i < out.outputs.back().size(); ++i) {
      reward += (i % 2 == 0 ? 1.0 : -0.5) * out.outputs.back()[i];
    }
    rewards.push_back(reward);
  }
  EXPECT_EQ(agent.shortfall(out.infos, rewards), "");
  const std::int64_t before = agent.model_iter_id();
  const UpdateStats stats = agent.update(out.infos, rewards);
  EXPECT_EQ(stats.model_iter_id, before + 1);
  EXPECT_EQ(agent.model_iter_id(), before + 1);
  return out;
}

std::vector<ESAgent> Clones(ESAgent& agent) {
  std::vector<ESAgent> clones;
  const int n = agent.config().solver().population_size();
  for (int i = 0; i < n; ++i) clones.push_back(agent.clone());
  return clones;
}

TEST_P(IoESAgentFamilies, SaveLoadAndContinueBitForBit) {
  TempDir dir;
  ESAgent agent = MakeAgent(data_path("cartpole_h8.onnx"));
  const std::vector<float> x0 = agent.params();
  std::vector<ESAgent> clones = Clones(agent);
  const GenerationResult first = Generation(agent, clones);
  // The members are perturbations of the centre: different parameters,
  // different predictions.
  EXPECT_EQ(first.perturbed, clones.size());
  EXPECT_FALSE(evokit::testing::SameBits(first.outputs[0], first.outputs[1]));
  EXPECT_GT(Generation(agent, clones).perturbed, 0u);
  EXPECT_EQ(agent.model_iter_id(), 2);
  EXPECT_FALSE(evokit::testing::SameBits(agent.params(), x0));  // the centre moved

  agent.save_inference_model(dir.path());
  agent.save_solver(dir.path());
  const proto::SolverState saved = read_solver_state(dir.file("solver.pb"));
  EXPECT_EQ(saved.state_version(), 2);
  EXPECT_EQ(saved.family(),
            proto::SamplingConfig::Type_Name(agent.config().solver().sampling().type()));
  EXPECT_EQ(saved.steps(), 2);

  // A fresh agent from the saved model and solver: the same state, bit for bit.
  ESAgent back = MakeAgent(dir.file("model.onnx"));
  back.load_solver(dir.path());
  EXPECT_EQ(back.model_iter_id(), 2);
  EXPECT_TRUE(evokit::testing::SameBits(back.params(), agent.params()));
  EXPECT_EQ(back.solver_state().SerializeAsString(), agent.solver_state().SerializeAsString());

  // Both continue with the same members, predictions and centres.
  std::vector<ESAgent> back_clones = Clones(back);
  for (int g = 0; g < 3; ++g) {
    SCOPED_TRACE("generation " + std::to_string(g));
    const GenerationResult a = Generation(agent, clones);
    const GenerationResult b = Generation(back, back_clones);
    EXPECT_GT(a.perturbed, 0u);
    ASSERT_EQ(a.infos.size(), b.infos.size());
    for (std::size_t i = 0; i < a.infos.size(); ++i) {
      EXPECT_EQ(a.infos[i].SerializeAsString(), b.infos[i].SerializeAsString()) << i;
      EXPECT_TRUE(evokit::testing::SameBits(a.outputs[i], b.outputs[i])) << i;
    }
    EXPECT_TRUE(evokit::testing::SameBits(back.params(), agent.params()));
  }
  EXPECT_EQ(back.solver_state().SerializeAsString(), agent.solver_state().SerializeAsString());
}

INSTANTIATE_TEST_SUITE_P(EveryFamily, IoESAgentFamilies, ::testing::ValuesIn(kFamilies),
                         [](const ::testing::TestParamInfo<FamilyCase>& info) {
                           return std::string(info.param.name);
                         });

// Bad CMA / GA solver files: refused naming the file (and the entry), and
// the agent's state is unchanged.
TEST(IoESAgentErrors, BadStrategyStatesNameTheFileAndTheEntry) {
  TempDir dir;
  const auto make = [](const FamilyCase& family) {
    ESAgent agent;
    agent.set_config(parse_config(family.config), family.name);
    agent.load_inference_model(data_path("cartpole_h8.onnx"));
    agent.init_solver();
    return agent;
  };
  ESAgent cma = make(kFamilies[1]);
  std::vector<ESAgent> clones = Clones(cma);
  Generation(cma, clones);
  const std::string path = cma.save_solver(dir.path());
  ASSERT_EQ(path, dir.file("solver.pb"));
  const proto::SolverState good = read_solver_state(path);
  const std::string before = cma.solver_state().SerializeAsString();
  const auto refusal = [&](const proto::SolverState& s) {
    write_solver_state(path, s);
    const std::string message =
        evokit::testing::MessageOf<SolverFileError>([&] { cma.load_solver(dir.path()); });
    EXPECT_EQ(cma.solver_state().SerializeAsString(), before) << message;
    return message;
  };
  const auto entry = [](proto::SolverState& s, const std::string& name) -> proto::NamedVector& {
    for (proto::NamedVector& v : *s.mutable_vectors()) {
      if (v.name() == name) return v;
    }
    throw std::runtime_error("no entry " + name);
  };

  // A v2 entry with the wrong number of values.
  proto::SolverState s = good;
  entry(s, "cma.mean").set_data(std::string(57 * 8, '\0'));
  EXPECT_TRUE(
      InvalidState(refusal(s), path, "state entry 'cma.mean' holds 57 values, expected 58"));
  // ... or bytes that are no whole number of its elements.
  s = good;
  entry(s, "cma.sigma").set_data(std::string(12, '\0'));
  EXPECT_EQ(refusal(s), path + ": state vector 'cma.sigma' holds 12 bytes, not a multiple of 8");
  // ... or an element type this EvoKit does not know.
  s = good;
  proto::NamedVector& sigma = entry(s, "cma.sigma");
  sigma.clear_type();
  sigma.GetReflection()->MutableUnknownFields(&sigma)->AddVarint(
      proto::NamedVector::kTypeFieldNumber, 3);
  EXPECT_EQ(refusal(s), path + ": state vector 'cma.sigma' has no element type this EvoKit knows "
                               "(FLOAT32, FLOAT64, INT64): a newer EvoKit wrote it?");
  // An entry of the wrong type is missing as the type the solver reads.
  s = good;
  entry(s, "cma.generation").set_type(proto::NamedVector::FLOAT64);
  EXPECT_TRUE(InvalidState(refusal(s), path, "state entry 'cma.generation' (int64) is missing"));
  // The keys of another noise definition.
  s = good;
  s.set_noise_version(3);
  const std::string noise = refusal(s);
  EXPECT_TRUE(InvalidState(noise, path, "start afresh from its model with `evokit init-solver`"));
  EXPECT_NE(noise.find("the state refers to noise version 3 (ARS4x32-7, EvoKit before noise "
                       "version 4), this EvoKit rebuilds noise version 4 (ARS4x32-5)"),
            std::string::npos)
      << noise;

  // A CMA state of state version 1 (EvoKit before the one Solver interface).
  s = good;
  s.clear_state_version();
  s.clear_family();
  s.clear_vectors();
  s.mutable_cma()->set_sigma(0.2);
  s.mutable_cma()->set_generation(1);
  s.set_draws(8);
  EXPECT_EQ(refusal(s), path + ": a CMA_SAMPLING solver state of state version 1 (an EvoKit "
                               "before the one Solver interface): its layout is not read; finish "
                               "it with the EvoKit that wrote it, or start afresh from its model "
                               "with `evokit init-solver`");

  // Another family's state (same model, same optimizer type in the config),
  // loaded by a CMA agent at the same centre.
  ESAgent ga = make(kFamilies[3]);
  write_solver_state(path, ga.solver_state());
  ESAgent fresh = make(kFamilies[1]);
  EXPECT_TRUE(InvalidState(
      evokit::testing::MessageOf<SolverFileError>([&] { fresh.load_solver(dir.path()); }), path,
      "the state is of GA_SAMPLING, this solver is CMA_SAMPLING"));
  EXPECT_EQ(cma.solver_state().SerializeAsString(), before);
}

}  // namespace
}  // namespace evokit::io
