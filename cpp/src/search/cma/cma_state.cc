// CMABase::export_state / import_state: the whole strategy as a SolverState
// (see evokit/cma_es.h), what a pickled ask/tell CMAES holds.
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>

#include "evokit/cma_es.h"

namespace evokit {

SolverState CMABase::export_state() const {
  SolverState out;
  out.family = separable_ ? "SepCMAES" : "CMAES";
  auto& d = out.doubles;
  auto& i = out.ints;
  const CMAState& s = state();  // C made whole
  i["lambda"] = {static_cast<std::int64_t>(params_.population_size)};
  d["mean"] = s.mean;
  d["sigma"] = {s.sigma};
  d["p_sigma"] = s.p_sigma;
  d["p_c"] = s.p_c;
  d["cov"] = s.cov;
  d["eigenvalues"] = s.eigenvalues;
  d["eigenvectors"] = s.eigenvectors;
  d["householder"] = s.householder.vectors;
  d["householder_tau"] = s.householder.tau;
  i["generation"] = {s.generation};
  i["eigen_generation"] = {s.eigen_generation};
  d["affine"] = s.affine;
  d["tpa_s"] = {s.tpa_s};
  d["mean_shift"] = s.mean_shift;
  d["mean_shift_z"] = s.mean_shift_z;
  d["run_sigma0"] = {run_sigma0_};
  i["evaluations"] = {evaluations_};
  i["iterations"] = {iterations_};
  d["best_x"] = best_x_;
  d["best_f"] = {best_f_};
  d["last_values"] = last_values_;
  history_.save(out, "history.");
  for (const auto& [name, threshold] : stop_) d["stop." + name] = {threshold};
  i["restart_history"] = {static_cast<std::int64_t>(restart_history_.size())};
  for (std::size_t r = 0; r < restart_history_.size(); ++r) {
    for (const auto& [name, threshold] : restart_history_[r]) {
      d["restart_history." + std::to_string(r) + "." + name] = {threshold};
    }
  }
  i["restarts"] = {restart_, large_runs_};
  i["budgets"] = {budget_large_, budget_small_};
  i["run"] = {run_is_small_ ? 1 : 0, run_start_evaluations_, run_max_iterations_};
  std::vector<double>& injected = d["injections"];
  std::vector<std::int64_t>& force = i["injections.force"];
  for (const Injection& inj : injections_) {
    injected.insert(injected.end(), inj.x.begin(), inj.x.end());
    force.push_back(inj.force ? 1 : 0);
  }
  i["ask"] = {pending_ ? 1 : 0, sampled_ ? 1 : 0, static_cast<std::int64_t>(num_injected_),
              static_cast<std::int64_t>(tpa_row_)};
  i["keys"] = keys_;
  d["z"] = z_;
  d["y"] = y_;
  d["solutions"] = solutions_;
  d["margin"] = {margin_};
  return out;
}

void CMABase::import_state(const SolverState& in) {
  const std::string family = separable_ ? "SepCMAES" : "CMAES";
  if (in.family != family) {
    throw std::invalid_argument("the state is of " + in.family + ", this strategy is " + family);
  }
  const std::size_t n = num_params();
  const auto& lam = in.int_array("lambda", 1);
  if (lam[0] < 2) throw std::invalid_argument("state entry 'lambda' must be >= 2, got " + std::to_string(lam[0]));
  const auto lambda = static_cast<std::size_t>(lam[0]);
  const bool full = !separable_;
  auto sized = [&](const char* name, std::size_t size) -> const std::vector<double>& {
    return in.double_array(name, size);
  };
  auto any = [&](const char* name) -> const std::vector<double>& {
    const auto it = in.doubles.find(name);
    if (it == in.doubles.end()) throw std::invalid_argument(std::string("state entry '") + name + "' is missing");
    return it->second;
  };
  CMAState s;
  s.mean = sized("mean", n);
  s.sigma = sized("sigma", 1)[0];
  s.p_sigma = sized("p_sigma", n);
  s.p_c = sized("p_c", n);
  s.cov = sized("cov", full ? n * n : n);
  s.eigenvalues = any("eigenvalues");
  s.eigenvectors = any("eigenvectors");
  s.householder.vectors = any("householder");
  s.householder.tau = any("householder_tau");
  if (s.eigenvalues.size() != (full ? n : 0) || s.eigenvectors.size() != (full ? n * n : 0)) {
    throw std::invalid_argument("state entries 'eigenvalues' / 'eigenvectors' do not fit " + std::to_string(n) +
                                " parameters");
  }
  s.generation = in.int_array("generation", 1)[0];
  s.eigen_generation = in.int_array("eigen_generation", 1)[0];
  s.affine = any("affine");
  s.tpa_s = sized("tpa_s", 1)[0];
  s.mean_shift = any("mean_shift");
  s.mean_shift_z = any("mean_shift_z");
  const FValueHistory::Saved h = FValueHistory::read(in, "history.");
  std::map<std::string, double> stop;
  std::vector<std::map<std::string, double>> restart_history(
      static_cast<std::size_t>(in.int_array("restart_history", 1)[0]));
  for (const auto& [name, v] : in.doubles) {
    if (name.rfind("stop.", 0) == 0) {
      stop[name.substr(5)] = v.at(0);
    } else if (name.rfind("restart_history.", 0) == 0) {
      const std::size_t dot = name.find('.', 16);
      const std::size_t r = std::stoul(name.substr(16, dot - 16));
      if (dot == std::string::npos || r >= restart_history.size()) {
        throw std::invalid_argument("state entry '" + name + "' names no recorded restart");
      }
      restart_history[r][name.substr(dot + 1)] = v.at(0);
    }
  }
  const auto& restarts = in.int_array("restarts", 2);
  const auto& budgets = in.int_array("budgets", 2);
  const auto& run = in.int_array("run", 3);
  const auto& injected = any("injections");
  const auto& force = in.ints.count("injections.force") ? in.ints.at("injections.force")
                                                         : std::vector<std::int64_t>{};
  if (injected.size() != force.size() * n) {
    throw std::invalid_argument("state entry 'injections' holds " + std::to_string(injected.size()) +
                                " values for " + std::to_string(force.size()) + " injections of " +
                                std::to_string(n));
  }
  const auto& ask = in.int_array("ask", 4);
  const std::vector<std::int64_t> keys = in.ints.count("keys") ? in.ints.at("keys") : std::vector<std::int64_t>{};
  const auto& z = any("z");
  const auto& y = any("y");
  const auto& solutions = any("solutions");
  if (ask[1] != 0 && (keys.size() != lambda || z.size() != lambda * n || y.size() != lambda * n ||
                      solutions.size() != lambda * n)) {
    throw std::invalid_argument("state entries 'keys', 'z', 'y', 'solutions' do not hold the asked generation of " +
                                std::to_string(lambda) + " members");
  }
  // Everything checked: replace.
  if (lambda != params_.population_size) params_ = cma_default_params(n, lambda, separable_);
  state_ = std::move(s);
  state_replaced();
  run_sigma0_ = sized("run_sigma0", 1)[0];
  evaluations_ = in.int_array("evaluations", 1)[0];
  iterations_ = in.int_array("iterations", 1)[0];
  best_x_ = any("best_x");
  best_f_ = sized("best_f", 1)[0];
  last_values_ = any("last_values");
  history_.restore(h);
  stop_ = std::move(stop);
  restart_history_ = std::move(restart_history);
  restart_ = static_cast<int>(restarts[0]);
  large_runs_ = static_cast<int>(restarts[1]);
  budget_large_ = budgets[0];
  budget_small_ = budgets[1];
  run_is_small_ = run[0] != 0;
  run_start_evaluations_ = run[1];
  run_max_iterations_ = run[2];
  injections_.clear();
  for (std::size_t k = 0; k < force.size(); ++k) {
    injections_.push_back({std::vector<double>(injected.begin() + static_cast<std::ptrdiff_t>(k * n),
                                               injected.begin() + static_cast<std::ptrdiff_t>((k + 1) * n)),
                           force[k] != 0});
  }
  pending_ = ask[0] != 0;
  sampled_ = ask[1] != 0;
  num_injected_ = static_cast<std::size_t>(ask[2]);
  tpa_row_ = static_cast<std::size_t>(ask[3]);
  keys_ = keys;
  z_ = z;
  y_ = y;
  solutions_ = solutions;
  margin_ = sized("margin", 1)[0];
}

}  // namespace evokit
