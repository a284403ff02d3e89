// The shared simulation layer of the MuJoCo tasks (internal to the MuJoCo
// component): what a task is (MujocoTask, one file a task in tasks/, one
// line of the registry in registry.cc) and the numpy expressions the tasks
// share.
//
// Each task's formulas are those of gymnasium 1.4's <task>_v5.py with its
// default arguments, in numpy's dtypes and order of operations: float64
// positions and velocities, the velocity (x_after - x_before) / dt with dt =
// opt.timestep * frame_skip, a Python float weight times a float32 sum
// staying float32 (NEP 50: the weight is rounded to float32 first), a float32
// cost subtracted from a float64 reward after widening. The component is
// compiled with -ffp-contract=off: no FMA changes a result.
#pragma once

#include <mujoco/mujoco.h>

#include <cstddef>
#include <utility>
#include <vector>

#include "evokit/env.h"
#include "evokit/numpy_ops.h"

namespace evokit::mujoco {

// One gymnasium MuJoCo task with its default constructor arguments.
struct MujocoTask {
  EnvSpec spec;  // obs_size, action_size = nu, state_size = nq + nv
  int nq, nv, nu, nbody;  // the model's sizes (checked when loading); nbody counts the world body
  int frame_skip;
  // reset_model: qpos = init_qpos + uniform(-scale, scale, nq); qvel =
  // init_qvel + uniform(-scale, scale, nv), or scale * standard_normal(nv).
  double reset_noise_scale;
  bool normal_qvel;
  // The x the forward reward differentiates (before and after the step).
  double (*x_position)(const mjModel* m, const mjData* d);
  // _get_obs(), float64.
  void (*observe)(const mjModel* m, const mjData* d, double* obs);
  // The reward of a step, the simulation stepped, from its x velocity and
  // the action; sets `terminated`.
  double (*reward)(const mjModel* m, const mjData* d, const float* action, double x_velocity,
                   bool& terminated);
};

// A task's EnvSpec: float64 observations, nu action values, episodes from
// a state (qpos then qvel).
inline EnvSpec mujoco_spec(const char* name, const char* entry_point,
                           std::vector<EnvArgument> defaults, int obs_size, int nq, int nv,
                           int nu) {
  EnvSpec spec;
  spec.name = name;
  spec.entry_point = entry_point;
  spec.defaults = std::move(defaults);
  spec.obs_size = static_cast<std::size_t>(obs_size);
  spec.action_size = static_cast<std::size_t>(nu);
  spec.state_size = static_cast<std::size_t>(nq + nv);
  return spec;
}

// The tasks, in registry order (registry.cc).
const std::vector<const MujocoTask*>& mujoco_tasks();

// The most actuators a task may have (load_env checks the registry).
constexpr int kMaxActions = 32;

// weight * np.sum(np.square(action)) of the float32 action: float32.
inline float control_cost(const float* action, int nu, double weight) noexcept {
  float squares[kMaxActions];
  for (int i = 0; i < nu; ++i) squares[i] = action[i] * action[i];
  return static_cast<float>(weight) * numpy_sum(squares, static_cast<std::size_t>(nu));
}

// qpos[skipped:], then qvel (clipped to [-10, 10] with clip_qvel): the
// observation's start; returns where it ends.
inline double* observe_positions(const mjModel* m, const mjData* d, int skipped, bool clip_qvel,
                                 double* out) {
  for (int i = skipped; i < m->nq; ++i) *out++ = d->qpos[i];
  for (int i = 0; i < m->nv; ++i) *out++ = clip_qvel ? numpy_clip(d->qvel[i], -10.0, 10.0) : d->qvel[i];
  return out;
}

}  // namespace evokit::mujoco
