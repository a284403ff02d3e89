#include "evokit/io/warehouse.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <system_error>
#include <utility>

#include "evokit/noise.h"
#include "evokit/io/config.h"
#include "evokit/io/errors.h"
#include "evokit/io/sha256.h"
#include "evokit/io/solver_state.h"
#include "evokit/io/state_file.h"
#include "file_util.h"

namespace evokit::io {

namespace fs = std::filesystem;

namespace {

// k for a directory name "model_iter_id-<k>" (digits only), or -1.
std::int64_t iteration_of(const std::string& name) {
  const std::string prefix = kIterationPrefix;
  if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) return -1;
  const std::string digits = name.substr(prefix.size());
  if (digits.size() > 18 ||
      !std::all_of(digits.begin(), digits.end(), [](unsigned char c) { return std::isdigit(c); })) {
    return -1;
  }
  return std::stoll(digits);
}

bool is_file(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}

}  // namespace

Warehouse::Warehouse(std::string path) : path_(std::move(path)) {
  std::error_code ec;
  if (!fs::exists(path_, ec)) {
    throw WarehouseError(path_ + ": no such warehouse (create one with `evokit init-solver`)");
  }
  if (!fs::is_directory(path_, ec)) {
    throw WarehouseError(path_ + ": is not a directory, expected a model warehouse");
  }
  const std::string info_path = detail::join_path(path_, kWarehouseInfoFile);
  if (!is_file(info_path)) {
    if (fs::is_empty(path_, ec)) {
      throw WarehouseError(path_ + ": empty directory, not a warehouse (create one with "
                                   "`evokit init-solver`)");
    }
    throw WarehouseError(path_ + ": not a warehouse (" + std::string(kWarehouseInfoFile) +
                         " is missing)");
  }
  read_state_file<WarehouseError>(info_path, info_, "warehouse info");
  if (info_.config_fingerprint().empty()) {
    throw WarehouseError(info_path + ": corrupt warehouse info (no config_fingerprint)");
  }
  if (info_.noise_version() != kNoiseVersion) {
    throw WarehouseError(
        path_ + ": warehouse refers to noise version " + std::to_string(info_.noise_version()) +
        " (" + noise_version_name(info_.noise_version()) +
        "), this library rebuilds noise version " + std::to_string(kNoiseVersion) + " (" +
        noise_version_name(kNoiseVersion) + "): its keys would give different noise");
  }
  if (iterations().empty()) {
    std::string detail;
    for (const std::string& p : problems_) detail += "; " + p;
    throw WarehouseError(path_ + ": no complete iteration in the warehouse" + detail);
  }
}

std::vector<std::int64_t> Warehouse::iterations() const {
  std::vector<std::int64_t> found;
  std::vector<std::string> problems;
  std::error_code ec;
  for (const fs::directory_entry& entry : fs::directory_iterator(path_, ec)) {
    const std::int64_t k = iteration_of(entry.path().filename().string());
    if (k < 0) continue;
    std::vector<std::string> missing;
    for (const char* f : {kModelFile, kSolverFile}) {
      if (!is_file(entry.path() / f)) missing.emplace_back(f);
    }
    if (!missing.empty()) {
      std::string list;
      for (const std::string& m : missing) list += (list.empty() ? "" : ", ") + m;
      problems.push_back("ignoring half-written iteration " + entry.path().string() + " (" +
                         list + " missing)");
      continue;
    }
    found.push_back(k);
  }
  if (ec) throw WarehouseError(path_ + ": cannot list the warehouse: " + ec.message());
  std::sort(found.begin(), found.end());
  std::sort(problems.begin(), problems.end());
  problems_ = std::move(problems);
  return found;
}

std::int64_t Warehouse::latest() const {
  const std::vector<std::int64_t> all = iterations();
  if (all.empty()) throw WarehouseError(path_ + ": no complete iteration in the warehouse");
  return all.back();
}

std::string Warehouse::iteration_dir(std::int64_t k) const {
  return detail::join_path(path_, kIterationPrefix + std::to_string(k));
}

proto::SolverState Warehouse::solver_state(std::int64_t k) const {
  const std::string dir = iteration_dir(k);
  if (!is_file(detail::join_path(dir, kModelFile)) || !is_file(detail::join_path(dir, kSolverFile))) {
    std::string kept;
    for (const std::int64_t i : iterations()) kept += (kept.empty() ? "" : ", ") + std::to_string(i);
    throw WarehouseError(path_ + ": iteration " + std::to_string(k) +
                         " is not in the warehouse (kept: " + (kept.empty() ? "none" : kept) + ")");
  }
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

ESAgent Warehouse::load_agent(std::int64_t k) const {
  const std::string dir = iteration_dir(k);
  const std::string solver_path = detail::join_path(dir, kSolverFile);
  const proto::SolverState state = solver_state(k);
  ESAgent agent;
  agent.set_config(parse_config(state.config(), solver_path), solver_path);
  const std::string model_path = detail::join_path(dir, kModelFile);
  if (!state.model_sha256().empty()) {  // the model file's bytes, as solver.pb records them
    std::string bytes, error;
    if (!detail::read_file(model_path, bytes, error)) throw ModelError(model_path + ": " + error);
    const std::string actual = sha256_hex(bytes);
    if (actual != state.model_sha256()) {
      throw ModelError(model_path + ": its sha256 is " + actual + ", " + solver_path +
                       " records " + state.model_sha256() +
                       " for its model (model_sha256): the file is damaged, or the state is "
                       "another model's");
    }
  }
  agent.load_inference_model(model_path);
  agent.init_solver();
  agent.load_solver(dir);
  if (agent.model_iter_id() != k) {
    throw WarehouseError(dir + ": solver state is at iteration " +
                         std::to_string(agent.model_iter_id()) + ", the directory says " +
                         std::to_string(k));
  }
  return agent;
}

}  // namespace evokit::io
