// Checksummed state files (proto/evokit.proto, "State files"): solver.pb,
// warehouse.pb, consumed.pb, checkpoint.pb and obs_norm.pb end with field 15
// of their message, the SHA-256 of every byte before it:
//
//   file = body + "\x7a\x20" + sha256(body)   // tag (15 << 3 | 2), length 32
//
// The file stays a valid protobuf (a reader without the field skips it); the
// trailer is checked over the bytes as stored, before parsing. Python's
// evokit/statefile.py and the C++ io library both seal and unseal here.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace evokit::formats {

// Bytes the trailer adds: tag 0x7A, length 0x20, the 32-byte digest.
inline constexpr std::size_t kStateTrailerSize = 34;

// `body` (a serialized message) with its trailer appended.
std::string seal_state(std::string_view body);

// Whether `bytes` end with something shaped as a trailer (tag and length),
// matching or not.
bool has_state_trailer(std::string_view bytes);

// The body of the file `bytes` read from `path`. Throws
// std::invalid_argument, one line starting with `path`, when the trailer is
// missing (an empty file, a file cut short or damaged, or one written before
// state files were checksummed: `evokit seal` adds it to an intact one) or
// does not match (naming both digests).
std::string unseal_state(const std::string& path, std::string_view bytes);

}  // namespace evokit::formats
