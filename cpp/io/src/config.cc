#include "evokit/io/config.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/message.h>
#include <google/protobuf/text_format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <mutex>
#include <regex>
#include <stdexcept>
#include <string>
#include <utility>

#include "evokit/io/errors.h"
#include "file_util.h"
#include "parl_config.h"
#include "text_walk.h"

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
  // The error's 1-based line and column (-1 when unknown) and byte offset in `text`.
  struct Location {
    int line = -1, column = -1;
    std::size_t offset = 0;
  };
  Location location(const std::string& text) const {
    Location at;
    if (line_ < 0) return at;
    int line = line_, column = column_;
    point_at_token(text, line, column);
    std::size_t offset = offset_of(text, line, column);
    // a string cut by the end of its line: the error is after it
    if (message_.find("cannot cross line boundaries") != std::string::npos && offset > 0) --offset;
    // a second value of a singular field: at its colon; Python names the value
    if (message_.find("is specified multiple times") != std::string::npos) {
      if (offset < text.size() && text[offset] == ':') ++offset;
      while (offset < text.size() && (text[offset] == ' ' || text[offset] == '\t')) ++offset;
    }
    at.offset = detail::token_start(text, offset);
    // the 0-based line and protobuf's column of that offset
    const std::size_t line_start = at.offset == 0 ? 0 : text.rfind('\n', at.offset - 1) + 1;
    line = static_cast<int>(
        std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(line_start), '\n'));
    column = 0;
    for (std::size_t i = line_start; i < at.offset; ++i) {
      column = text[i] == '\t' ? column + 8 - column % 8 : column + 1;
    }
    at.line = line + 1;
    at.column = column + 1;
    return at;
  }
  const std::string& message() const { return message_; }

  // The byte offset of protobuf's 0-based (line, column), whose columns
  // advance to the next multiple of 8 at a tab.
  static std::size_t offset_of(const std::string& text, int line, int column) {
    std::size_t pos = 0;
    for (int l = 0; l < line; ++l) {
      pos = text.find('\n', pos);
      if (pos == std::string::npos) return text.size();
      ++pos;
    }
    for (int c = 0; pos < text.size() && text[pos] != '\n' && c < column; ++pos) {
      c = text[pos] == '\t' ? c + 8 - c % 8 : c + 1;
    }
    return pos;
  }

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

namespace {

namespace pb = google::protobuf;

// The field at dotted `path` below message type `root`, or nullptr.
const pb::FieldDescriptor* find_field(const pb::Descriptor* root, const std::string& path) {
  const pb::FieldDescriptor* field = nullptr;
  std::size_t start = 0;
  while (root != nullptr) {
    const std::size_t dot = path.find('.', start);
    const std::size_t length = dot == std::string::npos ? std::string::npos : dot - start;
    field = root->FindFieldByName(path.substr(start, length));
    if (field == nullptr || dot == std::string::npos) return field;
    root = field->message_type();
    start = dot + 1;
  }
  return nullptr;
}

// Parses `text` into `message`, or throws the ConfigError that Python's
// evokit.config.parse_error words: "file:line:column: field: message", the
// field being the one the parser was in (detail::field_at; "at top level"
// outside any field), an unknown enum value listing the values.
void parse_text(const std::string& text, const std::string& source, pb::Message* message) {
  FirstErrorCollector errors;
  pb::TextFormat::Parser parser;
  parser.RecordErrorsTo(&errors);
  if (parser.ParseFromString(text, message)) return;
  if (!errors.has_error()) throw ConfigError(source + ": not a valid config");
  const FirstErrorCollector::Location at = errors.location(text);
  std::string where = source;
  if (at.line > 0) where += ":" + std::to_string(at.line) + ":" + std::to_string(at.column);
  const std::optional<std::string> field = at.line > 0 ? detail::field_at(text, at.offset) : std::nullopt;
  std::string what = errors.message();
  // 'Unknown enumeration value of "X" for field "f".' (a name or a number),
  // and a string where the enum value's name belongs, as Python words them
  static const std::regex unknown_enum(
      R"re(^(?:Unknown enumeration value of "([^"]*)" for field "\w+"\.)re"
      R"re(|Expected integer or identifier, got: (".*"|'.*')))re");
  std::smatch m;
  const pb::FieldDescriptor* f = field ? find_field(message->GetDescriptor(), *field) : nullptr;
  if (f != nullptr && f->enum_type() != nullptr && std::regex_match(what, m, unknown_enum)) {
    std::string values;
    for (int i = 0; i < f->enum_type()->value_count(); ++i) {
      values += (i ? ", " : "") + f->enum_type()->value(i)->name();
    }
    what = "unknown value " + (m[1].matched ? m[1].str() : m[2].str()) + ", expected one of " + values;
  }
  throw ConfigError(where + ": " + field.value_or("at top level") + ": " + what);
}

// Where a config's notes go (set_config_note_handler); standard error by default.
std::mutex note_mutex;
ConfigNoteHandler& note_handler() {
  static ConfigNoteHandler handler = [](const std::string& note) { std::cerr << note << '\n'; };
  return handler;
}

}  // namespace

ConfigNoteHandler set_config_note_handler(ConfigNoteHandler handler) {
  std::lock_guard<std::mutex> lock(note_mutex);
  std::swap(note_handler(), handler);
  return handler;
}

proto::EvoKitConfig parse_config(const std::string& text, const std::string& source, bool validate) {
  proto::EvoKitConfig config;
  if (detail::detect_layout(text, source) == detail::Layout::kParl) {
    proto::ParlEvoKitConfig parl;
    parse_text(text, source, &parl);
    config = detail::parl_to_evokit(parl, text, source);
    ConfigNoteHandler handler;
    {
      std::lock_guard<std::mutex> lock(note_mutex);
      handler = note_handler();
    }
    if (handler) handler(detail::parl_note(source));
  } else {
    parse_text(text, source, &config);
  }
  if (validate) validate_config(config, source, std::nullopt, text);
  return config;
}

namespace {

// The offset of the first byte that starts no valid UTF-8 sequence (what
// Python's strict decoder reports as the start of the error), or npos.
std::size_t first_invalid_utf8(const std::string& text) {
  const std::size_t n = text.size();
  std::size_t i = 0;
  while (i < n) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      ++i;
      continue;
    }
    std::size_t length = 0;
    unsigned char low = 0x80, high = 0xBF;  // the range of the second byte
    if (c >= 0xC2 && c <= 0xDF) {
      length = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
      length = 3;
      if (c == 0xE0) low = 0xA0;   // no overlong forms
      if (c == 0xED) high = 0x9F;  // no surrogates
    } else if (c >= 0xF0 && c <= 0xF4) {
      length = 4;
      if (c == 0xF0) low = 0x90;
      if (c == 0xF4) high = 0x8F;  // at most U+10FFFF
    } else {
      return i;
    }
    if (n - i < length) return i;
    for (std::size_t k = 1; k < length; ++k) {
      const auto b = static_cast<unsigned char>(text[i + k]);
      if (b < (k == 1 ? low : 0x80) || b > (k == 1 ? high : 0xBF)) return i;
    }
    i += length;
  }
  return std::string::npos;
}

}  // namespace

