// The simple GA of Such et al. 2017 (arXiv:1712.06567, Algorithm 1); see
// evokit/ga.h for the encoding and the steps of a generation.
//
// Determinism. Every random choice is hash_draw(seed, generation, index, tag)
// and every parameter is rebuilt with the same float operations in the same
// order; parallel loops hand out fixed (individual, parameter block) items,
// so results are bit-identical for any num_threads.
#include "evokit/ga.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <string>
#include <utility>

#include "evokit/gaussian_sampler.h"  // kMaxStreamKey
#include "evokit/noise.h"
#include "evokit/philox.h"
#include "common/messages.h"
#include "common/parallel.h"

namespace evokit {

namespace detail {
namespace {

// Floats per parallel work item of rebuild (16 KiB of noise per thread).
constexpr std::size_t kGaBlock = 4096;

// The last hash_draw argument separates the draws of one (generation, index).
constexpr std::uint64_t kInitSeedTag = 0;
constexpr std::uint64_t kParentTag = 1;
constexpr std::uint64_t kMutationSeedTag = 2;

// A seed in [0, kMaxStreamKey] = [0, 2^62 - 1].
std::int64_t draw_seed(std::uint64_t seed, std::uint64_t generation, std::uint64_t index,
                       std::uint64_t tag) noexcept {
  return static_cast<std::int64_t>(hash_draw(seed, generation, index, tag) >> 2);
}

// floor(h * range / 2^64): a uniform index in [0, range) (multiply-shift).
std::size_t draw_below(std::uint64_t h, std::size_t range) noexcept {
#if defined(__SIZEOF_INT128__)
  __extension__ using uint128 = unsigned __int128;
  return static_cast<std::size_t>((static_cast<uint128>(h) * range) >> 64);
#else
  return static_cast<std::size_t>(static_cast<long double>(h) / 18446744073709551616.0L * range);
#endif
}

void require_at_least(std::size_t value, std::size_t lowest, const char* name) {
  if (value < lowest) {
    throw std::invalid_argument(std::string(name) + " must be >= " + std::to_string(lowest) +
                                ", got " + std::to_string(value));
  }
}

// Throws unless `seeds` is a valid individual; what() names it in messages
// ("individual" or "individual 3"), built only when there is an error.
template <class What>
void validate_seeds(const std::vector<std::int64_t>& seeds, const What& what) {
  if (seeds.empty()) {
    throw std::invalid_argument(what() +
                                " has no seeds (an individual needs at least its "
                                "initialisation seed)");
  }
  for (std::size_t k = 0; k < seeds.size(); ++k) {
    if (seeds[k] < 0 || seeds[k] > kMaxStreamKey) {
      throw std::out_of_range(what() + ": seed " + std::to_string(k) + " is " +
                              std::to_string(seeds[k]) + ", seeds must be in [0, " +
                              std::to_string(kMaxStreamKey) + "]");
    }
  }
}

// Rebuilds parameters [begin, begin + len) of the individual `seeds` into out
// (which points at parameter `begin`); eps is a scratch buffer of len floats.
void rebuild_block(const GeneticAlgorithmOptions& options, const std::vector<float>& x0,
                   const std::vector<std::int64_t>& seeds, std::size_t begin, std::size_t len,
                   float* out, float* eps) {
  const float* base = x0.data() + begin;
  // theta_0 = x0 + init_sigma * eps(tau_0)
  if (options.init_sigma == 0.0f) {
    std::copy(base, base + len, out);
  } else {
    fill_gaussian(options.seed, static_cast<std::uint64_t>(seeds[0]), begin, eps, len);
    const float scale = options.init_sigma;
#pragma omp simd
    for (std::size_t j = 0; j < len; ++j) out[j] = base[j] + scale * eps[j];
  }
  // theta_k = theta_{k-1} + sigma * eps(tau_k)
  const float sigma = options.mutation_power;
  for (std::size_t k = 1; k < seeds.size(); ++k) {
    fill_gaussian(options.seed, static_cast<std::uint64_t>(seeds[k]), begin, eps, len);
#pragma omp simd
    for (std::size_t j = 0; j < len; ++j) out[j] = out[j] + sigma * eps[j];
  }
}

}  // namespace
}  // namespace detail

GeneticAlgorithmOptions resolved_ga_options(GeneticAlgorithmOptions options) {
  if (options.truncation_size == 0) {
    options.truncation_size = std::max<std::size_t>(1, options.population_size / 5);
  }
  if (options.elite_candidates == 0) {
    options.elite_candidates = std::min<std::size_t>(10, options.population_size);
  }
  return options;
}

GeneticAlgorithm::GeneticAlgorithm(const GeneticAlgorithmOptions& options, std::vector<float> x0)
    : options_(resolved_ga_options(options)), x0_(std::move(x0)) {
  const auto& o = options_;
  detail::require_at_least(o.population_size, 2, "population_size");
  if (o.truncation_size < 1 || o.truncation_size > o.population_size) {
    throw std::invalid_argument("truncation_size must be in [1, population_size = " +
                                std::to_string(o.population_size) + "], got " +
                                std::to_string(o.truncation_size));
  }
  if (o.num_elites >= o.population_size) {
    throw std::invalid_argument("num_elites must be < population_size = " +
                                std::to_string(o.population_size) +
                                " (at least one child per generation), got " +
                                std::to_string(o.num_elites));
  }
  if (!(o.mutation_power > 0.0f) || !std::isfinite(o.mutation_power)) {
    throw std::invalid_argument("mutation_power must be > 0 and finite, got " +
                                detail::format_number(o.mutation_power));
  }
  if (!(o.init_sigma >= 0.0f) || !std::isfinite(o.init_sigma)) {
    throw std::invalid_argument("init_sigma must be >= 0 and finite, got " +
                                detail::format_number(o.init_sigma));
  }
  if (o.elite_evaluations > 0) {
    if (o.num_elites == 0) {
      throw std::invalid_argument(
          "elite_evaluations = " + std::to_string(o.elite_evaluations) +
          " re-evaluates elite candidates, which needs num_elites >= 1, got 0 "
          "(set elite_evaluations = 0 to turn re-evaluation off)");
    }
    if (o.elite_candidates < o.num_elites || o.elite_candidates > o.population_size) {
      throw std::invalid_argument("elite_candidates must be in [num_elites = " +
                                  std::to_string(o.num_elites) + ", population_size = " +
                                  std::to_string(o.population_size) + "], got " +
                                  std::to_string(o.elite_candidates));
    }
  }
  detail::require_num_threads(o.num_threads);
  if (x0_.empty()) throw std::invalid_argument("x0 must not be empty");
  for (std::size_t j = 0; j < x0_.size(); ++j) {
    if (!std::isfinite(x0_[j])) {
      throw std::invalid_argument("x0[" + std::to_string(j) + "] is " +
                                  detail::format_number(x0_[j]));
    }
  }

  // Generation 0: N freshly initialised individuals (Algorithm 1, g = 1).
  population_.resize(o.population_size);
  for (std::size_t i = 0; i < o.population_size; ++i) {
    population_[i].key = {detail::draw_seed(o.seed, 0, i, detail::kInitSeedTag)};
    population_[i].model_iter_id = 0;
  }
}

void GeneticAlgorithm::tell(const std::vector<double>& fitness) {
  if (phase_ != Phase::kFitness) {
    throw std::logic_error("tell: generation " + std::to_string(generation_) +
                           " waits for the re-evaluated scores of its elite candidates "
                           "(tell_elite_candidates), not for fitness");
  }
  const std::size_t n = population_.size();
  if (fitness.size() != n) {
    throw std::invalid_argument("tell: expected one fitness value per individual, " +
                                std::to_string(n) + ", got " + std::to_string(fitness.size()));
  }
  for (std::size_t i = 0; i < n; ++i) {
    if (std::isnan(fitness[i])) {
      throw std::invalid_argument("fitness of individual " + std::to_string(i) + " is nan");
    }
  }

  // Truncation selection: sort by fitness, best first (Algorithm 1, "Sort").
  order_.resize(n);
  std::iota(order_.begin(), order_.end(), std::size_t{0});
  std::stable_sort(order_.begin(), order_.end(),
                   [&](std::size_t a, std::size_t b) { return fitness[a] > fitness[b]; });

  if (!reevaluates()) {
    std::vector<std::size_t> elite_indices(order_.begin(), order_.begin() + options_.num_elites);
    std::vector<double> scores;
    for (std::size_t i : elite_indices) scores.push_back(fitness[i]);
    select_and_breed(elite_indices, scores);
    return;
  }

  choose_candidates();
}

void GeneticAlgorithm::choose_candidates() {
  // Elite candidates: the top C of this generation, then the previous elites
  // (population indices [0, E) after generation 0) that are not among them.
  candidates_.assign(order_.begin(), order_.begin() + options_.elite_candidates);
  if (generation_ > 0) {
    for (std::size_t i = 0; i < options_.num_elites; ++i) {
      if (std::find(candidates_.begin(), candidates_.end(), i) == candidates_.end()) {
        candidates_.push_back(i);
      }
    }
  }
  candidate_infos_.clear();
  for (std::size_t i : candidates_) candidate_infos_.push_back(population_[i]);
  phase_ = Phase::kEliteScores;
}

const std::vector<SamplingInfo>& GeneticAlgorithm::ask_elite_candidates() const {
  if (phase_ != Phase::kEliteScores) {
    throw std::logic_error(
        reevaluates()
            ? "ask_elite_candidates: generation " + std::to_string(generation_) +
                  " has no elite candidates yet; tell the fitness of ask() first"
            : std::string("ask_elite_candidates: elite re-evaluation is off "
                          "(elite_evaluations = 0)"));
  }
  return candidate_infos_;
}

void GeneticAlgorithm::tell_elite_candidates(const std::vector<double>& scores) {
  ask_elite_candidates();  // checks the phase
  const std::size_t evaluations = options_.elite_evaluations;
  const std::size_t count = candidates_.size();
  if (scores.size() != count * evaluations) {
    throw std::invalid_argument(
        "tell_elite_candidates: expected elite_evaluations (" + std::to_string(evaluations) +
        ") scores for each of the " + std::to_string(count) + " candidates, " +
        std::to_string(count * evaluations) + " in all, got " + std::to_string(scores.size()));
  }
  std::vector<double> means(count);
  for (std::size_t c = 0; c < count; ++c) {
    double sum = 0.0;
    for (std::size_t k = 0; k < evaluations; ++k) {
      const double s = scores[c * evaluations + k];
      if (std::isnan(s)) {
        throw std::invalid_argument("score " + std::to_string(k) + " of elite candidate " +
                                    std::to_string(c) + " is nan");
      }
      sum += s;
    }
    if (std::isnan(sum)) {
      throw std::invalid_argument("the scores of elite candidate " + std::to_string(c) +
                                  " hold both inf and -inf: their mean is undefined");
    }
    means[c] = sum / static_cast<double>(evaluations);
  }
  tell_elite_means(means);
}

void GeneticAlgorithm::tell_elite_means(const std::vector<double>& means) {
  ask_elite_candidates();  // checks the phase
  const std::size_t count = candidates_.size();
  if (means.size() != count) {
    throw std::invalid_argument("tell_elite_means: expected a mean score for each of the " + std::to_string(count) +
                                " candidates, got " + std::to_string(means.size()));
  }
  for (std::size_t c = 0; c < count; ++c) {
    if (std::isnan(means[c])) {
      throw std::invalid_argument("the mean score of elite candidate " + std::to_string(c) + " is nan");
    }
  }
  // "Set Elite <- argmax_{theta in C} 1/K sum_k F(theta)", for E elites.
  std::vector<std::size_t> by_mean(count);
  std::iota(by_mean.begin(), by_mean.end(), std::size_t{0});
  std::stable_sort(by_mean.begin(), by_mean.end(),
                   [&](std::size_t a, std::size_t b) { return means[a] > means[b]; });
  std::vector<std::size_t> elite_indices;
  std::vector<double> elite_means;
  for (std::size_t r = 0; r < options_.num_elites; ++r) {
    elite_indices.push_back(candidates_[by_mean[r]]);
    elite_means.push_back(means[by_mean[r]]);
  }
  select_and_breed(elite_indices, elite_means);
}

void GeneticAlgorithm::select_and_breed(const std::vector<std::size_t>& elite_indices,
                                        const std::vector<double>& elite_scores) {
  const auto& o = options_;
  // The ranking: the elites first ("P <- [Elite, P - {Elite}]"), then the
  // others by fitness. Its top T are the parents of the next generation.
  std::vector<std::size_t> ranking(elite_indices);
  for (std::size_t i : order_) {
    if (std::find(elite_indices.begin(), elite_indices.end(), i) == elite_indices.end()) {
      ranking.push_back(i);
    }
  }
  std::vector<SamplingInfo> parents;
  for (std::size_t r = 0; r < o.truncation_size; ++r) parents.push_back(population_[ranking[r]]);

  elites_.clear();
  for (std::size_t i : elite_indices) elites_.push_back(population_[i]);
  elite_scores_ = elite_scores;

  const std::int64_t next = generation_ + 1;
  const auto g = static_cast<std::uint64_t>(next);
  std::vector<SamplingInfo> children(o.population_size);
  for (std::size_t i = 0; i < o.population_size; ++i) {
    SamplingInfo& child = children[i];
    if (i < elites_.size()) {
      child.key = elites_[i].key;  // the elite, unchanged
    } else {
      // "k = uniformRandom(1, T)"; "P_i = psi(P_k)": one more mutation seed.
      const std::size_t k =
          detail::draw_below(hash_draw(o.seed, g, i, detail::kParentTag), o.truncation_size);
      child.key = parents[k].key;
      child.key.push_back(detail::draw_seed(o.seed, g, i, detail::kMutationSeedTag));
    }
    child.model_iter_id = next;
  }
  population_ = std::move(children);
  candidates_.clear();
  candidate_infos_.clear();
  generation_ = next;
  phase_ = Phase::kFitness;
}

void GeneticAlgorithm::rebuild(const std::vector<std::int64_t>& seeds, float* out,
                               int num_threads) const {
  detail::validate_seeds(seeds, [] { return std::string("individual"); });
  detail::require_non_null(out, "out");
  detail::require_num_threads(num_threads);
  const std::size_t n = x0_.size();
  const std::size_t blocks = detail::ceil_div(n, detail::kGaBlock);
  const int threads = detail::team_size(blocks, num_threads);
  std::vector<float> scratch(static_cast<std::size_t>(threads) * detail::kGaBlock);
  detail::parallel_items(blocks, threads, [&](std::size_t b) {
    const std::size_t begin = b * detail::kGaBlock;
    const std::size_t len = std::min(detail::kGaBlock, n - begin);
    float* eps = scratch.data() + static_cast<std::size_t>(omp_get_thread_num()) * detail::kGaBlock;
    detail::rebuild_block(options_, x0_, seeds, begin, len, out + begin, eps);
  });
}

std::vector<float> GeneticAlgorithm::rebuild(const std::vector<std::int64_t>& seeds,
                                             int num_threads) const {
  std::vector<float> out(x0_.size());
  rebuild(seeds, out.data(), num_threads);
  return out;
}

void GeneticAlgorithm::rebuild_population(const std::vector<SamplingInfo>& individuals,
                                          float* out) const {
  for (std::size_t i = 0; i < individuals.size(); ++i) {
    detail::validate_seeds(individuals[i].key, [i] { return "individual " + std::to_string(i); });
  }
  if (individuals.empty()) return;
  detail::require_non_null(out, "out");
  const std::size_t n = x0_.size();
  const std::size_t blocks = detail::ceil_div(n, detail::kGaBlock);
  const std::size_t items = individuals.size() * blocks;
  const int threads = detail::team_size(items, options_.num_threads);
  std::vector<float> scratch(static_cast<std::size_t>(threads) * detail::kGaBlock);
  detail::parallel_items(items, threads, [&](std::size_t item) {
    const std::size_t i = item / blocks;
    const std::size_t begin = (item % blocks) * detail::kGaBlock;
    const std::size_t len = std::min(detail::kGaBlock, n - begin);
    float* eps = scratch.data() + static_cast<std::size_t>(omp_get_thread_num()) * detail::kGaBlock;
    detail::rebuild_block(options_, x0_, individuals[i].key, begin, len, out + i * n + begin, eps);
  });
}

std::vector<std::size_t> GeneticAlgorithm::pending_order() const {
  return phase_ == Phase::kEliteScores ? order_ : std::vector<std::size_t>{};
}

void GeneticAlgorithm::set_state(std::int64_t generation, std::vector<SamplingInfo> population,
                                 std::vector<SamplingInfo> elites, std::vector<double> elite_scores,
                                 std::vector<std::size_t> order) {
  const auto& o = options_;
  auto fail = [](const std::string& what) { throw std::invalid_argument("GA state: " + what); };
  if (generation < 0) fail("generation must be >= 0, got " + std::to_string(generation));
  if (population.size() != o.population_size) {
    fail("population holds " + std::to_string(population.size()) + " individuals, expected " +
         std::to_string(o.population_size));
  }
  const std::size_t want_elites = generation == 0 ? 0 : o.num_elites;
  if (elites.size() != want_elites) {
    fail("elites holds " + std::to_string(elites.size()) + " individuals, expected " +
         std::to_string(want_elites) + " at generation " + std::to_string(generation));
  }
  if (elite_scores.size() != elites.size()) {
    fail("elite_scores holds " + std::to_string(elite_scores.size()) + " values, expected " +
         std::to_string(elites.size()));
  }
  auto check_seeds = [&](const std::vector<SamplingInfo>& infos, const char* field) {
    for (std::size_t i = 0; i < infos.size(); ++i) {
      if (infos[i].key.empty()) fail(std::string(field) + " " + std::to_string(i) + " has no seeds");
      for (std::int64_t s : infos[i].key) {
        if (s < 0 || static_cast<std::uint64_t>(s) > kMaxStreamKey) {
          fail(std::string(field) + " " + std::to_string(i) + " has seed " + std::to_string(s) +
               " outside [0, " + std::to_string(kMaxStreamKey) + "]");
        }
      }
    }
  };
  check_seeds(population, "individual");
  check_seeds(elites, "elite");
  if (!order.empty()) {
    if (!reevaluates()) fail("order given, but elite re-evaluation is off");
    std::vector<bool> seen(population.size(), false);
    bool permutation = order.size() == population.size();
    for (std::size_t i = 0; permutation && i < order.size(); ++i) {
      permutation = order[i] < seen.size() && !seen[order[i]];
      if (permutation) seen[order[i]] = true;
    }
    if (!permutation) {
      fail("order must be a permutation of the " + std::to_string(population.size()) +
           " population indices");
    }
  }
  generation_ = generation;
  population_ = std::move(population);
  elites_ = std::move(elites);
  elite_scores_ = std::move(elite_scores);
  order_ = std::move(order);
  candidates_.clear();
  candidate_infos_.clear();
  phase_ = Phase::kFitness;
  if (!order_.empty()) choose_candidates();
}

}  // namespace evokit
