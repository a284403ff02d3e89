// HalfCheetah-v5: gymnasium's mujoco/half_cheetah_v5.py with its defaults:
// qpos[1:] and qvel observed, the forward reward less the control cost,
// never terminating, qvel's reset noise standard normal.
#include "tasks.h"

namespace evokit::mujoco::tasks {

namespace {
constexpr double kCtrlCostWeight = 0.1;
}  // namespace

const MujocoTask& half_cheetah() {
  static const MujocoTask task{
      mujoco_spec("HalfCheetah-v5", "gymnasium.envs.mujoco.half_cheetah_v5:HalfCheetahEnv",
                  locomotion_defaults("half_cheetah.xml", 5, 1.0, kCtrlCostWeight, 0.1, {}),
                  17, 9, 9, 6),
      9, 9, 6, 8, 5, 0.1, true,
      root_x, observe_state<1, false>, forward_reward<kCtrlCostWeight>};
  return task;
}

}  // namespace evokit::mujoco::tasks
