// solver.param_pattern: which float32 initializers of a model are the
// parameters that evolution moves. One dialect, implemented once here and
// used by the Python package (evokit._core.ParamPattern) and by the C++ io
// library alike, so that a config one accepts the other accepts with the
// same selection (docs/formats.md, "param_pattern").
//
// The dialect is a regular expression matched against the whole initializer
// name (like Python's re.fullmatch), without backtracking (time linear in the
// name's length):
//
//   literals, `.` (any character but a newline), `\.` and every other escaped
//   punctuation character, `\t \n \r \f \v \xhh`,
//   classes `[abc] [a-z] [^0-9] [\w.]`, `\d \D \w \W \s \S` (ASCII classes),
//   groups `( )`, `(?: )`, `(?P<name> )`, alternation `|`,
//   quantifiers `* + ? {n} {n,} {,m} {n,m}` (counts up to 1000) and their
//   lazy forms `*? +? ?? {n,m}?` (the same selection: the match is whole),
//   anchors `^ $ \A \Z`, and the flags `(?i)` (ASCII case-insensitive) and
//   `(?s)` (`.` also matches a newline) at the start of the pattern or as
//   `(?i: )` around a part of it.
//
// Anything else (backreferences, lookaround, \b, conditionals, other flags)
// is refused with a message that names it and its position. Names are read
// as UTF-8: `.` and negated classes match one character, a non-ASCII literal
// matches itself.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace evokit::formats {

class ParamPattern {
 public:
  // Throws std::invalid_argument("<what> at position <n>") for a pattern
  // outside the dialect.
  explicit ParamPattern(std::string pattern);

  // Whether the whole of `name` matches.
  bool matches(std::string_view name) const;

  const std::string& pattern() const { return pattern_; }

  // One instruction of the compiled program (public for the compiler in
  // param_pattern.cc only).
  struct Inst {
    enum Op : std::uint8_t { kChar, kSplit, kJump, kBegin, kEnd, kMatch } op;
    std::uint32_t set = 0;  // kChar: index into sets_
    std::uint32_t x = 0, y = 0;  // kSplit: both targets; kJump: x
  };
  // A set of characters: 128 ASCII bits, whether every non-ASCII character
  // is in it, and the non-ASCII characters that are (when not all).
  struct CharSet {
    std::uint64_t ascii[2] = {0, 0};
    bool all_non_ascii = false;
    std::vector<char32_t> non_ascii;
    bool contains(char32_t c) const;
  };

 private:
  std::string pattern_;
  std::vector<Inst> program_;
  std::vector<CharSet> sets_;
};

}  // namespace evokit::formats
