// The simple genetic algorithm of Such et al. 2017, "Deep Neuroevolution:
// Genetic Algorithms Are a Competitive Alternative for Training Deep Neural
// Networks for Reinforcement Learning" (arXiv:1712.06567), Algorithm 1:
// truncation selection, Gaussian mutation, elitism with elite re-evaluation,
// and the compact encoding of an individual as its list of seeds.
//
// Encoding (paper, Sec. 3.1). An individual is a list of seeds
// [tau_0, tau_1, ..., tau_m]: tau_0 initialises, each further seed is one
// mutation, and the parameters are rebuilt from the seeds alone:
//   theta_0 = x0 + init_sigma * eps(tau_0)                 (initialisation)
//   theta_k = theta_{k-1} + sigma * eps(tau_k), k = 1..m    (mutation psi)
// where x0 is the initial vector the user supplies (e.g. a policy's own
// weights), sigma is the mutation power, and eps(tau)[j] =
// gaussian_at(options.seed, tau, j) (fill_gaussian(seed, tau, 0, ...)): the
// seed option is the noise seed and the individual's seed names the stream.
// Rebuilding performs exactly these float operations in this order (with
// init_sigma == 0, theta_0 = x0 and no noise is drawn for tau_0), so a list
// of seeds gives the same bits in any thread, process or run, and for any
// num_threads. Seeds lie in [0, kMaxStreamKey].
//
// Each individual is handed out as a SamplingInfo whose key is its seeds and
// whose model_iter_id is the generation that asked for it (mirrored is false).
//
// One generation g (fitness: larger is better, like rewards):
//   1. ask(): N individuals. Generation 0: [tau_0] with tau_0 drawn per index.
//      Later: the num_elites elites of generation g-1 unchanged, then N - E
//      children, each a parent drawn uniformly from the top T of generation
//      g-1 plus one new mutation seed (Algorithm 1, "select parent", "mutate
//      parent"). Every draw is hash_draw(seed, g, index, tag): deterministic
//      (hash_draw reads the low 32 bits of g, so draws repeat after 2^32
//      generations).
//   2. tell(fitness): one score per individual; sort descending (ties keep
//      index order): truncation selection.
//   3. Elite selection. Without re-evaluation (elite_evaluations == 0) the
//      elites are the top num_elites. With it, the candidates are the top
//      elite_candidates plus the previous generation's elites (Algorithm 1:
//      C = P_{1..9} u {Elite}); the caller evaluates every candidate
//      elite_evaluations more times (ask_elite_candidates() /
//      tell_elite_candidates()) and the elites are the candidates with the
//      best mean of these scores, so that one lucky noisy score does not make
//      an elite ("Set Elite <- argmax_{theta in C} 1/30 sum_j F(theta)").
//   4. The ranking [elites, then the others by fitness] gives the parents of
//      generation g+1: its first truncation_size entries.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "evokit/ask_tell.h"
#include "evokit/solver.h"  // SamplingInfo, OptionSet

namespace evokit {

// The defaults are GASamplingConfig's (proto/evokit.proto; the C++ tests
// check them against it): 0 selects the formula written there.
struct GeneticAlgorithmOptions {
  std::size_t population_size = 50;  // N >= 2 (SolverConfig.population_size)
  // T in [1, N]: parents are the top T (0: max(1, N / 5)).
  std::size_t truncation_size = 0;
  std::size_t num_elites = 1;     // E in [0, N - 1]: carried over unchanged
  float mutation_power = 0.02f;   // sigma > 0, finite
  float init_sigma = 0.02f;       // >= 0, finite: noise of generation 0 around x0
  // Elite re-evaluation (Such et al. use 10 candidates and 30 evaluations).
  // elite_evaluations == 0 turns it off; otherwise num_elites >= 1 and
  // num_elites <= elite_candidates <= N (0: min(10, N)).
  std::size_t elite_candidates = 0;
  std::size_t elite_evaluations = 0;
  std::uint64_t seed = 1024;  // seed of the noise and of every draw
  int num_threads = 1;        // >= 1; threads of rebuild_population
};

// The options with the formulas of the 0 defaults applied (options() gives
// these): truncation_size max(1, N / 5), elite_candidates min(10, N).
GeneticAlgorithmOptions resolved_ga_options(GeneticAlgorithmOptions options);

// As an AskTellStrategy (ask_tell.h; ga/ga_solver.cc) it is the GA_SAMPLING
// solver's strategy: the members are ask() in the kFitness phase and
// ask_elite_candidates() in the kEliteScores one (whose values average the
// first elite_evaluations rewards), keyed by their seed lists;
// tell_members tells the negated values (the GA maximises); the centre is
// the best elite (x0 before the first generation); the state entries are
// "ga.*" (strategy_solver.h); a replica gets the state (seed lists).
class GeneticAlgorithm : public AskTellStrategy {
 public:
  // What the algorithm waits for next.
  enum class Phase {
    kFitness,      // tell(): the scores of ask()
    kEliteScores,  // tell_elite_candidates(): re-evaluations of ask_elite_candidates()
  };

  // Validates the options (std::invalid_argument naming the option) and x0
  // (non-empty and finite), then prepares generation 0.
  GeneticAlgorithm(const GeneticAlgorithmOptions& options, std::vector<float> x0);

