// The core's native environments (evokit/env.h): the registry, Pendulum-v1
// against values gymnasium 1.4 / numpy 2.4 computed (env.unwrapped.state and
// the step's reward, reset(seed=12345), actions 0.5, -3.0, 1.25), and the
// episodes' errors. Whole episodes against gymnasium, on 1 and 2 threads:
// tests/evaluation/test_cartpole_native.py and test_pendulum_native.py.
#include "evokit/env.h"

#include <gtest/gtest.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "test_util.h"

namespace evokit {
namespace {

TEST(EnvRegistry, NamesEachTaskOnce) {
  std::vector<std::string> names;
  for (const EnvSpec* spec : env_specs()) names.push_back(spec->name);
  EXPECT_EQ(names, (std::vector<std::string>{"CartPole-v1", "Pendulum-v1"}));
  for (const std::string& name : names) EXPECT_EQ(make_env(name)->spec().name, name);
  EXPECT_EQ(make_env("CartPole-v1"), make_env("CartPole-v1"));  // one env per task
  EXPECT_THROW_WITH(make_env("Acrobot-v1"), std::invalid_argument,
                    "native environment must be one of CartPole-v1, Pendulum-v1, got 'Acrobot-v1'");
}

TEST(Pendulum, StepsAreGymnasiums) {
  const std::shared_ptr<const Env> env = make_env("Pendulum-v1");
  const EnvSpec& spec = env->spec();
  EXPECT_EQ(spec.entry_point, "gymnasium.envs.classic_control.pendulum:PendulumEnv");
  EXPECT_EQ(spec.obs_size, 3u);
  EXPECT_EQ(spec.action_size, 1u);
  EXPECT_FALSE(spec.discrete);
  std::unique_ptr<Episode> episode = env->episode();
  double obs[3];
  bool terminated = true;
  const float action = 0.5f;
  EXPECT_THROW_WITH(episode->step(&action, obs, terminated), std::logic_error,
                    "step() before reset()");
  episode->reset_seed(12345, obs);
  // cos, sin of theta = -0x1.b69429e307e5bp+0; theta_dot = -0x1.77476751b0da0p-2, in float32.
  EXPECT_EQ(obs[0], static_cast<float>(-0.14192117750644684));
  EXPECT_EQ(obs[1], static_cast<float>(-0.9898779392242432));
  EXPECT_EQ(obs[2], static_cast<float>(-0x1.77476751b0da0p-2));
  const float actions[3] = {0.5f, -3.0f, 1.25f};
  const double rewards[3] = {-0x1.796ff71bb06e8p+1, -0x1.9ce50d6e74ba7p+1, -0x1.f5ddbd3f866dep+1};
  const double obs2[3][3] = {{-0x1.8b04bep-3, -0x1.f662c6p-1, -0x1.08ad22p+0},
                             {-0x1.2c4052p-2, -0x1.e97ef8p-1, -0x1.08ef7cp+1},
                             {-0x1.a89910p-2, -0x1.d1e93ep-1, -0x1.4cb74ap+1}};
  for (int t = 0; t < 3; ++t) {
    EXPECT_EQ(episode->step(&actions[t], obs, terminated), rewards[t]) << "step " << t;
    EXPECT_FALSE(terminated);
    for (int j = 0; j < 3; ++j) EXPECT_EQ(obs[j], obs2[t][j]) << "step " << t << " value " << j;
  }
  // From a state: theta = 0, theta_dot = 0 balances with no torque.
  const double upright[2] = {0.0, 0.0};
  episode->reset_state(upright, obs);
  const float none = 0.0f;
  EXPECT_EQ(episode->step(&none, obs, terminated), -0.0);
  EXPECT_EQ(obs[0], 1.0);
  EXPECT_EQ(obs[2], 0.0);
}

TEST(CartPole, EpisodeRefusesAnotherAction) {
  std::unique_ptr<Episode> episode = make_env("CartPole-v1")->episode();
  double obs[4];
  const float push = 2.0f;
  bool terminated = false;
  episode->reset_seed(0, obs);
  EXPECT_THROW_WITH(episode->step(&push, obs, terminated), std::invalid_argument,
                    "CartPole action must be 0 or 1, got 2");
}

}  // namespace
}  // namespace evokit
