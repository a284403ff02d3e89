// CartPole natively (see cartpole.h): gymnasium's CartPole-v1, registered
// in registry.cc.
#include "evokit/cartpole.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "evokit/env.h"
#include "evokit/numpy_random.h"
#include "registry.h"

namespace evokit {

namespace {

// ---- CartPoleEnv's constants ------------------------------------------------------
constexpr double kGravity = 9.8;
constexpr double kMassCart = 1.0;
constexpr double kMassPole = 0.1;
constexpr double kTotalMass = kMassPole + kMassCart;
constexpr double kLength = 0.5;
constexpr double kPoleMassLength = kMassPole * kLength;
constexpr double kForceMag = 10.0;
constexpr double kTau = 0.02;
constexpr double kXThreshold = 2.4;
// 12 * 2 * math.pi / 360, evaluated left to right as Python does.
const double kThetaThreshold = 12 * 2 * M_PI / 360;

bool step_unchecked(CartPoleState& s, int action) noexcept {
  const double force = action == 1 ? kForceMag : -kForceMag;
  const double costheta = std::cos(s.theta);
  const double sintheta = std::sin(s.theta);
  const double temp = (force + kPoleMassLength * (s.theta_dot * s.theta_dot) * sintheta) / kTotalMass;
  const double thetaacc = (kGravity * sintheta - costheta * temp) /
                          (kLength * (4.0 / 3.0 - kMassPole * (costheta * costheta) / kTotalMass));
  const double xacc = temp - kPoleMassLength * thetaacc * costheta / kTotalMass;
  s.x = s.x + kTau * s.x_dot;
  s.x_dot = s.x_dot + kTau * xacc;
  s.theta = s.theta + kTau * s.theta_dot;
  s.theta_dot = s.theta_dot + kTau * thetaacc;
  return s.x < -kXThreshold || s.x > kXThreshold || s.theta < -kThetaThreshold ||
         s.theta > kThetaThreshold;
}

}  // namespace


CartPoleState cartpole_reset(std::uint64_t seed) noexcept {
  NumpyGenerator rng(seed);
  // self.np_random.uniform(low=-0.05, high=0.05, size=(4,))
  CartPoleState state;
  state.x = rng.uniform(-0.05, 0.05);
  state.x_dot = rng.uniform(-0.05, 0.05);
  state.theta = rng.uniform(-0.05, 0.05);
  state.theta_dot = rng.uniform(-0.05, 0.05);
  return state;
}

bool cartpole_step(CartPoleState& state, int action) {
  if (action != 0 && action != 1) {
    throw std::invalid_argument("CartPole action must be 0 or 1, got " + std::to_string(action));
  }
  return step_unchecked(state, action);
}

std::array<float, 4> cartpole_observation(const CartPoleState& s) noexcept {
  return {static_cast<float>(s.x), static_cast<float>(s.x_dot), static_cast<float>(s.theta),
          static_cast<float>(s.theta_dot)};
}

namespace envs {

namespace {

class CartPoleEpisode final : public Episode {
 public:
  void reset_seed(std::uint64_t seed, double* obs) override {
    state_ = cartpole_reset(seed);
    started_ = true;
    observe(obs);
  }
  void reset_state(const double* state, double* obs) override {
    state_ = CartPoleState{state[0], state[1], state[2], state[3]};
    started_ = true;
    observe(obs);
  }
  double step(const float* action, double* obs, bool& terminated) override {
    if (!started_) throw std::logic_error("step() before reset()");
    terminated = cartpole_step(state_, static_cast<int>(action[0]));
    observe(obs);
    return 1.0;
  }

 private:
  void observe(double* obs) const noexcept {
    const std::array<float, 4> o = cartpole_observation(state_);
    std::copy(o.begin(), o.end(), obs);
  }
  CartPoleState state_;
  bool started_ = false;
};

}  // namespace

std::shared_ptr<const Env> cartpole() {
  static const auto env = std::make_shared<const ClassicEnv<CartPoleEpisode>>(
      classic_spec("CartPole-v1", "gymnasium.envs.classic_control.cartpole:CartPoleEnv",
                   {{"sutton_barto_reward", false}}, /*obs_size=*/4, /*action_size=*/2,
                   /*discrete=*/true, /*state_size=*/4));
  return env;
}

}  // namespace envs

}  // namespace evokit
