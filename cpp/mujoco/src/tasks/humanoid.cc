// Humanoid-v5: gymnasium's mujoco/humanoid_v5.py with its defaults.
//
// Unlike the other tasks, the forward velocity is the center of mass's
// (mass_center: np.sum(body_mass[:, None] * xipos, axis=0) / np.sum(body_mass),
// the first sum adding the bodies' rows in order, the second numpy's pairwise
// sum), the control cost is float64 (np.square of data.ctrl, the action
// widened), and the contact cost is the sum of every squared cfrc_ext,
// clipped to contact_cost_range. The observation needs cfrc_ext, which the
// step's mj_rnePostConstraint computes.
#include <limits>

#include "tasks.h"

namespace evokit::mujoco::tasks {

namespace {

constexpr double kForwardRewardWeight = 1.25;
constexpr double kCtrlCostWeight = 0.1;
constexpr double kContactCostWeight = 5e-7;
constexpr double kContactCostMax = 10.0;
constexpr double kHealthyReward = 5.0;
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr int kBodies = 14;  // the world body included
constexpr int kActions = 17;

// qpos[2:], qvel, cinert[1:], cvel[1:], qfrc_actuator[6:], cfrc_ext[1:].
void observe(const mjModel* m, const mjData* d, double* obs) {
  double* out = observe_positions(m, d, 2, false, obs);
  for (int i = 10; i < 10 * m->nbody; ++i) *out++ = d->cinert[i];
  for (int i = 6; i < 6 * m->nbody; ++i) *out++ = d->cvel[i];
  for (int i = 6; i < m->nv; ++i) *out++ = d->qfrc_actuator[i];
  for (int i = 6; i < 6 * m->nbody; ++i) *out++ = d->cfrc_ext[i];
}

// mass_center(model, data)[0].
double x_position(const mjModel* m, const mjData* d) {
  double weighted = 0.0;
  for (int b = 0; b < m->nbody; ++b) {
    const double term = m->body_mass[b] * d->xipos[3 * b];
    weighted = b == 0 ? term : weighted + term;
  }
  return weighted / numpy_sum(m->body_mass, static_cast<std::size_t>(m->nbody));
}

double reward(const mjModel*, const mjData* d, const float*, double x_velocity,
              bool& terminated) {
  const double forward_reward = kForwardRewardWeight * x_velocity;
  // is_healthy: min_z < qpos[2] < max_z.
  const bool healthy = 1.0 < d->qpos[2] && d->qpos[2] < 2.0;
  const double rewards = forward_reward + (healthy ? kHealthyReward : 0.0);
  // ctrl_cost_weight * np.sum(np.square(data.ctrl)), float64.
  double squares[kActions];
  for (int i = 0; i < kActions; ++i) squares[i] = d->ctrl[i] * d->ctrl[i];
  const double ctrl_cost = kCtrlCostWeight * numpy_sum(squares, kActions);
  // np.clip(contact_cost_weight * np.sum(np.square(cfrc_ext)), -inf, 10.0).
  double forces[6 * kBodies];
  for (int i = 0; i < 6 * kBodies; ++i) forces[i] = d->cfrc_ext[i] * d->cfrc_ext[i];
  const double contact_cost =
      numpy_clip(kContactCostWeight * numpy_sum(forces, 6 * kBodies), -kInf, kContactCostMax);
  terminated = !healthy;
  return rewards - (ctrl_cost + contact_cost);
}

}  // namespace

const MujocoTask& humanoid() {
  static const MujocoTask task{
      mujoco_spec("Humanoid-v5", "gymnasium.envs.mujoco.humanoid_v5:HumanoidEnv",
                  locomotion_defaults("humanoid.xml", 5, kForwardRewardWeight, kCtrlCostWeight, 1e-2,
                                      {{"contact_cost_weight", kContactCostWeight},
                                       {"contact_cost_range", std::pair{-kInf, kContactCostMax}},
                                       {"healthy_reward", kHealthyReward},
                                       {"terminate_when_unhealthy", true},
                                       {"healthy_z_range", std::pair{1.0, 2.0}},
                                       {"include_cinert_in_observation", true},
                                       {"include_cvel_in_observation", true},
                                       {"include_qfrc_actuator_in_observation", true},
                                       {"include_cfrc_ext_in_observation", true}}),
                  348, 24, 23, kActions),
      24, 23, kActions, kBodies, 5, 1e-2, false, x_position, observe, reward};
  return task;
}

}  // namespace evokit::mujoco::tasks
