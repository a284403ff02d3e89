// The defaults of proto/evokit.proto's messages for the C++ tests, read from
// the .proto itself, so that an option and its default are written once
// (the tests of the core build without protobuf, hence this reader).
//
// It understands what evokit.proto uses: proto2 messages with nested
// messages and enums, `optional` / `repeated` scalar, enum and message
// fields with `[default = ...]`, reserved ranges and names, comments.
// cpp/io's tests check it against protobuf's own reflection
// (ProtoDefaults.MatchesProtobufsReflection).
#pragma once

#include <string>

#include "evokit/solver.h"

namespace evokit::testing {

// Every scalar field below the message `message` (a top-level message's
// name, e.g. "SolverConfig") by dotted name, with its default as the io
// component and Python's solver_options() give it: enums as their value
// names (the first value when no default is written), float fields as the
// double of their float32 value, uint64 as int64 bits; repeated scalar
// fields are left out (no solver option is one). std::runtime_error naming
// the file and line if the .proto holds something this reader does not
// understand.
OptionSet ProtoDefaults(const std::string& message);

}  // namespace evokit::testing
