// The param_pattern dialect (param_pattern.h): a recursive-descent parser
// into a small tree, compiled into a Thompson program and run as a Pike VM
// (every thread in step, so time is linear in the name's length).
#include "evokit/formats/param_pattern.h"

#include <algorithm>
#include <cctype>
#include <memory>
#include <stdexcept>

namespace evokit::formats {
namespace {

constexpr int kMaxCount = 1000;           // the largest {n,m} count
constexpr std::size_t kMaxProgram = 100000;  // instructions after expanding counts

using CharSet = ParamPattern::CharSet;
using Inst = ParamPattern::Inst;

// UTF-8 into code points; a byte that starts no valid sequence is kept as
// 0xDC00 + byte (like Python's surrogateescape), so it matches only itself.
std::u32string decode(std::string_view s, bool strict, std::size_t* bad) {
  std::u32string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size();) {
    const auto b = static_cast<unsigned char>(s[i]);
    int len = b < 0x80 ? 1 : (b >> 5) == 6 ? 2 : (b >> 4) == 14 ? 3 : (b >> 3) == 30 ? 4 : 0;
    char32_t c = len == 1 ? b : len == 2 ? (b & 0x1F) : len == 3 ? (b & 0x0F) : (b & 0x07);
    bool ok = len > 0 && i + len <= s.size();
    for (int k = 1; ok && k < len; ++k) {
      const auto t = static_cast<unsigned char>(s[i + k]);
      ok = (t >> 6) == 2;
      c = (c << 6) | (t & 0x3F);
    }
    if (ok && len > 1) {
      const char32_t min = len == 2 ? 0x80 : len == 3 ? 0x800 : 0x10000;
      ok = c >= min && c <= 0x10FFFF && !(c >= 0xD800 && c <= 0xDFFF);
    }
    if (!ok) {
      if (strict) {
        *bad = i;
        return out;
      }
      out.push_back(0xDC00 + b);
      ++i;
      continue;
    }
    out.push_back(c);
    i += static_cast<std::size_t>(len);
  }
  return out;
}

void add(CharSet& set, char32_t c) {
  if (c < 128) {
    set.ascii[c >> 6] |= std::uint64_t{1} << (c & 63);
  } else if (std::find(set.non_ascii.begin(), set.non_ascii.end(), c) == set.non_ascii.end()) {
    set.non_ascii.push_back(c);
  }
}

void add_range(CharSet& set, char32_t lo, char32_t hi) {
  for (char32_t c = lo; c <= hi && c < 128; ++c) add(set, c);
  for (char32_t c = std::max<char32_t>(lo, 128); c <= hi; ++c) add(set, c);
}

bool is_digit(char32_t c) { return c >= '0' && c <= '9'; }
bool is_word(char32_t c) {
  return is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
bool is_space(char32_t c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

// \d \w \s into `set` (negated: \D \W \S, which hold every non-ASCII character).
void add_class(CharSet& set, char32_t letter) {
  const char32_t lower = letter | 0x20;
  const bool negate = letter != lower;
  for (char32_t c = 0; c < 128; ++c) {
    const bool in = lower == 'd' ? is_digit(c) : lower == 'w' ? is_word(c) : is_space(c);
    if (in != negate) add(set, c);
  }
  if (negate) set.all_non_ascii = true;
}

// The complement of `set`, which lists no single non-ASCII character (the
// parser refuses a negated class that does: this representation cannot hold
// "every non-ASCII character but these").
CharSet negated(const CharSet& set) {
  CharSet out;
  out.ascii[0] = ~set.ascii[0];
  out.ascii[1] = ~set.ascii[1];
  out.all_non_ascii = !set.all_non_ascii;
  return out;
}

void fold_case(CharSet& set) {
  for (char32_t c = 'a'; c <= 'z'; ++c) {
    const char32_t u = c - 32;
    if (set.contains(c) || set.contains(u)) {
      add(set, c);
      add(set, u);
    }
  }
}

struct Node {
  enum Kind { kSet, kConcat, kAlt, kRepeat, kBegin, kEnd, kEndOrNewline } kind;
  std::uint32_t set = 0;
  std::vector<std::unique_ptr<Node>> children;
  int min = 0, max = 0;  // kRepeat; max < 0: unbounded
};

struct Flags {
  bool icase = false, dotall = false;
};

class Parser {
 public:
  Parser(const std::u32string& p, std::vector<CharSet>& sets) : p_(p), sets_(sets) {}

  std::unique_ptr<Node> parse() {
    Flags flags;
    // global flags: (?i) (?s) (?is) ... at the very start
    while (at("(?") && pos_ + 2 < p_.size() && is_flag(p_[pos_ + 2])) {
      std::size_t j = pos_ + 2;
      Flags f = flags;
      for (; j < p_.size() && is_flag(p_[j]); ++j) set_flag(f, p_[j], j);
      if (j < p_.size() && p_[j] == ')') {
        flags = f;
        pos_ = j + 1;
      } else {
        break;  // (?i:...) : a scoped group, parsed below
      }
    }
    auto node = alternation(flags);
    if (pos_ < p_.size()) fail("unbalanced parenthesis", pos_);  // only ')' stops an alternation
    return node;
  }

 private:
  [[noreturn]] void fail(const std::string& what, std::size_t at) const {
    throw std::invalid_argument(what + " at position " + std::to_string(at));
  }
  bool at(const char* s) const {
    std::size_t j = pos_;
    for (; *s; ++s, ++j) {
      if (j >= p_.size() || p_[j] != static_cast<char32_t>(*s)) return false;
    }
    return true;
  }
  static bool is_flag(char32_t c) { return c == 'i' || c == 's' || c == 'a' || c == 'm' || c == 'x' || c == 'u' || c == 'L'; }
  void set_flag(Flags& f, char32_t c, std::size_t at) const {
    if (c == 'i') {
      f.icase = true;
    } else if (c == 's') {
      f.dotall = true;
    } else if (c == 'a' || c == 'u') {
      // ASCII classes are the dialect's only ones; (?a) says so, (?u) asks otherwise
      if (c == 'u') fail("flag (?u) is not supported (\\d \\w \\s are ASCII classes)", at);
    } else {
      fail(std::string("flag (?") + static_cast<char>(c) + ") is not supported (only (?i) and (?s))", at);
    }
  }

  std::unique_ptr<Node> make(Node::Kind kind) {
    auto n = std::make_unique<Node>();
    n->kind = kind;
    return n;
  }
  std::unique_ptr<Node> make_set(CharSet set, const Flags& flags) {
    if (flags.icase) fold_case(set);
    sets_.push_back(std::move(set));
    auto n = make(Node::kSet);
    n->set = static_cast<std::uint32_t>(sets_.size() - 1);
    return n;
  }

  std::unique_ptr<Node> alternation(const Flags& flags) {
    auto first = concatenation(flags);
    if (pos_ >= p_.size() || p_[pos_] != '|') return first;
    auto alt = make(Node::kAlt);
    alt->children.push_back(std::move(first));
    while (pos_ < p_.size() && p_[pos_] == '|') {
      ++pos_;
      alt->children.push_back(concatenation(flags));
    }
    return alt;
  }

  std::unique_ptr<Node> concatenation(const Flags& flags) {
    auto cat = make(Node::kConcat);
    while (pos_ < p_.size() && p_[pos_] != '|' && p_[pos_] != ')') {
      auto atom = this->atom(flags);
      // quantifiers
      int min = 0, max = 0;
      const std::size_t qpos = pos_;
      if (quantifier(&min, &max)) {
        if (atom->kind == Node::kBegin || atom->kind == Node::kEnd || atom->kind == Node::kEndOrNewline) {
          fail("nothing to repeat", qpos);
        }
        if (pos_ < p_.size() && p_[pos_] == '?') ++pos_;  // lazy: the same whole-name selection
        if (pos_ < p_.size() && p_[pos_] == '+') fail("possessive quantifiers are not supported", pos_);
        int m2, x2;
        const std::size_t again = pos_;
        if (quantifier(&m2, &x2)) fail("multiple repeat", again);
        auto rep = make(Node::kRepeat);
        rep->min = min;
        rep->max = max;
        rep->children.push_back(std::move(atom));
        atom = std::move(rep);
      }
      cat->children.push_back(std::move(atom));
    }
    return cat;
  }

  // * + ? {n} {n,} {,m} {n,m} {,}: true and the counts; false (and pos_
  // unmoved) when the text is no quantifier (`{` then is a literal).
  bool quantifier(int* min, int* max) {
    if (pos_ >= p_.size()) return false;
    const char32_t c = p_[pos_];
    if (c == '*' || c == '+' || c == '?') {
      *min = c == '+' ? 1 : 0;
      *max = c == '?' ? 1 : -1;
      ++pos_;
      return true;
    }
    if (c != '{') return false;
    std::size_t j = pos_ + 1;
    if (j < p_.size() && p_[j] == '}') return false;
    std::string lo, hi;
    while (j < p_.size() && is_digit(p_[j])) lo += static_cast<char>(p_[j++]);
    if (j < p_.size() && p_[j] == ',') {
      ++j;
      while (j < p_.size() && is_digit(p_[j])) hi += static_cast<char>(p_[j++]);
    } else {
      hi = lo;
    }
    if (j >= p_.size() || p_[j] != '}') return false;
    auto count = [&](const std::string& digits) {
      if (digits.size() > 4 || std::stoi(digits) > kMaxCount) {
        fail("repeat count " + digits + " is over " + std::to_string(kMaxCount), pos_);
      }
      return std::stoi(digits);
    };
    *min = lo.empty() ? 0 : count(lo);
    *max = hi.empty() ? -1 : count(hi);
    if (*max >= 0 && *max < *min) fail("min repeat greater than max repeat", pos_ + 1);
    pos_ = j + 1;
    return true;
  }

  // One atom: a character set, an anchor or a group.
  std::unique_ptr<Node> atom(const Flags& flags) {
    const std::size_t start = pos_;
    const char32_t c = p_[pos_++];
    switch (c) {
      case '*':
      case '+':
      case '?':
        fail("nothing to repeat", start);
      case '{': {
        --pos_;
        int a, b;
        if (quantifier(&a, &b)) fail("nothing to repeat", start);
        ++pos_;
        CharSet s;
        add(s, '{');
        return make_set(std::move(s), flags);
      }
      case '.': {
        CharSet s;
        for (char32_t k = 0; k < 128; ++k) {
          if (k != '\n' || flags.dotall) add(s, k);
        }
        s.all_non_ascii = true;
        return make_set(std::move(s), Flags{});
      }
      case '^':
        return make(Node::kBegin);
      case '$':
        return make(Node::kEndOrNewline);
      case '[':
        return make_set(char_class(start, flags), flags);
      case '(':
        return group(start, flags);
      case '\\': {
        if (pos_ >= p_.size()) fail("bad escape (end of pattern)", start);
        const char32_t e = p_[pos_++];
        if (e == 'A') return make(Node::kBegin);
        if (e == 'Z') return make(Node::kEnd);
        CharSet s;
        escape(e, start, s, false);
        return make_set(std::move(s), flags);
      }
      default: {
        CharSet s;
        add(s, c);
        return make_set(std::move(s), flags);
      }
    }
  }

  // The escape `\e` (its backslash at `start`) into `set`; in_class: inside [ ].
  void escape(char32_t e, std::size_t start, CharSet& set, bool in_class) {
    switch (e) {
      case 'd': case 'D': case 'w': case 'W': case 's': case 'S':
        add_class(set, e);
        return;
      case 't': add(set, '\t'); return;
      case 'n': add(set, '\n'); return;
      case 'r': add(set, '\r'); return;
      case 'f': add(set, '\f'); return;
      case 'v': add(set, '\v'); return;
      case 'a': add(set, '\a'); return;
      case 'x': {
        char32_t v = 0;
        for (int k = 0; k < 2; ++k) {
          if (pos_ >= p_.size() || !std::isxdigit(static_cast<int>(p_[pos_] < 128 ? p_[pos_] : 0))) {
            fail("incomplete escape \\x", start);
          }
          const char32_t h = p_[pos_++];
          v = v * 16 + (is_digit(h) ? h - '0' : (h | 0x20) - 'a' + 10);
        }
        add(set, v);
        return;
      }
      case 'b':
        if (in_class) {
          add(set, '\b');
          return;
        }
        fail("\\b (a word boundary) is not supported", start);
      case 'B':
        fail("\\B (not a word boundary) is not supported", start);
      default:
        break;
    }
    if (is_digit(e)) {
      fail("backreferences and octal escapes are not supported (\\" + std::string(1, static_cast<char>(e)) + ")",
           start);
    }
    if (e < 128 && is_word(e) && e != '_') fail(std::string("bad escape \\") + static_cast<char>(e), start);
    add(set, e);  // escaped punctuation (or a non-ASCII character): itself
  }

  CharSet char_class(std::size_t start, const Flags& flags) {
    CharSet set;
    bool negate = false;
    if (pos_ < p_.size() && p_[pos_] == '^') {
      negate = true;
      ++pos_;
    }
    bool first = true;
    for (;;) {
      if (pos_ >= p_.size()) fail("unterminated character set", start);
      const std::size_t item = pos_;
      char32_t c = p_[pos_++];
      if (c == ']' && !first) break;
      first = false;
      char32_t lo;
      if (c == '\\') {
        if (pos_ >= p_.size()) fail("unterminated character set", start);
        const char32_t e = p_[pos_++];
        CharSet one;
        escape(e, item, one, true);
        const bool single = !one.all_non_ascii && (one.non_ascii.size() +
                            static_cast<std::size_t>(__builtin_popcountll(one.ascii[0]) +
                                                     __builtin_popcountll(one.ascii[1]))) == 1;
        if (!single || e == 'd' || e == 'w' || e == 's' || e == 'D' || e == 'W' || e == 'S') {
          if (pos_ + 1 < p_.size() && p_[pos_] == '-' && p_[pos_ + 1] != ']') {
            fail("bad character range", item);
          }
          for (int w = 0; w < 2; ++w) set.ascii[w] |= one.ascii[w];
          set.all_non_ascii = set.all_non_ascii || one.all_non_ascii;
          for (char32_t u : one.non_ascii) add(set, u);
          continue;
        }
        lo = one.non_ascii.empty() ? static_cast<char32_t>(one.ascii[0] ? __builtin_ctzll(one.ascii[0])
                                                                         : 64 + __builtin_ctzll(one.ascii[1]))
                                   : one.non_ascii[0];
      } else {
        lo = c;
      }
      if (pos_ + 1 < p_.size() && p_[pos_] == '-' && p_[pos_ + 1] != ']') {
        ++pos_;
        char32_t hi = p_[pos_++];
        if (hi == '\\') {
          if (pos_ >= p_.size()) fail("unterminated character set", start);
          CharSet one;
          const char32_t e = p_[pos_++];
          escape(e, item, one, true);
          if (one.all_non_ascii || e == 'd' || e == 'w' || e == 's' || e == 'D' || e == 'W' || e == 'S') {
            fail("bad character range", item);
          }
          hi = one.non_ascii.empty() ? static_cast<char32_t>(one.ascii[0] ? __builtin_ctzll(one.ascii[0])
                                                                          : 64 + __builtin_ctzll(one.ascii[1]))
                                     : one.non_ascii[0];
        }
        if (hi < lo) fail("bad character range", item);
        if (hi >= 128 && hi - std::max<char32_t>(lo, 128) > 0xFFFF) {
          fail("character range too large", item);
        }
        add_range(set, lo, hi);
      } else {
        add(set, lo);
      }
    }
    if (flags.icase) fold_case(set);  // before negating: (?i)[^a] matches neither a nor A
    if (negate) {
      if (!set.non_ascii.empty()) {
        fail("a negated character set with non-ASCII members is not supported", start);
      }
      return negated(set);
    }
    return set;
  }

  std::unique_ptr<Node> group(std::size_t start, const Flags& outer) {
    Flags flags = outer;
    if (pos_ < p_.size() && p_[pos_] == '?') {
      ++pos_;
      const char32_t k = pos_ < p_.size() ? p_[pos_] : 0;
      if (k == ':') {
        ++pos_;
      } else if (k == 'P' && pos_ + 1 < p_.size() && p_[pos_ + 1] == '<') {
        pos_ += 2;
        name(start);
      } else if (k == '=' || k == '!' || k == '<') {
        fail("lookaround assertions are not supported", start);
      } else if (k == 'P' && pos_ + 1 < p_.size() && p_[pos_ + 1] == '=') {
        fail("backreferences are not supported", start);
      } else if (k == '(') {
        fail("conditional groups are not supported", start);
      } else if (k == '#') {
        fail("comments are not supported", start);
      } else if (k == '>') {
        fail("atomic groups are not supported", start);
      } else if (is_flag(k) || k == '-') {
        while (pos_ < p_.size() && is_flag(p_[pos_])) {
          set_flag(flags, p_[pos_], pos_);
          ++pos_;
        }
        if (pos_ < p_.size() && p_[pos_] == ')') fail("global flags not at the start of the expression", start);
        if (pos_ >= p_.size() || p_[pos_] != ':') fail("unknown flag or missing : in (?flags:...)", pos_);
        ++pos_;
      } else {
        fail("unknown extension after (?", start);
      }
    }
    auto inner = alternation(flags);
    if (pos_ >= p_.size() || p_[pos_] != ')') fail("missing ), unterminated subpattern", start);
    ++pos_;
    return inner;
  }

  void name(std::size_t start) {
    const std::size_t begin = pos_;
    while (pos_ < p_.size() && p_[pos_] != '>') {
      const char32_t c = p_[pos_];
      if (!(is_word(c) || c >= 128) || (pos_ == begin && is_digit(c))) fail("bad character in group name", pos_);
      ++pos_;
    }
    if (pos_ >= p_.size()) fail("missing >, unterminated name", start);
    if (pos_ == begin) fail("missing group name", start);
    const std::u32string name = p_.substr(begin, pos_ - begin);
    if (std::find(names_.begin(), names_.end(), name) != names_.end()) {
      fail("redefinition of a group name", begin);
    }
    names_.push_back(name);
    ++pos_;
  }

  const std::u32string& p_;
  std::vector<CharSet>& sets_;
  std::size_t pos_ = 0;
  std::vector<std::u32string> names_;  // of the named groups so far
};

class Compiler {
 public:
  explicit Compiler(std::vector<Inst>& program) : prog_(program) {}

  void emit(const Node& n) {
    if (prog_.size() > kMaxProgram) {
      throw std::invalid_argument("pattern too large (over " + std::to_string(kMaxProgram) +
                                  " instructions after expanding counts) at position 0");
    }
    switch (n.kind) {
      case Node::kSet:
        push({Inst::kChar, n.set, 0, 0});
        return;
      case Node::kBegin:
        push({Inst::kBegin, 0, 0, 0});
        return;
      case Node::kEnd:
        push({Inst::kEnd, 0, 0, 0});
        return;
      case Node::kEndOrNewline:
        push({Inst::kEnd, 1, 0, 0});  // set = 1: also before a final newline, like Python's $
        return;
      case Node::kConcat:
        for (const auto& c : n.children) emit(*c);
        return;
      case Node::kAlt: {
        std::vector<std::size_t> jumps;
        for (std::size_t i = 0; i < n.children.size(); ++i) {
          if (i + 1 < n.children.size()) {
            const std::size_t split = push({Inst::kSplit, 0, 0, 0});
            prog_[split].x = here();
            emit(*n.children[i]);
            jumps.push_back(push({Inst::kJump, 0, 0, 0}));
            prog_[split].y = here();
          } else {
            emit(*n.children[i]);
          }
        }
        for (std::size_t j : jumps) prog_[j].x = here();
        return;
      }
      case Node::kRepeat: {
        const Node& body = *n.children[0];
        for (int i = 0; i < n.min; ++i) emit(body);
        if (n.max < 0) {
          const std::size_t split = push({Inst::kSplit, 0, 0, 0});
          prog_[split].x = here();
          emit(body);
          push({Inst::kJump, 0, static_cast<std::uint32_t>(split), 0});
          prog_[split].y = here();
          return;
        }
        std::vector<std::size_t> splits;
        for (int i = n.min; i < n.max; ++i) {
          const std::size_t split = push({Inst::kSplit, 0, 0, 0});
          prog_[split].x = here();
          splits.push_back(split);
          emit(body);
        }
        for (std::size_t s : splits) prog_[s].y = here();
        return;
      }
    }
  }

  std::size_t push(Inst inst) {
    prog_.push_back(inst);
    return prog_.size() - 1;
  }
  std::uint32_t here() const { return static_cast<std::uint32_t>(prog_.size()); }

 private:
  std::vector<Inst>& prog_;
};

}  // namespace

bool ParamPattern::CharSet::contains(char32_t c) const {
  if (c < 128) return (ascii[c >> 6] >> (c & 63)) & 1;
  if (all_non_ascii) return true;
  return std::find(non_ascii.begin(), non_ascii.end(), c) != non_ascii.end();
}

ParamPattern::ParamPattern(std::string pattern) : pattern_(std::move(pattern)) {
  std::size_t bad = std::string::npos;
  const std::u32string p = decode(pattern_, true, &bad);
  if (bad != std::string::npos) {
    throw std::invalid_argument("not UTF-8 at byte " + std::to_string(bad));
  }
  Parser parser(p, sets_);
  const auto tree = parser.parse();
  Compiler compiler(program_);
  compiler.emit(*tree);
  compiler.push({Inst::kMatch, 0, 0, 0});
}

bool ParamPattern::matches(std::string_view name) const {
  std::size_t unused;
  const std::u32string s = decode(name, false, &unused);
  const std::size_t n = s.size();
  std::vector<std::uint32_t> current, next;
  std::vector<std::size_t> mark(program_.size(), static_cast<std::size_t>(-1));
  // follow the non-consuming instructions from `pc` at position `pos`
  std::vector<std::uint32_t> stack;
  auto add_thread = [&](std::vector<std::uint32_t>& list, std::uint32_t start, std::size_t pos) {
    stack.assign(1, start);
    while (!stack.empty()) {
      const std::uint32_t pc = stack.back();
      stack.pop_back();
      if (mark[pc] == pos) continue;
      mark[pc] = pos;
      const Inst& in = program_[pc];
      switch (in.op) {
        case Inst::kJump:
          stack.push_back(in.x);
          break;
        case Inst::kSplit:
          stack.push_back(in.y);
          stack.push_back(in.x);
          break;
        case Inst::kBegin:
          if (pos == 0) stack.push_back(pc + 1);
          break;
        case Inst::kEnd:
          if (pos == n || (in.set == 1 && pos + 1 == n && s[pos] == '\n')) stack.push_back(pc + 1);
          break;
        default:
          list.push_back(pc);
      }
    }
  };
  add_thread(current, 0, 0);
  for (std::size_t pos = 0; pos < n && !current.empty(); ++pos) {
    next.clear();
    for (std::uint32_t pc : current) {
      const Inst& in = program_[pc];
      if (in.op == Inst::kChar && sets_[in.set].contains(s[pos])) add_thread(next, pc + 1, pos + 1);
    }
    current.swap(next);
    if (pos + 1 == n) {
      for (std::uint32_t pc : current) {
        if (program_[pc].op == Inst::kMatch) return true;
      }
      return false;
    }
  }
  if (n == 0) {
    for (std::uint32_t pc : current) {
      if (program_[pc].op == Inst::kMatch) return true;
    }
  }
  return false;
}

}  // namespace evokit::formats
