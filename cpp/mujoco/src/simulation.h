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

// The tasks, in registry order (registry.cc).
const std::vector<const MujocoTask*>& mujoco_tasks();

// The constructor arguments every v5 locomotion task has (xml_file,
// frame_skip, forward_reward_weight, ctrl_cost_weight, reset_noise_scale,
// exclude_current_positions_from_observation=True), then the task's own.
std::vector<EnvArgument> locomotion_defaults(const char* xml_file, int frame_skip,
                                             EnvArgumentValue forward_reward_weight,
                                             double ctrl_cost_weight, double reset_noise_scale,
                                             std::vector<EnvArgument> own);

// A task's EnvSpec: float64 observations, nu action values, episodes from
// a state (qpos then qvel).
EnvSpec mujoco_spec(const char* name, const char* entry_point, std::vector<EnvArgument> defaults,
                    int obs_size, int nq, int nv, int nu);

// The most actuators a task may have (load_env checks the registry).
constexpr int kMaxActions = 32;

// weight * np.sum(np.square(action)) of the float32 action: float32.
float control_cost(const float* action, int nu, double weight) noexcept;

// qpos[0]: the x of the tasks whose root is a slide joint along x.
double root_x(const mjModel* m, const mjData* d);

// qpos[skipped:], then qvel (clipped to [-10, 10] with clip_qvel): the
// observation's start; returns where it ends.
double* observe_positions(const mjModel* m, const mjData* d, int skipped, bool clip_qvel,
                          double* out);

// The reward of HalfCheetah and Swimmer: forward_reward_weight (1) *
// x_velocity - the float32 control cost; never terminates.
template <const double& kCtrlCostWeight>
double forward_reward(const mjModel* m, const mjData*, const float* action, double x_velocity,
                      bool&) {
  return 1.0 * x_velocity - static_cast<double>(control_cost(action, m->nu, kCtrlCostWeight));
}

// The reward of Hopper and Walker2d: forward_reward_weight (1) * x_velocity +
// healthy_reward (1) while healthy - the float32 control cost; terminated
// when not healthy.
template <const double& kCtrlCostWeight, bool (*kHealthy)(const mjModel*, const mjData*)>
double healthy_forward_reward(const mjModel* m, const mjData* d, const float* action,
                              double x_velocity, bool& terminated) {
  const float ctrl_cost = control_cost(action, m->nu, kCtrlCostWeight);
  const bool healthy = kHealthy(m, d);
  const double rewards = 1.0 * x_velocity + (healthy ? 1.0 : 0.0);
  terminated = !healthy;
  return rewards - static_cast<double>(ctrl_cost);
}

// _get_obs() of the tasks that observe qpos[kSkipped:] and qvel (clipped
// with kClipQvel) only.
template <int kSkipped, bool kClipQvel>
void observe_state(const mjModel* m, const mjData* d, double* obs) {
  observe_positions(m, d, kSkipped, kClipQvel, obs);
}

}  // namespace evokit::mujoco
