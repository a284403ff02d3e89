// The MuJoCo tasks, one function per file of this folder (internal): each
// returns its task, made on first use.
#pragma once

#include <utility>
#include <vector>

#include "../simulation.h"

namespace evokit::mujoco::tasks {

// Hopper-v5 and Walker2d-v5, one family: planar walkers (nv = nq, a slide
// joint along x first) observed as qpos[1:] and clip(qvel, -10, 10), stepped
// 4 frames, rewarded by healthy_forward_reward with ctrl_cost_weight 1e-3
// and healthy_reward 1, reset with uniform noise of scale 5e-3.
constexpr double kWalkerCtrlCostWeight = 1e-3;

template <bool (*kHealthy)(const mjModel*, const mjData*)>
MujocoTask planar_walker(const char* name, const char* entry_point, const char* xml_file,
                         std::vector<EnvArgument> health_ranges, int nq, int nu, int nbody) {
  std::vector<EnvArgument> own{{"healthy_reward", 1.0}, {"terminate_when_unhealthy", true}};
  for (EnvArgument& a : health_ranges) own.push_back(std::move(a));
  return MujocoTask{
      mujoco_spec(name, entry_point,
                  locomotion_defaults(xml_file, 4, 1.0, kWalkerCtrlCostWeight, 5e-3, std::move(own)),
                  2 * nq - 1, nq, nq, nu),
      nq, nq, nu, nbody, 4, 5e-3, false,
      root_x, observe_state<1, true>, healthy_forward_reward<kWalkerCtrlCostWeight, kHealthy>};
}

const MujocoTask& hopper();        // hopper.cc
const MujocoTask& half_cheetah();  // half_cheetah.cc
const MujocoTask& walker2d();      // walker2d.cc
const MujocoTask& ant();           // ant.cc
const MujocoTask& swimmer();       // swimmer.cc
const MujocoTask& humanoid();      // humanoid.cc

}  // namespace evokit::mujoco::tasks
