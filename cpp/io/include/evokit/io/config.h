// EvoKit configs (protobuf text format, message evokit.proto.EvoKitConfig
// in proto/evokit.proto) and their mapping onto the core's solver options.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "evokit/io/evokit.pb.h"
#include "evokit/solver.h"

namespace evokit::io {

// Reads and parses a .prototxt config. Throws ConfigError naming the file,
// and for a parse error the line and column: "c.prototxt:3:21: ...".
proto::EvoKitConfig load_config(const std::string& path);

// Parses text-format `text`; `source` names it in errors.
proto::EvoKitConfig parse_config(const std::string& text, const std::string& source = "<string>");

// The config as text format (what solver.pb stores).
std::string config_to_text(const proto::EvoKitConfig& config);

// Every field of `solver` by its dotted name below `solver` (the core's
// OptionSet, evokit/solver.h), walked by protobuf reflection as Python's
// evokit.solvers.solver_options walks it: repeated fields skipped,
// submessages recursed with "a.b." prefixes, unset fields with their
// defaults; bools, integers (int64), floats (widened to double) and strings
// as they are, enums as their value names, uint64 as the int64 of the same
// bits. Nothing is checked here: see validate_config and make_solver.
OptionSet solver_options(const proto::SolverConfig& solver);

// The core's checks of the solver options (evokit::validate_solver_options;
// with num_params, also those that need the model's size), and
// async_es.max_to_keep >= 1 (what a warehouse keeps). Throws
// ConfigError "<source>: <the core's message>", which starts with the
// option's full name: "c.prototxt: solver.population_size must be >= 1,
// got 0".
void validate_config(const proto::EvoKitConfig& config, const std::string& source,
                     std::optional<std::size_t> num_params = std::nullopt);

}  // namespace evokit::io
