// The text side of a config (formats/config.h): the lexer, the walk of the
// fields, the literals both protobuf runtimes read alike, the layout.
#include <algorithm>
#include <cctype>
#include <map>
#include <utility>

#include "evokit/formats/config.h"

namespace evokit::formats {

namespace {

bool is_word_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.'; }

struct Token {
  std::string_view text;
  std::size_t start;
};

// The tokens of protobuf's text format, as far as the walk needs them:
// strings (to the closing quote or the end of the line), numbers with their
// exponent signs (1e-08; the sign of a negative number is a token of its
// own, as protobuf reads it), identifiers, single punctuation characters;
// comments are skipped.
std::vector<Token> lex(std::string_view s) {
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
      while (i < n && (is_word_char(s[i]) || ((s[i] == '-' || s[i] == '+') && (s[i - 1] == 'e' || s[i - 1] == 'E')))) {
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

bool is_word(std::string_view token) { return is_word_char(token[0]); }

bool is_continuation(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

// The characters (UTF-8 sequences) in `s`: what a column counts.
int characters(std::string_view s) {
  return static_cast<int>(std::count_if(s.begin(), s.end(), [](char c) { return !is_continuation(c); }));
}

// The fields of a text-format message, walked as protobuf's parser reads
// it: which field each name token opens and which field a given offset is
// in. One token at a time through step().
class Walk {
 public:
  enum State { kField, kName, kValue, kList };

  // Reads `token`; the path of the field it names, if it names one.
  std::optional<std::string> step(std::string_view token) {
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
          current_ = std::string(token);
          state_ = kName;
          return path(*current_);
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
        } else if (token != "-") {  // a value (a string may be followed by more strings)
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

  State state() const { return state_; }

  // The field the parser is in when it stops at `token` (nullptr: the end).
  std::optional<std::string> field_at(const std::string_view* token) const {
    if (state_ != kField) return path(current_ ? *current_ : std::string());
    if (token != nullptr && is_word(*token) && !std::isdigit(static_cast<unsigned char>((*token)[0]))) {
      return path(std::string(*token));
    }
    return path(std::string());
  }

  // The field whose value the next token is (in kValue or kList).
  std::optional<std::string> current() const { return path(current_ ? *current_ : std::string()); }

 private:
  std::optional<std::string> path(const std::string& name) const {
    std::string out = stack_.empty() ? std::string() : stack_.back().first;  // the innermost holds the outer ones
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

bool equal_lower(std::string_view token, std::string_view lower) {
  if (token.size() != lower.size()) return false;
  for (std::size_t i = 0; i < token.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(token[i])) != lower[i]) return false;
  }
  return true;
}

bool is_hex(char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; }

// The escape in string token `s` at index `i` (a backslash) that the two
// runtimes read differently, as a problem message, or empty.
std::string bad_escape(std::string_view s, std::size_t i) {
  const char e = i + 1 < s.size() ? s[i + 1] : '\0';
  switch (e) {
    case 'a': case 'b': case 'f': case 'n': case 'r': case 't': case 'v':
    case '\\': case '\'': case '"':
      return {};
    case 'x':
      if (i + 2 < s.size() && is_hex(s[i + 2])) return {};
      return "\\x without a hex digit";
    case 'u':
    case 'U': {
      const std::size_t digits = e == 'u' ? 4 : 8;
      for (std::size_t k = 0; k < digits; ++k) {
        if (i + 2 + k >= s.size() || !is_hex(s[i + 2 + k])) {
          return std::string("\\") + e + " without " + std::to_string(digits) + " hex digits";
        }
      }
      return {};
    }
    default:
      break;
  }
  if (e >= '0' && e <= '7') return {};
  std::string shown = std::string("\\") + (e == '\0' ? std::string() : std::string(1, e));
  return "unknown escape " + shown + " in a string (a backslash itself is \\\\)";
}

}  // namespace

std::string ConfigProblem::text(const std::string& source) const {
  std::string where = source;
  if (line > 0) {
    where += ":" + std::to_string(line);
    if (column > 0) where += ":" + std::to_string(column);
  }
  return where + ": " + message;
}

std::vector<FieldToken> field_tokens(std::string_view text) {
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
    out.push_back({*path, line, characters(text.substr(line_start, token.start - line_start)) + 1});
  }
  return out;
}

std::optional<std::string> field_at(std::string_view text, std::size_t offset) {
  Walk walk;
  for (const Token& token : lex(text)) {
    if (token.start >= offset) return walk.field_at(token.start == offset ? &token.text : nullptr);
    walk.step(token.text);
  }
  return walk.field_at(nullptr);
}

std::size_t token_start(std::string_view text, std::size_t offset) {
  const std::vector<Token> tokens = lex(text);
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    const Token& t = tokens[i];
    if (offset < t.start) return offset;
    if (offset >= t.start + t.text.size()) continue;
    return i > 0 && tokens[i - 1].text == "-" ? tokens[i - 1].start : t.start;
  }
  return tokens.empty() ? offset : tokens.back().start;  // at the end: the last token
}

std::size_t offset_of(std::string_view text, int line, int column, bool tab_stops) {
  std::size_t pos = 0;
  for (int l = 1; l < line; ++l) {
    pos = text.find('\n', pos);
    if (pos == std::string_view::npos) return text.size();
    ++pos;
  }
  if (!tab_stops) {  // columns count characters (UTF-8 sequences)
    for (int c = 1; pos < text.size() && c < column;) {
      ++pos;
      if (pos >= text.size() || !is_continuation(text[pos])) ++c;
    }
    return pos;
  }
  for (int c = 0; pos < text.size() && text[pos] != '\n' && c < column - 1; ++pos) {
    c = text[pos] == '\t' ? c + 8 - c % 8 : c + 1;
  }
  return pos;
}

std::pair<int, int> line_column(std::string_view text, std::size_t offset) {
  offset = std::min(offset, text.size());
  const auto line = 1 + static_cast<int>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(offset), '\n'));
  const std::size_t line_start = offset == 0 ? 0 : text.rfind('\n', offset - 1);
  const std::size_t start = line_start == std::string_view::npos || offset == 0 ? 0 : line_start + 1;
  return {line, characters(text.substr(start, offset - start)) + 1};
}

ConfigProblem parse_problem(std::string_view text, std::size_t offset, const std::string& message) {
  ConfigProblem p;
  const std::optional<std::string> field = field_at(text, offset);
  p.field = field.value_or(std::string());
  p.message = field.value_or("at top level") + ": " + message;
  std::tie(p.line, p.column) = line_column(text, offset);
  return p;
}

std::string unknown_enum_value(const std::string& value, const std::vector<std::string>& values) {
  std::string out = "unknown value " + value + ", expected one of ";
  for (std::size_t i = 0; i < values.size(); ++i) out += (i ? ", " : "") + values[i];
  return out;
}

namespace {

bool is_number(std::string_view t) { return !t.empty() && (std::isdigit(static_cast<unsigned char>(t[0])) || t[0] == '.'); }

// What is wrong with the number token `t` for one of the runtimes, or empty.
std::string bad_number(std::string_view t) {
  if (t.find('_') != std::string_view::npos) return std::string(t) + ": underscores in a number (leave them out)";
  if (t.size() > 1 && t[0] == '0' && (t[1] == 'b' || t[1] == 'B')) return std::string(t) + ": a binary number";
  if (t.size() > 1 && t[0] == '0' && t[1] == 'X') return std::string(t) + ": write the hex prefix 0x";
  if (t.size() > 1 && t[0] == '0' && std::isdigit(static_cast<unsigned char>(t[1]))) {
    return std::string(t) + ": a number with a leading 0 (octal in the text format; leave the 0 out)";
  }
  return {};
}

}  // namespace

std::optional<ConfigProblem> check_literals(std::string_view text, const LiteralSchema& schema) {
  Walk walk;
  std::optional<std::string> string_field;  // the field of the string just read (strings concatenate)
  bool prev_minus = false;                    // the token before this value is a minus sign
  std::size_t minus_start = 0;                // where that minus sign is
  for (const Token& token : lex(text)) {
    const std::string_view t = token.text;
    const bool value = walk.state() == Walk::kValue || walk.state() == Walk::kList;
    const bool is_string = t[0] == '"' || t[0] == '\'';
    if (is_string && value) string_field = walk.current();
    if (!is_string) string_field.reset();
    std::string what;
    std::size_t at = token.start;
    if (value) {
      const std::string field = walk.current().value_or(std::string());
      const bool after_minus = token.start + 1 < text.size() && t == "-";
      if (t == "+") {
        what = "a number with a leading + (leave the + out)";
      } else if (after_minus && std::isspace(static_cast<unsigned char>(text[token.start + 1]))) {
        what = "a space after a minus sign (write -1, not - 1)";
      } else if (equal_lower(t, "inff") || equal_lower(t, "infinityf") || equal_lower(t, "nanf")) {
        what = std::string(t) + " is not a float both protobuf runtimes read (write " +
               std::string(t.substr(0, t.size() - 1)) + ")";
      } else if (is_number(t)) {
        what = bad_number(t);
        if (what.empty() && prev_minus && t == "0") what = "-0: write 0 (or -0.0 for a negative zero)";
        if (what.empty() && schema.enums.count(field)) what = std::string(t) + ": an enum value given by its number (write its name)";
      }
      if (what.empty() && t != "-" && t != "[" && t != "]" && t != "," && schema.bools.count(field)) {
        static const char* const kBools[] = {"true", "false", "True", "False", "t", "f", "1", "0"};
        const bool ok = !prev_minus && std::any_of(std::begin(kBools), std::end(kBools), [&](const char* b) { return t == b; });
        if (!ok) what = (prev_minus ? "-" : "") + std::string(t) + ": a bool is true or false";
      }
      if (!what.empty() && prev_minus) at = minus_start;  // the value is the minus sign and what follows
    }
    if (what.empty() && is_string) {  // any string, also one after another
      for (std::size_t i = 1; i < t.size() && what.empty(); ++i) {
        if (t[i] != '\\') continue;
        what = bad_escape(t, i);
        at = token.start + i;
        ++i;  // the escaped character
      }
    }
    if (!what.empty()) {
      ConfigProblem p = parse_problem(text, token.start, what);
      if (is_string && string_field) {
        p.field = *string_field;
        p.message = p.field + ": " + what;
      }
      std::tie(p.line, p.column) = line_column(text, at);
      return p;
    }
    prev_minus = value && t == "-";
    if (prev_minus) minus_start = token.start;
    walk.step(t);
  }
  return std::nullopt;
}

// ---- the layout ---------------------------------------------------------------

const char* const kEvoKitLayout = "EvoKit's layout";
const char* const kParlLayout = "PARL EvoKit's flat layout";

namespace {

// Top-level fields only one layout has (async_es is in both).
const char* layout_of(const std::string& top_level) {
  static const std::map<std::string, const char*> kTopLevel = {
      {"solver", kEvoKitLayout},    {"train", kEvoKitLayout},          {"seed", kParlLayout},
      {"buffer_size", kParlLayout}, {"gaussian_sampling", kParlLayout}, {"optimizer", kParlLayout}};
  const auto it = kTopLevel.find(top_level);
  return it == kTopLevel.end() ? nullptr : it->second;
}

}  // namespace

Layout detect_layout(std::string_view text, std::optional<ConfigProblem>* problem) {
  problem->reset();
  const char* first_layout = nullptr;
  const FieldToken* first = nullptr;
  bool parl = false;
  const std::vector<FieldToken> tokens = field_tokens(text);
  for (const FieldToken& t : tokens) {
    if (t.path.find('.') != std::string::npos) continue;
    const char* layout = layout_of(t.path);
    if (layout == nullptr || layout == first_layout) continue;
    if (first != nullptr) {
      ConfigProblem p;
      p.field = t.path;
      p.line = t.line;
      p.column = t.column;
      p.message = t.path + ": a field of " + layout + " in a config of " + first_layout + " ('" + first->path +
                  "' at line " + std::to_string(first->line) +
                  "); write the config in one layout (docs/migrating_from_parl.md)";
      *problem = p;
      return Layout::kEvoKit;
    }
    first_layout = layout;
    first = &t;
    parl = layout == kParlLayout;
  }
  return parl ? Layout::kParl : Layout::kEvoKit;
}

std::string parl_note(const std::string& source) {
  return source + ": read in " + kParlLayout +
         " (seed, gaussian_sampling, optimizer, async_es at the top level) and mapped onto EvoKit's "
         "solver { ... } (docs/migrating_from_parl.md)";
}

}  // namespace evokit::formats
