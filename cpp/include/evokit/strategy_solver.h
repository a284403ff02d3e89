// StrategySolver: the one adapter from an ask/tell strategy (AskTellStrategy,
// ask_tell.h) to a Solver of a policy agent. Every family is one:
// GAUSSIAN_SAMPLING and ARS_SAMPLING over GaussianStrategy
// (gaussian_solver.h), CMA_SAMPLING over CMABase (cma_es.h), GA_SAMPLING over
// GeneticAlgorithm (ga.h), and the distribution families over their
// DistributionStrategy (distribution.h); the registry (solver_registry.cc)
// builds each from its strategy.
//
// Members drawn on demand (the strategy's draws_on_demand(): the Gaussian
// families). draw, check_member, rebuild, population, update,
// corrects_older_samples, mirrored_pairs and model_iter_id are the
// strategy's (draw_member, check_sample, rebuild_sample, sample_population,
// tell_samples, ..., sample_iteration); shortfall is the Solver default; the
// generation machinery below is not used. The state is the header and the
// strategy's entries alone (Gaussian: "optimizer.<name>" and
// "draws.counters", the optimizer's steps as model_iter_id; no "draws", and
// the noise version is not checked on load, as solver.pb files of every
// release hold it); a replica gets the centre and the iteration ("center",
// ReplicaState::kCenter).
//
// Generation strategies (every other family). A generation is
// population_size members: CMA's lambda samples, whose
// SamplingInfo.key is the one noise-stream key CMABase::regenerate rebuilds
// the sample from (cma_es.h); the GA's individuals, whose key is the
// individual's seed list (ga.h); a distribution strategy's members, whose
// key is {member key, member index} (distribution.h). Draws hand the members
// out in turn, whatever the clone: the k-th draw of a generation is member
// k mod population_size, tagged with model_iter_id (the number of updates).
// update() needs enough rewards for every member (member_requirement), takes
// as each member's value minus the mean of its rewards (the first
// rewards_averaged() of them, or all), tells the strategy these values
// (minimised) and starts the next generation. A sample is rebuilt only at
// the iteration that drew it.
//
// GA elite re-evaluation: after a generation's update the members are the
// elite candidates, and the next update takes the first elite_evaluations
// rewards of each (so a GA generation is two updates).
//
// The centre (the agent's policy, the saved model) is the strategy's
// center_params: the CMA mean, the best elite (x0 before the first
// generation), a distribution's centre.
//
// A replica (an evaluation worker) gets what the strategy's replica_state
// says: CMA the current generation's member rows, the GA its state (seed
// lists, which is smaller), a distribution strategy whichever of the two is
// smaller.
//
// State: "draws" (members handed out this generation) and the strategy's
// own entries: CMA "cma.mean", "cma.p_sigma", "cma.p_c", "cma.cov",
// "cma.eigenvalues", "cma.eigenvectors", "cma.householder",
// "cma.householder_tau" (CMAState's, cma_es.h; the last two may be absent:
// Q = I), "cma.sigma" (doubles), "cma.generation", "cma.eigen_generation"; GA "ga.x0" (floats),
// "ga.generation", "ga.population" / "ga.elites" (seed lists, flattened,
// with ".lengths" and ".iterations"), "ga.order", "ga.elite_scores"; a
// distribution strategy "generation" and "<family>.<name>" (distribution.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "evokit/ask_tell.h"
#include "evokit/solver.h"

namespace evokit {

class StrategySolver final : public Solver {
 public:
  // `family` is the SamplingConfig.Type value ("CMA_SAMPLING").
  StrategySolver(std::string family, std::unique_ptr<AskTellStrategy> strategy);

  // The strategy's name in messages ("CMA", "GA", "SNES", ...).
  const std::string& kind() const noexcept { return kind_; }
  // The strategy it runs (read it, don't change it).
  const AskTellStrategy& strategy() const noexcept { return *strategy_; }
  // The strategy as its own type; std::logic_error if it is another.
  template <typename S>
  const S& strategy() const {
    const S* s = dynamic_cast<const S*>(strategy_.get());
    if (s == nullptr) throw std::logic_error("a " + kind_ + " solver runs no strategy of that type");
    return *s;
  }
  template <typename S>
  S& strategy() {
    return const_cast<S&>(static_cast<const StrategySolver&>(*this).strategy<S>());
  }
  // Members handed out in the current generation (0 when members are drawn
  // on demand).
  std::int64_t draws() const;
  // Replace the centre parameters (same size, finite), e.g. after loading a
  // model; keeps the rest of the state (Gaussian: the optimizer's). Not
  // concurrently with sampling. std::logic_error for a family whose centre
  // follows from its state (every generation family).
  void set_center(const std::vector<float>& params);

  // The keys of the current generation's members, in order.
  const std::vector<std::vector<std::int64_t>>& member_keys() const noexcept { return members_; }
  bool is_member(const SamplingInfo& info) const noexcept;

  std::int64_t model_iter_id() const noexcept override;
  SamplingInfo draw(int clone, std::uint64_t stream) override;
  void check_member(const SamplingInfo& info) const override;
  void rebuild(const SamplingInfo& info, float* out, int num_threads) const override;
  std::string shortfall(const std::vector<SamplingInfo>& infos,
                        const std::vector<double>& rewards) const override;
  bool corrects_older_samples() const noexcept override {
    return strategy_->corrects_older_samples();
  }
  bool mirrored_pairs() const noexcept override { return strategy_->mirrored_members(); }
  UpdateStats update(const std::vector<SamplingInfo>& infos, const std::vector<double>& rewards,
                     const ParamsLookup& history = nullptr) override;
  SolverState save() const override;
  void load(const SolverState& state) override;
  // The full state, the member rows or the centre, as the strategy's
  // replica_state says.
  // A state of member rows ("members" keys, "members.rows", "center") makes
  // the solver a replica that rebuilds exactly those members (and refuses
  // updates) until load() gives it a full state again.
  SolverState sampling_state() const override;
  void load_sampling_state(const SolverState& state) override;
  // A batch that holds the whole generation (the training loop's, the
  // sampler's) materialises it at once (prepare_members), and the update
  // reuses what it materialised: a generation's members are computed once.
  Population population(const std::vector<const SamplingInfo*>& members, int num_threads) const override;

 private:
  // Recompute the members and the centre after the strategy changed.
  void refresh();
  // A replica's state of the centre alone (ReplicaState::kCenter).
  SolverState center_state() const;
  void load_center_state(const SolverState& state);
  SolverState member_rows_state() const;
  void load_member_rows(const SolverState& state);
  void check_iteration(const SamplingInfo& info, const std::string& where) const;
  std::vector<std::vector<double>> group(const std::vector<SamplingInfo>& infos,
                                         const std::vector<double>& rewards) const;
  std::string shortfall_of(const std::vector<std::vector<double>>& per_member) const;

  std::unique_ptr<AskTellStrategy> strategy_;
  std::string kind_;
  const bool on_demand_;  // strategy_->draws_on_demand(), asked once
  mutable std::mutex mutex_;  // guards draws_
  // Rebuilds share it; prepare_members (which changes what they read) holds it alone.
  mutable std::shared_mutex generation_mutex_;
  std::int64_t draws_ = 0;
  std::vector<std::vector<std::int64_t>> members_;
  std::vector<float> replica_rows_;  // a replica's member rows (members_ order); else empty
};

}  // namespace evokit