proto::EvoKitConfig load_config(const std::string& path, bool validate, std::string* text_out) {
  std::string text, error;
  if (!detail::read_file(path, text, error)) {
    throw ConfigError(path + ": cannot read config: " + error);
  }
  const std::size_t bad = first_invalid_utf8(text);
  if (bad != std::string::npos) {
    throw ConfigError(path + ": not a text file (byte offset " + std::to_string(bad) +
                      " is not UTF-8)");
  }
  proto::EvoKitConfig config = parse_config(text, path, validate);
  if (text_out != nullptr) *text_out = std::move(text);
  return config;
}

namespace {

// repr() of a Python float: the fewest significant digits that read back as
// `value` (the correctly rounded ones), positional for decimal exponents
// -4 <= e < 16 (with ".0" when integral), else "d.ddde+XX".
std::string python_float_repr(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value < 0 ? "-inf" : "inf";
  char buf[40];
  for (int digits = 1; digits <= 17; ++digits) {
    std::snprintf(buf, sizeof(buf), "%.*e", digits - 1, value);
    if (std::strtod(buf, nullptr) == value) break;
  }
  std::string text(buf);  // [-]d[.ddd]e(+|-)XX
  std::string out;
  if (text[0] == '-') {
    out = "-";
    text.erase(0, 1);
  }
  const std::size_t e = text.find('e');
  const int exponent = std::stoi(text.substr(e + 1));
  std::string digits = text.substr(0, e);
  digits.erase(std::remove(digits.begin(), digits.end(), '.'), digits.end());
  while (digits.size() > 1 && digits.back() == '0') digits.pop_back();
  const auto n = static_cast<int>(digits.size());
  if (exponent >= -4 && exponent < 16) {
    if (exponent < 0) {
      out += "0." + std::string(static_cast<std::size_t>(-exponent - 1), '0') + digits;
    } else if (n <= exponent + 1) {
      out += digits + std::string(static_cast<std::size_t>(exponent + 1 - n), '0') + ".0";
    } else {
      const auto point = static_cast<std::size_t>(exponent + 1);
      out += digits.substr(0, point) + "." + digits.substr(point);
    }
  } else {
    out += digits.substr(0, 1);
    if (n > 1) out += "." + digits.substr(1);
    std::snprintf(buf, sizeof(buf), "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
    out += buf;
  }
  return out;
}

// Floats and doubles as Python's text_format prints them: a double as its
// repr(), a float as the repr() of its shortest decimal of 6 to 9
// significant digits that reads back as the same float
// (google.protobuf.internal.type_checkers.ToShortestFloat).
class PythonFloatPrinter : public google::protobuf::TextFormat::FastFieldValuePrinter {
 public:
  void PrintFloat(float value,
                  google::protobuf::TextFormat::BaseTextGenerator* out) const override {
    double shortest = value;
    if (std::isfinite(value)) {
      char buf[32];
      for (int digits = 6; digits <= 9; ++digits) {
        std::snprintf(buf, sizeof(buf), "%.*g", digits, static_cast<double>(value));
        shortest = std::strtod(buf, nullptr);
        if (static_cast<float>(shortest) == value) break;
      }
    }
    out->PrintString(python_float_repr(shortest));
  }
  void PrintDouble(double value,
                   google::protobuf::TextFormat::BaseTextGenerator* out) const override {
    out->PrintString(python_float_repr(value));
  }
};

}  // namespace

std::string config_to_text(const proto::EvoKitConfig& config) {
  google::protobuf::TextFormat::Printer printer;
  printer.SetDefaultFieldValuePrinter(new PythonFloatPrinter);  // the printer owns it
  std::string text;
  printer.PrintToString(config, &text);
  return text;
}

namespace {

// The int64 with the bits of `value` (two's complement), as Python's
// value - 2**64 for value >= 2**63.
std::int64_t int64_bits(std::uint64_t value) {
  std::int64_t out;
  std::memcpy(&out, &value, sizeof(out));
  return out;
}

void walk(const pb::Message& message, const std::string& prefix, OptionSet& out) {
  const pb::Descriptor* descriptor = message.GetDescriptor();
  const pb::Reflection* reflection = message.GetReflection();
  for (int i = 0; i < descriptor->field_count(); ++i) {
    const pb::FieldDescriptor* field = descriptor->field(i);
    if (field->is_repeated()) continue;  // no solver option is a list
    const std::string name = prefix + field->name();
    switch (field->cpp_type()) {
      case pb::FieldDescriptor::CPPTYPE_MESSAGE:
        walk(reflection->GetMessage(message, field), name + ".", out);
        break;
      case pb::FieldDescriptor::CPPTYPE_ENUM: {
        const int number = reflection->GetEnumValue(message, field);
        const pb::EnumValueDescriptor* value = field->enum_type()->FindValueByNumber(number);
        out.set(name, value != nullptr ? value->name() : std::to_string(number));
        break;
      }
      case pb::FieldDescriptor::CPPTYPE_BOOL:
        out.set(name, reflection->GetBool(message, field));
        break;
      case pb::FieldDescriptor::CPPTYPE_INT32:
        out.set(name, std::int64_t{reflection->GetInt32(message, field)});
        break;
      case pb::FieldDescriptor::CPPTYPE_INT64:
        out.set(name, std::int64_t{reflection->GetInt64(message, field)});
        break;
      case pb::FieldDescriptor::CPPTYPE_UINT32:
        out.set(name, std::int64_t{reflection->GetUInt32(message, field)});
        break;
      case pb::FieldDescriptor::CPPTYPE_UINT64:
        out.set(name, int64_bits(reflection->GetUInt64(message, field)));
        break;
      case pb::FieldDescriptor::CPPTYPE_FLOAT:
        out.set(name, double{reflection->GetFloat(message, field)});
        break;
      case pb::FieldDescriptor::CPPTYPE_DOUBLE:
        out.set(name, reflection->GetDouble(message, field));
        break;
      case pb::FieldDescriptor::CPPTYPE_STRING:
        out.set(name, reflection->GetString(message, field));
        break;
    }
  }
}

}  // namespace

OptionSet solver_options(const proto::SolverConfig& solver) {
  OptionSet out;
  walk(solver, "", out);
  return out;
}

namespace {

// Python's f"{value:g}" (nan without a sign).
std::string format_g(double value) {
  if (std::isnan(value)) return "nan";
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%g", value);
  return buffer;
}

// Python's f"{value:,}".
std::string format_thousands(std::int64_t value) {
  std::string digits = std::to_string(value < 0 ? -static_cast<std::uint64_t>(value) : value);
  for (std::size_t i = digits.size(); i > 3; i -= 3) digits.insert(i - 3, ",");
  return (value < 0 ? "-" : "") + digits;
}

// The checks of evokit/config.py's validate_config, message for message:
// "<source>:<line>: <field> <what>, got <value>", the line of the field in
// `text` (or of the closest enclosing message in it; none without text).
class Checker {
 public:
  Checker(const std::string& source, const std::string& text)
      : source_(source), text_(text), parl_(!text.empty() && detail::detect_layout(text, source) ==
                                                                 detail::Layout::kParl) {}

