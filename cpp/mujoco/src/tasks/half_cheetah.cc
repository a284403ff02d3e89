// HalfCheetah-v5: gymnasium's mujoco/half_cheetah_v5.py with its defaults.
#include "tasks.h"

namespace evokit::mujoco::tasks {

namespace {

constexpr double kCtrlCostWeight = 0.1;

// qpos[1:], qvel.
void observe(const mjModel* m, const mjData* d, double* obs) {
  observe_positions(m, d, 1, false, obs);
}

double x_position(const mjModel*, const mjData* d) { return d->qpos[0]; }

// Never terminates.
double reward(const mjModel* m, const mjData*, const float* action, double x_velocity, bool&) {
  const float ctrl_cost = control_cost(action, m->nu, kCtrlCostWeight);
  return 1.0 * x_velocity - static_cast<double>(ctrl_cost);
}

}  // namespace

const MujocoTask& half_cheetah() {
  static const MujocoTask task{
      mujoco_spec("HalfCheetah-v5", "gymnasium.envs.mujoco.half_cheetah_v5:HalfCheetahEnv",
                  {{"xml_file", std::string("half_cheetah.xml")},
                   {"frame_skip", std::int64_t{5}},
                   {"forward_reward_weight", 1.0},
                   {"ctrl_cost_weight", kCtrlCostWeight},
                   {"reset_noise_scale", 0.1},
                   {"exclude_current_positions_from_observation", true}},
                  17, 9, 9, 6),
      9, 9, 6, 8, 5, 0.1, true, x_position, observe, reward};
  return task;
}

}  // namespace evokit::mujoco::tasks
