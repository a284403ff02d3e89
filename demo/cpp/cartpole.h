// CartPole-v1 for the demo programs: the core's native environment
// "CartPole-v1" (evokit/env.h, gymnasium's physics and seeding bit for bit:
// float64 Euler integration, float32 observations, termination when |x| >
// 2.4 or |theta| > 12 degrees, reward 1 for every step, the terminating one
// included) with gymnasium's time limit for v1, 500 steps.
//
// reset(seed) starts where gymnasium's CartPoleEnv.reset(seed=seed) starts;
// reset() starts the next of the environment's own episodes, whose seeds
// numpy's generator (the core's, evokit/numpy_random.h) draws from the seed
// the environment was made with, for programs that reuse one environment for
// many episodes.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include "evokit/env.h"
#include "evokit/numpy_random.h"

namespace evokit_demo {

class CartPole {
 public:
  static constexpr int kObsDim = 4;
  static constexpr int kNumActions = 2;
  static constexpr int kMaxSteps = 500;

  using Obs = std::array<float, kObsDim>;
  using State = std::array<double, kObsDim>;  // x, x_dot, theta, theta_dot

  struct Step {
    Obs obs;
    double reward;
    bool terminated;
    bool truncated;
  };

  explicit CartPole(std::uint64_t seed)
      : episode_(evokit::make_env("CartPole-v1")->episode()), seeds_(seed) {}

  Obs reset() { return reset(seeds_.next_uint64()); }

  // The start of gymnasium's CartPoleEnv.reset(seed=seed).
  Obs reset(std::uint64_t seed) {
    episode_->reset_seed(seed, obs_.data());
    steps_ = 0;
    return observation();
  }

  // Start from a given state (for checking the physics against gymnasium).
  Obs reset_to(const State& state) {
    episode_->reset_state(state.data(), obs_.data());
    steps_ = 0;
    return observation();
  }

  // Throws std::invalid_argument for an action other than 0 or 1.
  Step step(int action) {
    const float index = static_cast<float>(action);
    bool terminated = false;
    const double reward = episode_->step(&index, obs_.data(), terminated);
    ++steps_;
    return Step{observation(), reward, terminated, steps_ >= kMaxSteps};
  }

 private:
  Obs observation() const noexcept {
    Obs o;
    std::copy(obs_.begin(), obs_.end(), o.begin());  // float32 values, as gymnasium returns them
    return o;
  }

  std::unique_ptr<evokit::Episode> episode_;
  evokit::NumpyGenerator seeds_;
  std::array<double, kObsDim> obs_{};
  int steps_ = 0;
};

struct Episode {
  double total_reward = 0.0;
  std::int64_t steps = 0;
};

// One episode of `env` from observation `obs` (a reset's); `policy(obs)`
// returns the action scores and the action is their argmax (first on ties,
// as numpy's).
template <class Policy>
Episode run_episode_from(CartPole& env, CartPole::Obs obs, Policy&& policy) {
  Episode ep;
  for (;;) {
    const std::vector<float> scores = policy(std::vector<float>(obs.begin(), obs.end()));
    const int action = static_cast<int>(std::max_element(scores.begin(), scores.end()) -
                                        scores.begin());
    const CartPole::Step s = env.step(action);
    ep.total_reward += s.reward;
    ++ep.steps;
    if (s.terminated || s.truncated) return ep;
    obs = s.obs;
  }
}

// One episode from env.reset() (the environment's own generator).
template <class Policy>
Episode run_episode(CartPole& env, Policy&& policy) {
  return run_episode_from(env, env.reset(), policy);
}

// One episode from env.reset(seed): gymnasium's episode of that seed.
template <class Policy>
Episode run_episode(CartPole& env, std::uint64_t seed, Policy&& policy) {
  return run_episode_from(env, env.reset(seed), policy);
}

}  // namespace evokit_demo
