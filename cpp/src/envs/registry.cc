// The core's registry of native environments (see env.h): one line a task.
#include <stdexcept>
#include <string>

#include "registry.h"

namespace evokit {

namespace {

using Factory = std::shared_ptr<const Env> (*)();

constexpr Factory kEnvs[] = {
    envs::cartpole,
    envs::pendulum,
};

}  // namespace

const std::vector<const EnvSpec*>& env_specs() {
  static const std::vector<const EnvSpec*> specs = [] {
    std::vector<const EnvSpec*> out;
    for (Factory make : kEnvs) out.push_back(&make()->spec());
    return out;
  }();
  return specs;
}

std::shared_ptr<const Env> make_env(const std::string& name) {
  std::string known;
  for (Factory make : kEnvs) {
    std::shared_ptr<const Env> env = make();
    if (env->spec().name == name) return env;
    known += (known.empty() ? "" : ", ") + env->spec().name;
  }
  throw std::invalid_argument("native environment must be one of " + known + ", got '" + name +
                              "'");
}

}  // namespace evokit
