// See proto_defaults.h.
#include "proto_defaults.h"

#include <cctype>
#include <cstdlib>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <vector>

#ifndef EVOKIT_PROTO_FILE
#error "EVOKIT_PROTO_FILE (the path of proto/evokit.proto) must be defined by the build"
#endif

namespace evokit::testing {

namespace {

struct Token {
  std::string text;
  int line = 0;
  bool quoted = false;
};

struct Field {
  std::string label, type, name;
  std::optional<Token> default_value;
  int line = 0;
};

struct Message {
  std::vector<Field> fields;
  std::map<std::string, Message> messages;
  std::map<std::string, std::vector<std::string>> enums;  // value names in order
};

[[noreturn]] void Fail(int line, const std::string& what) {
  throw std::runtime_error(std::string(EVOKIT_PROTO_FILE) + ":" + std::to_string(line) + ": " + what);
}

std::vector<Token> Tokenize(const std::string& src) {
  std::vector<Token> out;
  int line = 1;
  for (std::size_t i = 0; i < src.size();) {
    const char c = src[i];
    if (c == '\n') {
      ++line;
      ++i;
    } else if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
    } else if (src.compare(i, 2, "//") == 0) {
      while (i < src.size() && src[i] != '\n') ++i;
    } else if (src.compare(i, 2, "/*") == 0) {
      const std::size_t end = src.find("*/", i + 2);
      if (end == std::string::npos) Fail(line, "unterminated comment");
      for (std::size_t j = i; j < end; ++j) line += src[j] == '\n';
      i = end + 2;
    } else if (c == '"' || c == '\'') {
      Token t{"", line, true};
      for (++i; i < src.size() && src[i] != c; ++i) {
        if (src[i] == '\\' && i + 1 < src.size()) ++i;
        t.text += src[i];
      }
      if (i == src.size()) Fail(line, "unterminated string");
      ++i;
      out.push_back(t);
    } else if (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '+' || c == '.') {
      Token t{"", line, false};
      while (i < src.size() && (std::isalnum(static_cast<unsigned char>(src[i])) || src[i] == '_' ||
                                src[i] == '-' || src[i] == '+' || src[i] == '.')) {
        t.text += src[i++];
      }
      out.push_back(t);
    } else {
      out.push_back({std::string(1, c), line, false});
      ++i;
    }
  }
  return out;
}

class Parser {
 public:
  explicit Parser(std::vector<Token> tokens) : tokens_(std::move(tokens)) {}

  Message File() {
    Message top;
    while (pos_ < tokens_.size()) {
      const std::string word = Next().text;
      if (word == "syntax" || word == "package" || word == "option" || word == "import") {
        SkipStatement();
      } else if (word == "message") {
        const std::string name = Next().text;
        top.messages[name] = Body();
      } else if (word == "enum") {
        const std::string name = Next().text;
        top.enums[name] = Enum();
      } else {
        Fail(tokens_[pos_ - 1].line, "unexpected '" + word + "' at the top level");
      }
    }
    return top;
  }

 private:
  const Token& Next() {
    if (pos_ >= tokens_.size()) Fail(tokens_.empty() ? 0 : tokens_.back().line, "unexpected end of file");
    return tokens_[pos_++];
  }
  const Token& Peek() {
    if (pos_ >= tokens_.size()) Fail(tokens_.empty() ? 0 : tokens_.back().line, "unexpected end of file");
    return tokens_[pos_];
  }
  void Expect(const std::string& text) {
    const Token& t = Next();
    if (t.quoted || t.text != text) Fail(t.line, "expected '" + text + "', got '" + t.text + "'");
  }
  void SkipStatement() {
    while (Next().text != ";") {
    }
  }

