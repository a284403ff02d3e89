// The model warehouse of the online-sampling / offline-update pipeline, for
// C++ samplers. Layout (written by Python's `evokit init-solver` and
// `evokit update`):
//
//   W/warehouse.pb              WarehouseInfo: config text, config_fingerprint
//   W/model_iter_id-k/          model.onnx, solver.pb (and consumed.pb)
//
// An iteration is complete when its directory holds model.onnx and
// solver.pb (Python renames a finished iteration into place in one step;
// temporary directories start with "." and are ignored).
//
// Fingerprints are never computed here: a SampleRecord copies
// config_fingerprint from warehouse.pb and model_fingerprint from the
// iteration's solver.pb (params_fingerprint).
#pragma once

#include "evokit/formats/warehouse.h"

#include <cstdint>
#include <string>
#include <vector>

#include "evokit/io/es_agent.h"
#include "evokit/io/evokit.pb.h"

namespace evokit::io {

// The layout's names and rules are the core's (evokit/formats/warehouse.h).
inline constexpr const char* kWarehouseInfoFile = formats::kWarehouseInfoFile;
inline constexpr const char* kIterationPrefix = formats::kIterationPrefix;

class Warehouse {
 public:
  // Opens an existing warehouse. Throws WarehouseError naming the path if
  // it is missing, not a directory, has no warehouse.pb or one whose sha256
  // trailer is missing or does not match (state_file.h), or holds no
  // complete iteration.
  explicit Warehouse(std::string path);

  const std::string& path() const noexcept { return path_; }
  const proto::WarehouseInfo& info() const noexcept { return info_; }
  // What every SampleRecord.config_fingerprint of this warehouse holds.
  const std::string& config_fingerprint() const noexcept { return info_.config_fingerprint(); }

  // Complete iterations, ascending (read from the directory on each call;
  // updates problems(), so not to be called from several threads at once).
  std::vector<std::int64_t> iterations() const;
  // The newest complete iteration.
  std::int64_t latest() const;
  // Directories named like an iteration but missing a file, as found by
  // the last iterations() call.
  const std::vector<std::string>& problems() const noexcept { return problems_; }

  std::string iteration_dir(std::int64_t k) const;
  // The solver state of iteration k (WarehouseError if k is not complete,
  // SolverFileError if its solver.pb is corrupt).
  proto::SolverState solver_state(std::int64_t k) const;
  // The config of iteration k (the text stored in its solver.pb).
  proto::EvoKitConfig config(std::int64_t k) const;
  // What SampleRecord.model_fingerprint of a sample drawn at iteration k
  // holds: solver.pb's params_fingerprint (WarehouseError if empty).
  std::string model_fingerprint(std::int64_t k) const;

  // An agent at iteration k with its config, model and solver state, for
  // any sampling family (the config's solver, restored by
  // ESAgent::load_solver as Python's Warehouse.load_agent does). Checks
  // the model file against the sha256 solver.pb records (model_sha256,
  // where present; ModelError naming the file) and that the solver state is
  // at iteration k. Unlike Python, does not
  // recompute the config fingerprint (see above).
  ESAgent load_agent(std::int64_t k) const;
  ESAgent load_agent() const { return load_agent(latest()); }

 private:
  std::string path_;
  proto::WarehouseInfo info_;
  mutable std::vector<std::string> problems_;
};

}  // namespace evokit::io
