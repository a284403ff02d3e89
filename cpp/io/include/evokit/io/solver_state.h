// Solver state files (solver.pb, message evokit.proto.SolverState) and the
// core's protobuf-free evokit::SolverState (evokit/solver.h).
//
// State version 2 (what this library writes, as Python's
// evokit/solvers/state.py): every entry of the core's state is one typed
// NamedVector (FLOAT32, FLOAT64 or INT64, little-endian), in name order,
// float32 entries first, then float64, then int64; `family` is the
// SamplingConfig.Type name, `steps` the core's model_iter_id, `noise_version`
// the core state's. Nothing here knows a family. State version 1 (files
// without state_version, EvoKit before the one Solver interface) still
// loads for GAUSSIAN_SAMPLING: its optimizer vectors are float32 under bare
// names ("m", "v", "velocity"), read as "optimizer.<name>", with empty
// "draws.counters" (version 1 kept none: the clones count from 0 again); a
// version 1 file with the `cma` or `ga` field set is refused by name.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "evokit/io/evokit.pb.h"
#include "evokit/solver.h"

namespace evokit::io {

// The layout of SolverState.vectors this library writes.
inline constexpr int kStateVersion = 2;

// Reads, verifies and parses a solver.pb (its sha256 trailer,
// state_file.h). Throws SolverFileError naming the file if it is missing,
// its trailer is missing or does not match, it does not parse, or it has no
// num_params.
proto::SolverState read_solver_state(const std::string& path);

// Writes `state` with its sha256 trailer to `path` atomically (temporary
// file, fsync, rename).
// Throws std::system_error naming the path if it cannot be written.
void write_solver_state(const std::string& path, const proto::SolverState& state);

// The core state `message` holds. Throws SolverFileError starting with
// `path` for a layout this library does not read: a state version other
// than 1 and 2, a version 1 CMA / GA state, a version 2 entry without an
// element type this library knows (absent, or a newer EvoKit's), an entry
// of one type named twice, data that is not a whole number of elements (the
// same checks, in the same order and words, as Python's state_from_proto).
// Whether the entries fit a solver is the solver's load() to check.
evokit::SolverState state_from_proto(const proto::SolverState& message, const std::string& path);

// Writes `state` into `out` (state_version 2, family, steps, noise_version,
// the typed vectors); the other fields of `out` (num_params, optimizer,
// config, fingerprints) are the caller's. Existing vectors are replaced.
void state_to_proto(const evokit::SolverState& state, proto::SolverState* out);

// The values of `values` as little-endian bytes, and back: T is float,
// double or std::int64_t (explicitly instantiated). decode_le throws
// std::invalid_argument if the size is not a multiple of sizeof(T).
template <class T>
std::string encode_le(const std::vector<T>& values);
template <class T>
std::vector<T> decode_le(const std::string& bytes);

// float32 shorthands (the parameter vectors of the fingerprints).
inline std::string encode_floats(const std::vector<float>& values) { return encode_le(values); }
inline std::vector<float> decode_floats(const std::string& bytes) {
  return decode_le<float>(bytes);
}

}  // namespace evokit::io
