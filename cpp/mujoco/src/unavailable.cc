// The MuJoCo component without MuJoCo's headers at build time: it knows no
// task and refuses to load any, with the reason.
#include <stdexcept>

#include "evokit/mujoco/env.h"

#ifndef EVOKIT_MUJOCO_UNAVAILABLE
#define EVOKIT_MUJOCO_UNAVAILABLE "MuJoCo's headers were not found"
#endif

namespace evokit::mujoco {

int header_version() noexcept { return 0; }

std::string unavailable_reason() {
  return "EvoKit was built without native MuJoCo (" EVOKIT_MUJOCO_UNAVAILABLE " at build time)";
}

const std::vector<const MujocoTaskInfo*>& tasks() {
  static const std::vector<const MujocoTaskInfo*> none;
  return none;
}

std::shared_ptr<Env> load_env(const std::string&, const std::string&, std::uintptr_t) {
  throw std::runtime_error(unavailable_reason());
}

}  // namespace evokit::mujoco
