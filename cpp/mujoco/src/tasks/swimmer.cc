// Swimmer-v5: gymnasium's mujoco/swimmer_v5.py with its defaults.
#include "tasks.h"

namespace evokit::mujoco::tasks {

namespace {

constexpr double kCtrlCostWeight = 1e-4;

// qpos[2:], qvel.
void observe(const mjModel* m, const mjData* d, double* obs) {
  observe_positions(m, d, 2, false, obs);
}

double x_position(const mjModel*, const mjData* d) { return d->qpos[0]; }

// Never terminates.
double reward(const mjModel* m, const mjData*, const float* action, double x_velocity, bool&) {
  const float ctrl_cost = control_cost(action, m->nu, kCtrlCostWeight);
  return 1.0 * x_velocity - static_cast<double>(ctrl_cost);
}

}  // namespace

const MujocoTask& swimmer() {
  static const MujocoTask task{
      mujoco_spec("Swimmer-v5", "gymnasium.envs.mujoco.swimmer_v5:SwimmerEnv",
                  {{"xml_file", std::string("swimmer.xml")},
                   {"frame_skip", std::int64_t{4}},
                   {"forward_reward_weight", 1.0},
                   {"ctrl_cost_weight", kCtrlCostWeight},
                   {"reset_noise_scale", 0.1},
                   {"exclude_current_positions_from_observation", true}},
                  8, 5, 5, 2),
      5, 5, 2, 4, 4, 0.1, false, x_position, observe, reward};
  return task;
}

}  // namespace evokit::mujoco::tasks
