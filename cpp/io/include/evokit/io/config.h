// EvoKit configs (protobuf text format, message evokit.proto.EvoKitConfig
// in proto/evokit.proto) and their mapping onto the core's solver options.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>

#include "evokit/io/evokit.pb.h"
#include "evokit/solver.h"

namespace evokit::io {

// Reads, parses and (unless `validate` is false) validates a .prototxt
// config, as Python's evokit.load_config does. Throws ConfigError naming the
// file, and where known the line, column and field: a parse error
// "c.prototxt:3:21: solver.population_size: Expected integer, got: x", a
// value out of range "c.prototxt:3: solver.population_size must be >= 1,
// got 0". `text`, when given, receives the file's text (validate_config
// takes line numbers from it).
//
// A file in PARL EvoKit's flat layout (seed, gaussian_sampling { ... },
// optimizer { type: "Adam" ... }, async_es at the top level: message
// ParlEvoKitConfig in proto/evokit.proto) is mapped onto EvoKitConfig, with
// one note through the config note handler (docs/migrating_from_parl.md);
// a file mixing both layouts, or setting a PARL field with no EvoKit
// meaning, is refused naming the field.
proto::EvoKitConfig load_config(const std::string& path, bool validate = true,
                                std::string* text = nullptr);

// Parses text-format `text` (either layout, as load_config); `source` names
// it in errors. Validates only when asked (`validate`).
proto::EvoKitConfig parse_config(const std::string& text, const std::string& source = "<string>",
                                 bool validate = false);

// Receives the one-line notes about configs (that a file was read in PARL
// EvoKit's layout). The default writes them to standard error; an empty
// handler drops them. Returns the previous handler.
using ConfigNoteHandler = std::function<void(const std::string&)>;
ConfigNoteHandler set_config_note_handler(ConfigNoteHandler handler);

// The config as text format (what solver.pb stores): the text Python's
// evokit.config.config_to_text (protobuf's text_format) gives, byte for
// byte, floats included (490.0, not 490), so that C++ and Python write the
// same solver.pb for the same state.
std::string config_to_text(const proto::EvoKitConfig& config);

// Every field of `solver` by its dotted name below `solver` (the core's
// OptionSet, evokit/solver.h), walked by protobuf reflection as Python's
// evokit.solvers.message_fields walks it: submessages recursed with "a.b."
// prefixes, unset fields with their defaults; bools, integers (int64),
// floats (widened to double) and strings as they are, enums as their value
// names, uint64 as the int64 of the same bits. Nothing is checked here: see
// validate_config and make_solver.
OptionSet solver_options(const proto::SolverConfig& solver);

// The core's checks of a whole config (evokit::formats::validate_config,
// which Python's evokit.config.validate_config calls too):
// solver.param_pattern (formats::ParamPattern's dialect), solver.backend,
// the core's checks of the solver options (with num_params, also those that
// need the model's size), async_es.max_to_keep >= 1 and the train section.
// Throws ConfigError "<source>:<line>: <field> <what>, got <value>", the
// line of the field in `text` (the config's text; without it
// "<source>: solver.population_size must be >= 1, got 0").
void validate_config(const proto::EvoKitConfig& config, const std::string& source,
                     std::optional<std::size_t> num_params = std::nullopt,
                     const std::string& text = std::string());

}  // namespace evokit::io
