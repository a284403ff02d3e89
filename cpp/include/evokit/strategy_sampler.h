// CMA-ES and the GA as samplers of a policy agent (config CMA_SAMPLING,
// GA_SAMPLING): what evokit.ESAgent drives for those sampling types, beside
// the Gaussian ESAgent (es_agent.h).
//
// A generation is population_size members: CMA's lambda samples, whose
// SamplingInfo.key is the one noise-stream key CMABase::regenerate rebuilds
// the sample from (cma_es.h); or the GA's individuals, whose key is the
// individual's seed list (ga.h). The k-th next_member() of a generation hands
// out member k mod population_size, tagged with model_iter_id (the number of
// updates). update() needs enough rewards for every member (several rewards
// of one member are averaged), runs CMA's tell (rewards negated: CMA
// minimises) or the GA's selection, and starts the next generation. A sample
// is rebuilt only at the iteration that drew it.
//
// GA elite re-evaluation: after a generation's update the members are the
// elite candidates, and the next update takes the first elite_evaluations
// rewards of each (so a GA generation is two updates).
//
// The centre (the agent's policy, the saved model) is the CMA mean, or the
// best elite (x0 before the first generation). Its storage never moves.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "evokit/cma_es.h"
#include "evokit/es_agent.h"  // SamplingInfo
#include "evokit/ga.h"

namespace evokit {

class StrategySampler {
 public:
  virtual ~StrategySampler() = default;
  StrategySampler(const StrategySampler&) = delete;
  StrategySampler& operator=(const StrategySampler&) = delete;

  // "CMA" or "GA": the name in messages.
  const std::string& kind() const noexcept { return kind_; }
  std::size_t num_params() const noexcept { return center_.size(); }
  const std::vector<float>& center() const noexcept { return center_; }
  std::int64_t model_iter_id() const noexcept { return model_iter_id_; }
  // Members handed out in the current generation.
  std::int64_t draws() const noexcept { return draws_; }
  // Checkpoint restore of the two counters (>= 0, else std::invalid_argument).
  void set_progress(std::int64_t model_iter_id, std::int64_t draws);

  // The keys of the current generation's members, in order.
  const std::vector<std::vector<std::int64_t>>& member_keys() const;
  SamplingInfo next_member();
  // The parameters of `info` (num_params floats). std::invalid_argument if
  // it is of another iteration (naming both) or not a member.
  void rebuild(const SamplingInfo& info, float* out) const;
  bool is_member(const SamplingInfo& info) const noexcept;

  // Why these samples are not yet enough for an update ("" when they are);
  // throws like update() for a sample that cannot be told.
  std::string shortfall(const std::vector<SamplingInfo>& infos, const std::vector<double>& rewards) const;
  // Tells the rewards (larger is better, finite) of the current generation's
  // members. Everything is checked first (std::invalid_argument naming the
  // sample): the state is unchanged on error. Returns the new model_iter_id.
  std::int64_t update(const std::vector<SamplingInfo>& infos, const std::vector<double>& rewards);

  // Recompute the centre and the members after the strategy's state was
  // replaced (CMABase::set_state, GeneticAlgorithm::set_state).
  void refresh();

 protected:
  StrategySampler(std::string kind, std::size_t num_params);

  // Hooks.
  virtual std::vector<std::vector<std::int64_t>> members() const = 0;
  virtual void rebuild_member(const std::vector<std::int64_t>& key, float* out) const = 0;
  // (rewards needed per member, what the members are called).
  virtual std::pair<std::size_t, std::string> requirement() const = 0;
  virtual void tell(const std::vector<std::vector<double>>& per_member) = 0;
  virtual void compute_center(float* out) const = 0;

 private:
  void check_iteration(const SamplingInfo& info, const std::string& where) const;
  std::vector<std::vector<double>> group(const std::vector<SamplingInfo>& infos,
                                         const std::vector<double>& rewards) const;
  std::string shortfall_of(const std::vector<std::vector<double>>& per_member) const;

  std::string kind_;
  std::vector<float> center_;
  std::int64_t model_iter_id_ = 0;
  std::int64_t draws_ = 0;
  mutable std::vector<std::vector<std::int64_t>> members_;  // cache; empty: recompute
};

// CMA-ES over the policy parameters (double precision inside, float32
// parameters out). Restarts and the termination criteria meant for
// functions (tolfun, tolx, stagnation, no-effect tests) are off: a reward
// plateau is not convergence, and training stops by its own budget.
class CMASampler final : public StrategySampler {
 public:
  CMASampler(const std::vector<float>& x0, double sigma0, std::size_t population_size, bool separable,
             std::uint64_t seed, int num_threads);
  CMABase& cma() noexcept { return *cma_; }
  const CMABase& cma() const noexcept { return *cma_; }

 private:
  std::vector<std::vector<std::int64_t>> members() const override;
  void rebuild_member(const std::vector<std::int64_t>& key, float* out) const override;
  std::pair<std::size_t, std::string> requirement() const override;
  void tell(const std::vector<std::vector<double>>& per_member) override;
  void compute_center(float* out) const override;

  std::unique_ptr<CMABase> cma_;
};

class GASampler final : public StrategySampler {
 public:
  GASampler(const GeneticAlgorithmOptions& options, std::vector<float> x0);
  GeneticAlgorithm& ga() noexcept { return *ga_; }
  const GeneticAlgorithm& ga() const noexcept { return *ga_; }
  // A fresh GA of the same options around another x0 (checkpoint restore:
  // the x0 individuals are rebuilt from); then GeneticAlgorithm::set_state.
  void reset(std::vector<float> x0);

 private:
  std::vector<std::vector<std::int64_t>> members() const override;
  void rebuild_member(const std::vector<std::int64_t>& key, float* out) const override;
  std::pair<std::size_t, std::string> requirement() const override;
  void tell(const std::vector<std::vector<double>>& per_member) override;
  void compute_center(float* out) const override;

  std::unique_ptr<GeneticAlgorithm> ga_;
};

}  // namespace evokit
