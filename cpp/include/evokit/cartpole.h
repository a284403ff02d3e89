// CartPole natively: gymnasium's CartPole-v1 dynamics and episode seeding in
// C++, and whole policy rollouts of a population in one call (STL + OpenMP).
//
// The dynamics are gymnasium.envs.classic_control.cartpole.CartPoleEnv.step
// (Euler integrator, default reward) in the same float64 operations, in the
// same order, with the same libm sin/cos, so states are the same bits; the
// observation is the state rounded to float32, as gymnasium returns it. An
// episode starts where CartPoleEnv.reset(seed=s) starts it: each coordinate
// uniform(-0.05, 0.05) drawn from numpy's Generator(PCG64(SeedSequence(s))),
// which gymnasium.utils.seeding.np_random(s) builds; this file implements
// SeedSequence, PCG64 and Generator.uniform bit for bit (numpy's
// bit_generator.pyx and pcg64.h). The episode is truncated after max_steps
// (500 for CartPole-v1, gymnasium's TimeLimit); every step, the terminating
// one included, has reward 1.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "evokit/policy_graph.h"
#include "evokit/population.h"

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

// Episodes of CartPole, policy `graph` (4 observation values in, 2 action
// scores out, action = the first index of the largest score, as np.argmax)
// with member members[e]'s parameters from reset(seeds[e]), for e <
// num_episodes, at most max_steps steps each. Writes each episode's length
// (= its return) to lengths[e]. The episodes run through run_episodes
// (rollout.h): each on one thread with the member's perturbed parameters
// materialised once in a thread's buffer, so results are identical for any
// num_threads. Threads are woken only for enough work (episodes x
// parameters >= 2^18 per thread), as in run_population. Throws
// std::invalid_argument for a graph that does not take 4 values or give 2,
// and as prepare_rollouts (rollout.h) and for null seeds or lengths.
void cartpole_rollouts(const PolicyGraph& graph, const Population& population,
                       const std::size_t* members, const std::uint64_t* seeds,
                       std::size_t num_episodes, int max_steps, std::int64_t* lengths,
                       int num_threads = 1);

namespace detail {
// numpy's SeedSequence(seed).generate_state(4, uint64) for a non-negative
// integer seed: the PCG64 seed words.
std::array<std::uint64_t, 4> seed_sequence_state(std::uint64_t seed) noexcept;
}  // namespace detail

}  // namespace evokit
