// Pendulum natively: gymnasium's Pendulum-v1 (gymnasium/envs/classic_control/
// pendulum.py, PendulumEnv with g=10.0), registered in registry.cc.
//
// Each expression is the env's, in numpy's dtypes and order of operations:
// the state (theta, theta_dot) float64; the action float32, clipped to
// [-2, 2] in float32; a Python float times that float32 torque staying
// float32 (NEP 50); x ** 2 of a numpy scalar through libm's pow (powf for
// the float32 torque), as numpy's scalar power calls it; the observation
// (cos theta, sin theta, theta_dot) rounded to float32. reset(seed=s) draws
// the state uniform in [-pi, pi) x [-1, 1) from numpy's generator
// (numpy_random.h). The env never terminates; gymnasium's TimeLimit
// truncates it after 200 steps.
#include <cmath>
#include <memory>
#include <stdexcept>

#include "evokit/env.h"
#include "evokit/numpy_ops.h"
#include "evokit/numpy_random.h"
#include "registry.h"

namespace evokit::envs {

namespace {

constexpr double kMaxSpeed = 8;
constexpr float kMaxTorque = 2.0f;
constexpr double kDt = 0.05;
constexpr double kG = 10.0;
constexpr double kM = 1.0;
constexpr double kL = 1.0;

// x ** 2 of a numpy float64 / float32 scalar: libm's pow / powf, called (the
// exponent is not a constant the compiler could fold into x * x).
double numpy_square(double x) noexcept {
  volatile double two = 2.0;
  return std::pow(x, two);
}
float numpy_square(float x) noexcept {
  volatile float two = 2.0f;
  return std::pow(x, two);
}

// ((x + np.pi) % (2 * np.pi)) - np.pi: numpy's float64 remainder (fmod,
// moved into the divisor's sign).
double angle_normalize(double x) noexcept {
  const double a = x + M_PI, b = 2 * M_PI;
  double mod = std::fmod(a, b);
  if (mod != 0.0) {
    if ((b < 0) != (mod < 0)) mod += b;
  } else {
    mod = std::copysign(0.0, b);
  }
  return mod - M_PI;
}

class PendulumEpisode final : public Episode {
 public:
  void reset_seed(std::uint64_t seed, double* obs) override {
    // self.np_random.uniform(low=-high, high=high), high = [pi, 1.0]
    NumpyGenerator rng(seed);
    th_ = rng.uniform(-M_PI, M_PI);
    thdot_ = rng.uniform(-1.0, 1.0);
    started_ = true;
    observe(obs);
  }
  void reset_state(const double* state, double* obs) override {
    th_ = state[0];
    thdot_ = state[1];
    started_ = true;
    observe(obs);
  }
  double step(const float* action, double* obs, bool& terminated) override {
    if (!started_) throw std::logic_error("step() before reset()");
    const float u = numpy_clip(action[0], -kMaxTorque, kMaxTorque);
    const double costs = numpy_square(angle_normalize(th_)) + 0.1 * numpy_square(thdot_) +
                         static_cast<double>(0.001f * numpy_square(u));
    const double gravity = 3 * kG / (2 * kL);          // Python floats: 15.0
    const float torque = static_cast<float>(3.0 / (kM * (kL * kL))) * u;  // float32
    double newthdot = thdot_ + (gravity * std::sin(th_) + static_cast<double>(torque)) * kDt;
    newthdot = numpy_clip(newthdot, -kMaxSpeed, kMaxSpeed);
    th_ = th_ + newthdot * kDt;
    thdot_ = newthdot;
    terminated = false;
    observe(obs);
    return -costs;
  }

 private:
  void observe(double* obs) const noexcept {
    obs[0] = static_cast<float>(std::cos(th_));
    obs[1] = static_cast<float>(std::sin(th_));
    obs[2] = static_cast<float>(thdot_);
  }
  double th_ = 0.0, thdot_ = 0.0;
  bool started_ = false;
};

}  // namespace

std::shared_ptr<const Env> pendulum() {
  static const auto env = std::make_shared<const ClassicEnv<PendulumEpisode>>(
      classic_spec("Pendulum-v1", "gymnasium.envs.classic_control.pendulum:PendulumEnv", {{"g", 10.0}},
                   /*obs_size=*/3, /*action_size=*/1, /*discrete=*/false, /*state_size=*/2));
  return env;
}

}  // namespace evokit::envs
