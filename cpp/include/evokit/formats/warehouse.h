// A model warehouse's layout (docs/online.md): a directory holding
// warehouse.pb and one model_iter_id-<k> directory per kept iteration, each
// with model.onnx and solver.pb (and consumed.pb after an update). The
// rules about the directory, written once for Python's
// evokit/online/warehouse.py and the C++ io library's io::Warehouse; each
// reads the state files with its own protobuf runtime.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace evokit::formats {

inline constexpr const char* kWarehouseInfoFile = "warehouse.pb";
inline constexpr const char* kWarehouseModelFile = "model.onnx";
inline constexpr const char* kWarehouseSolverFile = "solver.pb";
inline constexpr const char* kWarehouseConsumedFile = "consumed.pb";
inline constexpr const char* kIterationPrefix = "model_iter_id-";

// Every refusal here is a std::invalid_argument of one line starting with
// the path it is about.

// k for a directory name "model_iter_id-<k>" (digits only), or nullopt.
std::optional<std::int64_t> iteration_of(const std::string& name);

// <path>/model_iter_id-<k>
std::string iteration_dir(const std::string& path, std::int64_t k);

// Refuses a `path` that is not a warehouse: missing, not a directory, empty,
// or without warehouse.pb; returns warehouse.pb's path.
std::string check_warehouse_dir(const std::string& path);

// The complete iterations of the warehouse at `path`, ascending, and a line
// for each directory named like an iteration that misses a file (skipped).
struct IterationScan {
  std::vector<std::int64_t> iterations;
  std::vector<std::string> problems;
};
IterationScan scan_iterations(const std::string& path);

// The iterations, refusing a warehouse without a complete one (naming the
// half-written ones).
std::vector<std::int64_t> require_iterations(const std::string& path);

// Iteration k's directory, refusing a k that is not a complete iteration
// (naming the ones kept).
std::string require_iteration(const std::string& path, std::int64_t k);

// Refuses a file (`what`: "warehouse", "solver state") whose keys refer to
// another noise definition than this build's (noise.h kNoiseVersion).
void check_noise_version(const std::string& path, const std::string& what, std::int64_t version);

// Refuses an iteration directory whose solver state is at another iteration.
void check_iteration_matches(const std::string& dir, std::int64_t state_iteration, std::int64_t k);

// Where a new warehouse may be created: `path` must not exist or be an empty
// directory.
void check_new_warehouse_path(const std::string& path);

}  // namespace evokit::formats
