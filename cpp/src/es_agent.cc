// ESAgent: the original agent (centre parameters, sampler, optimizer) and its
// sampling clones, over flat parameter vectors.
//
// Ownership. The original and every clone hold a std::shared_ptr to one
// Shared: options, sampler (and its noise table), centre parameters and
// optimizer live as long as the last agent that uses them. A clone owns only
// its SamplingInfo. Its perturbed parameters are materialised on demand into
// a buffer of Shared's pool, which holds at most `pool_capacity` buffers of
// num_params floats: N clones cost N infos plus the pool, not N parameter
// copies. A buffer is tagged with the clone, noise version and centre version
// it holds; a clone finds its parameters still there, refills its own buffer,
// takes a new one while the pool has room, or else takes the least recently
// used buffer from another clone (which will refill one when asked again).
//
// Threading. clone() is thread-safe (the clone counter and the per-clone
// sampling streams are guarded by a mutex); add_noise/set_noise/params() on
// distinct clones may run concurrently with each other (the pool's tags are
// guarded by a mutex, perturbation runs outside it into a buffer tagged for
// the caller), but not with update() or set_center(), which write the centre.
// A moved-from agent may only be destroyed or assigned to.
//
// Determinism. Every parallel loop here (perturbation, gradient, correction,
// optimizer) works on fixed parameter blocks and sums over samples and
// iterations in a fixed order, so updates are bit-identical for any
// num_threads.
#include "evokit/es_agent.h"

#include <algorithm>
#include <atomic>
#include <climits>
#include <cmath>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>

#include "messages.h"
#include "parallel.h"

namespace evokit {

namespace detail {
namespace {

// Floats per parallel work item of the correction for older iterations.
constexpr std::size_t kCorrectionBlock = 4096;

// Index of the first non-finite value of v, or v.size().
std::size_t first_non_finite(const std::vector<float>& v) {
  for (std::size_t j = 0; j < v.size(); ++j) {
    if (!std::isfinite(v[j])) return j;
  }
  return v.size();
}

void require_finite_params(const std::vector<float>& params, const char* what) {
  const std::size_t bad = first_non_finite(params);
  if (bad < params.size()) {
    throw std::invalid_argument(std::string(what) + "[" + std::to_string(bad) + "] is " +
                                format_number(params[bad]));
  }
}

void validate_fitness_shaping(FitnessShaping method) {
  switch (method) {
    case FitnessShaping::kRaw:
    case FitnessShaping::kCenteredRank:
    case FitnessShaping::kZScore:
      return;
  }
  throw std::invalid_argument("fitness_shaping: unknown value " +
                              std::to_string(static_cast<int>(method)) +
                              ", expected one of CENTERED_RANK, Z_SCORE, RAW");
}

// The one key of a Gaussian sampling info; what() names the info in errors
// ("sampling info" or "sampling info 3"), built only when there is an error.
template <class What>
std::int64_t single_key(const SamplingInfo& info, const What& what) {
  if (info.key.empty()) throw std::invalid_argument(what() + " has no key");
  if (info.key.size() != 1) {
    throw std::invalid_argument(what() + " has " + std::to_string(info.key.size()) +
                                " keys, Gaussian sampling uses exactly 1");
  }
  return info.key[0];
}

}  // namespace
}  // namespace detail

std::unique_ptr<Optimizer> make_optimizer(const OptimizerOptions& options,
                                          std::size_t num_params) {
  switch (options.type) {
    case OptimizerOptions::Type::kSGD:
      return std::make_unique<SGD>(options.learning_rate, num_params);
    case OptimizerOptions::Type::kMomentum:
      return std::make_unique<Momentum>(options.learning_rate, options.momentum, num_params);
    case OptimizerOptions::Type::kAdam:
      return std::make_unique<Adam>(options.learning_rate, options.beta1, options.beta2,
                                    options.epsilon, num_params);
  }
  throw std::invalid_argument("optimizer.type: unknown value " +
                              std::to_string(static_cast<int>(options.type)) +
                              ", expected one of SGD, MOMENTUM, ADAM");
}

struct ESAgent::Shared {
  Shared(const SolverOptions& solver_options, std::unique_ptr<Optimizer> opt,
         std::vector<float> params)
      : options(solver_options),
        sampler(solver_options.sampling),
        center(std::move(params)),
        optimizer(std::move(opt)) {}

  const SolverOptions options;  // options.sampling.num_params == center.size()
  const GaussianSampler sampler;
  std::vector<float> center;  // sized once here, never reallocated
  std::unique_ptr<Optimizer> optimizer;

  std::atomic<std::uint64_t> sampling_stream{0};  // for clones made from now on
  std::mutex mutex;                                // guards the members below
  int num_clones = 0;
  std::vector<std::uint64_t> clone_streams;  // clone_streams[c]: the stream of clone c

