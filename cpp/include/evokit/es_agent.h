// ESAgent: EvoKit's agent API over flat parameter vectors (STL + OpenMP).
//
// The original agent owns the centre parameters theta, the sampler (and its
// shared noise table) and the optimizer. clone() makes sampling agents that
// share all of that and own only their SamplingInfo. A clone's perturbed
// parameters are materialised lazily, when params() asks for them, into a
// buffer from a pool shared by all clones and bounded by
// SolverOptions::params_pool_bytes (see params()). The model
// (ONNX), the config file and the logs are the business of the layers above
// (Python, or the evokit::io component); this class sees numbers only.
//
// Keys. The n-th add_noise() of clone c at model iteration t draws
//   key = sampler.draw_key(t, pair, n, sampling_stream),
//   pair = c / 2 with antithetic sampling (clones 2j and 2j+1 share the key,
//          2j+1 with the mirrored sign), else pair = c.
// so keys are a pure function of the config, the iteration and the clone.
//
// Update (OpenAI-ES with EvoKit's correction for samples from older
// iterations). For samples i with keys k_i, signs s_i, rewards r_i drawn at
// iterations t_i <= t (the current one), w = shape(r), N = #samples:
//   eps'_i = s_i * eps(k_i) + (theta_{t_i} - theta_t) / sigma
//   g      = 1 / (N * sigma) * sum_i w_i * eps'_i
//   theta <- optimizer(theta, -g + weight_decay * theta)
// (sample i perturbed theta_{t_i} by s_i sigma eps(k_i), i.e. theta_t by
// sigma * eps'_i). The correction is summed per distinct iteration.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "evokit/fitness.h"
#include "evokit/gaussian_sampler.h"
#include "evokit/optimizer.h"

namespace evokit {

struct OptimizerOptions {
  enum class Type { kSGD, kMomentum, kAdam };
  Type type = Type::kSGD;
  float learning_rate = 0.01f;
  float momentum = 0.9f;  // kMomentum
  float beta1 = 0.9f;     // kAdam
  float beta2 = 0.999f;
  float epsilon = 1e-8f;
};

// Makes the optimizer the options describe; throws std::invalid_argument.
std::unique_ptr<Optimizer> make_optimizer(const OptimizerOptions& options, std::size_t num_params);

struct SolverOptions {
  GaussianSamplerOptions sampling;  // num_params is set from the parameters
  OptimizerOptions optimizer;
  bool antithetic = true;
  FitnessShaping fitness_shaping = FitnessShaping::kCenteredRank;
  float weight_decay = 0.0f;  // >= 0, finite
  int num_threads = 1;        // >= 1
  // Memory for the clones' materialised parameters: the pool holds at most
  // max(1, params_pool_bytes / (4 * num_params)) buffers.
  std::size_t params_pool_bytes = std::size_t{256} << 20;
};

// The core's view of the SamplingInfo message in proto/evokit.proto.
struct SamplingInfo {
  std::vector<std::int64_t> key;
  std::int64_t model_iter_id = 0;
  bool mirrored = false;
};

struct UpdateStats {
  std::size_t num_samples = 0;
  std::size_t num_corrected = 0;  // samples from older iterations
  std::int64_t model_iter_id = 0; // after the update
};

// The centre parameters of an older iteration, or null if unknown.
using ParamsLookup = std::function<const std::vector<float>*(std::int64_t iteration)>;

class ESAgent {
 public:
  // The original agent (init_solver): validates options (std::invalid_argument
  // naming the option) and builds sampler and optimizer. params must be
  // non-empty and finite.
  ESAgent(const SolverOptions& options, std::vector<float> params);

  ESAgent(const ESAgent&) = delete;
  ESAgent& operator=(const ESAgent&) = delete;
  ESAgent(ESAgent&&) noexcept;
  ESAgent& operator=(ESAgent&&) noexcept;
  ~ESAgent();

  // A sampling agent sharing this agent's state (thread-safe). Clone ids
  // count up from 0 in the order clones are made (see Keys above).
  std::unique_ptr<ESAgent> clone();
  bool is_clone() const noexcept;
  int clone_id() const noexcept;  // -1 for the original

  // Clones only (std::logic_error on the original): draw the next key and
  // return its info; the clone's parameters become centre + sign * sigma *
  // eps(key) (materialised by params() when asked for).
  SamplingInfo add_noise();
  // Clones only: take the noise `info` names (validated first).
  void set_noise(const SamplingInfo& info);
  // Whether this clone holds noise drawn at the current iteration (an update
  // drops every clone's noise: clones then predict with the new centre).
  bool has_noise() const noexcept;

  // The parameters to predict with: for a clone with current noise, centre +
  // sign * sigma * eps(key) of the current centre, else the centre itself.
  //
  // The centre's storage never moves: a reference to it stays valid and sees
  // updates for the agent's lifetime. A clone's perturbed parameters live in
  // a buffer of the shared pool: params() materialises them there (perturb,
  // once per noise and centre) unless the clone's last buffer still holds
  // them. A clone keeps its buffer, and refills it in place, until the pool
  // is full and another clone takes it (least recently used first); the
  // reference is valid until then. With params_pool_bytes below N clones'
  // worth, callers must use the reference before asking another clone for
  // its parameters, and concurrent params() calls must number at most the
  // pool's capacity. Not noexcept: the first call may allocate a buffer.
  const std::vector<float>& params() const;
  // How many parameter buffers the clones' pool holds now (<= capacity).
  std::size_t num_param_buffers() const;
  // The most buffers the pool will hold (from params_pool_bytes).
  std::size_t param_buffer_capacity() const noexcept;
  const std::vector<float>& center() const noexcept;
  std::size_t num_params() const noexcept;
  std::int64_t model_iter_id() const noexcept;  // number of updates so far

  // Original only (std::logic_error on a clone). Validates everything before
  // changing anything: sizes equal and > 0, each info has exactly one key in
  // range, finite rewards, model_iter_id <= current, and (for older ones)
  // `history` knows that iteration with num_params values. Errors name the
  // sample: "sampling info 3: ...", "reward of sample 3 is nan".
  UpdateStats update(const std::vector<SamplingInfo>& infos, const std::vector<float>& rewards,
                     const ParamsLookup& history = nullptr);

  // Salt for the keys of clones made afterwards (see Keys).
  void set_sampling_stream(std::uint64_t stream) noexcept;
  std::uint64_t sampling_stream() const noexcept;

  const SolverOptions& options() const noexcept;
  const GaussianSampler& sampler() const noexcept;
  // The optimizer (original only, std::logic_error on a clone), e.g. to save
  // or restore its state; set_model_iter_id via optimizer().set_steps().
  Optimizer& optimizer();
  // Replace the centre parameters (same size; original only), e.g. after
  // loading a model; keeps the optimizer state.
  void set_center(const std::vector<float>& params);

 private:
  struct Shared;
  struct ParamsBuffer;
  ESAgent(std::shared_ptr<Shared> shared, int clone_id);
  std::shared_ptr<Shared> shared_;
  int clone_id_ = -1;
  std::uint64_t draws_ = 0;
  SamplingInfo info_;
  bool has_info_ = false;
  std::uint64_t noise_version_ = 0;  // bumped whenever info_ changes
  // The pool buffer this clone used last; it holds this clone's parameters
  // while its owner tag says so (another clone may have taken it since).
  mutable std::shared_ptr<ParamsBuffer> buffer_;
};

}  // namespace evokit