  // The individuals of the current generation (population_size of them).
  // Valid in both phases; the same until the generation ends.
  const std::vector<SamplingInfo>& ask() const noexcept { return population_; }

  // One score per individual of ask(), in order; larger is better. NaN is
  // refused (std::invalid_argument naming the individual), +-inf allowed.
  // Throws std::logic_error in the kEliteScores phase. Ends the generation
  // unless elite re-evaluation is on (then the phase becomes kEliteScores).
  void tell(const std::vector<double>& fitness);

  // The elite candidates to re-evaluate (kEliteScores phase only, else
  // std::logic_error): the top elite_candidates of the generation by their
  // told fitness, then the previous elites that are not among them.
  const std::vector<SamplingInfo>& ask_elite_candidates() const;

  // elite_evaluations scores per candidate, candidate-major: scores[i * K + k]
  // is evaluation k of candidate i. Elites are the candidates with the
  // highest mean (ties keep candidate order). NaN is refused, as is a mean
  // that is undefined (+inf and -inf for the same candidate). Ends the
  // generation.
  void tell_elite_candidates(const std::vector<double>& scores);
  // The same from each candidate's mean score (finite), as a caller that
  // averaged them gives them.
  void tell_elite_means(const std::vector<double>& means);

  // The parameters of an individual, rebuilt from its seeds (see Encoding):
  // `out` holds num_params() floats. Throws std::invalid_argument for an
  // empty list and std::out_of_range for a seed outside [0, kMaxStreamKey].
  void rebuild(const std::vector<std::int64_t>& seeds, float* out, int num_threads = 1) const;
  std::vector<float> rebuild(const std::vector<std::int64_t>& seeds, int num_threads = 1) const;
  // Row i of `out` (individuals.size() x num_params(), row-major) is
  // rebuild(individuals[i].key); all seeds are validated first. Threaded over
  // (individual, parameter block) with options().num_threads.
  void rebuild_population(const std::vector<SamplingInfo>& individuals, float* out) const;

  // Generations completed (tell, or tell_elite_candidates with re-evaluation).
  std::int64_t generation() const noexcept { return generation_; }
  Phase phase() const noexcept { return phase_; }
  bool reevaluates() const noexcept { return options_.elite_evaluations > 0; }
  // The elites chosen at the end of the last generation, best first, and the
  // scores they were chosen by (the mean re-evaluation, else the told
  // fitness). Empty before the first generation ends or when num_elites == 0.
  const std::vector<SamplingInfo>& elites() const noexcept { return elites_; }
  const std::vector<double>& elite_scores() const noexcept { return elite_scores_; }

  // The population indices by told fitness, best first, while the
  // generation waits for its elite scores (kEliteScores); empty otherwise.
  std::vector<std::size_t> pending_order() const;

  // Restores a checkpoint made of generation(), ask(), elites(),
  // elite_scores() and pending_order(): the algorithm then continues
  // bit-identically. A non-empty `order` (a permutation of the population)
  // restores the kEliteScores phase. Validates sizes and seeds
  // (std::invalid_argument naming the field, expected and actual); the state
  // is unchanged on error.
  void set_state(std::int64_t generation, std::vector<SamplingInfo> population,
                 std::vector<SamplingInfo> elites, std::vector<double> elite_scores,
                 std::vector<std::size_t> order);

  const GeneticAlgorithmOptions& options() const noexcept { return options_; }
  const std::vector<float>& x0() const noexcept { return x0_; }
  std::size_t num_params() const noexcept { return x0_.size(); }

  // AskTellStrategy.
  std::string kind() const override { return "GA"; }
  std::size_t member_size() const override { return num_params(); }
  std::vector<std::vector<std::int64_t>> member_keys() const override;
  void rebuild_member(const std::vector<std::int64_t>& key, float* out) const override;
  std::pair<std::size_t, std::string> member_requirement() const override;
  std::size_t rewards_averaged() const override;
  void tell_members(const std::vector<double>& values) override;
  void center_params(float* out) const override;
  void save_entries(SolverState& state) const override;
  // A fresh GA with these options around the saved x0, given the saved
  // generation; this one is replaced only if it holds.
  void load_entries(const SolverState& state) override;

 private:
  void choose_candidates();
  void select_and_breed(const std::vector<std::size_t>& elite_indices,
                        const std::vector<double>& elite_scores);

  GeneticAlgorithmOptions options_;
  std::vector<float> x0_;
  std::int64_t generation_ = 0;
  Phase phase_ = Phase::kFitness;
  std::vector<SamplingInfo> population_;
  std::vector<std::size_t> order_;       // population indices by told fitness, best first
  std::vector<std::size_t> candidates_;  // population indices of the elite candidates
  std::vector<SamplingInfo> candidate_infos_;
  std::vector<SamplingInfo> elites_;
  std::vector<double> elite_scores_;
};

// The registry's hooks (solver.h, solver_registry.cc) for GA_SAMPLING.
void validate_ga_options(const OptionSet& options, std::optional<std::size_t> num_params);
std::unique_ptr<AskTellStrategy> make_ga_strategy(const OptionSet& options,
                                                  const std::vector<float>& x0, int num_threads);

}  // namespace evokit
