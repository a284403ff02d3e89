// Gymnasium's MuJoCo locomotion tasks natively (see env.h).
//
// Each formula below is the one of gymnasium 1.4's <task>_v5.py with its
// default arguments, in numpy's dtypes and order of operations: float64
// positions and velocities, the velocity (x_after - x_before) / dt with dt =
// opt.timestep * frame_skip, a Python float weight times a float32 sum
// staying float32 (NEP 50: the weight is rounded to float32 first), a float32
// cost subtracted from a float64 reward after widening. The component is
// compiled with -ffp-contract=off: no FMA changes a result.
#include "evokit/mujoco/env.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "evokit/mujoco/numpy_ops.h"
#include "evokit/rollout.h"
#include "library.h"

namespace evokit::mujoco {

namespace {

enum class Kind { kHopper, kHalfCheetah, kWalker2d, kAnt, kSwimmer };

struct TaskSpec {
  const char* name;
  Kind kind;
  int nq, nv, nu, nbody;   // the model's sizes (checked when loading)
  int frame_skip;
  int skipped_qpos;        // leading qpos values left out of the observation
  bool clip_qvel;          // velocities observed clipped to [-10, 10]
  bool contact_forces;     // cfrc_ext[1:] observed, clipped to [-1, 1]
  double ctrl_cost_weight;
};

// gymnasium's defaults (hopper_v5.py etc.); nbody counts the world body.
constexpr TaskSpec kTasks[] = {
    {"Hopper-v5", Kind::kHopper, 6, 6, 3, 5, 4, 1, true, false, 0.001},
    {"HalfCheetah-v5", Kind::kHalfCheetah, 9, 9, 6, 8, 5, 1, false, false, 0.1},
    {"Walker2d-v5", Kind::kWalker2d, 9, 9, 6, 8, 4, 1, true, false, 0.001},
    {"Ant-v5", Kind::kAnt, 15, 14, 8, 14, 5, 2, false, true, 0.5},
    {"Swimmer-v5", Kind::kSwimmer, 5, 5, 2, 4, 4, 2, false, false, 1e-4},
};
constexpr int kMaxActions = 8;
constexpr int kMaxBodies = 14;
constexpr int kMaxObs = 105;  // Ant's

// A rollout thread's observation (float64), what the policy sees (float32)
// and the action, on cache lines of their own: they are written at every
// step, and sharing a line with another thread's would cost a miss each time.
struct alignas(64) StepBuffers {
  double obs[kMaxObs];
  float input[kMaxObs];
  float action[kMaxActions];
};

constexpr int obs_count(const TaskSpec& t) {
  return t.nq - t.skipped_qpos + t.nv + (t.contact_forces ? 6 * (t.nbody - 1) : 0);
}

constexpr bool buffers_fit() {
  for (const TaskSpec& t : kTasks) {
    if (obs_count(t) > kMaxObs || t.nu > kMaxActions || t.nbody > kMaxBodies) return false;
  }
  return true;
}
static_assert(buffers_fit(), "a task's sizes exceed kMaxObs, kMaxActions or kMaxBodies");

std::size_t obs_size_of(const TaskSpec& t) { return static_cast<std::size_t>(obs_count(t)); }

void check_size(const TaskSpec& t, const char* what, int got, int expected) {
  if (got != expected) {
    throw std::invalid_argument(std::string(t.name) + ": the model has " + what + " = " +
                                std::to_string(got) + ", the task's model has " +
                                std::to_string(expected));
  }
}

// One mjData of a task's model, reset and stepped as gymnasium's env.
class Simulation {
 public:
  Simulation(const Library& lib, const TaskSpec& task, const mjModel* model)
      : lib_(lib), task_(task), model_(model), dt_(model->opt.timestep * task.frame_skip) {
    auto make = [&] { data_ = lib_.make_data(model_); };
    raise_if(lib_.guarded(make));
    if (data_ == nullptr) throw std::runtime_error(std::string(task_.name) + ": mj_makeData failed");
  }
  ~Simulation() {
    if (data_ != nullptr) lib_.delete_data(data_);
  }
  Simulation(const Simulation&) = delete;
  Simulation& operator=(const Simulation&) = delete;

