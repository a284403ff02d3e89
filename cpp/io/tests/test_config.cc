#include "evokit/io/config.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "evokit/io/errors.h"
#include "evokit/io/es_agent.h"
#include "io_test_util.h"
#include "proto_defaults.h"

namespace evokit::io {
namespace {

using testing::data_path;
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
  EXPECT_EQ(o.integer("sampling.ga_sampling.truncation_size"), 0);  // 0: the formula
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

// The C++ core's tests read the defaults from proto/evokit.proto with a
// reader of their own (they build without protobuf): it gives what
// protobuf's reflection gives, for every option.
TEST(ProtoDefaults, MatchesProtobufsReflection) {
  const OptionSet want = solver_options(proto::SolverConfig());
  const OptionSet got = evokit::testing::ProtoDefaults("SolverConfig");
  EXPECT_EQ(got.values(), want.values());
  EXPECT_GT(want.values().size(), 50u);
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
                    "x.prototxt:2:15: solver.antithetic: maybe: a bool is true or false");
  EXPECT_THROW_WITH(parse_config("solver { population_size: \"many\" }"), ConfigError,
                    "<string>:1:27: solver.population_size: Expected integer");
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

// config_to_text writes floats as Python's text_format does (what
// evokit.config.config_to_text gives for the same values), so that solver.pb
// is the same bytes from either language.
TEST(Config, TextPrintsFloatsAsPython) {
  const auto float_text = [](float v) {
    proto::EvoKitConfig c;
    c.mutable_solver()->set_weight_decay(v);
    return config_to_text(c);
  };
  const std::vector<std::pair<float, std::string>> floats = {
      {0.0f, "0.0"}, {-0.0f, "-0.0"}, {490.0f, "490.0"}, {0.05f, "0.05"},
      {1e-08f, "1e-08"}, {0.9f, "0.9"}, {1e7f, "10000000.0"}, {1234567.0f, "1234567.0"},
      {3.4028235e38f, "3.4028235e+38"}, {1e-45f, "1.4013e-45"}, {0.1f, "0.1"},
      {100000.0f, "100000.0"}, {INFINITY, "inf"}, {-2.5e-05f, "-2.5e-05"},
      {16777216.0f, "16777216.0"}, {1e16f, "1e+16"}};
  for (const auto& [value, text] : floats) {
    EXPECT_EQ(float_text(value), "solver {\n  weight_decay: " + text + "\n}\n") << value;
  }
  const auto double_text = [](double v) {
    proto::EvoKitConfig c;
    c.mutable_solver()->mutable_sampling()->mutable_cma_sampling()->set_sigma0(v);
    return config_to_text(c);
  };
  const std::vector<std::pair<double, std::string>> doubles = {
      {0.0, "0.0"}, {-0.0, "-0.0"}, {490.0, "490.0"}, {0.1, "0.1"}, {1e-08, "1e-08"},
      {1e16, "1e+16"}, {1e15, "1000000000000000.0"},
      {123456789012345678.0, "1.2345678901234568e+17"}, {0.0001, "0.0001"}, {0.00001, "1e-05"},
      {5e-324, "5e-324"}, {1.7976931348623157e308, "1.7976931348623157e+308"},
      {-INFINITY, "-inf"}, {1.0 / 3.0, "0.3333333333333333"}};
  for (const auto& [value, text] : doubles) {
    EXPECT_EQ(double_text(value),
              "solver {\n  sampling {\n    cma_sampling {\n      sigma0: " + text +
                  "\n    }\n  }\n}\n")
        << value;
  }
}

// Issue 16: a parse error names the field the parser was in.
TEST(ConfigErrors, ParseErrorsNameTheField) {
  const auto message = [](const std::string& text) {
    return evokit::testing::MessageOf<ConfigError>([&] { parse_config(text, "c.prototxt"); });
  };
  EXPECT_EQ(message("solver {\n  population_size: -inf\n}"),
            "c.prototxt:2:20: solver.population_size: Expected integer, got: inf");
  EXPECT_EQ(message("solver {\n  sampling { gaussian_sampling { std: abc } }\n}\n"),
            "c.prototxt:2:39: solver.sampling.gaussian_sampling.std: Expected double, got: abc");
  EXPECT_EQ(message("solver {\n  population: 5\n}\n"),
            "c.prototxt:2:3: solver.population: Message type \"evokit.proto.SolverConfig\" has no field "
            "named \"population\".");
  EXPECT_EQ(message("solver { optimizer { type: RMSPROP } }"),
            "c.prototxt:1:28: solver.optimizer.type: unknown value RMSPROP, expected one of SGD, "
            "MOMENTUM, ADAM");
  EXPECT_EQ(message("4"), "c.prototxt:1:1: at top level: Expected identifier, got: 4");
  EXPECT_EQ(message("train { hidden_sizes: [4, x] }"),
            "c.prototxt:1:27: train.hidden_sizes: Expected integer, got: x");
}

// A small fuzzer: each value of configs/cartpole.prototxt replaced in turn by
// bad tokens; every refusal names the changed field, on its line (a parse
// error also at the bad token's column). The field's path comes from the
// file's indentation, not from the walk under test.
TEST(ConfigErrors, EveryDamagedValueNamesItsLineColumnAndField) {
  std::ifstream in(repo_config("cartpole.prototxt"));
  std::stringstream buffer;
  buffer << in.rdbuf();
  std::vector<std::string> lines;
  std::string line;
  while (std::getline(buffer, line)) lines.push_back(line);
  const std::vector<std::string> bad = {"-inf", "abc", "\"text\"", "1.5", "}", "99999999999999999999",
                                        "0x1g", "nan"};
  const std::regex scalar(R"(( *)(\w+): (\S+))"), open(R"(( *)(\w+) \{)");
  std::vector<std::string> stack;
  int cases = 0, refused = 0;
  for (std::size_t n = 0; n < lines.size(); ++n) {
    std::smatch m;
    const bool is_open = std::regex_match(lines[n], m, open);
    if (is_open || std::regex_match(lines[n], m, scalar)) stack.resize(m[1].length() / 2);
    if (is_open) {
      stack.push_back(m[2]);
      continue;
    }
    if (!std::regex_match(lines[n], m, scalar)) continue;
    std::string field;
    for (const std::string& part : stack) field += part + ".";
    field += m[2].str();
    const int column = static_cast<int>(m[1].length() + m[2].length()) + 3;
    for (const std::string& token : bad) {
      std::string text;
      for (std::size_t k = 0; k < lines.size(); ++k) {
        text += (k == n ? m[1].str() + m[2].str() + ": " + token : lines[k]) + "\n";
      }
      ++cases;
      const std::string msg = evokit::testing::MessageOf<ConfigError>([&] {
        validate_config(parse_config(text, "c.prototxt"), "c.prototxt", std::nullopt, text);
      });
      if (msg.empty()) continue;
      ++refused;
      const std::string at = "c.prototxt:" + std::to_string(n + 1);
      EXPECT_TRUE(msg.rfind(at + ":" + std::to_string(column) + ": " + field + ": ", 0) == 0 ||
                  msg.rfind(at + ": " + field + " ", 0) == 0)
          << msg << "\n--- for " << field << " = " << token;
    }
  }
  EXPECT_GE(cases, 150);
  EXPECT_GT(refused, cases * 3 / 4);
}

// Python's validate_config, check for check, with the line of the field.
TEST(ConfigErrors, ValidationNamesTheLineAndMakesPythonsChecks) {
  const auto refused = [](const std::string& text) {
    return evokit::testing::MessageOf<ConfigError>(
        [&] { parse_config(text, "c.prototxt", /*validate=*/true); });
  };
  EXPECT_EQ(refused("solver {\n  population_size: 0\n}\n"),
            "c.prototxt:2: solver.population_size must be >= 1, got 0");
  EXPECT_EQ(refused("solver {\n  antithetic: true\n  population_size: 7\n}\n"),
            "c.prototxt:3: solver.population_size must be even when solver.antithetic is true, got 7");
  EXPECT_EQ(refused("\nsolver {\n  sampling { type: CMA_SAMPLING }\n}\n"),
            "c.prototxt:2: solver.antithetic must be false with CMA_SAMPLING (mirrored pairs are a "
            "Gaussian-sampling scheme), got true");  // not in the text: the enclosing message's line
  EXPECT_EQ(refused("solver { backend: \"gpu\" }"),
            "c.prototxt:1: solver.backend must be one of auto, native, onnxruntime, got 'gpu'");
  EXPECT_EQ(refused("solver { param_pattern: \"([\" }").rfind(
                "c.prototxt:1: solver.param_pattern is not a valid regular expression: ", 0),
            0u);
  EXPECT_EQ(refused("train {\n  max_generations: 0\n}"), "c.prototxt:2: train.max_generations must be >= 1, got 0");
  EXPECT_EQ(refused("train { num_workers: 5000 }"),
            "c.prototxt:1: train.num_workers must be in [1, 4,096], got 5,000");
  EXPECT_EQ(refused("train { eval_episodes: 2147483647 }"),
            "c.prototxt:1: train.eval_episodes must be in [1, 1,000,000], got 2,147,483,647");
  EXPECT_EQ(refused("train { hidden_sizes: [8, 0] }"),
            "c.prototxt:1: train.hidden_sizes must all be >= 1, got 0 at position 1");
  EXPECT_EQ(refused("train { activation: \"swish\" }"),
            "c.prototxt:1: train.activation must be one of tanh, relu, sigmoid, identity, got 'swish'");
  EXPECT_EQ(refused("train { observation_clip: -nan }"),
            "c.prototxt:1: train.observation_clip must be finite and > 0, got nan");
  EXPECT_EQ(refused("train { target_return: -inf }"), "c.prototxt:1: train.target_return must be finite, got -inf");
  EXPECT_EQ(refused("train { alive_bonus_offset: -0.5 }"),
            "c.prototxt:1: train.alive_bonus_offset must be finite and >= 0, got -0.5");
  EXPECT_EQ(refused("async_es {\n  max_to_keep: 0\n}"), "c.prototxt:2: async_es.max_to_keep must be >= 1, got 0");
}

// io::load_config and ESAgent::load_config refuse what Python's load_config refuses.
TEST(ConfigErrors, LoadConfigValidates) {
  TempDir dir;
  const std::string path = dir.file("c.prototxt");
  testing::write_bytes(path, "solver {\n  sampling { gaussian_sampling { std: 0.1 } }\n  population_size: 0\n}\n");
  EXPECT_THROW_WITH(load_config(path), ConfigError, path + ":3: solver.population_size must be >= 1, got 0");
  EXPECT_EQ(load_config(path, /*validate=*/false).solver().population_size(), 0);
  ESAgent agent;
  EXPECT_THROW_WITH(agent.load_config(path), ConfigError,
                    path + ":3: solver.population_size must be >= 1, got 0");
  // init_solver's checks with the model's size name the line too
  testing::write_bytes(path, "solver {\n  sampling {\n    gaussian_sampling { cached: true cache_size: 10 }\n  }\n}\n");
  agent.load_config(path);
  agent.load_inference_model(data_path("cartpole_h8.onnx"));
  EXPECT_THROW_WITH(agent.init_solver(), ConfigError,
                    path + ":3: solver.sampling.gaussian_sampling.cache_size (10) is smaller than the model");
}

// Collects the config notes while alive.
class Notes {
 public:
  Notes() : previous_(set_config_note_handler([this](const std::string& n) { notes_.push_back(n); })) {}
  ~Notes() { set_config_note_handler(previous_); }
  const std::vector<std::string>& get() const { return notes_; }

