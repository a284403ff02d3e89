// Hopper-v5: gymnasium's mujoco/hopper_v5.py with its defaults (a planar
// walker, tasks.h).
#include <limits>

#include "tasks.h"

namespace evokit::mujoco::tasks {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Every qpos[2:], qvel within (-100, 100), z = qpos[1] in (0.7, inf),
// angle = qpos[2] in (-0.2, 0.2).
bool healthy(const mjModel* m, const mjData* d) {
  bool state = true;
  for (int i = 2; i < m->nq; ++i) state = state && -100.0 < d->qpos[i] && d->qpos[i] < 100.0;
  for (int i = 0; i < m->nv; ++i) state = state && -100.0 < d->qvel[i] && d->qvel[i] < 100.0;
  const double z = d->qpos[1], angle = d->qpos[2];
  return state && 0.7 < z && z < kInf && -0.2 < angle && angle < 0.2;
}

}  // namespace

const MujocoTask& hopper() {
  static const MujocoTask task = planar_walker<healthy>(
      "Hopper-v5", "gymnasium.envs.mujoco.hopper_v5:HopperEnv", "hopper.xml",
      {{"healthy_state_range", std::pair{-100.0, 100.0}},
       {"healthy_z_range", std::pair{0.7, kInf}},
       {"healthy_angle_range", std::pair{-0.2, 0.2}}},
      /*nq=*/6, /*nu=*/3, /*nbody=*/5);
  return task;
}

}  // namespace evokit::mujoco::tasks