  [[noreturn]] void fail(std::string field, const std::string& message) const {
    std::string named = field;
    if (parl_) {  // the file names the field as PARL does: name both, find PARL's line
      const std::optional<std::string> parl = detail::parl_field(field);
      if (parl) {
        named = *parl + " (" + field + ")";
        field = *parl;
      }
    }
    int line = 0;
    if (!text_.empty()) {
      const std::vector<detail::FieldToken> tokens = detail::field_tokens(text_);
      std::string parent = field;
      line = detail::field_line(tokens, parent);
      while (line == 0 && parent.find('.') != std::string::npos) {
        parent.erase(parent.rfind('.'));
        line = detail::field_line(tokens, parent);
      }
    }
    const std::string where = line > 0 ? source_ + ":" + std::to_string(line) : source_;
    throw ConfigError(where + ": " + named + " " + message);
  }
  void at_least(const std::string& field, std::int64_t value, std::int64_t low) const {
    if (value < low) fail(field, "must be >= " + std::to_string(low) + ", got " + std::to_string(value));
  }
  void within(const std::string& field, std::int64_t value, std::int64_t low, std::int64_t high) const {
    if (value < low || value > high) {
      fail(field, "must be in [" + format_thousands(low) + ", " + format_thousands(high) + "], got " +
                      format_thousands(value));
    }
  }

