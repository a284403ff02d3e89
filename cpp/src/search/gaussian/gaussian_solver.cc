// GaussianStrategy: OpenAI-ES and ARS; see evokit/gaussian_solver.h.
//
// Determinism. Every parallel loop here (gradient, correction, optimizer)
// works on fixed parameter blocks and sums over samples and iterations in a
// fixed order, so updates are bit-identical for any num_threads.
#include "evokit/gaussian_solver.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>

#include "evokit/noise.h"
#include "evokit/population.h"
#include "common/messages.h"
#include "common/parallel.h"
#include "search/option_checks.h"

namespace evokit {

namespace {

constexpr char kCounters[] = "draws.counters";
constexpr char kOptimizerPrefix[] = "optimizer.";

// Floats per parallel work item of the correction for older iterations.
constexpr std::size_t kCorrectionBlock = 4096;

// Index of the first non-finite value of v[0..n), or n.
std::size_t first_non_finite(const float* v, std::size_t n) {
  for (std::size_t j = 0; j < n; ++j) {
    if (!std::isfinite(v[j])) return j;
  }
  return n;
}

void require_finite_params(const float* params, std::size_t n, const char* what) {
  const std::size_t bad = first_non_finite(params, n);
  if (bad < n) {
    throw std::invalid_argument(std::string(what) + "[" + std::to_string(bad) + "] is " +
                                detail::format_number(params[bad]));
  }
}

// to = from[0..to.size()), every value checked finite first (errors name what[j]).
void copy_finite(const float* from, std::vector<float>& to, const char* what) {
  require_finite_params(from, to.size(), what);
  std::copy(from, from + to.size(), to.begin());  // no reallocation
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

// Validates the options and params before anything is built.
const std::vector<float>& checked(const GaussianSolverOptions& options,
                                  const std::vector<float>& params) {
  // Cheap checks first, so that a bad option never waits for the table.
  if (params.empty()) {
    throw std::invalid_argument("params must not be empty (num_params must be > 0, got 0)");
  }
  require_finite_params(params.data(), params.size(), "params");
  detail::require_num_threads(options.num_threads);
  if (!(options.weight_decay >= 0.0f) || !std::isfinite(options.weight_decay)) {
    throw std::invalid_argument("weight_decay must be >= 0 and finite, got " +
                                detail::format_number(options.weight_decay));
  }
  validate_fitness_shaping(options.fitness_shaping);
  if (options.ars) {
    if (!options.antithetic) {
      throw std::invalid_argument("ARS samples mirrored pairs: antithetic must be true");
    }
    if (options.optimizer.type != OptimizerOptions::Type::kSGD) {
      throw std::invalid_argument("ARS takes plain steps: the optimizer must be SGD");
    }
    if (options.top_directions < 0) {
      throw std::invalid_argument("top_directions must be >= 0, got " +
                                  std::to_string(options.top_directions));
    }
  }
  return params;
}

GaussianSolverOptions resolved(GaussianSolverOptions options, std::size_t n) {
  options.sampling.num_params = n;
  return options;
}

}  // namespace

GaussianStrategy::GaussianStrategy(const GaussianSolverOptions& options, std::vector<float> params)
    : options_(resolved(options, checked(options, params).size())),
      // The sampler validates its options before it builds the table.
      sampler_(options_.sampling),
      optimizer_(make_optimizer(options.optimizer, params.size())),
      center_(std::move(params)) {}

std::string GaussianStrategy::kind() const { return options_.ars ? "ARS" : "Gaussian"; }

std::int64_t GaussianStrategy::single_key(const SamplingInfo& info, const std::string& what) const {
  if (info.key.empty()) throw std::invalid_argument(what + " has no key");
  if (info.key.size() != 1) {
    throw std::invalid_argument(what + " has " + std::to_string(info.key.size()) +
                                " keys, Gaussian sampling uses exactly 1");
  }
  return info.key[0];
}

SamplingInfo GaussianStrategy::draw_member(int clone, std::uint64_t stream) {
  if (clone < 0) throw std::invalid_argument("clone must be >= 0, got " + std::to_string(clone));
  const auto c = static_cast<std::uint64_t>(clone);
  std::uint64_t counter;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (counters_.size() <= c) counters_.resize(c + 1, 0);
    counter = counters_[c]++;
  }
  return sample_of(c, counter, stream);
}

SamplingInfo GaussianStrategy::sample_of(std::uint64_t clone, std::uint64_t n,
                                         std::uint64_t stream) const {
  const bool antithetic = options_.antithetic;
  SamplingInfo info;
  const std::int64_t iteration = sample_iteration();
  info.key = {sampler_.draw_key(static_cast<std::uint64_t>(iteration),
                                antithetic ? clone / 2 : clone, n, stream)};
  info.model_iter_id = iteration;
  info.mirrored = antithetic && clone % 2 == 1;
  return info;
}

std::uint64_t GaussianStrategy::draws(int clone) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto c = static_cast<std::size_t>(clone);
  return clone >= 0 && c < counters_.size() ? counters_[c] : 0;
}

