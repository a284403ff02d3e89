// The MuJoCo tasks (simulation.h): one line a task, each in tasks/.
#include "tasks/tasks.h"

namespace evokit::mujoco {

const std::vector<const MujocoTask*>& mujoco_tasks() {
  static const std::vector<const MujocoTask*> all = {
      &tasks::hopper(), &tasks::half_cheetah(), &tasks::walker2d(),
      &tasks::ant(),    &tasks::swimmer(),      &tasks::humanoid(),
  };
  return all;
}

}  // namespace evokit::mujoco
