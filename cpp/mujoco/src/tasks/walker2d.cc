// Walker2d-v5: gymnasium's mujoco/walker2d_v5.py with its defaults.
#include "tasks.h"

namespace evokit::mujoco::tasks {

namespace {

constexpr double kCtrlCostWeight = 1e-3;
constexpr double kHealthyReward = 1.0;

// qpos[1:], clip(qvel, -10, 10).
void observe(const mjModel* m, const mjData* d, double* obs) {
  observe_positions(m, d, 1, true, obs);
}

double x_position(const mjModel*, const mjData* d) { return d->qpos[0]; }

// z = qpos[1] in (0.8, 2.0), angle = qpos[2] in (-1, 1).
double reward(const mjModel* m, const mjData* d, const float* action, double x_velocity,
              bool& terminated) {
  const float ctrl_cost = control_cost(action, m->nu, kCtrlCostWeight);
  const double z = d->qpos[1], angle = d->qpos[2];
  const bool healthy = 0.8 < z && z < 2.0 && -1.0 < angle && angle < 1.0;
  const double rewards = 1.0 * x_velocity + (healthy ? kHealthyReward : 0.0);
  terminated = !healthy;
  return rewards - static_cast<double>(ctrl_cost);
}

}  // namespace

const MujocoTask& walker2d() {
  static const MujocoTask task{
      mujoco_spec("Walker2d-v5", "gymnasium.envs.mujoco.walker2d_v5:Walker2dEnv",
                  {{"xml_file", std::string("walker2d_v5.xml")},
                   {"frame_skip", std::int64_t{4}},
                   {"forward_reward_weight", 1.0},
                   {"ctrl_cost_weight", kCtrlCostWeight},
                   {"healthy_reward", kHealthyReward},
                   {"terminate_when_unhealthy", true},
                   {"healthy_z_range", std::pair{0.8, 2.0}},
                   {"healthy_angle_range", std::pair{-1.0, 1.0}},
                   {"reset_noise_scale", 5e-3},
                   {"exclude_current_positions_from_observation", true}},
                  17, 9, 9, 6),
      9, 9, 6, 8, 4, 5e-3, false, x_position, observe, reward};
  return task;
}

}  // namespace evokit::mujoco::tasks
