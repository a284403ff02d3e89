// Environments the core runs natively: one interface and one registry.
//
// A native environment is a gymnasium environment ported to C++ so that its
// observations, rewards, terminations and truncations are the bits gymnasium
// returns. Its EnvSpec says what it is (its gymnasium entry point and the
// constructor arguments it implements, its sizes); an Episode is one
// simulation of it, reset from a seed (as env.reset(seed=s)) or from a
// state, then stepped; env_rollouts() runs whole episodes of a population's
// members on OpenMP threads, with observation normalisation inside the loop.
//
// Each task is one file (cpp/src/envs/<task>.cc) and one line of the
// registry (cpp/src/envs/registry.cc). Tasks that need a model from outside
// the core (MuJoCo's, cpp/mujoco) implement the same interface in their own
// component and have a registry of their own there.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "evokit/policy_graph.h"
#include "evokit/population.h"

namespace evokit {

// A constructor argument's default, typed as gymnasium writes it (a range is
// a (low, high) tuple).
using EnvArgumentValue =
    std::variant<bool, std::int64_t, double, std::string, std::pair<double, double>>;

struct EnvArgument {
  std::string name;
  EnvArgumentValue value;
};

// What a native environment is.
struct EnvSpec {
  std::string name;         // the task: "CartPole-v1", "Pendulum-v1", "Hopper-v5"
  std::string entry_point;  // gymnasium's env class: "module:Class"
  // The constructor arguments native implements, with their only supported
  // value (gymnasium's defaults); any other value runs on gymnasium.
  std::vector<EnvArgument> defaults;
  std::size_t obs_size = 0;
  // Continuous: the action's values. Discrete: the number of actions; the
  // policy outputs one score each and the action is their argmax.
  std::size_t action_size = 0;
  bool discrete = false;
  bool obs_float32 = false;  // gymnasium returns float32 observations (else float64)
  // The values Episode::reset_state takes (CartPole: x, x_dot, theta,
  // theta_dot; MuJoCo: qpos then qvel).
  std::size_t state_size = 0;
  bool seeded_reset = false;  // Episode::reset_seed reproduces env.reset(seed=s)
  // A step costs far less than the policy's forward pass (classic control):
  // threads are then woken only for enough parameter reads.
  bool cheap_steps = false;
};

// One simulation of an environment, stepped by hand.
class Episode {
 public:
  virtual ~Episode() = default;
  // env.reset(seed=seed): writes the observation obs[obs_size]. Throws
  // std::logic_error for an environment without seeded_reset.
  virtual void reset_seed(std::uint64_t seed, double* obs) = 0;
  // Starts from state[state_size]; writes the observation.
  virtual void reset_state(const double* state, double* obs) = 0;
  // One env.step: action[action_size] (discrete: action[0] holds the
  // action's index); writes the observation, returns the reward, sets
  // `terminated`. Throws std::logic_error before a reset.
  virtual double step(const float* action, double* obs, bool& terminated) = 0;
};

class Env {
 public:
  virtual ~Env() = default;
  virtual const EnvSpec& spec() const noexcept = 0;
  // A simulation of its own; it keeps the env alive where it needs to.
  virtual std::unique_ptr<Episode> episode() const = 0;
};

// Observation normalisation inside the rollout loop: the policy sees
// clip((float(obs) - mean) / std, -clip, clip) in float32, as
// evokit.evaluation.obsnorm.ObsNorm computes it (clip may be +inf).
struct ObsNormalizer {
  const float* mean = nullptr;  // [obs_size]
  const float* std = nullptr;   // [obs_size]
  float clip = std::numeric_limits<float>::infinity();
};

// Where episodes start: seeds[e] (reset_seed), or states[e * state_size, ...)
// (reset_state); exactly one is given.
struct EpisodeStarts {
  const std::uint64_t* seeds = nullptr;
  const double* states = nullptr;
};

struct RolloutTiming;  // rollout.h

// Where env_rollouts writes, per episode e.
struct RolloutOutputs {
  double* returns = nullptr;        // [num_episodes]: the float64 sum of its rewards, in order
  std::int64_t* lengths = nullptr;  // [num_episodes]: its steps
  // [num_episodes * obs_size] each, or both null: the sums of the float32
  // observations the policy was fed (widened to float64) and of their squares.
  double* obs_sum = nullptr;
  double* obs_sumsq = nullptr;
  // Or null: where the threads' time went (RolloutTiming, rollout.h).
  RolloutTiming* timing = nullptr;
};

// Episode e < num_episodes of `env`: member members[e]'s policy `graph`
// (obs_size values in; action_size out, the action itself, or for a
// discrete env the scores whose argmax, the first largest with a NaN the
// largest as np.argmax, is the action) from starts[e], until the env
// terminates it or it has max_steps steps (the TimeLimit's truncation).
// The policy sees the observation in float32, normalised with `norm` (may
// be null). Episodes run through run_episodes (rollout.h), each on one
// thread with one Episode per thread reused across its episodes: results
// are identical for any num_threads. Throws like prepare_rollouts
// (rollout.h); also std::invalid_argument for a graph of the wrong input or
// output size, starts of the wrong kind, null outputs or only one of the
// sums; std::runtime_error naming the episode for an error of the
// simulation.
void env_rollouts(const Env& env, const PolicyGraph& graph, const Population& population,
                  const std::size_t* members, const EpisodeStarts& starts,
                  std::size_t num_episodes, int max_steps, const ObsNormalizer* norm,
                  const RolloutOutputs& out, int num_threads);

// ---- the core's registry ----------------------------------------------------

// The specs of the environments the core implements, in registry order.
const std::vector<const EnvSpec*>& env_specs();

// The core's environment named `name` (an EnvSpec::name). Throws
// std::invalid_argument naming the known ones for another name.
std::shared_ptr<const Env> make_env(const std::string& name);

}  // namespace evokit
