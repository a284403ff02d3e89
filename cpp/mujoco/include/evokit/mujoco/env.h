// Gymnasium's MuJoCo locomotion tasks natively: the MuJoCo component of the
// Python extension (cpp/mujoco, linked into evokit._core, never into
// evokit_core). Each task is a native environment (evokit/env.h) whose
// episodes start from a state (qpos, then qvel) and run through
// evokit::env_rollouts. This header needs no MuJoCo: without MuJoCo's
// headers at build time the component is a stub that knows no task and
// whose load_env() refuses with the reason.
//
// Tasks (src/tasks/, one file each, listed in src/registry.cc): gymnasium
// 1.4's Hopper-v5, HalfCheetah-v5, Walker2d-v5, Ant-v5, Swimmer-v5 and
// Humanoid-v5 with their default constructor arguments. A step is the env's
// step(): ctrl <- action (float32 widened to float64), mj_step frame_skip
// times, mj_rnePostConstraint, then the observation, the reward terms and
// the health check in the same float64 / float32 operations numpy performs
// (sums are numpy's pairwise sums, evokit/numpy_ops.h), so observations and
// rewards are the bits gymnasium returns. A reset is mj_resetData, qpos and
// qvel set, mj_forward (MujocoEnv.set_state); the initial qpos and qvel,
// which gymnasium draws from the seeded generator, are given by the caller.
//
// MuJoCo itself is never linked: the functions are resolved with dlopen /
// dlsym from the libmujoco the caller names (the one the `mujoco` Python
// package loaded), which must be the version of the headers the component
// was compiled with (mj_version() == mjVERSION_HEADER); struct layouts are
// read through those headers, so any other version is refused.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "evokit/env.h"

namespace evokit::mujoco {

// The MuJoCo version whose headers the component was compiled with
// (mjVERSION_HEADER: 4000000 for 4.0.0), or 0 for the stub.
int header_version() noexcept;
// Why this build has no native MuJoCo ("MuJoCo's headers were not found"),
// or "" when it has.
std::string unavailable_reason();

// What a task is, beside its EnvSpec: the model's sizes and how
// gymnasium's reset_model draws the initial state (qpos = init_qpos +
// uniform(-scale, scale, nq); qvel = init_qvel + uniform(-scale, scale, nv),
// or scale * standard_normal(nv) with normal_qvel).
struct MujocoTaskInfo {
  const EnvSpec* spec;
  int nq, nv;
  double reset_noise_scale;
  bool normal_qvel;
};

// The tasks load_env() knows, in registry order (none in the stub).
const std::vector<const MujocoTaskInfo*>& tasks();

// A MuJoCo task on its own copy of the model. Its episodes' reset_state
// takes qpos[nq] then qvel[nv]; reset_seed throws std::logic_error; step
// throws std::runtime_error with MuJoCo's message for a MuJoCo error.
class Env : public evokit::Env {
 public:
  // "4.0.0": the version of the loaded libmujoco (mj_versionString()).
  virtual const std::string& library_version() const noexcept = 0;
  virtual std::size_t nq() const noexcept = 0;
  virtual std::size_t nv() const noexcept = 0;
};

// `task` on a copy of the mjModel at `model_address` (gymnasium's
// env.unwrapped.model._address: its model exactly, copied with
// mj_copyModel; the original may be freed afterwards), simulated by the
// libmujoco at `library_path`. Throws std::invalid_argument for an unknown
// task, a null address or a model whose sizes are not the task's;
// std::runtime_error with a one-line reason when MuJoCo cannot be used: the
// component was built without MuJoCo's headers, the library does not load
// or lacks a function, or its version is not the headers' version.
std::shared_ptr<Env> load_env(const std::string& task, const std::string& library_path,
                              std::uintptr_t model_address);

}  // namespace evokit::mujoco
