// The checks of a whole config and PARL EvoKit's layout (formats/config.h).
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <utility>

#include "evokit/formats/config.h"
#include "evokit/formats/param_pattern.h"

namespace evokit::formats {

// ---- Python's formats ---------------------------------------------------------------

std::string format_g(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value < 0 ? "-inf" : "inf";
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%g", value);
  return buffer;
}

std::string format_thousands(std::int64_t value) {
  const std::uint64_t magnitude = value < 0 ? 0 - static_cast<std::uint64_t>(value) : static_cast<std::uint64_t>(value);
  std::string digits = std::to_string(magnitude);
  for (std::size_t i = digits.size(); i > 3; i -= 3) digits.insert(i - 3, ",");
  return (value < 0 ? "-" : "") + digits;
}

std::string python_repr(const std::string& text) {
  const bool single = text.find('\'') == std::string::npos || text.find('"') != std::string::npos;
  const char quote = single ? '\'' : '"';
  std::string out(1, quote);
  for (const char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if (ch == quote || ch == '\\') {
      out += '\\';
      out += ch;
    } else if (ch == '\n') {
      out += "\\n";
    } else if (ch == '\r') {
      out += "\\r";
    } else if (ch == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += ch;  // UTF-8 as it is (Python prints printable characters)
    }
  }
  return out + quote;
}

// ---- the checks -----------------------------------------------------------------------

const std::vector<std::string>& backends() {
  static const std::vector<std::string> kBackends = {"auto", "native", "onnxruntime"};
  return kBackends;
}

const std::vector<std::string>& activations() {
  static const std::vector<std::string> kActivations = {"tanh", "relu", "sigmoid", "identity"};
  return kActivations;
}

namespace {

std::string joined(const std::vector<std::string>& values) {
  std::string out;
  for (std::size_t i = 0; i < values.size(); ++i) out += (i ? ", " : "") + values[i];
  return out;
}

int first_line(const std::vector<FieldToken>& tokens, const std::string& path) {
  for (const FieldToken& t : tokens) {
    if (t.path == path) return t.line;
  }
  return 0;
}

// The first failing check, as (field, what): thrown inside validate_config.
struct Failure {
  std::string field, message;
};

[[noreturn]] void fail(const std::string& field, const std::string& message) { throw Failure{field, message}; }

void at_least(const OptionSet& c, const std::string& field, std::int64_t low) {
  const std::int64_t value = c.integer(field);
  if (value < low) fail(field, "must be >= " + std::to_string(low) + ", got " + std::to_string(value));
}

void within(const OptionSet& c, const std::string& field, std::int64_t low, std::int64_t high) {
  const std::int64_t value = c.integer(field);
  if (value < low || value > high) {
    fail(field, "must be in [" + format_thousands(low) + ", " + format_thousands(high) + "], got " +
                    format_thousands(value));
  }
}

void one_of(const OptionSet& c, const std::string& field, const std::vector<std::string>& values) {
  const std::string& value = c.text(field);
  if (std::find(values.begin(), values.end(), value) == values.end()) {
    fail(field, "must be one of " + joined(values) + ", got " + python_repr(value));
  }
}

void checks(const OptionSet& c, std::optional<std::size_t> num_params) {
  try {
    ParamPattern pattern(c.text("solver.param_pattern"));
  } catch (const std::invalid_argument& e) {
    fail("solver.param_pattern", std::string("is not a valid regular expression: ") + e.what());
  }
  one_of(c, "solver.backend", backends());
  // Every option the solver reads, checked by the core's registry:
  // "solver.<name> <what>, got <value>".
  OptionSet solver;
  for (const auto& [name, value] : c.values()) {
    if (name.compare(0, 7, "solver.") == 0) solver.set(name.substr(7), value);
  }
  try {
    validate_solver_options(solver, num_params);
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    const std::size_t space = what.find(' ');
    fail(what.substr(0, space), space == std::string::npos ? std::string() : what.substr(space + 1));
  }
  // The warehouse keeps max_to_keep iterations.
  at_least(c, "async_es.max_to_keep", 1);
  // `evokit train`'s section. Episode counts are lists in memory: bounded,
  // so that a typo is refused here rather than running out of memory.
  at_least(c, "train.max_generations", 1);
  at_least(c, "train.eval_every", 1);
  within(c, "train.eval_episodes", 1, kMaxEpisodes);
  within(c, "train.num_workers", 1, kMaxWorkers);
  within(c, "train.episodes_per_sample", 1, kMaxEpisodes);
  const std::vector<std::int64_t>& hidden = c.integers("train.hidden_sizes");
  for (std::size_t i = 0; i < hidden.size(); ++i) {
    if (hidden[i] < 1) {
      fail("train.hidden_sizes",
           "must all be >= 1, got " + std::to_string(hidden[i]) + " at position " + std::to_string(i));
    }
  }
  one_of(c, "train.activation", activations());
  const double clip = c.real("train.observation_clip");
  if (!(clip > 0 && std::isfinite(clip))) fail("train.observation_clip", "must be finite and > 0, got " + format_g(clip));
  const double target = c.real("train.target_return");
  if (!std::isfinite(target)) fail("train.target_return", "must be finite, got " + format_g(target));
  at_least(c, "train.max_env_steps", 0);
  const double offset = c.real("train.alive_bonus_offset");
  if (!(offset >= 0 && std::isfinite(offset))) {
    fail("train.alive_bonus_offset", "must be finite and >= 0, got " + format_g(offset));
  }
}

}  // namespace

ConfigProblem config_problem(const std::string& field, const std::string& message, std::string_view text) {
  ConfigProblem p;
  p.field = field;
  std::string named = field, located = field;
  std::optional<ConfigProblem> mixed;
  if (!text.empty() && detect_layout(text, &mixed) == Layout::kParl) {
    // the file names the field as PARL does: name both, find the line of PARL's
    if (const std::optional<std::string> parl = parl_field(field)) {
      named = *parl + " (" + field + ")";
      located = *parl;
      p.field = *parl;
    }
  }
  p.message = named + " " + message;
  if (!text.empty()) {
    const std::vector<FieldToken> tokens = field_tokens(text);
    std::string parent = located;
    p.line = first_line(tokens, parent);
    // else the line of the closest enclosing message that appears in the text
    while (p.line == 0 && parent.find('.') != std::string::npos) {
      parent.erase(parent.rfind('.'));
      p.line = first_line(tokens, parent);
    }
  }
  return p;
}

std::optional<ConfigProblem> validate_config(const OptionSet& config, std::optional<std::size_t> num_params,
                                             std::string_view text) {
  try {
    checks(config, num_params);
  } catch (const Failure& f) {
    return config_problem(f.field, f.message, text);
  }
  return std::nullopt;
}

// ---- PARL EvoKit's layout -------------------------------------------------------------

// PARL field -> the EvoKitConfig field with its meaning (the value is copied;
// optimizer.type is translated). optimizer.momentum and the Adam fields are
// copied whatever the type: like PARL, EvoKit reads momentum only for
// momentum SGD and beta1/beta2/epsilon only for Adam.
const std::vector<std::pair<std::string, std::string>>& parl_fields() {
  static const std::vector<std::pair<std::string, std::string>> kFields = {
      {"seed", "solver.sampling.gaussian_sampling.seed"},
      {"gaussian_sampling.std", "solver.sampling.gaussian_sampling.std"},
      {"gaussian_sampling.cached", "solver.sampling.gaussian_sampling.cached"},
      {"gaussian_sampling.cache_size", "solver.sampling.gaussian_sampling.cache_size"},
      {"optimizer.type", "solver.optimizer.type"},
      {"optimizer.base_lr", "solver.optimizer.base_lr"},
      {"optimizer.momentum", "solver.optimizer.momentum.momentum"},
      {"optimizer.beta1", "solver.optimizer.adam.beta1"},
      {"optimizer.beta2", "solver.optimizer.adam.beta2"},
      {"optimizer.epsilon", "solver.optimizer.adam.epsilon"},
      {"async_es.max_to_keep", "async_es.max_to_keep"},
  };
  return kFields;
}

const std::vector<std::pair<std::string, std::string>>& parl_refused() {
  static const std::vector<std::pair<std::string, std::string>> kRefused = {
      {"buffer_size", "has no EvoKit meaning (PARL EvoKit reads it nowhere)"},
      {"async_es.model_warehouse",
       "has no EvoKit meaning: the warehouse is the directory given to `evokit init-solver --warehouse` "
       "(io::Warehouse in C++)"},
      {"async_es.model_md5", "has no EvoKit meaning: EvoKit checks models by the fingerprint in solver.pb"},
      {"async_es.model_iter_id",
       "has no EvoKit meaning but 0: EvoKit's warehouse numbers its iterations itself (model_iter_id-k "
       "directories)"},
  };
  return kRefused;
}

std::optional<std::string> parl_field(const std::string& evokit_field) {
  for (const auto& [parl, evokit] : parl_fields()) {
    if (evokit == evokit_field) return parl;
  }
  return std::nullopt;
}

OptionSet parl_to_evokit(const OptionSet& parl, const std::set<std::string>& present, std::string_view text,
                         std::optional<ConfigProblem>* problem) {
  problem->reset();
  const std::vector<FieldToken> tokens = field_tokens(text);
  const auto refuse = [&](const std::string& field, const std::string& message) {
    ConfigProblem p;
    p.field = field;
    p.message = field + " " + message;
    p.line = first_line(tokens, field);
    *problem = p;
    return OptionSet();
  };
  for (const auto& [field, why] : parl_refused()) {
    const bool zero_iteration = field == "async_es.model_iter_id" && parl.integer(field) == 0;
    if (present.count(field) && !zero_iteration) return refuse(field, why);
  }
  if (parl.integer("seed") < 0) {
    return refuse("seed", "must be >= 0 (EvoKit's seed is unsigned), got " + std::to_string(parl.integer("seed")));
  }
  std::string type = parl.text("optimizer.type");
  std::transform(type.begin(), type.end(), type.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (type != "sgd" && type != "adam") {
    return refuse("optimizer.type",
                  "must be \"SGD\" or \"Adam\" (in any case), got \"" + parl.text("optimizer.type") + "\"");
  }
  OptionSet out;
  for (const auto& [from, to] : parl_fields()) out.set(to, parl.values().at(from));
  // PARL's "SGD" is SGD with momentum (0.9 by default).
  out.set("solver.optimizer.type", std::string(type == "sgd" ? "MOMENTUM" : "ADAM"));
  out.set("solver.sampling.type", std::string("GAUSSIAN_SAMPLING"));
  out.set("solver.antithetic", false);  // PARL's clones draw independent noise
  return out;
}

}  // namespace evokit::formats
