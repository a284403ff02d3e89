#include "evokit/io/es_agent.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
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
  const UpdateStats stats = agent.update(infos, expected_floats("iter1_rewards"));
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

  ESAgent c = agent.clone();
  agent.update({c.add_noise(), agent.clone().add_noise()}, {1.0f, 2.0f});
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
  for (const char* name : {"m", "v"}) {
    EXPECT_TRUE(evokit::testing::SameBits(back.core().optimizer().state(name),
                                          agent.core().optimizer().state(name)));
  }
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

TEST(IoESAgentErrors, CallsOutOfOrderOrOnTheWrongAgent) {
  ESAgent agent;
  EXPECT_THROW_WITH(agent.init_solver(), std::logic_error, "call load_config() first");
  agent.load_config(data_path("adam.prototxt"));
  EXPECT_THROW_WITH(agent.init_solver(), std::logic_error, "call load_inference_model() first");
  EXPECT_THROW_WITH(agent.predict({0, 0, 0, 0}), std::logic_error, "no model loaded");
  agent.load_inference_model(data_path("cartpole_h8.onnx"));
  EXPECT_THROW_WITH(agent.clone(), std::logic_error, "clone() needs the solver");
  agent.init_solver();
  EXPECT_THROW_WITH(agent.add_noise(), std::logic_error, "add_noise() is for sampling agents");
  ESAgent c = agent.clone();
  EXPECT_TRUE(c.is_clone());
  EXPECT_THROW_WITH(c.add_noise(nullptr), std::invalid_argument, "info must not be null");
  EXPECT_THROW_WITH(c.update({c.add_noise()}, {1.0f}), std::logic_error,
                    "update() must be called on the original agent");
  EXPECT_THROW_WITH(c.load_config(data_path("adam.prototxt")), std::logic_error,
                    "load_config() must be called on the original agent");
  EXPECT_THROW_WITH(c.save_solver("/tmp"), std::logic_error, "original agent");
  EXPECT_THROW_WITH(agent.update({}, {}), std::invalid_argument, "at least one sample");
}

TEST(IoESAgentErrors, BadConfigValuesNameTheSource) {
  TempDir dir;
  testing::write_bytes(dir.file("c.prototxt"),
                       "solver { sampling { gaussian_sampling { std: -0.5 } } }");
  ESAgent agent;
  agent.load_config(dir.file("c.prototxt"));
  agent.load_inference_model(data_path("cartpole_h8.onnx"));
  EXPECT_THROW_WITH(agent.init_solver(), ConfigError,
                    dir.file("c.prototxt") + ": gaussian_sampling.std must be > 0");
  // The cache must hold a whole parameter vector.
  testing::write_bytes(dir.file("d.prototxt"),
                       "solver { sampling { gaussian_sampling { cached: true cache_size: 10 } } }");
  agent.load_config(dir.file("d.prototxt"));
  agent.load_inference_model(data_path("cartpole_h8.onnx"));
  EXPECT_THROW_WITH(agent.init_solver(), ConfigError, "cache_size");
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
  EXPECT_THROW_WITH(agent.load_solver(dir.path()), SolverFileError, "no such file");
  EXPECT_EQ(agent.model_iter_id(), 0);
}

}  // namespace
}  // namespace evokit::io
