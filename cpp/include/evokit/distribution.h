// Distribution strategies: the search-distribution families beside CMA-ES
// (SNES, xNES, PGPE, ARS, CR-FM-NES, LM-MA-ES, CEM, ...) on one base
// (STL + OpenMP).
//
// A strategy keeps a search distribution over R^n, hands out generations of
// population_size members (minimisation: smaller f is better) and updates
// the distribution from their f-values. What every family shares is done
// once here:
//
// Keys and noise. Member k of generation g has the key
//   key(g, k) = hash_draw(seed, g, k / 2 if mirrored else k, kDistributionTag) >> 2
// (in [0, 2^62)) and the standard normal vector
//   z(g, k)[j] = s_k * gaussian_at(seed, key, j)     (noise.h; j < n),
// rounded to float by the noise core and widened to double, with s_k = -1
// for the odd member of a mirrored pair (mirrored() families sample
// antithetic pairs: members 2p and 2p + 1 share a key), else +1. The family
// maps z to the solution, x = transform(z) (e.g. m + sigma * z). So a logged
// (key, member index) rebuilds its member from the state of its generation
// alone: regenerate(k) == row k of ask(). Nothing depends on the thread
// count: every number is computed by one thread in a fixed order.
//
// Generations. ask() returns the population_size x n solutions of the
// current generation (the same ones until tell()), tell(values) takes their
// f-values in the same order, checks them (count, NaN: std::invalid_argument
// naming the index; the state is unchanged then), lets the family update its
// distribution from (z, x, values) and starts the next generation. Ties in
// ranks keep member order (stable sorts).
//
// State. save() / load() as named arrays (SolverState of solver.h): the
// family's own under "<family>.<name>" (lowercase family name) and
// "generation"; load(save()) continues bit for bit, and load() checks every
// entry before it changes anything.
//
// Options. A family is made from an OptionSet (solver.h) of plain names:
// "sigma0", "population_size" (0: the family's default), "seed",
// "num_threads" and the family's own (see each family's source file, whose
// header cites the paper and its update equations next to the code). The
// policy trainer's SamplingConfig message "<family>_sampling" holds the same
// names (see make_distribution_strategy below), so one validation serves both;
// messages name the option with the caller's prefix. A real-valued option
// whose paper default depends on n or lambda takes 0 for that default.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "evokit/ask_tell.h"
#include "evokit/solver.h"

namespace evokit {

// The hash_draw tag of distribution keys (cma_es.h uses the restart index,
// the GA its own tags).
constexpr std::uint64_t kDistributionTag = 0x44495354;  // "DIST"

// As an AskTellStrategy (ask_tell.h) a strategy is the solver's of its
// SamplingConfig type: the members are keyed {member_key(k), k}, rebuilt by
// regenerate; tell_members is tell; the centre is center(); the state
// entries are save()'s; a replica gets the state or the member rows,
// whichever is smaller.
class DistributionStrategy : public AskTellStrategy {
 public:
  virtual ~DistributionStrategy() = default;
  DistributionStrategy(const DistributionStrategy&) = delete;
  DistributionStrategy& operator=(const DistributionStrategy&) = delete;

  // The family's name, as in the registry ("SNES").
  const std::string& family() const noexcept { return family_; }
  std::size_t num_params() const noexcept { return num_params_; }
  std::size_t population_size() const noexcept { return population_size_; }
  std::uint64_t seed() const noexcept { return seed_; }
  int num_threads() const noexcept { return num_threads_; }
  // Generations told so far.
  std::int64_t generation() const noexcept { return generation_; }
  // Whether members 2p and 2p + 1 are an antithetic pair (+z, -z).
  bool mirrored() const noexcept { return mirrored_; }

  // The key of member k of the current generation.
  std::int64_t member_key(std::size_t k) const;
  // The solutions of the current generation, population_size rows of n,
  // row-major. A pure function of the state: asking again gives the same.
  const std::vector<double>& ask();
  // Member k's solution under the current state (== row k of ask()), into
  // out (n doubles). std::out_of_range for k >= population_size.
  void regenerate(std::size_t k, double* out) const;
  // Updates from the f-values (minimised) of the current generation's
  // members, in member order; values may be +-inf, never NaN.
  void tell(const double* values, std::size_t count);

  // The distribution's centre: the solution to deploy (the mean).
  virtual std::vector<double> center() const = 0;
  // The standard deviation of each coordinate under the distribution (the
  // diagonal of its covariance, square-rooted).
  virtual std::vector<double> stds() const = 0;
  // The hyper-parameters in use, defaults resolved (learning rates, weights'
  // sum, ...): what the tests and a user check against the paper.
  virtual std::map<std::string, double> parameters() const = 0;
  // The covariance's condition number (largest over smallest eigenvalue),
  // for stop criteria. This default, (max stds / min stds)^2, is exact for a
  // diagonal covariance and a lower bound of a full one's; a family whose
  // covariance is not diagonal returns its own (CR-FM-NES: an upper bound
  // within a factor of a few). +inf once a standard deviation is 0 or an
  // update left the covariance non-finite.
  virtual double condition() const;

  // The full state; load(save()) continues bit for bit.
  SolverState save() const;
  void load(const SolverState& state);

