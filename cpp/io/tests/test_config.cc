#include "evokit/io/config.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <type_traits>

#include "evokit/io/errors.h"
#include "io_test_util.h"

namespace evokit::io {
namespace {

using testing::TempDir;

static_assert(std::is_base_of_v<std::invalid_argument, ConfigError>);

std::string repo_config(const std::string& name) {
  return std::string(EVOKIT_SOURCE_DIR) + "/configs/" + name;
}

TEST(Config, LoadsTheShippedConfigs) {
  const proto::EvoKitConfig cartpole = load_config(repo_config("cartpole.prototxt"));
  EXPECT_EQ(cartpole.solver().optimizer().type(), proto::OptimizerConfig::ADAM);
  EXPECT_FLOAT_EQ(cartpole.solver().optimizer().base_lr(), 0.05f);
  EXPECT_FLOAT_EQ(cartpole.solver().sampling().gaussian_sampling().std(), 0.1f);
  EXPECT_EQ(cartpole.solver().population_size(), 40);
  EXPECT_EQ(cartpole.train().env_id(), "CartPole-v1");

  // EvoKit's own minimal config loads unchanged.
  const proto::EvoKitConfig minimal = load_config(repo_config("evokit_minimal.prototxt"));
  EXPECT_TRUE(minimal.solver().sampling().gaussian_sampling().cached());
  EXPECT_EQ(minimal.solver().sampling().gaussian_sampling().seed(), 1024u);
}

TEST(Config, DefaultsComeFromTheProto) {
  const proto::EvoKitConfig empty = parse_config("");
  EXPECT_EQ(empty.solver().population_size(), 50);
  EXPECT_TRUE(empty.solver().antithetic());
  EXPECT_EQ(empty.solver().param_pattern(), ".*");
  EXPECT_EQ(empty.async_es().max_to_keep(), 5);
}

TEST(Config, SolverOptionsMapEveryField) {
  const proto::EvoKitConfig c = parse_config(R"(
    solver {
      optimizer { type: MOMENTUM base_lr: 0.25 momentum { momentum: 0.5 } }
      sampling { gaussian_sampling { std: 0.3 cached: false seed: 77 cache_size: 123 } }
      antithetic: false
      fitness_shaping: Z_SCORE
      weight_decay: 0.125
      num_threads: 2
    })");
  const SolverOptions o = solver_options(c, 10);
  EXPECT_EQ(o.sampling.seed, 77u);
  EXPECT_FLOAT_EQ(o.sampling.sigma, 0.3f);
  EXPECT_FALSE(o.sampling.cached);
  EXPECT_EQ(o.sampling.cache_size, 123u);
  EXPECT_EQ(o.sampling.num_params, 10u);
  EXPECT_EQ(o.sampling.num_threads, 2);
  EXPECT_EQ(o.optimizer.type, OptimizerOptions::Type::kMomentum);
  EXPECT_FLOAT_EQ(o.optimizer.learning_rate, 0.25f);
  EXPECT_FLOAT_EQ(o.optimizer.momentum, 0.5f);
  EXPECT_FALSE(o.antithetic);
  EXPECT_EQ(o.fitness_shaping, FitnessShaping::kZScore);
  EXPECT_FLOAT_EQ(o.weight_decay, 0.125f);
  EXPECT_EQ(o.num_threads, 2);

  const SolverOptions adam = solver_options(load_config(repo_config("cartpole.prototxt")), 3);
  EXPECT_EQ(adam.optimizer.type, OptimizerOptions::Type::kAdam);
  EXPECT_FLOAT_EQ(adam.optimizer.beta1, 0.9f);
  EXPECT_FLOAT_EQ(adam.optimizer.beta2, 0.999f);
  EXPECT_FLOAT_EQ(adam.optimizer.epsilon, 1e-8f);
  EXPECT_EQ(adam.fitness_shaping, FitnessShaping::kCenteredRank);
}

TEST(Config, NegativeCacheSizeIsNamed) {
  const proto::EvoKitConfig c =
      parse_config("solver { sampling { gaussian_sampling { cache_size: -5 } } }");
  EXPECT_THROW_WITH(solver_options(c, 4), std::invalid_argument,
                    "solver.sampling.gaussian_sampling.cache_size must be >= 0, got -5");
}

TEST(Config, CmaAndGaSamplingAreRefused) {
  // The shipped CMA / GA configs parse, but io::ESAgent samples Gaussian noise only.
  for (const char* name : {"cartpole_cma.prototxt", "cartpole_ga.prototxt"}) {
    const proto::EvoKitConfig c = load_config(repo_config(name));
    const std::string type = proto::SamplingConfig::Type_Name(c.solver().sampling().type());
    EXPECT_THROW_WITH(solver_options(c, 10), std::invalid_argument,
                      "solver.sampling.type " + type +
                          " is not supported by the C++ io component (GAUSSIAN_SAMPLING only); "
                          "use the Python evokit.ESAgent for CMA and GA sampling");
  }
}

TEST(Config, ParseErrorsNameFileLineAndColumn) {
  TempDir dir;
  const std::string path = dir.file("bad.prototxt");
  testing::write_bytes(path, "solver {\n  optimizer { type: RMSPROP }\n}\n");
  const std::string msg = evokit::testing::MessageOf<ConfigError>([&] { load_config(path); });
  EXPECT_EQ(msg.rfind(path + ":2:21: ", 0), 0u) << msg;
  EXPECT_NE(msg.find("RMSPROP"), std::string::npos) << msg;

  EXPECT_THROW_WITH(parse_config("solver {\n  nope: 1\n}", "x.prototxt"), ConfigError,
                    "x.prototxt:2:3: ");
  EXPECT_THROW_WITH(parse_config("solver {\n  nope: 1\n}", "x.prototxt"), ConfigError, "nope");
  EXPECT_THROW_WITH(parse_config("solver {\n  antithetic: maybe\n}", "x.prototxt"), ConfigError,
                    "x.prototxt:2:15: Invalid value for boolean field \"antithetic\"");
  EXPECT_THROW_WITH(parse_config("solver { population_size: \"many\" }"), ConfigError,
                    "<string>:1:27: Expected integer");
  EXPECT_THROW_WITH(parse_config("solver {"), ConfigError, "<string>:1:");
}

TEST(Config, MissingFileOrDirectory) {
  TempDir dir;
  EXPECT_THROW_WITH(load_config(dir.file("none.prototxt")), ConfigError,
                    "none.prototxt: cannot read config: no such file");
  EXPECT_THROW_WITH(load_config(dir.path()), ConfigError, "is a directory");
}

TEST(Config, TextRoundTrip) {
  const proto::EvoKitConfig c = load_config(repo_config("cartpole.prototxt"));
  const proto::EvoKitConfig back = parse_config(config_to_text(c));
  EXPECT_EQ(back.SerializeAsString(), c.SerializeAsString());
}

}  // namespace
}  // namespace evokit::io
