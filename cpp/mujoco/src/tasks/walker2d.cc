// Walker2d-v5: gymnasium's mujoco/walker2d_v5.py with its defaults (a planar
// walker, tasks.h).
#include "tasks.h"

namespace evokit::mujoco::tasks {

namespace {

// z = qpos[1] in (0.8, 2.0), angle = qpos[2] in (-1, 1).
bool healthy(const mjModel*, const mjData* d) {
  const double z = d->qpos[1], angle = d->qpos[2];
  return 0.8 < z && z < 2.0 && -1.0 < angle && angle < 1.0;
}

}  // namespace

const MujocoTask& walker2d() {
  static const MujocoTask task = planar_walker<healthy>(
      "Walker2d-v5", "gymnasium.envs.mujoco.walker2d_v5:Walker2dEnv", "walker2d_v5.xml",
      {{"healthy_z_range", std::pair{0.8, 2.0}}, {"healthy_angle_range", std::pair{-1.0, 1.0}}},
      /*nq=*/9, /*nu=*/6, /*nbody=*/8);
  return task;
}

}  // namespace evokit::mujoco::tasks
