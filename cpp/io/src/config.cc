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
#include <set>
#include <stdexcept>
#include <string>
#include <utility>

#include "evokit/formats/config.h"
#include "evokit/io/errors.h"
#include "file_util.h"
#include "message_fields.h"

namespace evokit::io {

namespace {

// Keeps the first error the text-format parser reports (line and column are
// 0-based there, a column counting bytes and advancing to the next multiple
// of 8 at a tab).
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
  // The byte offset in `text` of the token the error is about, or nullopt
  // when the parser gave no position.
  std::optional<std::size_t> offset(const std::string& text) const {
    if (line_ < 0) return std::nullopt;
    std::size_t offset = formats::offset_of(text, line_ + 1, column_ + 1, /*tab_stops=*/true);
    // For errors about a token it has already read past (an unknown field
    // name or enum value, a bad bool, an exponent without digits), protobuf reports the position of the
    // token after it: point at the offending token instead, as Python does.
    static const char* const kAfterToken[] = {"Unknown enumeration value", "has no field named",
                                              "Invalid value for boolean field",
                                              "must be followed by exponent"};
    bool after = false;
    for (const char* m : kAfterToken) after = after || message_.find(m) != std::string::npos;
    if (after) {
      const auto is_token_char = [](char ch) {
        return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_' || ch == '.' || ch == '-' || ch == '+';
      };
      std::size_t pos = offset;
      while (pos > 0 && std::isspace(static_cast<unsigned char>(text[pos - 1]))) --pos;
      if (pos > 0 && is_token_char(text[pos - 1])) {
        while (pos > 0 && is_token_char(text[pos - 1])) --pos;
        offset = pos;
      }
    }
    // a string cut by the end of its line: the error is after it
    if (message_.find("cannot cross line boundaries") != std::string::npos && offset > 0) --offset;
    // a second value of a singular field: at its colon; Python names the value
    if (message_.find("is specified multiple times") != std::string::npos) {
      if (offset < text.size() && text[offset] == ':') ++offset;
      while (offset < text.size() && (text[offset] == ' ' || text[offset] == '\t')) ++offset;
    }
    return formats::token_start(text, offset);
  }
  const std::string& message() const { return message_; }

