// The core's native environments, one function per task file (internal):
// each returns its task's one Env, made on first use.
#pragma once

#include <memory>

#include "evokit/env.h"

namespace evokit::envs {

std::shared_ptr<const Env> cartpole();  // cartpole.cc
std::shared_ptr<const Env> pendulum();  // pendulum.cc

}  // namespace evokit::envs
