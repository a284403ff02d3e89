// Solver state files (solver.pb, message evokit.proto.SolverState): the
// optimizer's state vectors (each num_params little-endian float32 values),
// its step count (= model_iter_id) and the config, as written by Python's
// ESAgent.save_solver.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "evokit/io/evokit.pb.h"
#include "evokit/optimizer.h"

namespace evokit::io {

// Reads and parses a solver.pb. Throws SolverFileError naming the file if
// it is missing, does not parse, or has no num_params.
proto::SolverState read_solver_state(const std::string& path);

// Writes `state` to `path` atomically (temporary file, fsync, rename).
// Throws std::system_error naming the path if it cannot be written.
void write_solver_state(const std::string& path, const proto::SolverState& state);

// The optimizer type a core optimizer is (SGD, MOMENTUM, ADAM).
proto::OptimizerConfig::Type optimizer_type(const Optimizer& optimizer);

// A state holding `optimizer`'s vectors and steps, num_params and type.
// The caller fills config and the fingerprints.
proto::SolverState capture_solver_state(Optimizer& optimizer);

// Restores `optimizer` from `state` after checking everything first (so a
// bad file changes nothing): num_params equals the optimizer's, the
// optimizer type equals the optimizer's, every vector the optimizer needs
// is there, holds num_params values and names a state of the optimizer,
// steps >= 0. Throws SolverFileError starting with `path`.
void restore_solver_state(const proto::SolverState& state, Optimizer& optimizer,
                          const std::string& path);

// num_params floats as little-endian float32 bytes, and back (throws
// std::invalid_argument if the size is not a multiple of 4).
std::string encode_floats(const std::vector<float>& values);
std::vector<float> decode_floats(const std::string& bytes);

}  // namespace evokit::io
