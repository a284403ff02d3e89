// Hopper-v5: gymnasium's mujoco/hopper_v5.py with its defaults.
#include <limits>

#include "tasks.h"

namespace evokit::mujoco::tasks {

namespace {

constexpr double kCtrlCostWeight = 1e-3;
constexpr double kHealthyReward = 1.0;
constexpr double kInf = std::numeric_limits<double>::infinity();

// qpos[1:], clip(qvel, -10, 10).
void observe(const mjModel* m, const mjData* d, double* obs) {
  observe_positions(m, d, 1, true, obs);
}

double x_position(const mjModel*, const mjData* d) { return d->qpos[0]; }

// Every qpos[2:], qvel within (-100, 100), z = qpos[1] in (0.7, inf),
// angle = qpos[2] in (-0.2, 0.2).
bool healthy(const mjModel* m, const mjData* d) {
  bool state = true;
  for (int i = 2; i < m->nq; ++i) state = state && -100.0 < d->qpos[i] && d->qpos[i] < 100.0;
  for (int i = 0; i < m->nv; ++i) state = state && -100.0 < d->qvel[i] && d->qvel[i] < 100.0;
  const double z = d->qpos[1], angle = d->qpos[2];
  return state && 0.7 < z && z < kInf && -0.2 < angle && angle < 0.2;
}

double reward(const mjModel* m, const mjData* d, const float* action, double x_velocity,
              bool& terminated) {
  const float ctrl_cost = control_cost(action, m->nu, kCtrlCostWeight);
  const bool is_healthy = healthy(m, d);
  const double rewards = 1.0 * x_velocity + (is_healthy ? kHealthyReward : 0.0);
  terminated = !is_healthy;
  return rewards - static_cast<double>(ctrl_cost);
}

}  // namespace

const MujocoTask& hopper() {
  static const MujocoTask task{
      mujoco_spec("Hopper-v5", "gymnasium.envs.mujoco.hopper_v5:HopperEnv",
                  {{"xml_file", std::string("hopper.xml")},
                   {"frame_skip", std::int64_t{4}},
                   {"forward_reward_weight", 1.0},
                   {"ctrl_cost_weight", kCtrlCostWeight},
                   {"healthy_reward", kHealthyReward},
                   {"terminate_when_unhealthy", true},
                   {"healthy_state_range", std::pair{-100.0, 100.0}},
                   {"healthy_z_range", std::pair{0.7, kInf}},
                   {"healthy_angle_range", std::pair{-0.2, 0.2}},
                   {"reset_noise_scale", 5e-3},
                   {"exclude_current_positions_from_observation", true}},
                  11, 6, 6, 3),
      6, 6, 3, 5, 4, 5e-3, false, x_position, observe, reward};
  return task;
}

}  // namespace evokit::mujoco::tasks
