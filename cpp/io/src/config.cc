#include "evokit/io/config.h"

#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>

#include <algorithm>
#include <cctype>
#include <stdexcept>
#include <string>

#include "evokit/io/errors.h"
#include "file_util.h"

namespace evokit::io {

namespace {

// Keeps the first error the text-format parser reports (line and column are
// 0-based there; we report them 1-based, as editors do).
class FirstErrorCollector : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int line, google::protobuf::io::ColumnNumber column,
                const std::string& message) override {
    if (has_error_) return;
    has_error_ = true;
    line_ = line;
    column_ = column;
    message_ = message;
  }
  void AddWarning(int, google::protobuf::io::ColumnNumber, const std::string&) override {}

  bool has_error() const { return has_error_; }
  // "source:line:column" (1-based) of the error in `text`.
  std::string where(const std::string& source, const std::string& text) const {
    if (line_ < 0) return source;
    int line = line_, column = column_;
    point_at_token(text, line, column);
    return source + ":" + std::to_string(line + 1) + ":" + std::to_string(column + 1);
  }
  const std::string& message() const { return message_; }

 private:
  // For errors about a token it has already read past (an unknown field
  // name or enum value, a bad bool), protobuf reports the position of the
  // token after it; point at the offending token instead, as Python does.
  void point_at_token(const std::string& text, int& line, int& column) const {
    static const char* const kAfterToken[] = {"Unknown enumeration value", "has no field named",
                                              "Invalid value for boolean field"};
    bool after = false;
    for (const char* m : kAfterToken) after = after || message_.find(m) != std::string::npos;
    if (!after) return;
    // The absolute offset of (line, column).
    std::size_t pos = 0;
    for (int l = 0; l < line; ++l) {
      pos = text.find('\n', pos);
      if (pos == std::string::npos) return;
      ++pos;
    }
    pos = std::min(pos + static_cast<std::size_t>(std::max(column, 0)), text.size());
    const auto is_token_char = [](char ch) {
      return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_' || ch == '.' ||
             ch == '-' || ch == '+';
    };
    while (pos > 0 && std::isspace(static_cast<unsigned char>(text[pos - 1]))) --pos;
    if (pos == 0 || !is_token_char(text[pos - 1])) return;
    while (pos > 0 && is_token_char(text[pos - 1])) --pos;
    line = static_cast<int>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(pos), '\n'));
    const std::size_t line_start = text.rfind('\n', pos == 0 ? 0 : pos - 1);
    column = static_cast<int>(line_start == std::string::npos || pos == 0 ? pos : pos - line_start - 1);
  }

  bool has_error_ = false;
  int line_ = -1;
  int column_ = -1;
  std::string message_;
};

}  // namespace

proto::EvoKitConfig parse_config(const std::string& text, const std::string& source) {
  proto::EvoKitConfig config;
  FirstErrorCollector errors;
  google::protobuf::TextFormat::Parser parser;
  parser.RecordErrorsTo(&errors);
  if (!parser.ParseFromString(text, &config)) {
    if (errors.has_error()) {
      throw ConfigError(errors.where(source, text) + ": " + errors.message());
    }
    throw ConfigError(source + ": not a valid config");
  }
  return config;
}

proto::EvoKitConfig load_config(const std::string& path) {
  std::string text, error;
  if (!detail::read_file(path, text, error)) {
    throw ConfigError(path + ": cannot read config: " + error);
  }
  return parse_config(text, path);
}

std::string config_to_text(const proto::EvoKitConfig& config) {
  std::string text;
  google::protobuf::TextFormat::PrintToString(config, &text);
  return text;
}

SolverOptions solver_options(const proto::EvoKitConfig& config, std::size_t num_params) {
  const proto::SolverConfig& solver = config.solver();
  if (solver.sampling().type() != proto::SamplingConfig::GAUSSIAN_SAMPLING) {
    // CMA / GA samples are rebuilt from the strategy's state, which the
    // Python ESAgent keeps (solver.pb); io::ESAgent implements Gaussian only.
    throw std::invalid_argument(
        "solver.sampling.type " + proto::SamplingConfig::Type_Name(solver.sampling().type()) +
        " is not supported by the C++ io component (GAUSSIAN_SAMPLING only); "
        "use the Python evokit.ESAgent for CMA and GA sampling");
  }
  const proto::GaussianSamplingConfig& g = solver.sampling().gaussian_sampling();
  if (g.cache_size() < 0) {
    throw std::invalid_argument("solver.sampling.gaussian_sampling.cache_size must be >= 0, got " +
                                std::to_string(g.cache_size()));
  }
  SolverOptions options;
  options.sampling.seed = g.seed();
  options.sampling.sigma = g.std();
  options.sampling.cached = g.cached();
  options.sampling.cache_size = static_cast<std::size_t>(g.cache_size());
  options.sampling.num_params = num_params;
  options.sampling.num_threads = solver.num_threads();

  const proto::OptimizerConfig& opt = solver.optimizer();
  switch (opt.type()) {
    case proto::OptimizerConfig::SGD:
      options.optimizer.type = OptimizerOptions::Type::kSGD;
      break;
    case proto::OptimizerConfig::MOMENTUM:
      options.optimizer.type = OptimizerOptions::Type::kMomentum;
      break;
    case proto::OptimizerConfig::ADAM:
      options.optimizer.type = OptimizerOptions::Type::kAdam;
      break;
  }
  options.optimizer.learning_rate = opt.base_lr();
  options.optimizer.momentum = opt.momentum().momentum();
  options.optimizer.beta1 = opt.adam().beta1();
  options.optimizer.beta2 = opt.adam().beta2();
  options.optimizer.epsilon = opt.adam().epsilon();

  options.antithetic = solver.antithetic();
  switch (solver.fitness_shaping()) {
    case proto::CENTERED_RANK:
      options.fitness_shaping = FitnessShaping::kCenteredRank;
      break;
    case proto::Z_SCORE:
      options.fitness_shaping = FitnessShaping::kZScore;
      break;
    case proto::RAW:
      options.fitness_shaping = FitnessShaping::kRaw;
      break;
  }
  options.weight_decay = solver.weight_decay();
  options.num_threads = solver.num_threads();
  return options;
}

}  // namespace evokit::io
