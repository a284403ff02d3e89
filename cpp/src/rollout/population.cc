// Population: member views and the threaded population forward pass.
//
// Determinism. A member's output is computed by PolicyGraph::execute on one
// thread, in that thread's own workspace, with the same operations whatever
// the thread count; members never share an accumulator. OpenMP only decides
// which thread runs which member, so results are bit-identical for any
// num_threads.
#include "evokit/population.h"

#include <omp.h>

#include <algorithm>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>

#include "evokit/noise.h"
#include "common/messages.h"
#include "common/parallel.h"

namespace evokit {

Population::Population(const GaussianSampler& sampler, std::vector<float> centre,
                       std::vector<std::int64_t> keys, std::vector<float> signs, int num_threads)
    : num_params_(sampler.num_params()), centre_(std::move(centre)) {
  detail::require_num_threads(num_threads);
  if (centre_.size() != num_params_) {
    throw std::invalid_argument("centre holds " + std::to_string(centre_.size()) +
                                " values, the sampler has num_params = " +
                                std::to_string(num_params_));
  }
  if (keys.size() != signs.size()) {
    throw std::invalid_argument("keys and signs must have the same length, got " +
                                std::to_string(keys.size()) + " keys and " +
                                std::to_string(signs.size()) + " signs");
  }
  const std::size_t n = keys.size();
  for (std::size_t i = 0; i < n; ++i) {
    const float sign = signs[i];
    if (sign != 1.0f && sign != -1.0f && sign != 0.0f) {
      throw std::invalid_argument("sign of member " + std::to_string(i) +
                                  " must be +1, -1 or 0 (the centre), got " +
                                  detail::format_number(sign));
    }
    if (sign == 0.0f) continue;
    try {
      sampler.check_key(keys[i]);
    } catch (const std::out_of_range& e) {
      throw std::out_of_range("member " + std::to_string(i) + ": " + e.what());
    }
  }

  // Where each member's noise lives.
  std::vector<const float*> noise(n, nullptr);
  if (sampler.cached()) {
    table_ = sampler.table();
    for (std::size_t i = 0; i < n; ++i) {
      if (signs[i] != 0.0f) noise[i] = table_->data() + keys[i];  // read in place
    }
  } else {
    // One noise vector per distinct key, generated in parallel.
    std::map<std::int64_t, std::size_t> slot;
    std::vector<std::int64_t> distinct;
    for (std::size_t i = 0; i < n; ++i) {
      if (signs[i] != 0.0f && slot.emplace(keys[i], distinct.size()).second) {
        distinct.push_back(keys[i]);
      }
    }
    storage_.resize(distinct.size() * num_params_);
    const std::uint64_t seed = sampler.options().seed;
    float* data = storage_.data();
    const std::size_t p = num_params_;
    detail::parallel_items(distinct.size(), detail::team_size(distinct.size(), num_threads),
                           [&](std::size_t u) {
                             fill_gaussian(seed, static_cast<std::uint64_t>(distinct[u]), 0,
                                           data + u * p, p);
                           });
    for (std::size_t i = 0; i < n; ++i) {
      if (signs[i] != 0.0f) noise[i] = data + slot[keys[i]] * p;
    }
  }

  members_.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    // The scale GaussianSampler::perturb multiplies eps by, so the bits match.
    members_[i] = noise[i] == nullptr ? ParamView{centre_.data(), nullptr, 0.0f}
                                      : ParamView{centre_.data(), noise[i], signs[i] * sampler.sigma()};
  }
}

Population::Population(std::vector<float> params, std::size_t num_members,
                       std::size_t num_params)
    : num_params_(num_params), storage_(std::move(params)) {
  if (num_params != 0 && num_members > storage_.max_size() / num_params) {
    throw std::invalid_argument("num_members * num_params overflows");
  }
  if (storage_.size() != num_members * num_params) {
    throw std::invalid_argument("params holds " + std::to_string(storage_.size()) +
                                " values, expected num_members * num_params = " +
                                std::to_string(num_members) + " * " + std::to_string(num_params));
  }
  members_.resize(num_members);
  for (std::size_t i = 0; i < num_members; ++i) {
    members_[i] = ParamView{storage_.data() + i * num_params, nullptr, 0.0f};
  }
}

