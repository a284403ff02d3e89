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
// Reading iteration k is one call, Warehouse::iteration(k): it reads each
// of the iteration's files once and verifies them in one place, returning an
// Iteration that an ESAgent takes as it is (ESAgent(const Iteration&)).
// The config fingerprint is not computed here (it covers Python's text of
// the key fields): a SampleRecord copies config_fingerprint from
// warehouse.pb and model_fingerprint from the iteration's solver.pb
// (params_fingerprint).
#pragma once

#include "evokit/formats/warehouse.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "evokit/io/es_agent.h"
#include "evokit/io/evokit.pb.h"
#include "evokit/io/onnx_model.h"
#include "evokit/policy_graph.h"

namespace evokit::io {

// The layout's names and rules are the core's (evokit/formats/warehouse.h).
inline constexpr const char* kWarehouseInfoFile = formats::kWarehouseInfoFile;
inline constexpr const char* kIterationPrefix = formats::kIterationPrefix;

// Iteration k of a warehouse as Warehouse::iteration read and verified it.
struct Iteration {
  std::int64_t k = 0;
  std::string directory;  // W/model_iter_id-k
  // The config solver.pb stores (parsed; validated with the model's
  // num_params when an ESAgent builds its solver).
  proto::EvoKitConfig config;
  // model.onnx, parsed (its bytes: model->bytes(), whose sha256 is
  // solver.pb's model_sha256 where it records one), with the config's
  // solver.param_pattern; and its graph, for the forward pass.
  std::shared_ptr<const OnnxModel> model;
  std::shared_ptr<const PolicyGraph> graph;
  // solver.pb, checked against the model (the exact model), the config's
  // optimizer type and k.
  proto::SolverState state;
  // What SampleRecord.model_fingerprint of a sample drawn at k holds:
  // solver.pb's params_fingerprint (computed from the model where it records
  // none).
  std::string params_fingerprint;
  // What SampleRecord.config_fingerprint holds: warehouse.pb's.
  std::string config_fingerprint;

  std::string solver_path() const;
  std::string model_path() const;
};

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

  // Iteration k (WarehouseError if it is not complete), each of its files
  // read once and verified as Python's Warehouse.iteration verifies them,
  // in this order: solver.pb (its sha256 trailer: SolverFileError), its
  // config (ConfigError), model.onnx (ModelError naming the file: unreadable,
  // its sha256 differs from the model_sha256 solver.pb records, where
  // present, or the model is refused), the solver state against the model
  // (ESAgent::load_solver_state's checks with exact_model: SolverFileError),
  // the iteration the state is at (WarehouseError "solver state is at
  // iteration j, the directory says k"). Unlike Python, does not recompute
  // the config fingerprint (see above).
  Iteration iteration(std::int64_t k) const;
  Iteration iteration() const { return iteration(latest()); }

  // An agent at iteration k with its config, model and solver state, for
  // any sampling family: ESAgent(iteration(k)).
  ESAgent load_agent(std::int64_t k) const;
  ESAgent load_agent() const { return load_agent(latest()); }

  // What iteration k's solver.pb alone holds, read on each call (not
  // checked against its model: iteration(k) is the verified read).
  // The solver state (WarehouseError if k is not complete, SolverFileError
  // if its solver.pb is corrupt).
  proto::SolverState solver_state(std::int64_t k) const;
  // The config (the text stored in solver.pb).
  proto::EvoKitConfig config(std::int64_t k) const;
  // What SampleRecord.model_fingerprint of a sample drawn at iteration k
  // holds: solver.pb's params_fingerprint (WarehouseError if empty).
  std::string model_fingerprint(std::int64_t k) const;

 private:
  std::string path_;
  proto::WarehouseInfo info_;
  mutable std::vector<std::string> problems_;
};

}  // namespace evokit::io
