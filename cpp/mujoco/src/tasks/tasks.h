// The MuJoCo tasks, one function per file of this folder (internal): each
// returns its task, made on first use.
#pragma once

#include "../simulation.h"

namespace evokit::mujoco::tasks {

const MujocoTask& hopper();        // hopper.cc
const MujocoTask& half_cheetah();  // half_cheetah.cc
const MujocoTask& walker2d();      // walker2d.cc
const MujocoTask& ant();           // ant.cc
const MujocoTask& swimmer();       // swimmer.cc
const MujocoTask& humanoid();      // humanoid.cc

}  // namespace evokit::mujoco::tasks
