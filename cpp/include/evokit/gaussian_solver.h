// GaussianStrategy: OpenAI-ES over flat parameter vectors (family
// GAUSSIAN_SAMPLING of solver.h), with EvoKit's correction for samples drawn
// at older iterations; a StrategySolver (strategy_solver.h) over it is the
// family's Solver.
//
//   T. Salimans, J. Ho, X. Chen, S. Sidor, I. Sutskever, "Evolution
//   Strategies as a Scalable Alternative to Reinforcement Learning",
//   arXiv:1703.03864 (2017): Eq. (3), with fitness shaping and mirrored
//   sampling.
//
// Keys. The n-th draw for clone c at model iteration t is
//   key = sampler.draw_key(t, pair, n, stream),
//   pair = c / 2 with antithetic sampling (clones 2j and 2j+1 share the key,
//          2j+1 with the mirrored sign), else pair = c,
// n counted per clone; the counters are part of the state (save / load), so
// an agent reloaded from its solver state draws the keys the uninterrupted
// one would have drawn.
//
// Update. For samples i with keys k_i, signs s_i, rewards r_i drawn at
// iterations t_i <= t (the current one), w = shape(r), N = #samples:
//   eps'_i = s_i * eps(k_i) + (theta_{t_i} - theta_t) / sigma
//   g      = 1 / (N * sigma) * sum_i w_i * eps'_i
//   theta <- optimizer(theta, -g + weight_decay * theta)
// (sample i perturbed theta_{t_i} by s_i sigma eps(k_i), i.e. theta_t by
// sigma * eps'_i). The correction is summed per distinct iteration. Rewards
// are rounded to float32 before shaping.
//
// State: "optimizer.<name>" (float32 vectors of the optimizer, e.g. m and v
// for Adam) and "draws.counters" (clone c's draw count at index c).
//
// ARS (family ARS_SAMPLING, options.ars set): Augmented Random Search,
//
//   H. Mania, A. Guy, B. Recht, "Simple random search of static linear
//   policies is competitive for reinforcement learning", arXiv:1803.07055
//   (2018), Algorithm 2 (V1-t / V2-t; V1 / V2 with all directions).
//
// The same keys and noise (sigma is ARS's nu); the samples of one direction
// are the mirrored pair with one key drawn at one iteration (r+ the
// unmirrored one's reward, r- the mirrored one's). Of the K complete pairs,
// the b = top_directions (all for 0 or b >= K) with the largest max(r+, r-)
// (ties: the earlier pair) are used, sigma_R is the standard deviation of
// their 2b rewards (1 when it is 0), and
//   theta <- theta + alpha / (b * sigma_R) * sum_k (r+_k - r-_k) * eps(k_k)
// through the same descent direction (weights +-(r+ - r-) * N * sigma /
// (2 b sigma_R) on the pair, 0 elsewhere) and an SGD step of alpha =
// learning_rate. A sample whose partner is missing gets weight 0; an update
// with no complete pair is refused.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "evokit/ask_tell.h"
#include "evokit/fitness.h"
#include "evokit/gaussian_sampler.h"
#include "evokit/optimizer.h"
#include "evokit/solver.h"

namespace evokit {

struct GaussianSolverOptions {
  GaussianSamplerOptions sampling;  // num_params is set from the parameters
  OptimizerOptions optimizer;
  bool antithetic = true;
  FitnessShaping fitness_shaping = FitnessShaping::kCenteredRank;
  float weight_decay = 0.0f;  // >= 0, finite
  int num_threads = 1;        // >= 1
  // ARS instead of OpenAI-ES (see above): the optimizer must be SGD, the
  // sampling antithetic; fitness_shaping is not used.
  bool ars = false;
  int top_directions = 0;  // ARS's b; 0: all directions
  // Memory for the clones' materialised parameters (ESAgent's pool): at most
  // max(1, params_pool_bytes / (4 * num_params)) buffers.
  std::size_t params_pool_bytes = std::size_t{256} << 20;
  // Members of a generation (member_keys, tell_members), >= 0; 0: no fixed
  // generation (members drawn on demand only).
  std::size_t population_size = 0;
};

// The Gaussian families' strategy: members drawn on demand (see
// AskTellStrategy, ask_tell.h), run by StrategySolver("GAUSSIAN_SAMPLING" or
// "ARS_SAMPLING", ...) like every family (make_gaussian_strategy below).
//
// Members on demand (the training path): draw_member(c, stream) is clone
// c's next key (above), {key} with mirrored = antithetic && c odd;
// tell_samples is the update above; sample_iteration() is the optimizer's
// step count (what Adam's bias correction uses); the replica's state is the
// centre and the iteration (ReplicaState::kCenter).
//
// Generations (population_size = lambda > 0): member_keys() are the keys
// clones 0..lambda-1 would draw next at stream 0, as {key, mirrored (0 or
// 1)}; rebuild_member perturbs the centre with that sign; tell_members
// (values minimised: rewards = -values) is the update above for those
// members and advances each of the lambda clones' counters as a draw
// would. Driving generations through these is, bit for bit, the training
// path in which clones 0..lambda-1 draw at stream 0 and the update tells
// their rewards. population_size 0: no fixed generation (member_keys throws
// std::logic_error).
class GaussianStrategy final : public AskTellStrategy {
 public:
  // Validates options (std::invalid_argument naming the option) and params
  // (non-empty, finite), then builds sampler and optimizer.
  GaussianStrategy(const GaussianSolverOptions& options, std::vector<float> params);

