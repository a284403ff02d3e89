// The core's native environments, one function per task file (internal):
// each returns its task's one Env, made on first use.
#pragma once

#include <memory>
#include <utility>
#include <vector>

#include "evokit/env.h"

namespace evokit::envs {

// A classic-control environment: its spec, and episodes of EpisodeT.
template <class EpisodeT>
class ClassicEnv final : public Env {
 public:
  explicit ClassicEnv(EnvSpec spec) : spec_(std::move(spec)) {}
  const EnvSpec& spec() const noexcept override { return spec_; }
  std::unique_ptr<Episode> episode() const override { return std::make_unique<EpisodeT>(); }

 private:
  EnvSpec spec_;
};

// The spec of a classic-control environment: float32 observations, reset
// from a seed as env.reset(seed=s) or from a state of state_size values, a
// step far cheaper than the policy's forward pass.
inline EnvSpec classic_spec(const char* name, const char* entry_point,
                            std::vector<EnvArgument> defaults, std::size_t obs_size,
                            std::size_t action_size, bool discrete, std::size_t state_size) {
  EnvSpec spec;
  spec.name = name;
  spec.entry_point = entry_point;
  spec.defaults = std::move(defaults);
  spec.obs_size = obs_size;
  spec.action_size = action_size;
  spec.discrete = discrete;
  spec.obs_float32 = true;
  spec.state_size = state_size;
  spec.seeded_reset = true;
  spec.cheap_steps = true;
  return spec;
}

std::shared_ptr<const Env> cartpole();  // cartpole.cc
std::shared_ptr<const Env> pendulum();  // pendulum.cc

}  // namespace evokit::envs
