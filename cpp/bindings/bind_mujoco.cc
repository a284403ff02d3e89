// Gymnasium's MuJoCo locomotion tasks natively (the MuJoCo component,
// cpp/mujoco). The same names exist whether or not the component was built
// with MuJoCo: without it, MujocoEnv() raises RuntimeError with the reason
// and mujoco_header_version() is 0.
#include <evokit/mujoco/env.h>

#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "pybind11.h"

namespace evokit::bindings {

namespace {

namespace mj = evokit::mujoco;

// An Episode with its env (its sizes check the arguments).
struct EpisodeHandle {
  std::shared_ptr<mj::Env> env;
  std::unique_ptr<mj::Episode> episode;
};

py::array_t<double> new_array(std::vector<py::ssize_t> shape) {
  return py::array_t<double>(std::move(shape));
}

// A (rows, width) float64 input; ValueError naming `what` otherwise.
const double* rows_of(const DoubleIn& a, std::size_t rows, std::size_t width, const char* what) {
  if (a.ndim() != 2 || static_cast<std::size_t>(a.shape(0)) != rows ||
      static_cast<std::size_t>(a.shape(1)) != width) {
    const std::string shape = py::str(a.attr("shape"));
    throw std::invalid_argument(std::string(what) + " must have shape (" + std::to_string(rows) +
                                ", " + std::to_string(width) + "), one row per episode, got " +
                                shape);
  }
  return a.data();
}

}  // namespace

void bind_mujoco(py::module_& m) {
  m.def("mujoco_header_version", &mj::header_version,
        "The MuJoCo version whose headers EvoKit was built with (mjVERSION_HEADER: 4000000 "
        "for 4.0.0), or 0 when it was built without native MuJoCo.");
  m.def("mujoco_tasks", &mj::task_names, "The tasks MujocoEnv runs natively.");

  py::class_<EpisodeHandle>(m, "MujocoEpisode",
                            "One native simulation of a MujocoEnv, stepped by hand (the test "
                            "hook): reset(qpos, qvel), then step(action).")
      .def(
          "reset",
          [](EpisodeHandle& h, const DoubleIn& qpos, const DoubleIn& qvel) {
            require_length(qpos, static_cast<py::ssize_t>(h.env->nq()), "qpos");
            require_length(qvel, static_cast<py::ssize_t>(h.env->nv()), "qvel");
            py::array_t<double> obs = new_array({static_cast<py::ssize_t>(h.env->obs_size())});
            h.episode->reset(qpos.data(), qvel.data(), obs.mutable_data());
            return obs;
          },
          py::arg("qpos"), py::arg("qvel"),
          "Start from qpos, qvel (mj_resetData, set, mj_forward); returns the float64 "
          "observation.")
      .def(
          "step",
          [](EpisodeHandle& h, const FloatIn& action) {
            require_length(action, static_cast<py::ssize_t>(h.env->action_size()), "action");
            py::array_t<double> obs = new_array({static_cast<py::ssize_t>(h.env->obs_size())});
            bool terminated = false;
            const double reward = h.episode->step(action.data(), obs.mutable_data(), terminated);
            return py::make_tuple(obs, reward, terminated);
          },
          py::arg("action"),
          "One env step with a float32 action: (observation, reward, terminated), the values "
          "gymnasium's env.step returns.");

  py::class_<mj::Env, std::shared_ptr<mj::Env>>(
      m, "MujocoEnv",
      "A gymnasium MuJoCo task run natively, on a copy of gymnasium's model, by the libmujoco "
      "the mujoco package loaded (opened at run time, its version checked).")
      .def(py::init([](const std::string& task, const std::string& library,
                       std::uintptr_t model_address) {
             return mj::load_env(task, library, model_address);
           }),
           py::arg("task"), py::arg("library"), py::arg("model_address"),
           "task: one of mujoco_tasks(); library: the path of the libmujoco the mujoco package "
           "loaded; model_address: gymnasium's env.unwrapped.model._address (copied). "
           "RuntimeError with the reason when native MuJoCo cannot run (built without it, "
           "another MuJoCo version, no such library); ValueError for an unknown task or a "
           "model of other sizes.")
      .def_property_readonly("task", &mj::Env::task)
      .def_property_readonly("library_version", &mj::Env::library_version)
      .def_property_readonly("obs_size", &mj::Env::obs_size)
      .def_property_readonly("action_size", &mj::Env::action_size)
      .def_property_readonly("nq", &mj::Env::nq)
      .def_property_readonly("nv", &mj::Env::nv)
      .def(
          "episode",
          [](const std::shared_ptr<mj::Env>& env) {
            return EpisodeHandle{env, env->episode()};
          },
          "A simulation of its own, for stepping by hand.");

  m.def(
      "mujoco_rollouts",
      [](const mj::Env& env, const PolicyGraph& g, const Population& population,
         const Int64In& members, const DoubleIn& qpos, const DoubleIn& qvel, int max_steps,
         int num_threads, const py::object& obs_mean, const py::object& obs_std, float obs_clip) {
        const std::vector<std::size_t> m_idx = episode_members(members);
        const std::size_t n = m_idx.size();
        const double* qpos_rows = rows_of(qpos, n, env.nq(), "qpos");
        const double* qvel_rows = rows_of(qvel, n, env.nv(), "qvel");
        if (obs_mean.is_none() != obs_std.is_none()) {
          throw std::invalid_argument("obs_mean and obs_std must be given together");
        }
        const auto obs = static_cast<py::ssize_t>(env.obs_size());
        FloatIn mean, std;
        mj::ObsNormalizer norm;
        const bool normalise = !obs_mean.is_none();
        if (normalise) {
          mean = FloatIn::ensure(obs_mean);
          std = FloatIn::ensure(obs_std);
          if (!mean || !std) throw std::invalid_argument("obs_mean and obs_std must be float arrays");
          require_length(mean, obs, "obs_mean");
          require_length(std, obs, "obs_std");
          if (!(obs_clip > 0)) {
            throw std::invalid_argument("obs_clip must be > 0, got " + std::to_string(obs_clip));
          }
          norm = mj::ObsNormalizer{mean.data(), std.data(), obs_clip};
        }
        const auto rows = static_cast<py::ssize_t>(n);
        py::array_t<double> returns = new_array({rows});
        py::array_t<std::int64_t> lengths(rows);
        py::object sum = py::none(), sumsq = py::none();
        mj::RolloutOutputs out{returns.mutable_data(), lengths.mutable_data(), nullptr, nullptr};
        if (normalise) {
          py::array_t<double> s = new_array({rows, obs}), q = new_array({rows, obs});
          out.obs_sum = s.mutable_data();
          out.obs_sumsq = q.mutable_data();
          sum = s;
          sumsq = q;
        }
        {
          py::gil_scoped_release release;
          env.rollouts(g, population, m_idx.data(), qpos_rows, qvel_rows, n, max_steps,
                       normalise ? &norm : nullptr, out, num_threads);
        }
        return py::make_tuple(returns, lengths, sum, sumsq);
      },
      py::arg("env"), py::arg("graph"), py::arg("population"), py::arg("members"),
      py::arg("qpos"), py::arg("qvel"), py::arg("max_steps"), py::arg("num_threads") = 1,
      py::arg("obs_mean") = py::none(), py::arg("obs_std") = py::none(),
      py::arg("obs_clip") = std::numeric_limits<float>::infinity(),
      "Episode e of env's task with member members[e]'s policy (its output is the action) "
      "from qpos[e], qvel[e], until terminated or max_steps steps. Returns (returns float64, "
      "lengths int64, obs_sum, obs_sumsq): with obs_mean and obs_std the policy sees "
      "clip((obs - mean) / std, -obs_clip, obs_clip) in float32, and obs_sum / obs_sumsq "
      "(episodes x obs_size, float64) are the sums of the raw float32 observations and of "
      "their squares, else None. Threaded over episodes, the same for any num_threads.");
}

}  // namespace evokit::bindings