  // AskTellStrategy.
  std::string kind() const override { return family_; }
  std::size_t member_size() const override { return num_params_; }
  std::vector<std::vector<std::int64_t>> member_keys() const override;
  void prepare_members() override { ask(); }
  void rebuild_member(const std::vector<std::int64_t>& key, float* out) const override;
  std::pair<std::size_t, std::string> member_requirement() const override { return {1, "members"}; }
  void tell_members(const std::vector<double>& values) override;
  void center_params(float* out) const override;
  void save_entries(SolverState& state) const override;
  void load_entries(const SolverState& state) override { load(state); }
  ReplicaState replica_state() const override { return ReplicaState::kSmaller; }
  bool mirrored_members() const override { return mirrored_; }

 protected:
  DistributionStrategy(std::string family, std::size_t num_params, std::size_t population_size,
                       std::uint64_t seed, int num_threads, bool mirrored);

  // x = the solution of standard normal z (n doubles each), under the
  // current distribution. Called from several threads at once.
  virtual void transform(const double* z, double* x) const = 0;
  // The update from one generation: z and x are population_size rows of n
  // (member order), values their f-values (checked). Called before
  // generation() is incremented.
  virtual void update(const std::vector<double>& z, const std::vector<double>& x,
                      const std::vector<double>& values) = 0;
  // One entry of the family's state: `name` (without the prefix) holds
  // *values (n doubles) or *scalar (n = 1), each finite (positive: > 0).
  struct StateEntry {
    const char* name;
    std::vector<double>* values;
    double* scalar;
    std::size_t n;
    bool positive;
  };
  // The family's state as such entries. The default save_state saves them,
  // and load_state checks every one (naming a missing, mis-sized or bad
  // entry) before it replaces any; a family whose state is not only
  // doubles overrides those two instead.
  virtual std::vector<StateEntry> state_entries() { return {}; }
  virtual void save_state(SolverState& state, const std::string& prefix) const;
  virtual void load_state(const SolverState& state, const std::string& prefix);
  // Threads worth using for `work` flops (1 for small work).
  int threads_for(double work) const noexcept;

 private:
  // z of member k of the current generation into z (n doubles).
  void member_z(std::size_t k, double* z) const;
  std::string prefix() const;
  void materialize();

  std::string family_;
  std::size_t num_params_;
  std::size_t population_size_;
  std::uint64_t seed_;
  int num_threads_;
  bool mirrored_;
  std::int64_t generation_ = 0;
  bool sampled_ = false;
  std::vector<double> z_;
  std::vector<double> x_;
};

// ---- helpers the families share ---------------------------------------------

namespace distribution {

// Member indices sorted by f-value, best (smallest) first; ties keep member
// order.
std::vector<std::size_t> ranking(const std::vector<double>& values);
// The NES utilities (Wierstra et al. 2014, JMLR 15, section 3.1, "fitness
// shaping"), indexed by rank i = 1..lambda (best first):
//   u_i = max(0, ln(lambda/2 + 1) - ln i) / sum_j max(0, ln(lambda/2 + 1) - ln j) - 1/lambda
// They sum to 0.
std::vector<double> nes_utilities(std::size_t lambda);

}  // namespace distribution

// ---- the registry ------------------------------------------------------------

struct DistributionFamily {
  const char* name;           // "SNES": the ask/tell class and the state prefix
  // "SNES_SAMPLING": the SamplingConfig.Type value, and "snes_sampling": the
  // SamplingConfig field (its message holds the family's options).
  const char* sampling_type;
  const char* config_field;
  // Checks the family's options (plain names, see above); messages start
  // with prefix + the option's name.
  void (*validate)(const OptionSet& options, const std::string& prefix);
  // The strategy from x0 (n >= 1) and validated options.
  std::unique_ptr<DistributionStrategy> (*make)(std::vector<double> x0, const OptionSet& options);
  // The options whose change would give logged keys another meaning are the
  // same for every family: sampling.type, param_pattern, population_size and
  // sampling.<config_field>.seed (solver_registry.cc derives them).
};

// Every family, in SamplingConfig.Type order.
const std::vector<DistributionFamily>& distribution_families();
// The family named `name` (its name or its sampling type); std::invalid_argument
// listing the known ones otherwise.
const DistributionFamily& distribution_family(const std::string& name);
// Validates (prefix "" : plain names) and makes the strategy.
std::unique_ptr<DistributionStrategy> make_distribution(const std::string& name,
                                                        std::vector<double> x0,
                                                        const OptionSet& options);

// ---- the policy solver's strategy ------------------------------------------------

// The registry hooks (solver.h, solver_registry.cc) for the families'
// SamplingConfig types: the strategy of a StrategySolver (strategy_solver.h),
// its options from solver.population_size, the solver's thread count and
// the fields of solver.sampling.<config_field>; solver.antithetic must be
// false (a mirrored family pairs its own members).
void validate_distribution_solver_options(const OptionSet& options,
                                          std::optional<std::size_t> num_params);
std::unique_ptr<AskTellStrategy> make_distribution_strategy(const OptionSet& options,
                                                            const std::vector<float>& x0,
                                                            int num_threads);

}  // namespace evokit
