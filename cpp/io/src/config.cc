#include "evokit/io/config.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/message.h>
#include <google/protobuf/text_format.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstring>
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

proto::EvoKitConfig load_config(const std::string& path) {
  std::string text, error;
  if (!detail::read_file(path, text, error)) {
    throw ConfigError(path + ": cannot read config: " + error);
  }
  const std::size_t bad = first_invalid_utf8(text);
  if (bad != std::string::npos) {
    throw ConfigError(path + ": not a text file (byte offset " + std::to_string(bad) +
                      " is not UTF-8)");
  }
  return parse_config(text, path);
}

std::string config_to_text(const proto::EvoKitConfig& config) {
  std::string text;
  google::protobuf::TextFormat::PrintToString(config, &text);
  return text;
}

namespace {

namespace pb = google::protobuf;

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

void validate_config(const proto::EvoKitConfig& config, const std::string& source,
                     std::optional<std::size_t> num_params) {
  try {
    validate_solver_options(solver_options(config.solver()), num_params);
  } catch (const std::invalid_argument& e) {
    throw ConfigError(source + ": " + e.what());
  }
  // The warehouse's section (a warehouse keeps max_to_keep iterations).
  const std::int32_t keep = config.async_es().max_to_keep();
  if (keep < 1) {
    throw ConfigError(source + ": async_es.max_to_keep must be >= 1, got " + std::to_string(keep));
  }
}

}  // namespace evokit::io