  // Bumped by every change of the centre (update, set_center): a buffer
  // materialised from an older centre is stale.
  std::atomic<std::uint64_t> center_version{0};
  std::mutex pool_mutex;  // guards pool, use_clock and every buffer's tags
  std::size_t pool_capacity = 1;
  std::vector<std::shared_ptr<ParamsBuffer>> pool;
  std::uint64_t use_clock = 0;
};

struct ESAgent::ParamsBuffer {
  explicit ParamsBuffer(std::size_t n) : data(n) {}
  std::vector<float> data;
  int owner = -1;  // clone id, -1 for none
  std::uint64_t noise_version = 0;
  std::uint64_t center_version = 0;
  bool ready = false;     // data holds the tagged parameters
  std::uint64_t last_use = 0;
};

ESAgent::ESAgent(const SolverOptions& options, std::vector<float> params) {
  // Cheap checks first, so that a bad option never waits for the table.
  if (params.empty()) {
    throw std::invalid_argument("params must not be empty (num_params must be > 0, got 0)");
  }
  detail::require_finite_params(params, "params");
  detail::require_num_threads(options.num_threads);
  if (!(options.weight_decay >= 0.0f) || !std::isfinite(options.weight_decay)) {
    throw std::invalid_argument("weight_decay must be >= 0 and finite, got " +
                                detail::format_number(options.weight_decay));
  }
  detail::validate_fitness_shaping(options.fitness_shaping);

  SolverOptions resolved = options;
  resolved.sampling.num_params = params.size();
  std::unique_ptr<Optimizer> optimizer = make_optimizer(resolved.optimizer, params.size());
  // The sampler validates its options before it builds the table.
  shared_ = std::make_shared<Shared>(resolved, std::move(optimizer), std::move(params));
  const std::size_t buffer_bytes = shared_->center.size() * sizeof(float);
  shared_->pool_capacity = std::max<std::size_t>(1, options.params_pool_bytes / buffer_bytes);
}

ESAgent::ESAgent(std::shared_ptr<Shared> shared, int clone_id)
    : shared_(std::move(shared)), clone_id_(clone_id) {}

ESAgent::ESAgent(ESAgent&&) noexcept = default;
ESAgent& ESAgent::operator=(ESAgent&&) noexcept = default;
ESAgent::~ESAgent() = default;

std::unique_ptr<ESAgent> ESAgent::clone() {
  int id;
  {
    std::lock_guard<std::mutex> lock(shared_->mutex);
    if (shared_->num_clones == INT_MAX) {
      throw std::length_error("clone(): an agent can make at most " + std::to_string(INT_MAX) +
                              " clones");
    }
    // May throw (bad_alloc) before anything changed.
    shared_->clone_streams.push_back(shared_->sampling_stream.load());
    id = shared_->num_clones++;
  }
  // Not make_unique: the constructor is private.
  return std::unique_ptr<ESAgent>(new ESAgent(shared_, id));
}

bool ESAgent::is_clone() const noexcept { return clone_id_ >= 0; }

int ESAgent::clone_id() const noexcept { return clone_id_; }

SamplingInfo ESAgent::add_noise() {
  if (!is_clone()) {
    throw std::logic_error(
        "add_noise() is for sampling agents: call it on a clone, not on the agent that owns "
        "the solver");
  }
  const bool antithetic = shared_->options.antithetic;
  const auto clone = static_cast<std::uint64_t>(clone_id_);
  const std::uint64_t pair = antithetic ? clone / 2 : clone;
  std::uint64_t stream;
  {
    std::lock_guard<std::mutex> lock(shared_->mutex);
    stream = shared_->clone_streams[static_cast<std::size_t>(clone_id_)];
  }
  const std::int64_t iteration = model_iter_id();

  SamplingInfo info;
  info.key = {shared_->sampler.draw_key(static_cast<std::uint64_t>(iteration), pair, draws_,
                                        stream)};
  info.model_iter_id = iteration;
  info.mirrored = antithetic && clone % 2 == 1;

  // The key is in range by construction; params() materialises the noise.
  info_ = info;
  has_info_ = true;
  ++noise_version_;
  ++draws_;
  return info;
}

void ESAgent::set_noise(const SamplingInfo& info) {
  if (!is_clone()) {
    throw std::logic_error(
        "set_noise() is for sampling agents: call it on a clone, not on the agent that owns "
        "the solver");
  }
  const std::int64_t key = detail::single_key(info, [] { return std::string("sampling info"); });
  shared_->sampler.check_key(key);  // std::out_of_range
  SamplingInfo recorded = info;
  recorded.model_iter_id = model_iter_id();

  info_ = std::move(recorded);
  has_info_ = true;
  ++noise_version_;
}

bool ESAgent::has_noise() const noexcept {
  return has_info_ && info_.model_iter_id == model_iter_id();
}

const std::vector<float>& ESAgent::params() const {
  if (!has_noise()) return shared_->center;
  Shared& s = *shared_;
  const std::uint64_t center_version = s.center_version.load();
  std::shared_ptr<ParamsBuffer> buffer;
  {
    std::lock_guard<std::mutex> lock(s.pool_mutex);
    const bool mine = buffer_ != nullptr && buffer_->owner == clone_id_;
    if (mine && buffer_->ready && buffer_->noise_version == noise_version_ &&
        buffer_->center_version == center_version) {
      buffer_->last_use = ++s.use_clock;
      return buffer_->data;
    }
    if (mine) {
      buffer = buffer_;  // refill this clone's own buffer in place
    } else if (s.pool.size() < s.pool_capacity) {
      s.pool.push_back(std::make_shared<ParamsBuffer>(s.center.size()));  // may throw: no change
      buffer = s.pool.back();
    } else {
      buffer = *std::min_element(s.pool.begin(), s.pool.end(),
                                 [](const auto& a, const auto& b) {
                                   return a->last_use < b->last_use;
                                 });
    }
    buffer->owner = clone_id_;
    buffer->noise_version = noise_version_;
    buffer->center_version = center_version;
    buffer->ready = false;
    buffer->last_use = ++s.use_clock;
  }
  // Outside the lock: the buffer is tagged for this clone and most recently
  // used, so no other clone takes it meanwhile (see the header).
  s.sampler.perturb(s.center.data(), info_.key[0], info_.mirrored ? -1.0f : 1.0f,
                    buffer->data.data(), s.options.num_threads);
  {
    std::lock_guard<std::mutex> lock(s.pool_mutex);
    if (buffer->owner == clone_id_ && buffer->noise_version == noise_version_) buffer->ready = true;
  }
  buffer_ = std::move(buffer);
  return buffer_->data;
}

std::size_t ESAgent::num_param_buffers() const {
  std::lock_guard<std::mutex> lock(shared_->pool_mutex);
  return shared_->pool.size();
}

std::size_t ESAgent::param_buffer_capacity() const noexcept { return shared_->pool_capacity; }

const std::vector<float>& ESAgent::center() const noexcept { return shared_->center; }

std::size_t ESAgent::num_params() const noexcept { return shared_->center.size(); }

std::int64_t ESAgent::model_iter_id() const noexcept { return shared_->optimizer->steps(); }

UpdateStats ESAgent::update(const std::vector<SamplingInfo>& infos,
                            const std::vector<float>& rewards, const ParamsLookup& history) {
  if (is_clone()) {
    throw std::logic_error(
        "update() must be called on the agent that owns the solver, not on a clone");
  }
  Shared& s = *shared_;
  const std::size_t n = infos.size();
  const std::size_t p = s.center.size();
  const std::int64_t current = model_iter_id();

  // ---- validate everything; nothing changes until the optimizer step ----
  if (n != rewards.size()) {
    throw std::invalid_argument("update() got " + std::to_string(n) + " sampling infos but " +
                                std::to_string(rewards.size()) +
                                " rewards; they must pair up one to one");
  }
  if (n == 0) throw std::invalid_argument("update() needs at least one sample, got none");

  std::vector<std::int64_t> keys(n);
  std::vector<float> signs(n);
  // The centre of each older iteration a sample was drawn at, in ascending
  // iteration order (the order the corrections are summed in).
  std::map<std::int64_t, const std::vector<float>*> older;
  std::size_t num_corrected = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const SamplingInfo& info = infos[i];
    const auto what = [i] { return "sampling info " + std::to_string(i); };
    keys[i] = detail::single_key(info, what);
    try {
      s.sampler.check_key(keys[i]);
    } catch (const std::out_of_range& e) {
      throw std::out_of_range(what() + ": " + e.what());
    }
    signs[i] = info.mirrored ? -1.0f : 1.0f;
    const std::int64_t t = info.model_iter_id;
    if (t > current) {
      throw std::invalid_argument(what() + " was drawn at model iteration " + std::to_string(t) +
                                  " but the agent is at iteration " + std::to_string(current));
    }
    if (t == current) continue;
    ++num_corrected;
    if (older.count(t) != 0) continue;  // looked up (and checked) for an earlier sample
    const std::string drawn_at = what() + " was drawn at model iteration " + std::to_string(t);
    const std::vector<float>* theta_t = history ? history(t) : nullptr;
    if (theta_t == nullptr) {
      throw std::invalid_argument(drawn_at +
                                  ", which is not available (pass its parameters to correct "
                                  "for it)");
    }
    if (theta_t->size() != p) {
      throw std::invalid_argument(drawn_at + ", which is not available: history gave " +
                                  std::to_string(theta_t->size()) +
                                  " parameters for it, expected num_params " + std::to_string(p));
    }
    const std::size_t bad = detail::first_non_finite(*theta_t);
    if (bad < p) {
      throw std::invalid_argument(drawn_at + ", whose parameters from history hold " +
                                  detail::format_number((*theta_t)[bad]) + " at index " +
                                  std::to_string(bad));
    }
    older.emplace(t, theta_t);
  }
  for (std::size_t i = 0; i < n; ++i) {
    if (!std::isfinite(rewards[i])) {
      throw std::invalid_argument("reward of sample " + std::to_string(i) + " is " +
                                  detail::format_number(rewards[i]));
    }
  }

