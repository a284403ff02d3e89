#include "evokit/io/warehouse.h"

#include <stdexcept>
#include <system_error>
#include <utility>

#include "evokit/formats/warehouse.h"
#include "evokit/io/config.h"
#include "evokit/io/errors.h"
#include "evokit/io/fingerprint.h"
#include "evokit/io/sha256.h"
#include "evokit/io/solver_state.h"
#include "evokit/io/state_file.h"
#include "file_util.h"

namespace evokit::io {

namespace {

// f() with the core's refusals as WarehouseError.
template <class F>
auto checked(F&& f) {
  return detail::core_checked<WarehouseError>(std::forward<F>(f));
}

}  // namespace

Warehouse::Warehouse(std::string path) : path_(std::move(path)) {
  const std::string info_path = checked([&] { return formats::check_warehouse_dir(path_); });
  read_state_file<WarehouseError>(info_path, info_, "warehouse info");
  if (info_.config_fingerprint().empty()) {
    throw WarehouseError(info_path + ": corrupt warehouse info (no config_fingerprint)");
  }
  checked([&] { formats::check_noise_version(path_, "warehouse", info_.noise_version()); });
  checked([&] { return formats::require_iterations(path_); });
}

std::vector<std::int64_t> Warehouse::iterations() const {
  formats::IterationScan scan = checked([&] { return formats::scan_iterations(path_); });
  problems_ = std::move(scan.problems);
  return scan.iterations;
}

std::int64_t Warehouse::latest() const { return checked([&] { return formats::require_iterations(path_); }).back(); }

std::string Warehouse::iteration_dir(std::int64_t k) const { return formats::iteration_dir(path_, k); }

proto::SolverState Warehouse::solver_state(std::int64_t k) const {
  const std::string dir = checked([&] { return formats::require_iteration(path_, k); });
  return read_solver_state(detail::join_path(dir, kSolverFile));
}

proto::EvoKitConfig Warehouse::config(std::int64_t k) const {
  const proto::SolverState state = solver_state(k);
  return parse_config(state.config(), detail::join_path(iteration_dir(k), kSolverFile));
}

std::string Warehouse::model_fingerprint(std::int64_t k) const {
  const proto::SolverState state = solver_state(k);
  if (state.params_fingerprint().empty()) {
    throw WarehouseError(detail::join_path(iteration_dir(k), kSolverFile) +
                         ": has no params_fingerprint, so samples drawn from iteration " +
                         std::to_string(k) +
                         " could not be attributed to it (written by an older evokit? "
                         "re-create the warehouse with a current `evokit init-solver`)");
  }
  return state.params_fingerprint();
}

std::string Iteration::solver_path() const { return detail::join_path(directory, kSolverFile); }

std::string Iteration::model_path() const { return detail::join_path(directory, kModelFile); }

Iteration Warehouse::iteration(std::int64_t k) const {
  Iteration it;
  it.k = k;
  it.directory = checked([&] { return formats::require_iteration(path_, k); });
  const std::string solver_path = it.solver_path();
  const std::string model_path = it.model_path();
  it.state = read_solver_state(solver_path);
  it.config = parse_config(it.state.config(), solver_path);
  std::string bytes, error;
  if (!detail::read_file(model_path, bytes, error)) throw ModelError(model_path + ": " + error);
  if (!it.state.model_sha256().empty()) {  // the model file's bytes, as solver.pb records them
    const std::string actual = sha256_hex(bytes);
    if (actual != it.state.model_sha256()) {
      throw ModelError(model_path + ": its sha256 is " + actual + ", " + solver_path +
                       " records " + it.state.model_sha256() +
                       " for its model (model_sha256): the file is damaged, or the state is "
                       "another model's");
    }
  }
  it.model = std::make_shared<const OnnxModel>(
      OnnxModel::from_bytes(bytes, it.config.solver().param_pattern(), model_path));
  it.graph = std::make_shared<const PolicyGraph>(it.model->graph());
  const std::vector<float>& params = it.model->parameters();
  check_solver_state(it.state, *it.model, params, it.config, solver_path, /*exact_model=*/true);
  checked([&] { formats::check_iteration_matches(it.directory, it.state.steps(), k); });
  it.params_fingerprint = it.state.params_fingerprint().empty()
                              ? io::params_fingerprint(io::model_fingerprint(*it.model), params)
                              : it.state.params_fingerprint();
  it.config_fingerprint = info_.config_fingerprint();
  return it;
}

ESAgent Warehouse::load_agent(std::int64_t k) const { return ESAgent(iteration(k)); }

}  // namespace evokit::io
