// Episodes of a population's members (see rollout.h).
#include "evokit/rollout.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <string>

#include "evokit/errors.h"
#include "common/messages.h"

namespace evokit {

namespace {
constexpr std::size_t kPadFloats = 64 / sizeof(float);  // one cache line
}  // namespace

EpisodePolicy::EpisodePolicy(const PolicyGraph& graph, const PolicyGraph::Plan& plan,
                             const Population& population)
    : graph_(&graph),
      plan_(&plan),
      population_(&population),
      params_(graph.num_params()),
      workspace_(plan.workspace_size() + 2 * kPadFloats),
      loaded_(population.size()),
      state_(plan.state_size()) {}

void EpisodePolicy::load(std::size_t member) {
  std::fill(state_.begin(), state_.end(), 0.0f);
  const ParamView& view = population_->members()[member];
  if (view.noise == nullptr) {
    view_ = view;
    return;
  }
  if (loaded_ != member) {
    const float* base = view.base;
    const float* noise = view.noise;
    const float scale = view.scale;
    float* dst = params_.data();
    const std::size_t p = params_.size();
#pragma omp simd
    for (std::size_t j = 0; j < p; ++j) dst[j] = base[j] + scale * noise[j];
    loaded_ = member;
  }
  view_ = ParamView{params_.data(), nullptr, 0.0f};
}

void EpisodePolicy::act(const float* obs, float* out) noexcept {
  graph_->execute(*plan_, obs, view_, workspace_.data() + kPadFloats, out,
                  state_.empty() ? nullptr : state_.data());
}

PolicyGraph::Plan prepare_rollouts(const PolicyGraph& graph, const Population& population,
                                   const std::size_t* members, std::size_t num_episodes,
                                   int max_steps, int num_threads) {
  detail::require_num_threads(num_threads);
  PolicyGraph::Plan plan = graph.compile(1);
  detail::require_matching_params(graph, population);
  if (max_steps < 1) {
    throw std::invalid_argument("max_steps must be >= 1, got " + std::to_string(max_steps));
  }
  if (num_episodes == 0) return plan;
  detail::require_non_null(members, "members");
  for (std::size_t e = 0; e < num_episodes; ++e) {
    if (members[e] >= population.size()) {
      throw std::out_of_range("episode " + std::to_string(e) + ": member " +
                              std::to_string(members[e]) + " is out of range for a population of " +
                              std::to_string(population.size()));
    }
  }
  return plan;
}

void run_episodes(const PolicyGraph& graph, const PolicyGraph::Plan& plan,
                  const Population& population, const std::size_t* members,
                  std::size_t num_episodes, int threads,
                  const std::function<void(std::size_t, EpisodePolicy&, int)>& episode,
                  RolloutTiming* timing) {
  using Clock = std::chrono::steady_clock;
  const Clock::time_point start = Clock::now();
  const auto team = static_cast<std::size_t>(std::max(threads, 1));
  if (timing != nullptr) timing->busy_seconds.assign(team, 0.0);
  if (num_episodes == 0) return;
  // Every thread's buffers before the region: an allocation failure is an
  // exception here, not inside it.
  std::vector<EpisodePolicy> policies(team, EpisodePolicy(graph, plan, population));
  detail::ExceptionCollector errors;
  const auto count = static_cast<std::ptrdiff_t>(num_episodes);
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1) if (threads > 1)
  for (std::ptrdiff_t e = 0; e < count; ++e) {
    const int thread = omp_get_thread_num();
    EpisodePolicy& policy = policies[static_cast<std::size_t>(thread)];
    const Clock::time_point begin = timing != nullptr ? Clock::now() : Clock::time_point{};
    errors.run([&] {
      policy.load(members[e]);
      episode(static_cast<std::size_t>(e), policy, thread);
    });
    if (timing != nullptr) {  // each thread adds to its own entry
      timing->busy_seconds[static_cast<std::size_t>(thread)] +=
          std::chrono::duration<double>(Clock::now() - begin).count();
    }
  }
  if (timing != nullptr) timing->wall_seconds = std::chrono::duration<double>(Clock::now() - start).count();
  errors.rethrow_if_any();
}

}  // namespace evokit
