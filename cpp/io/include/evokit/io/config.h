// EvoKit configs (protobuf text format, message evokit.proto.EvoKitConfig
// in proto/evokit.proto) and their mapping onto the core's options.
#pragma once

#include <cstddef>
#include <string>

#include "evokit/es_agent.h"
#include "evokit/io/evokit.pb.h"

namespace evokit::io {

// Reads and parses a .prototxt config. Throws ConfigError naming the file,
// and for a parse error the line and column: "c.prototxt:3:21: ...".
proto::EvoKitConfig load_config(const std::string& path);

// Parses text-format `text`; `source` names it in errors.
proto::EvoKitConfig parse_config(const std::string& text, const std::string& source = "<string>");

// The config as text format (what solver.pb stores).
std::string config_to_text(const proto::EvoKitConfig& config);

// The core's options for a model of `num_params` parameters. Values are
// copied as they are: the core's constructors validate them (and throw
// std::invalid_argument naming the option). Only what cannot be copied
// faithfully is checked here (a negative cache_size), with
// std::invalid_argument naming the config field.
SolverOptions solver_options(const proto::EvoKitConfig& config, std::size_t num_params);

}  // namespace evokit::io
