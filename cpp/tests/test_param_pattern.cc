// formats::ParamPattern: the one param_pattern dialect. Selections are
// checked against Python's re.fullmatch(pattern, name, re.ASCII) on the same
// pairs (the table's expectations were taken from it; tests/test_param_pattern.py
// compares the two on random patterns), refusals against their messages.
#include <gtest/gtest.h>

#include <string>

#include "evokit/formats/param_pattern.h"
#include "test_util.h"

namespace evokit::formats {
namespace {

using evokit::testing::MessageOf;

struct Case {
  const char* pattern;
  const char* name;
  bool matches;
};

TEST(ParamPattern, SelectsAsPythonFullmatch) {
  const Case cases[] = {
      {".*", "layer0.weight", true},
      {".*", "", true},
      {"layer0\\.weight", "layer0.weight", true},
      {"layer0\\.weight", "layer0xweight", false},
      {"layer0.weight", "layer0xweight", true},
      {"layer0", "layer0.weight", false},  // the whole name
      {"(?i)LAYER0\\.WEIGHT", "layer0.weight", true},
      {"(?i:LAYER)0\\.weight", "layer0.weight", true},
      {"(?i:LAYER)0\\.WEIGHT", "layer0.weight", false},
      {"(?i)[^a]", "A", false},
      {"layer[0-2]\\.(weight|bias)", "layer2.bias", true},
      {"layer[0-2]\\.(weight|bias)", "layer3.bias", false},
      {"layer[^0-2]\\.w", "layer3.w", true},
      {"(?P<kind>w|b)\\d+", "w12", true},
      {"(?:ab)+", "ababab", true},
      {"(?:ab)+", "ababa", false},
      {"a{2,3}", "aaa", true},
      {"a{2,3}", "aaaa", false},
      {"a{,2}b", "b", true},
      {"a{2,}", "aaaaa", true},
      {"a{2}", "aa", true},
      {"a{", "a{", true},
      {"a{}", "a{}", true},
      {"a{x}", "a{x}", true},
      {"\\w+\\s\\d", "ab_9 7", true},
      {"\\W", "\xc3\xa9", true},  // é: not an ASCII word character
      {"\\w", "\xc3\xa9", false},
      {".", "\xc3\xa9", true},  // one character, two bytes
      {"\xc3\xa9", "\xc3\xa9", true},
      {"[\xc3\xa9x]", "\xc3\xa9", true},
      {".", "\n", false},
      {"(?s).", "\n", true},
      {"^ab$", "ab", true},
      {"\\Aab\\Z", "ab", true},
      {"a|", "", true},
      {"|b", "b", true},
      {"", "", true},
      {"()", "", true},
      {"a*?b", "aab", true},
      {"[]a]+", "]a]", true},
      {"[a-]+", "-a", true},
      {"[\\w.]+", "a.b_1", true},
      {"\\x41\\t", "A\t", true},
      {"\\_", "_", true},
      {"(a|ab)(c|bcd)(d*)", "abcd", true},
      // Python's re backtracks for hours on this one; the VM runs every thread in step
      {"(a*)*b", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaac", false},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(ParamPattern(c.pattern).matches(c.name), c.matches) << c.pattern << " ~ " << c.name;
  }
}

TEST(ParamPattern, RefusesWhatIsOutsideTheDialect) {
  const std::pair<const char*, const char*> cases[] = {
      {"([", "unterminated character set at position 1"},
      {"(a", "missing ), unterminated subpattern at position 0"},
      {"a)", "unbalanced parenthesis at position 1"},
      {"*a", "nothing to repeat at position 0"},
      {"^*", "nothing to repeat at position 1"},
      {"a**", "multiple repeat at position 2"},
      {"a{3,1}", "min repeat greater than max repeat at position 2"},
      {"a{1001}", "repeat count 1001 is over 1000 at position 1"},
      {"[z-a]", "bad character range at position 1"},
      {"\\q", "bad escape \\q at position 0"},
      {"\\x4", "incomplete escape \\x at position 0"},
      {"a(?i)b", "global flags not at the start of the expression at position 1"},
      {"(?=a)", "lookaround assertions are not supported at position 0"},
      {"(?<!a)b", "lookaround assertions are not supported at position 0"},
      {"(a)\\1", "backreferences and octal escapes are not supported (\\1) at position 3"},
      {"(?P=n)", "backreferences are not supported at position 0"},
      {"\\bword", "\\b (a word boundary) is not supported at position 0"},
      {"(?x)a", "flag (?x) is not supported (only (?i) and (?s)) at position 2"},
      {"a*+", "possessive quantifiers are not supported at position 2"},
      {"(?#c)", "comments are not supported at position 0"},
      {"[^\xc3\xa9]", "a negated character set with non-ASCII members is not supported at position 0"},
      {"\xff", "not UTF-8 at byte 0"},
  };
  for (const auto& c : cases) {
    const std::string pattern = c.first;
    EXPECT_EQ(MessageOf<std::invalid_argument>([&] { ParamPattern p(pattern); }), c.second) << pattern;
  }
}

TEST(ParamPattern, LongNamesTakeLinearTime) {
  const ParamPattern p("(a|aa)*(a|aa)*b");
  EXPECT_FALSE(p.matches(std::string(20000, 'a')));
  EXPECT_TRUE(p.matches(std::string(20000, 'a') + "b"));
}

}  // namespace
}  // namespace evokit::formats
