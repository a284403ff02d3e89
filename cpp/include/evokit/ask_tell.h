// AskTellStrategy: the one ask/tell interface the generation-based families
// implement (CMABase, cma_es.h; GeneticAlgorithm, ga.h; DistributionStrategy,
// distribution.h), and what StrategySolver (strategy_solver.h), the one
// adapter from such a strategy to a Solver, calls.
//
// A strategy holds one generation at a time: its members, each named by a
// key (a list of integers) from which the member's parameters are rebuilt
// under the current state alone. The adapter hands the members out, groups
// the rewards told for them by member, averages each member's rewards once
// (rewards_averaged()) and tells the strategy one value per member,
// minimised (minus the mean reward), in member order; the strategy then
// starts its next generation.
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

namespace evokit {

struct SolverState;

class AskTellStrategy {
 public:
  // What a replica (an evaluation worker) gets to rebuild members.
  enum class ReplicaState {
    kFullState,   // the full state (the strategy is smaller than its members)
    kMemberRows,  // the generation's member rows (lambda * n floats)
    kSmaller,     // whichever of the two holds fewer values
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

 protected:
  AskTellStrategy() = default;
  AskTellStrategy(const AskTellStrategy&) = default;
  AskTellStrategy& operator=(const AskTellStrategy&) = default;
};

}  // namespace evokit
