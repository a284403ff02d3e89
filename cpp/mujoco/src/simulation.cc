// The MuJoCo tasks' shared simulation (see env.h and simulation.h): a task's
// mjData reset and stepped as gymnasium's MujocoEnv does it, the task's own
// observation and reward around it.
#include "simulation.h"

#include <algorithm>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>

#include "evokit/mujoco/env.h"
#include "library.h"

namespace evokit::mujoco {

namespace {

void check_size(const MujocoTask& t, const char* what, int got, int expected) {
  if (got != expected) {
    throw std::invalid_argument(t.spec.name + ": the model has " + what + " = " +
                                std::to_string(got) + ", the task's model has " +
                                std::to_string(expected));
  }
}

class TaskEnv;

// One mjData of a task's model, reset and stepped as gymnasium's env.
class TaskEpisode final : public Episode {
 public:
  TaskEpisode(std::shared_ptr<const TaskEnv> env, const Library& lib, const MujocoTask& task,
              const mjModel* model)
      : env_(std::move(env)), lib_(lib), task_(task), model_(model),
        dt_(model->opt.timestep * task.frame_skip) {
    auto make = [&] { data_ = lib_.make_data(model_); };
    raise_if(lib_.guarded(make));
    if (data_ == nullptr) throw std::runtime_error(task_.spec.name + ": mj_makeData failed");
  }
  ~TaskEpisode() override {
    if (data_ != nullptr) lib_.delete_data(data_);
  }
  TaskEpisode(const TaskEpisode&) = delete;
  TaskEpisode& operator=(const TaskEpisode&) = delete;

  void reset_seed(std::uint64_t, double*) override {
    throw std::logic_error(task_.spec.name + " starts from a state (qpos, qvel), not a seed");
  }

  // MujocoEnv.reset after the noise is drawn: mj_resetData, then set_state
  // (qpos = state[:nq], qvel = state[nq:]).
  void reset_state(const double* state, double* obs) override {
    started_ = false;
    const int nq = model_->nq, nv = model_->nv;
    mjData* d = data_;
    const mjModel* m = model_;
    const Library& lib = lib_;
    auto body = [&] {
      lib.reset_data(m, d);
      std::copy(state, state + nq, d->qpos);
      std::copy(state + nq, state + nq + nv, d->qvel);
      lib.forward(m, d);
    };
    raise_if(lib_.guarded(body));
    started_ = true;
    task_.observe(model_, data_, obs);
  }

  // The env's step(action).
  double step(const float* action, double* obs, bool& terminated) override {
    if (!started_) throw std::logic_error("step() before reset()");
    const double x_before = task_.x_position(model_, data_);
    simulate(action);
    const double x_velocity = (task_.x_position(model_, data_) - x_before) / dt_;
    terminated = false;
    const double reward = task_.reward(model_, data_, action, x_velocity, terminated);
    task_.observe(model_, data_, obs);
    return reward;
  }

 private:
  void raise_if(const std::string& error) const {
    if (!error.empty()) throw std::runtime_error(task_.spec.name + ": MuJoCo error: " + error);
  }

  // do_simulation: ctrl <- action, mj_step frame_skip times, mj_rnePostConstraint.
  void simulate(const float* action) {
    mjData* d = data_;
    const mjModel* m = model_;
    const Library& lib = lib_;
    for (int i = 0; i < task_.nu; ++i) d->ctrl[i] = static_cast<double>(action[i]);
    const int frames = task_.frame_skip;
    auto body = [&] {
      for (int i = 0; i < frames; ++i) lib.step(m, d);
      lib.rne_post_constraint(m, d);
    };
    raise_if(lib_.guarded(body));
  }

  std::shared_ptr<const TaskEnv> env_;  // keeps the model alive
  const Library& lib_;
  const MujocoTask& task_;
  const mjModel* model_;
  const double dt_;
  mjData* data_ = nullptr;
  bool started_ = false;
};

class TaskEnv final : public Env, public std::enable_shared_from_this<TaskEnv> {
 public:
  TaskEnv(const Library& lib, const MujocoTask& task, mjModel* model)
      : lib_(lib), task_(task), model_(model) {}
  ~TaskEnv() override { lib_.delete_model(model_); }
  TaskEnv(const TaskEnv&) = delete;
  TaskEnv& operator=(const TaskEnv&) = delete;

  const EnvSpec& spec() const noexcept override { return task_.spec; }
  const std::string& library_version() const noexcept override { return lib_.version; }
  std::size_t nq() const noexcept override { return static_cast<std::size_t>(task_.nq); }
  std::size_t nv() const noexcept override { return static_cast<std::size_t>(task_.nv); }

