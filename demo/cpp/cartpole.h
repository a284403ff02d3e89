// CartPole-v1 for the demo programs, on the core's CartPole (evokit/
// cartpole.h: gymnasium's physics, bit for bit): explicit Euler integration
// in double precision, float32 observations, termination when |x| > 2.4 or
// |theta| > 12 degrees, reward 1 for every step (the terminating one
// included), and truncation after 500 steps (gymnasium's TimeLimit for v1).
//
// reset(seed) starts where gymnasium's CartPoleEnv.reset(seed=seed) starts
// (the core implements numpy's generator); reset() draws the start uniform in
// [-0.05, 0.05) from a std::mt19937_64 seeded by the caller, for programs
// that reuse one environment for many episodes.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <random>
#include <vector>

#include "evokit/cartpole.h"

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

  explicit CartPole(std::uint64_t seed) : rng_(seed) {}

  Obs reset() {
    std::uniform_real_distribution<double> uniform(-0.05, 0.05);
    State start;
    for (double& s : start) s = uniform(rng_);
    return reset_to(start);
  }

  // The start of gymnasium's CartPoleEnv.reset(seed=seed).
  Obs reset(std::uint64_t seed) {
    const evokit::CartPoleState s = evokit::cartpole_reset(seed);
    return reset_to({s.x, s.x_dot, s.theta, s.theta_dot});
  }

  // Start from a given state (for checking the physics against gymnasium).
  Obs reset_to(const State& state) {
    state_ = {state[0], state[1], state[2], state[3]};
    steps_ = 0;
    return evokit::cartpole_observation(state_);
  }

  // Throws std::invalid_argument for an action other than 0 or 1.
  Step step(int action) {
    const bool terminated = evokit::cartpole_step(state_, action);
    ++steps_;
    return Step{evokit::cartpole_observation(state_), 1.0, terminated, steps_ >= kMaxSteps};
  }

  State state() const noexcept { return {state_.x, state_.x_dot, state_.theta, state_.theta_dot}; }

 private:
  std::mt19937_64 rng_;
  evokit::CartPoleState state_{};
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
