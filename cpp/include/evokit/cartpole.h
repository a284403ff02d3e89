// CartPole natively: gymnasium's CartPole-v1 dynamics and episode seeding in
// C++ (STL only), registered as the native environment "CartPole-v1"
// (env.h), which runs CartPole-v0 too (the same env with a time limit of
// 200).
//
// The dynamics are gymnasium.envs.classic_control.cartpole.CartPoleEnv.step
// (Euler integrator, default reward) in the same float64 operations, in the
// same order, with the same libm sin/cos, so states are the same bits; the
// observation is the state rounded to float32, as gymnasium returns it. An
// episode starts where CartPoleEnv.reset(seed=s) starts it: each coordinate
// uniform(-0.05, 0.05) drawn from numpy's generator (numpy_random.h). Every
// step, the terminating one included, has reward 1; the registered env's
// actions are the argmax of 2 scores.
#pragma once

#include <array>
#include <cstdint>

namespace evokit {

struct CartPoleState {
  double x = 0.0, x_dot = 0.0, theta = 0.0, theta_dot = 0.0;
};

// The state CartPoleEnv.reset(seed=seed) starts from.
CartPoleState cartpole_reset(std::uint64_t seed) noexcept;

// One step of CartPoleEnv with action 0 (push left) or 1 (push right):
// updates `state`, returns `terminated` (cart beyond +-2.4 or pole beyond
// +-12 degrees). Throws std::invalid_argument for another action.
bool cartpole_step(CartPoleState& state, int action);

// The observation gymnasium returns for `state` (float32).
std::array<float, 4> cartpole_observation(const CartPoleState& state) noexcept;

}  // namespace evokit
