// The rules of an EvoKit config file (proto/evokit.proto, EvoKitConfig, in
// protobuf text format), written once for the Python package (through
// evokit._core) and the C++ io library alike. Each runtime's protobuf turns
// text into a message and the message into an OptionSet (every scalar field
// by dotted name, unset ones with their defaults, a repeated scalar field as
// a list) and back; everything else is decided here:
//
//  - the text walk: which field each name in the text opens, on which line,
//    and which field a parse error's position is in;
//  - the literals both protobuf runtimes read alike (check_literals: a config
//    one runtime would accept and the other refuse is refused by both, here);
//  - the layout (EvoKit's, or PARL EvoKit's flat one, mapped onto EvoKit's);
//  - the checks of the whole config, worded with the file's line and field.
//
// Nothing here depends on protobuf.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "evokit/solver.h"  // OptionSet

namespace evokit::formats {

// What is wrong with a config and where: `message` names the field first
// ("solver.population_size must be >= 1, got 0"); `line` and `column` are
// 1-based, 0 where unknown; `field` is the dotted path (empty when none).
struct ConfigProblem {
  std::string field;
  std::string message;
  int line = 0;
  int column = 0;
  // "source[:line[:column]]: message", the text of every config error.
  std::string text(const std::string& source) const;
};

// ---- the text walk ------------------------------------------------------------

// A field name in the text: its dotted path, 1-based line and column.
struct FieldToken {
  std::string path;
  int line = 0;
  int column = 0;
};

// Every field name of `text` in order of appearance.
std::vector<FieldToken> field_tokens(std::string_view text);

// The dotted path of the field the parser was in at byte `offset`: the field
// whose value it reads, the field the token at `offset` names, or the message
// it is in; nullopt at the top level outside any field.
std::optional<std::string> field_at(std::string_view text, std::size_t offset);

// The start of the token holding byte `offset` (or of the minus sign before
// it); after the last token, the start of the last token; `offset` itself
// between tokens. (Where a protobuf runtime reports an error inside a token.)
std::size_t token_start(std::string_view text, std::size_t offset);

// The byte offset of 1-based (line, column) in `text`, a column counting
// characters (UTF-8 sequences), a tab being one (`tab_stops`: a column
// counting bytes, a tab advancing to the next multiple of 8, as protobuf
// C++ counts).
std::size_t offset_of(std::string_view text, int line, int column, bool tab_stops = false);

// (line, column), 1-based, of byte `offset`, a column counting characters.
std::pair<int, int> line_column(std::string_view text, std::size_t offset);

// The problem for a parse error a protobuf runtime reported at byte `offset`
// with `message` (already without the runtime's own position prefix):
// "field: message", the field being the one the parser was in ("at top
// level" outside any field).
ConfigProblem parse_problem(std::string_view text, std::size_t offset, const std::string& message);

// The message for an enum field given a value it has not: "unknown value X,
// expected one of A, B, C".
std::string unknown_enum_value(const std::string& value, const std::vector<std::string>& values);

// ---- literals -----------------------------------------------------------------

// What the literal check needs of the schema: the dotted paths of the enum
// and bool fields (each runtime lists them from its own generated messages,
// of both layouts' root messages).
struct LiteralSchema {
  std::set<std::string> enums, bools;
};

// The first literal of `text` that the two protobuf runtimes read
// differently, as a problem at its line and column naming the field it is
// in, or nullopt: a float word with an f suffix (inff, nanf), a number with
// a leading + or a space after its minus sign, -0, with a leading 0 (octal), with
// underscores, a 0b or 0X prefix, a string escape outside \a \b \f \n \r
// \t \v \\ \' \" \ooo \xhh \uhhhh \Uhhhhhhhh, an enum value given by
// number, a bool other than true, false, True, False, t, f, 1, 0.
std::optional<ConfigProblem> check_literals(std::string_view text, const LiteralSchema& schema = {});

// ---- the layout ---------------------------------------------------------------

enum class Layout { kEvoKit, kParl };
extern const char* const kEvoKitLayout;  // "EvoKit's layout"
extern const char* const kParlLayout;    // "PARL EvoKit's flat layout"

// kParl when the text's top-level fields are PARL EvoKit's, else kEvoKit; a
// text with top-level fields of both layouts is a problem naming the first
// field of the layout that comes second.
Layout detect_layout(std::string_view text, std::optional<ConfigProblem>* problem);

// The one-line note that `source` was read in PARL EvoKit's layout.
std::string parl_note(const std::string& source);

// PARL field -> the EvoKitConfig field it is mapped onto, in the table's order.
const std::vector<std::pair<std::string, std::string>>& parl_fields();
// PARL fields with no EvoKit meaning, refused when set (async_es.model_iter_id
// only when not 0), each with the reason.
const std::vector<std::pair<std::string, std::string>>& parl_refused();

// The PARL field that the EvoKitConfig field `evokit_field` is mapped from.
std::optional<std::string> parl_field(const std::string& evokit_field);

// The EvoKitConfig fields (dotted names, enums by value name) that the
// ParlEvoKitConfig `parl` (its OptionSet; `present`: the fields the file
// sets, a repeated one when non-empty) means, or the problem that refuses
// it (at its line in `text`).
OptionSet parl_to_evokit(const OptionSet& parl, const std::set<std::string>& present,
                         std::string_view text, std::optional<ConfigProblem>* problem);

// ---- the checks ---------------------------------------------------------------

// solver.backend's values and train.activation's (the MLP `evokit train` builds).
const std::vector<std::string>& backends();
const std::vector<std::string>& activations();
// Bounds of train.eval_episodes / episodes_per_sample and of train.num_workers.
constexpr std::int64_t kMaxEpisodes = 1000000;
constexpr std::int64_t kMaxWorkers = 4096;

// The first bad value of the EvoKitConfig `config` (its OptionSet, below the
// root: "solver.population_size", "train.hidden_sizes", ...), or nullopt.
// With `num_params` the solver's checks that need the parameter count run
// too. The problem's line is the field's in `text` (or of the closest
// enclosing message the text has; 0 without text); when `text` is in PARL's
// layout, the field is named as PARL names it, with EvoKit's name after.
std::optional<ConfigProblem> validate_config(const OptionSet& config, std::optional<std::size_t> num_params,
                                             std::string_view text);

// The problem for `field` (an EvoKitConfig dotted path) with `message`, at
// its line in `text` as validate_config places it.
ConfigProblem config_problem(const std::string& field, const std::string& message, std::string_view text);

// Python's formats the messages use: f"{v:g}", f"{v:,}", repr(str).
std::string format_g(double value);
std::string format_thousands(std::int64_t value);
std::string python_repr(const std::string& text);

}  // namespace evokit::formats
