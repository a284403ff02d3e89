// Solver state files (solver.pb, message evokit.proto.SolverState) and the
// core's protobuf-free evokit::SolverState (evokit/solver.h). The layout of
// the state (version 2 and what version 1 still loads) is the core's:
// evokit/formats/solver_file.h.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "evokit/formats/solver_file.h"
#include "evokit/io/evokit.pb.h"
#include "evokit/solver.h"

namespace evokit::io {

// The layout of SolverState.vectors this library writes (the core's,
// evokit/formats/solver_file.h, which Python's evokit/solvers/state.py
// uses too).
inline constexpr int kStateVersion = formats::kSolverStateVersion;

// Reads, verifies and parses a solver.pb (its sha256 trailer,
// state_file.h). Throws SolverFileError naming the file if it is missing,
// its trailer is missing or does not match, it does not parse, or it has no
// num_params.
proto::SolverState read_solver_state(const std::string& path);

// Writes `state` with its sha256 trailer to `path` atomically (temporary
// file, fsync, rename).
// Throws std::system_error naming the path if it cannot be written.
void write_solver_state(const std::string& path, const proto::SolverState& state);

// The core state `message` holds (formats::decode_solver_state). Throws
// SolverFileError starting with `path` for a layout this library does not
// read. Whether the entries fit a solver is the solver's load() to check.
evokit::SolverState state_from_proto(const proto::SolverState& message, const std::string& path);

// What `message` records about the model and optimizer it belongs to, for
// load_solver's checks (formats::check_state_matches).
formats::StoredStateHeader state_header(const proto::SolverState& message);

// Writes `state` into `out` (state_version 2, family, steps, noise_version,
// the typed vectors); the other fields of `out` (num_params, optimizer,
// config, fingerprints) are the caller's. Existing vectors are replaced.
void state_to_proto(const evokit::SolverState& state, proto::SolverState* out);

// The values of `values` as little-endian bytes, and back (the core's).
using formats::decode_le;
using formats::encode_le;

// float32 shorthands (the parameter vectors of the fingerprints).
inline std::string encode_floats(const std::vector<float>& values) { return encode_le(values); }
inline std::vector<float> decode_floats(const std::string& bytes) {
  return decode_le<float>(bytes);
}

}  // namespace evokit::io
