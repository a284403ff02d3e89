// The MuJoCo component without MuJoCo's headers at build time: it knows the
// task names and refuses to load any, with the reason.
#include <stdexcept>

#include "evokit/mujoco/env.h"

#ifndef EVOKIT_MUJOCO_UNAVAILABLE
#define EVOKIT_MUJOCO_UNAVAILABLE "MuJoCo's headers were not found"
#endif

namespace evokit::mujoco {

int header_version() noexcept { return 0; }

const std::vector<std::string>& task_names() {
  static const std::vector<std::string> names = {"Hopper-v5", "HalfCheetah-v5", "Walker2d-v5",
                                                 "Ant-v5", "Swimmer-v5"};
  return names;
}

std::shared_ptr<Env> load_env(const std::string&, const std::string&, std::uintptr_t) {
  throw std::runtime_error("EvoKit was built without native MuJoCo (" EVOKIT_MUJOCO_UNAVAILABLE
                           " at build time)");
}

}  // namespace evokit::mujoco
