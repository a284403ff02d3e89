// Whole episodes of a native environment (see env.h).
//
// Determinism. An episode runs on one thread from start to end through
// run_episodes (rollout.h), with that thread's Episode reset at its start,
// so results are the same for any num_threads.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "evokit/env.h"
#include "evokit/numpy_ops.h"
#include "evokit/rollout.h"
#include "common/parallel.h"

namespace evokit {

namespace {

constexpr std::size_t kPad = 64;  // bytes: a cache line on either side of a thread's buffers

// A rollout thread's Episode, its observation (float64), what the policy
// sees (float32) and its output, apart from other threads' buffers: they are
// written at every step, and sharing a cache line would cost a miss each time.
struct ThreadBuffers {
  std::unique_ptr<Episode> episode;
  std::vector<double> obs_storage;
  std::vector<float> input_storage, output_storage;
  double* obs = nullptr;
  float* input = nullptr;
  float* output = nullptr;

  ThreadBuffers(const Env& env, std::size_t obs_size, std::size_t output_size)
      : episode(env.episode()),
        obs_storage(obs_size + 2 * kPad / sizeof(double)),
        input_storage(obs_size + 2 * kPad / sizeof(float)),
        output_storage(output_size + 2 * kPad / sizeof(float)),
        obs(obs_storage.data() + kPad / sizeof(double)),
        input(input_storage.data() + kPad / sizeof(float)),
        output(output_storage.data() + kPad / sizeof(float)) {}
};

// np.argmax of scores[n]: the first largest, a NaN counting as the largest.
float argmax_action(const float* scores, std::size_t n) noexcept {
  std::size_t best = 0;
  for (std::size_t i = 1; i < n && !std::isnan(scores[best]); ++i) {
    if (scores[i] > scores[best] || std::isnan(scores[i])) best = i;
  }
  return static_cast<float>(best);
}

}  // namespace

void env_rollouts(const Env& env, const PolicyGraph& graph, const Population& population,
                  const std::size_t* members, const EpisodeStarts& starts,
                  std::size_t num_episodes, int max_steps, const ObsNormalizer* norm,
                  const RolloutOutputs& out, int num_threads) {
  const EnvSpec& spec = env.spec();
  const std::size_t obs_size = spec.obs_size;
  if (graph.obs_size() != obs_size) {
    throw std::invalid_argument(spec.name + " gives " + std::to_string(obs_size) +
                                " observation values, the policy takes " +
                                std::to_string(graph.obs_size()));
  }
  const PolicyGraph::Plan plan =
      prepare_rollouts(graph, population, members, num_episodes, max_steps, num_threads);
  if (plan.output_size() != spec.action_size) {
    throw std::invalid_argument(
        spec.name + (spec.discrete ? " has " : " takes ") + std::to_string(spec.action_size) +
        (spec.discrete ? " actions (one score each)" : " action values") +
        ", the policy outputs " + std::to_string(plan.output_size()));
  }
  if ((starts.seeds == nullptr) == (starts.states == nullptr)) {
    throw std::invalid_argument(spec.name + ": episodes start from seeds or from states, give "
                                            "exactly one");
  }
  if (starts.seeds != nullptr && !spec.seeded_reset) {
    throw std::invalid_argument(spec.name + " starts from states (state_size " +
                                std::to_string(spec.state_size) + "), not from seeds");
  }
  if (num_episodes == 0) return;
  if (out.returns == nullptr || out.lengths == nullptr ||
      (out.obs_sum == nullptr) != (out.obs_sumsq == nullptr) ||
      (norm != nullptr && (norm->mean == nullptr || norm->std == nullptr))) {
    throw std::invalid_argument(spec.name + ": rollouts need returns, lengths, both or neither "
                                            "observation sums, and a normaliser's mean and std");
  }
  // Classic control: threads only where the work pays for waking them
  // (counting one parameter read per episode: a 4-16-2 policy's whole
  // generation is a fraction of a millisecond on one thread).
  const int threads =
      spec.cheap_steps
          ? detail::team_size(num_episodes,
                              detail::useful_threads(
                                  num_episodes * std::max<std::size_t>(graph.num_params(), 1),
                                  num_threads))
          : detail::team_size(num_episodes, num_threads);
  std::vector<ThreadBuffers> buffers;
  buffers.reserve(static_cast<std::size_t>(threads));
  for (int t = 0; t < threads; ++t) buffers.emplace_back(env, obs_size, spec.action_size);
  const bool stats = out.obs_sum != nullptr;
  std::atomic<bool> failed{false};  // after a simulation error the other episodes are skipped

  run_episodes(graph, plan, population, members, num_episodes, threads,
               [&](std::size_t e, EpisodePolicy& policy, int thread) {
    if (failed.load(std::memory_order_relaxed)) return;
    ThreadBuffers& b = buffers[static_cast<std::size_t>(thread)];
    double* obs = b.obs;
    float* x = b.input;
    float* output = b.output;
    double* sum = stats ? out.obs_sum + e * obs_size : nullptr;
    double* sumsq = stats ? out.obs_sumsq + e * obs_size : nullptr;
    if (stats) {
      std::fill(sum, sum + obs_size, 0.0);
      std::fill(sumsq, sumsq + obs_size, 0.0);
    }
    double total = 0.0;
    std::int64_t steps = 0;
    try {
      if (starts.seeds != nullptr) {
        b.episode->reset_seed(starts.seeds[e], obs);
      } else {
        b.episode->reset_state(starts.states + e * spec.state_size, obs);
      }
      while (true) {
        // The evaluators' np.asarray(obs, np.float32), statistics of it,
        // then ObsNorm: (x - mean) / std clipped, in float32.
        for (std::size_t j = 0; j < obs_size; ++j) x[j] = static_cast<float>(obs[j]);
        if (stats) {
          for (std::size_t j = 0; j < obs_size; ++j) {
            const double v = static_cast<double>(x[j]);
            sum[j] += v;
            sumsq[j] += v * v;
          }
        }
        if (norm != nullptr) {
          for (std::size_t j = 0; j < obs_size; ++j) {
            x[j] = numpy_clip((x[j] - norm->mean[j]) / norm->std[j], -norm->clip, norm->clip);
          }
        }
        policy.act(x, output);
        if (spec.discrete) output[0] = argmax_action(output, spec.action_size);
        bool terminated = false;
        total += b.episode->step(output, obs, terminated);
        ++steps;
        if (terminated || steps >= max_steps) break;
      }
    } catch (const std::runtime_error& error) {
      failed = true;
      throw std::runtime_error("episode " + std::to_string(e) + ": " + error.what());
    }
    out.returns[e] = total;
    out.lengths[e] = steps;
  }, out.timing);
}

}  // namespace evokit
