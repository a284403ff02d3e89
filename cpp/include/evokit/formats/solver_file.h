// solver.pb's layout (message evokit.proto.SolverState) for the core's
// protobuf-free evokit::SolverState (evokit/solver.h), written once for
// Python's evokit/solvers/state.py and the C++ io library: each copies the
// message's fields into a StoredSolverState and back, this decides.
//
// State version 2 (what EvoKit writes): every entry of the core's state is
// one typed NamedVector (FLOAT32, FLOAT64 or INT64, little-endian), in name
// order, float32 entries first, then float64, then int64; `family` is the
// SamplingConfig.Type name, `steps` the core's model_iter_id, `noise_version`
// the core state's. Nothing here knows a family. State version 1 (files
// without state_version, EvoKit before the one Solver interface) still loads
// for GAUSSIAN_SAMPLING: its optimizer vectors are float32 under bare names
// ("m", "v", "velocity"), read as "optimizer.<name>", with empty
// "draws.counters" (version 1 kept none: the clones count from 0 again); a
// version 1 file with the `cma` or `ga` field set is refused by name.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "evokit/solver.h"

namespace evokit::formats {

// The layout of SolverState.vectors EvoKit writes.
inline constexpr int kSolverStateVersion = 2;

// NamedVector.ElementType's values.
enum ElementType : int { kFloat32 = 0, kFloat64 = 1, kInt64 = 2 };

struct StoredVector {
  std::string name;
  std::optional<int> type;  // absent: no element type the reader's schema knows
  std::string data;
};

// The fields of a SolverState message this layout reads and writes.
struct StoredSolverState {
  int state_version = 1;  // absent in the file: 1
  std::string family;
  std::int64_t steps = 0;
  std::int64_t noise_version = 2;
  bool has_cma = false, has_ga = false;  // version 1's strategy layouts
  std::vector<StoredVector> vectors;
};

// The core state `stored` holds. Throws std::invalid_argument starting with
// `path` for a layout EvoKit does not read: a state version other than 1 and
// 2, a version 1 CMA / GA state, a version 2 entry without an element type
// EvoKit knows, an entry of one type named twice, data that is not a whole
// number of elements. Whether the entries fit a solver is the solver's
// load() to check.
SolverState decode_solver_state(const StoredSolverState& stored, const std::string& path);

// `state` as version 2 stores it.
StoredSolverState encode_solver_state(const SolverState& state);

// ---- load_solver's checks ---------------------------------------------------------

// What a solver.pb records about the model and optimizer it belongs to.
struct StoredStateHeader {
  bool has_num_params = false;
  std::int64_t num_params = 0;
  std::int64_t fingerprint_version = 1;  // absent in the file: 1
  std::string model_fingerprint;          // hex
  std::string params_fingerprint;         // hex, empty when not recorded
  std::string optimizer;                  // OptimizerConfig.Type's name
};

// The model a state is loaded onto: its fingerprint of a given version
// (`versions`: the ones this runtime computes), its parameters (the centre).
struct ModelForState {
  std::string source;
  std::int64_t num_params = 0;
  std::vector<int> versions;
  std::function<std::string(int)> fingerprint;
  const float* params = nullptr;
  std::size_t size = 0;
};

// load_solver's checks, in order: a state file (num_params), for a model of
// this size, of a fingerprint version this runtime verifies, of this graph,
// with `exact_model` of these parameter values (where the state records
// them), for the optimizer the config asks for (`optimizer`). Throws
// std::invalid_argument starting with `path` (or the model's source).
void check_state_matches(const StoredStateHeader& state, const ModelForState& model, const std::string& optimizer,
                         bool exact_model, const std::string& path);

// Refuses a model whose parameters are not the ones the state at `path`
// recorded (`recorded`: its params_fingerprint; nothing is checked when
// empty).
void check_params_fingerprint(const std::string& recorded, const std::string& model_fingerprint,
                              const float* params, std::size_t size, const std::string& source,
                              const std::string& path);

// The values of `values` as little-endian bytes, and back: T is float,
// double or std::int64_t. decode_le throws std::invalid_argument if the size
// is not a multiple of sizeof(T).
template <class T>
std::string encode_le(const std::vector<T>& values);
template <class T>
std::vector<T> decode_le(const std::string& bytes);

}  // namespace evokit::formats
