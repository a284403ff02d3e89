// A protobuf message as the core reads one (formats/config.h, solver.h's
// OptionSet): every scalar field by dotted name, unset ones with their
// defaults, enums by value name, uint64 as int64 bits, a repeated integer
// field as a list; and the inverse. Python's evokit/solvers/options.py
// (message_fields, set_fields) is the same walk over Python's messages.
#pragma once

#include <google/protobuf/message.h>

#include <set>
#include <string>

#include "evokit/solver.h"

namespace evokit::io::detail {

// `present` (when given) collects the fields the message sets (a repeated
// one when not empty, a message field when it is present).
OptionSet message_fields(const google::protobuf::Message& message, std::set<std::string>* present);

// Sets the scalar fields named in `fields` (enums by value name).
void set_fields(google::protobuf::Message& message, const OptionSet& fields);

}  // namespace evokit::io::detail