  // ---- the descent direction: -g + weight_decay * theta -------------------
  const std::vector<float> weights =
      shape_fitness(rewards.data(), n, s.options.fitness_shaping);
  std::vector<float> direction(p);
  s.sampler.descent_direction(keys.data(), signs.data(), weights.data(), n, s.center.data(),
                              s.options.weight_decay, direction.data(), s.options.num_threads);

  // Samples from an older iteration u perturbed theta_u, i.e. theta_t by
  // sigma * eps'_i with eps'_i = s_i eps_i + (theta_u - theta_t) / sigma. Their
  // extra share of g is 1 / (N sigma^2) * W_u * (theta_u - theta_t), with W_u
  // the sum of their weights, and the direction is -g (+ decay):
  //   direction -= 1 / (N sigma^2) * sum_u W_u * (theta_u - theta_t).
  if (!older.empty()) {
    const double sigma = s.sampler.sigma();
    const double scale = 1.0 / (static_cast<double>(n) * sigma * sigma);
    std::vector<double> coef;  // scale * W_u, in ascending u
    std::vector<const float*> thetas;
    for (const auto& [iteration, theta_u] : older) {
      double w_sum = 0.0;
      for (std::size_t i = 0; i < n; ++i) {  // in sample order
        if (infos[i].model_iter_id == iteration) w_sum += static_cast<double>(weights[i]);
      }
      coef.push_back(scale * w_sum);
      thetas.push_back(theta_u->data());
    }
    const float* theta = s.center.data();
    float* dir = direction.data();
    const std::size_t blocks = detail::ceil_div(p, detail::kCorrectionBlock);
    const int threads = detail::team_size(blocks, s.options.num_threads);
    detail::parallel_items(blocks, threads, [&](std::size_t b) {
      const std::size_t begin = b * detail::kCorrectionBlock;
      const std::size_t end = std::min(p, begin + detail::kCorrectionBlock);
      for (std::size_t j = begin; j < end; ++j) {
        const double theta_j = theta[j];
        double correction = 0.0;
        for (std::size_t u = 0; u < coef.size(); ++u) {  // ascending iterations
          correction += coef[u] * (static_cast<double>(thetas[u][j]) - theta_j);
        }
        dir[j] = static_cast<float>(static_cast<double>(dir[j]) - correction);
      }
    });
  }