  Message Body() {
    Message m;
    Expect("{");
    while (Peek().text != "}") {
      const Token& word = Next();
      if (word.text == "message") {
        const std::string name = Next().text;
        m.messages[name] = Body();
      } else if (word.text == "enum") {
        const std::string name = Next().text;
        m.enums[name] = Enum();
      } else if (word.text == "reserved" || word.text == "option" || word.text == "extensions") {
        SkipStatement();
      } else if (word.text == "optional" || word.text == "required" || word.text == "repeated") {
        Field f;
        f.label = word.text;
        f.line = word.line;
        f.type = Next().text;
        f.name = Next().text;
        Expect("=");
        Next();  // the number
        if (Peek().text == "[") {
          Next();
          while (Peek().text != "]") {
            const Token& option = Next();
            if (option.text == ",") continue;
            Expect("=");
            const Token& value = Next();
            if (option.text == "default") f.default_value = value;
          }
          Next();
        }
        Expect(";");
        m.fields.push_back(f);
      } else {
        Fail(word.line, "unexpected '" + word.text + "' in a message (oneof, map and groups are not read)");
      }
    }
    Next();
    return m;
  }

  std::vector<std::string> Enum() {
    std::vector<std::string> values;
    Expect("{");
    while (Peek().text != "}") {
      const Token& word = Next();
      if (word.text == "option" || word.text == "reserved") {
        SkipStatement();
        continue;
      }
      values.push_back(word.text);
      SkipStatement();
    }
    Next();
    return values;
  }

  std::vector<Token> tokens_;
  std::size_t pos_ = 0;
};

// The message or enum named `type` as seen from the innermost of `scopes`.
template <class Map>
auto Find(const std::vector<const Message*>& scopes, Map Message::*member, const std::string& type)
    -> const typename Map::mapped_type* {
  for (auto it = scopes.rbegin(); it != scopes.rend(); ++it) {
    const Map& map = (*it)->*member;
    const auto found = map.find(type);
    if (found != map.end()) return &found->second;
  }
  return nullptr;
}

void Walk(const Message& message, std::vector<const Message*> scopes, const std::string& prefix,
          OptionSet& out) {
  scopes.push_back(&message);
  for (const Field& f : message.fields) {
    const std::string name = prefix + f.name;
    const std::string def = f.default_value ? f.default_value->text : "";
    if (const Message* nested = Find(scopes, &Message::messages, f.type)) {
      if (f.label != "repeated") Walk(*nested, scopes, name + ".", out);
      continue;
    }
    if (f.label == "repeated") continue;
    if (const std::vector<std::string>* values = Find(scopes, &Message::enums, f.type)) {
      if (values->empty()) Fail(f.line, "enum " + f.type + " has no values");
      out.set(name, OptionSet::Value(def.empty() ? values->front() : def));
    } else if (f.type == "double") {
      out.set(name, OptionSet::Value(def.empty() ? 0.0 : std::strtod(def.c_str(), nullptr)));
    } else if (f.type == "float") {
      out.set(name, OptionSet::Value(static_cast<double>(def.empty() ? 0.0f : std::strtof(def.c_str(), nullptr))));
    } else if (f.type == "int32" || f.type == "int64" || f.type == "sint32" || f.type == "sint64" ||
               f.type == "sfixed32" || f.type == "sfixed64") {
      out.set(name, OptionSet::Value(static_cast<std::int64_t>(def.empty() ? 0 : std::stoll(def))));
    } else if (f.type == "uint32" || f.type == "uint64" || f.type == "fixed32" || f.type == "fixed64") {
      out.set(name, OptionSet::Value(static_cast<std::int64_t>(def.empty() ? 0ULL : std::stoull(def))));
    } else if (f.type == "bool") {
      out.set(name, OptionSet::Value(def == "true"));
    } else if (f.type == "string" || f.type == "bytes") {
      out.set(name, OptionSet::Value(def));
    } else {
      Fail(f.line, "field " + f.name + " has type " + f.type + ", which is neither a scalar type nor a message "
                   "or enum this reader found");
    }
  }
}

}  // namespace

OptionSet ProtoDefaults(const std::string& message) {
  std::ifstream in(EVOKIT_PROTO_FILE);
  if (!in) throw std::runtime_error(std::string("cannot read ") + EVOKIT_PROTO_FILE);
  std::stringstream text;
  text << in.rdbuf();
  const Message top = Parser(Tokenize(text.str())).File();
  const auto found = top.messages.find(message);
  if (found == top.messages.end()) {
    throw std::runtime_error(std::string(EVOKIT_PROTO_FILE) + " has no top-level message " + message);
  }
  OptionSet out;
  Walk(found->second, {&top}, "", out);
  return out;
}

}  // namespace evokit::testing