const ParamView& Population::member(std::size_t i) const {
  if (i >= members_.size()) {
    throw std::out_of_range("member " + std::to_string(i) + " is out of range for a population of " +
                            std::to_string(members_.size()));
  }
  return members_[i];
}

void run_population(const PolicyGraph& graph, const float* obs, std::size_t num_members,
                    const ParamView* members, float* out, const unsigned char* active,
                    int num_threads, float* state) {
  detail::require_num_threads(num_threads);
  if (num_members == 0) throw std::invalid_argument("the population is empty (num_members = 0)");
  detail::require_non_null(obs, "obs");
  detail::require_non_null(members, "members");
  detail::require_non_null(out, "out");
  const PolicyGraph::Plan plan = graph.compile(1);  // throws for a graph without input/output
  if (graph.recurrent()) detail::require_non_null(state, "state");
  const std::size_t state_size = plan.state_size();

  // The members to run, in index order: the split of work among threads
  // follows the active members, so finished ones cost nothing.
  std::vector<std::size_t> todo;
  todo.reserve(num_members);
  for (std::size_t i = 0; i < num_members; ++i) {
    if (active == nullptr || active[i] != 0) todo.push_back(i);
  }
  if (todo.empty()) return;

  const std::size_t obs_size = graph.obs_size();
  const std::size_t out_size = plan.output_size();
  const std::size_t stride = plan.workspace_size();
  // Threads only where the work pays for waking them: each gets at least
  // kMinWorkPerThread parameter reads (a few tens of microseconds). Which
  // thread runs a member never changes its result.
  const std::size_t work = todo.size() * std::max<std::size_t>(graph.num_params(), 1);
  const int threads = detail::team_size(todo.size(), detail::useful_threads(work, num_threads));
  std::vector<float> scratch(static_cast<std::size_t>(threads) * stride);
  const auto count = static_cast<std::ptrdiff_t>(todo.size());
  // execute() is noexcept: nothing can leave the parallel region.
#pragma omp parallel for num_threads(threads) schedule(static) if (threads > 1)
  for (std::ptrdiff_t t = 0; t < count; ++t) {
    const std::size_t i = todo[static_cast<std::size_t>(t)];
    float* workspace = scratch.data() + static_cast<std::size_t>(omp_get_thread_num()) * stride;
    graph.execute(plan, obs + i * obs_size, members[i], workspace, out + i * out_size,
                  state_size > 0 ? state + i * state_size : nullptr);
  }
}

namespace detail {

void require_matching_params(const PolicyGraph& graph, const Population& population) {
  if (population.num_params() != graph.num_params()) {
    throw std::invalid_argument("the population's members have " +
                                std::to_string(population.num_params()) +
                                " parameters, the graph expects num_params = " +
                                std::to_string(graph.num_params()));
  }
}

}  // namespace detail

void run_population(const PolicyGraph& graph, const Population& population, const float* obs,
                    float* out, const unsigned char* active, int num_threads, float* state) {
  detail::require_matching_params(graph, population);
  run_population(graph, obs, population.size(), population.members().data(), out, active,
                 num_threads, state);
}

void Population::copy_member(std::size_t i, float* out) const {
  const ParamView& view = member(i);
  for (std::size_t j = 0; j < num_params_; ++j) {
    out[j] = view.noise == nullptr ? view.base[j] : view.base[j] + view.scale * view.noise[j];
  }
}

void Population::copy_rows(float* out) const {
  for (std::size_t i = 0; i < members_.size(); ++i) copy_member(i, out + i * num_params_);
}

}  // namespace evokit
