#include "evokit/io/config.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <limits>
#include <optional>
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

TEST(Config, EveryShippedConfigValidates) {
  int count = 0;
  for (const auto& entry : std::filesystem::directory_iterator(repo_config(""))) {
    if (entry.path().extension() != ".prototxt") continue;
    const std::string path = entry.path().string();
    SCOPED_TRACE(path);
    EXPECT_NO_THROW(validate_config(load_config(path), path));
    ++count;
  }
  EXPECT_GE(count, 5);
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
  const OptionSet o = solver_options(c.solver());
  // Set fields as they are; float fields widened from float32.
  EXPECT_EQ(o.text("optimizer.type"), "MOMENTUM");
  EXPECT_EQ(o.real("optimizer.base_lr"), 0.25);
  EXPECT_EQ(o.real("optimizer.momentum.momentum"), 0.5);
  EXPECT_EQ(o.real("sampling.gaussian_sampling.std"), static_cast<double>(0.3f));
  EXPECT_FALSE(o.flag("sampling.gaussian_sampling.cached"));
  EXPECT_EQ(o.integer("sampling.gaussian_sampling.seed"), 77);
  EXPECT_EQ(o.integer("sampling.gaussian_sampling.cache_size"), 123);
  EXPECT_FALSE(o.flag("antithetic"));
  EXPECT_EQ(o.text("fitness_shaping"), "Z_SCORE");
  EXPECT_EQ(o.real("weight_decay"), 0.125);
  EXPECT_EQ(o.integer("num_threads"), 2);
  // Unset fields and unset submessages give the proto's defaults.
  EXPECT_EQ(o.text("type"), "BASIC_ES");
  EXPECT_EQ(o.text("sampling.type"), "GAUSSIAN_SAMPLING");
  EXPECT_EQ(o.integer("population_size"), 50);
  EXPECT_EQ(o.text("param_pattern"), ".*");
  EXPECT_EQ(o.text("backend"), "auto");
  EXPECT_EQ(o.real("optimizer.adam.beta2"), static_cast<double>(0.999f));
  EXPECT_EQ(o.real("sampling.cma_sampling.sigma0"), 0.5);
  EXPECT_FALSE(o.flag("sampling.cma_sampling.separable"));
  EXPECT_EQ(o.integer("sampling.ga_sampling.truncation_size"), 10);
  EXPECT_EQ(o.integer("sampling.ga_sampling.seed"), 1024);
  // Every value is a leaf: no submessage appears under its own name.
  for (const char* message : {"optimizer", "sampling", "sampling.gaussian_sampling",
                              "optimizer.adam", "sampling.cma_sampling"}) {
    EXPECT_FALSE(o.has(message)) << message;
  }
}

TEST(Config, Uint64OptionsAreTheirInt64Bits) {
  const proto::EvoKitConfig c = parse_config(
      "solver { sampling { cma_sampling { seed: 18446744073709551615 } "
      "gaussian_sampling { seed: 9223372036854775808 } } }");
  const OptionSet o = solver_options(c.solver());
  EXPECT_EQ(o.integer("sampling.cma_sampling.seed"), -1);
  EXPECT_EQ(o.integer("sampling.gaussian_sampling.seed"), std::numeric_limits<std::int64_t>::min());
}

TEST(Config, ShippedCmaAndGaConfigsAreOptionsOfTheirFamily) {
  const proto::EvoKitConfig cma = load_config(repo_config("cartpole_cma.prototxt"));
  const OptionSet o = solver_options(cma.solver());
  EXPECT_EQ(o.text("sampling.type"), "CMA_SAMPLING");
  EXPECT_EQ(o.integer("population_size"), 16);
  EXPECT_NO_THROW(validate_config(cma, "cma", 58));
  const proto::EvoKitConfig ga = load_config(repo_config("cartpole_ga.prototxt"));
  EXPECT_EQ(solver_options(ga.solver()).integer("sampling.ga_sampling.elite_evaluations"), 5);
  EXPECT_NO_THROW(validate_config(ga, "ga", 58));
}

// The core's checks, with the config's source in front: the same text as
// Python's validate_config (which adds ":<line>" when it has the file's text).
TEST(ConfigErrors, RefusalsNameTheSourceAndTheField) {
  const auto refused = [](const std::string& text, std::optional<std::size_t> num_params) {
    return evokit::testing::MessageOf<ConfigError>(
        [&] { validate_config(parse_config(text), "c.prototxt", num_params); });
  };
  EXPECT_EQ(refused("solver { population_size: 0 }", std::nullopt),
            "c.prototxt: solver.population_size must be >= 1, got 0");
  EXPECT_EQ(refused("solver { population_size: 5 }", std::nullopt),
            "c.prototxt: solver.population_size must be even when solver.antithetic is true, "
            "got 5");
  EXPECT_NO_THROW(validate_config(parse_config("solver { population_size: 5 antithetic: false }"),
                                  "c.prototxt"));
  EXPECT_EQ(refused("solver { sampling { gaussian_sampling { std: -0.5 } } }", std::nullopt),
            "c.prototxt: solver.sampling.gaussian_sampling.std must be > 0, got -0.5");
  EXPECT_EQ(refused("solver { sampling { gaussian_sampling { cached: true cache_size: -5 } } }",
                    std::nullopt),
            "c.prototxt: solver.sampling.gaussian_sampling.cache_size must be >= 1, got -5");
  EXPECT_EQ(refused("solver { sampling { type: CMA_SAMPLING } population_size: 8 }", 10),
            "c.prototxt: solver.antithetic must be false with CMA_SAMPLING (mirrored pairs are a "
            "Gaussian-sampling scheme), got true");
  // The checks that need the model's size run only with num_params.
  const std::string small_table =
      "solver { sampling { gaussian_sampling { cached: true cache_size: 10 } } }";
  EXPECT_NO_THROW(validate_config(parse_config(small_table), "c.prototxt"));
  EXPECT_EQ(refused(small_table, 58),
            "c.prototxt: solver.sampling.gaussian_sampling.cache_size (10) is smaller than the "
            "model (58 parameters): raise solver.sampling.gaussian_sampling.cache_size to at "
            "least 58 (a table many times larger gives more distinct noise)");
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
