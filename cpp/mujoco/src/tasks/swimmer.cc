// Swimmer-v5: gymnasium's mujoco/swimmer_v5.py with its defaults: qpos[2:]
// and qvel observed, the forward reward less the control cost, never
// terminating.
#include "tasks.h"

namespace evokit::mujoco::tasks {

namespace {
constexpr double kCtrlCostWeight = 1e-4;
}  // namespace

const MujocoTask& swimmer() {
  static const MujocoTask task{
      mujoco_spec("Swimmer-v5", "gymnasium.envs.mujoco.swimmer_v5:SwimmerEnv",
                  locomotion_defaults("swimmer.xml", 4, 1.0, kCtrlCostWeight, 0.1, {}), 8, 5, 5, 2),
      5, 5, 2, 4, 4, 0.1, false,
      root_x, observe_state<2, false>, forward_reward<kCtrlCostWeight>};
  return task;
}

}  // namespace evokit::mujoco::tasks