 private:
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
  const std::optional<std::size_t> at = errors.offset(text);
  if (!at) throw ConfigError(source + ": at top level: " + errors.message());
  const std::optional<std::string> field = formats::field_at(text, *at);
  std::string what = errors.message();
  // 'Unknown enumeration value of "X" for field "f".' (a name or a number),
  // and a string where the enum value's name belongs, as Python words them
  static const std::regex unknown_enum(
      R"re(^(?:Unknown enumeration value of "([^"]*)" for field "\w+"\.)re"
      R"re(|Expected integer or identifier, got: (".*"|'.*')))re");
  std::smatch m;
  const pb::FieldDescriptor* f = field ? find_field(message->GetDescriptor(), *field) : nullptr;
  if (f != nullptr && f->enum_type() != nullptr && std::regex_match(what, m, unknown_enum)) {
    std::vector<std::string> values;
    for (int i = 0; i < f->enum_type()->value_count(); ++i) values.push_back(f->enum_type()->value(i)->name());
    what = formats::unknown_enum_value(m[1].matched ? m[1].str() : m[2].str(), values);
  }
  throw ConfigError(formats::parse_problem(text, *at, what).text(source));
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

namespace {

void schema_paths(const pb::Descriptor* d, const std::string& prefix, formats::LiteralSchema& schema) {
  for (int i = 0; i < d->field_count(); ++i) {
    const pb::FieldDescriptor* f = d->field(i);
    const std::string path = prefix + f->name();
    if (f->cpp_type() == pb::FieldDescriptor::CPPTYPE_MESSAGE) {
      schema_paths(f->message_type(), path + ".", schema);
    } else if (f->cpp_type() == pb::FieldDescriptor::CPPTYPE_ENUM) {
      schema.enums.insert(path);
    } else if (f->cpp_type() == pb::FieldDescriptor::CPPTYPE_BOOL) {
      schema.bools.insert(path);
    }
  }
}

// The dotted paths of the enum and bool fields of both layouts' root messages.
const formats::LiteralSchema& literal_schema() {
  static const formats::LiteralSchema schema = [] {
    formats::LiteralSchema s;
    schema_paths(proto::EvoKitConfig::descriptor(), "", s);
    schema_paths(proto::ParlEvoKitConfig::descriptor(), "", s);
    return s;
  }();
  return schema;
}

}  // namespace

proto::EvoKitConfig parse_config(const std::string& text, const std::string& source, bool validate) {
  // what one protobuf runtime would read otherwise than the other: refused by both
  if (const auto problem = formats::check_literals(text, literal_schema())) throw ConfigError(problem->text(source));
  std::optional<formats::ConfigProblem> problem;
  const formats::Layout layout = formats::detect_layout(text, &problem);
  if (problem) throw ConfigError(problem->text(source));
  proto::EvoKitConfig config;
  if (layout == formats::Layout::kParl) {
    proto::ParlEvoKitConfig parl;
    parse_text(text, source, &parl);
    std::set<std::string> present;
    const OptionSet fields = formats::parl_to_evokit(detail::message_fields(parl, &present), present, text, &problem);
    if (problem) throw ConfigError(problem->text(source));
    detail::set_fields(config, fields);
    ConfigNoteHandler handler;
    {
      std::lock_guard<std::mutex> lock(note_mutex);
      handler = note_handler();
    }
    if (handler) handler(formats::parl_note(source));
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

// One scalar of `field` (index `i` of a repeated one) as the core reads it.
OptionSet::Value scalar(const pb::Message& message, const pb::FieldDescriptor* field, int i) {
  const pb::Reflection* r = message.GetReflection();
  const bool rep = field->is_repeated();
  switch (field->cpp_type()) {
    case pb::FieldDescriptor::CPPTYPE_ENUM: {
      const int number = rep ? r->GetRepeatedEnumValue(message, field, i) : r->GetEnumValue(message, field);
      const pb::EnumValueDescriptor* value = field->enum_type()->FindValueByNumber(number);
      return value != nullptr ? value->name() : std::to_string(number);
    }
    case pb::FieldDescriptor::CPPTYPE_BOOL:
      return rep ? r->GetRepeatedBool(message, field, i) : r->GetBool(message, field);
    case pb::FieldDescriptor::CPPTYPE_INT32:
      return std::int64_t{rep ? r->GetRepeatedInt32(message, field, i) : r->GetInt32(message, field)};
    case pb::FieldDescriptor::CPPTYPE_INT64:
      return std::int64_t{rep ? r->GetRepeatedInt64(message, field, i) : r->GetInt64(message, field)};
    case pb::FieldDescriptor::CPPTYPE_UINT32:
      return std::int64_t{rep ? r->GetRepeatedUInt32(message, field, i) : r->GetUInt32(message, field)};
    case pb::FieldDescriptor::CPPTYPE_UINT64:
      return int64_bits(rep ? r->GetRepeatedUInt64(message, field, i) : r->GetUInt64(message, field));
    case pb::FieldDescriptor::CPPTYPE_FLOAT:
      return double{rep ? r->GetRepeatedFloat(message, field, i) : r->GetFloat(message, field)};
    case pb::FieldDescriptor::CPPTYPE_DOUBLE:
      return rep ? r->GetRepeatedDouble(message, field, i) : r->GetDouble(message, field);
    case pb::FieldDescriptor::CPPTYPE_STRING:
      return rep ? r->GetRepeatedString(message, field, i) : r->GetString(message, field);
    default:
      throw std::logic_error("not a scalar field: " + field->full_name());
  }
}

void walk(const pb::Message& message, const std::string& prefix, OptionSet& out, std::set<std::string>* present) {
  const pb::Descriptor* descriptor = message.GetDescriptor();
  const pb::Reflection* reflection = message.GetReflection();
  for (int i = 0; i < descriptor->field_count(); ++i) {
    const pb::FieldDescriptor* field = descriptor->field(i);
    const std::string name = prefix + field->name();
    if (field->cpp_type() == pb::FieldDescriptor::CPPTYPE_MESSAGE) {
      if (field->is_repeated()) continue;  // no message the core reads has a repeated message
      if (present != nullptr && reflection->HasField(message, field)) present->insert(name);
      walk(reflection->GetMessage(message, field), name + ".", out, present);
      continue;
    }
    if (field->is_repeated()) {
      const int n = reflection->FieldSize(message, field);
      if (present != nullptr && n > 0) present->insert(name);
      // a repeated integer field is a list; a repeated string one is only ever asked whether it is set
      std::vector<std::int64_t> values;
      bool integers = true;
      for (int k = 0; k < n && integers; ++k) {
        const OptionSet::Value v = scalar(message, field, k);
        if (const auto* x = std::get_if<std::int64_t>(&v)) {
          values.push_back(*x);
        } else {
          integers = false;
        }
      }
      if (integers) out.set(name, std::move(values));
      continue;
    }
    if (present != nullptr && reflection->HasField(message, field)) present->insert(name);
    out.set(name, scalar(message, field, 0));
  }
}

}  // namespace

namespace detail {

OptionSet message_fields(const pb::Message& message, std::set<std::string>* present) {
  OptionSet out;
  walk(message, "", out, present);
  return out;
}

void set_fields(pb::Message& message, const OptionSet& fields) {
  for (const auto& entry : fields.values()) {
    const std::string& path = entry.first;
    const OptionSet::Value& value = entry.second;
    pb::Message* target = &message;
    std::size_t start = 0;
    for (std::size_t dot; (dot = path.find('.', start)) != std::string::npos; start = dot + 1) {
      const pb::FieldDescriptor* f = target->GetDescriptor()->FindFieldByName(path.substr(start, dot - start));
      if (f == nullptr || f->message_type() == nullptr) throw std::logic_error("set_fields: no message " + path);
      target = target->GetReflection()->MutableMessage(target, f);
    }
    const pb::FieldDescriptor* field = target->GetDescriptor()->FindFieldByName(path.substr(start));
    if (field == nullptr || field->is_repeated()) throw std::logic_error("set_fields: no scalar field " + path);
    const pb::Reflection* r = target->GetReflection();
    const auto integer = [&] { return std::get<std::int64_t>(value); };
    switch (field->cpp_type()) {
      case pb::FieldDescriptor::CPPTYPE_ENUM: {
        const pb::EnumValueDescriptor* v = field->enum_type()->FindValueByName(std::get<std::string>(value));
        if (v == nullptr) throw std::logic_error("set_fields: no enum value for " + path);
        r->SetEnumValue(target, field, v->number());
        break;
      }
      case pb::FieldDescriptor::CPPTYPE_BOOL: r->SetBool(target, field, std::get<bool>(value)); break;
      case pb::FieldDescriptor::CPPTYPE_INT32: r->SetInt32(target, field, static_cast<std::int32_t>(integer())); break;
      case pb::FieldDescriptor::CPPTYPE_INT64: r->SetInt64(target, field, integer()); break;
      case pb::FieldDescriptor::CPPTYPE_UINT32: r->SetUInt32(target, field, static_cast<std::uint32_t>(integer())); break;
      case pb::FieldDescriptor::CPPTYPE_UINT64: r->SetUInt64(target, field, static_cast<std::uint64_t>(integer())); break;
      case pb::FieldDescriptor::CPPTYPE_FLOAT:
        r->SetFloat(target, field, static_cast<float>(std::get<double>(value)));
        break;
      case pb::FieldDescriptor::CPPTYPE_DOUBLE: r->SetDouble(target, field, std::get<double>(value)); break;
      case pb::FieldDescriptor::CPPTYPE_STRING: r->SetString(target, field, std::get<std::string>(value)); break;
      default: throw std::logic_error("set_fields: not a scalar field " + path);
    }
  }
}

}  // namespace detail

OptionSet solver_options(const proto::SolverConfig& solver) { return detail::message_fields(solver, nullptr); }

void validate_config(const proto::EvoKitConfig& config, const std::string& source,
                     std::optional<std::size_t> num_params, const std::string& text) {
  const auto problem = formats::validate_config(detail::message_fields(config, nullptr), num_params, text);
  if (problem) throw ConfigError(problem->text(source));
}

}  // namespace evokit::io