  // MujocoEnv.reset after the noise is drawn: mj_resetData, then set_state.
  void reset(const double* qpos, const double* qvel) {
    const int nq = model_->nq, nv = model_->nv;
    mjData* d = data_;
    const mjModel* m = model_;
    const Library& lib = lib_;
    auto body = [&] {
      lib.reset_data(m, d);
      std::copy(qpos, qpos + nq, d->qpos);
      std::copy(qvel, qvel + nv, d->qvel);
      lib.forward(m, d);
    };
    raise_if(lib_.guarded(body));
  }

  // The env's step(action): returns the reward, sets `terminated`.
  double step(const float* action, bool& terminated) {
    const double x_before = x_position();
    simulate(action);
    const double x_velocity = (x_position() - x_before) / dt_;
    // control_cost: weight * np.sum(np.square(action)), all float32.
    float squares[kMaxActions] = {};
    for (int i = 0; i < task_.nu; ++i) squares[i] = action[i] * action[i];
    const float ctrl_cost = static_cast<float>(task_.ctrl_cost_weight) *
                            numpy_sum(squares, static_cast<std::size_t>(task_.nu));
    terminated = false;
    switch (task_.kind) {
      case Kind::kHopper:
      case Kind::kWalker2d: {
        const bool healthy = task_.kind == Kind::kHopper ? hopper_healthy() : walker_healthy();
        const double rewards = 1.0 * x_velocity + (healthy ? 1.0 : 0.0);
        terminated = !healthy;
        return rewards - static_cast<double>(ctrl_cost);
      }
      case Kind::kAnt: {
        const bool healthy = ant_healthy();
        const double rewards = x_velocity * 1 + (healthy ? 1.0 : 0.0);
        double squared[6 * kMaxBodies];
        const int n = 6 * task_.nbody;
        for (int i = 0; i < n; ++i) {
          const double f = numpy_clip(data_->cfrc_ext[i], -1.0, 1.0);
          squared[i] = f * f;
        }
        const double contact_cost = 0.0005 * numpy_sum(squared, static_cast<std::size_t>(n));
        terminated = !healthy;
        return rewards - (static_cast<double>(ctrl_cost) + contact_cost);
      }
      case Kind::kHalfCheetah:
      case Kind::kSwimmer:
        break;
    }
    return 1.0 * x_velocity - static_cast<double>(ctrl_cost);
  }

  // _get_obs(): float64, as gymnasium returns it.
  void observe(double* obs) const {
    const mjData* d = data_;
    const int nq = model_->nq, nv = model_->nv;
    double* out = std::copy(d->qpos + task_.skipped_qpos, d->qpos + nq, obs);
    for (int i = 0; i < nv; ++i) {
      *out++ = task_.clip_qvel ? numpy_clip(d->qvel[i], -10.0, 10.0) : d->qvel[i];
    }
    if (task_.contact_forces) {
      for (int i = 6; i < 6 * task_.nbody; ++i) *out++ = numpy_clip(d->cfrc_ext[i], -1.0, 1.0);
    }
  }

 private:
  void raise_if(const std::string& error) const {
    if (!error.empty()) throw std::runtime_error(std::string(task_.name) + ": MuJoCo error: " + error);
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

  // The x the forward reward differentiates: qpos[0], or for Ant the main
  // body's (body 1) xpos.
  double x_position() const {
    return task_.kind == Kind::kAnt ? data_->xpos[3] : data_->qpos[0];
  }

  // Hopper: every qpos[2:], qvel within (-100, 100), z = qpos[1] in (0.7,
  // inf), angle = qpos[2] in (-0.2, 0.2).
  bool hopper_healthy() const {
    const mjData* d = data_;
    bool state = true;
    for (int i = 2; i < model_->nq; ++i) state = state && -100.0 < d->qpos[i] && d->qpos[i] < 100.0;
    for (int i = 0; i < model_->nv; ++i) state = state && -100.0 < d->qvel[i] && d->qvel[i] < 100.0;
    const double z = d->qpos[1], angle = d->qpos[2];
    const double inf = std::numeric_limits<double>::infinity();
    return state && 0.7 < z && z < inf && -0.2 < angle && angle < 0.2;
  }

  // Walker2d: z = qpos[1] in (0.8, 2.0), angle = qpos[2] in (-1, 1).
  bool walker_healthy() const {
    const double z = data_->qpos[1], angle = data_->qpos[2];
    return 0.8 < z && z < 2.0 && -1.0 < angle && angle < 1.0;
  }

  // Ant: qpos and qvel finite, z = qpos[2] in [0.2, 1.0].
  bool ant_healthy() const {
    const mjData* d = data_;
    for (int i = 0; i < model_->nq; ++i) {
      if (!std::isfinite(d->qpos[i])) return false;
    }
    for (int i = 0; i < model_->nv; ++i) {
      if (!std::isfinite(d->qvel[i])) return false;
    }
    return 0.2 <= d->qpos[2] && d->qpos[2] <= 1.0;
  }

  const Library& lib_;
  const TaskSpec& task_;
  const mjModel* model_;
  const double dt_;
  mjData* data_ = nullptr;
};

class TaskEnv;

class TaskEpisode final : public Episode {
 public:
  TaskEpisode(std::shared_ptr<const TaskEnv> env, const Library& lib, const TaskSpec& task,
              const mjModel* model)
      : env_(std::move(env)), sim_(lib, task, model) {}