  // ---- AskTellStrategy: generations ---------------------------------------
  std::string kind() const override;  // "Gaussian" or "ARS"
  std::size_t member_size() const override { return center_.size(); }
  void center_params(float* out) const override;
  // {noise key, mirrored (0 or 1)} of clones 0..population_size-1's next
  // draws at stream 0.
  std::vector<std::vector<std::int64_t>> member_keys() const override;
  // The centre perturbed by the key's noise with its sign.
  void rebuild_member(const std::vector<std::int64_t>& key, float* out) const override;
  // One reward per member.
  std::pair<std::size_t, std::string> member_requirement() const override;
  // The training update with rewards -values; each clone's counter advances.
  void tell_members(const std::vector<double>& values) override;
  // "optimizer.<name>" (the optimizer's float32 vectors) and "draws.counters"
  // (clone c's draw count at index c); the optimizer's steps are the state's
  // model_iter_id.
  void save_entries(SolverState& state) const override;
  void load_entries(const SolverState& state) override;
  ReplicaState replica_state() const override { return ReplicaState::kCenter; }
  bool mirrored_members() const override { return options_.antithetic; }

  // ---- AskTellStrategy: members drawn on demand ---------------------------
  bool draws_on_demand() const override { return true; }
  std::int64_t sample_iteration() const override { return optimizer_->steps(); }
  SamplingInfo draw_member(int clone, std::uint64_t stream) override;
  void check_sample(const SamplingInfo& info) const override;
  void rebuild_sample(const SamplingInfo& info, float* out, int num_threads) const override;
  Population sample_population(const std::vector<const SamplingInfo*>& members,
                               int num_threads) const override;
  bool corrects_older_samples() const override { return true; }
  std::size_t tell_samples(const std::vector<SamplingInfo>& infos,
                           const std::vector<double>& rewards,
                           const ParamsLookup& history) override;
  void set_center(const float* params) override;
  void load_center(const float* center, std::int64_t iteration) override;

  const GaussianSolverOptions& options() const noexcept { return options_; }
  const GaussianSampler& sampler() const noexcept { return sampler_; }
  Optimizer& optimizer() noexcept { return *optimizer_; }
  const Optimizer& optimizer() const noexcept { return *optimizer_; }
  const std::vector<float>& center() const noexcept { return center_; }
  // Clone c's draw count (0 for a clone that never drew).
  std::uint64_t draws(int clone) const;

 private:
  std::int64_t single_key(const SamplingInfo& info, const std::string& what) const;
  // The current generation's members as samples (population_size > 0).
  std::vector<SamplingInfo> generation() const;
  // The sample clone c draws as its n-th at the current iteration with salt
  // `stream` (the keys of the header comment).
  SamplingInfo sample_of(std::uint64_t clone, std::uint64_t n, std::uint64_t stream) const;

  const GaussianSolverOptions options_;
  const GaussianSampler sampler_;
  std::unique_ptr<Optimizer> optimizer_;
  std::vector<float> center_;            // sized once, never reallocated
  mutable std::mutex mutex_;             // guards counters_
  std::vector<std::uint64_t> counters_;  // counters_[c]: clone c's draws
};

// The strategy GAUSSIAN_SAMPLING / ARS_SAMPLING solvers run (the registry's),
// its population_size the options' "population_size".
std::unique_ptr<AskTellStrategy> make_gaussian_strategy(const OptionSet& options,
                                                        const std::vector<float>& x0,
                                                        int num_threads);
std::unique_ptr<AskTellStrategy> make_ars_strategy(const OptionSet& options,
                                                   const std::vector<float>& x0, int num_threads);

// The registry's hooks (solver.h) for GAUSSIAN_SAMPLING and ARS_SAMPLING.
void validate_gaussian_options(const OptionSet& options, std::optional<std::size_t> num_params);
GaussianSolverOptions gaussian_options(const OptionSet& options, int num_threads);
void validate_ars_options(const OptionSet& options, std::optional<std::size_t> num_params);
GaussianSolverOptions ars_options(const OptionSet& options, int num_threads);

// ARS's selection (Mania, Guy, Recht 2018, Algorithm 2, lines 6-7) from the
// rewards (maximised) of K mirrored pairs, r_plus[p] and r_minus[p]: the
// top b = min(b, K) pairs by max(r+, r-) (ties: the earlier pair first), in
// that order, and sigma_R, the (population) standard deviation of their 2b
// rewards (1 when they are all equal). ars_weights' selection.
struct ArsSelection {
  std::vector<std::size_t> top;  // b pair indices, best first
  double sigma_r = 1.0;
};
ArsSelection ars_select(const std::vector<double>& r_plus, const std::vector<double>& r_minus,
                        std::size_t b);

// ARS's weights (see above) of samples with these infos and float32 rewards,
// for a descent direction over n = infos.size() samples with noise std
// sigma; *num_pairs receives K, the number of complete pairs. Throws
// std::invalid_argument when there is no complete pair.
std::vector<float> ars_weights(const std::vector<SamplingInfo>& infos,
                               const std::vector<std::int64_t>& keys, const std::vector<float>& r,
                               int top_directions, double sigma, std::size_t* num_pairs = nullptr);

}  // namespace evokit
