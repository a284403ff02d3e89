// formats/config.h: the text walk, the literals both protobuf runtimes read
// alike, the layout, PARL's mapping and the checks of a whole config. The
// runtimes' own parsing is tested in tests/test_config*.py (Python) and
// cpp/io/tests/test_config.cc (protobuf C++).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "evokit/formats/config.h"
#include "test_util.h"

namespace evokit::formats {
namespace {

// An EvoKitConfig's defaults as its OptionSet (proto/evokit.proto): the
// solver's every option (test_solver.cc's DefaultOptions) and the sections
// validate_config reads.
OptionSet defaults() {
  OptionSet o;
  const OptionSet solver = evokit::testing::DefaultOptions("GAUSSIAN_SAMPLING");
  for (const auto& [name, value] : solver.values()) o.set("solver." + name, value);
  o.set("async_es.max_to_keep", std::int64_t{5});
  o.set("train.max_generations", std::int64_t{100});
  o.set("train.eval_every", std::int64_t{10});
  o.set("train.eval_episodes", std::int64_t{5});
  o.set("train.num_workers", std::int64_t{1});
  o.set("train.episodes_per_sample", std::int64_t{1});
  o.set("train.hidden_sizes", std::vector<std::int64_t>{64, 64});
  o.set("train.activation", std::string("tanh"));
  o.set("train.observation_clip", 5.0);
  o.set("train.target_return", 0.0);
  o.set("train.max_env_steps", std::int64_t{0});
  o.set("train.alive_bonus_offset", 0.0);
  return o;
}

// validate_config's problem for `config`, as the text of a config error.
std::string problem_of(const OptionSet& config, const std::string& text = "") {
  const auto p = validate_config(config, std::nullopt, text);
  return p ? p->text("c.prototxt") : std::string("none");
}

TEST(FormatsConfig, FieldTokensWalkNestedMessagesAndLists) {
  const std::string text =
      "solver {\n  population_size: 4  # comment\n  sampling { type: CMA_SAMPLING }\n}\n"
      "train { hidden_sizes: [8, 8] env: \"CartPole-v1\" }\n";
  const auto tokens = field_tokens(text);
  ASSERT_EQ(tokens.size(), 7u);
  EXPECT_EQ(tokens[0].path, "solver");
  EXPECT_EQ(tokens[1].path, "solver.population_size");
  EXPECT_EQ(tokens[1].line, 2);
  EXPECT_EQ(tokens[1].column, 3);
  EXPECT_EQ(tokens[3].path, "solver.sampling.type");
  EXPECT_EQ(tokens[5].path, "train.hidden_sizes");
  EXPECT_EQ(tokens[6].path, "train.env");
  EXPECT_EQ(tokens[6].line, 5);
  EXPECT_EQ(tokens[6].column, 30);
  EXPECT_EQ(field_at(text, text.find("CMA_SAMPLING")).value(), "solver.sampling.type");
  EXPECT_FALSE(field_at("", 0).has_value());
}

TEST(FormatsConfig, ColumnsCountCharacters) {
  const std::string text = "# \xc3\xa9\xc3\xa9\nsolver { \xc3\xa9: 1 }";
  const auto [line, column] = line_column(text, text.find(": 1"));
  EXPECT_EQ(line, 2);
  EXPECT_EQ(column, 11);
  EXPECT_EQ(offset_of(text, 2, 11), text.find(": 1"));
  EXPECT_EQ(offset_of("\tab", 1, 9, true), 1u);  // protobuf C++'s tab stops
}

TEST(FormatsConfig, LiteralsOneRuntimeWouldReadOtherwiseAreRefused) {
  const std::pair<const char*, const char*> cases[] = {
      {"solver { population_size: +4 }",
       "c:1:27: solver.population_size: a number with a leading + (leave the + out)"},
      {"solver {\n  sampling { gaussian_sampling { std: inff } }\n}",
       "c:2:39: solver.sampling.gaussian_sampling.std: inff is not a float both protobuf runtimes read (write inf)"},
      {"solver { sampling { gaussian_sampling { std: NaNf } } }",
       "c:1:46: solver.sampling.gaussian_sampling.std: NaNf is not a float both protobuf runtimes read (write NaN)"},
      {"solver { param_pattern: \"layer0\\.weight\" }",
       "c:1:32: solver.param_pattern: unknown escape \\. in a string (a backslash itself is \\\\)"},
      {"solver { param_pattern: \"a\" \"\\?\" }",
       "c:1:30: solver.param_pattern: unknown escape \\? in a string (a backslash itself is \\\\)"},
      {"solver { param_pattern: \"\\u12\" }",
       "c:1:26: solver.param_pattern: \\u without 4 hex digits"},
  };
  for (const auto& [text, message] : cases) {
    const auto p = check_literals(text);
    ASSERT_TRUE(p.has_value()) << text;
    EXPECT_EQ(p->text("c"), message);
  }
  for (const char* ok : {"solver { population_size: -4 param_pattern: \"\\\\.\\x41\\101\\n\\u00e9\" }",
                         "solver { sampling { gaussian_sampling { std: -inf } } }", "# inff +4 \"\\.\"\n",
                         "solver { sampling { gaussian_sampling { std: 1e+5 } } }"}) {
    EXPECT_FALSE(check_literals(ok).has_value()) << ok;
  }
}

TEST(FormatsConfig, LiteralsTheSchemaTellsApartAreRefused) {
  LiteralSchema schema;
  schema.enums = {"solver.sampling.type"};
  schema.bools = {"solver.antithetic"};
  const std::pair<const char*, const char*> cases[] = {
      {"solver { sampling { type: 1 } }", "c:1:27: solver.sampling.type: 1: an enum value given by its number (write its name)"},
      {"solver { antithetic: 01 }", "c:1:22: solver.antithetic: 01: a number with a leading 0 (octal in the text format; leave the 0 out)"},
      {"solver { antithetic: -inf }", "c:1:22: solver.antithetic: -inf: a bool is true or false"},
      {"solver { population_size: - 1 }", "c:1:27: solver.population_size: a space after a minus sign (write -1, not - 1)"},
      {"solver { population_size: 1_0 }", "c:1:27: solver.population_size: 1_0: underscores in a number (leave them out)"},
      {"solver { population_size: 0b1 }", "c:1:27: solver.population_size: 0b1: a binary number"},
      {"solver { population_size: 0X1f }", "c:1:27: solver.population_size: 0X1f: write the hex prefix 0x"},
      {"solver { population_size: -0 }", "c:1:27: solver.population_size: -0: write 0 (or -0.0 for a negative zero)"},
  };
  for (const auto& [text, message] : cases) {
    const auto p = check_literals(text, schema);
    ASSERT_TRUE(p.has_value()) << text;
    EXPECT_EQ(p->text("c"), message);
  }
  for (const char* ok : {"solver { sampling { type: CMA_SAMPLING } antithetic: t }", "solver { antithetic: False }",
                         "solver { population_size: 0x10 weight_decay: -0.0 }"}) {
    EXPECT_FALSE(check_literals(ok, schema).has_value()) << ok;
  }
}

TEST(FormatsConfig, LayoutIsDetectedAndMixedLayoutsRefused) {
  std::optional<ConfigProblem> p;
  EXPECT_EQ(detect_layout("seed: 1\ngaussian_sampling { std: 0.1 }", &p), Layout::kParl);
  EXPECT_FALSE(p.has_value());
  EXPECT_EQ(detect_layout("async_es { max_to_keep: 2 }", &p), Layout::kEvoKit);
  detect_layout("solver { }\n  seed: 3\n", &p);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->text("c"),
            "c:2:3: seed: a field of PARL EvoKit's flat layout in a config of EvoKit's layout ('solver' at line "
            "1); write the config in one layout (docs/migrating_from_parl.md)");
}

TEST(FormatsConfig, ChecksNameTheFieldAndItsLine) {
  const std::string text = "solver {\n  population_size: 0\n}\ntrain {\n  num_workers: 0\n  hidden_sizes: [8, 0]\n}\n";
  OptionSet c = defaults();
  EXPECT_EQ(problem_of(c, text), "none");
  c.set("train.hidden_sizes", std::vector<std::int64_t>{8, 0});
  EXPECT_EQ(problem_of(c, text), "c.prototxt:6: train.hidden_sizes must all be >= 1, got 0 at position 1");
  c.set("train.num_workers", std::int64_t{0});
  EXPECT_EQ(problem_of(c, text), "c.prototxt:5: train.num_workers must be in [1, 4,096], got 0");
  c.set("solver.population_size", std::int64_t{0});
  EXPECT_EQ(problem_of(c, text), "c.prototxt:2: solver.population_size must be >= 1, got 0");
  EXPECT_EQ(problem_of(c), "c.prototxt: solver.population_size must be >= 1, got 0");  // no text: no line
  c.set("solver.backend", std::string("gpu"));
  EXPECT_EQ(problem_of(c, text), "c.prototxt:1: solver.backend must be one of auto, native, onnxruntime, got 'gpu'");
  c.set("solver.param_pattern", std::string("(["));
  EXPECT_EQ(problem_of(c, text),
            "c.prototxt:1: solver.param_pattern is not a valid regular expression: unterminated character set at "
            "position 1");
}

TEST(FormatsConfig, ParlFieldsMapOntoEvoKitsAndRefusalsNameTheirLine) {
  OptionSet parl;
  parl.set("seed", std::int64_t{7});
  parl.set("buffer_size", std::int64_t{0});
  parl.set("gaussian_sampling.std", 0.5);
  parl.set("gaussian_sampling.cached", true);
  parl.set("gaussian_sampling.cache_size", std::int64_t{1000});
  parl.set("optimizer.type", std::string("sgd"));
  parl.set("optimizer.base_lr", 0.01);
  parl.set("optimizer.momentum", 0.9);
  parl.set("optimizer.beta1", 0.9);
  parl.set("optimizer.beta2", 0.999);
  parl.set("optimizer.epsilon", 1e-8);
  parl.set("async_es.max_to_keep", std::int64_t{3});
  parl.set("async_es.model_iter_id", std::int64_t{0});
  std::optional<ConfigProblem> p;
  const OptionSet out = parl_to_evokit(parl, {"seed", "async_es.model_iter_id"}, "seed: 7\n", &p);
  ASSERT_FALSE(p.has_value());
  EXPECT_EQ(out.integer("solver.sampling.gaussian_sampling.seed"), 7);
  EXPECT_EQ(out.text("solver.optimizer.type"), "MOMENTUM");
  EXPECT_EQ(out.real("solver.optimizer.momentum.momentum"), 0.9);
  EXPECT_FALSE(out.flag("solver.antithetic"));
  EXPECT_EQ(parl_field("solver.optimizer.adam.beta2").value(), "optimizer.beta2");

  parl_to_evokit(parl, {"buffer_size"}, "seed: 7\nbuffer_size: 0\n", &p);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->text("c"), "c:2: buffer_size has no EvoKit meaning (PARL EvoKit reads it nowhere)");
  parl.set("optimizer.type", std::string("RMSProp"));
  parl_to_evokit(parl, {}, "optimizer {\n  type: \"RMSProp\"\n}\n", &p);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->text("c"), "c:2: optimizer.type must be \"SGD\" or \"Adam\" (in any case), got \"RMSProp\"");

  // a check of the EvoKit field names PARL's field, at PARL's line
  const ConfigProblem named = config_problem("solver.sampling.gaussian_sampling.std", "must be > 0, got -1",
                                             "seed: 1\ngaussian_sampling {\n  std: -1\n}\n");
  EXPECT_EQ(named.text("c"), "c:3: gaussian_sampling.std (solver.sampling.gaussian_sampling.std) must be > 0, got -1");
}

TEST(FormatsConfig, PythonFormats) {
  EXPECT_EQ(format_g(0.5), "0.5");
  EXPECT_EQ(format_g(-std::numeric_limits<double>::infinity()), "-inf");
  EXPECT_EQ(format_g(std::nan("")), "nan");
  EXPECT_EQ(format_thousands(-1234567), "-1,234,567");
  EXPECT_EQ(python_repr("gpu"), "'gpu'");
  EXPECT_EQ(python_repr("it's"), "\"it's\"");
  EXPECT_EQ(python_repr("a\\b\n"), "'a\\\\b\\n'");
}

}  // namespace
}  // namespace evokit::formats