  void reset(const double* qpos, const double* qvel, double* obs) override {
    started_ = false;
    sim_.reset(qpos, qvel);
    started_ = true;
    sim_.observe(obs);
  }

  double step(const float* action, double* obs, bool& terminated) override {
    if (!started_) throw std::logic_error("step() before reset()");
    const double reward = sim_.step(action, terminated);
    sim_.observe(obs);
    return reward;
  }

 private:
  std::shared_ptr<const TaskEnv> env_;  // keeps the model alive
  Simulation sim_;
  bool started_ = false;
};

class TaskEnv final : public Env, public std::enable_shared_from_this<TaskEnv> {
 public:
  TaskEnv(const Library& lib, const TaskSpec& task, mjModel* model)
      : lib_(lib), task_(task), model_(model), name_(task.name), obs_size_(obs_size_of(task)) {}
  ~TaskEnv() override { lib_.delete_model(model_); }
  TaskEnv(const TaskEnv&) = delete;
  TaskEnv& operator=(const TaskEnv&) = delete;

  const std::string& task() const noexcept override { return name_; }
  const std::string& library_version() const noexcept override { return lib_.version; }
  std::size_t obs_size() const noexcept override { return obs_size_; }
  std::size_t action_size() const noexcept override { return static_cast<std::size_t>(task_.nu); }
  std::size_t nq() const noexcept override { return static_cast<std::size_t>(task_.nq); }
  std::size_t nv() const noexcept override { return static_cast<std::size_t>(task_.nv); }

  std::unique_ptr<Episode> episode() const override {
    return std::make_unique<TaskEpisode>(shared_from_this(), lib_, task_, model_);
  }

  void rollouts(const PolicyGraph& graph, const Population& population,
                const std::size_t* members, const double* qpos, const double* qvel,
                std::size_t num_episodes, int max_steps, const ObsNormalizer* norm,
                const RolloutOutputs& out, int num_threads) const override;

