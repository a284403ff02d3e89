#include "text_walk.h"

#include <cctype>
#include <utility>

namespace evokit::io::detail {

namespace {

bool is_word_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.';
}

struct Token {
  std::string text;
  std::size_t start;
};

// evokit/config.py's _TOKEN: strings (to the closing quote or the end of the
// line), comments (skipped), numbers with their exponent signs, identifiers,
// single punctuation characters.
std::vector<Token> lex(const std::string& s) {
  std::vector<Token> out;
  const std::size_t n = s.size();
  std::size_t i = 0;
  while (i < n) {
    const char c = s[i];
    if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
      continue;
    }
    const std::size_t start = i;
    if (c == '#') {
      while (i < n && s[i] != '\n') ++i;
      continue;
    }
    if (c == '"' || c == '\'') {
      ++i;
      while (i < n) {
        if (s[i] == c) {
          ++i;
          break;
        }
        if (s[i] == '\n') break;
        if (s[i] == '\\') {
          if (i + 1 < n && s[i + 1] != '\n') {
            i += 2;
            continue;
          }
          break;
        }
        ++i;
      }
    } else if (std::isdigit(static_cast<unsigned char>(c)) ||
               (c == '.' && i + 1 < n && std::isdigit(static_cast<unsigned char>(s[i + 1])))) {
      ++i;
      while (i < n && (is_word_char(s[i]) ||
                       ((s[i] == '-' || s[i] == '+') && (s[i - 1] == 'e' || s[i - 1] == 'E')))) {
        ++i;
      }
    } else if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      ++i;
      while (i < n && is_word_char(s[i])) ++i;
    } else {
      ++i;
    }
    out.push_back({s.substr(start, i - start), start});
  }
  return out;
}

bool is_word(const std::string& token) { return is_word_char(token[0]); }

// evokit/config.py's _Walk, state for state.
class Walk {
 public:
  // Reads `token`; the path of the field it names, if it names one.
  std::optional<std::string> step(const std::string& token) {
    switch (state_) {
      case kField:
        if (token == "}" || token == ">") {
          if (!stack_.empty()) {
            const auto [path, in_list] = stack_.back();
            stack_.pop_back();
            if (in_list) {
              state_ = kList;
              const std::size_t dot = path.rfind('.');
              current_ = dot == std::string::npos ? path : path.substr(dot + 1);
            }
          }
        } else if (is_word(token)) {
          current_ = token;
          state_ = kName;
          return path(token);
        }
        break;
      case kName:
        if (token == ":") {
          state_ = kValue;
        } else if (token == "{" || token == "<") {
          open(false);
        } else {  // a scalar without its colon: protobuf stops here
          current_.reset();
          state_ = kField;
        }
        break;
      case kValue:
        if (token == "{" || token == "<") {
          open(false);
        } else if (token == "[") {
          state_ = kList;
        } else if (token != "-") {
          current_.reset();
          state_ = kField;
        }
        break;
      case kList:
        if (token == "{" || token == "<") {
          open(true);
        } else if (token == "]") {
          current_.reset();
          state_ = kField;
        }
        break;
    }
    return std::nullopt;
  }

  // The field the parser is in when it stops at `token` (nullptr: the end).
  std::optional<std::string> field_at(const std::string* token) const {
    if (state_ != kField) return path(current_ ? *current_ : std::string());
    if (token != nullptr && is_word(*token) && !std::isdigit(static_cast<unsigned char>((*token)[0]))) {
      return path(*token);
    }
    return path(std::string());
  }

 private:
  enum State { kField, kName, kValue, kList };

  std::optional<std::string> path(const std::string& name) const {
    std::string out;
    for (const auto& [p, in_list] : stack_) out = p;  // the innermost path holds the outer ones
    if (!name.empty()) out = out.empty() ? name : out + "." + name;
    if (out.empty()) return std::nullopt;
    return out;
  }

  void open(bool in_list) {
    stack_.emplace_back(path(current_ ? *current_ : std::string()).value_or(std::string()), in_list);
    current_.reset();
    state_ = kField;
  }

  std::vector<std::pair<std::string, bool>> stack_;  // (path, opened inside a list)
  State state_ = kField;
  std::optional<std::string> current_;  // the field whose value comes next
};

}  // namespace

std::vector<FieldToken> field_tokens(const std::string& text) {
  std::vector<FieldToken> out;
  Walk walk;
  int line = 1;
  std::size_t line_start = 0, scanned = 0;
  for (const Token& token : lex(text)) {
    std::optional<std::string> path = walk.step(token.text);
    if (!path) continue;
    for (; scanned < token.start; ++scanned) {
      if (text[scanned] == '\n') {
        ++line;
        line_start = scanned + 1;
      }
    }
    out.push_back({*path, line, static_cast<int>(token.start - line_start) + 1});
  }
  return out;
}

int field_line(const std::vector<FieldToken>& tokens, const std::string& path) {
  for (const FieldToken& t : tokens) {
    if (t.path == path) return t.line;
  }
  return 0;
}

std::optional<std::string> field_at(const std::string& text, std::size_t offset) {
  Walk walk;
  for (const Token& token : lex(text)) {
    if (token.start >= offset) return walk.field_at(token.start == offset ? &token.text : nullptr);
    walk.step(token.text);
  }
  return walk.field_at(nullptr);
}

std::size_t token_start(const std::string& text, std::size_t offset) {
  const std::vector<Token> tokens = lex(text);
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    const Token& t = tokens[i];
    if (offset < t.start) return offset;
    if (offset >= t.start + t.text.size()) continue;
    return i > 0 && tokens[i - 1].text == "-" ? tokens[i - 1].start : t.start;
  }
  return tokens.empty() ? offset : tokens.back().start;  // at the end: the last token
}

}  // namespace evokit::io::detail