 private:
  std::vector<std::string> notes_;
  ConfigNoteHandler previous_;
};

std::string parl_note(const std::string& source) {
  return source + ": read in PARL EvoKit's flat layout (seed, gaussian_sampling, optimizer, async_es at "
                  "the top level) and mapped onto EvoKit's solver { ... } (docs/migrating_from_parl.md)";
}

// PARL's own demo config (evo_kit/demo/cartpole_config.prototxt) loads,
// mapped as evokit/parl_config.py maps it, with one note.
TEST(ParlConfig, PARLsDemoConfigLoadsWithOneNote) {
  const Notes notes;
  const std::string path = data_path("parl_cartpole_config.prototxt");
  const proto::EvoKitConfig c = load_config(path);
  EXPECT_EQ(notes.get(), std::vector<std::string>{parl_note(path)});
  const proto::EvoKitConfig expected = parse_config(R"(
    solver {
      optimizer { type: ADAM base_lr: 0.05 momentum { momentum: 0.9 }
                  adam { beta1: 0.9 beta2: 0.999 epsilon: 1e-08 } }
      sampling { type: GAUSSIAN_SAMPLING gaussian_sampling { std: 0.5 cached: true seed: 1024 cache_size: 100000 } }
      antithetic: false
    }
    async_es { max_to_keep: 5 })");
  EXPECT_EQ(c.SerializeAsString(), expected.SerializeAsString()) << c.DebugString();
  // fields left out take PARL's defaults; PARL's "SGD" is SGD with momentum
  const proto::EvoKitConfig d = parse_config("seed: 7\n", "p.prototxt");
  EXPECT_EQ(d.solver().optimizer().type(), proto::OptimizerConfig::MOMENTUM);
  EXPECT_FLOAT_EQ(d.solver().optimizer().base_lr(), 1e-3f);
  EXPECT_FLOAT_EQ(d.solver().sampling().gaussian_sampling().std(), 1.0f);
  EXPECT_EQ(d.solver().sampling().gaussian_sampling().seed(), 7u);
  EXPECT_FALSE(d.solver().sampling().gaussian_sampling().cached());
}

TEST(ParlConfig, RefusalsNameTheField) {
  const Notes notes;  // keeps the notes of the configs that map off standard error
  const auto refused = [](const std::string& text) {
    return evokit::testing::MessageOf<ConfigError>([&] { parse_config(text, "p.prototxt", true); });
  };
  EXPECT_EQ(refused("seed: 1\nbuffer_size: 10\n"),
            "p.prototxt:2: buffer_size has no EvoKit meaning (PARL EvoKit reads it nowhere)");
  EXPECT_EQ(refused("seed: 1\nasync_es {\n  model_iter_id: 3\n}\n"),
            "p.prototxt:3: async_es.model_iter_id has no EvoKit meaning but 0: EvoKit's warehouse "
            "numbers its iterations itself (model_iter_id-k directories)");
  EXPECT_EQ(refused("optimizer {\n  type: \"RMSProp\"\n}\n"),
            "p.prototxt:2: optimizer.type must be \"SGD\" or \"Adam\" (in any case), got \"RMSProp\"");
  EXPECT_EQ(refused("gaussian_sampling {\n  std: 0\n}\n"),
            "p.prototxt:2: gaussian_sampling.std (solver.sampling.gaussian_sampling.std) must be > 0, got 0");
  EXPECT_EQ(refused("solver { population_size: 4 }\nseed: 3\n"),
            "p.prototxt:2:1: seed: a field of PARL EvoKit's flat layout in a config of EvoKit's layout "
            "('solver' at line 1); write the config in one layout (docs/migrating_from_parl.md)");
  EXPECT_EQ(refused("gaussian_sampling { stdev: 1 }\n"),
            "p.prototxt:1:21: gaussian_sampling.stdev: Message type \"evokit.proto.ParlGaussianSamplingConfig\" "
            "has no field named \"stdev\".");
}

}  // namespace
}  // namespace evokit::io