 private:
  const Library& lib_;
  const TaskSpec& task_;
  mjModel* model_;
  std::string name_;
  std::size_t obs_size_;
};

void TaskEnv::rollouts(const PolicyGraph& graph, const Population& population,
                       const std::size_t* members, const double* qpos, const double* qvel,
                       std::size_t num_episodes, int max_steps, const ObsNormalizer* norm,
                       const RolloutOutputs& out, int num_threads) const {
  const std::size_t obs_size = obs_size_;
  const std::size_t nu = action_size();
  if (graph.obs_size() != obs_size) {
    throw std::invalid_argument(name_ + " gives " + std::to_string(obs_size) +
                                " observation values, the policy takes " +
                                std::to_string(graph.obs_size()));
  }
  const PolicyGraph::Plan plan =
      prepare_rollouts(graph, population, members, num_episodes, max_steps, num_threads);
  if (plan.output_size() != nu) {
    throw std::invalid_argument(name_ + " takes " + std::to_string(nu) +
                                " action values, the policy outputs " +
                                std::to_string(plan.output_size()));
  }
  if (num_episodes == 0) return;
  if (qpos == nullptr || qvel == nullptr || out.returns == nullptr || out.lengths == nullptr ||
      (out.obs_sum == nullptr) != (out.obs_sumsq == nullptr) ||
      (norm != nullptr && (norm->mean == nullptr || norm->std == nullptr))) {
    throw std::invalid_argument(name_ + ": rollouts need qpos, qvel, returns, lengths, both or "
                                        "neither observation sums, and a normaliser's mean and std");
  }
  const int threads = static_cast<int>(
      std::min<std::size_t>(num_episodes, static_cast<std::size_t>(num_threads)));
  // Per thread: its simulation (one mjData for all its episodes), the
  // observation (float64), what the policy sees (float32) and the action.
  std::vector<std::unique_ptr<Simulation>> sims;
  for (int t = 0; t < threads; ++t) sims.push_back(std::make_unique<Simulation>(lib_, task_, model_));
  std::vector<StepBuffers> buffers(static_cast<std::size_t>(threads));
  const bool stats = out.obs_sum != nullptr;
  std::atomic<bool> failed{false};  // after a MuJoCo error the other episodes are skipped
  const std::size_t nq = task_.nq, nv = task_.nv;

  run_episodes(graph, plan, population, members, num_episodes, threads,
               [&](std::size_t e, EpisodePolicy& policy, int thread) {
    if (failed.load(std::memory_order_relaxed)) return;
    const auto t = static_cast<std::size_t>(thread);
    Simulation& sim = *sims[t];
    double* obs = buffers[t].obs;
    float* x = buffers[t].input;
    float* action = buffers[t].action;
    double* sum = stats ? out.obs_sum + e * obs_size : nullptr;
    double* sumsq = stats ? out.obs_sumsq + e * obs_size : nullptr;
    if (stats) {
      std::fill(sum, sum + obs_size, 0.0);
      std::fill(sumsq, sumsq + obs_size, 0.0);
    }
    double total = 0.0;
    std::int64_t steps = 0;
    try {
      sim.reset(qpos + e * nq, qvel + e * nv);
      sim.observe(obs);
      while (true) {
        // The evaluators' np.asarray(obs, np.float32), statistics of it,
        // then ObsNorm: (x - mean) / std clipped, in float32.
        for (std::size_t j = 0; j < obs_size; ++j) x[j] = static_cast<float>(obs[j]);
        if (stats) {
          for (std::size_t j = 0; j < obs_size; ++j) {
            const double v = static_cast<double>(x[j]);
            sum[j] += v;
            sumsq[j] += v * v;
          }
        }
        if (norm != nullptr) {
          for (std::size_t j = 0; j < obs_size; ++j) {
            x[j] = numpy_clip((x[j] - norm->mean[j]) / norm->std[j], -norm->clip, norm->clip);
          }
        }
        policy.act(x, action);
        bool terminated = false;
        total += sim.step(action, terminated);
        ++steps;
        if (terminated || steps >= max_steps) break;
        sim.observe(obs);
      }
    } catch (const std::runtime_error& error) {
      failed = true;
      throw std::runtime_error("episode " + std::to_string(e) + ": " + error.what());
    }
    out.returns[e] = total;
    out.lengths[e] = steps;
  });
}

const TaskSpec& find_task(const std::string& name) {
  for (const TaskSpec& t : kTasks) {
    if (name == t.name) return t;
  }
  std::string known;
  for (const TaskSpec& t : kTasks) known += std::string(known.empty() ? "" : ", ") + t.name;
  throw std::invalid_argument("task must be one of " + known + ", got '" + name + "'");
}

}  // namespace

int header_version() noexcept { return mjVERSION_HEADER; }

const std::vector<std::string>& task_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const TaskSpec& t : kTasks) out.emplace_back(t.name);
    return out;
  }();
  return names;
}

std::shared_ptr<Env> load_env(const std::string& task, const std::string& library_path,
                              std::uintptr_t model_address) {
  const TaskSpec& spec = find_task(task);
  if (model_address == 0) throw std::invalid_argument("model_address must not be 0 (null)");
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
    throw std::runtime_error(spec.name + std::string(": mj_copyModel failed") +
                             (error.empty() ? "" : ": " + error));
  }
  return std::make_shared<TaskEnv>(lib, spec, model);
}

}  // namespace evokit::mujoco