  std::unique_ptr<evokit::Episode> episode() const override {
    return std::make_unique<TaskEpisode>(shared_from_this(), lib_, task_, model_);
  }

 private:
  const Library& lib_;
  const MujocoTask& task_;
  mjModel* model_;
};

const MujocoTask& find_task(const std::string& name) {
  std::string known;
  for (const MujocoTask* t : mujoco_tasks()) {
    if (name == t->spec.name) return *t;
    known += (known.empty() ? "" : ", ") + t->spec.name;
  }
  throw std::invalid_argument("task must be one of " + known + ", got '" + name + "'");
}

}  // namespace

std::vector<EnvArgument> locomotion_defaults(const char* xml_file, int frame_skip,
                                             EnvArgumentValue forward_reward_weight,
                                             double ctrl_cost_weight, double reset_noise_scale,
                                             std::vector<EnvArgument> own) {
  std::vector<EnvArgument> all{{"xml_file", std::string(xml_file)},
                               {"frame_skip", std::int64_t{frame_skip}},
                               {"forward_reward_weight", std::move(forward_reward_weight)},
                               {"ctrl_cost_weight", ctrl_cost_weight},
                               {"reset_noise_scale", reset_noise_scale},
                               {"exclude_current_positions_from_observation", true}};
  for (EnvArgument& a : own) all.push_back(std::move(a));
  return all;
}

EnvSpec mujoco_spec(const char* name, const char* entry_point, std::vector<EnvArgument> defaults,
                    int obs_size, int nq, int nv, int nu) {
  EnvSpec spec;
  spec.name = name;
  spec.entry_point = entry_point;
  spec.defaults = std::move(defaults);
  spec.obs_size = static_cast<std::size_t>(obs_size);
  spec.action_size = static_cast<std::size_t>(nu);
  spec.state_size = static_cast<std::size_t>(nq + nv);
  return spec;
}

float control_cost(const float* action, int nu, double weight) noexcept {
  float squares[kMaxActions];
  for (int i = 0; i < nu; ++i) squares[i] = action[i] * action[i];
  return static_cast<float>(weight) * numpy_sum(squares, static_cast<std::size_t>(nu));
}

double root_x(const mjModel*, const mjData* d) { return d->qpos[0]; }

double* observe_positions(const mjModel* m, const mjData* d, int skipped, bool clip_qvel,
                          double* out) {
  for (int i = skipped; i < m->nq; ++i) *out++ = d->qpos[i];
  for (int i = 0; i < m->nv; ++i) *out++ = clip_qvel ? numpy_clip(d->qvel[i], -10.0, 10.0) : d->qvel[i];
  return out;
}

int header_version() noexcept { return mjVERSION_HEADER; }

std::string unavailable_reason() { return ""; }

const std::vector<const MujocoTaskInfo*>& tasks() {
  static const std::vector<const MujocoTaskInfo*> infos = [] {
    static std::vector<MujocoTaskInfo> storage;
    for (const MujocoTask* t : mujoco_tasks()) {
      storage.push_back(MujocoTaskInfo{&t->spec, t->nq, t->nv, t->reset_noise_scale,
                                       t->normal_qvel});
    }
    std::vector<const MujocoTaskInfo*> out;
    for (const MujocoTaskInfo& i : storage) out.push_back(&i);
    return out;
  }();
  return infos;
}

std::shared_ptr<Env> load_env(const std::string& task, const std::string& library_path,
                              std::uintptr_t model_address) {
  const MujocoTask& spec = find_task(task);
  if (model_address == 0) throw std::invalid_argument("model_address must not be 0 (null)");
  if (spec.nu > kMaxActions) {
    throw std::invalid_argument(spec.spec.name + " has " + std::to_string(spec.nu) +
                                " actuators, the component handles at most " +
                                std::to_string(kMaxActions));
  }
  const Library& lib = open_library(library_path);
  const auto* source = reinterpret_cast<const mjModel*>(model_address);
  check_size(spec, "nq", source->nq, spec.nq);
  check_size(spec, "nv", source->nv, spec.nv);
  check_size(spec, "nu", source->nu, spec.nu);
  check_size(spec, "nbody", source->nbody, spec.nbody);
  check_size(spec, "na", source->na, 0);
  mjModel* model = nullptr;
  auto copy = [&] { model = lib.copy_model(nullptr, source); };
  const std::string error = lib.guarded(copy);
  if (!error.empty() || model == nullptr) {
    throw std::runtime_error(spec.spec.name + ": mj_copyModel failed" +
                             (error.empty() ? "" : ": " + error));
  }
  return std::make_shared<TaskEnv>(lib, spec, model);
}

}  // namespace evokit::mujoco