void GaussianStrategy::check_sample(const SamplingInfo& info) const {
  sampler_.check_key(single_key(info, "sampling info"));  // std::out_of_range
}

void GaussianStrategy::rebuild_sample(const SamplingInfo& info, float* out,
                                      int num_threads) const {
  const std::int64_t key = single_key(info, "sampling info");
  sampler_.perturb(center_.data(), key, info.mirrored ? -1.0f : 1.0f, out, num_threads);
}

Population GaussianStrategy::sample_population(const std::vector<const SamplingInfo*>& members,
                                               int num_threads) const {
  std::vector<std::int64_t> keys(members.size(), 0);
  std::vector<float> signs(members.size(), 0.0f);
  for (std::size_t i = 0; i < members.size(); ++i) {
    if (members[i] == nullptr) continue;  // the centre: sign 0
    keys[i] = single_key(*members[i], "sampling info " + std::to_string(i));
    signs[i] = members[i]->mirrored ? -1.0f : 1.0f;
  }
  return Population(sampler_, center_, std::move(keys), std::move(signs), num_threads);
}

std::size_t GaussianStrategy::tell_samples(const std::vector<SamplingInfo>& infos,
                                           const std::vector<double>& rewards,
                                           const ParamsLookup& history) {
  const std::size_t n = infos.size();
  const std::size_t p = center_.size();
  const std::int64_t current = sample_iteration();

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
    const auto what = [i] { return "sampling info " + std::to_string(i); };  // only for a message
    keys[i] = info.key.size() == 1 ? info.key[0] : single_key(info, what());
    try {
      sampler_.check_key(keys[i]);
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
    const std::size_t bad = first_non_finite(theta_t->data(), p);
    if (bad < p) {
      throw std::invalid_argument(drawn_at + ", whose parameters from history hold " +
                                  detail::format_number((*theta_t)[bad]) + " at index " +
                                  std::to_string(bad));
    }
    older.emplace(t, theta_t);
  }
  std::vector<float> r(n);
  for (std::size_t i = 0; i < n; ++i) {
    r[i] = static_cast<float>(rewards[i]);
    if (!std::isfinite(r[i])) {
      const bool overflow = std::isfinite(rewards[i]);
      throw std::invalid_argument("reward of sample " + std::to_string(i) + " is " +
                                  detail::format_number(rewards[i]) +
                                  (overflow ? ", beyond the float32 range" : ""));
    }
  }

  // ---- the descent direction: -g + weight_decay * theta -------------------
  const std::vector<float> weights =
      options_.ars ? ars_weights(infos, keys, r, options_.top_directions, sampler_.sigma())
                   : shape_fitness(r.data(), n, options_.fitness_shaping);
  std::vector<float> direction(p);
  sampler_.descent_direction(keys.data(), signs.data(), weights.data(), n, center_.data(),
                             options_.weight_decay, direction.data(), options_.num_threads);

  // Samples from an older iteration u perturbed theta_u, i.e. theta_t by
  // sigma * eps'_i with eps'_i = s_i eps_i + (theta_u - theta_t) / sigma. Their
  // extra share of g is 1 / (N sigma^2) * W_u * (theta_u - theta_t), with W_u
  // the sum of their weights, and the direction is -g (+ decay):
  //   direction -= 1 / (N sigma^2) * sum_u W_u * (theta_u - theta_t).
  if (!older.empty()) {
    const double sigma = sampler_.sigma();
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
    const float* theta = center_.data();
    float* dir = direction.data();
    const std::size_t blocks = detail::ceil_div(p, kCorrectionBlock);
    const int threads = detail::team_size(blocks, options_.num_threads);
    detail::parallel_items(blocks, threads, [&](std::size_t b) {
      const std::size_t begin = b * kCorrectionBlock;
      const std::size_t end = std::min(p, begin + kCorrectionBlock);
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
  optimizer_->step(center_.data(), direction.data(), p, options_.num_threads);
  return num_corrected;
}

// ---- generations ------------------------------------------------------------

std::vector<SamplingInfo> GaussianStrategy::generation() const {
  const std::size_t lambda = options_.population_size;
  if (lambda == 0) {
    throw std::logic_error(kind() + " strategy with population_size 0 has no fixed generation: "
                           "its members are drawn on demand (draw_member); give it a "
                           "population_size to run it by generations");
  }
  std::vector<SamplingInfo> members(lambda);
  std::lock_guard<std::mutex> lock(mutex_);
  for (std::size_t c = 0; c < lambda; ++c) {
    members[c] = sample_of(c, c < counters_.size() ? counters_[c] : 0, /*stream=*/0);
  }
  return members;
}

std::vector<std::vector<std::int64_t>> GaussianStrategy::member_keys() const {
  std::vector<std::vector<std::int64_t>> keys;
  for (const SamplingInfo& info : generation()) keys.push_back({info.key[0], info.mirrored ? 1 : 0});
  return keys;
}

void GaussianStrategy::rebuild_member(const std::vector<std::int64_t>& key, float* out) const {
  if (key.size() != 2 || (key[1] != 0 && key[1] != 1)) {
    throw std::invalid_argument("a " + kind() + " member key is {noise key, mirrored (0 or 1)}, "
                                "got " + std::to_string(key.size()) + " values");
  }
  sampler_.perturb(center_.data(), key[0], key[1] != 0 ? -1.0f : 1.0f, out, 1);
}

std::pair<std::size_t, std::string> GaussianStrategy::member_requirement() const {
  return {1, "members"};
}

void GaussianStrategy::tell_members(const std::vector<double>& values) {
  const std::vector<SamplingInfo> members = generation();
  if (values.size() != members.size()) {
    throw std::invalid_argument("tell_members() got " + std::to_string(values.size()) +
                                " values for the " + std::to_string(members.size()) +
                                " members of the generation");
  }
  std::vector<double> rewards(values.size());
  for (std::size_t m = 0; m < values.size(); ++m) rewards[m] = -values[m];
  tell_samples(members, rewards, nullptr);
  // The generation was drawn: each clone's counter advances as a draw would.
  std::lock_guard<std::mutex> lock(mutex_);
  if (counters_.size() < members.size()) counters_.resize(members.size(), 0);
  for (std::size_t c = 0; c < members.size(); ++c) ++counters_[c];
}

void GaussianStrategy::center_params(float* out) const {
  std::copy(center_.begin(), center_.end(), out);
}

// ---- state --------------------------------------------------------------------

void GaussianStrategy::save_entries(SolverState& state) const {
  // The centre is the model's (model.onnx): not repeated here.
  for (const std::string& name : optimizer_->state_names()) {
    state.floats[kOptimizerPrefix + name] = optimizer_->state(name);
  }
  std::lock_guard<std::mutex> lock(mutex_);
  state.ints[kCounters].assign(counters_.begin(), counters_.end());
}

void GaussianStrategy::load_entries(const SolverState& state) {
  const std::size_t p = center_.size();
  // Check everything first: each optimizer vector present with p values,
  // no other float entry, counters >= 0.
  const std::vector<std::string> names = optimizer_->state_names();
  std::vector<const std::vector<float>*> vectors;
  for (const std::string& name : names) {
    vectors.push_back(&state.float_array(kOptimizerPrefix + name, p));
  }
  for (const auto& entry : state.floats) {
    const std::string& name = entry.first;
    const bool known = name.rfind(kOptimizerPrefix, 0) == 0 &&
                       std::find(names.begin(), names.end(),
                                 name.substr(sizeof(kOptimizerPrefix) - 1)) != names.end();
    if (!known) {
      throw std::invalid_argument("state vector '" + name + "' is not a state of the " +
                                  optimizer_->name() + " optimizer");
    }
  }
  const std::vector<std::int64_t>& saved = state.int_array(kCounters);
  for (std::size_t c = 0; c < saved.size(); ++c) {
    if (saved[c] < 0) {
      throw std::invalid_argument(std::string(kCounters) + "[" + std::to_string(c) +
                                  "] must be >= 0, got " + std::to_string(saved[c]));
    }
  }
  std::vector<std::uint64_t> counters(saved.begin(), saved.end());
  for (std::size_t k = 0; k < names.size(); ++k) optimizer_->state(names[k]) = *vectors[k];
  optimizer_->set_steps(state.model_iter_id);
  std::lock_guard<std::mutex> lock(mutex_);
  counters_ = std::move(counters);
}

void GaussianStrategy::load_center(const float* center, std::int64_t iteration) {
  copy_finite(center, center_, "center");
  optimizer_->set_steps(iteration);
}

void GaussianStrategy::set_center(const float* params) { copy_finite(params, center_, "params"); }

// ---- options ----------------------------------------------------------------

namespace {

// The noise options that gaussian_sampling and ars_sampling share, below `gs`.
void validate_noise_options(const OptionSet& o, const std::string& gs,
                            std::optional<std::size_t> num_params) {
  using namespace detail;
  const std::int64_t n = o.integer("population_size");
  at_least(o, "population_size", 1);
  if (o.flag("antithetic") && n % 2 != 0) {
    fail("population_size", "must be even when solver.antithetic is true, got " +
                                std::to_string(n));
  }
  positive(o, gs + "std");
  if (o.flag(gs + "cached")) {
    at_least(o, gs + "cache_size", 1);
    const std::int64_t size = o.integer(gs + "cache_size");
    if (num_params && size < static_cast<std::int64_t>(*num_params)) {
      fail(gs + "cache_size", "(" + std::to_string(size) + ") is smaller than the model (" +
                                  std::to_string(*num_params) + " parameters): raise solver." +
                                  gs + "cache_size to at least " + std::to_string(*num_params) +
                                  " (a table many times larger gives more distinct noise)");
    }
  }
}

GaussianSolverOptions noise_options(const OptionSet& o, const std::string& gs, int num_threads) {
  GaussianSolverOptions options;
  options.sampling.seed = static_cast<std::uint64_t>(o.integer(gs + "seed"));
  options.sampling.sigma = static_cast<float>(o.real(gs + "std"));
  options.sampling.cached = o.flag(gs + "cached");
  options.sampling.cache_size = static_cast<std::size_t>(std::max<std::int64_t>(0, o.integer(gs + "cache_size")));
  options.sampling.num_threads = num_threads;
  options.antithetic = o.flag("antithetic");
  options.weight_decay = static_cast<float>(o.real("weight_decay"));
  options.num_threads = num_threads;
  options.population_size =
      static_cast<std::size_t>(std::max<std::int64_t>(0, o.integer("population_size")));
  return options;
}

}  // namespace

void validate_gaussian_options(const OptionSet& o, std::optional<std::size_t> num_params) {
  validate_noise_options(o, "sampling.gaussian_sampling.", num_params);
}

GaussianSolverOptions gaussian_options(const OptionSet& o, int num_threads) {
  GaussianSolverOptions options = noise_options(o, "sampling.gaussian_sampling.", num_threads);
  options.optimizer = detail::optimizer_options(o);
  options.fitness_shaping = detail::fitness_shaping(o);
  return options;
}

void validate_ars_options(const OptionSet& o, std::optional<std::size_t> num_params) {
  using namespace detail;
  const std::string as = "sampling.ars_sampling.";
  if (!o.flag("antithetic")) {
    fail("antithetic", "must be true for ARS_SAMPLING (ARS evaluates mirrored pairs), got false");
  }
  validate_noise_options(o, as, num_params);
  positive(o, as + "step_size");
  const std::int64_t b = o.integer(as + "top_directions");
  const std::int64_t pairs = o.integer("population_size") / 2;
  if (b < 0 || b > pairs) {
    fail(as + "top_directions", "must be in [0, population_size / 2 = " + std::to_string(pairs) +
                                    "] (0: every direction), got " + std::to_string(b));
  }
}

GaussianSolverOptions ars_options(const OptionSet& o, int num_threads) {
  const std::string as = "sampling.ars_sampling.";
  GaussianSolverOptions options = noise_options(o, as, num_threads);
  options.ars = true;
  options.top_directions = static_cast<int>(o.integer(as + "top_directions"));
  options.optimizer.type = OptimizerOptions::Type::kSGD;
  options.optimizer.learning_rate = static_cast<float>(o.real(as + "step_size"));
  options.fitness_shaping = FitnessShaping::kRaw;  // not used
  return options;
}

std::unique_ptr<AskTellStrategy> make_gaussian_strategy(const OptionSet& o,
                                                        const std::vector<float>& x0,
                                                        int num_threads) {
  return std::make_unique<GaussianStrategy>(gaussian_options(o, num_threads), x0);
}

std::unique_ptr<AskTellStrategy> make_ars_strategy(const OptionSet& o, const std::vector<float>& x0,
                                                   int num_threads) {
  return std::make_unique<GaussianStrategy>(ars_options(o, num_threads), x0);
}

}  // namespace evokit
