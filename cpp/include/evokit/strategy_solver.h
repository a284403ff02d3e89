// CMA-ES and the GA as solvers of a policy agent (families CMA_SAMPLING and
// GA_SAMPLING of solver.h), beside the GaussianSolver.
//
// A generation is population_size members: CMA's lambda samples, whose
// SamplingInfo.key is the one noise-stream key CMABase::regenerate rebuilds
// the sample from (cma_es.h); or the GA's individuals, whose key is the
// individual's seed list (ga.h). Draws hand the members out in turn,
// whatever the clone: the k-th draw of a generation is member k mod
// population_size, tagged with model_iter_id (the number of updates).
// update() needs enough rewards for every member (several rewards of one
// member are averaged), runs CMA's tell (rewards negated: CMA minimises) or
// the GA's selection, and starts the next generation. A sample is rebuilt
// only at the iteration that drew it.
//
// GA elite re-evaluation: after a generation's update the members are the
// elite candidates, and the next update takes the first elite_evaluations
// rewards of each (so a GA generation is two updates).
//
// The centre (the agent's policy, the saved model) is the CMA mean, or the
// best elite (x0 before the first generation).
//
// A CMA replica (an evaluation worker) gets the current generation's member
// rows as its sampling state; a GA replica the GA's state (seed lists), which
// is smaller.
//
// State: "draws" (members handed out this generation) and the strategy's
// own entries: CMA "cma.mean", "cma.p_sigma", "cma.p_c", "cma.cov",
// "cma.eigenvalues", "cma.eigenvectors", "cma.householder",
// "cma.householder_tau" (CMAState's, cma_es.h; the last two may be absent:
// Q = I), "cma.sigma" (doubles), "cma.generation", "cma.eigen_generation"; GA "ga.x0" (floats),
// "ga.generation", "ga.population" / "ga.elites" (seed lists, flattened,
// with ".lengths" and ".iterations"), "ga.order", "ga.elite_scores".
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <utility>
#include <vector>

#include "evokit/cma_es.h"
#include "evokit/ga.h"
#include "evokit/solver.h"

namespace evokit {

class StrategySolver : public Solver {
 public:
  // "CMA" or "GA": the name in messages.
  const std::string& kind() const noexcept { return kind_; }
  // Members handed out in the current generation.
  std::int64_t draws() const;

  // The keys of the current generation's members, in order.
  const std::vector<std::vector<std::int64_t>>& member_keys() const noexcept { return members_; }
  bool is_member(const SamplingInfo& info) const noexcept;

  SamplingInfo draw(int clone, std::uint64_t stream) override;
  void check_member(const SamplingInfo& info) const override;
  void rebuild(const SamplingInfo& info, float* out, int num_threads) const override;
  std::string shortfall(const std::vector<SamplingInfo>& infos,
                        const std::vector<double>& rewards) const override;
  UpdateStats update(const std::vector<SamplingInfo>& infos, const std::vector<double>& rewards,
                     const ParamsLookup& history = nullptr) override;
  SolverState save() const override;
  void load(const SolverState& state) override;
  // A batch that holds the whole generation (the training loop's, the
  // sampler's) materialises it at once (prepare_generation), and the update
  // reuses what it materialised: a generation's members are computed once.
  Population population(const std::vector<const SamplingInfo*>& members, int num_threads) const override;

 protected:
  StrategySolver(std::string family, std::string kind, std::vector<float> x0);
  // Recompute the members and the centre after the strategy changed.
  void refresh();
  // A sampling state of the current generation's members as parameter rows
  // ("members" keys, "members.rows", "center"), and its load: the solver
  // then is a replica that rebuilds exactly those members (and refuses
  // updates) until load() gives it a full state again. For a family whose
  // state outgrows its members (full CMA: O(n^2)) this is what a worker
  // gets.
  SolverState member_rows_state() const;
  void load_member_rows(const SolverState& state);

