// Gymnasium's MuJoCo locomotion tasks natively: the MuJoCo component of the
// Python extension (cpp/mujoco, linked into evokit._core, never into
// evokit_core). This header needs no MuJoCo: without MuJoCo's headers at
// build time the component is a stub whose load_env() refuses with the
// reason.
//
// Tasks: gymnasium 1.4's Hopper-v5, HalfCheetah-v5, Walker2d-v5, Ant-v5 and
// Swimmer-v5 with their default constructor arguments. A step is the env's
// step(): ctrl <- action (float32 widened to float64), mj_step frame_skip
// times, mj_rnePostConstraint, then the observation, the reward terms and
// the health check in the same float64 / float32 operations numpy performs
// (the control cost stays float32, as np.sum(np.square(action)) of a float32
// action does; sums are numpy's pairwise sums, numpy_ops.h), so
// observations and rewards are the bits gymnasium returns. A reset is
// mj_resetData, qpos and qvel set, mj_forward (MujocoEnv.set_state); the
// initial qpos and qvel, which gymnasium draws from the seeded generator,
// are given by the caller.
//
// MuJoCo itself is never linked: the functions are resolved with dlopen /
// dlsym from the libmujoco the caller names (the one the `mujoco` Python
// package loaded), which must be the version of the headers the component
// was compiled with (mj_version() == mjVERSION_HEADER); struct layouts are
// read through those headers, so any other version is refused.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "evokit/policy_graph.h"
#include "evokit/population.h"

namespace evokit::mujoco {

// The MuJoCo version whose headers the component was compiled with
// (mjVERSION_HEADER: 4000000 for 4.0.0), or 0 for the stub.
int header_version() noexcept;

// The tasks load_env() knows: "Hopper-v5", "HalfCheetah-v5", "Walker2d-v5",
// "Ant-v5", "Swimmer-v5".
const std::vector<std::string>& task_names();

// Observation normalisation inside the rollout loop: the policy sees
// clip((float(obs) - mean) / std, -clip, clip) in float32, as
// evokit.evaluation.obsnorm.ObsNorm computes it (clip may be +inf).
struct ObsNormalizer {
  const float* mean = nullptr;  // [obs_size]
  const float* std = nullptr;   // [obs_size]
  float clip = std::numeric_limits<float>::infinity();
};

// Where rollouts() writes, per episode e.
struct RolloutOutputs {
  double* returns = nullptr;        // [num_episodes]: the float64 sum of its rewards, in order
  std::int64_t* lengths = nullptr;  // [num_episodes]: its steps
  // [num_episodes * obs_size] each, or both null: the sums of the float32
  // observations the policy was fed (widened to float64) and of their squares.
  double* obs_sum = nullptr;
  double* obs_sumsq = nullptr;
};

// One simulation stepped by hand (the test hook): reset(), then step() with
// any actions.
class Episode {
 public:
  virtual ~Episode() = default;
  // Starts from qpos[nq], qvel[nv]; writes the observation obs[obs_size].
  virtual void reset(const double* qpos, const double* qvel, double* obs) = 0;
  // One env step with action[action_size]: writes the observation, returns
  // the reward, sets `terminated`. Throws std::logic_error before reset(),
  // std::runtime_error with MuJoCo's message for a MuJoCo error.
  virtual double step(const float* action, double* obs, bool& terminated) = 0;
};

class Env {
 public:
  virtual ~Env() = default;
  virtual const std::string& task() const noexcept = 0;
  // "4.0.0": the version of the loaded libmujoco (mj_versionString()).
  virtual const std::string& library_version() const noexcept = 0;
  virtual std::size_t obs_size() const noexcept = 0;
  virtual std::size_t action_size() const noexcept = 0;
  virtual std::size_t nq() const noexcept = 0;
  virtual std::size_t nv() const noexcept = 0;

  // A simulation of its own (an mjData), for stepping by hand; it keeps the
  // env alive.
  virtual std::unique_ptr<Episode> episode() const = 0;

  // Episode e < num_episodes: member members[e]'s policy `graph` (obs_size()
  // values in, action_size() out: the action) from qpos[e * nq, ...) and
  // qvel[e * nv, ...), until the task terminates it or it has max_steps
  // steps (the TimeLimit's truncation). With `norm` (may be null) the policy
  // sees normalised observations. Episodes run through run_episodes
  // (rollout.h), on min(num_threads, num_episodes) threads, each with one
  // mjData reused across its episodes: results are identical for any
  // num_threads. Throws like prepare_rollouts (rollout.h); also
  // std::invalid_argument for a graph of the wrong input or output size or
  // null arrays, std::runtime_error naming the episode for a MuJoCo error.
  virtual void rollouts(const PolicyGraph& graph, const Population& population,
                        const std::size_t* members, const double* qpos, const double* qvel,
                        std::size_t num_episodes, int max_steps, const ObsNormalizer* norm,
                        const RolloutOutputs& out, int num_threads) const = 0;
};

// `task` on a copy of the mjModel at `model_address` (gymnasium's
// env.unwrapped.model._address: its model exactly, copied with
// mj_copyModel; the original may be freed afterwards), simulated by the
// libmujoco at `library_path`. Throws std::invalid_argument for an unknown
// task, a null address or a model whose sizes are not the task's;
// std::runtime_error with a one-line reason when MuJoCo cannot be used: the
// component was built without MuJoCo's headers, the library does not load
// or lacks a function, or its version is not the headers' version.
std::shared_ptr<Env> load_env(const std::string& task, const std::string& library_path,
                              std::uintptr_t model_address);

}  // namespace evokit::mujoco
