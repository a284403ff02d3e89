// Checksummed state files (proto/evokit.proto, "State files"): solver.pb,
// warehouse.pb and the others end with field 15 of their message, the
// SHA-256 of every byte before it: the core's trailer (evokit/formats/
// state_file.h), which Python's evokit/statefile.py seals and checks too.
#pragma once

#include <cstddef>
#include <string>

#include <google/protobuf/message_lite.h>

#include "evokit/formats/state_file.h"

namespace evokit::io {

// Bytes the trailer adds: tag 0x7A, length 0x20, the 32-byte digest.
inline constexpr std::size_t kStateTrailerSize = formats::kStateTrailerSize;

// `body` (a serialized message) with its trailer appended.
std::string seal_state(const std::string& body);

// The body of the file `bytes` read from `path`. On a missing or wrong
// trailer returns false and sets `error` to one line starting with `path`
// (Python's message, word for word).
bool unseal_state(const std::string& path, const std::string& bytes, std::string& body,
                  std::string& error);

// Serializes `message`, appends its trailer and writes it atomically.
// Throws std::system_error naming the path.
void write_state_file(const std::string& path, const google::protobuf::MessageLite& message);

// Reads the checksummed file at `path` into `message`. Throws E (one line
// starting with the path) if it cannot be read, its trailer is missing or
// does not match, or its body does not parse; `what` names the message in
// the last case ("solver state file").
template <class E>
void read_state_file(const std::string& path, google::protobuf::MessageLite& message,
                     const std::string& what);

}  // namespace evokit::io
