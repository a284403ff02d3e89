// AskTellStrategy: the one ask/tell interface every family implements
// (CMABase, cma_es.h; GeneticAlgorithm, ga.h; DistributionStrategy,
// distribution.h; GaussianStrategy, gaussian_solver.h), and what
// StrategySolver (strategy_solver.h), the one adapter from such a strategy to
// a Solver, calls.
//
// A strategy holds one generation at a time: its members, each named by a
// key (a list of integers) from which the member's parameters are rebuilt
// under the current state alone. The adapter hands the members out, groups
// the rewards told for them by member, averages each member's rewards once
// (rewards_averaged()) and tells the strategy one value per member,
// minimised (minus the mean reward), in member order; the strategy then
// starts its next generation.
//
// Members drawn on demand (draws_on_demand(), GaussianStrategy): a strategy
// may instead hand out a member whenever a clone asks for one (draw_member),
// each named by a SamplingInfo the strategy alone interprets, and take every
// sample with its own reward (tell_samples), samples drawn at older
// iterations included when corrects_older_samples(). The adapter then
// delegates drawing, checking, rebuilding, updating, the iteration and the
// replica's state to these methods, and the generation methods above serve
// callers that drive the strategy one generation at a time. Generation
// strategies keep the defaults (no such capability).
//
// The methods carry their own names ("member_keys", "tell_members", ...) so
// that they sit beside a strategy's own ask()/tell() without overloading
// them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "evokit/solver.h"  // SamplingInfo, SolverState, ParamsLookup

namespace evokit {


class AskTellStrategy {
 public:
  // What a replica (an evaluation worker) gets to rebuild members.
  enum class ReplicaState {
    kFullState,   // the full state (the strategy is smaller than its members)
    kMemberRows,  // the generation's member rows (lambda * n floats)
    kSmaller,     // whichever of the two holds fewer values
    kCenter,      // the centre and the iteration only (members drawn on demand:
                  // a member is rebuilt from its key and the centre)
  };

  virtual ~AskTellStrategy() = default;

  // The name in messages ("CMA", "GA", "SNES", ...).
  virtual std::string kind() const = 0;
  // The parameters a member holds (n).
  virtual std::size_t member_size() const = 0;
  // The keys of the current generation's members, in member order.
  virtual std::vector<std::vector<std::int64_t>> member_keys() const = 0;
  // Materialises the current generation's members at once (batched), where
  // rebuild_member and tell_members then take them from. Default: nothing
  // (every member rebuilt on its own).
  virtual void prepare_members() {}
  // out = the parameters of the current member `key` (member_size floats).
  // Called from several threads at once, never during prepare_members.
  virtual void rebuild_member(const std::vector<std::int64_t>& key, float* out) const = 0;
  // (rewards needed per member, what the members are called).
  virtual std::pair<std::size_t, std::string> member_requirement() const = 0;
  // How many of a member's rewards its value averages: the first that many
  // (the GA's elite re-evaluation), or 0: all of them.
  virtual std::size_t rewards_averaged() const { return 0; }
  // Tells the generation's values, one per member in member order,
  // minimised, and starts the next generation.
  virtual void tell_members(const std::vector<double>& values) = 0;
  // out = the centre, the parameters to deploy (member_size floats).
  virtual void center_params(float* out) const = 0;
  // Adds the strategy's state entries to `state`.
  virtual void save_entries(SolverState& state) const = 0;
  // Validates every entry, then replaces the strategy's state.
  virtual void load_entries(const SolverState& state) = 0;
  virtual ReplicaState replica_state() const { return ReplicaState::kFullState; }
  // Whether members 2p and 2p + 1 are a mirrored pair (one noise, opposite
  // signs).
  virtual bool mirrored_members() const { return false; }

  // ---- members drawn on demand (defaults: a generation strategy) ----------
  // Whether members are drawn on demand (the methods below), not handed out
  // from member_keys().
  virtual bool draws_on_demand() const { return false; }
  // The model iteration samples are drawn at and checked against (Gaussian:
  // the optimizer's steps). Default: std::logic_error.
  virtual std::int64_t sample_iteration() const;
  // The next member for clone `clone` (>= 0) whose keys are salted by
  // `stream`, at sample_iteration(); advances that clone's draw counter.
  // Thread-safe. Default: std::logic_error.
  virtual SamplingInfo draw_member(int clone, std::uint64_t stream);
  // Throws (std::invalid_argument or std::out_of_range) unless `info` can be
  // rebuilt now. Default: std::logic_error.
  virtual void check_sample(const SamplingInfo& info) const;
  // out = the parameters of sample `info` (member_size floats), from the
  // current centre. Default: std::logic_error.
  virtual void rebuild_sample(const SamplingInfo& info, float* out, int num_threads) const;
  // The samples for a batched forward pass (a null entry is the centre),
  // lazily: the Population rebuilds rows from keys and signs, it holds none.
  // Default: std::logic_error.
  virtual Population sample_population(const std::vector<const SamplingInfo*>& members,
                                       int num_threads) const;
  // Whether tell_samples takes samples drawn at older iterations (given the
  // centres of their iterations as history).
  virtual bool corrects_older_samples() const { return false; }
  // Tells the rewards (larger is better) of `infos`, one per sample, and
  // steps the centre; returns how many samples were of older iterations.
  // Checks everything first (errors name the sample); the state is unchanged
  // on error. Default: std::logic_error.
  virtual std::size_t tell_samples(const std::vector<SamplingInfo>& infos,
                                   const std::vector<double>& rewards, const ParamsLookup& history);
  // Replaces the centre (member_size floats, checked finite: errors name
  // params[i]); keeps the rest of the state. Not concurrently with sampling.
  // Default: std::logic_error (the family's centre follows from its state).
  virtual void set_center(const float* params);
  // A replica's state (ReplicaState::kCenter): the centre (checked finite:
  // errors name center[i]) and the iteration. Default: std::logic_error.
  virtual void load_center(const float* center, std::int64_t iteration);

 protected:
  AskTellStrategy() = default;
  AskTellStrategy(const AskTellStrategy&) = default;
  AskTellStrategy& operator=(const AskTellStrategy&) = default;
};

}  // namespace evokit
