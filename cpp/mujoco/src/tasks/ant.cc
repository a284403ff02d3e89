// Ant-v5: gymnasium's mujoco/ant_v5.py with its defaults.
#include <cmath>

#include "tasks.h"

namespace evokit::mujoco::tasks {

namespace {

constexpr double kCtrlCostWeight = 0.5;
constexpr double kContactCostWeight = 5e-4;
constexpr double kHealthyReward = 1.0;
constexpr int kBodies = 14;  // the world body included

// qpos[2:], qvel, clip(cfrc_ext[1:], -1, 1).
void observe(const mjModel* m, const mjData* d, double* obs) {
  double* out = observe_positions(m, d, 2, false, obs);
  for (int i = 6; i < 6 * m->nbody; ++i) *out++ = numpy_clip(d->cfrc_ext[i], -1.0, 1.0);
}

// The main body's (body 1) xpos.
double x_position(const mjModel*, const mjData* d) { return d->xpos[3]; }

// qpos and qvel finite, z = qpos[2] in [0.2, 1.0].
bool healthy(const mjModel* m, const mjData* d) {
  for (int i = 0; i < m->nq; ++i) {
    if (!std::isfinite(d->qpos[i])) return false;
  }
  for (int i = 0; i < m->nv; ++i) {
    if (!std::isfinite(d->qvel[i])) return false;
  }
  return 0.2 <= d->qpos[2] && d->qpos[2] <= 1.0;
}

double reward(const mjModel* m, const mjData* d, const float* action, double x_velocity,
              bool& terminated) {
  const float ctrl_cost = control_cost(action, m->nu, kCtrlCostWeight);
  const bool is_healthy = healthy(m, d);
  const double rewards = x_velocity * 1 + (is_healthy ? kHealthyReward : 0.0);
  // contact_cost_weight * np.sum(np.square(np.clip(cfrc_ext, -1, 1))).
  double squared[6 * kBodies];
  for (int i = 0; i < 6 * kBodies; ++i) {
    const double f = numpy_clip(d->cfrc_ext[i], -1.0, 1.0);
    squared[i] = f * f;
  }
  const double contact_cost = kContactCostWeight * numpy_sum(squared, 6 * kBodies);
  terminated = !is_healthy;
  return rewards - (static_cast<double>(ctrl_cost) + contact_cost);
}

}  // namespace

const MujocoTask& ant() {
  static const MujocoTask task{
      mujoco_spec("Ant-v5", "gymnasium.envs.mujoco.ant_v5:AntEnv",
                  locomotion_defaults("ant.xml", 5, std::int64_t{1}, kCtrlCostWeight, 0.1,
                                      {{"contact_cost_weight", kContactCostWeight},
                                       {"healthy_reward", kHealthyReward},
                                       {"main_body", std::int64_t{1}},
                                       {"terminate_when_unhealthy", true},
                                       {"healthy_z_range", std::pair{0.2, 1.0}},
                                       {"contact_force_range", std::pair{-1.0, 1.0}},
                                       {"include_cfrc_ext_in_observation", true}}),
                  105, 15, 14, 8),
      15, 14, 8, kBodies, 5, 0.1, true, x_position, observe, reward};
  return task;
}

}  // namespace evokit::mujoco::tasks
