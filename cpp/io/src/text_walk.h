// The fields of a protobuf text-format config, walked as protobuf's parser
// reads them: which field each name opens (for the line of a field a
// validation error names) and which field the parser was in at the position
// of a parse error. The same lexer and walk as evokit/config.py's _TOKEN and
// _Walk, so both languages name the same field.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace evokit::io::detail {

// A field name in the text: its dotted path, 1-based line and column.
struct FieldToken {
  std::string path;
  int line;
  int column;
};

// Every field name of `text` in order of appearance.
std::vector<FieldToken> field_tokens(const std::string& text);

// The first line of each field path, or 0 when `path` is not in the text.
int field_line(const std::vector<FieldToken>& tokens, const std::string& path);

// The dotted path of the field the parser was in at byte `offset`: the field
// whose value it reads, the field the token at `offset` names, or the message
// it is in; nullopt at the top level outside any field.
std::optional<std::string> field_at(const std::string& text, std::size_t offset);

// Where the token at byte `offset` starts (protobuf C++ reports some errors
// inside a token, "0x1g", or after a minus sign, "-inf", where Python's
// parser names the whole token): the start of the token holding `offset`,
// or of the minus sign before it; after the last token (an error at the end
// of the text), the start of the last token; `offset` itself between tokens.
std::size_t token_start(const std::string& text, std::size_t offset);

}  // namespace evokit::io::detail