 private:
  std::string source_;
  const std::string& text_;
  bool parl_;
};

// Python's repr of a str without quotes or escapes in it: 'text'.
std::string quoted(const std::string& s) { return "'" + s + "'"; }

}  // namespace

void validate_config(const proto::EvoKitConfig& config, const std::string& source,
                     std::optional<std::size_t> num_params, const std::string& text) {
  const Checker c(source, text);
  const proto::SolverConfig& solver = config.solver();
  try {
    std::regex pattern(solver.param_pattern());
  } catch (const std::regex_error& e) {
    c.fail("solver.param_pattern", std::string("is not a valid regular expression: ") + e.what());
  }
  static const char* const kBackends[] = {"auto", "native", "onnxruntime"};
  if (std::find(std::begin(kBackends), std::end(kBackends), solver.backend()) == std::end(kBackends)) {
    c.fail("solver.backend", "must be one of auto, native, onnxruntime, got " + quoted(solver.backend()));
  }
  // Every option the solver reads, checked by the core's registry:
  // "solver.<name> <what>, got <value>".
  try {
    validate_solver_options(solver_options(solver), num_params);
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    const std::size_t space = what.find(' ');
    c.fail(what.substr(0, space), space == std::string::npos ? std::string() : what.substr(space + 1));
  }
  // The warehouse's section (a warehouse keeps max_to_keep iterations).
  c.at_least("async_es.max_to_keep", config.async_es().max_to_keep(), 1);

  // The train section (`evokit train`), checked as Python checks it so that
  // a config one language accepts the other does too.
  const proto::TrainConfig& t = config.train();
  constexpr std::int64_t kMaxEpisodes = 1000000, kMaxWorkers = 4096;  // evokit/config.py MAX_*
  c.at_least("train.max_generations", t.max_generations(), 1);
  c.at_least("train.eval_every", t.eval_every(), 1);
  c.within("train.eval_episodes", t.eval_episodes(), 1, kMaxEpisodes);
  c.within("train.num_workers", t.num_workers(), 1, kMaxWorkers);
  c.within("train.episodes_per_sample", t.episodes_per_sample(), 1, kMaxEpisodes);
  for (int i = 0; i < t.hidden_sizes_size(); ++i) {
    if (t.hidden_sizes(i) < 1) {
      c.fail("train.hidden_sizes", "must all be >= 1, got " + std::to_string(t.hidden_sizes(i)) +
                                       " at position " + std::to_string(i));
    }
  }
  static const char* const kActivations[] = {"tanh", "relu", "sigmoid", "identity"};  // evokit/policy/mlp.py
  if (std::find(std::begin(kActivations), std::end(kActivations), t.activation()) == std::end(kActivations)) {
    c.fail("train.activation", "must be one of tanh, relu, sigmoid, identity, got " + quoted(t.activation()));
  }
  if (!(t.observation_clip() > 0 && std::isfinite(t.observation_clip()))) {
    c.fail("train.observation_clip", "must be finite and > 0, got " + format_g(t.observation_clip()));
  }
  if (!std::isfinite(t.target_return())) {
    c.fail("train.target_return", "must be finite, got " + format_g(t.target_return()));
  }
  c.at_least("train.max_env_steps", t.max_env_steps(), 0);
  if (!(t.alive_bonus_offset() >= 0 && std::isfinite(t.alive_bonus_offset()))) {
    c.fail("train.alive_bonus_offset", "must be finite and >= 0, got " + format_g(t.alive_bonus_offset()));
  }
}

}  // namespace evokit::io
