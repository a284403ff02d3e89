// CartPole-v1 in C++, with gymnasium's physics (gymnasium/envs/classic_control/
// cartpole.py): the same constants, explicit Euler integration in double
// precision, float32 observations, termination when |x| > 2.4 or
// |theta| > 12 degrees, reward 1 for every step (the terminating one
// included), and truncation after 500 steps (gymnasium's TimeLimit for v1).
//
// Only the reset noise differs: the state starts uniform in [-0.05, 0.05)
// from a std::mt19937_64 seeded by the caller, not from NumPy's generator.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace evokit_demo {

class CartPole {
 public:
  static constexpr int kObsDim = 4;
  static constexpr int kNumActions = 2;
  static constexpr int kMaxSteps = 500;

  static constexpr double kGravity = 9.8;
  static constexpr double kMassCart = 1.0;
  static constexpr double kMassPole = 0.1;
  static constexpr double kTotalMass = kMassPole + kMassCart;
  static constexpr double kLength = 0.5;  // half the pole's length
  static constexpr double kPoleMassLength = kMassPole * kLength;
  static constexpr double kForceMag = 10.0;
  static constexpr double kTau = 0.02;  // seconds between state updates
  static constexpr double kThetaThreshold = 12 * 2 * 3.14159265358979323846 / 360;
  static constexpr double kXThreshold = 2.4;

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
    for (double& s : state_) s = uniform(rng_);
    steps_ = 0;
    return obs();
  }

  // Start from a given state (for checking the physics against gymnasium).
  Obs reset_to(const State& state) {
    state_ = state;
    steps_ = 0;
    return obs();
  }

  Step step(int action) {
    if (action != 0 && action != 1) {
      throw std::invalid_argument("CartPole action must be 0 or 1, got " + std::to_string(action));
    }
    auto [x, x_dot, theta, theta_dot] = state_;
    const double force = action == 1 ? kForceMag : -kForceMag;
    const double costheta = std::cos(theta);
    const double sintheta = std::sin(theta);
    // Operations grouped exactly as in gymnasium (np.square(v) is v * v), so
    // that the doubles round the same way.
    const double temp =
        (force + kPoleMassLength * (theta_dot * theta_dot) * sintheta) / kTotalMass;
    const double thetaacc =
        (kGravity * sintheta - costheta * temp) /
        (kLength * (4.0 / 3.0 - kMassPole * (costheta * costheta) / kTotalMass));
    const double xacc = temp - kPoleMassLength * thetaacc * costheta / kTotalMass;
    // Euler
    x = x + kTau * x_dot;
    x_dot = x_dot + kTau * xacc;
    theta = theta + kTau * theta_dot;
    theta_dot = theta_dot + kTau * thetaacc;
    state_ = {x, x_dot, theta, theta_dot};
    ++steps_;
    const bool terminated = x < -kXThreshold || x > kXThreshold || theta < -kThetaThreshold ||
                            theta > kThetaThreshold;
    return Step{obs(), 1.0, terminated, steps_ >= kMaxSteps};
  }

  const State& state() const noexcept { return state_; }

 private:
  Obs obs() const {
    return {static_cast<float>(state_[0]), static_cast<float>(state_[1]),
            static_cast<float>(state_[2]), static_cast<float>(state_[3])};
  }

  std::mt19937_64 rng_;
  State state_{};
  int steps_ = 0;
};

struct Episode {
  double total_reward = 0.0;
  std::int64_t steps = 0;
};

// One episode of `env` from a fresh reset; `policy(obs)` returns the action
// scores and the action is their argmax (first on ties, as numpy).
template <class Policy>
Episode run_episode(CartPole& env, Policy&& policy) {
  Episode ep;
  CartPole::Obs obs = env.reset();
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

}  // namespace evokit_demo