  // Validates the direction (finite) before it changes anything.
  s.optimizer->step(s.center.data(), direction.data(), p, s.options.num_threads);
  s.center_version.fetch_add(1);

  UpdateStats stats;
  stats.num_samples = n;
  stats.num_corrected = num_corrected;
  stats.model_iter_id = model_iter_id();
  return stats;
}

void ESAgent::set_sampling_stream(std::uint64_t stream) noexcept {
  shared_->sampling_stream.store(stream);
}

std::uint64_t ESAgent::sampling_stream() const noexcept { return shared_->sampling_stream.load(); }

const SolverOptions& ESAgent::options() const noexcept { return shared_->options; }

const GaussianSampler& ESAgent::sampler() const noexcept { return shared_->sampler; }

Optimizer& ESAgent::optimizer() {
  if (is_clone()) {
    throw std::logic_error(
        "optimizer() belongs to the agent that owns the solver, not to a clone");
  }
  return *shared_->optimizer;
}

void ESAgent::set_center(const std::vector<float>& params) {
  if (is_clone()) {
    throw std::logic_error(
        "set_center() must be called on the agent that owns the solver, not on a clone");
  }
  if (params.size() != shared_->center.size()) {
    throw std::invalid_argument("set_center() got " + std::to_string(params.size()) +
                                " parameters, expected num_params " +
                                std::to_string(shared_->center.size()));
  }
  detail::require_finite_params(params, "params");
  std::copy(params.begin(), params.end(), shared_->center.begin());  // no reallocation
  shared_->center_version.fetch_add(1);
}

}  // namespace evokit