  // Hooks.
  virtual std::vector<std::vector<std::int64_t>> members() const = 0;
  // Materialises the current generation's members in the strategy (batched),
  // where rebuild_member and tell then take them from; called with no
  // rebuild running. Default: nothing (every member rebuilt on its own).
  virtual void prepare_generation() const {}
  virtual void rebuild_member(const std::vector<std::int64_t>& key, float* out) const = 0;
  // (rewards needed per member, what the members are called).
  virtual std::pair<std::size_t, std::string> requirement() const = 0;
  // How many of a member's rewards its value averages: the first that many
  // (the GA's elite re-evaluation), or 0: all of them.
  virtual std::size_t rewards_averaged() const { return 0; }
  // The generation's values, one per member in member order, minimised:
  // minus the mean of the member's rewards, averaged here once for every
  // family (update()).
  virtual void tell(const std::vector<double>& values) = 0;
  virtual void compute_center(float* out) const = 0;
  virtual void save_strategy(SolverState& state) const = 0;
  // Validates everything, then replaces the strategy's state.
  virtual void load_strategy(const SolverState& state) = 0;

 private:
  void check_iteration(const SamplingInfo& info, const std::string& where) const;
  std::vector<std::vector<double>> group(const std::vector<SamplingInfo>& infos,
                                         const std::vector<double>& rewards) const;
  std::string shortfall_of(const std::vector<std::vector<double>>& per_member) const;

  std::string kind_;
  mutable std::mutex mutex_;  // guards draws_
  // Rebuilds share it; prepare_generation (which changes what they read) holds it alone.
  mutable std::shared_mutex generation_mutex_;
  std::int64_t draws_ = 0;
  std::vector<std::vector<std::int64_t>> members_;
  std::vector<float> replica_rows_;  // a replica's member rows (members_ order); else empty
};

// CMA-ES over the policy parameters (double precision inside, float32
// parameters out). Restarts and the termination criteria meant for
// functions (tolfun, tolx, stagnation, no-effect tests) are off: a reward
// plateau is not convergence, and training stops by its own budget.
class CMASolver final : public StrategySolver {
 public:
  CMASolver(const std::vector<float>& x0, double sigma0, std::size_t population_size,
            bool separable, std::uint64_t seed, int num_threads);
  CMABase& cma() noexcept { return *cma_; }
  const CMABase& cma() const noexcept { return *cma_; }
  // A worker gets the generation's member rows (lambda * n floats), not the
  // distribution (2 n^2 doubles for full CMA).
  SolverState sampling_state() const override { return member_rows_state(); }
  void load_sampling_state(const SolverState& state) override { load_member_rows(state); }

 private:
  std::vector<std::vector<std::int64_t>> members() const override;
  void prepare_generation() const override;
  void rebuild_member(const std::vector<std::int64_t>& key, float* out) const override;
  std::pair<std::size_t, std::string> requirement() const override;
  void tell(const std::vector<double>& values) override;
  void compute_center(float* out) const override;
  void save_strategy(SolverState& state) const override;
  void load_strategy(const SolverState& state) override;

  std::unique_ptr<CMABase> cma_;
};

class GASolver final : public StrategySolver {
 public:
  GASolver(const GeneticAlgorithmOptions& options, std::vector<float> x0);
  GeneticAlgorithm& ga() noexcept { return *ga_; }
  const GeneticAlgorithm& ga() const noexcept { return *ga_; }

 private:
  std::vector<std::vector<std::int64_t>> members() const override;
  void rebuild_member(const std::vector<std::int64_t>& key, float* out) const override;
  std::pair<std::size_t, std::string> requirement() const override;
  std::size_t rewards_averaged() const override;
  void tell(const std::vector<double>& values) override;
  void compute_center(float* out) const override;
  void save_strategy(SolverState& state) const override;
  void load_strategy(const SolverState& state) override;

  std::unique_ptr<GeneticAlgorithm> ga_;
};

// The registry's hooks (solver.h) for CMA_SAMPLING and GA_SAMPLING.
void validate_cma_options(const OptionSet& options, std::optional<std::size_t> num_params);
std::unique_ptr<Solver> make_cma_solver(const OptionSet& options, std::vector<float> x0,
                                        int num_threads);
void validate_ga_options(const OptionSet& options, std::optional<std::size_t> num_params);
std::unique_ptr<Solver> make_ga_solver(const OptionSet& options, std::vector<float> x0,
                                       int num_threads);

}  // namespace evokit
